# shellcheck shell=bash
# bench/lib/exp.sh - the frame shared by the experiment scripts (bench/low-latency,
# bench/interactive, bench/weights, bench/depth, bench/seqread-threads, bench/fsmark; source it
# after lib/fuse.sh). It parses the common options, owns the temp area and the cleanup trap,
# mounts cfqfs per configuration, takes iostat-like deltas from .cfqfs/stat.json, collects
# measurements and prints mmtests-style compare tables, CSV and a gnuplot PNG.
#
#   exp_init NAME USAGE_EXTRA "$@"  parses --quick --cfqfs --device --runs --csv --dir --out
#                           --help; unknown options are left in EXP_ARGS for the script. Sets
#                           QUICK, CFQFS, DEVICES ("hdd none" by default), RUNS, CSV, EXP_OUT.
#                           exp_start sets WORK, SRC, MNT.
#   exp_start               root and tool checks, temp area, EXIT/INT/TERM trap
#   exp_mount DEVICE OPTS   mounts cfqfs over SRC at MNT with -o direct_io (+device=hdd for
#                           DEVICE hdd) plus OPTS (comma list, may be empty); sets EXP_DIR=MNT.
#                           DEVICE "native": no mount, EXP_DIR=SRC.
#   exp_umount              unmounts (no-op for native)
#   exp_snap FILE           copies .cfqfs/stat.json to FILE ({} for native)
#   exp_iostat A B SECS     iostat-like figures between two snapshots, one line:
#                           "avgqz in_flight await_ms max_ms" (avgqz: mean requests queued or
#                           in flight = sum of wait+service time / SECS; in_flight: mean
#                           requests dispatched to SOURCE = service time / SECS; await: mean
#                           wait+service per request; max: largest request latency since mount)
#   exp_put DEV METRIC CONFIG RUN VALUE   records one measurement; VALUE "-" says the metric
#                           does not apply to CONFIG (shown as "-"); an empty VALUE, or a metric
#                           never recorded for a CONFIG, is a missing figure (shown as "n/a")
#   exp_table DEV TITLE     prints the compare table of DEV: one row per metric (first-seen
#                           order), one column per config, medians over the runs; the first
#                           column is the baseline, the others show (% difference)
#   exp_csv                 writes every measurement plus medians to CSV (when --csv)
#   exp_plot DEV METRIC_REGEX YLABEL   PNG bar chart of the medians in EXP_OUT (--out DIR,
#                           default bench/out/) when gnuplot is installed
#   exp_note MSG, exp_die MSG

EXP_NAME=
QUICK=0 RUNS="" CSV="" DEVICES="hdd none" EXP_BASE=/var/tmp EXP_ARGS=() PLACEMENT=spread HDD_OPTS=""
CFQFS=${CFQFS:-}
WORK="" SRC="" MNT="" EXP_DIR="" EXP_PID="" EXP_LOG="" EXP_DATA=""
EXP_OUT=""

exp_note() { echo "$EXP_NAME: $*" >&2; }
exp_die() { echo "$EXP_NAME: $*" >&2; exit 2; }

exp_usage() {
	cat <<EOF
usage: bench/$EXP_NAME [options]
  --quick             reduced sizes and 1 run (the whole script in well under a minute or two)
  --cfqfs PATH        cfqfs binary (default build/fs/cfqfs of this checkout)
  --device LIST       hdd (cfqfs -o device=hdd emulation), none (the real disk under --dir),
                      or "hdd,none" (default: both)
  --placement P       where the emulated hdd puts files: spread (default: each far from the
                      others) or dir (side by side by inode number, like one directory's
                      files on ext4; see cfqfs(8), device=)
  --hdd-opts OPTS     more -o options for the emulated hdd, comma separated, e.g.
                      device.bandwidth_mb=30 for a slower disk (cfqfs(8), device.PARAM=)
  --runs N            runs per point, the table shows medians (default 3; 1 with --quick)
  --dir DIR           where the temp SOURCE is created (default /var/tmp)
  --csv FILE          also write every measurement and the medians as CSV
  --out DIR           where the PNG plots go (default bench/out of this checkout)
  -h, --help
EOF
	[ -z "${1:-}" ] || printf '%s\n' "$1"
}

exp_init() {
	EXP_NAME=$1
	local extra=$2 here
	shift 2
	here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
	: "${CFQFS:=$(dirname "$here")/build/fs/cfqfs}"
	EXP_OUT=$here/out
	while [ $# -gt 0 ]; do
		case $1 in
		--quick) QUICK=1 ;;
		--cfqfs) CFQFS=${2:?}; shift ;;
		--device | --devices) DEVICES=${2:?}; DEVICES=${DEVICES//,/ }; shift ;;
		--runs) RUNS=${2:?}; shift ;;
		--placement) PLACEMENT=${2:?}; shift ;;
		--hdd-opts) HDD_OPTS=${2:?}; shift ;;
		--csv) CSV=${2:?}; shift ;;
		--dir) EXP_BASE=${2:?}; shift ;;
		--out) EXP_OUT=${2:?}; shift ;;
		-h | --help) exp_usage "$extra"; exit 0 ;;
		*) EXP_ARGS+=("$1") ;;
		esac
		shift
	done
	if [ "$QUICK" = 1 ]; then : "${RUNS:=1}"; else : "${RUNS:=3}"; fi
	[[ $RUNS =~ ^[1-9][0-9]*$ ]] || exp_die "--runs wants a positive integer"
	case $PLACEMENT in spread | dir) ;; *) exp_die "--placement wants spread or dir" ;; esac
	[ -z "$HDD_OPTS" ] || [[ $HDD_OPTS =~ ^device\.[a-z_]+=[a-z0-9]+(,device\.[a-z_]+=[a-z0-9]+)*$ ]] ||
		exp_die "--hdd-opts wants device.PARAM=VALUE[,...] (cfqfs(8))"
	local d
	for d in $DEVICES; do
		case $d in hdd | none) ;; *) exp_die "--device is hdd, none or hdd,none" ;; esac
	done
}

exp_cleanup() {
	local rc=$?
	# ignored, not default: a second Ctrl-C must not kill the cleanup half-way (mounts left)
	trap - EXIT
	trap '' INT TERM
	set +e
	# the script's own cleanup first: it stops background load that keeps the mount busy
	declare -F exp_extra_cleanup >/dev/null && exp_extra_cleanup
	if [ -n "$MNT" ] && { fuse_is_mounted "$MNT" || [ -n "$EXP_PID" ]; }; then
		fuse_unmount "$MNT" "$EXP_PID" 20
	fi
	if [ -n "$MNT" ] && fuse_is_mounted "$MNT"; then
		exp_note "WARNING: $MNT is still mounted; leaving $WORK in place"
	elif [ -n "$WORK" ]; then
		rm -rf "$WORK"
	fi
	exit "$rc"
}

# shellcheck disable=SC2120  # the extra tools to check are optional
exp_start() {
	[ "$(id -u)" = 0 ] || exp_die "run as root (FUSE mounts, drop_caches)"
	[ -x "$CFQFS" ] || exp_die "cfqfs binary '$CFQFS' not found (build it, or --cfqfs PATH)"
	CFQFS=$(cd "$(dirname "$CFQFS")" && pwd)/$(basename "$CFQFS")
	local c
	for c in fio jq fusermount3 awk "$@"; do
		command -v "$c" >/dev/null || exp_die "$c not found (sh scripts/install-deps.sh bench)"
	done
	[ -d "$EXP_BASE" ] || exp_die "--dir $EXP_BASE is not a directory"
	WORK=$(mktemp -d "$EXP_BASE/cfqfs-$EXP_NAME.XXXXXX")
	SRC=$WORK/src MNT=$WORK/mnt EXP_DATA=$WORK/data.tsv
	mkdir -p "$SRC" "$MNT" "$WORK/logs"
	: >"$EXP_DATA"
	trap exp_cleanup EXIT
	trap 'exp_note interrupted; exit 130' INT
	trap 'exp_note terminated; exit 143' TERM
	ulimit -n 1048576 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
}

# The header every script prints first: the machine and the binary.
exp_header() {
	local dev
	dev=$(df --output=source "$EXP_BASE" | tail -1)
	echo "# bench/$EXP_NAME $(date -u '+%Y-%m-%d %H:%M UTC'), runs=$RUNS, quick=$QUICK, devices: $DEVICES"
	echo "# machine: $(nproc) CPUs, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo), kernel $(uname -r), --dir $EXP_BASE on $dev"
	echo "# cfqfs: $CFQFS (checkout at $(git -C "$(dirname "$CFQFS")" rev-parse --short HEAD 2>/dev/null || echo '?'))"
	echo "# emulated hdd file placement: $PLACEMENT${HDD_OPTS:+; more hdd options: $HDD_OPTS}"
}

exp_mount() {
	local dev=$1 opts=$2 o
	if [ "$dev" = native ]; then EXP_DIR=$SRC; return 0; fi
	o=direct_io
	[ "$dev" != hdd ] || o=$o,device=hdd,device.placement=$PLACEMENT${HDD_OPTS:+,$HDD_OPTS}
	[ -z "$opts" ] || o=$o,$opts
	EXP_LOG=$WORK/logs/daemon.log
	echo "== cfqfs -f -o $o SRC MNT" >>"$EXP_LOG"
	# a session of its own: a Ctrl-C or kill of our process group must reach the load and the
	# script, whose trap then unmounts, not the daemon (a daemon stopped by the signal while
	# the load's requests are pending can leave both hanging)
	setsid "$CFQFS" -f -o "$o" "$SRC" "$MNT" >>"$EXP_LOG" 2>&1 &
	EXP_PID=$!
	if ! fuse_wait_mounted "$MNT" "$EXP_PID" 15; then
		exp_note "cfqfs -o $o did not mount:"; tail -20 "$EXP_LOG" >&2
		fuse_unmount "$MNT" "$EXP_PID" 5
		EXP_PID=""
		exit 1
	fi
	EXP_DIR=$MNT
}

exp_umount() {
	[ "$EXP_DIR" = "$MNT" ] || { EXP_DIR=""; return 0; }
	if ! kill -0 "$EXP_PID" 2>/dev/null; then
		exp_note "WARNING: the cfqfs daemon died during the run; log:"; tail -20 "$EXP_LOG" >&2
	fi
	fuse_unmount "$MNT" "$EXP_PID" 60
	EXP_PID="" EXP_DIR=""
}

exp_snap() {
	if [ "$EXP_DIR" = "$MNT" ] && [ -r "$MNT/.cfqfs/stat.json" ]; then
		cat "$MNT/.cfqfs/stat.json" >"$1"
	else
		echo '{}' >"$1"
	fi
}

exp_iostat() {
	jq -n -r --slurpfile a "$1" --slurpfile b "$2" --argjson s "$3" '
		def tot(x): [x.groups[]? | {w: .wait_usec, v: .service_usec,
			n: (.dispatched // (.rios + .wios))}]
			| {w: (map(.w) | add // 0), v: (map(.v) | add // 0), n: (map(.n) | add // 0)};
		(tot($a[0])) as $x | (tot($b[0])) as $y
		| ($y.w - $x.w) as $w | ($y.v - $x.v) as $v | ($y.n - $x.n) as $n
		| [ (if $s > 0 then ($w + $v) / 1e6 / $s else 0 end),
		    (if $s > 0 then $v / 1e6 / $s else 0 end),
		    (if $n > 0 then ($w + $v) / $n / 1000 else 0 end),
		    ([$b[0].groups[]?.max_usec] | max // 0) / 1000 ]
		| map(. * 100 | round / 100) | @tsv'
}

exp_put() {
	printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "${5:-NA}" >>"$EXP_DATA"
}

# medians: DEV METRIC CONFIG MEDIAN, in first-seen order of metrics and configs
exp_medians() {
	awk -F'\t' -v d="$1" '$1 == d {
		if (!($2 in ms)) { ms[$2] = 1; mo[nm++] = $2 }
		if (!($3 in cs)) { cs[$3] = 1; co[nc++] = $3 }
		k = $2 SUBSEP $3
		if ($5 ~ /^-?[0-9.]+([eE][-+]?[0-9]+)?$/) v[k, ++n[k]] = $5 + 0
		else if ($5 == "-") dash[k] = 1
	}
	END {
		for (i = 0; i < nm; i++) for (j = 0; j < nc; j++) {
			k = mo[i] SUBSEP co[j]; c = n[k]
			if (!c) { printf "%s\t%s\t%s\t%s\n", d, mo[i], co[j], (k in dash) ? "-" : "NA"; continue }
			for (a = 1; a <= c; a++) x[a] = v[k, a]
			for (a = 2; a <= c; a++) for (b = a; b > 1 && x[b - 1] > x[b]; b--) {
				t = x[b]; x[b] = x[b - 1]; x[b - 1] = t }
			m = (c % 2) ? x[(c + 1) / 2] : (x[c / 2] + x[c / 2 + 1]) / 2
			printf "%s\t%s\t%s\t%.6g\n", d, mo[i], co[j], m
		}
	}' "$EXP_DATA"
}

exp_table() {
	local dev=$1 title=$2
	echo
	echo "## $title"
	exp_medians "$dev" | awk -F'\t' -v runs="$RUNS" '
		{ if (!($2 in ms)) { ms[$2] = 1; mo[nm++] = $2 }
		  if (!($3 in cs)) { cs[$3] = 1; co[nc++] = $3 }
		  v[$2, $3] = $4 }
		END {
			w = 8; for (i = 0; i < nm; i++) if (length(mo[i]) > w) w = length(mo[i])
			printf "%-*s", w + 8, "median of " runs
			for (j = 0; j < nc; j++) printf " %21s", co[j]
			printf "\n"
			for (i = 0; i < nm; i++) {
				printf "Median  %-*s", w, mo[i]
				b = v[mo[i], co[0]]
				for (j = 0; j < nc; j++) {
					x = v[mo[i], co[j]]
					if (x == "NA") { printf " %21s", "n/a"; continue }
					if (x == "-") { printf " %21s", "-"; continue }
					if (b == "NA" || b == "-" || sprintf("%.2f", b) + 0 == 0) pct = "    n/a"
					else pct = sprintf("%7.2f%%", 100 * (x - b) / b)
					printf " %11.2f (%s)", x, pct
				}
				printf "\n"
			}
		}'
}

exp_csv() {
	[ -n "$CSV" ] || return 0
	{
		echo "device,metric,config,run,value"
		tr '\t' , <"$EXP_DATA"
		local d
		for d in $DEVICES native; do
			exp_medians "$d" | awk -F'\t' '{ printf "%s,%s,%s,median,%s\n", $1, $2, $3, $4 }'
		done
	} | awk '!seen[$0]++' >"$CSV"
}

# exp_plot DEV METRIC_REGEX YLABEL: clustered bars, one cluster per metric, one bar per config
exp_plot() {
	command -v gnuplot >/dev/null || { exp_note "gnuplot not installed: no plot"; return 0; }
	local dev=$1 re=$2 ylabel=$3 dat png
	mkdir -p "$EXP_OUT"
	dat=$WORK/plot-$dev.dat png=$EXP_OUT/$EXP_NAME-$dev-$(echo "$ylabel" | tr -c 'A-Za-z0-9\n' _ | tr -d '\n').png
	exp_medians "$dev" | awk -F'\t' -v re="$re" '$2 ~ re {
		if (!($2 in ms)) { ms[$2] = 1; mo[nm++] = $2 }
		if (!($3 in cs)) { cs[$3] = 1; co[nc++] = $3 }
		v[$2, $3] = ($4 == "NA" || $4 == "-") ? "?" : $4 }
		END {
			printf "metric"; for (j = 0; j < nc; j++) printf "\t\"%s\"", co[j]; printf "\n"
			for (i = 0; i < nm; i++) {
				printf "\"%s\"", mo[i]
				for (j = 0; j < nc; j++) printf "\t%s", v[mo[i], co[j]]
				printf "\n"
			}
		}' >"$dat"
	local ncol
	ncol=$(head -1 "$dat" | awk -F'\t' '{ print NF }')
	[ "$ncol" -gt 1 ] || return 0
	# timeout: gnuplot can deadlock in its SIGINT handler, and timeout runs it outside this
	# process group, so a Ctrl-C reaches the script (whose trap cleans up), not gnuplot
	timeout 60 gnuplot <<EOF 2>>"$WORK/logs/gnuplot.log" || { exp_note "gnuplot failed (see no plot)"; return 0; }
set terminal png size 900,500
set output '$png'
set title 'bench/$EXP_NAME, device $dev (median of $RUNS)'
set style data histogram
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set key outside right top
set ylabel '$ylabel'
set yrange [0:*]
set xtics rotate by -20
set datafile missing '?'
plot for [i=2:$ncol] '$dat' using i:xtic(1) title columnheader(i)
EOF
	echo "# plot: $png"
}
