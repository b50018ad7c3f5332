# shellcheck shell=bash
# bench/pair.sh: what bench/lossy.sh and bench/vs-tcp.sh share, sourced
# after the testbed is up: a server in instance a of host 1, a client in
# instance a of host 2 (the client's data flows to the server), each pinned
# to its CPU, and one run of efi-perf and of iperf3 between them, plus the
# tables' arithmetic.
# Needs: tb_exec and wait_for (tests/testbed/testbed.sh), SERVER_CPU,
# CLIENT_CPU, DURATION (seconds per run), EFI_PERF, IP_A (the server's
# address).

srv() { tb_exec 1 a taskset -c "$SERVER_CPU" "$@"; }
cli() { tb_exec 2 a taskset -c "$CLIENT_CPU" "$@"; }
listening() { [ -n "$(tb_exec 1 a ss -Hltn "sport = :$1")" ]; }
not_listening() { ! listening "$1"; }
median() { grep -E '^[0-9.]+$' | sort -g | awk '{v[NR] = $1} END {print NR ? v[int((NR + 1) / 2)] : "fail"}'; }

# efi_perf TEST ARGS...: one run; "bw p50 p99" fields of its JSON (or
# nothing when it failed, e.g. retry counter exceeded under heavy loss)
efi_perf() {
	local test=$1 spid out
	shift
	srv timeout $((DURATION + 30)) "$EFI_PERF" "$test" >/dev/null 2>&1 &
	spid=$!
	out=$(cli timeout $((DURATION + 30)) "$EFI_PERF" "$test" --json "$@" "$IP_A" 2>/dev/null)
	wait "$spid" 2>/dev/null
	jq -r '.results[0] | "\(.bw_avg_gbps // "-") \(.t_typical_us // "-") \(.t_p99_us // "-")"' <<<"$out" 2>/dev/null
}

# efi_perf_lat TEST SERVER_ARGS ARGS...: one latency run (the server
# with SERVER_ARGS, e.g. -e, the client with ARGS); "p50 avg p99 p99.9" in
# microseconds from its JSON (or nothing when it failed)
efi_perf_lat() {
	local test=$1 sargs=$2 spid out
	shift 2
	# shellcheck disable=SC2086 # sargs: no option or a few words
	srv timeout $((DURATION + 30)) "$EFI_PERF" "$test" $sargs >/dev/null 2>&1 &
	spid=$!
	out=$(cli timeout $((DURATION + 30)) "$EFI_PERF" "$test" --json "$@" "$IP_A" 2>/dev/null)
	wait "$spid" 2>/dev/null
	jq -r '.results[0] | "\(.t_typical_us // "-") \(.t_avg_us // "-") \(.t_p99_us // "-") \(.t_p99_9_us // "-")"' \
		<<<"$out" 2>/dev/null
}

# iperf3_gbps CC: one run of iperf3 with that congestion control, 64 KiB writes
iperf3_gbps() {
	local spid out cc=$1
	srv timeout $((DURATION + 30)) iperf3 -s -1 -B "$IP_A" >/dev/null 2>&1 &
	spid=$!
	wait_for 10000 "iperf3 server" listening 5201
	out=$(cli timeout $((DURATION + 30)) iperf3 -c "$IP_A" -t "$DURATION" -l 64K -C "$cc" --json 2>/dev/null)
	wait "$spid" 2>/dev/null
	jq -r '.end.sum_received.bits_per_second / 1e9 * 1000 | round / 1000' <<<"$out" 2>/dev/null
}

# num DECIMALS VALUE: VALUE rounded, or as it is when not a number
num() { awk -v d="$1" -v v="$2" 'BEGIN {if (v ~ /^[0-9.]+$/) printf "%.*f", d, v; else printf "%s", v}'; }

# ratio A B: A / B to two decimals, "-" when either is not a number
ratio() {
	awk -v a="$1" -v b="$2" 'BEGIN {
		if (a !~ /^[0-9.]+$/ || b !~ /^[0-9.]+$/ || b == 0) print "-"; else printf "%.2f", a / b }'
}
