#!/bin/bash
# SPDX-License-Identifier: MIT
# Lifecycles: two processes cannot listen on one service of one interface;
# a listener killed with SIGKILL is unregistered at once; a process killed
# in the middle of a connection is reported to its peer by efid (the peer
# has nothing in flight, so no transport timeout could tell it), whose QP
# then goes to ERR with its posted receive flushed — also when the peer
# looks only at its CQ and takes no CM event.  About 5 s.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/cm/lib.sh
. "$(dirname "$0")/lib.sh"
cm_init cy
dp_two_hosts

log "one listener per service and interface"
cm_bg holder in_a listen 7480 --hold
wait_for 10000 "holder listening" grep -q '^listening' "$TMPD/holder.out"
rc=0
in_a "$CM_TEST" listen 7480 >"$TMPD/second.out" 2>&1 || rc=$?
[ "$rc" = 3 ] || fail "a second listener on 7480 got exit $rc, expected 3 (EADDRINUSE)"
# another service is fine
assert_exit 0 in_a "$CM_TEST" listen 7481

log "a listener killed with SIGKILL is unregistered"
kill -KILL "${CM_PIDS[holder]}"
wait "${CM_PIDS[holder]}" 2>/dev/null
wait_for 1000 "7480 free again" in_a "$CM_TEST" listen 7480
log "7480 free again after ${WAITED_MS} ms"

log "a client killed in the middle of a connection"
cm_server srv 7482 --expect-disconnect
cm_bg victim in_b client "$IP_A" 7482 --hang
wait_for 10000 "client connected" grep -q '^established' "$TMPD/victim.out"
wait_for 10000 "server saw it established" grep -q '^established' "$TMPD/srv.out"
killed=$(date +%s%3N)
kill -KILL "${CM_PIDS[victim]}"
wait "${CM_PIDS[victim]}" 2>/dev/null
cm_wait srv
seen=$(sed -n 's/^disconnected at \([0-9]*\).*/\1/p' "$TMPD/srv.out")
[ -n "$seen" ] || fail "the server never learned of the client's death"
log "the peer learned of the death $((seen - killed)) ms after SIGKILL"

log "the same, the peer looking only at its CQ (no CM event taken)"
cm_server cq 7483 --watch-cq
cm_bg victim2 in_b client "$IP_A" 7483 --hang
wait_for 10000 "client connected" grep -q '^established' "$TMPD/victim2.out"
wait_for 10000 "server saw it established" grep -q '^established' "$TMPD/cq.out"
killed=$(date +%s%3N)
kill -KILL "${CM_PIDS[victim2]}"
wait "${CM_PIDS[victim2]}" 2>/dev/null
cm_wait cq
seen=$(sed -n 's/^flushed at \([0-9]*\).*/\1/p' "$TMPD/cq.out")
[ -n "$seen" ] || fail "the server's receive was never flushed"
log "the peer's receive was flushed $((seen - killed)) ms after SIGKILL"
log "pass"
