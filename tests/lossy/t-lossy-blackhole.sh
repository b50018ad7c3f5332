#!/bin/bash
# Every path of a bulk transfer black-holed at once, both links up: the
# fabric drops every datagram of the client's four-tuples toward the
# server's lane 0 (what an ECMP fabric does when it hashed all of a
# connection's lanes onto one link that silently drops: t-lossy-flap's
# failure under load).  The QP must find four-tuples that work, by sending
# its probes to the server's other lanes, within its 2 s dead-peer bound:
# zero QP errors, the transfer goes on, and the client's paths show which
# peer lane they moved to.  About 20 s, root.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/lossy/lib.sh
. "$(dirname "$0")/lib.sh"
lossy_init lb
HOLE_S=${LOSSY_HOLE_SECONDS:-4}

tb_up 2 1 2 off
lossy_pair bulk bulk 18741 --qps 1 --size 65536 --window 16 --seconds $((HOLE_S + 6)) --warmup 1 --timeout 20
lossy_wait_started bulk
sleep 1

# The server's lane-0 port: the lowest UDP port its process has bound
# (lane L is PortBase + L × 4096 + its slot: docs/wire-format.md).
lane0_port() {
	ip netns exec "$(tb_ns 1 a)" ss -uanpH 2>/dev/null | awk '/lossy-test/ {n = split($4, a, ":"); print a[n]}' |
		sort -n | head -n 1
}
PORT0=$(lane0_port)
[ -n "$PORT0" ] || fail "the bulk server has no UDP socket in $(tb_ns 1 a)"

# black-hole it where the client's datagrams enter the fabric, on both
# paths (the droppers of host 2's ports, tx), so that every path of the
# client dies whichever link it hashes to
hole() {
	local p
	for ((p = 0; p < TB_PATHS; p++)); do
		tb_hole "h2p$p" "$1" tx || return 1
	done
}
dropped() {
	local p
	for ((p = 0; p < TB_PATHS; p++)); do tb_stats "h2p$p" tx; done | awk '{s += $2} END {print s + 0}'
}
before=$(dropped)
hole "$PORT0" || fail "tb_hole on host 2's ports failed"
log "every datagram to the server's lane 0 (UDP port $PORT0) black-holed on both paths for $HOLE_S s, from $(lossy_since_start bulk) s of the bulk client's time"
sleep "$HOLE_S"
hole 0 || fail "tb_hole off failed"
n=$(($(dropped) - before))
log "the black hole took $n datagrams"
[ "$n" -gt 0 ] || fail "the black hole took nothing: the bulk flow was not sending to port $PORT0"
lossy_finish bulk
moved=$(grep -c '^PATH requester.* peer_lane=[1-9]' "$TMPD/bulk.client" || true)
[ "$moved" -gt 0 ] || fail "no path of the client moved to another lane of the server, yet no QP error"
log "black hole: no QP error; $moved path(s) moved to another lane of the server; $(lossy_result bulk total_Mbps) Mb/s, longest gaps (ms@s) $(lossy_result bulk gaps_ms_at_s)"
