#!/usr/bin/env bash
# scripts/soak.sh - everything at once on one cfqfs mount, for a while, to find what the
# focused tests miss. Run as root from the top of the tree, after a build:
#
#   scripts/soak.sh [--bin DAEMON] [--fsx FSX] [--secs N] [--source tmpfs|disk] [-o OPTS]
#
# Defaults: build-asan/fs/cfqfs (`make asan` builds it) else build/fs/cfqfs, the matching
# cfqfs_fsx, 120 s, a tmpfs SOURCE. A TSan daemon (`make tsan-only`, build-tsan/fs/cfqfs)
# works too: --bin build-tsan/fs/cfqfs --fsx build/tests/fsx/cfqfs_fsx. -o adds mount options (e.g. direct_io, writeback_cache,
# device=hdd). With direct_io the fsx runs leave out mmap (the kernel refuses MAP_SHARED).
# Meanwhile, on the mount:
#   - three fsx checkers on files of their own, one seed after another;
#   - fio random writes with crc32c verification (ionice -c 3) and random reads (-c 1);
#   - a control loop: scheduler switches, random valid and invalid tunables, the trace on and
#     off, every control file read, SIGHUP reloads;
#   - clients (dd writers and readers, an fsx) SIGKILLed at random moments;
#   - metadata churn: create, rename, link, symlink, xattr, truncate, unlink of open files;
#   - uid 65534 reading and failing to write;
#   - short-lived cgroups (blkio on cgroup v1, the unified tree on v2) with weights.
# At the end it prints whether the daemon survived, its exit status after the unmount, every
# failure line and every sanitizer report, and exits 1 if there was any.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN="" FSX="" SECS=120 SRCTYPE=tmpfs EXTRA=""
while [ $# -gt 0 ]; do
	case $1 in
	--bin) BIN=$2; shift ;;
	--fsx) FSX=$2; shift ;;
	--secs) SECS=$2; shift ;;
	--source) SRCTYPE=$2; shift ;;
	-o) EXTRA=${EXTRA:+$EXTRA,}$2; shift ;;
	-h | --help) sed -n '2,20p' "$0"; exit 0 ;;
	*) echo "soak.sh: unknown argument '$1' (--help)" >&2; exit 64 ;;
	esac
	shift
done
for b in build-asan build; do
	[ -z "$BIN" ] && [ -x "$here/$b/fs/cfqfs" ] && BIN=$here/$b/fs/cfqfs
	[ -z "$FSX" ] && [ -x "$here/$b/tests/fsx/cfqfs_fsx" ] && FSX=$here/$b/tests/fsx/cfqfs_fsx
done
if [ ! -x "$BIN" ] || [ ! -x "$FSX" ]; then
	echo "soak.sh: no daemon or fsx built (make asan)" >&2
	exit 1
fi
for t in fio setfattr setpriv ionice fusermount3; do
	command -v $t >/dev/null || { echo "soak.sh: $t missing (make deps-bench)" >&2; exit 1; }
done
FSXO=""
case ",$EXTRA," in *,direct_io,*) FSXO="-R -W" ;; esac

W=$(mktemp -d /tmp/cfqfs-soak.XXXXXX)
SRC=$W/src MNT=$W/mnt LOG=$W/log
mkdir -p "$SRC" "$MNT" "$LOG"
if [ "$SRCTYPE" = tmpfs ]; then
	mount -t tmpfs -o size=4g,mode=0755 cfqfs-soak "$SRC" || exit 1
fi
chmod 0755 "$W" "$SRC"
if [ -d /sys/fs/cgroup/blkio ]; then CGROOT=/sys/fs/cgroup/blkio; else CGROOT=/sys/fs/cgroup; fi
export ASAN_OPTIONS=detect_leaks=1:log_path=$LOG/asan UBSAN_OPTIONS=print_stacktrace=1:log_path=$LOG/ubsan
export TSAN_OPTIONS="second_deadlock_stack=1 log_path=$LOG/tsan"
echo 'scheduler = "cfq";' >"$W/conf"
"$BIN" -f -o "allow_other,config=$W/conf${EXTRA:+,$EXTRA}" "$SRC" "$MNT" 2>"$LOG/daemon.err" &
DPID=$!
for _ in $(seq 100); do mountpoint -q "$MNT" && break; sleep 0.1; done
if ! mountpoint -q "$MNT"; then
	echo "soak.sh: mount failed:"; cat "$LOG/daemon.err"
	[ "$SRCTYPE" = tmpfs ] && umount "$SRC"
	exit 1
fi
echo "soak: $BIN on $MNT for ${SECS}s (options: ${EXTRA:-none}); logs in $LOG"
end=$(($(date +%s) + SECS))
alive() { [ "$(date +%s)" -lt $end ]; }
fail() { echo "$*" >>"$LOG/fail"; }
pids=()

for s in 1 2 3; do # fsx checkers
	(i=0; while alive; do i=$((i + 1))
		# shellcheck disable=SC2086
		"$FSX" $FSXO -q -N 20000 -S $((s * 1000 + i)) "$MNT/fsx.$s" >"$LOG/fsx.$s" 2>&1 ||
			{ fail "fsx $s seed $((s * 1000 + i)) exit $?"; cp "$LOG/fsx.$s" "$LOG/fsx.$s.fail.$i"; }
	done) &
	pids+=($!)
done
(while alive; do # verified writes, idle class
	ionice -c 3 fio --name=v --directory="$MNT" --rw=randwrite --bs=4k --size=16m --numjobs=2 \
		--verify=crc32c --verify_fatal=1 --do_verify=1 --verify_state_save=0 --ioengine=psync --fsync=7 \
		--output="$LOG/fio.v" >/dev/null 2>&1 || fail "fio verify exit $?"
done) &
pids+=($!)
(while alive; do # reads, realtime class
	ionice -c 1 -n 2 fio --name=r --directory="$MNT" --rw=randread --bs=16k --size=8m \
		--numjobs=3 --runtime=5 --time_based --ioengine=psync --output="$LOG/fio.r" \
		>/dev/null 2>&1 || fail "fio read exit $?"
done) &
pids+=($!)
(i=0; while alive; do i=$((i + 1)) # control churn: some of it must be refused
	case $((i % 9)) in
	0) "$BIN" set "$MNT" scheduler=deadline ;;
	1) "$BIN" set "$MNT" scheduler=noop ;;
	2) "$BIN" set "$MNT" scheduler=cfq slice_idle=$((RANDOM % 20)) quantum=$((RANDOM % 40)) ;;
	3) "$BIN" set "$MNT" trace=$RANDOM; cat "$MNT/.cfqfs/trace" >/dev/null ;;
	4) "$BIN" set "$MNT" low_latency=$((RANDOM % 2)) group_idle=$((RANDOM % 10)) \
		target_latency=$((RANDOM % 1000)) ;;
	5) cat "$MNT"/.cfqfs/{stat.json,queues,metrics,io.stat} >/dev/null ;;
	6) for f in "$MNT"/.cfqfs/iosched/*; do echo $RANDOM >"$f"; echo junk >"$f"; echo -1 >"$f"; done ;;
	7) kill -HUP $DPID ;;
	8) "$BIN" set "$MNT" trace=0 back_seek_max=$RANDOM fifo_expire_sync=$((RANDOM % 500 + 1)) ;;
	esac >/dev/null 2>&1
	sleep 0.2
done) &
pids+=($!)
(i=0; while alive; do i=$((i + 1)) # clients killed mid-I/O
	dd if=/dev/zero of="$MNT/kill.$((i % 4))" bs=1M count=200 conv=fsync 2>/dev/null &
	k1=$!
	dd if="$MNT/kill.$(((i + 1) % 4))" of=/dev/null bs=64k 2>/dev/null &
	k2=$!
	# shellcheck disable=SC2086
	"$FSX" $FSXO -q -N 100000 -S $i "$MNT/killfsx" >/dev/null 2>&1 &
	k3=$!
	sleep 0.$((RANDOM % 9 + 1))
	kill -9 $k1 $k2 $k3 2>/dev/null
	wait $k1 $k2 $k3 2>/dev/null
done) &
pids+=($!)
(i=0; mkdir -p "$MNT/meta"; while alive; do i=$((i + 1)) # metadata churn
	d=$MNT/meta/d$((i % 7))
	mkdir -p "$d"
	for j in 1 2 3 4 5 6 7 8; do echo "$i.$j" >"$d/f$j"; done
	mv "$d/f1" "$d/g1"
	ln "$d/f2" "$d/h2" 2>/dev/null
	ln -sf f3 "$d/s3"
	setfattr -n user.x -v $i "$d/f4" 2>/dev/null
	[ "$(cat "$d/f5")" = "$i.5" ] || fail "meta: $d/f5 holds '$(cat "$d/f5")', not $i.5"
	truncate -s $((RANDOM * 100)) "$d/f6"
	ls -laR "$MNT/meta" >/dev/null
	exec 7<"$d/f7"; rm -f "$d/f7"; cat <&7 >/dev/null; exec 7<&-
	[ $((i % 20)) = 0 ] && rm -rf "$d"
done) &
pids+=($!)
# Another uid: may read, may not write in root's directory. It reads the dd files, not an
# fsx file: in the default cache mode a concurrent reader of the file fsx writes makes the
# kernel's FUSE page cache keep stale pages (README, "POSIX notes"; libfuse's passthrough_ll
# shows the same), which would fail fsx for a reason outside cfqfs.
(while alive; do
	setpriv --reuid=65534 --regid=65534 --clear-groups sh -c \
		"cat '$MNT/kill.1' >/dev/null 2>&1; (: >'$MNT/nobody') 2>/dev/null && echo wrote" |
		grep -q wrote && fail "uid 65534 created a file in root's 0755 directory"
	sleep 0.3
done) &
pids+=($!)
(i=0; while alive; do i=$((i + 1)) # short-lived cgroups
	cg=$CGROOT/cfqfs-soak$((i % 5))
	mkdir -p "$cg" 2>/dev/null
	sh -c "echo \$\$ >$cg/cgroup.procs 2>/dev/null; dd if=$MNT/kill.1 of=/dev/null bs=16k count=300 2>/dev/null; dd if=/dev/zero of=$MNT/cg.$((i % 5)) bs=64k count=20 2>/dev/null"
	rmdir "$cg" 2>/dev/null
	"$BIN" set "$MNT" "weight:/cfqfs-soak$((i % 5))=$((RANDOM % 1100))" >/dev/null 2>&1
	cat "$MNT"/.cfqfs/groups/*/io.stat "$MNT"/.cfqfs/groups/*/procs >/dev/null 2>&1
done) &
pids+=($!)

for p in "${pids[@]}"; do wait "$p"; done
rc=0
if kill -0 $DPID 2>/dev/null; then echo "soak: daemon alive at the end"; else fail "daemon died"; fi
"$BIN" stat "$MNT" -n 1 2>&1 | head -8
fusermount3 -u "$MNT" || { fail "unmount failed"; umount -l "$MNT"; }
wait $DPID
drc=$?
[ $drc = 0 ] || fail "daemon exit status $drc"
[ "$SRCTYPE" = tmpfs ] && umount "$SRC"
for f in "$LOG"/asan* "$LOG"/ubsan* "$LOG"/tsan*; do [ -e "$f" ] && fail "sanitizer report $f"; done
if [ -s "$LOG/fail" ]; then
	echo "soak: FAILURES:"; sort "$LOG/fail" | uniq -c
	cat "$LOG"/asan* "$LOG"/ubsan* "$LOG"/tsan* 2>/dev/null | head -80
	rc=1
else
	echo "soak: no failure, no sanitizer report (daemon exit 0)"
fi
echo "soak: daemon log tail:"; tail -5 "$LOG/daemon.err"
exit $rc
