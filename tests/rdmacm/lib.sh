# shellcheck shell=bash
# Helpers of the rdma_cm tests (tests/rdmacm/t-*.sh), on top of
# tests/verbs/lib.sh (two instances with efid, efi-run, va/vb):
#
#     . "$(dirname "$0")/lib.sh"
#     rcm_init TAG          # verbs_init + libefi-rdmacm as efi-run's librdmacm.so.1
#     dp_one_host / dp_two_hosts
#     va CMD... / vb CMD... # CMD under efi-run inside instance A / B
#   or, for a test that runs in several topologies:
#     rcm_init TAG [testbed]    # testbed: the caller sourced tests/testbed/testbed.sh
#     rcm_topology one|two|hosts
#     rcm_watch_start / rcm_watch_stop / rcm_watch_show  # efid's counters
# shellcheck source=tests/verbs/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../verbs/lib.sh"

: "${EFI_RDMACM_LIB:=$top_builddir/rdmacm/.libs/libefi-rdmacm.so}"
: "${EFI_RDMACM_DIR:=$top_builddir/rdmacm/.libs/efi/rdmacm}"
export EFI_RDMACM_DIR
# the uninstalled libefi-rdmacm.so finds the uninstalled libefi-verbs.so here
export LD_LIBRARY_PATH="$top_builddir/verbs/.libs:$LD_LIBRARY_PATH"
RCM_WATCH_PID=""

rcm_init() {
	if [ "${2:-}" = testbed ]; then
		# the testbed's own init (lib_init, its checks and cleanup);
		# the data-path binaries of verbs_init are not needed here
		tb_test_init "$1"
		[ -x "$EFI_RUN" ] || fail "efi-run not built at $EFI_RUN"
		[ -r "$EFI_VERBS_LIB" ] || fail "libefi-verbs.so not built at $EFI_VERBS_LIB"
	else
		verbs_init "$1"
	fi
	[ -r "$EFI_RDMACM_LIB" ] || fail "libefi-rdmacm.so not built at $EFI_RDMACM_LIB"
	[ "$EFI_RDMACM_DIR/librdmacm.so.1" -ef "$EFI_RDMACM_LIB" ] ||
		fail "$EFI_RDMACM_DIR/librdmacm.so.1 is not a link to $EFI_RDMACM_LIB"
}

# rcm_topology one|two|hosts: instances A and B (IP_A, IP_B, SOCK_A,
# SOCK_B, as tests/data/lib.sh sets them) on
#   one:   one efid, both instances on its bridge;
#   two:   two efid, one instance each, one bridge (dp_two_hosts);
#   hosts: two hosts of the testbed (tests/testbed/testbed.sh), routed
#          through its fabric over two paths (rcm_init TAG testbed first);
#   two6:  as two, each interface with an IPv6 address beside its IPv4 one
#          (IP6_A, IP6_B).
# RCM_CTL_A / RCM_CTL_B name efictl's ids (ctl_on) of A's and B's efids,
# or their testbed hosts (tb_ctl): rcm_ctl a|b ARGS... runs efictl there.
rcm_topology() {
	RCM_TOPOLOGY=$1
	case $1 in
	one)
		dp_one_host
		RCM_CTL_A=main RCM_CTL_B=main
		;;
	two)
		dp_two_hosts
		RCM_CTL_A=one RCM_CTL_B=two
		;;
	two6)
		_dp_instances
		IP6_A=fd77::1
		IP6_B=fd77::2
		efid_start one
		assert_exit 0 ctl_on one attach "$A" --name efi0 --address "$IP_A/24" \
			--address "$IP6_A/64" --uplink "$BR"
		efid_start two
		assert_exit 0 ctl_on two attach "$B" --name efi0 --address "$IP_B/24" \
			--address "$IP6_B/64" --uplink "$BR"
		SOCK_A=${EFID_SOCK[one]}
		SOCK_B=${EFID_SOCK[two]}
		_dp_ready
		wait_for 5000 "ping $A -> $IP6_B" ip netns exec "$A" ping -6 -c 1 -W 1 "$IP6_B"
		RCM_CTL_A=one RCM_CTL_B=two
		;;
	hosts)
		tb_up 2 1 2 on
		A=$(tb_ns 1 a)
		B=$(tb_ns 2 a)
		IP_A=$(tb_addr 1 a)
		IP_B=$(tb_addr 2 a)
		SOCK_A=${EFID_SOCK[tb1]}
		SOCK_B=${EFID_SOCK[tb2]}
		RCM_CTL_A=1 RCM_CTL_B=2
		log "testbed hosts: $A ($IP_A) and $B ($IP_B), two paths"
		;;
	*) fail "topology: one, two or hosts, not '$1'" ;;
	esac
}

rcm_ctl() {
	local id
	if [ "$1" = a ]; then id=$RCM_CTL_A; else id=$RCM_CTL_B; fi
	shift
	if [ "$RCM_TOPOLOGY" = hosts ]; then
		tb_ctl "$id" "$@"
	else
		ctl_on "$id" "$@"
	fi
}

# _rcm_listens PORT: true when A's efid lists a listener on service PORT.
_rcm_listens() {
	rcm_ctl a --json status "$A" 2>/dev/null |
		jq -e --argjson p "$1" '[.. | objects | select(has("listeners")) |
			.listeners[]? | select(.service == $p)] | length > 0' >/dev/null
}

# rcm_wait_listen PORT: waits (20 s at most) until a program in A listens
# on service PORT: an EFI listener is efid's, not a socket, and efictl
# status lists it.
rcm_wait_listen() {
	wait_for 20000 "a listener on service $1 in $A" _rcm_listens "$1"
}

# rcm_watch_start: samples A's and B's counters (efictl --json stats) every
# 0.2 s while programs run, so a failure can show what the transport of
# each side was doing last (rcm_watch_show).  Each sample replaces the
# previous one; the one before is kept too.
rcm_watch_start() {
	(
		trap 'exit 0' TERM
		while :; do
			for s in a b; do
				if [ $s = a ]; then ns=$A; else ns=$B; fi
				[ -f "$TMPD/stats.$s.json" ] && mv -f "$TMPD/stats.$s.json" "$TMPD/stats.$s.prev.json"
				rcm_ctl $s --json stats "$ns" >"$TMPD/stats.$s.json" 2>/dev/null
			done
			sleep 0.2
		done
	) &
	RCM_WATCH_PID=$!
	TRACK_BGPIDS+=("$RCM_WATCH_PID")
}

rcm_watch_stop() {
	[ -n "$RCM_WATCH_PID" ] || return 0
	kill "$RCM_WATCH_PID" 2>/dev/null
	wait "$RCM_WATCH_PID" 2>/dev/null
	RCM_WATCH_PID=""
}

# rcm_watch_show: the last two samples of each side's contexts (counters
# per process and peer path), on the log.
rcm_watch_show() {
	local f
	rcm_watch_stop
	for f in "$TMPD"/stats.[ab].prev.json "$TMPD"/stats.[ab].json; do
		[ -s "$f" ] || continue
		echo "    efid stats sampled ($(basename "$f")):"
		jq -c '.. | objects | select(has("contexts")) | .contexts[]?' "$f" 2>/dev/null |
			sed 's/^/      /'
	done
}
