#!/bin/bash
# rdma_cm over the instances' IPv6 EFI addresses (efictl attach gives each
# interface an IPv6 address beside its IPv4 one; GIDs are then IPv6, not
# IPv4-mapped), between two hosts: rdmacm-check's server bound to the IPv6
# address and its clients resolving it (private data and depths both ways,
# the request's and the connection's addresses of the IPv6 family, a
# reject with reason 28 and data, a port nobody listens on, an IPv6
# address that is no EFI interface's: ADDR_ERROR), then rping -V -C 200
# over IPv6, unmodified, both sides checking every ping's data.
# Cost: ~10 s.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/rdmacm/lib.sh
. "$(dirname "$0")/lib.sh"
rcm_init r6
CHECKER=$top_builddir/tests/rdmacm/rdmacm-check
[ -x "$CHECKER" ] || fail "rdmacm-check not built at $CHECKER"
rcm_topology two6
gids=$(rcm_ctl a --json status "$A" | jq -r '.. | objects | select(has("gids")) | .gids[].gid')
vmatch "^$IP6_A\$" "$gids" "A's GID table has its IPv6 address"

# rdmacm-check is ours: leak detection stays on in a sanitizer build
ra() { in_a "$EFI_RUN" "$@"; }
rb() { in_b "$EFI_RUN" "$@"; }

PORT=7395
ra timeout -k 5 120 "$CHECKER" server "$IP6_A" "$PORT" 2 >"$TMPD/s.out" 2>&1 &
spid=$!
TRACK_BGPIDS+=("$spid")
wait_for 10000 "the server listening on $IP6_A" grep -q '^listening' "$TMPD/s.out"

# client CASE ADDR [PORT]: must pass
client() {
	local rc=0
	log "client $1 to $2"
	rb timeout -k 5 60 "$CHECKER" client "$2" "${3:-$PORT}" "$1" >"$TMPD/c.out" 2>&1 || rc=$?
	sed 's/^/    client: /' "$TMPD/c.out"
	[ $rc = 0 ] || fail "client $1 to $2: exit $rc"
	vmatch "^client $1 done" "$(cat "$TMPD/c.out")" "client $1 finished"
}
client pdata "$IP6_A"
vmatch '^accept private data ok' "$(cat "$TMPD/c.out")" "the server's private data over IPv6"
client reject "$IP6_A"
vmatch '^event RDMA_CM_EVENT_REJECTED status 28' "$(cat "$TMPD/c.out")" "consumer reject over IPv6"
client nolistener "$IP6_A" $((PORT + 1))
client addrerror ::1
src=0
wait "$spid" || src=$?
sed 's/^/    server: /' "$TMPD/s.out"
[ $src = 0 ] || fail "server exit $src"
vmatch '^request private data ok' "$(cat "$TMPD/s.out")" "the client's private data over IPv6"

if command -v rping >/dev/null 2>&1; then
	log "rping -s -V -a $IP6_A / rping -c -V -v -C 200 -a $IP6_A"
	RP=7396
	va timeout -k 5 60 rping -s -V -a "$IP6_A" -p "$RP" -C 200 >"$TMPD/rp.s" 2>&1 &
	rpid=$!
	TRACK_BGPIDS+=("$rpid")
	rcm_wait_listen "$RP"
	crc=0
	vb timeout -k 5 60 rping -c -V -v -a "$IP6_A" -p "$RP" -C 200 >"$TMPD/rp.c" 2>&1 || crc=$?
	src=0
	wait "$rpid" || src=$?
	if [ "$crc" != 0 ] || [ "$src" != 0 ]; then
		fail "rping over IPv6: client exit $crc, server exit $src
--- client:
$(tail -n 20 "$TMPD/rp.c")
--- server:
$(cat "$TMPD/rp.s")"
	fi
	lines=$(grep -o 'rdma-ping-[0-9]*: ' "$TMPD/rp.c" | sort -u | wc -l)
	assert_eq 200 "$lines" "ping data lines of the client over IPv6"
else
	log "rping not installed (rdmacm-utils): the rping part is left out"
fi
log "PASS: rdma_cm over IPv6 EFI addresses"
