#!/bin/sh
# Installs what cfqfs needs to build, test and benchmark, on Debian (12 or later), as root.
# Idempotent: it asks dpkg first and only calls apt-get for what is missing, so a machine
# that already has everything never touches the network.
#
# Usage: scripts/install-deps.sh [build|test|bench|fuzz|all]   (default: test)
set -eu

what=${1:-test}
build_pkgs="cmake make gcc pkg-config libfuse3-dev fuse3 libconfig-dev"
# it_bench (tests/integration/test_bench.c) runs bench/all --quick, so the test set holds the
# experiment scripts' tools too, and it_stressng runs stress-ng's filesystem stressors; bench
# adds what only the hand-run benchmarks use: valgrind (bench/instr) and PostgreSQL 15
# (bench/pgbench; Debian 12's postgresql pulls in postgresql-15, which holds initdb, pg_ctl,
# postgres and pgbench in /usr/lib/postgresql/15/bin; postgresql-contrib is not needed).
test_pkgs="libcriterion-dev util-linux procps attr acl fio fsmark gnuplot-nox jq perl stress-ng"
bench_pkgs="valgrind postgresql"
fuzz_pkgs="clang libclang-rt-14-dev"

case "$what" in
	build) pkgs="$build_pkgs" ;;
	test) pkgs="$build_pkgs $test_pkgs" ;;
	bench) pkgs="$build_pkgs $test_pkgs $bench_pkgs" ;;
	fuzz) pkgs="$build_pkgs $test_pkgs $fuzz_pkgs" ;;
	all) pkgs="$build_pkgs $test_pkgs $bench_pkgs $fuzz_pkgs" ;;
	*) echo "install-deps: unknown set '$what' (build|test|bench|fuzz|all)" >&2; exit 2 ;;
esac

missing=""
for p in $pkgs; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
		missing="$missing $p"
	fi
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" != 0 ]; then
	echo "install-deps: missing packages:$missing; run as root or install them yourself" >&2
	exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
	echo "install-deps: missing packages:$missing and no apt-get here; install them yourself" >&2
	exit 1
fi
echo "install-deps: installing:$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
