# shellcheck shell=bash
# bench/lib/fuse.sh - shell helpers shared by the bench/ scripts (bash; source it).
#
#   fuse_is_mounted MNT                 true when MNT is a mount point listed in /proc/mounts
#   fuse_wait_mounted MNT PID [SECS]    wait until MNT shows up in /proc/mounts; fails early if
#                                       the daemon PID exits, or after SECS (default 10)
#   fuse_unmount MNT [PID] [SECS]       fusermount3 -u MNT (retried while busy, lazy as a last
#                                       resort), then wait up to SECS (default 30) for PID to
#                                       exit, SIGTERM then SIGKILL if it does not
#   drop_caches                         sync and drop the page cache; fails when not permitted
#   median                              median of the numbers on stdin (one per line; lines
#                                       that are not numbers are ignored); prints "NA" if none
#   rotate RUN ITEM...                  the items one per line, rotated left by RUN - 1: run 1
#                                       keeps the given order (a table's columns), each later
#                                       run starts one item further, so that no configuration
#                                       always runs first or last of a run and a drift of the
#                                       disk within a run spreads over all of them
#   pll_build_cmd OUT                   sets PLL_BUILD to the gcc command (pkg-config's flags
#                                       go after it) that builds libfuse's passthrough_ll
#                                       example, PLL_SRC, into OUT; -DHAVE_SETXATTR so that its
#                                       xattr handling matches cfqfs's
#   pll_compile OUT LOG                 runs that command, compiler messages into LOG
#
# Mount points are compared with the second field of /proc/mounts, so paths with spaces or
# other characters the kernel escapes there are not supported.

fuse_is_mounted() {
	awk -v m="$1" '$2 == m { found = 1 } END { exit !found }' /proc/mounts
}

fuse_wait_mounted() {
	local mnt=$1 pid=$2 secs=${3:-10} i
	for ((i = 0; i < secs * 10; i++)); do
		fuse_is_mounted "$mnt" && return 0
		kill -0 "$pid" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

fuse_unmount() {
	local mnt=$1 pid=${2:-} secs=${3:-30} i
	if fuse_is_mounted "$mnt"; then
		for ((i = 0; i < 20; i++)); do
			fusermount3 -u "$mnt" 2>/dev/null && break
			fuse_is_mounted "$mnt" || break
			sleep 0.5
		done
		if fuse_is_mounted "$mnt"; then
			echo "fuse_unmount: $mnt still busy, detaching it lazily" >&2
			fusermount3 -uz "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null || true
		fi
	fi
	[ -n "$pid" ] || return 0
	for ((i = 0; i < secs * 10; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		echo "fuse_unmount: daemon $pid did not exit within ${secs}s; sending SIGTERM" >&2
		kill -TERM "$pid" 2>/dev/null || true
		sleep 2
		kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
	fi
	wait "$pid" 2>/dev/null || true
	return 0
}

drop_caches() {
	sync
	{ echo 3 >/proc/sys/vm/drop_caches; } 2>/dev/null
}

median() {
	{ grep -E '^-?[0-9]+([.][0-9]+)?([eE][-+]?[0-9]+)?$' || true; } | sort -g | awk '
		{ v[n++] = $1 }
		END {
			if (n == 0) { print "NA"; exit }
			if (n % 2) printf "%.10g\n", v[(n - 1) / 2]
			else printf "%.10g\n", (v[n / 2 - 1] + v[n / 2]) / 2
		}'
}

rotate() {
	local run=$1 n k i
	shift
	n=$#
	for ((k = 0; k < n; k++)); do
		i=$(((k + run - 1) % n + 1))
		printf '%s\n' "${!i}"
	done
}

# libfuse's low-level passthrough example (Debian package libfuse3-dev): the FUSE peer that
# bench/overhead, bench/fsmark and bench/instr measure cfqfs against, all built the same way.
PLL_SRC=/usr/share/doc/libfuse3-dev/examples/passthrough_ll.c

pll_build_cmd() {
	PLL_BUILD=(gcc -O2 -Wall -DHAVE_SETXATTR -o "$1" "$PLL_SRC")
}

pll_compile() {
	pll_build_cmd "$1"
	# shellcheck disable=SC2046  # pkg-config prints several words on purpose
	"${PLL_BUILD[@]}" $(pkg-config --cflags --libs fuse3) >"$2" 2>&1
}
