#!/bin/sh
# Interleaved wall-clock comparison of two builds' sched_micro: ROUNDS rounds, each running
# both builds (pinned to one CPU) on every row, one after the other, so that the host's
# load drifts over both alike. Prints, per row and build, the median of the rounds' medians
# (each sched_micro run is itself a median of 5) and the range. A single run moves by up to
# 2x on a shared machine; compare medians of several rounds, never single figures.
#
# Usage: bench/sched_micro_ab.sh BUILD_A BUILD_B [ROUNDS] [CPU]   (defaults: 6 rounds, CPU 1)
# Rows: 64/1, 64/10, 1024/10, 16384/1, 16384/10, 16384/1000 (queues/groups), non-rotational.
set -eu

a=${1:?usage: sched_micro_ab.sh BUILD_A BUILD_B [ROUNDS] [CPU]}
b=${2:?usage: sched_micro_ab.sh BUILD_A BUILD_B [ROUNDS] [CPU]}
rounds=${3:-6}
cpu=${4:-1}
for d in "$a" "$b"; do
	[ -x "$d/bench/sched_micro" ] || { echo "sched_micro_ab: $d/bench/sched_micro not built" >&2; exit 1; }
done
command -v taskset >/dev/null 2>&1 || { echo "sched_micro_ab: taskset missing (util-linux)" >&2; exit 1; }

out=$(mktemp "${TMPDIR:-/tmp}/sched_micro_ab.XXXXXX")
trap 'rm -f "$out"' EXIT INT TERM

r=0
while [ "$r" -lt "$rounds" ]; do
	for row in "64 1" "64 10" "1024 10" "16384 1" "16384 10" "16384 1000"; do
		set -- $row
		for d in "$a" "$b"; do
			ns=$(taskset -c "$cpu" "$d/bench/sched_micro" --queues "$1" --groups "$2" |
				sed -n 's/.* ns_per_req=\([0-9.]*\) .*/\1/p')
			echo "$1 $2 $d $ns" >> "$out"
		done
	done
	r=$((r + 1))
done

# median (lower middle for even counts averaged with the upper) and range per row and build
sort -k1,1n -k2,2n -k3,3 -k4,4n "$out" | awk '
{ k = $1 " " $2 " " $3; v[k, ++n[k]] = $4; if (!(k in seen)) { seen[k] = 1; order[++m] = k } }
END {
	printf "%-7s %-7s %-40s %10s %20s\n", "queues", "groups", "build", "median_ns", "range_ns"
	for (i = 1; i <= m; i++) {
		k = order[i]; c = n[k]
		med = (c % 2) ? v[k, (c + 1) / 2] : (v[k, c / 2] + v[k, c / 2 + 1]) / 2
		split(k, f, " ")
		printf "%-7s %-7s %-40s %10.1f %9.1f-%-10.1f\n", f[1], f[2], f[3], med, v[k, 1], v[k, c]
	}
}'
