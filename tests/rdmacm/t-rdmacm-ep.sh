#!/bin/bash
# rdmacm-utils' rdma_server and rdma_client, unmodified, over EFI between
# the instances of two hosts: synchronous ids (rdma_create_id with no
# channel), rdma_getaddrinfo, rdma_create_ep (passive: bound, with the QP
# attributes kept for the requests; active: address and route resolved
# and a QP made), rdma_listen, rdma_get_request (the request on a channel
# of its own, with its QP), rdma_accept / rdma_connect waiting for
# ESTABLISHED, rdma_verbs.h's rdma_reg_msgs, rdma_post_recv,
# rdma_post_send, rdma_get_send_comp and rdma_get_recv_comp (completion
# channels of the library's CQs), rdma_disconnect waiting for
# DISCONNECTED, rdma_destroy_ep.  Both print "end 0" only when every step
# worked.  Then a synchronous rdma_connect to a port nobody listens on
# fails with ECONNREFUSED, as librdmacm maps REJECTED.
# Cost: ~8 s.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/rdmacm/lib.sh
. "$(dirname "$0")/lib.sh"
rcm_init re
verbs_need rdma_server rdmacm-utils
rcm_topology two

PORT=7481
for round in 1 2; do
	log "round $round: rdma_server in A, rdma_client in B"
	va timeout -k 5 60 rdma_server -s "$IP_A" -p "$PORT" >"$TMPD/s.out" 2>&1 &
	spid=$!
	TRACK_BGPIDS+=("$spid")
	rcm_wait_listen "$PORT"
	crc=0 src=0
	vb timeout -k 5 60 rdma_client -s "$IP_A" -p "$PORT" >"$TMPD/c.out" 2>&1 || crc=$?
	wait "$spid" || src=$?
	sed 's/^/    client: /' "$TMPD/c.out"
	sed 's/^/    server: /' "$TMPD/s.out"
	[ $crc = 0 ] || fail "rdma_client exit $crc"
	[ $src = 0 ] || fail "rdma_server exit $src"
	vmatch '^rdma_client: end 0$' "$(cat "$TMPD/c.out")" "rdma_client's every step"
	vmatch '^rdma_server: end 0$' "$(cat "$TMPD/s.out")" "rdma_server's every step"
	PORT=$((PORT + 1))
done

log "rdma_client to a port nobody listens on: rdma_connect fails, ECONNREFUSED"
crc=0
vb timeout -k 5 60 rdma_client -s "$IP_A" -p "$PORT" >"$TMPD/c.out" 2>&1 || crc=$?
sed 's/^/    client: /' "$TMPD/c.out"
# rdma_client returns -1 (255) on any failure; 124 and up from timeout
# (or a signal) would be a hang or a crash
case $crc in
0 | 124 | 125 | 126 | 127 | 13[0-9] | 14[0-9]) fail "rdma_client without a server: exit $crc (wanted its own failure)" ;;
esac
vmatch 'rdma_connect: Connection refused' "$(cat "$TMPD/c.out")" "the synchronous connect's errno"
log "PASS: rdma_create_ep, rdma_get_request and synchronous ids over libefi-rdmacm"
