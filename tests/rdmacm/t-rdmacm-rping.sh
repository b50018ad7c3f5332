#!/bin/bash
# rdmacm-utils' rping, unmodified, over EFI between the instances of two
# hosts: librdmacm.so.1 is libefi-rdmacm under efi-run (LD_DEBUG shows the
# rdma_* calls bind to it), and rping -c -V -C 1000 (both sides check every
# ping's data) completes its exchanges, with the client's -v data lines.
# Cost: ~10 s.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# Argument: two (two efid on one bridge, the default) or hosts (two testbed
# hosts routed over two paths: t-rdmacm-rping-hosts.sh).
MODE=${1:-two}
if [ "$MODE" = hosts ]; then
	# shellcheck source=tests/testbed/testbed.sh
	. "$(dirname "$0")/../testbed/testbed.sh"
fi
# shellcheck source=tests/rdmacm/lib.sh
. "$(dirname "$0")/lib.sh"
if [ "$MODE" = hosts ]; then
	rcm_init pg testbed
else
	rcm_init rp
fi
verbs_need rping rdmacm-utils
rcm_topology "$MODE"

PORT=7174
COUNT=1000

# rping_once: server in A, client in B; 0 when both passed
rping_once() {
	local spid crc=0 src=0
	va timeout -k 5 60 rping -s -V -a "$IP_A" -p "$PORT" -C "$COUNT" >"$TMPD/rp.s" 2>&1 &
	spid=$!
	TRACK_BGPIDS+=("$spid")
	# an EFI listener is efid's, not a socket to wait for: the client
	# retries while the server is still starting (REJECTED: no listener)
	for _ in $(seq 1 50); do
		crc=0
		vb timeout -k 5 60 rping -c -V -v -a "$IP_A" -p "$PORT" -C "$COUNT" >"$TMPD/rp.c" 2>&1 || crc=$?
		[ $crc = 0 ] && break
		grep -q 'REJECTED\|UNREACHABLE\|event 8\|cma event' "$TMPD/rp.c" || break
		kill -0 "$spid" 2>/dev/null || break
		sleep 0.2
	done
	wait "$spid" || src=$?
	sed 's/^/    server: /' "$TMPD/rp.s"
	sed 's/^/    client: /' "$TMPD/rp.c"
	[ "$crc" = 0 ] || fail "rping client exit $crc"
	[ "$src" = 0 ] || fail "rping server exit $src"
}

log "rping -s -V / rping -c -V -v -C $COUNT"
rping_once
# rping's CM thread may print its DISCONNECT line into a data line (stdout
# is fully buffered, and two threads write it): count the data, not lines
lines=$(grep -o 'rdma-ping-[0-9]*: ' "$TMPD/rp.c" | sort -u | wc -l)
assert_eq "$COUNT" "$lines" "ping data lines of the client"
vmatch 'ping data: rdma-ping-0: ABCDEFGHIJKLMNOPQRSTUVWXYZ' "$(cat "$TMPD/rp.c")" "first ping's data"

log "LD_DEBUG=bindings: rping's rdma_* calls land in libefi-rdmacm"
in_b env LD_DEBUG=bindings LD_DEBUG_OUTPUT="$TMPD/bind" "${VERBS_FOREIGN_ENV[@]}" "$EFI_RUN" \
	rping -c -a "$IP_A" -p 1 -C 1 >/dev/null 2>&1 || true
# the library is named by the link it was loaded through
binds=$(cat "$TMPD"/bind.* | grep -E "normal symbol \`rdma_")
here="to ${EFI_RDMACM_DIR%/}/librdmacm.so.1 "
ours=$(grep -cF "$here" <<<"$binds" || true)
theirs=$(grep -vcF "$here" <<<"$binds" || true)
log "rdma_* bindings: $ours to libefi-rdmacm, $theirs elsewhere"
[ "$ours" -ge 5 ] || fail "too few bindings to libefi-rdmacm: $binds"
[ "$theirs" = 0 ] || fail "rdma_* bound elsewhere: $(grep -vF "$here" <<<"$binds")"
log "PASS: rping over libefi-rdmacm"
