#!/bin/bash
# SPDX-License-Identifier: MIT
# The connection manager between two hosts (two efids, one instance each):
# the request goes from B's efid to A's over the instances' network, and
# back.  Connect + data + disconnect, a rejection, no listener, several
# connections at once, and the listener's efid gone.  About 10 s.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/cm/lib.sh
. "$(dirname "$0")/lib.sh"
cm_init ch
dp_two_hosts

log "connect, accept, one message each way, disconnect"
cm_server srv 7471
cm_client "$IP_A" 7471 --expect established
grep -q '^echo ok' "$TMPD/client.out" || fail "no echo"
cm_wait srv

log "the listener rejects"
cm_server rej 7471 --reject
cm_client "$IP_A" 7471 --expect rejected
grep -q '^reason 1$' "$TMPD/client.out" || fail "not rejected by the consumer"
cm_wait rej

log "nobody listens on the service"
cm_client "$IP_A" 7472 --expect rejected --timeout 3000
grep -q '^reason 2$' "$TMPD/client.out" || fail "not rejected for want of a listener"

log "20 connections one after another through both efids"
cm_server many 7474 --count 20
cm_client "$IP_A" 7474 --expect established --count 20
cm_wait many

# efi-perf connects through the connection manager by default, by hand
# with --tcp-exchange
for how in "" --tcp-exchange; do
	log "efi-perf send_lat ${how:-(connection manager)}"
	in_a timeout -k 5 60 "$EFI_PERF" send_lat -n 200 $how >"$TMPD/perf.sout" 2>&1 &
	perf_pid=$!
	TRACK_BGPIDS+=("$perf_pid")
	sleep 0.3
	rc=0
	in_b timeout -k 5 60 "$EFI_PERF" send_lat -n 200 $how "$IP_A" >"$TMPD/perf.cout" 2>&1 || rc=$?
	wait "$perf_pid" || rc=$((rc + 100))
	[ "$rc" = 0 ] || { cat "$TMPD/perf.sout" "$TMPD/perf.cout"; fail "efi-perf $how: exit $rc"; }
	grep -q 'remote address' "$TMPD/perf.cout" || fail "efi-perf $how printed no QP table"
done

log "the listening host's efid stops: no efid answers there any more"
efid_stop one
cm_client "$IP_A" 7471 --expect unreachable --timeout 3000
log "pass"
