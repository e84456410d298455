#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Runs one Criterion suite binary for ctest so that skipped tests do not look like passes.
#
#   run-criterion.sh SKIPDIR NAME BINARY [ARGS...]
#
# Criterion exits 0 when every test skipped, and its summary ("Tested: 0") gives no reason.
# This reads the suite's TAP report: each skipped test is printed with its reason and written
# to SKIPDIR/NAME.txt (make test lists them at the end); if every test skipped, the exit
# status is 77, ctest's SKIP_RETURN_CODE, so ctest reports the suite as skipped, not passed.
set -u
skipdir=$1 name=$2
shift 2
tap=$(mktemp "${TMPDIR:-/tmp}/cfqfs-tap.XXXXXX") || exit 1
trap 'rm -f "$tap"' EXIT
mkdir -p "$skipdir" && rm -f "$skipdir/$name.txt"

"$@" --tap="$tap"
rc=$?

total=$(grep -cE '^(not )?ok ' "$tap")
skipped=$(grep -cE '^ok .*# SKIP' "$tap")
if [ "$skipped" -gt 0 ]; then
	# "ok - suite::test  # SKIP reason" -> "NAME: suite::test: reason"
	sed -nE 's/^ok - ([^ ]+) +# SKIP (.*)$/'"$name"': \1: \2/p' "$tap" >"$skipdir/$name.txt"
	echo "$name: $skipped of $total tests skipped:"
	sed 's/^/  /' "$skipdir/$name.txt"
fi
if [ "$rc" -eq 0 ] && [ "$total" -gt 0 ] && [ "$skipped" -eq "$total" ]; then
	echo "$name: every test skipped (exit 77: ctest shows it as skipped)"
	exit 77
fi
if [ "$rc" -eq 0 ] && [ "$total" -eq 0 ]; then
	echo "$name: no test ran (no TAP report)" >&2
	exit 1
fi
exit "$rc"
