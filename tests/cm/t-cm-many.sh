#!/bin/bash
# SPDX-License-Identifier: MIT
# Many live connections through the connection manager (issue 18): a server
# on host one accepts CM_MANY_N (1,000) connections that one client process
# on host two opens, 32 at a time.  Both processes must do it without a
# thread per connection (libefi's CM has one watcher per context), every
# connection carries a message, efictl status on both hosts shows all of
# them, and when the client is SIGKILLed the server hears DISCONNECTED on
# every connection (QP in ERR), and both efids hold no connection after.
# About 15 s on 2 cores.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/cm/many.sh
. "$(dirname "$0")/many.sh"
N=${CM_MANY_N:-1000}
cm_init cn
dp_two_hosts

many_bg srv in_a server 7480 "$N"
many_wait srv 10000 '^listening'
many_bg cli in_b client "$IP_A" 7480 "$N" --parallel 32
many_wait cli 60000 '^ready'
many_wait srv 10000 '^ready'
log "client: $(grep '^ready' "$TMPD/cli.out")"
log "server: $(grep '^ready' "$TMPD/srv.out")"
# main, progress, lease watcher, CM watcher, and a spare: not one per connection
for side in cli srv; do
	t=$(many_field "$side" '^ready' threads)
	[ -n "$t" ] && [ "$t" -le 6 ] || fail "$side holds $N connections with $t threads"
done

many_cmd cli send
many_wait cli 20000 '^send ok'
many_cmd srv recv
many_wait srv 20000 '^recv ok'

efid_use one
wait_for 5000 "host one shows $N connections" conns_are "$A" "$N"
efid_use two
wait_for 5000 "host two shows $N connections" conns_are "$B" "$N"

killed=$(date +%s%3N)
kill -KILL "${MANY_PID[cli]}"
wait "${MANY_PID[cli]}" 2>/dev/null
many_wait srv 10000 '^disconnected'
first=$(many_field srv '^disconnected' first)
last=$(many_field srv '^disconnected' last)
many_wait srv 10000 '^all in ERR'
allerr=$(sed -n 's/^all in ERR at \([0-9]*\).*/\1/p' "$TMPD/srv.out")
log "client SIGKILLed: the server heard DISCONNECTED on all $N after $(( ${first%.*} - killed ))..$(( ${last%.*} - killed )) ms, every QP in ERR after $((allerr - killed)) ms"
many_kill_bound "client SIGKILLed" "$killed" "$last"
efid_use one
wait_for 5000 "host one holds no connection" conns_are "$A" 0
efid_use two
wait_for 5000 "host two holds no connection" conns_are "$B" 0
many_cmd srv quit
wait "${MANY_PID[srv]}" || fail "the server exited $?"
log "done"
