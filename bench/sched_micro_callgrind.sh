#!/bin/sh
# Instructions (and, with SIM=cache, simulated cache misses) per request of the scheduler core
# (enqueue + dispatch + complete), counted by callgrind over sched_micro's measured loop only
# (setup and warm-up excluded). Deterministic: the same build gives the same numbers on a
# loaded machine.
#
# Usage: [SIM=cache] [ROTATIONAL=1] bench/sched_micro_callgrind.sh [BUILD_DIR] [QUEUES] [GROUPS]
#        [REQS] [POLICY]
#        defaults: build, 1024 queues, 10 groups, 20000 requests, cfq, non-rotational
#
# SIM=cache simulates a 32 KiB 8-way L1d and a 512 KiB 8-way last level (the L2 of one core
# of this project's machine; a miss there is an L3 hit at best), and prints per request:
# instructions, L1d misses, last-level misses (reads + writes), and est_cycles =
# Ir + 10 * L1 misses + 100 * LL misses (cachegrind's classic cost model: a model, not a
# measurement, but one that does not move with the machine's load).
set -eu

build=${1:-build}
queues=${2:-1024}
groups=${3:-10}
reqs=${4:-20000}
policy=${5:-cfq}
bin="$build/bench/sched_micro"
sim=${SIM:-}

[ -x "$bin" ] || { echo "sched_micro_callgrind: $bin not built" >&2; exit 1; }
command -v valgrind >/dev/null 2>&1 || { echo "sched_micro_callgrind: valgrind missing (scripts/install-deps.sh bench)" >&2; exit 1; }

out=$(mktemp "${TMPDIR:-/tmp}/sched_micro.callgrind.XXXXXX")
trap 'rm -f "$out"' EXIT INT TERM

if [ "$sim" = cache ]; then
	set -- --cache-sim=yes --I1=32768,8,64 --D1=32768,8,64 --LL=524288,8,64
else
	set --
fi
valgrind --tool=callgrind "$@" --collect-atstart=no --toggle-collect='measure_loop*' \
	--callgrind-out-file="$out" "$bin" --queues "$queues" --groups "$groups" \
	--reqs "$reqs" --runs 1 --policy "$policy" --rotational "${ROTATIONAL:-0}" >/dev/null 2>&1

# "events: Ir ..." names the columns of "summary: N ..." (or "totals: N ...").
awk -v n="$reqs" -v q="$queues" -v g="$groups" -v p="$policy" '
/^events:/ { for (i = 2; i <= NF; i++) col[$i] = i - 1 }
/^(summary|totals):/ && !done { for (i = 2; i <= NF; i++) v[i - 1] = $i; done = 1 }
END {
	if (!done) { print "sched_micro_callgrind: no totals in callgrind output" > "/dev/stderr"; exit 1 }
	ir = v[col["Ir"]]
	if (!("D1mr" in col)) {
		printf "policy=%s queues=%s groups=%s instr_per_req=%.0f (total %s over %s requests)\n",
			p, q, g, ir / n, ir, n
		exit 0
	}
	d1 = v[col["D1mr"]] + v[col["D1mw"]]
	ll = v[col["DLmr"]] + v[col["DLmw"]]
	printf "policy=%s queues=%s groups=%s instr_per_req=%.0f l1d_miss_per_req=%.2f ll_miss_per_req=%.2f est_cycles_per_req=%.0f\n",
		p, q, g, ir / n, d1 / n, ll / n, (ir + 10 * d1 + 100 * ll) / n
}' "$out"
