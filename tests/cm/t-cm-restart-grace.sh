#!/bin/bash
# SPDX-License-Identifier: MIT
# Deaths while efid is away (issue 18).  (1) The client's efid is killed,
# the client process dies meanwhile, the efid starts again: nobody takes
# the connections up, and after the 10 s grace the restarted efid sends the
# DREQs the dead process owed, so the server hears DISCONNECTED on all of
# them.  (2) The server's efid is stopped, the client dies meanwhile (its
# efid resends the DREQs until answered), the server's efid starts again: the DREQs reach the records that wait to be taken up, and the
# server, taking them up, hears DISCONNECTED (QP in ERR).  (3) The same
# with the server's efid away for 4 s: a DREQ was once given up after 2 s,
# and the server then kept its connections.  About 35 s.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/cm/many.sh
. "$(dirname "$0")/many.sh"
N=10
cm_init cg
dp_two_hosts

pair() {
	local tag=$1
	many_bg "srv$tag" in_a server "$2" "$N"
	many_wait "srv$tag" 10000 '^listening'
	many_bg "cli$tag" in_b client "$IP_A" "$2" "$N" --parallel 8
	many_wait "cli$tag" 20000 '^ready'
	many_wait "srv$tag" 10000 '^ready'
}

log "(1) the client dies while its efid is away"
pair 1 7486
wait_for 10000 "host two's efid stored its $N connections" conns_stored two "$B" "$N"
efid_stop two KILL
kill -KILL "${MANY_PID[cli1]}"
wait "${MANY_PID[cli1]}" 2>/dev/null
efid_launch two
t0=$(date +%s%3N)
many_wait srv1 20000 '^disconnected'
log "the server heard DISCONNECTED on all $N $(( $(date +%s%3N) - t0 )) ms after the client's efid answered again"
many_cmd srv1 quit
wait "${MANY_PID[srv1]}" || fail "server 1 exited $?"

log "(2) the client dies while the server's efid is away"
pair 2 7487
efid_stop one TERM
kill -KILL "${MANY_PID[cli2]}"
wait "${MANY_PID[cli2]}" 2>/dev/null
sleep 0.3 # the client's efid starts resending its DREQs to nobody
efid_launch one
many_wait srv2 10000 '^disconnected'
log "the server heard DISCONNECTED on all $N after taking them up"
efid_use one
wait_for 5000 "host one holds no connection" conns_are "$A" 0
efid_use two
wait_for 5000 "host two holds no connection" conns_are "$B" 0
many_cmd srv2 quit
wait "${MANY_PID[srv2]}" || fail "server 2 exited $?"

log "(3) the client dies while the server's efid is away for 4 s"
pair 3 7488
efid_stop one TERM
kill -KILL "${MANY_PID[cli3]}"
wait "${MANY_PID[cli3]}" 2>/dev/null
sleep 4 # longer than the 2 s a DREQ was once resent for
efid_launch one
t0=$(date +%s%3N)
many_wait srv3 10000 '^disconnected'
log "the server heard DISCONNECTED on all $N $(( $(date +%s%3N) - t0 )) ms after its efid answered again"
efid_use one
wait_for 5000 "host one holds no connection" conns_are "$A" 0
efid_use two
wait_for 5000 "host two holds no connection" conns_are "$B" 0
many_cmd srv3 quit
wait "${MANY_PID[srv3]}" || fail "server 3 exited $?"
log "done"
