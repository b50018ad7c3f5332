#!/bin/bash
# SPDX-License-Identifier: MIT
# The connection manager between two instances of one host (one efid):
# connect + accept + data + disconnect (also with the QP destroyed before its
# id), a rejection with private data, no
# listener, service names, IPv6, no efid at the address, a listener that never answers, and an
# address nobody has.  Every outcome must arrive within the connect's
# timeout.  About 15 s.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/cm/lib.sh
. "$(dirname "$0")/lib.sh"
cm_init cl
dp_one_host

log "connect, accept, one message each way, disconnect"
cm_server srv 7471
cm_client "$IP_A" 7471 --expect established
grep -q '^echo ok' "$TMPD/client.out" || fail "no echo"
cm_wait srv

log "the client's ACK of the echo counts though its DISCONNECTED comes first"
# the server's datagrams, in and out, 3 ms late (libefi's fault injector):
# the client acknowledges the echo, then disconnects, and the server hears
# the DISCONNECTED through efid before the ACK; its echo must still
# complete successfully, not be flushed
EFI_FAULT=delay_us=3000 cm_server late 7471 --echo-acked
cm_client "$IP_A" 7471 --expect established
grep -q '^echo ok' "$TMPD/client.out" || fail "no echo"
cm_wait late

log "the QP destroyed before its id, then disconnect"
cm_server qpfirst 7471
cm_client "$IP_A" 7471 --expect established --qp-first
grep -q '^qp destroyed first' "$TMPD/client.out" || fail "the client did not destroy its QP first"
cm_wait qpfirst

log "the listener rejects, with private data"
cm_server rej 7471 --reject
cm_client "$IP_A" 7471 --expect rejected
grep -q '^reason 1$' "$TMPD/client.out" || fail "not rejected by the consumer"
cm_wait rej

log "nobody listens on the service"
cm_client "$IP_A" 7472 --expect rejected --timeout 3000
grep -q '^reason 2$' "$TMPD/client.out" || fail "not rejected for want of a listener"

log "service names resolve (services(5))"
cm_server named echo
cm_client "$IP_A" 7 --expect established
cm_wait named

log "IPv6 addresses (GIDs that are not IPv4-mapped)"
ip -n "$A" addr add fd77::1/64 dev efi0 nodad
ip -n "$B" addr add fd77::2/64 dev efi0 nodad
wait_for 5000 "GID fd77::1 in $A" has_gid "$A" efi0 fd77::1
wait_for 5000 "GID fd77::2 in $B" has_gid "$B" efi0 fd77::2
cm_server v6 7475
cm_client fd77::1 7475 --expect established
cm_wait v6

log "an address with no efid behind it"
C=${PFX}c
mk_netns "$C"
mk_link "${PFX}cv" type veth peer name "${PFX}cp"
ip link set "${PFX}cp" netns "$C"
ip link set "${PFX}cv" master "$BR" up
ip -n "$C" addr add 10.77.0.3/24 dev "${PFX}cp"
ip -n "$C" link set "${PFX}cp" up
wait_for 5000 "ping $B -> $C" ip netns exec "$B" ping -c 1 -W 1 10.77.0.3
cm_client 10.77.0.3 7471 --expect unreachable --timeout 4000

log "a listener that never answers"
cm_bg mute in_a listen 7473 --hold
wait_for 10000 "mute listener" grep -q '^listening' "$TMPD/mute.out"
cm_client "$IP_A" 7473 --expect timeout --timeout 1000

log "an address nobody has"
cm_client 10.77.0.99 7471 --expect unreachable --timeout 1500
log "pass"
