#!/bin/bash
# Issue 4: two, then four QPs of RDMA Writes through one tbf bottleneck
# share it fairly (Jain's index of their throughputs >= 0.9), and a
# ping-pong through the same bottleneck meanwhile keeps a bounded latency:
# its p99 must stay under LOSSY_PP_P99_MS (50 ms; the queue alone holds
# 64 KB = 5 ms at the rate) and no round trip may take a second.  Prints
# the shares, the index and the latency idle and under load.
# One path, so every flow crosses the one bottleneck: tbf 100 Mbit/s, queue
# 64 KB, on the fabric's port towards host 1 (the Writes' direction).
# About 30 s, root.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/lossy/lib.sh
. "$(dirname "$0")/lib.sh"
lossy_init lj
RATE=${LOSSY_RATE:-100mbit}
QUEUE=${LOSSY_QUEUE:-64kb}
P99_MS=${LOSSY_PP_P99_MS:-50}
SECS=${LOSSY_FAIR_SECONDS:-10}

BAD=()

tb_up 2 1 1 off
tb_rate h1p0 "$RATE" "$QUEUE" rx || fail "tb_rate h1p0"
log "bottleneck: tbf $RATE, queue $QUEUE, into host 1"

lossy_pair idle pingpong 18750 --size 8 --seconds 2 --timeout 20
lossy_finish idle
log "ping-pong idle: p50 $(lossy_result idle p50_us) us, p99 $(lossy_result idle p99_us) us, max $(lossy_result idle max_ms) ms"

for n in 2 4; do
	lossy_pair "bulk$n" bulk $((18750 + n)) --qps "$n" --size 65536 --window 16 \
		--seconds "$SECS" --warmup 2 --timeout 20
	lossy_wait_started "bulk$n"
	sleep 2
	lossy_pair "pp$n" pingpong $((18760 + n)) --size 8 --seconds $((SECS - 4)) --timeout 20
	lossy_finish "pp$n"
	lossy_finish "bulk$n"
	sed -n 's/^FLOW /    /p' "$TMPD/bulk$n.client"
	jain=$(lossy_result "bulk$n" jain)
	p99=$(lossy_result "pp$n" p99_us)
	max=$(lossy_result "pp$n" max_ms)
	log "$n QPs: $(lossy_result "bulk$n" total_Mbps) Mb/s in all, Jain index $jain; ping-pong under load: p50 $(lossy_result "pp$n" p50_us) us, p99 $p99 us, max $max ms"
	# both runs first, then the verdict: the log shows both
	lossy_holds "$jain" '>=' 0.9 || BAD+=("$n QPs: Jain index $jain < 0.9;")
	lossy_holds "$p99" '<=' $((P99_MS * 1000)) || BAD+=("$n QPs: ping-pong p99 $p99 us > $P99_MS ms;")
	lossy_holds "$max" '<' 1000 || BAD+=("$n QPs: a ping-pong round trip took $max ms;")
done
[ ${#BAD[@]} = 0 ] || fail "${BAD[*]}"
