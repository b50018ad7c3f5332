# shellcheck shell=bash
# Helpers of the connection-manager tests (tests/cm/t-cm-*.sh), on top of
# tests/data/lib.sh (dp_one_host / dp_two_hosts: instances A and B, IP_A,
# IP_B, in_a / in_b) and tests/integration/lib.sh (cleanup on EXIT).
#
#     cm_init TAG; dp_one_host
#     cm_server NAME ARGS...     # cm-test server in A, waits until it listens
#     cm_client ARGS...          # cm-test client in B toward IP_A: must pass
#     cm_wait NAME               # the server must exit 0
# shellcheck source=tests/data/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../data/lib.sh"

: "${CM_TEST:=$top_builddir/tests/cm/cm-test}"
# Seconds a cm-test client may run before it counts as a hang.
: "${CM_TIMEOUT:=60}"
declare -A CM_PIDS=()

cm_init() {
	lib_init "$1"
	[ -x "$CM_TEST" ] || fail "cm-test not built at $CM_TEST"
}

# cm_bg NAME in_a|in_b ARGS...: cm-test in the background, output in
# $TMPD/NAME.out, its pid in CM_PIDS[NAME]: the cm-test process itself (ip
# netns exec and env exec it), so that a test can SIGKILL it; cm-test ends
# itself after 90 s.
cm_bg() {
	local name=$1 ns=$A sock=$SOCK_A
	[ "$2" = in_b ] && ns=$B sock=$SOCK_B
	shift 2
	# a simple command, not a function: $! is then the process itself
	ip netns exec "$ns" env EFI_SOCKET="$sock" "$CM_TEST" "$@" >"$TMPD/$name.out" 2>&1 &
	CM_PIDS[$name]=$!
	TRACK_BGPIDS+=("$!")
}

cm_server() {
	local name=$1
	shift
	cm_bg "$name" in_a server "$@"
	wait_for 10000 "server $name listening" grep -q '^listening' "$TMPD/$name.out"
}

# cm_client ARGS...: runs to the end; its output is shown and kept in
# $TMPD/client.out.
cm_client() {
	local rc=0
	in_b timeout -k 5 "$CM_TIMEOUT" "$CM_TEST" client "$@" >"$TMPD/client.out" 2>&1 || rc=$?
	_dp_show "$TMPD/client.out" client
	if [ "$rc" != 0 ]; then
		local f
		for f in "${!CM_PIDS[@]}"; do
			_dp_show "$TMPD/$f.out" "$f"
		done
		fail "cm-test client $* exited $rc"
	fi
}

# cm_wait NAME [STATUS]: the background cm-test NAME must exit STATUS (0).
cm_wait() {
	local name=$1 want=${2:-0} rc=0
	wait "${CM_PIDS[$name]}" || rc=$?
	_dp_show "$TMPD/$name.out" "$name"
	[ "$rc" = "$want" ] || fail "cm-test $name exited $rc, expected $want"
}
