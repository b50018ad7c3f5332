# shellcheck shell=bash
# Helpers of the libfabric tests (tests/fabric/t-*.sh), on top of
# tests/data/lib.sh (two instances with efid, in_a/in_b):
#
#     . "$(dirname "$0")/lib.sh"
#     fab_init TAG [COMMAND PACKAGE]...   # lib_init + the provider; skips (77)
#                                         # when a COMMAND is not installed
#     fab_setup [COMMAND PACKAGE]...      # the same after tb_test_init
#     dp_one_host / dp_two_hosts
#     fa CMD... / fb CMD...               # CMD inside instance A / B with
#                                         # FI_PROVIDER_PATH at the build tree
# shellcheck source=tests/data/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../data/lib.sh"

: "${EFI_FI_DIR:=$top_builddir/fabric/.libs}"
# libfabric loads every lib*-fi.so of this directory
export FI_PROVIDER_PATH="$EFI_FI_DIR"
# the uninstalled provider finds the uninstalled libefi.so here
export LD_LIBRARY_PATH="$top_builddir/libefi/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# fi_info, fi_pingpong and Open MPI are not ours: their leaks at exit are not
# findings of a sanitizer build of the provider
FAB_ENV=(ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0")

fab_init() {
	lib_init "$1"
	shift
	fab_setup "$@"
}

# fab_setup [COMMAND PACKAGE]...: fab_init after another lib_init (the
# testbed's tb_test_init).
fab_setup() {
	while [ $# -ge 2 ]; do
		command -v "$1" >/dev/null 2>&1 || skip "$1 is not installed (apt-get install $2)"
		shift 2
	done
	[ -r "$EFI_FI_DIR/libefi-fi.so" ] || fail "libefi-fi.so not built in $EFI_FI_DIR"
	# a sanitizer build of the provider needs the ASan runtime loaded first
	# into programs that are not built with it
	local asan
	asan=$(ldd "$EFI_FI_DIR/libefi-fi.so" 2>/dev/null | awk '$1 ~ /^libasan/ {print $3; exit}')
	[ -n "$asan" ] && FAB_ENV+=(LD_PRELOAD="$asan")
	[ -x "$EFID" ] || fail "efid not built at $EFID"
}

fa() { in_a env "${FAB_ENV[@]}" "$@"; }
fb() { in_b env "${FAB_ENV[@]}" "$@"; }

# fmatch REGEX TEXT WHAT: TEXT must match REGEX (no pipe: see tests/verbs).
fmatch() {
	grep -qiE -- "$1" <<<"$2" ||
		fail "$(printf '%s\n  expected to match: %s\n  got: %s' "${3:-text}" "$1" "$2")"
}

# Our own test programs (tests/fabric/fab-*.c) are findings of a sanitizer
# build, leaks included.
FAB_OWN_ENV=(ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=1")

# fab_pair PROG PORT SERVER_ARGS -- CLIENT_ARGS: "PROG server PORT
# SERVER_ARGS..." in A, then, once it printed "listening", "PROG client IP_A
# PORT CLIENT_ARGS..." in B.  Both must exit 0 and say "server: ok" and
# "client: ok"; their output is logged indented and left in $TMPD/srv and
# $TMPD/cli.  FAB_PAIR_SECS bounds each (default 120).
fab_pair() {
	local prog=$1 port=$2 spid crc=0 src=0 sargs=() cargs=()
	shift 2
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		sargs+=("$1")
		shift
	done
	[ $# -gt 0 ] && shift
	cargs=("$@")
	[ -x "$prog" ] || fail "$(basename "$prog") not built at $prog"
	local secs=${FAB_PAIR_SECS:-120}
	in_a env "${FAB_ENV[@]}" "${FAB_OWN_ENV[@]}" timeout -k 5 "$secs" \
		"$prog" server "$port" ${sargs[@]+"${sargs[@]}"} >"$TMPD/srv" 2>&1 &
	spid=$!
	TRACK_BGPIDS+=("$spid")
	# until it listens, or dies (then say why)
	local i
	for ((i = 0; i < 200; i++)); do
		grep -q listening "$TMPD/srv" && break
		kill -0 "$spid" 2>/dev/null || break
		sleep 0.1
	done
	if ! grep -q listening "$TMPD/srv"; then
		sed 's/^/    server: /' "$TMPD/srv"
		fail "$(basename "$prog") did not listen in $A"
	fi
	in_b env "${FAB_ENV[@]}" "${FAB_OWN_ENV[@]}" timeout -k 5 "$secs" \
		"$prog" client "$IP_A" "$port" ${cargs[@]+"${cargs[@]}"} >"$TMPD/cli" 2>&1 || crc=$?
	wait "$spid" || src=$?
	sed 's/^/    server: /' "$TMPD/srv"
	sed 's/^/    client: /' "$TMPD/cli"
	if [ "$crc" != 0 ] || [ "$src" != 0 ]; then
		fail "$(basename "$prog"): client exit $crc, server exit $src"
	fi
	fmatch '^client: ok$' "$(cat "$TMPD/cli")" "the client's verdict"
	fmatch '^server: ok$' "$(cat "$TMPD/srv")" "the server's verdict"
}
