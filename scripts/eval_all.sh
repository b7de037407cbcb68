#!/bin/sh
# eval_all.sh — the accuracy figures of README "What to expect": runs `abacus eval` with each protocol on a
# frozen snapshot of the dataset and writes docs/eval/{random,lomo,lofo,cross-hw}.{txt,json} (lofo with the
# families of data/families.tsv).
#   sh scripts/eval_all.sh [SNAPSHOT.csv]     (default: a copy of data/dataset.csv taken now)
# ABACUS=PATH runs another binary (a copy, so that builds meanwhile do not change the figures).
# A snapshot, not the live CSV: a campaign may be appending rows, and the three protocols must see the
# same rows. Takes about an hour on the development machine (2 cores; lomo trains 2 boosters per network,
# over 300 networks with the generated ones);
# needs `make` first.
set -eu
cd "$(dirname "$0")/.."
A=${ABACUS:-build/release/abacus}
SNAP=${1:-}
if [ -z "$SNAP" ]; then
	SNAP=$(mktemp /tmp/abacus-snapshot.XXXXXX.csv)
	cp data/dataset.csv "$SNAP"
fi
mkdir -p docs/eval
for p in random cross-hw lofo lomo; do
	echo "== $(date -u +%FT%TZ) $p"
	"$A" eval "$SNAP" --protocol "$p" --json "docs/eval/$p.json.tmp" > "docs/eval/$p.txt.tmp"
	mv "docs/eval/$p.txt.tmp" "docs/eval/$p.txt"
	mv "docs/eval/$p.json.tmp" "docs/eval/$p.json"
done
echo "== $(date -u +%FT%TZ) done: $(grep -c . "$SNAP") lines in $SNAP"
