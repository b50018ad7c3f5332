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
