#!/bin/sh
# cli_test.sh — integration tests of the abacus command line: exit codes, error format, JSON keys.
# Usage: ABACUS=build/release/abacus sh tests/cli_test.sh
set -u
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
G=data/graphs/resnet18-224.onnx

expect_rc "no arguments is a usage error" 2 "$A"
expect_rc "--help" 0 "$A" --help
expect_rc "inspect --help" 0 "$A" inspect --help
expect_rc "unknown command" 2 "$A" frobnicate
expect_rc "inspect without file" 2 "$A" inspect
expect_rc "inspect missing file" 1 "$A" inspect /nonexistent.onnx
grep -q "abacus: cannot open '/nonexistent.onnx'" /tmp/abacus_cli_err.$$ && ok "error names the file" || bad "error names the file"
expect_rc "batch 0 is a usage error" 2 "$A" inspect "$G" --batch 0
expect_rc "negative batch is a usage error" 2 "$A" inspect "$G" --batch -3
expect_rc "bad optimizer" 2 "$A" inspect "$G" --optimizer rmsprop
expect_rc "bad dims" 2 "$A" inspect "$G" --input input=1x3xtwo
head -c 1000 "$G" > /tmp/abacus_trunc.$$.onnx
expect_rc "truncated graph fails cleanly" 1 "$A" inspect /tmp/abacus_trunc.$$.onnx
grep -q "^abacus: " /tmp/abacus_cli_err.$$ && ok "truncated graph error format" || bad "truncated graph error format"
expect_rc "inspect table" 0 "$A" inspect "$G" --batch 4
grep -q "^totals: 11689512 parameters" /tmp/abacus_cli_out.$$ && ok "table totals" || bad "table totals"
expect_rc "inspect json" 0 "$A" inspect "$G" --batch 4 --optimizer adam --format json
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
expect_rc "inspect csv" 0 "$A" inspect "$G" --format csv
head -1 /tmp/abacus_cli_out.$$ | grep -q "^name,op,category,shape,params,forward_flops,backward_flops,output_bytes$" && ok "csv header" || bad "csv header"
expect_rc "input override" 0 "$A" inspect data/graphs/resnet18-224.onnx --input input=2x3x160x160 --format json
python3 -c "import json,sys; j=json.load(open('/tmp/abacus_cli_out.$$')); assert j['layers'][0]['shape']==[2,64,80,80]" && ok "input override shapes" || bad "input override shapes"
rm -f /tmp/abacus_cli_out.$$ /tmp/abacus_cli_err.$$ /tmp/abacus_trunc.$$.onnx
echo "cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
