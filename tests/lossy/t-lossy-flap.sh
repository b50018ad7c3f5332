#!/bin/bash
# Issue 4: one path flaps (down 50 ms, up 50 ms) for 30 s under a bulk
# transfer and a ping-pong at once: zero QP errors.  The flapping path is
# the one the bulk flow uses when it starts.  Prints the longest gap between
# completions of each.  About 40 s (the 30 s are the issue's), root.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/lossy/lib.sh
. "$(dirname "$0")/lib.sh"
lossy_init lf
FLAP_S=${LOSSY_FLAP_SECONDS:-30}

tb_up 2 1 2 off
lossy_pair bulk bulk 18731 --qps 1 --size 65536 --window 16 --seconds $((FLAP_S + 4)) --warmup 1 --timeout 20
lossy_pair pp pingpong 18732 --size 8 --seconds $((FLAP_S + 3)) --timeout 20
lossy_wait_started bulk
lossy_wait_started pp
sleep 1
PORT=$(lossy_busiest_port 1)
[ -n "$PORT" ] || fail "no port of host 1 carries traffic"
log "flapping $PORT every 100 ms for $FLAP_S s from $(lossy_since_start bulk) s of the bulk client's time, $(lossy_since_start pp) s of the ping-pong's"
lossy_ports_reset 1
tb_flap "$PORT" 100 "$FLAP_S" || fail "tb_flap $PORT"
lossy_finish bulk
lossy_finish pp
lossy_log_ports 1
log "flap of $PORT: no QP error; bulk: longest gaps (ms@s) $(lossy_result bulk gaps_ms_at_s), $(lossy_result bulk total_Mbps) Mb/s; ping-pong: longest round trips (ms@s) $(lossy_result pp rtts_ms_at_s), p99 $(lossy_result pp p99_us) us"
