#!/bin/bash
# A path that fails in one direction only: host 1's busiest port drops
# everything it sends to the fabric (the answers), while what comes to it
# (the requests) still arrives, for 8 s under a bulk transfer and a
# ping-pong; the uplink's carrier stays up, so efid's path table says
# nothing.  Zero QP errors: suspicion must move the traffic off the path
# from the silence of its answers alone, and a probe after a timeout must
# not keep taking it (tests/unit/test_sack.c, timeout_probes_go_round_the_
# paths, holds that rule exactly; here it is the whole stack).  About 20 s,
# root.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/lossy/lib.sh
. "$(dirname "$0")/lib.sh"
lossy_init lo

tb_up 2 1 2 off
lossy_pair bulk bulk 18741 --qps 1 --size 65536 --window 16 --seconds 14 --warmup 1 --timeout 20
lossy_pair pp pingpong 18742 --size 8 --seconds 13 --timeout 20
lossy_wait_started bulk
lossy_wait_started pp
sleep 1
PORT=$(lossy_busiest_port 1)
[ -n "$PORT" ] || fail "no port of host 1 carries traffic"
log "$PORT drops everything host 1 sends through it for 8 s, from $(lossy_since_start bulk) s of the bulk client's time"
tb_loss "$PORT" 1 tx || fail "tb_loss $PORT 1 tx"
sleep 8
tb_loss "$PORT" 0 tx || fail "tb_loss $PORT 0 tx"
lossy_finish bulk
lossy_finish pp
log "one-way failure of $PORT: no QP error; bulk: longest gaps (ms@s) $(lossy_result bulk gaps_ms_at_s), $(lossy_result bulk total_Mbps) Mb/s; ping-pong: longest round trips (ms@s) $(lossy_result pp rtts_ms_at_s)"
log "PASS"
