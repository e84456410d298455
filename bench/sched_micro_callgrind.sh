#!/bin/sh
# Instructions per request of the scheduler core (enqueue + dispatch + complete), counted by
# callgrind over sched_micro's measured loop only (setup and warm-up excluded).
#
# Usage: bench/sched_micro_callgrind.sh [BUILD_DIR] [QUEUES] [GROUPS] [REQS] [POLICY]
#        defaults: build, 1024 queues, 10 groups, 20000 requests, cfq
set -eu

build=${1:-build}
queues=${2:-1024}
groups=${3:-10}
reqs=${4:-20000}
policy=${5:-cfq}
bin="$build/bench/sched_micro"

[ -x "$bin" ] || { echo "sched_micro_callgrind: $bin not built" >&2; exit 1; }
command -v valgrind >/dev/null 2>&1 || { echo "sched_micro_callgrind: valgrind missing (scripts/install-deps.sh bench)" >&2; exit 1; }

out=$(mktemp "${TMPDIR:-/tmp}/sched_micro.callgrind.XXXXXX")
trap 'rm -f "$out"' EXIT INT TERM

valgrind --tool=callgrind --collect-atstart=no --toggle-collect='measure_loop*' \
	--callgrind-out-file="$out" "$bin" --queues "$queues" --groups "$groups" \
	--reqs "$reqs" --runs 1 --policy "$policy" >/dev/null 2>&1

# "summary: N" (or "totals: N") holds the instruction count of the collected part.
ir=$(sed -n 's/^\(summary\|totals\): *\([0-9]*\).*/\2/p' "$out" | head -n 1)
[ -n "$ir" ] || { echo "sched_micro_callgrind: no totals in callgrind output" >&2; exit 1; }
awk -v ir="$ir" -v n="$reqs" -v q="$queues" -v g="$groups" -v p="$policy" 'BEGIN {
	printf "policy=%s queues=%s groups=%s instr_per_req=%.0f (total %s over %s requests)\n",
		p, q, g, ir / n, ir, n
}'
