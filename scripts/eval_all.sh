#!/bin/sh
# eval_all.sh — the accuracy figures of README "Accuracy": runs `abacus eval` with each protocol on a
# frozen snapshot of the dataset and writes docs/eval/{random,lomo,cross-hw}.{txt,json}.
#   sh scripts/eval_all.sh [SNAPSHOT.csv]     (default: a copy of data/dataset.csv taken now)
# A snapshot, not the live CSV: a campaign may be appending rows, and the three protocols must see the
# same rows. Takes about 15 minutes on the development machine (2 cores; lomo trains 2 x 97 boosters);
# needs `make` first.
set -eu
cd "$(dirname "$0")/.."
A=build/release/abacus
SNAP=${1:-}
if [ -z "$SNAP" ]; then
	SNAP=$(mktemp /tmp/abacus-snapshot.XXXXXX.csv)
	cp data/dataset.csv "$SNAP"
fi
mkdir -p docs/eval
for p in random cross-hw lomo; do
	echo "== $(date -u +%FT%TZ) $p"
	"$A" eval "$SNAP" --protocol "$p" --json "docs/eval/$p.json.tmp" > "docs/eval/$p.txt.tmp"
	mv "docs/eval/$p.txt.tmp" "docs/eval/$p.txt"
	mv "docs/eval/$p.json.tmp" "docs/eval/$p.json"
done
echo "== $(date -u +%FT%TZ) done: $(grep -c . "$SNAP") lines in $SNAP"
