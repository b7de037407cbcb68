#!/bin/sh
# boundary_test.sh — the runtime boundary (src/runtime.h) holds: outside the op table (src/ops.c) and the
# runtime files (src/runtime*.c), no library code decides per-op behaviour by comparing an op's name; it
# asks the op table (flags and fields of ab_opdef) or the runtime. Prints each offending line and fails.
set -u
cd "$(dirname "$0")/.."
bad=$(grep -nE 'str(n)?cmp\([^;]*->op\b|str(n)?cmp\(op,|strstr\([^;]*->op\b|strstr\(op,' src/*.c |
	grep -vE '^src/(ops|runtime[a-z_]*)\.c:')
if [ -n "$bad" ]; then
	echo "boundary: op names compared outside the op table and the runtime files:"
	echo "$bad"
	exit 1
fi
# Every runtime file registers one ab_runtime, and runtime.c's table lists it.
for f in src/runtime_*.c; do
	for r in $(grep -oE '^const ab_runtime [a-z0-9_]+' "$f" | awk '{print $3}'); do
		grep -q "&$r," src/runtime.c || { echo "boundary: $f defines $r but src/runtime.c does not list it"; exit 1; }
	done
done
echo "boundary: ok"
