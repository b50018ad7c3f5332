#!/bin/bash
# rdmacm-utils' ucmatose, unmodified, over EFI between the instances of two
# hosts: the server listens on the wildcard address (rdma_getaddrinfo with
# RAI_PASSIVE), the client opens several connections at once on one event
# channel, each sends and receives its messages, the server disconnects
# them and the client's ids see DISCONNECTED.
# Cost: ~10 s.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# Argument: two (two efid on one bridge, the default) or hosts (two testbed
# hosts routed over two paths: t-rdmacm-ucmatose-hosts.sh).
MODE=${1:-two}
if [ "$MODE" = hosts ]; then
	# shellcheck source=tests/testbed/testbed.sh
	. "$(dirname "$0")/../testbed/testbed.sh"
fi
# shellcheck source=tests/rdmacm/lib.sh
. "$(dirname "$0")/lib.sh"
if [ "$MODE" = hosts ]; then
	rcm_init uh testbed
else
	rcm_init uc
fi
verbs_need ucmatose rdmacm-utils
rcm_topology "$MODE"

PORT=7471
CONNS=4
MSGS=20

log "ucmatose server in $A, client in $B: $CONNS connections, $MSGS messages each"
va timeout -k 5 60 ucmatose -p "$PORT" -c "$CONNS" -C "$MSGS" >"$TMPD/uc.s" 2>&1 &
spid=$!
TRACK_BGPIDS+=("$spid")
# an EFI listener is efid's, not a socket to wait for: retry while the
# server is starting (the connections are rejected: no listener)
crc=0
for _ in $(seq 1 50); do
	crc=0
	vb timeout -k 5 60 ucmatose -s "$IP_A" -p "$PORT" -c "$CONNS" -C "$MSGS" >"$TMPD/uc.c" 2>&1 || crc=$?
	[ $crc = 0 ] && break
	grep -q 'REJECTED\|UNREACHABLE' "$TMPD/uc.c" || break
	kill -0 "$spid" 2>/dev/null || break
	sleep 0.2
done
src=0
wait "$spid" || src=$?
sed 's/^/    server: /' "$TMPD/uc.s"
sed 's/^/    client: /' "$TMPD/uc.c"
[ "$crc" = 0 ] || fail "ucmatose client exit $crc"
[ "$src" = 0 ] || fail "ucmatose server exit $src"
server=$(cat "$TMPD/uc.s")
client=$(cat "$TMPD/uc.c")
vmatch 'completing sends' "$server" "the server's sends"
vmatch 'receiving data transfers' "$server" "the server's receives"
vmatch 'cmatose: disconnecting' "$server" "the server disconnects"
vmatch '^disconnected' "$server" "every connection's DISCONNECTED"
vmatch 'receiving data transfers' "$client" "the client's receives"
vmatch 'sending replies' "$client" "the client's replies"
for out in "$server" "$client"; do
	vmatch '^data transfers complete' "$out" "ucmatose transfers"
	vmatch '^return status 0' "$out" "ucmatose status"
done
log "PASS: ucmatose over libefi-rdmacm"
