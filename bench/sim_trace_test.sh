#!/bin/sh
# ctest bench_sim_trace: `sim --trace DIR` writes one trace per run, with the header and the
# records the README describes, and changes no figure of the tables.
# Usage: bench/sim_trace_test.sh SIM_BINARY
set -eu
sim=$1
d=$(mktemp -d "${TMPDIR:-/tmp}/sim_trace.XXXXXX")
trap 'rm -rf "$d"' EXIT INT TERM

"$sim" interactive --quick > "$d/plain"
"$sim" interactive --quick --trace "$d" > "$d/traced"
cmp "$d/plain" "$d/traced" || { echo "sim_trace_test: --trace changed the tables" >&2; exit 1; }
f=$d/interactive-1.trace
[ -s "$f" ] || { echo "sim_trace_test: no $f" >&2; exit 1; }
head -1 "$f" | grep -q '^# bench/sim interactive run 1: cfq on hdd, seed 1; quantum=' ||
	{ echo "sim_trace_test: bad header: $(head -1 "$f")" >&2; exit 1; }
for ev in queue dispatch complete activate slice expire idle; do
	n=$(grep -c "^[0-9]*\.[0-9]\{9\} $ev [0-9]* \(sync\|async\) [0-9]*" "$f" || true)
	[ "$n" -gt 0 ] || { echo "sim_trace_test: no '$ev' record in $f" >&2; exit 1; }
done
runs=$(ls "$d"/interactive-*.trace | wc -l)
[ "$runs" -ge 3 ] || { echo "sim_trace_test: $runs trace files, expected one per run" >&2; exit 1; }
echo "sim_trace_test: $runs traces, $(grep -c ' dispatch ' "$f") dispatches in the first"
