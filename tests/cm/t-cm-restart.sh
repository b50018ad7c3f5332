#!/bin/bash
# SPDX-License-Identifier: MIT
# The connection manager across efid restarts (issue 18): CM_MANY_N
# (1,000) connections between a server on host one, listening on 100
# services, and a client on host two, then host one's efid stopped with
# SIGTERM and started again, then host two's killed with SIGKILL and started
# again.  After each restart: every connection and every listener are taken
# up again by their processes (efictl status shows them with their pid,
# neither process heard ECONNRESET), a message goes over every connection,
# and new connects to a listener work.  At the end the client is SIGKILLed and the server
# must hear DISCONNECTED on every connection (relayed by the restarted
# efids, QP in ERR); both efids then hold no connection.  About 30 s.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/cm/many.sh
. "$(dirname "$0")/many.sh"
N=${CM_MANY_N:-1000}
L=100
cm_init cq
dp_two_hosts

# taken_up INSTANCE N: N connections of efi0 belong to a process again,
# and the listener too where there is one
taken_up() {
	local j
	j=$(iface_json "$1" efi0)
	[ "$(jq -r '[.connections[] | select(.pid != null)] | length' <<<"$j")" = "$2" ] &&
		[ "$(jq -r '[.listeners[] | select(.pid != null)] | length' <<<"$j")" = "$3" ]
}

no_resets() {
	local side
	for side in srv cli; do
		if grep -q '^reset\|listener reset' "$TMPD/$side.out"; then
			_many_show
			fail "$side heard ECONNRESET: $*"
		fi
	done
}

round=0
traffic() {
	round=$((round + 1))
	many_cmd cli send
	many_wait cli 20000 "^send ok $N" "$round"
	many_cmd srv recv
	many_wait srv 20000 "^recv ok $N" "$round"
	many_cmd cli "more 20 $((7482 + (round * 37) % L))"
	many_wait cli 20000 '^more ok' "$round"
	log "$*: a message over each of the $N, and $(grep '^more ok' "$TMPD/cli.out" | tail -1)"
	no_resets "$*"
}

many_bg srv in_a server 7482 "$N" --listeners "$L"
many_wait srv 10000 '^listening'
many_bg cli in_b client "$IP_A" 7482 "$N" --parallel 32
many_wait cli 60000 '^ready'
many_wait srv 10000 '^ready'
log "client: $(grep '^ready' "$TMPD/cli.out")"
traffic "before the restarts"

log "host one's efid (the server's): SIGTERM, then started again"
efid_stop one TERM
efid_launch one
efid_use one
wait_for 10000 "the server took up its $N connections and its $L listeners" taken_up "$A" "$N" "$L"
log "taken up ${WAITED_MS} ms after efid answered"
traffic "after host one's efid restarted"

log "host two's efid (the client's): SIGKILL, then started again"
wait_for 10000 "host two's efid stored its $N connections" conns_stored two "$B" "$N"
efid_stop two KILL
efid_launch two
efid_use two
wait_for 10000 "the client took up its $N connections" taken_up "$B" "$N" 0
log "taken up ${WAITED_MS} ms after efid answered"
traffic "after host two's efid was killed"

killed=$(date +%s%3N)
kill -KILL "${MANY_PID[cli]}"
wait "${MANY_PID[cli]}" 2>/dev/null
many_wait srv 10000 '^disconnected'
first=$(many_field srv '^disconnected' first)
last=$(many_field srv '^disconnected' last)
many_wait srv 10000 '^all in ERR'
allerr=$(sed -n 's/^all in ERR at \([0-9]*\).*/\1/p' "$TMPD/srv.out")
log "client SIGKILLed after the restarts: the server heard DISCONNECTED on all $N after $(( ${first%.*} - killed ))..$(( ${last%.*} - killed )) ms, every QP in ERR after $((allerr - killed)) ms"
many_kill_bound "client SIGKILLed after the restarts" "$killed" "$last"
efid_use one
wait_for 5000 "host one holds no connection" conns_are "$A" 0
efid_use two
wait_for 5000 "host two holds no connection" conns_are "$B" 0
many_cmd srv quit
wait "${MANY_PID[srv]}" || fail "the server exited $?"
log "done"
