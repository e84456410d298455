#!/bin/bash
# make demo: mount cfqfs over a small generated data directory on an emulated hard disk, run a
# contended workload through it, print what each client got, unmount; then the same with the
# noop scheduler, to show what cfq changes. Everything lives in a temp dir that is removed on
# exit, and the mount and the demo's cgroups are undone even if a step fails.
#
# The clients: two tenants in their own cgroups (weights 100 and 400, set by config rules on the
# cgroups) and a backup job started with `ionice -c3` (IDLE class) in the root cgroup, each a
# sequential reader (fio, 128 KiB reads). The mount is `-o device=hdd,direct_io`: every read
# goes through the scheduler and is held for the emulated disk's service time, so the shares
# are those of the scheduler, not of the page cache.
#
# Environment: DEMO_SIZE_MB (data per client, default 64), DEMO_SECS (per scheduler, default 10).
set -euo pipefail

BIN=${1:-build/fs/cfqfs}
HERE=$(cd "$(dirname "$0")" && pwd)
[ -x "$BIN" ] || { echo "demo: $BIN not built (run make build)" >&2; exit 1; }
[ -e /dev/fuse ] || { echo "demo: /dev/fuse is missing: cannot mount" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "demo: run as root (cgroups, FUSE)" >&2; exit 1; }
for tool in fio jq ionice; do
	command -v $tool >/dev/null || { echo "demo: $tool missing (make deps-bench)" >&2; exit 1; }
done
# shellcheck source=../bench/lib/cgroup.sh
CG_PREFIX=cfqfs-demo-$$
. "$HERE/../bench/lib/cgroup.sh"
cg_find

TMP=$(mktemp -d /tmp/cfqfs-demo.XXXXXX)
SRC=$TMP/src MNT=$TMP/mnt LOG=$TMP/cfqfs.log
mkdir -p "$SRC" "$MNT"
DAEMON=
cleanup() {
	if grep -qs " $MNT " /proc/mounts; then
		fusermount3 -u "$MNT" 2>/dev/null || umount -l "$MNT" 2>/dev/null || true
	fi
	[ -n "$DAEMON" ] && wait "$DAEMON" 2>/dev/null || true
	cg_cleanup
	rm -rf "$TMP"
}
trap cleanup EXIT INT TERM

SIZE_MB=${DEMO_SIZE_MB:-64}
SECS=${DEMO_SECS:-10}
echo "== generating $((SIZE_MB * 3)) MiB of data in $SRC"
for f in tenant-a tenant-b backup; do
	head -c $((SIZE_MB * 1024 * 1024)) /dev/urandom >"$SRC/$f.dat"
done

cg_make tenant-a
cg_make tenant-b
echo "== cgroups under $CG_ROOT (cfqfs reads the $CG_LINE line of /proc/PID/cgroup):"
echo "   tenant-a $(cg_name tenant-a) weight 100, tenant-b $(cg_name tenant-b) weight 400;"
echo "   backup: root cgroup, ionice -c3 (IDLE class)"
cat >"$TMP/cfqfs.conf" <<EOF
rules = ( $(cg_rule tenant-a 100), $(cg_rule tenant-b 400) );
EOF

mount_cfqfs() { # extra -o options
	local opts="device=hdd,direct_io,cgroup_line=$CG_LINE${1:+,$1}"
	echo "== mounting: $BIN -f -c cfqfs.conf -o $opts SRC MNT"
	"$BIN" -f -c "$TMP/cfqfs.conf" -o "$opts" "$SRC" "$MNT" 2>>"$LOG" &
	DAEMON=$!
	for _ in $(seq 100); do
		grep -qs " $MNT fuse" /proc/mounts && break
		sleep 0.1
	done
	grep -qs " $MNT fuse" /proc/mounts || { cat "$LOG" >&2; echo "demo: mount failed" >&2; exit 1; }
}

unmount_cfqfs() {
	fusermount3 -u "$MNT"
	wait "$DAEMON"
	DAEMON=
}

# One fio reader: name, then the command prefix that places it (cg_exec ... / ionice ...).
reader() {
	local name=$1
	shift
	"$@" fio --name="$name" --filename="$MNT/$name.dat" --rw=read --bs=128k \
		--ioengine=psync --time_based --runtime="$SECS" --output-format=json \
		>"$TMP/$name.json" 2>"$TMP/$name.err"
}

run_workload() { # label
	echo "== $1: three clients read for ${SECS}s"
	local pids=()
	reader tenant-a cg_exec tenant-a &
	pids+=($!)
	reader tenant-b cg_exec tenant-b &
	pids+=($!)
	reader backup ionice -c3 &
	pids+=($!)
	wait "${pids[@]}" || true
	for name in tenant-a tenant-b backup; do
		[ -s "$TMP/$name.json" ] || { cat "$TMP/$name.err" >&2; echo "demo: $name failed" >&2; exit 1; }
		jq -r --arg n "$name" --arg s "$1" '.jobs[0].read |
			[$s, $n, .bw_bytes / 1e6, .clat_ns.mean / 1e6, .clat_ns.max / 1e6] | @tsv' \
			"$TMP/$name.json"
	done >>"$TMP/results.tsv"
}

: >"$TMP/results.tsv"
mount_cfqfs ""
run_workload cfq
unmount_cfqfs
mount_cfqfs "scheduler=noop"
run_workload noop
unmount_cfqfs

echo
awk -F'\t' '
	{ s[NR] = $1; n[NR] = $2; bw[NR] = $3; mean[NR] = $4; mx[NR] = $5; tot[$1] += $3 }
	END {
		printf "%-6s %-9s %8s %7s %12s %11s\n", "sched", "client", "MB/s", "share",
			"lat mean ms", "lat max ms"
		for (i = 1; i <= NR; i++) {
			if (i > 1 && s[i] != s[i - 1])
				print ""
			printf "%-6s %-9s %8.1f %6.1f%% %12.1f %11.1f\n", s[i], n[i], bw[i],
				(tot[s[i]] > 0 ? 100 * bw[i] / tot[s[i]] : 0), mean[i], mx[i]
		}
	}' "$TMP/results.tsv"
echo
echo "weights say tenant-b:tenant-a = 4:1 and the IDLE backup runs only when the disk is"
echo "otherwise idle; cfq enforces that, noop (FIFO) serves whoever asks."
echo
echo "== unmounted cleanly; daemon log:"
sed 's/^/  /' "$LOG"
