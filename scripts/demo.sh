#!/bin/bash
# make demo: mount cfqfs over a small generated data directory, run a contended workload
# through it, print what each client got, unmount. Everything lives in a temp dir that is
# removed on exit, and the mount is undone even if a step fails.
set -euo pipefail

BIN=${1:-build/fs/cfqfs}
[ -x "$BIN" ] || { echo "demo: $BIN not built (run make build)" >&2; exit 1; }
[ -e /dev/fuse ] || { echo "demo: /dev/fuse is missing: cannot mount" >&2; exit 1; }

TMP=$(mktemp -d /tmp/cfqfs-demo.XXXXXX)
SRC=$TMP/src MNT=$TMP/mnt LOG=$TMP/cfqfs.log
mkdir -p "$SRC" "$MNT"
DAEMON=
cleanup() {
	if grep -qs " $MNT " /proc/mounts; then
		fusermount3 -u "$MNT" 2>/dev/null || umount -l "$MNT" 2>/dev/null || true
	fi
	[ -n "$DAEMON" ] && wait "$DAEMON" 2>/dev/null || true
	rm -rf "$TMP"
}
trap cleanup EXIT INT TERM

SIZE_MB=${DEMO_SIZE_MB:-64}
echo "== generating $((SIZE_MB * 3)) MiB of data in $SRC"
for f in a b c; do
	head -c $((SIZE_MB * 1024 * 1024)) /dev/urandom >"$SRC/$f.dat"
done

echo "== mounting: $BIN -f -o direct_io $SRC $MNT"
"$BIN" -f -o direct_io "$SRC" "$MNT" 2>"$LOG" &
DAEMON=$!
for _ in $(seq 100); do
	grep -qs " $MNT fuse" /proc/mounts && break
	sleep 0.1
done
grep -qs " $MNT fuse" /proc/mounts || { cat "$LOG" >&2; echo "demo: mount failed" >&2; exit 1; }

# Three clients at once: two sequential readers and a writer with fsync.
run() { # name, then the command; prints "name seconds"
	local name=$1 t0 t1
	shift
	t0=$(date +%s.%N)
	"$@" 2>/dev/null
	t1=$(date +%s.%N)
	awk -v n="$name" -v a="$t0" -v b="$t1" 'BEGIN { printf "%s %.3f\n", n, b - a }'
}
echo "== contended workload: reader-a, reader-b (sequential 1 MiB reads), writer-c (write + fsync)"
{
	run reader-a dd if="$MNT/a.dat" of=/dev/null bs=1M &
	run reader-b dd if="$MNT/b.dat" of=/dev/null bs=1M &
	run writer-c dd if="$SRC/c.dat" of="$MNT/c.out" bs=1M conv=fsync &
	wait
} >"$TMP/times"

printf '\n%-10s %10s %10s %10s\n' client MiB seconds MiB/s
while read -r name secs; do
	awk -v n="$name" -v mb="$SIZE_MB" -v s="$secs" \
		'BEGIN { printf "%-10s %10d %10.2f %10.1f\n", n, mb, s, mb / s }'
done <"$TMP/times"
cmp -s "$SRC/c.dat" "$SRC/c.out" && echo "writer-c's data verified in SOURCE" ||
	{ echo "demo: written data differs!" >&2; exit 1; }

echo
echo "== unmounting"
fusermount3 -u "$MNT"
wait "$DAEMON"
DAEMON=
echo "daemon exited cleanly; log:"
sed 's/^/  /' "$LOG"
