# shellcheck shell=bash
# Helpers of the data-path tests (tests/data/t-*.sh), on top of
# tests/integration/lib.sh (namespaces, efid, cleanup on EXIT):
#
#     . "$(dirname "$0")/lib.sh"
#     dp_init TAG           # lib_init + the data-path binaries
#     dp_one_host           # one efid, instances A and B on one bridge
#   or
#     dp_two_hosts          # efid "one" with A, efid "two" with B, one bridge
#     dp_run CASE           # dp-test server in A, client in B: must pass
#
# After setup: A, B (namespaces), IP_A, IP_B (their efi0 addresses), SOCK_A,
# SOCK_B (the efid socket each instance talks to).  in_a/in_b CMD... run a
# command inside an instance with its EFI_SOCKET.  DP_MTU_A, DP_MTU_B (if
# set) are the MTUs A's and B's efi0 are attached with (efictl --mtu).
# shellcheck source=tests/integration/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../integration/lib.sh"

: "${DP_TEST:=$top_builddir/tests/data/dp-test}"
: "${EFI_PERF:=$top_builddir/tools/efi-perf/efi-perf}"
# Seconds one dp-test process may take before it counts as a hang.
: "${DP_TIMEOUT:=300}"

dp_init() {
	lib_init "$1"
	[ -x "$DP_TEST" ] || fail "dp-test not built at $DP_TEST"
	[ -x "$EFI_PERF" ] || fail "efi-perf not built at $EFI_PERF"
	# the large message of case "sizes": 1 GiB when memory allows (both
	# sides hold one in the same machine, plus the kernel's buffers)
	local avail_kb
	avail_kb=$(awk '/^MemAvailable:/ {print $2}' /proc/meminfo)
	if [ "${avail_kb:-0}" -ge $((6 * 1024 * 1024)) ]; then
		DP_LARGE_MB=${DP_LARGE_MB:-1024}
	else
		DP_LARGE_MB=${DP_LARGE_MB:-256}
	fi
}

_dp_instances() {
	A=${PFX}a
	B=${PFX}b
	BR=${PFX}br
	IP_A=10.77.0.1
	IP_B=10.77.0.2
	mk_netns "$A"
	mk_netns "$B"
	mk_bridge "$BR"
}

_dp_ready() {
	settle "$A" "$B"
	wait_for 5000 "ping $A -> $B" ip netns exec "$A" ping -c 1 -W 1 "$IP_B"
	log "instances ready: $A ($IP_A via $SOCK_A) and $B ($IP_B via $SOCK_B)"
}

# One host: one efid, both instances on its bridge.
dp_one_host() {
	_dp_instances
	efid_start main
	assert_exit 0 ctl_on main attach "$A" --name efi0 --address "$IP_A/24" --uplink "$BR" \
		${DP_MTU_A:+--mtu "$DP_MTU_A"}
	assert_exit 0 ctl_on main attach "$B" --name efi0 --address "$IP_B/24" --uplink "$BR" \
		${DP_MTU_B:+--mtu "$DP_MTU_B"}
	SOCK_A=${EFID_SOCK[main]}
	SOCK_B=${EFID_SOCK[main]}
	_dp_ready
}

# Two hosts: two efid with their own state and runtime directories, each
# with its instance, joined by one bridge.  The arrays DP_CONF_ONE and
# DP_CONF_TWO add Section.Key=Value settings to each efid.conf.
dp_two_hosts() {
	_dp_instances
	efid_start one ${DP_CONF_ONE[@]+"${DP_CONF_ONE[@]}"}
	assert_exit 0 ctl_on one attach "$A" --name efi0 --address "$IP_A/24" --uplink "$BR" \
		${DP_MTU_A:+--mtu "$DP_MTU_A"}
	efid_start two ${DP_CONF_TWO[@]+"${DP_CONF_TWO[@]}"}
	assert_exit 0 ctl_on two attach "$B" --name efi0 --address "$IP_B/24" --uplink "$BR" \
		${DP_MTU_B:+--mtu "$DP_MTU_B"}
	SOCK_A=${EFID_SOCK[one]}
	SOCK_B=${EFID_SOCK[two]}
	_dp_ready
}

in_a() { ip netns exec "$A" env EFI_SOCKET="$SOCK_A" "$@"; }
in_b() { ip netns exec "$B" env EFI_SOCKET="$SOCK_B" "$@"; }

# _dp_show FILE LABEL: a process's output, indented, on the test's log.
_dp_show() {
	[ -s "$1" ] || return 0
	sed "s/^/    $2: /" "$1"
}

# dp_run CASE [dp-test options]: the server in A, the client in B; both must
# exit 0 (for "peerkill" the server must die by SIGKILL).  DP_ENV (words
# NAME=VALUE) goes into both environments, DP_CLIENT_WRAP before the
# client's command (e.g. strace).
dp_run() {
	local case=$1 spid crc=0 src=0 want_src=0 i
	shift
	[ "$case" = peerkill ] && want_src=137
	log "case $case${DP_ENV:+ with $DP_ENV}"
	# shellcheck disable=SC2086 # DP_ENV is a list of words
	in_a ${DP_ENV:-} timeout -k 5 "$DP_TIMEOUT" "$DP_TEST" server "$case" "$@" \
		>"$TMPD/$case.server" 2>&1 &
	spid=$!
	TRACK_BGPIDS+=("$spid")
	# shellcheck disable=SC2086
	in_b ${DP_ENV:-} timeout -k 5 "$DP_TIMEOUT" ${DP_CLIENT_WRAP:-} "$DP_TEST" client "$case" "$IP_A" "$@" \
		>"$TMPD/$case.client" 2>&1 || crc=$?
	# a client that failed leaves the server waiting for it: give it a
	# moment to notice the closed connection, then stop it
	if [ "$crc" != 0 ]; then
		for i in $(seq 1 60); do
			pid_running "$spid" || break
			sleep 0.05
		done
		pid_running "$spid" && kill "$spid" 2>/dev/null
	fi
	wait "$spid" 2>/dev/null || src=$?
	_dp_show "$TMPD/$case.server" server
	_dp_show "$TMPD/$case.client" client
	[ "$crc" = 0 ] || fail "case $case: the client exited $crc (output above)"
	[ "$src" = "$want_src" ] || fail "case $case: the server exited $src, expected $want_src (output above)"
}
