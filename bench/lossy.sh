#!/bin/bash
# efi-perf against kernel TCP (cubic and bbr) on the lossy testbed
# (docs/testbed.md): two hosts, each a namespace with its own efid and one
# instance, joined by two ECMP paths.  In each scenario it measures, between
# the same two instances and with the same CPU pinning:
#   write_bw 64 KiB (efi-perf)   against  iperf3 -C cubic and -C bbr, 64 KiB writes
#   send_lat 8 B (efi-perf)      against  sockperf ping-pong --tcp, 14 B
#                                          (its smallest), default CC
# and prints medians of RUNS short runs, EFI / TCP ratios, and the loss the
# dropper really applied.  Scenarios: loss 0, 0.1%, 1%, 5% on host 1's ports
# (both directions: each packet crosses one of them once); one path failed
# (h1p0 down); a bottleneck (tbf BOTTLENECK_RATE, queue BOTTLENECK_QUEUE) on
# the way into host 1, where the data goes.
# Two tables: first the instances' offloads as the kernel sets them (TCP as
# users run it: the headline), then the older per-packet setting
# (gso_max_segs 1 on efi0, which slows TCP's sender down; labelled so).
# Loss is per wire packet in both: the droppers sit where the routers have
# segmented the packets (the testbed's counters show segments = packets).
# Then failover: a path fails under a bulk transfer and under a ping-pong
# (lossy-test, tests/lossy: the port of host 1 the flow uses goes down
# mid-run); for each of FAILOVER_RUNS runs the longest pause between
# completions that began within a second of the failure, next to the
# longest of the same run before it (this machine's own noise).  The bar:
# no pause over 10 ms at the failure.
#
#     sudo bench/lossy.sh [BUILD_DIR]          (default: .)
#
# Environment: RUNS (3), DURATION seconds per run (2), SERVER_CPU (1),
# CLIENT_CPU (0), SCENARIOS (all: "clean loss0.1 loss1 loss5 pathdown
# bottleneck"), BOTTLENECK_RATE (200mbit), BOTTLENECK_QUEUE (50kb),
# TABLES ("on off": the offload settings, one table each), FAILOVER_RUNS (5).
# Needs root, iperf3, sockperf, clang or a built tests/testbed/bpf/loss.o,
# and tests/lossy/lossy-test (built here when missing).
# Everything it creates is removed on exit.
# shellcheck disable=SC2015 # "A && B || fail": fail exits, so it is if-then-else
# shellcheck disable=SC2059 # printf formats in variables are ours
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
top_builddir=$(cd "${1:-.}" && pwd) || exit 2
export top_builddir
: "${EFID:=$top_builddir/efid/efid}"
: "${EFICTL:=$top_builddir/efictl/efictl}"
: "${EFI_PERF:=$top_builddir/tools/efi-perf/efi-perf}"
[ -x "$top_builddir/tests/lossy/lossy-test" ] ||
	make -C "$top_builddir" tests/lossy/lossy-test >/dev/null || exit 2
# shellcheck source=tests/lossy/lib.sh
. "$(dirname "$0")/../tests/lossy/lib.sh"
lossy_init lb
command -v sockperf >/dev/null || skip "sockperf is not installed"
command -v iperf3 >/dev/null || skip "iperf3 is not installed"
[ -x "$EFI_PERF" ] || fail "efi-perf not built at $EFI_PERF"

: "${RUNS:=3}" "${DURATION:=2}" "${SERVER_CPU:=1}" "${CLIENT_CPU:=0}"
: "${SCENARIOS:=clean loss0.1 loss1 loss5 pathdown bottleneck}"
: "${BOTTLENECK_RATE:=200mbit}" "${BOTTLENECK_QUEUE:=50kb}" "${TABLES:=on off}"
: "${FAILOVER_RUNS:=5}"
PORTS="h1p0 h1p1"

tb_up 2 1 2 on
IP_A=$(tb_addr 1 a)
# iperf3 sets cubic on its socket; sockperf cannot, and a namespace other
# than the first may only default to an algorithm in
# tcp_allowed_congestion_control, which is the machine's to set: sockperf
# runs with the default, named in the output (in a ping-pong of one small
# message at a time the congestion window never limits anything).
SOCKPERF_CC=$(tb_exec 2 a cat /proc/sys/net/ipv4/tcp_congestion_control)

# srv, cli, listening, median, efi_perf, iperf3_gbps, num, ratio
# shellcheck source=bench/pair.sh
. "$(dirname "$0")/pair.sh"

# sockperf_lat: "p50 p99", one way (sockperf halves the round trip)
# The server is stopped by its command line: $! is the subshell of srv, and
# killing that alone left sockperf listening until its timeout, so the next
# run's server could not bind (and a client could ping the old one).
sockperf_lat() {
	local spid out pat="sockperf server --tcp -i $IP_A -p 11111"
	wait_for 10000 "port 11111 free" not_listening 11111
	srv timeout $((DURATION + 30)) sockperf server --tcp -i "$IP_A" -p 11111 >/dev/null 2>&1 &
	spid=$!
	wait_for 10000 "sockperf server" listening 11111
	out=$(cli timeout $((DURATION + 30)) sockperf ping-pong --tcp -i "$IP_A" -p 11111 -m 14 -t "$DURATION" 2>&1)
	pkill -f "$pat" 2>/dev/null
	wait "$spid" 2>/dev/null
	awk '/percentile 50.000 =/ {p50 = $NF} /percentile 99.000 =/ {p99 = $NF}
		END {if (p50 != "") print p50, p99}' <<<"$out"
}

scenario_set() {
	local port
	case $1 in
	clean) ;;
	loss*) for port in $PORTS; do tb_loss "$port" "${1#loss}%" || fail "loss ${1#loss}%"; done ;;
	pathdown) tb_link h1p0 down || fail "link h1p0 down" ;;
	bottleneck)
		for port in $PORTS; do
			tb_rate "$port" "$BOTTLENECK_RATE" "$BOTTLENECK_QUEUE" rx || fail "rate on $port"
		done ;;
	*) fail "unknown scenario '$1' (known: clean loss0.1 loss1 loss5 lossN pathdown bottleneck)" ;;
	esac
}

scenario_clear() {
	local port
	for port in $PORTS; do
		tb_loss "$port" 0 && tb_rate "$port" off && tb_link "$port" up || fail "clearing $port"
	done
}

scenario_label() {
	case $1 in
	clean) echo "no loss" ;;
	loss*) echo "loss ${1#loss}%" ;;
	pathdown) echo "one path down" ;;
	bottleneck) echo "tbf $BOTTLENECK_RATE q $BOTTLENECK_QUEUE" ;;
	esac
}

# effective_loss: dropped / seen over host 1's ports since the last reset
effective_loss() {
	local port d seen=0 drop=0 pk pd sg sd du
	for port in $PORTS; do
		for d in tx rx; do
			read -r pk pd sg sd du <<<"$(tb_stats "$port" "$d")"
			seen=$((seen + sg))
			drop=$((drop + sd))
		done
	done
	: "$pk$pd$du"
	awk -v d="$drop" -v s="$seen" 'BEGIN {printf "%.3f%%", s ? 100 * d / s : 0}'
}

# the table's rows (markdown)
ROWFMT='| %-22s | %7s | %6s | %9s | %8s | %5s | %8s | %5s | %9s | %8s | %5s | %9s | %8s | %5s |\n'

# tail_drops: packets the tbf bottlenecks of host 1's ports dropped so far
tail_drops() {
	local port n=0 d
	for port in $PORTS; do
		d=$(tc -n "$(tb_ns_fabric)" -s -j qdisc show dev "$port" root | jq '[.[] | select(.kind == "tbf") | .drops] | add // 0')
		n=$((n + ${d:-0}))
	done
	echo "$n"
}

declare -A ROW M

# table OFFLOADS: every scenario with the instances' offloads on or off;
# prints the table
table() {
	local offl=$1 sc port i k bw p50 p99
	tb_offloads "$offl" || fail "offloads $offl"
	for sc in $SCENARIOS; do
		scenario_set "$sc"
		for port in $PORTS; do
			tb_stats_reset "$port" tx && tb_stats_reset "$port" rx
		done
		declare -A R=()
		for ((i = 1; i <= RUNS; i++)); do
			log "offloads $offl, $(scenario_label "$sc"): run $i of $RUNS"
			read -r bw _ _ <<<"$(efi_perf write_bw -s 65536 -D "$DURATION")"
			R[bw_efi]+="${bw:-fail}"$'\n'
			R[bw_cubic]+="$(iperf3_gbps cubic)"$'\n'
			R[bw_bbr]+="$(iperf3_gbps bbr)"$'\n'
			read -r _ p50 p99 <<<"$(efi_perf send_lat -s 8 -D "$DURATION")"
			R[p50_efi]+="${p50:-fail}"$'\n'
			R[p99_efi]+="${p99:-fail}"$'\n'
			read -r p50 p99 <<<"$(sockperf_lat)"
			R[p50_tcp]+="${p50:-fail}"$'\n'
			R[p99_tcp]+="${p99:-fail}"$'\n'
		done
		for k in bw_efi bw_cubic bw_bbr p50_efi p50_tcp p99_efi p99_tcp; do
			M[$k]=$(printf '%s' "${R[$k]}" | median)
		done
		ROW[$sc]=$(printf "$ROWFMT" "$(scenario_label "$sc")" "$(effective_loss)" "$(tail_drops)" \
			"$(num 3 "${M[bw_efi]}")" "$(num 3 "${M[bw_cubic]}")" "$(ratio "${M[bw_efi]}" "${M[bw_cubic]}")" \
			"$(num 3 "${M[bw_bbr]}")" "$(ratio "${M[bw_efi]}" "${M[bw_bbr]}")" \
			"$(num 1 "${M[p50_efi]}")" "$(num 1 "${M[p50_tcp]}")" "$(ratio "${M[p50_efi]}" "${M[p50_tcp]}")" \
			"$(num 1 "${M[p99_efi]}")" "$(num 1 "${M[p99_tcp]}")" "$(ratio "${M[p99_efi]}" "${M[p99_tcp]}")")
		log "${ROW[$sc]}"
		unset R
		scenario_clear
	done
	if [ "$offl" = on ]; then
		printf '\nTCP as users run it: the instances'"'"' offloads as the kernel sets them (TSO/GSO on)\n'
	else
		printf '\nthe older per-packet setting: gso_max_segs 1 on efi0 (no super-packets leave an instance;\nthis slows TCP'"'"'s sender down: not how users run it)\n'
	fi
	printf 'medians of %s runs of %s s; server pinned to CPU %s, client to CPU %s;\n' \
		"$RUNS" "$DURATION" "$SERVER_CPU" "$CLIENT_CPU"
	printf 'iperf3 with cubic and with bbr, sockperf with the default congestion control (%s)\n' "$SOCKPERF_CC"
	printf "$ROWFMT" scenario "loss applied" "tbf drops" "write_bw EFI Gb/s" "TCP cubic Gb/s" "ratio" \
		"TCP bbr Gb/s" "ratio" "send_lat p50 EFI us" "TCP us" "ratio" "p99 EFI us" "TCP us" "ratio"
	printf '%s' "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|"
	printf '\n'
	for sc in $SCENARIOS; do
		printf '%s\n' "${ROW[$sc]}"
	done
}

for offl in $TABLES; do
	case $offl in on | off) ;; *) fail "TABLES: on and/or off, not '$offl'" ;; esac
	table "$offl"
done
tb_offloads on || fail "offloads on"
# failover MODE PORT ARGS...: one lossy-test run of MODE in which the busy
# port of host 1 fails after 2 s; prints "at before" (ms)
failover() {
	local mode=$1 lport=$2 port down from
	shift 2
	lossy_pair fo "$mode" "$lport" "$@" >/dev/null
	lossy_wait_started fo
	sleep 1.5
	port=$(lossy_busiest_port 1)
	down=$(lossy_since_start fo)
	tb_link "$port" down >/dev/null || fail "link $port down"
	lossy_finish fo >/dev/null
	tb_link "$port" up >/dev/null || fail "link $port up"
	from=$(awk -v t="$down" 'BEGIN {print t - 0.05}')
	echo "$(lossy_gap_within fo "$from" "$(awk -v t="$down" 'BEGIN {print t + 1}')") $(lossy_gap_within fo 1 "$from")"
}

declare -A FO=()
# The flows outlast the failure: finding the busiest port (bpftool reads of
# every port's counters) takes a few seconds after the 1.5 s settle.
FO_SECONDS=$((DURATION + 8))
for ((i = 1; i <= FAILOVER_RUNS; i++)); do
	log "failover: run $i of $FAILOVER_RUNS"
	read -r at before <<<"$(failover bulk 18801 --qps 1 --size 65536 --window 16 --seconds $FO_SECONDS --warmup 1 --timeout 20)"
	FO[bulk_at]+="$at"$'\n'
	FO[bulk_before]+="$before"$'\n'
	read -r at before <<<"$(failover pingpong 18802 --size 8 --seconds $FO_SECONDS --timeout 20)"
	FO[pp_at]+="$at"$'\n'
	FO[pp_before]+="$before"$'\n'
done
worst() { grep -E '^[0-9.]+$' | sort -g | tail -n 1; }

cat <<'EOF'
(write_bw: efi-perf write_bw 64 KiB vs iperf3 -C cubic / -C bbr -l 64K, Gb/s, ratio EFI/TCP:
 higher is better.  send_lat: efi-perf send_lat 8 B (median and p99 of one-way
 latency) vs sockperf ping-pong --tcp 14 B, microseconds, ratio
 EFI/TCP: lower is better.  "fail": no run finished (efi-perf gives up when its
 retry counter runs out).  loss applied: what the dropper dropped of what it saw
 on host 1's ports over the scenario, every run together; tbf drops: packets
 the bottleneck's queue dropped, every run together.)
EOF

printf '\nfailover: a path of host 1 fails mid-run (the one the flow uses), %s runs\n' "$FAILOVER_RUNS"
printf '| flow | longest pause at the failure, median ms | worst ms | longest pause before it (noise), median ms | worst ms |\n'
printf '|---|--:|--:|--:|--:|\n'
printf '| bulk write 64 KiB, window 16 | %s | %s | %s | %s |\n' \
	"$(printf '%s' "${FO[bulk_at]}" | median)" "$(printf '%s' "${FO[bulk_at]}" | worst)" \
	"$(printf '%s' "${FO[bulk_before]}" | median)" "$(printf '%s' "${FO[bulk_before]}" | worst)"
printf '| ping-pong 8 B (round trip) | %s | %s | %s | %s |\n' \
	"$(printf '%s' "${FO[pp_at]}" | median)" "$(printf '%s' "${FO[pp_at]}" | worst)" \
	"$(printf '%s' "${FO[pp_before]}" | median)" "$(printf '%s' "${FO[pp_before]}" | worst)"
echo "(pauses over 2 ms between completions, lossy-test; the bar is 10 ms at the failure)"
