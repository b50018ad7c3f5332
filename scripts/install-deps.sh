#!/bin/bash
# Installs what building EFI needs on Debian 12 (bookworm); with --test, also
# what its test suite needs.  Safe to run again: packages already present are
# left alone and apt is only asked when something is missing.
#
#   scripts/install-deps.sh          build dependencies
#   scripts/install-deps.sh --test   build + test dependencies
#
# Runs apt-get as root, or through sudo when run as another user.
set -euo pipefail

usage() {
	sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'
}

want_test=no
for arg in "$@"; do
	case "$arg" in
	--test) want_test=yes ;;
	-h | --help) usage; exit 0 ;;
	*) echo "install-deps.sh: unknown argument '$arg'" >&2; usage >&2; exit 2 ;;
	esac
done

# Compiler, autotools, and the libraries configure looks for with pkg-config.
build_pkgs=(
	build-essential autoconf automake libtool pkg-config
	libnl-3-dev libnl-route-3-dev libsqlite3-dev libsystemd-dev check
	# libefi-verbs builds against the system's <infiniband/verbs.h>, the
	# libfabric provider against libfabric's headers.
	libibverbs-dev libfabric-dev
	# Running efid and the demo: ip (netns, bridges), ping (connectivity).
	iproute2 iputils-ping
)
# What the tests and scripts/test.sh call:
#  jq                 efictl --json output checks
#  sqlite3            store tests inspect and build fixture databases
#  systemd            systemd-analyze verify/security, systemd-socket-activate
#  clang, libclang-rt-14-dev   libFuzzer targets (the runtime is only a
#                     Recommends of clang, and apt here skips those)
#  util-linux         setpriv, unshare, flock
#  procps psmisc      ps/pgrep/pkill/kill for process checks, fuser
#  coreutils          timeout, mktemp
#  kmod               modprobe of veth/macvlan/bridge where they are modules
#  (the linter)      shellcheck: lints scripts/ and tests/system/ in the suite
#  strace             the data-path test that counts the posting thread's syscalls
#  ibverbs-utils perftest qperf ucx-utils   unmodified verbs programs run over libefi-verbs
#  fio python3-pyverbs   fio's rdma engine, and rdma-core's own test suite
#                     (pyverbs), run over libefi-verbs/libefi-rdmacm
#  librdmacm-dev rdmacm-utils   libefi-rdmacm's header and symbol reference, rping
#  clang libbpf-dev   the testbed's tc loss program (BPF, bpf_helpers.h)
#  bpftool            the testbed loads the dropper and sets its loss rate
#                     (a package of its own on Debian 12, not in libbpf-dev)
#  binutils           objdump: the verbs symbol-version test
#  passwd             useradd: the non-root tests make a throwaway user
#  iperf3 sockperf    kernel TCP baselines in the testbed benchmarks
#  libfabric-bin openmpi-bin libopenmpi-dev   fi_info/fi_pingpong and Open MPI
#                     runs over the efi libfabric provider
#  python3-numpy python3-mpi4py   the data-parallel training job of
#                     tests/mpi/t-mpi-train.sh
#  mandoc groff-base man-db   the manual pages' lint, render and install test
#  dpkg-dev debhelper lintian   tests/packaging/t-deb.sh builds the .debs
#                     (dpkg-buildpackage) and lints them
#  prometheus python3-prometheus-client   tests/packaging/t-stats.sh parses
#                     `efictl stats --prometheus` with promtool and with
#                     prometheus_client's parser
test_pkgs=(
	jq sqlite3 systemd clang libclang-rt-14-dev
	util-linux procps psmisc coreutils kmod shellcheck
	strace ibverbs-utils perftest qperf ucx-utils fio python3-pyverbs librdmacm-dev rdmacm-utils libbpf-dev bpftool binutils passwd iperf3 sockperf
	libfabric-bin openmpi-bin libopenmpi-dev python3-numpy python3-mpi4py
	mandoc groff-base man-db
	dpkg-dev debhelper lintian prometheus python3-prometheus-client
)

pkgs=("${build_pkgs[@]}")
[ "$want_test" = yes ] && pkgs+=("${test_pkgs[@]}")

if [ ! -r /etc/debian_version ] || ! command -v apt-get >/dev/null 2>&1; then
	echo "install-deps.sh: this script knows Debian (12) and apt-get only." >&2
	echo "Install the equivalents of: ${pkgs[*]}" >&2
	exit 1
fi

SUDO=()
if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null 2>&1; then
		SUDO=(sudo)
	else
		echo "install-deps.sh: run as root (or install sudo): apt-get needs it." >&2
		exit 1
	fi
fi

# dpkg-query prints "install ok installed" for packages that are fully there.
missing=()
for p in "${pkgs[@]}"; do
	status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	[ "$status" = "install ok installed" ] || missing+=("$p")
done

if [ "${#missing[@]}" -eq 0 ]; then
	echo "install-deps.sh: all ${#pkgs[@]} packages already installed."
	exit 0
fi

echo "install-deps.sh: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" apt-get update -qq
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	--no-install-recommends -o Dpkg::Use-Pty=0 "${missing[@]}" > /dev/null
echo "install-deps.sh: done."
