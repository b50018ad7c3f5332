#!/bin/bash
# efi-perf side by side with kernel baselines between the instances of two
# hosts (two efid, one bridge, as tests/data/t-dp-hosts.sh): send_lat 8 B
# against `sockperf ping-pong --tcp` (14 B, its smallest), write_bw 64 KiB and 1 MiB against
# iperf3 (TCP, same write sizes).  Medians of 3 runs of 3 s each.
#
#     sudo tools/efi-perf/compare.sh [BUILD_DIR]     (default: .)
#
# Needs root, iproute2, jq, sockperf and iperf3 (apt-get install sockperf
# iperf3).  Everything it creates is removed on exit.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
top_builddir=$(cd "${1:-.}" && pwd) || exit 2
export top_builddir
: "${EFID:=$top_builddir/efid/efid}"
: "${EFICTL:=$top_builddir/efictl/efictl}"
# shellcheck source=tests/data/lib.sh
. "$(dirname "$0")/../../tests/data/lib.sh"
dp_init cp
command -v sockperf >/dev/null || skip "sockperf is not installed"
command -v iperf3 >/dev/null || skip "iperf3 is not installed"
dp_two_hosts
RUNS=3

median() { sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

# efi_perf_num FIELD TEST ARGS...: one client run's JSON field.
efi_perf_num() {
	local field=$1 test=$2 spid out
	shift 2
	in_a timeout 60 "$EFI_PERF" "$test" >/dev/null 2>&1 &
	spid=$!
	out=$(in_b timeout 60 "$EFI_PERF" "$test" --json "$@" "$IP_A" 2>/dev/null)
	wait "$spid" 2>/dev/null
	jq -r ".results[0].$field" <<<"$out"
}

sockperf_p50() {
	local spid out
	# --tcp: the baseline EFI is held to is kernel TCP's ping-pong
	in_a timeout 30 sockperf server --tcp -i "$IP_A" -p 11111 >/dev/null 2>&1 &
	spid=$!
	sleep 0.3
	# 14 B: sockperf's smallest message (its own header)
	out=$(in_b timeout 30 sockperf ping-pong --tcp -i "$IP_A" -p 11111 -m 14 -t 3 2>&1)
	kill "$spid" 2>/dev/null
	wait "$spid" 2>/dev/null
	# "---> percentile 50.000 =   11.341": one way (round trip / 2)
	awk '/percentile 50.000 =/ {print $NF}' <<<"$out"
}

iperf3_gbps() {
	local len=$1 cc=$2 spid out
	in_a timeout 30 iperf3 -s -1 -B "$IP_A" >/dev/null 2>&1 &
	spid=$!
	sleep 0.3
	out=$(in_b timeout 30 iperf3 -c "$IP_A" -t 3 -l "$len" -C "$cc" --json 2>/dev/null)
	wait "$spid" 2>/dev/null
	jq -r '.end.sum_sent.bits_per_second / 1e9 * 1000 | round / 1000' <<<"$out"
}

declare -A R
for i in $(seq 1 $RUNS); do
	log "run $i of $RUNS"
	R[lat_efi]+="$(efi_perf_num t_typical_us send_lat -s 8 -D 3)"$'\n'
	R[lat_sock]+="$(sockperf_p50)"$'\n'
	R[bw64_efi]+="$(efi_perf_num bw_avg_gbps write_bw -s 65536 -D 3)"$'\n'
	R[bw64_tcp]+="$(iperf3_gbps 64K cubic)"$'\n'
	R[bw64_bbr]+="$(iperf3_gbps 64K bbr)"$'\n'
	R[bw1m_efi]+="$(efi_perf_num bw_avg_gbps write_bw -s 1M -D 3)"$'\n'
	R[bw1m_tcp]+="$(iperf3_gbps 1M cubic)"$'\n'
	R[bw1m_bbr]+="$(iperf3_gbps 1M bbr)"$'\n'
done
m() { printf '%s' "${R[$1]}" | grep -v '^$' | median; }
printf '\n%-42s %12s %12s %12s\n' "median of $RUNS (two hosts, veth + bridge)" "efi-perf" "TCP cubic" "TCP bbr"
printf '%-42s %12s %12s %12s\n' "latency 8 B (sockperf 14 B), p50 [usec]" "$(m lat_efi)" "$(m lat_sock)" "-"
printf '%-42s %12s %12s %12s\n' "bandwidth 64 KiB [Gb/s]" "$(m bw64_efi)" "$(m bw64_tcp)" "$(m bw64_bbr)"
printf '%-42s %12s %12s %12s\n' "bandwidth 1 MiB [Gb/s]" "$(m bw1m_efi)" "$(m bw1m_tcp)" "$(m bw1m_bbr)"
printf '(kernel: sockperf ping-pong --tcp, one-way p50, default congestion control;\n iperf3 with the same write size and the named congestion control; unpinned)\n'
