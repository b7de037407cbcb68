#!/bin/bash
# campaign.sh — the measurement campaign behind data/dataset.csv (issue "The dataset").
# Phases run breadth-first so that every network is covered early; each phase is one `abacus profile`
# call appending to the same CSV, and a rerun skips what is already measured, so the campaign can be
# stopped (SIGINT/SIGTERM/SIGKILL) and resumed at any time:
#   nohup bash scripts/campaign.sh >> data/campaign.log 2>&1 &
# Noise floor: repeat index 1 for a fixed, hash-chosen 15 % of the configurations (--repeat-percent).
set -u
cd "$(dirname "$0")/.."
A=build/release/abacus
OUT=${OUT:-data/dataset.csv}
COMMON=(--out "$OUT" --graphs data/graphs --max-iter-seconds 5 --timeout 900 --repeat 2 --repeat-percent 15
        --optimizer sgd,adam --log data/campaign-workers.log)
phase() {
	echo "== $(date -u +%FT%TZ) phase: $*"
	"$A" profile "${COMMON[@]}" "$@" || echo "== phase ended with status $?"
}
make -s
# cpu1: breadth first, then the full grid.
phase --hw cpu1 --size 64 --seq 128 --batch 1,4,16
phase --hw cpu1 --size 32,128 --seq 64,256 --batch 2,8,32
phase --hw cpu1 --size 96,160,224 --seq 32,512 --batch 1,4,16
phase --hw cpu1 --size all --seq all --batch 1,2,4,8,16,32
# cpu2: at least 30 % of the configurations, covering every network.
phase --hw cpu2 --size 64,128 --seq 128,256 --batch 1,4,16,32
phase --hw cpu2 --size 32,96,224 --seq 64,512 --batch 2,8
# Batch 64 where cheap (the per-iteration limit skips the rest).
phase --hw cpu1 --size 32,64 --seq 64,128 --batch 64
echo "== $(date -u +%FT%TZ) campaign complete"
