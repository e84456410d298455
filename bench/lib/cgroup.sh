# shellcheck shell=bash
# bench/lib/cgroup.sh - temporary cgroups for scripts/demo.sh and bench/fairness (bash; source
# it; needs root).
#
#   cg_find                 sets CG_ROOT (mount point) and CG_LINE (the value for
#                           -o cgroup_line=): the unified hierarchy if it holds the io controller,
#                           else the v1 blkio hierarchy, else cgroup2 without io. Fails when
#                           there is none.
#   cg_make NAME            creates $CG_ROOT/$CG_PREFIX-NAME (CG_PREFIX defaults to
#                           cfqfs-<script>-<pid>) and records it for cg_cleanup. Do not call it
#                           in a subshell ($(...)): the record would be lost.
#   cg_name NAME            prints the group name cfqfs will see ("/$CG_PREFIX-NAME").
#   cg_rule NAME WEIGHT     prints a libconfig rule giving that cgroup WEIGHT. The scripts set
#                           weights through rules, not the cgroups' weight files, so the figures
#                           do not depend on whether the host kernel has CFQ/BFQ weight files.
#   cg_exec NAME CMD...     runs CMD inside the cgroup (the subshell joins it, then execs).
#   cg_cleanup              moves what is left in the created cgroups to the root and removes
#                           them; safe to call more than once (use it in an EXIT trap).
#
# Mirrors tests/support/cgtest.c: cfqfs is started with -o cgroup_line=$CG_LINE so it reads
# exactly the /proc/PID/cgroup line of the hierarchy the jobs were moved in.

CG_ROOT=
CG_LINE=
CG_PREFIX=${CG_PREFIX:-cfqfs-$(basename "$0")-$$}
CG_MADE=()

cg_find() {
	local v2 blkio
	v2=$(awk '$0 ~ / - cgroup2 / { print $5; exit }' /proc/self/mountinfo)
	blkio=$(awk '{ for (i = 7; i <= NF; i++) if ($i == "-") break }
		$(i + 1) == "cgroup" && $(i + 3) ~ /(^|,)blkio(,|$)/ { print $5; exit }' \
		/proc/self/mountinfo)
	if [ -n "$v2" ] && grep -qw io "$v2/cgroup.controllers" 2>/dev/null; then
		CG_ROOT=$v2 CG_LINE=v2
	elif [ -n "$blkio" ]; then
		CG_ROOT=$blkio CG_LINE=blkio
	elif [ -n "$v2" ]; then
		CG_ROOT=$v2 CG_LINE=v2
	else
		echo "cgroup.sh: no cgroup2 mount and no v1 blkio hierarchy" >&2
		return 1
	fi
}

cg_make() {
	local dir="$CG_ROOT/$CG_PREFIX-$1"
	mkdir "$dir" || return 1
	CG_MADE+=("$dir")
}

cg_name() {
	echo "/$CG_PREFIX-$1"
}

cg_rule() {
	printf '{ cgroup = "/%s-%s"; weight = %d; }' "$CG_PREFIX" "$1" "$2"
}

cg_exec() {
	local name=$1
	shift
	(
		echo "$BASHPID" >"$CG_ROOT/$CG_PREFIX-$name/cgroup.procs" || exit 1
		exec "$@"
	)
}

cg_cleanup() {
	local dir pid i
	for dir in "${CG_MADE[@]}"; do
		[ -d "$dir" ] || continue
		for ((i = 0; i < 100; i++)); do
			while read -r pid; do
				echo "$pid" >"$CG_ROOT/cgroup.procs" 2>/dev/null || true
			done <"$dir/cgroup.procs"
			rmdir "$dir" 2>/dev/null && break
			sleep 0.05
		done
		[ -d "$dir" ] && echo "cgroup.sh: could not remove $dir" >&2
	done
	CG_MADE=()
	return 0
}
