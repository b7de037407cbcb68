#!/bin/bash
# campaign.sh — the measurement campaign behind data/dataset.csv (issue "The dataset").
# Phases run breadth-first so that every network is covered early; each phase is one `abacus profile`
# call appending to the same CSV, and a rerun skips what is already measured, so the campaign can be
# stopped (SIGINT/SIGTERM/SIGKILL) and resumed at any time:
#   nohup bash scripts/campaign.sh >> data/campaign.log 2>&1 &
# --wait-quiet: each configuration waits (up to 10 min) for other work on the machine to stop, so that
# builds and evaluations run meanwhile pause the campaign instead of making its time rows noisy.
# Noise floor: repeat index 1 for a fixed, hash-chosen 15 % of the configurations (--repeat-percent).
set -u
cd "$(dirname "$0")/.."
A=build/release/abacus
OUT=${OUT:-data/dataset.csv}
# Cheap networks first (rough training cost at 64×64), so that every phase covers many networks early;
# networks not named here follow in zoo order.
CHEAP=csp_mish,srresnet_small,dlrm_small,wavenet_small,gmlp,deepspeech_small,vae_mlp,lstm_seq2seq,conformer_small,seq2seq_transformer,gru_classifier,small_bilstm_tagger,elman_rnn,mlp,lstm_lm,gru_lm,transformer_enc,unet_small,gpt_small,bilstm_tagger,textcnn,mlp_mixer,convmixer,squeezenet1_1,squeezenet1_0,shufflenet_v2_x0_5,mnasnet0_5,\
mobilenet_v3_small,shufflenet_v2_x1_0,mnasnet0_75,mobilenet_v2,mnasnet1_0,mobilenet_v3_large,lraspp_mobilenet_v3_large,\
shufflenet_v2_x1_5,mnasnet1_3,regnet_x_400mf,regnet_y_400mf,shufflenet_v2_x2_0,efficientnet_b0,resnet18,regnet_x_800mf,\
regnet_y_800mf,efficientnet_b1,googlenet,resnet34,alexnet,efficientnet_b2,regnet_x_1_6gf,regnet_y_1_6gf,densenet121,\
resnet50,efficientnet_b3,inception_v3,vit_b_32,resnext50_32x4d,regnet_x_3_2gf,regnet_y_3_2gf,densenet169,efficientnet_v2_s,\
densenet201,swin_t,convnext_tiny,resnet101,vgg11,vgg11_bn,vgg13,vgg13_bn,vit_b_16,efficientnet_b4,densenet161,swin_v2_t,\
resnet152,wide_resnet50_2,maxvit_t,vgg16,vgg16_bn,vgg19,vgg19_bn,regnet_x_8gf,regnet_y_8gf,convnext_small,swin_s
ALL=$(/usr/bin/python3 -m collector.worker --list 2>/dev/null | /usr/bin/python3 -c "
import json, sys
cheap = '$CHEAP'.split(',')
names = [json.loads(l)['name'] for l in sys.stdin if l.strip()]
print(','.join([n for n in cheap if n in names] + [n for n in names if n not in cheap]))")
COMMON=(--graphs data/graphs --machines data/machines.jsonl --max-iter-seconds 3 --timeout 900 --repeat 2 --repeat-percent 15
        --optimizer sgd,adam --wait-quiet --log data/campaign-workers.log --models "$ALL")
phase() {
	echo "== $(date -u +%FT%TZ) phase: $*"
	"$A" profile --out "$OUT" "${COMMON[@]}" "$@" || echo "== phase ended with status $?"
}
make -s
# Every row names its machine (docs/PROTOCOL.md version 2), and the machine id covers the thread count and any ISA
# cap. On a machine id with no rows yet the campaign first measures the fixed *fingerprint* set: every zoo
# network at its smallest valid input, batch 1 and 4, sgd and adam (416 configurations, ~15 % repeated for the
# noise floor), cheap enough (--max-iter-seconds 1.5) to finish in well under an hour, so that the dataset
# gains a comparable set of rows from every machine the project runs on: this CPU uncapped and capped at SSE4.1
# (the emulated older CPU), one and two threads each. The grids below then continue on this machine.
# Before its fingerprint, each machine's profile (abacus calibrate --out, docs/MACHINES.md) is measured three
# times in separate processes, all three kept in data/machines/repeats/ for the repeatability figures; the
# machine's profile (data/machines/<id>.machine) is their merge (scripts/merge_profiles.py: per rate the
# median of rate / that run's reference workload; until 2026-12-05 it was the first run, and on the Intel VM
# of that day the first run's reference was 1.8x the other two's). A profile already there is not measured again.
profile_machine() {
	local tmp id runs=()
	tmp=$(mktemp -d)
	mkdir -p data/machines/repeats
	for k in 1 2 3; do
		"$A" calibrate --out "$tmp" "$@" --format json > "$tmp/r$k.json" || { echo "== calibrate $* failed"; rm -rf "$tmp"; return; }
		id=$(ls "$tmp" | grep '\.machine$' | head -1)
		runs+=("data/machines/repeats/${id%.machine}.run$k.$(date -u +%Y%m%dT%H%M%S).machine")
		mv "$tmp/$id" "${runs[-1]}"
	done
	rm -rf "$tmp"
	[ -e "data/machines/$id" ] || /usr/bin/python3 scripts/merge_profiles.py "data/machines/$id" "${runs[@]}"
	echo "== $(date -u +%FT%TZ) profiled ${id%.machine}"
}
machine_known() { # the machine id of these options has a profile already
	local id
	# (a batch no grid has, so that the dry run lists one configuration with its machine id)
	id=$("$A" profile --out "$OUT" --models mlp --size 32 --batch 7777 --dry-run "$@" 2>/dev/null | awk -F, 'NR==2 {print $8}')
	[ -n "$id" ] && [ -e "data/machines/$id.machine" ]
}
fingerprint() { # [--quick] then the options of the machine id: its profile when it has none, then the fingerprint
	# (with --quick only its first QUICK networks: below)
	local models=()
	[ "$1" = --quick ] && { models=(--models "$QUICK"); shift; }
	machine_known "$@" || profile_machine "$@"
	phase --size min --seq min --batch 1,4 --max-iter-seconds 1.5 "$@" "${models[@]}"
}
# A session lasts a few hours and the next one is usually another machine, so a new machine first gets the
# cheap part of each runtime's fingerprint (the first QUICK networks of $ALL, cheapest first: about 40 minutes
# a runtime on one thread) and only then the expensive rest, below: on 2026-12-06 the family 6 model 167
# machine's torch-1.13 fingerprint alone ran for two hours, most of it in the last 80 networks, and its
# PyTorch 2 and TensorFlow rows would have come after the session.
QUICK=$(echo "$ALL" | cut -d, -f1-64)
# The Keras zoo (collector/tf_zoo.py), for TensorFlow's phases below.
TFALL=$(.runtimes/tf-2.21.0/bin/python -m collector.tf_worker --list 2>/dev/null | /usr/bin/python3 -c "
import json, sys
print(','.join(json.loads(l)['name'] for l in sys.stdin if l.strip()))")
# Late repeats (since 2026-12-07 21:07). A configuration's repeats run back to back, about 10 s apart, so the
# noise floor they give could leave out what a machine does between hours and sessions, which every held-out
# prediction is up against. `abacus eval` reports the floor of pairs an hour or more apart ("late",
# ABACUS_LATE_REPEAT_S); the first 96, on the family 26 machine about 28 h after their first rows, differed by
# 5.68 % (speed-adjusted) against its back-to-back 5.40 % (docs/PROTOCOL.md). late AGE PHASE-OPTIONS measures
# the phase's hash-chosen share once more (repeat index 2) for the networks with an `ok` row of that
# configuration on this machine id at least AGE seconds old; run again later, it picks up the networks that
# have aged since.
late() {
	local age=$1 nets
	shift
	nets=$("$A" profile --out "$OUT" "${COMMON[@]}" "$@" --repeat 3 --dry-run 2>/dev/null | AGE=$age OUT="$OUT" /usr/bin/python3 -c "
import calendar, csv, os, sys, time
todo = [r for r in csv.DictReader(sys.stdin) if r['repeat'] == '2']
key = lambda r: (r['network'], r['input_shape'], r['batch'], r['optimizer'], r['hw'], r['machine'])
first = {}
try:
    with open(os.environ['OUT'], newline='') as f:
        for r in csv.DictReader(f):
            if r['status'] == 'ok' and r['repeat'] == '0':
                first[key(r)] = calendar.timegm(time.strptime(r['timestamp'], '%Y-%m-%dT%H:%M:%SZ'))
except FileNotFoundError:
    pass
now, age = time.time(), float(os.environ['AGE'])
print(','.join(dict.fromkeys(r['network'] for r in todo if key(r) in first and now - first[key(r)] >= age)))")
	if [ -n "$nets" ]; then
		echo "== $(date -u +%FT%TZ) late repeats"
		phase "$@" --repeat 3 --models "$nets"
	fi
}
FP=(--size min --seq min --batch 1,4 --max-iter-seconds 1.5) # the fingerprint's grid (fingerprint, below)
TFFP=(--runtime tf-2.21.0 --models "$TFALL" --graphs data/graphs/tf "${FP[@]}")
# First the late repeats of the fingerprints this machine's ids already have rows of (those of an earlier
# session on the same id are hours or days old: the cheapest late pairs there are), then, between the phases
# below, those of this session's.
late 3600 "${FP[@]}" --hw cpu1
late 3600 "${FP[@]}" --hw cpu2
for rt in torch-2.15.0; do
	[ -x ".runtimes/$rt/bin/python" ] || continue
	for hw in cpu1 cpu2; do
		OUT="data/$rt/dataset.csv" late 3600 "${FP[@]}" --hw $hw --python ".runtimes/$rt/bin/python"
	done
done
if [ -n "$TFALL" ]; then
	for hw in cpu1 cpu2; do
		OUT=data/tf-2.21.0/dataset.csv late 3600 "${TFFP[@]}" --hw $hw
	done
fi
# Since 2026-12-07 17:50 the rows the issue "Frameworks" still needs come before a new machine id's own
# fingerprints: that session's machine (family 25 model 17 again) had a new id only because its kernel build
# had changed (6.18.44-fc-v1252 -> v1300), and the issue "Machines" had eight ids of 300+ rows. PyTorch 2's
# two-thread share was met that evening (694 of 1,925 ok rows); TensorFlow had 702 ok rows of the 1,500 asked,
# 196 (28 %) on two threads (a third asked). So since 2026-12-07 20:50 a new machine first gets TensorFlow's
# fingerprint on two threads, then on one thread (each a new TensorFlow machine id), then the rest in the
# order below. (Each of these phases ran twice in the script until then: once here, once below.)
if [ -n "$TFALL" ]; then
	mkdir -p data/tf-2.21.0
	OUT=data/tf-2.21.0/dataset.csv phase "${TFFP[@]}" --hw cpu2
	# (the two-thread fingerprint takes about 90 minutes: its first networks are an hour old by now)
	OUT=data/tf-2.21.0/dataset.csv late 3600 "${TFFP[@]}" --hw cpu2
	OUT=data/tf-2.21.0/dataset.csv phase "${TFFP[@]}" --hw cpu1
	for hw in cpu2 cpu1; do
		OUT=data/tf-2.21.0/dataset.csv late 3600 "${TFFP[@]}" --hw $hw
	done
else
	echo "== runtime tf-2.21.0 is not installed (scripts/setup.sh): skipped"
fi
fingerprint --quick --hw cpu1
# Generated networks (issue "Unseen networks": collector/generator.py, docs/GENERATOR.md): the catalogue of
# 1,000, the families interleaved (seed 0 of every family, then seed 1, ...), each at its one size, batch 4,
# sgd and adam, on cpu1; the worker lists them when ABACUS_GENERATED is set. The first 250 come before the
# other runtimes' fingerprints so that every family has rows early; the rest after them.
GEN=$(ABACUS_GENERATED=1000 /usr/bin/python3 -m collector.worker --list 2>/dev/null | /usr/bin/python3 -c "
import json, sys
n = [json.loads(l)['name'] for l in sys.stdin if l.startswith('{\"name\": \"gen_')]
n.sort(key=lambda s: (int(s.rsplit('_s', 1)[1]), s))
print(','.join(n))")
generated() { # first N of the catalogue, then phase options; networks that no row of $OUT names yet (on any
	# machine) come first, so that a new machine adds networks to the dataset before it repeats known ones;
	# with N given as new:N, only those
	local n=$1 order only_new=0
	shift
	case $n in new:*) only_new=1; n=${n#new:} ;; esac
	order=$(echo "$GEN" | cut -d, -f1-"$n" | ONLY_NEW=$only_new /usr/bin/python3 -c "
import csv, sys
names = sys.stdin.read().strip().split(',')
try:
    with open('$OUT', newline='') as f:
        seen = {r['network'] for r in csv.DictReader(f)}
except FileNotFoundError:
    seen = set()
import os
print(','.join([n for n in names if n not in seen] + ([] if os.environ['ONLY_NEW'] == '1' else [n for n in names if n in seen])))")
	[ -n "$order" ] || return 0
	ABACUS_GENERATED=1000 phase --models "$order" --size min --seq min "$@"
}
# (The first 250 of the catalogue ran here until 2026-12-05, before the other runtimes, so that every family had
# rows early; every family has had rows since, so on a new machine the runtimes' fingerprints came first.)
# Since 2026-12-06 the generated networks of the first 500 that no row names yet come right after this
# machine's fingerprint: every session has run on a new machine, whose fingerprints of three runtimes filled
# it, so that the catalogue's networks beyond the first machine's 250 never came (issue "Unseen networks" asks
# for rows of at least 500 distinct generated networks). Known ones are not repeated here.
# Since 2026-12-06 23:15 the whole catalogue's unmeasured networks come here (new:1000, was new:500): the first
# 500 all had rows, the issue's 2,000 generated rows were 1,131, and at ~5 configurations a minute they are
# the nearest target the campaign can reach, while TensorFlow's 1,500 rows are many sessions away.
[ -n "$GEN" ] && generated new:1000 --hw cpu1 --batch 4
# Other runtimes (issue "Frameworks"): the same fingerprint through each runtime's interpreter (scripts/setup.sh
# makes .runtimes/NAME), into that runtime's own CSV (data/NAME/dataset.csv) until one bundle predicts every
# runtime, with the one machines table (COMMON names it for every phase). They measure against torch 1.13's graphs (the worker never exports
# under another runtime) and their rows carry their runtime and their own machine id.
for rt in torch-2.15.0; do
	[ -x ".runtimes/$rt/bin/python" ] || { echo "== runtime $rt is not installed (scripts/setup.sh): skipped"; continue; }
	mkdir -p "data/$rt"
	OUT="data/$rt/dataset.csv" fingerprint --quick --hw cpu1 --python ".runtimes/$rt/bin/python"
done
# TensorFlow 2.21 (collector/tf_worker.py, the Keras zoo of collector/tf_zoo.py, graphs of collector/tf_export.py
# in data/graphs/tf): its fingerprint, every Keras network at its smallest input, batch 1 and 4, SGD and
# Adam, into data/tf-2.21.0/dataset.csv. Each configuration runs in a fresh worker (a reused TensorFlow worker
# does not read the same memory: docs/PROTOCOL.md), about 10 s of start-up each.
# (It runs above, before the fingerprints, since 2026-12-07 20:50.)
# The other runtimes' two-thread rows first (issue "Frameworks": 1,500 ok rows each, a third of them on two
# threads; on 2026-12-07 PyTorch 2 had 1,231 rows, none on two threads, TensorFlow 316): the cheap part of
# each fingerprint on two threads (a machine id and profile of its own). Since 2026-12-07 05:30 these come
# before the expensive rest of the PyTorch fingerprints, which the issue "Machines" no longer needs (seven
# machine ids had 300+ rows) and which took the sessions after the generated networks.
for rt in torch-2.15.0; do
	[ -x ".runtimes/$rt/bin/python" ] && OUT="data/$rt/dataset.csv" fingerprint --quick --hw cpu2 --python ".runtimes/$rt/bin/python"
done
# Since 2026-12-07 11:15 the two runtimes' rows that the issue "Frameworks" still needs come next: PyTorch 2
# had 1,528 ok rows but 297 (19 %) on two threads (a third asked), so its cheap networks at batch 2 and 8 on
# two threads (about 30 minutes); then TensorFlow's wider rows on one thread (495 ok rows of 1,500, at about
# 30 s a configuration the longest way of any target), before the PyTorch fingerprints' expensive rest.
for rt in torch-2.15.0; do
	[ -x ".runtimes/$rt/bin/python" ] && OUT="data/$rt/dataset.csv" phase --size min --seq min --batch 2,8 \
		--max-iter-seconds 1.5 --hw cpu2 --python ".runtimes/$rt/bin/python" --models "$QUICK"
done
if [ -n "$TFALL" ]; then
	OUT=data/tf-2.21.0/dataset.csv phase --runtime tf-2.21.0 --models "$TFALL" --graphs data/graphs/tf --size all \
		--seq all --batch 1,2,8 --hw cpu1
fi
# The expensive rest of both PyTorch fingerprints (the configurations measured above are skipped).
fingerprint --hw cpu1
for rt in torch-2.15.0; do
	[ -x ".runtimes/$rt/bin/python" ] && OUT="data/$rt/dataset.csv" fingerprint --hw cpu1 --python ".runtimes/$rt/bin/python"
done
[ -n "$GEN" ] && generated 1000 --hw cpu1 --batch 4
# The other runtimes' wider rows: each fingerprint's rest on two threads, then one thread at every valid size,
# batch 1, 2 and 8. TensorFlow exports each Keras graph the first time a size needs it.
for rt in torch-2.15.0; do
	[ -x ".runtimes/$rt/bin/python" ] || continue
	OUT="data/$rt/dataset.csv" fingerprint --hw cpu2 --python ".runtimes/$rt/bin/python"
	OUT="data/$rt/dataset.csv" phase --hw cpu1 --size all --seq all --batch 1,2,8 --python ".runtimes/$rt/bin/python"
	# The generated networks under this runtime too (issue "Unseen networks": across the runtimes), the
	# first 250 of the catalogue, batch 4, on torch 1.13's graphs like the zoo's.
	[ -n "$GEN" ] && OUT="data/$rt/dataset.csv" generated 250 --hw cpu1 --batch 4 --python ".runtimes/$rt/bin/python"
done
# TensorFlow's wider rows on two threads (its one-thread ones ran above; until 2026-12-07 20:50 this line
# repeated them).
if [ -n "$TFALL" ]; then
	OUT=data/tf-2.21.0/dataset.csv phase --runtime tf-2.21.0 --models "$TFALL" --graphs data/graphs/tf --size all \
		--seq all --batch 1,2,8 --hw cpu2
fi
# The three ids below had 300+ ok rows each by 2026-12-04 23:10 (their remaining configurations are the zoo's
# costly tail); the fourth id, SSE4.1 on two threads, had none, so it comes before their tails. Its unseen
# step (below) ran before its fingerprint: it was the machine no training row came from.
if [ -e data/unseen/done ]; then
	fingerprint --hw cpu2 --isa-cap sse41
fi
fingerprint --hw cpu2
fingerprint --hw cpu1 --isa-cap sse41
# A machine that no training row comes from yet (docs/MACHINES.md, "A machine the predictor never saw"):
# this CPU capped at SSE4.1 on two threads, profiled and measured on a handful of configurations into
# data/unseen/, never into the dataset, so that the README can show its predicted against measured times
# (before its own fingerprint below makes it a machine of the dataset).
if [ ! -e data/unseen/done ]; then
	mkdir -p data/unseen
	"$A" calibrate --out data/unseen --hw cpu2 --isa-cap sse41 > data/unseen/calibrate.txt
	"$A" profile --out data/unseen/rows.csv --graphs data/graphs --machines data/unseen/machines.jsonl \
		--models resnet18,mobilenet_v2,vgg11,mlp,transformer_enc,lstm_lm,efficientnet_b0,squeezenet1_1,densenet121,gpt_small,convmixer,shufflenet_v2_x1_0 \
		--size 64 --seq 128 --batch 4 --optimizer sgd,adam --hw cpu2 --isa-cap sse41 --max-iter-seconds 3 --wait-quiet \
		--log data/campaign-workers.log && touch data/unseen/done
fi
fingerprint --hw cpu2 --isa-cap sse41
# Breadth first, cpu1 and cpu2 alternating so that every network has rows on both hardware ids early
# (cross-hardware evaluation needs pairs); cpu2 covers at least 30 % of the configurations.
# cpu2 passed its 1,000-row target on 2026-12-03 at 16:30 with its first two phases; cpu1 has the
# further way now (3,000), so its phases come first and cpu2's wider sizes last.
# cpu1's whole grid runs network by network, cheapest first: its narrower phases (sizes 32,128 and
# 96,160,224) had reached the costly tail of the zoo, where most configurations take seconds or are
# skipped, while the cheap networks' other sizes still waited; the whole grid contains both phases.
# By 2026-12-04 cpu1's grid had grown to 3,575 configurations and cpu2's 992 were 27.7 % of them, so
# cpu2's next phase comes before the rest of cpu1's grid again.
phase --hw cpu1 --size 64 --seq 128 --batch 1,4,16
phase --hw cpu2 --size 64 --seq 128 --batch 1,4,16
phase --hw cpu2 --size 32,128 --seq 64,256 --batch 2,8,32
phase --hw cpu1 --size all --seq all --batch 1,2,4,8,16,32
# Batch 64 where cheap (the per-iteration limit skips the rest).
phase --hw cpu1 --size 32,64 --seq 64,128 --batch 64
phase --hw cpu2 --size 96,224 --seq 32,512 --batch 1,4,16
echo "== $(date -u +%FT%TZ) campaign complete"
