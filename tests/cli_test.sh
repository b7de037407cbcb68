#!/bin/sh
# cli_test.sh — integration tests of the abacus command line: exit codes, error format, JSON keys.
# Usage: ABACUS=build/release/abacus sh tests/cli_test.sh
set -u
# ABACUS may be a command with arguments (e.g. "valgrind --error-exitcode=99 build/release/abacus").
A=${ABACUS:-build/release/abacus}
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok   $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; }
expect_rc() { # name expected-rc command...
	name=$1; want=$2; shift 2
	"$@" >/tmp/abacus_cli_out.$$ 2>/tmp/abacus_cli_err.$$; rc=$?
	if [ "$rc" -eq "$want" ]; then ok "$name"; else bad "$name (rc $rc, wanted $want)"; cat /tmp/abacus_cli_err.$$; fi
}
G=tests/data/graphs/resnet18-64.onnx

expect_rc "no arguments is a usage error" 2 $A
expect_rc "--help" 0 $A --help
expect_rc "inspect --help" 0 $A inspect --help
expect_rc "unknown command" 2 $A frobnicate
expect_rc "inspect without file" 2 $A inspect
expect_rc "inspect missing file" 1 $A inspect /nonexistent.onnx
grep -q "abacus: cannot open '/nonexistent.onnx'" /tmp/abacus_cli_err.$$ && ok "error names the file" || bad "error names the file"
expect_rc "batch 0 is a usage error" 2 $A inspect "$G" --batch 0
expect_rc "negative batch is a usage error" 2 $A inspect "$G" --batch -3
expect_rc "bad optimizer" 2 $A inspect "$G" --optimizer rmsprop
expect_rc "bad dims" 2 $A inspect "$G" --input input=1x3xtwo
head -c 1000 "$G" > /tmp/abacus_trunc.$$.onnx
expect_rc "truncated graph fails cleanly" 1 $A inspect /tmp/abacus_trunc.$$.onnx
grep -q "^abacus: " /tmp/abacus_cli_err.$$ && ok "truncated graph error format" || bad "truncated graph error format"
expect_rc "inspect --runtime torch-1.13.1" 0 $A inspect "$G" --runtime torch-1.13.1
expect_rc "inspect unknown --runtime" 2 $A inspect "$G" --runtime jax-0.4.30
grep -q "unknown runtime 'jax-0.4.30': this abacus prices torch-1.13.1, torch-2.15.0, tf-2.21.0" /tmp/abacus_cli_err.$$ && ok "unknown runtime error lists the runtimes" || bad "unknown runtime error lists the runtimes"
expect_rc "inspect --runtime tf-2.21.0" 0 $A inspect "$G" --runtime tf-2.21.0
# fuzz/corpus/bundle/small.abacus: trained on tests/data/small.csv, PyTorch 1.13 rows only
expect_rc "predict --runtime tf-2.21.0 without its rows" 1 $A predict "$G" --runtime tf-2.21.0 --model fuzz/corpus/bundle/small.abacus
grep -q "no rows of runtime tf-2.21.0.*abacus inspect GRAPH --runtime tf-2.21.0" /tmp/abacus_cli_err.$$ && ok "tf runtime without rows points to inspect" || bad "tf runtime without rows points to inspect"
expect_rc "bundled predictor prices a Keras graph" 0 $A predict data/graphs/tf/keras_mlp-32.onnx --runtime tf-2.21.0 --batch 4 --format json
python3 - /tmp/abacus_cli_out.$$ <<'PY' && ok "Keras graph: tf-2.21.0 hardware key and positive figures" || bad "Keras graph: tf-2.21.0 hardware key and positive figures"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["hw"].startswith("tf-2.21.0/"), j["hw"]
assert j["time_s"] > 0 and j["memory_bytes"] > 0
PY
expect_rc "inspect --runtime torch-2.15.0" 0 $A inspect "$G" --runtime torch-2.15.0
# A machine without AVX holds oneDNN's gemm scratchpad in a convolution's backward (docs/COSTS.md "Capped ISA"):
# more workspace on two threads than on one, more on one than with AVX.
ws() { $A inspect "$G" --batch 4 --format json "$@" | python3 -c "import json,sys; print(json.load(sys.stdin)['memory']['workspace'])"; }
w_avx=$(ws); w_sse1=$(ws --isa sse41); w_sse2=$(ws --isa sse41 --threads 2)
[ "$w_avx" -lt "$w_sse1" ] && [ "$w_sse1" -lt "$w_sse2" ] && ok "inspect --isa/--threads: capped workspace grows with threads" || bad "inspect --isa/--threads: capped workspace grows with threads ($w_avx $w_sse1 $w_sse2)"
expect_rc "inspect --isa unknown" 1 $A inspect "$G" --isa avx9
grep -q "unknown vector ISA 'avx9': machine ids name avx512, avx2, sse41 or sse" /tmp/abacus_cli_err.$$ && ok "unknown ISA names the known ones" || bad "unknown ISA names the known ones"
expect_rc "inspect table" 0 $A inspect "$G" --batch 4
grep -q "^totals: 11689512 parameters" /tmp/abacus_cli_out.$$ && ok "table totals" || bad "table totals"
expect_rc "inspect json" 0 $A inspect "$G" --batch 4 --optimizer adam --format json
if python3 - /tmp/abacus_cli_out.$$ <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
assert j["totals"]["params"] == 11689512
for k in ("params", "forward_flops", "backward_flops"): assert k in j["totals"]
m = j["memory"]
for k in ("weights", "gradients", "optimizer", "activations", "peak"): assert k in m
assert m["optimizer"] == 2 * m["weights"]
assert m["peak"] == sum(m[k] for k in ("weights", "buffers", "optimizer", "inputs", "gradients", "activations", "workspace"))
assert j["config"]["batch"] == 4 and j["layers"][0]["shape"][0] == 4
PY
then ok "json keys and invariants"; else bad "json keys and invariants"; fi
# --timeline: the simulated iteration step by step; its largest step peak is the memory's peak, and the peak
# step the table names is the one the timeline marks.
expect_rc "inspect --timeline json" 0 $A inspect "$G" --batch 4 --timeline --format json
if python3 - /tmp/abacus_cli_out.$$ <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
t, n = j["timeline"], len(j["layers"])
assert len(t) == 2 * n + 2, (len(t), n)
assert [s["phase"] for s in t[:n]] == ["forward"] * n and t[n]["phase"] == "loss" and t[-1]["phase"] == "step"
assert [s["phase"] for s in t[n + 1:-1]] == ["backward"] * n
assert max(s["peak"] for s in t) == j["memory"]["peak"]
assert all(s["peak"] >= s["live"] for s in t)
k = j["peak_step"]["index"]
assert t[k]["peak"] == j["memory"]["peak"] and t[k]["layer"] == j["peak_step"]["layer"]
assert t[0]["layer"] == j["layers"][0]["name"] and t[n]["layer"] is None
PY
then ok "inspect --timeline: steps, phases, peak"; else bad "inspect --timeline: steps, phases, peak"; fi
expect_rc "inspect --timeline csv" 0 $A inspect "$G" --batch 4 --timeline --format csv
head -1 /tmp/abacus_cli_out.$$ | grep -q "^step,phase,layer,op,peak_bytes,live_bytes$" && ok "timeline csv header" || bad "timeline csv header"
expect_rc "inspect --timeline table" 0 $A inspect "$G" --batch 4 --timeline
[ "$(grep -c '<- peak$' /tmp/abacus_cli_out.$$)" = 1 ] && ok "timeline table marks one peak" || bad "timeline table marks one peak"
$A inspect "$G" --batch 4 | grep -q "^  peak reached in  *backward of .* (step [0-9]* of [0-9]*; --timeline lists them)$" && ok "table names the peak step" || bad "table names the peak step"
expect_rc "inspect csv" 0 $A inspect "$G" --format csv
head -1 /tmp/abacus_cli_out.$$ | grep -q "^name,op,category,shape,params,forward_flops,backward_flops,output_bytes$" && ok "csv header" || bad "csv header"
expect_rc "input override" 0 $A inspect "$G" --input input=2x3x160x160 --format json
python3 -c "import json,sys; j=json.load(open('/tmp/abacus_cli_out.$$')); assert j['layers'][0]['shape']==[2,64,80,80]" && ok "input override shapes" || bad "input override shapes"
# Golden outputs, compared byte for byte (regenerate deliberately with the commands below when a rule
# changes, and say why in the commit).
golden() { # name file command...
	name=$1; file=$2; shift 2
	if "$@" 2>/dev/null | cmp -s - "$file"; then ok "golden $name"; else bad "golden $name (differs from $file)"; fi
}
G2=fuzz/corpus/onnx/conv_bn_relu_pool.onnx
golden "inspect table" tests/golden/inspect.txt $A inspect $G2 --batch 2
golden "inspect json" tests/golden/inspect.json $A inspect $G2 --batch 2 --format json
golden "inspect csv" tests/golden/inspect.csv $A inspect $G2 --batch 2 --format csv
golden "inspect lstm json" tests/golden/inspect_lstm.json $A inspect fuzz/corpus/onnx/lstm_tokens.onnx --batch 3 --optimizer adam --format json
golden "features json" tests/golden/features.json $A features $G2 --batch 2 --format json

# train / predict / eval on the small fixed dataset.
M=/tmp/abacus_cli_model.$$
expect_rc "train" 0 $A train tests/data/small.csv --out "$M" --rounds 30
golden "plan json" tests/golden/plan.json $A plan tests/data/graphs/resnet18-64.onnx --mem 300MiB --model "$M" --format json --samples 1000
golden "plan table" tests/golden/plan.txt $A plan tests/data/graphs/resnet18-64.onnx --mem 300MiB --model "$M" --samples 1000
expect_rc "predict for a runtime the bundle has no rows of" 1 $A predict "$G" --runtime torch-2.15.0 --model "$M"
grep -q "no rows of runtime torch-2.15.0 (it knows: cpu1)" /tmp/abacus_cli_err.$$ && ok "runtime without rows is refused" || bad "runtime without rows is refused"
golden "predict table" tests/golden/predict.txt $A predict tests/data/graphs/mlp-32.onnx --batch 4 --model "$M"
expect_rc "train without --out" 2 $A train tests/data/small.csv
expect_rc "train bad rounds" 2 $A train tests/data/small.csv --out "$M" --rounds 0
expect_rc "train broken csv" 1 $A train tests/cli_test.sh --out "$M.x"
grep -q "no 'network' column\|no 'graph' column\|header" /tmp/abacus_cli_err.$$ && ok "broken csv error names the problem" || bad "broken csv error names the problem"
expect_rc "predict json" 0 $A predict tests/data/graphs/resnet18-64.onnx --batch 8 --model "$M" --format json
if python3 - /tmp/abacus_cli_out.$$ <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
for k in ("time_s", "time_lo_s", "time_hi_s", "memory_bytes", "memory_lo_bytes", "memory_hi_bytes", "hw"): assert k in j, k
assert j["time_lo_s"] <= j["time_s"] <= j["time_hi_s"] and j["memory_lo_bytes"] <= j["memory_bytes"] <= j["memory_hi_bytes"]
assert j["hw"] == "cpu1"
PY
then ok "predict json keys"; else bad "predict json keys"; fi
expect_rc "predict unknown hw" 1 $A predict tests/data/graphs/resnet18-64.onnx --model "$M" --hw tpu7
grep -q "unknown hardware id 'tpu7'" /tmp/abacus_cli_err.$$ && ok "unknown hw error" || bad "unknown hw error"
head -c 300 "$M" > "$M.trunc"
expect_rc "predict truncated bundle" 1 $A predict tests/data/graphs/resnet18-64.onnx --model "$M.trunc"
grep -q "corrupt or truncated" /tmp/abacus_cli_err.$$ && ok "truncated bundle error" || bad "truncated bundle error"
expect_rc "predict missing bundle" 1 $A predict tests/data/graphs/resnet18-64.onnx --model /nonexistent.abacus
# Every machine the campaign meets adds hardware ids (runtime x hw x machine): the bundle of 2026-12-06 had 15
# of the 16 a model could key. small.csv's rows spread over N machine ids: 40 train and predict, 70 are refused
# by name.
many_machines() { # N OUT
	python3 - "$1" "$2" <<'PY'
import csv, sys
rows = list(csv.DictReader(open("tests/data/small.csv")))
w = csv.DictWriter(open(sys.argv[2], "w"), fieldnames=list(rows[0]) + ["machine", "runtime"])
w.writeheader()
n = int(sys.argv[1])
for i, r in enumerate(rows + rows):
    r.update(machine="test-m%02d-t1" % (i % n), runtime="torch-1.13.1", protocol="2")
    w.writerow(r)
PY
}
many_machines 40 /tmp/abacus_cli_many40.$$.csv
expect_rc "train on rows of 40 machines" 0 $A train /tmp/abacus_cli_many40.$$.csv --rounds 5 --out "$M.many"
grep -aq "^hw 40$" "$M.many" && ok "bundle keys 40 machines" || bad "bundle keys 40 machines"
expect_rc "predict on the 40th machine" 0 $A predict tests/data/graphs/mlp-32.onnx --model "$M.many" --hw cpu1@test-m39-t1
many_machines 70 /tmp/abacus_cli_many70.$$.csv
expect_rc "train on rows of 70 machines" 1 $A train /tmp/abacus_cli_many70.$$.csv --rounds 5 --out "$M.many70"
grep -q "more than 64 hardware ids" /tmp/abacus_cli_err.$$ && ok "too many hardware ids named" || bad "too many hardware ids named"
rm -f /tmp/abacus_cli_many40.$$.csv /tmp/abacus_cli_many70.$$.csv "$M.many"
expect_rc "eval random json" 0 $A eval tests/data/small.csv --rounds 30 --format json
if python3 - /tmp/abacus_cli_out.$$ <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
for t in ("time", "memory"):
    for k in ("mre", "median", "p90", "n", "noise_floor"): assert k in j[t], (t, k)
assert j["memory"]["mre"] < j["memory"]["analytic"]["mre"]
assert len(j["networks"]) == 4
h = j["hardware"]
assert len(h) == 1 and h[0]["hw"] == "cpu1" and h[0]["time"]["n"] == j["time"]["n"]
for k in ("time", "time_raw", "memory", "noise_floor", "noise_floor_raw"): assert "mre" in h[0][k], k
PY
then ok "eval json keys"; else bad "eval json keys"; fi
cp /tmp/abacus_cli_out.$$ /tmp/abacus_cli_json.$$
expect_rc "eval --json FILE" 0 $A eval tests/data/small.csv --rounds 30 --json /tmp/abacus_cli_json2.$$
cmp -s /tmp/abacus_cli_json.$$ /tmp/abacus_cli_json2.$$ && ok "eval --json FILE = --format json" || bad "eval --json FILE = --format json"
grep -q "^protocol random" /tmp/abacus_cli_out.$$ && ok "eval --json keeps the table" || bad "eval --json keeps the table"
expect_rc "eval --json unwritable" 1 $A eval tests/data/small.csv --rounds 5 --json /nonexistent/dir/e.json
expect_rc "eval --json without a file" 2 $A eval tests/data/small.csv --json
grep -q "json needs a value (--json FILE)" /tmp/abacus_cli_err.$$ && ok "eval --json without a file: message" || bad "eval --json without a file: message"
rm -f /tmp/abacus_cli_json.$$ /tmp/abacus_cli_json2.$$
expect_rc "eval lomo" 0 $A eval tests/data/small.csv --rounds 30 --protocol lomo
# small.csv's rows were all timed beside other work (busy_other > 0.1): no quiet-machine time figure
grep -q "time, quiet-machine rows  *none: every row shared the machine" /tmp/abacus_cli_out.$$ \
	&& ok "eval: no quiet rows said so" || bad "eval: no quiet rows said so"
# --rows writes every scored row; scripts/quiet_rows.py splits them by busy_other (all 60 busy here)
expect_rc "eval --rows" 0 $A eval tests/data/small.csv --rounds 20 --protocol lomo --rows /tmp/abacus_cli_rows.$$
[ "$(grep -c . /tmp/abacus_cli_rows.$$)" = 61 ] && ok "eval --rows: a line per scored row" || bad "eval --rows: a line per scored row"
if [ -x /usr/bin/python3 ]; then
	/usr/bin/python3 scripts/quiet_rows.py /tmp/abacus_cli_rows.$$ > /tmp/abacus_cli_out.$$ 2>&1
	grep -q "^quiet (busy_other <= 0.1): 0 rows" /tmp/abacus_cli_out.$$ && grep -q "^busy  (busy_other >  0.1): 60 rows, time MRE" /tmp/abacus_cli_out.$$ \
		&& ok "quiet_rows.py splits the rows" || bad "quiet_rows.py splits the rows"
	/usr/bin/python3 scripts/quiet_rows.py tests/data/small.csv > /tmp/abacus_cli_out.$$ 2>&1
	[ $? -ne 0 ] && grep -q "is not an .abacus eval --rows. file" /tmp/abacus_cli_out.$$ \
		&& ok "quiet_rows.py refuses another CSV" || bad "quiet_rows.py refuses another CSV"
fi
rm -f /tmp/abacus_cli_rows.$$
printf '# network\tfamily\nmlp\tdense\nresnet18\tconv\nmobilenet_v2\tconv\n' > /tmp/abacus_cli_fam.$$
expect_rc "eval lofo" 0 $A eval tests/data/small.csv --rounds 20 --protocol lofo --families /tmp/abacus_cli_fam.$$
grep -q "^protocol lofo" /tmp/abacus_cli_out.$$ && grep -q "memory: above 90 % upper end" /tmp/abacus_cli_out.$$ \
	&& ok "eval lofo: table with the underestimate rate" || bad "eval lofo: table with the underestimate rate"
printf 'mlp dense\n' > /tmp/abacus_cli_fam.$$
expect_rc "eval lofo: malformed families file" 1 $A eval tests/data/small.csv --rounds 5 --protocol lofo --families /tmp/abacus_cli_fam.$$
grep -q "abacus_cli_fam.$$:1: expected 'network<TAB>family'" /tmp/abacus_cli_err.$$ && ok "families file error names its line" || bad "families file error names its line"
expect_rc "eval lofo: missing families file" 1 $A eval tests/data/small.csv --rounds 5 --protocol lofo --families /nonexistent.tsv
expect_rc "train: malformed families file" 1 $A train tests/data/small.csv --rounds 5 --families /tmp/abacus_cli_fam.$$ --out /tmp/abacus_cli_famout.$$
grep -q "abacus_cli_fam.$$:1: expected 'network<TAB>family'" /tmp/abacus_cli_err.$$ && [ ! -e /tmp/abacus_cli_famout.$$ ] \
	&& ok "train: families file error names its line, writes nothing" || bad "train: families file error names its line, writes nothing"
expect_rc "train: missing families file" 1 $A train tests/data/small.csv --rounds 5 --families /nonexistent.tsv --out /tmp/abacus_cli_famout.$$
rm -f /tmp/abacus_cli_fam.$$
# Leave-one-machine-out on three synthetic machines (tests/data/machines: small.csv's rows and rates x 1, 2, 0.5).
$A eval tests/data/three_machines.csv --protocol lomachine --machines tests/data/machines --rounds 30 --format json \
	>/tmp/abacus_cli_out.$$ 2>/tmp/abacus_cli_err.$$
/usr/bin/python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
ms = {m["id"]: m for m in r["machines"]}
assert r["protocol"] == "lomachine" and sorted(ms) == ["mA", "mB", "mC"], ms
assert all(m["rows"] == 60 and m["time_mre"] < 0.1 and 0.5 <= m["coverage"] <= 1 for m in ms.values()), ms
' /tmp/abacus_cli_out.$$ && ok "eval lomachine json: three machines, each predicted from its profile" || bad "eval lomachine json: three machines, each predicted from its profile"
expect_rc "eval lomachine few-shot" 0 $A eval tests/data/three_machines.csv --protocol lomachine --machines tests/data/machines/mA.machine,tests/data/machines/mB.machine --rounds 30 --shots 5
expect_rc "eval --shots needs lomachine or loruntime" 2 $A eval tests/data/three_machines.csv --protocol lomo --shots 5
expect_rc "eval --runtime unknown" 2 $A eval tests/data/small.csv --runtime jax-0.4.30
grep -q "unknown runtime 'jax-0.4.30'" /tmp/abacus_cli_err.$$ && ok "eval --runtime names the unknown runtime" || bad "eval --runtime names the unknown runtime"
expect_rc "eval loruntime of one runtime" 1 $A eval tests/data/small.csv --protocol loruntime --rounds 20
grep -q "at least 2 runtimes" /tmp/abacus_cli_err.$$ && ok "eval loruntime names what it needs" || bad "eval loruntime names what it needs"
printf 'abacus-machine-profile 1\nmachine x\nthreads 1\nruntime torch-1.13.1\nrate conv_dense 0 0\n' >/tmp/abacus_cli_bad.machine.$$
expect_rc "eval corrupt profile" 1 $A eval tests/data/three_machines.csv --protocol lomachine --machines /tmp/abacus_cli_bad.machine.$$
grep -q "line 5: rate 'conv_dense' must be a positive" /tmp/abacus_cli_err.$$ && ok "corrupt profile error names the line" || bad "corrupt profile error names the line"
rm -f /tmp/abacus_cli_bad.machine.$$
expect_rc "eval lomachine without profiles" 1 $A eval tests/data/small.csv --protocol lomachine --machines tests/data/machines
# A bundle with the profile-mode time model; predictions on a machine's profile; few-shot adapt.
PB=/tmp/abacus_cli_prof.$$.abacus
expect_rc "train --machines" 0 $A train tests/data/three_machines.csv --machines tests/data/machines/mA.machine,tests/data/machines/mB.machine --rounds 30 --out $PB
ta=$($A predict $G --batch 4 --model $PB --machine tests/data/machines/mA.machine --format json | sed 's/.*"time_s": \([0-9.e+-]*\).*/\1/;q')
tb=$($A predict $G --batch 4 --model $PB --machine tests/data/machines/mB.machine --format json | sed 's/.*"time_s": \([0-9.e+-]*\).*/\1/;q')
awk -v a="$ta" -v b="$tb" 'BEGIN { exit !(a > 0 && b / a > 1.999 && b / a < 2.001) }' && ok "predict --machine: rates x 2, time x 2 ($ta, $tb)" || bad "predict --machine: rates x 2, time x 2 ($ta, $tb)"
expect_rc "predict --machine without a profile model" 1 $A predict $G --model "$M" --machine tests/data/machines/mA.machine
grep -q "trained without machine profiles" /tmp/abacus_cli_err.$$ && ok "that error says to retrain with --machines" || bad "that error says to retrain with --machines"
sed 's/^machine mA/machine mB/' tests/data/machines/mA.machine >/tmp/abacus_cli_mb.$$.machine
expect_rc "adapt on mB's rows" 0 $A adapt --machine /tmp/abacus_cli_mb.$$.machine tests/data/three_machines.csv --model $PB
grep -q "^adapt 1\.9[0-9]* 60$\|^adapt 2\.0[0-9]* 60$" /tmp/abacus_cli_mb.$$.machine && ok "adapt writes a factor near 2 from 60 rows" || bad "adapt writes a factor near 2 from 60 rows"
grep -q "adapting took" /tmp/abacus_cli_out.$$ && ok "adapt prints how long it took" || bad "adapt prints how long it took"
grep -q "leave-one-out" /tmp/abacus_cli_out.$$ && ok "adapt prints the rows' leave-one-out error" || bad "adapt prints the rows' leave-one-out error"
[ "$(grep -c '^shot ' /tmp/abacus_cli_mb.$$.machine)" = 60 ] && ok "adapt saves its 60 rows as shots" || bad "adapt saves its 60 rows as shots"
expect_rc "adapt again on the adapted profile" 0 $A adapt --machine /tmp/abacus_cli_mb.$$.machine tests/data/three_machines.csv --model $PB
[ "$(grep -c '^shot ' /tmp/abacus_cli_mb.$$.machine)" = 60 ] && ok "adapting again replaces the shots" || bad "adapting again replaces the shots"
expect_rc "predict --machine with shots" 0 $A predict $G --batch 4 --model $PB --machine /tmp/abacus_cli_mb.$$.machine
expect_rc "adapt without rows of the machine" 1 $A adapt --machine tests/data/machines/mA.machine tests/data/small.csv --model $PB
grep -q "no ok row was measured on machine mA" /tmp/abacus_cli_err.$$ && ok "adapt names the machine without rows" || bad "adapt names the machine without rows"
expect_rc "adapt without --machine" 2 $A adapt tests/data/three_machines.csv
expect_rc "calibrate unknown --isa-cap" 2 $A calibrate --isa-cap sse9 --out /tmp/abacus_cli_cap.$$.machine
expect_rc "profile unknown --isa-cap" 2 $A profile --isa-cap sse9 --out /tmp/abacus_cli_cap.$$.csv
grep -q "isa-cap must be none, sse41 or avx2" /tmp/abacus_cli_err.$$ && ok "unknown --isa-cap names the known caps" || bad "unknown --isa-cap names the known caps"
# profile --runtime: the runtimes it measures, and a clear error when a runtime's virtual environment is missing.
expect_rc "profile unknown --runtime" 2 $A profile --runtime tf-0.1 --out /tmp/abacus_cli_rt.$$.csv
grep -q "unknown runtime 'tf-0.1': abacus profile measures torch-1.13.1, torch-2.15.0, tf-2.21.0" /tmp/abacus_cli_err.$$ && ok "unknown --runtime lists the runtimes" || bad "unknown --runtime lists the runtimes"
$A profile --help 2>&1 | grep -q -- "--runtime NAME" && ok "profile --help shows --runtime" || bad "profile --help shows --runtime"
mkdir -p /tmp/abacus_cli_rt.$$/collector && : >/tmp/abacus_cli_rt.$$/collector/tf_worker.py && : >/tmp/abacus_cli_rt.$$/tracker.so
# (a tracker file given, so that the sanitizer build, which has none, reaches the runtime check too)
expect_rc "profile --runtime without its environment" 1 $A profile --runtime tf-2.21.0 --worker /tmp/abacus_cli_rt.$$/collector/tf_worker.py --tracker /tmp/abacus_cli_rt.$$/tracker.so --out /tmp/abacus_cli_rt.$$.csv
grep -q "runtime tf-2.21.0 is not installed.*scripts/setup.sh" /tmp/abacus_cli_err.$$ && ok "a missing runtime names scripts/setup.sh" || bad "a missing runtime names scripts/setup.sh"
rm -rf /tmp/abacus_cli_rt.$$ /tmp/abacus_cli_rt.$$.csv
rm -f $PB /tmp/abacus_cli_mb.$$.machine
expect_rc "eval cross-hw needs two hw" 1 $A eval tests/data/small.csv --protocol cross-hw
expect_rc "eval bad protocol" 2 $A eval tests/data/small.csv --protocol sideways
expect_rc "features" 0 $A features tests/data/graphs/resnet18-64.onnx --batch 2 --format json
python3 -c "import json; j=json.load(open('/tmp/abacus_cli_out.$$')); assert j['batch']==2 and j['nsm_input_to_conv']>0" && ok "features json" || bad "features json"
# plan: the largest batch, JSON keys, errors for bad budgets and ids.
expect_rc "plan json" 0 $A plan tests/data/graphs/resnet18-64.onnx --mem 300MiB --model "$M" --format json --samples 1000
if python3 - /tmp/abacus_cli_out.$$ <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
assert j["max_batch"] >= 1 and j["batches"]
fits = {b["batch"]: b for b in j["batches"]}
assert fits[j["max_batch"]]["memory_hi_bytes"] <= j["budget_bytes"]
if j["max_batch"] + 1 in fits: assert fits[j["max_batch"] + 1]["memory_hi_bytes"] > j["budget_bytes"]
for b in j["batches"]:
    assert b["verdict"] in ("fits", "risky", "does not fit")
    bd = b["breakdown"]
    assert sum(bd.values()) == b["memory_bytes"], (sum(bd.values()), b["memory_bytes"])
PY
then ok "plan json keys and max batch"; else bad "plan json keys and max batch"; fi
expect_rc "plan negative memory" 2 $A plan tests/data/graphs/resnet18-64.onnx --mem -5GiB --model "$M"
expect_rc "plan zero max batch" 2 $A plan tests/data/graphs/resnet18-64.onnx --max-batch 0 --model "$M"
expect_rc "plan refuses --batch" 2 $A plan tests/data/graphs/resnet18-64.onnx --batch 8 --model "$M"
expect_rc "plan unknown hw" 1 $A plan tests/data/graphs/resnet18-64.onnx --mem 1GiB --hw gpu9 --model "$M"
expect_rc "plan budget below weights" 1 $A plan tests/data/graphs/resnet18-64.onnx --mem 50MiB --model "$M"
grep -q "too small" /tmp/abacus_cli_err.$$ && ok "budget error says why" || bad "budget error says why"
# Every picture is well-formed SVG.
S=/tmp/abacus_cli_svg.$$
expect_rc "plan svg" 0 $A plan tests/data/graphs/resnet18-64.onnx --mem 300MiB --model "$M" --svg "$S.plan.svg"
expect_rc "inspect svg" 0 $A inspect tests/data/graphs/resnet18-64.onnx --svg "$S.inspect.svg"
expect_rc "features svg" 0 $A features tests/data/graphs/resnet18-64.onnx --svg "$S.nsm.svg"
expect_rc "eval svg" 0 $A eval tests/data/small.csv --rounds 20 --svg "$S.eval.svg"
if python3 -c "
import sys, xml.etree.ElementTree as ET
for f in sys.argv[1:]:
    root = ET.parse(f).getroot()
    assert root.tag.endswith('svg') and len(list(root.iter())) > 20, f
" "$S.plan.svg" "$S.inspect.svg" "$S.nsm.svg" "$S.eval.svg"; then ok "svgs are well-formed XML"; else bad "svgs are well-formed XML"; fi
expect_rc "svg to an unwritable path" 1 $A inspect tests/data/graphs/resnet18-64.onnx --svg /nonexistent/dir/x.svg
# The new plots byte for byte (round ticks in MiB/GiB, ms; the interval band; the legends; per-group colours).
expect_rc "eval lomachine svg" 0 $A eval tests/data/three_machines.csv --protocol lomachine --machines tests/data/machines \
	--rounds 20 --svg "$S.eval3.svg"
golden_file() { # name produced golden
	if cmp -s "$2" "$3"; then ok "golden $1"; else bad "golden $1 (differs from $3)"; fi
}
golden_file "plan svg" "$S.plan.svg" tests/golden/plan.svg
golden_file "eval svg" "$S.eval.svg" tests/golden/eval.svg
golden_file "eval lomachine svg" "$S.eval3.svg" tests/golden/eval_lomachine.svg
if grep -q 'e+[0-9]\|e-[0-9]' "$S.plan.svg" "$S.eval.svg" "$S.eval3.svg"; then bad "no exponent in any label"; else ok "no exponent in any label"; fi
# Every SVG the CLI writes renders (librsvg, as an image viewer or a browser would) to a non-empty PNG.
if command -v rsvg-convert >/dev/null 2>&1; then
	for k in plan inspect nsm eval eval3; do
		if rsvg-convert -o "$S.$k.png" "$S.$k.svg" 2>/tmp/abacus_cli_err.$$ && [ -s "$S.$k.png" ] &&
			head -c 8 "$S.$k.png" | od -An -c | grep -q "P   N   G"; then
			ok "svg renders to png: $k"
		else
			bad "svg renders to png: $k"; cat /tmp/abacus_cli_err.$$
		fi
	done
else
	echo "skip svg rendering: rsvg-convert is absent (Debian package librsvg2-bin, scripts/setup.sh)"
fi
rm -f "$S".*.svg "$S".*.png
# Progress: on a terminal a line per fold with the time left, in a pipe nothing.
$A eval tests/data/small.csv --rounds 5 >/dev/null 2>/tmp/abacus_cli_err.$$
[ ! -s /tmp/abacus_cli_err.$$ ] && ok "eval is quiet when stderr is not a terminal" || bad "eval is quiet when stderr is not a terminal"
if command -v script >/dev/null 2>&1; then
	script -qec "$A eval tests/data/small.csv --rounds 5 >/dev/null" /dev/null >/tmp/abacus_cli_out.$$ 2>&1
	grep -q "eval: fold 2/5, .* elapsed, about .* left" /tmp/abacus_cli_out.$$ && ok "eval shows progress on a terminal" ||
		bad "eval shows progress on a terminal"
	# (data/families.tsv, the default families: 1 fit + 5 folds of networks + 5 folds of families)
	script -qec "$A train tests/data/small.csv --rounds 5 --out $S.m" /dev/null >/tmp/abacus_cli_out.$$ 2>&1
	grep -q "train: fit 2/11, .* elapsed, about .* left" /tmp/abacus_cli_out.$$ && ok "train shows progress on a terminal" ||
		bad "train shows progress on a terminal"
	script -qec "$A train tests/data/small.csv --rounds 5 --families none --out $S.m" /dev/null >/tmp/abacus_cli_out.$$ 2>&1
	grep -q "train: fit 2/6, " /tmp/abacus_cli_out.$$ && ok "train --families none: no family folds" ||
		bad "train --families none: no family folds"
	rm -f "$S.m"
fi
expect_rc "calibrate json" 0 $A calibrate --hw cpu1 --model "$M" --format json
python3 -c "import json; j=json.load(open('/tmp/abacus_cli_out.$$')); assert j['calib_s'] > 0 and j['training_calib_s'] > 0 and j['threads'] == 1" && ok "calibrate json" || bad "calibrate json"
expect_rc "calibrate bad hw" 2 $A calibrate --hw tpu1
# The bundled predictor (the quick start's default) must be readable by this build: a bundle format
# change without retraining it would break `abacus predict` for every new user.
if [ -f data/predictor.abacus ]; then
	expect_rc "predict with the bundled predictor" 0 env -u ABACUS_MODEL $A predict tests/data/graphs/resnet18-64.onnx --batch 8 --format json
	python3 -c "import json; j=json.load(open('/tmp/abacus_cli_out.$$')); assert j['time_s'] > 0 and j['memory_bytes'] > 0 and j['hw'] == 'cpu1'" && ok "bundled predictor json" || bad "bundled predictor json"
	expect_rc "bundled predictor knows cpu2" 0 env -u ABACUS_MODEL $A predict tests/data/graphs/resnet18-64.onnx --hw cpu2
	expect_rc "bundled predictor prices torch-2.15.0" 0 env -u ABACUS_MODEL $A predict tests/data/graphs/resnet18-64.onnx --runtime torch-2.15.0
fi
rm -f "$M" "$M.trunc" "$M.x"
rm -f /tmp/abacus_cli_out.$$ /tmp/abacus_cli_err.$$ /tmp/abacus_trunc.$$.onnx
echo "cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
