# shellcheck shell=bash
# Helpers of the verbs tests (tests/verbs/t-*.sh), on top of tests/data/lib.sh
# (two instances with efid, in_a/in_b):
#
#     . "$(dirname "$0")/lib.sh"
#     verbs_init TAG [COMMAND...]   # dp_init + efi-run; skips (77) when a
#                                   # COMMAND (ibverbs-utils, perftest) is absent
#     dp_one_host / dp_two_hosts
#     va CMD... / vb CMD...         # CMD under efi-run inside instance A / B
# shellcheck source=tests/data/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../data/lib.sh"

: "${EFI_RUN:=$top_builddir/verbs/efi-run}"
: "${EFI_VERBS_LIB:=$top_builddir/verbs/.libs/libefi-verbs.so}"
export EFI_VERBS_LIB
# the uninstalled libefi-verbs.so finds the uninstalled libefi.so here
export LD_LIBRARY_PATH="$top_builddir/libefi/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# perftest and ibverbs-utils are not ours: their leaks at exit are not
# findings of a sanitizer build of libefi-verbs (it still checks our
# memory errors inside them)
VERBS_FOREIGN_ENV=(ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0")

# verbs_need COMMAND PACKAGE: skip unless COMMAND is installed.
verbs_need() {
	command -v "$1" >/dev/null 2>&1 ||
		skip "$1 is not installed (apt-get install $2)"
}

verbs_init() {
	local tag=$1
	shift
	dp_init "$tag"
	[ -x "$EFI_RUN" ] || fail "efi-run not built at $EFI_RUN"
	[ -r "$EFI_VERBS_LIB" ] || fail "libefi-verbs.so not built at $EFI_VERBS_LIB"
}

va() { in_a env "${VERBS_FOREIGN_ENV[@]}" "$EFI_RUN" "$@"; }
vb() { in_b env "${VERBS_FOREIGN_ENV[@]}" "$EFI_RUN" "$@"; }

# verbs_wait_listen NS PORT: waits (10 s at most) until a TCP server listens
# on PORT in namespace NS (perftest and ibv_rc_pingpong servers do once
# their resources exist; their clients do not retry).
verbs_wait_listen() {
	wait_for 10000 "a server on TCP port $2 in $1" \
		bash -c "ip netns exec '$1' ss -Hltn 'sport = :$2' | grep -q ."
}

# vmatch REGEX TEXT WHAT: assert_match without the pipe (printf | grep -q
# under pipefail fails at random when grep exits before printf is done
# writing a long text: SIGPIPE).
vmatch() {
	grep -qiE -- "$1" <<<"$2" ||
		fail "$(printf '%s\n  expected to match: %s\n  got: %s' "${3:-text}" "$1" "$2")"
}

# verbs_dev_node: /dev/infiniband/efi, the node UCX looks for before it uses
# an EFI device (docs/verbs.md, "Device node"), made as an installed system
# makes it: systemd-tmpfiles applies libefi-verbs' tmpfiles.d file, as the
# package's postinst and every boot do.  It is a node of the host's /dev,
# which every instance sees.  A node that was there before stays; one that
# tests made goes when the last test using it ends (each holds a shared lock
# on VERBS_NODE_LOCK while it runs; the last one out gets it exclusively).
VERBS_NODE=/dev/infiniband/efi
VERBS_NODE_LOCK=/run/efi-test-verbs-node.lock
VERBS_NODE_MADE=/run/efi-test-verbs-node.made
verbs_dev_node() {
	local conf
	conf=${top_srcdir:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}/systemd/efi-verbs.conf
	command -v systemd-tmpfiles >/dev/null 2>&1 ||
		skip "systemd-tmpfiles is not installed (apt-get install systemd)"
	[ -r "$conf" ] || fail "$conf not found"
	exec {VERBS_NODE_FD}>>"$VERBS_NODE_LOCK"
	flock -s "$VERBS_NODE_FD"
	# the marker says what tests made: the node, and the directory if so
	if [ ! -e "$VERBS_NODE" ] && [ ! -e "$VERBS_NODE_MADE" ]; then
		if [ -d "${VERBS_NODE%/*}" ]; then echo node; else echo dir; fi >"$VERBS_NODE_MADE"
	fi
	trap 'VERBS_RC=$?; _verbs_node_release; (exit $VERBS_RC); lib_cleanup' EXIT
	systemd-tmpfiles --create "$conf" ||
		fail "systemd-tmpfiles --create $conf failed"
	[ -c "$VERBS_NODE" ] || fail "$VERBS_NODE is not a character device after systemd-tmpfiles"
	[ "$(stat -c '%t:%T %a' "$VERBS_NODE")" = "1:3 666" ] ||
		fail "$VERBS_NODE is not /dev/null's 1:3 with mode 666: $(ls -l "$VERBS_NODE")"
}

_verbs_node_release() {
	local made
	[ -n "${VERBS_NODE_FD:-}" ] || return 0
	flock -u "$VERBS_NODE_FD"
	if flock -xn "$VERBS_NODE_FD" && [ -e "$VERBS_NODE_MADE" ]; then
		made=$(cat "$VERBS_NODE_MADE")
		rm -f "$VERBS_NODE" "$VERBS_NODE_MADE"
		[ "$made" = dir ] && rmdir "${VERBS_NODE%/*}" 2>/dev/null
	fi
	exec {VERBS_NODE_FD}>&-
	VERBS_NODE_FD=
}
