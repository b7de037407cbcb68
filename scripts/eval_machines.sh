#!/bin/sh
# eval_machines.sh — the figures of README "Machines" (docs/MACHINES.md): leave-one-machine-out from the
# profile alone and with 10 rows, on a frozen snapshot of the dataset, written to
# docs/eval/lomachine.{txt,json} and docs/eval/lomachine-10shot.{txt,json}; then the bundle's error on the
# rows of the machine that no training row comes from (data/unseen/, the AVX2-capped CPU) to
# docs/eval/unseen.md, with the bundled predictor given as --model (default data/predictor.abacus).
#   sh scripts/eval_machines.sh [SNAPSHOT.csv] [BUNDLE]
set -eu
cd "$(dirname "$0")/.."
A=${ABACUS:-build/release/abacus}
SNAP=${1:-}
MODEL=${2:-data/predictor.abacus}
if [ -z "$SNAP" ]; then
	SNAP=$(mktemp /tmp/abacus-snapshot.XXXXXX.csv)
	cp data/dataset.csv "$SNAP"
	cp data/machines.jsonl "$(dirname "$SNAP")/machines.jsonl" 2>/dev/null || true
fi
mkdir -p docs/eval
for shots in 0 10; do
	name=lomachine
	[ "$shots" = 0 ] || name=lomachine-${shots}shot
	echo "== $(date -u +%FT%TZ) $name"
	"$A" eval "$SNAP" --protocol lomachine --machines data/machines --shots "$shots" \
		--json "docs/eval/$name.json.tmp" > "docs/eval/$name.txt.tmp"
	mv "docs/eval/$name.txt.tmp" "docs/eval/$name.txt"
	mv "docs/eval/$name.json.tmp" "docs/eval/$name.json"
done
if [ -e data/unseen/rows.csv ]; then
	echo "== $(date -u +%FT%TZ) unseen machine"
	/usr/bin/python3 scripts/score_bundle.py data/unseen/rows.csv --model "$MODEL" --profiles data/unseen --table \
		> docs/eval/unseen.md.tmp
	mv docs/eval/unseen.md.tmp docs/eval/unseen.md
fi
echo "== $(date -u +%FT%TZ) done: $(grep -c . "$SNAP") lines in $SNAP"
