#!/bin/bash
# SPDX-License-Identifier: MIT
# efid restarts in the lossy testbed (tests/testbed/testbed.sh), where each
# host's efid runs inside a named network namespace (issue 18).  A restarted
# efid used to scan its own namespace a second time as if it were an
# instance's, report the instance's efi0 (its veth host end) as a stray,
# and `efictl status` then answered "malformed reply".  Here: 50 CM
# connections between instances of two hosts, host one's efid stopped with
# SIGTERM and started again, then killed with SIGKILL and started again;
# each time `efictl status` must answer (text and JSON) with no stray, the
# log must name none, the connections must be taken up again and carry a
# message each.  About 15 s.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/testbed/testbed.sh
. "$(dirname "$0")/../testbed/testbed.sh"
: "${CM_MANY:=$top_builddir/tests/cm/cm-many}"
N=50
tb_test_init cT
[ -x "$CM_MANY" ] || fail "cm-many not built at $CM_MANY"
tb_up 2 1 1 on

declare -A FD=() PID=()
# side NAME HOST ARGS...: cm-many in instance a of HOST, commands on a FIFO
side() {
	local name=$1 h=$2 fd
	shift 2
	mkfifo "$TMPD/$name.in"
	exec {fd}<>"$TMPD/$name.in"
	FD[$name]=$fd
	tb_exec "$h" a "$CM_MANY" "$@" <"$TMPD/$name.in" >"$TMPD/$name.out" 2>&1 &
	PID[$name]=$!
	TRACK_BGPIDS+=("$!")
}
cmd() { echo "$2" >&"${FD[$1]}"; }
# seen NAME PATTERN COUNT
seen() { [ "$(grep -cE "$2" "$TMPD/$1.out" 2>/dev/null)" -ge "$3" ]; }
round=0
traffic() {
	round=$((round + 1))
	cmd cli send
	wait_for 20000 "client's messages, round $round" seen cli "^send ok $N" "$round"
	cmd srv recv
	wait_for 20000 "server's messages, round $round" seen srv "^recv ok $N" "$round"
	! grep -q '^FAIL\|^reset\|listener reset' "$TMPD/srv.out" "$TMPD/cli.out" ||
		fail "$(cat "$TMPD/srv.out" "$TMPD/cli.out")"
}
taken_up() {
	[ "$(tb_ctl 1 --json status | jq -r '[.instances[].interfaces[].connections[]? | select(.pid != null)] | length')" = "$N" ]
}

side srv 1 server 7485 "$N"
wait_for 10000 "server listening" seen srv '^listening' 1
side cli 2 client "$(tb_addr 1 a)" 7485 "$N" --parallel 16
wait_for 30000 "client connected" seen cli '^ready' 1
traffic

ns=$(tb_ns 1)
for sig in TERM KILL; do
	old=${EFID_PID[tb1]}
	log "host one's efid: SIG$sig, then started again in its namespace"
	efid_stop tb1 "$sig"
	mark=$(wc -l <"${EFID_DIR[tb1]}/efid.log")
	EFI_IT_WRAP="nsenter --net=/run/netns/$ns" efid_launch tb1
	# the testbed removes the efid its state names
	sed -i "s/^efid 1 $old /efid 1 ${EFID_PID[tb1]} /" "$TB_STATE"
	tb_ctl 1 status >"$TMPD/status.txt" 2>&1 ||
		fail "efictl status after the SIG$sig restart: $(cat "$TMPD/status.txt")"
	assert_eq 0 "$(tb_ctl 1 --json status | jq -r '.strays | length')" "strays after the SIG$sig restart"
	! tail -n +"$mark" "${EFID_DIR[tb1]}/efid.log" | grep -q 'warning: stray device' ||
		fail "efid named a stray after the SIG$sig restart: $(tail -n +"$mark" "${EFID_DIR[tb1]}/efid.log" | grep 'warning: stray device')"
	wait_for 10000 "the server took up its $N connections" taken_up
	traffic
	log "SIG$sig: status answers, no stray, $N connections taken up and carrying messages"
done
# the client first: a server that quit first would end its connections
cmd cli quit
wait "${PID[cli]}" || fail "the client exited $?: $(cat "$TMPD/cli.out")"
cmd srv quit
wait "${PID[srv]}" || fail "the server exited $?: $(cat "$TMPD/srv.out")"
log "done"
