#!/bin/bash
# EFI against kernel TCP and against raw UDP, on a clean network (issue 14):
# one command that prints, for the same two instances on the testbed
# (docs/testbed.md; two hosts, each a namespace with its own efid and one
# instance, joined by one path through the fabric), with the server pinned
# to SERVER_CPU and the client to CPU CLIENT_CPU for every program:
#   - the raw-UDP limit: bench/udp-limit, one socket each way: UDP_SEGMENT
#     (GSO) sends of 64 KB made of 1472-byte datagrams against a UDP_GRO
#     receiver (what it received, from its first datagram to its last), and
#     an 8-byte ping-pong spinning on non-blocking sockets (half round trip),
#     and (with the events row) the same with both sides in epoll_wait: the
#     kernel's wake-up cost alone, the baseline of EFI's event mode;
#   - kernel TCP: iperf3 -C cubic and -C bbr, 64 KiB writes;
#   - EFI: efi-perf TESTS at SIZES (Gb/s);
#   - latency, 8 B, half the round trip (p50, average, p99, p99.9): kernel
#     TCP (sockperf ping-pong), efi-perf send_lat, write_lat, read_lat and
#     atomic_lat polled, send_lat with events (-e: completion channel), and
#     perftest's ib_send_lat through efi-run (when perftest is installed);
#   - perftest's ib_write_bw -s 1M through efi-run beside efi-perf's (when
#     perftest is installed and TESTS is not "none")
# and prints medians of RUNS runs with the ratios EFI/cubic, EFI/bbr and
# EFI/UDP limit (EFI/UDP for latency).  The runs are interleaved: round r
# runs every case once, so the machine's noise falls on all of them alike.
# One table per offload setting in TABLES: "on", the instances' offloads
# as the kernel sets them and the routers forwarding super-packets whole,
# as one bridge does (TCP as users run it, the demo's layout: the
# headline), then "off", the per-packet setting of bench/lossy.sh (gso_max_segs 1 on the
# instances' efi0: no super-packets leave an instance, for TCP, UDP GSO and
# EFI alike; it slows TCP's sender down, labelled so).
#
#     sudo bench/vs-tcp.sh [BUILD_DIR]          (default: .)
#
# Environment: RUNS (5), DURATION seconds per run (3), SERVER_CPU (1),
# CLIENT_CPU (0), SIZES ("64K 1M 8M": efi-perf -s), TESTS ("write_bw
# read_bw send_bw": efi-perf bandwidth tests; "none": latency only), LATENCY
# ("all": every latency row; "basic": the UDP and EFI send_lat rows only),
# TABLES ("on off": the offload settings, one table each), MTU (the kernel's
# 1500: every link's and efi0's MTU, e.g. 9000 for jumbo frames; UDP limit
# and TCP then use it too, udp-limit with datagrams of MTU - 28).  About 5 minutes
# per table with RUNS=3 DURATION=2.
# Needs root, iperf3, sockperf, jq and the testbed's tools (ip, tc, bpftool, nsenter;
# clang or a built tests/testbed/bpf/loss.o); builds bench/udp-limit when
# missing.  Everything it creates is removed on exit; it only sets addresses
# inside the namespaces it created.
# shellcheck disable=SC2015 # "A && B || fail": fail exits, so it is if-then-else
# shellcheck disable=SC2059 # printf formats in variables are ours
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
top_builddir=$(cd "${1:-.}" && pwd) || exit 2
export top_builddir
: "${EFID:=$top_builddir/efid/efid}"
: "${EFICTL:=$top_builddir/efictl/efictl}"
: "${EFI_PERF:=$top_builddir/tools/efi-perf/efi-perf}"
: "${UDP_LIMIT:=$top_builddir/bench/udp-limit}"
[ -x "$UDP_LIMIT" ] || make -C "$top_builddir" bench/udp-limit >/dev/null || exit 2
# shellcheck source=tests/testbed/testbed.sh
. "$(dirname "$0")/../tests/testbed/testbed.sh"
tb_test_init vt
command -v iperf3 >/dev/null || skip "iperf3 is not installed"
: "${LATENCY:=all}"
case $LATENCY in all | basic) ;; *) fail "LATENCY: all or basic, not '$LATENCY'" ;; esac
[ "$LATENCY" = all ] && { command -v sockperf >/dev/null || skip "sockperf is not installed (apt-get install sockperf)"; }
: "${EFI_RUN:=$top_builddir/verbs/efi-run}"
: "${EFI_VERBS_LIB:=$top_builddir/verbs/.libs/libefi-verbs.so}"
export EFI_VERBS_LIB
# the uninstalled libefi-verbs.so finds the uninstalled libefi.so here
export LD_LIBRARY_PATH="$top_builddir/libefi/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
HAVE_PERFTEST=0
command -v ib_send_lat >/dev/null && [ -x "$EFI_RUN" ] && HAVE_PERFTEST=1
[ -x "$EFI_PERF" ] || fail "efi-perf not built at $EFI_PERF"
[ -x "$UDP_LIMIT" ] || fail "udp-limit not built at $UDP_LIMIT"

: "${RUNS:=5}" "${DURATION:=3}" "${SERVER_CPU:=1}" "${CLIENT_CPU:=0}"
: "${SIZES:=64K 1M 8M}" "${TESTS:=write_bw read_bw send_bw}" "${TABLES:=on off}"
[[ $RUNS =~ ^[1-9][0-9]*$ ]] || fail "RUNS: a positive integer, not '$RUNS'"
[[ $DURATION =~ ^[1-9][0-9]*$ ]] || fail "DURATION: whole seconds, not '$DURATION'"
for c in "$SERVER_CPU" "$CLIENT_CPU"; do
	[[ $c =~ ^[0-9]+$ ]] && [ "$c" -lt "$(nproc)" ] || fail "SERVER_CPU, CLIENT_CPU: 0..$(($(nproc) - 1)), not '$c'"
done
for s in $SIZES; do
	[[ $s =~ ^[1-9][0-9]*[KMG]?$ ]] || fail "SIZES: efi-perf sizes (64K, 1M, 65536), not '$s'"
done
[ "$TESTS" = none ] && TESTS=""
for t in $TESTS; do
	case $t in send_bw | write_bw | read_bw) ;; *) fail "TESTS: send_bw, write_bw, read_bw or none, not '$t'" ;; esac
done
for offl in $TABLES; do
	case $offl in on | off) ;; *) fail "TABLES: on and/or off, not '$offl'" ;; esac
done
[ -n "$SIZES" ] && [ -n "$TABLES" ] || fail "SIZES and TABLES must not be empty"
UDP_PORT=19001 PING_PORT=19002 SOCKPERF_PORT=19003 PERFTEST_PORT=19004

if [ -n "${MTU:-}" ]; then
	[[ $MTU =~ ^[0-9]+$ ]] && [ "$MTU" -ge 576 ] && [ "$MTU" -le 65535 ] || fail "MTU: 576..65535, not '$MTU'"
	TB_MTU=$MTU
fi
WANT_MTU=${MTU:-}
tb_up 2 1 1 on
IP_A=$(tb_addr 1 a)
# The datagrams udp-limit sends: the largest that pass efi0 unfragmented
# (1472 on a 1500-byte MTU).
MTU=$(tb_exec 2 a cat /sys/class/net/efi0/mtu) || fail "no MTU of efi0"
[ -z "$WANT_MTU" ] || [ "$MTU" = "$WANT_MTU" ] || fail "efi0 has MTU $MTU, not $WANT_MTU"
SEG=$((MTU - 28))

# srv, cli, listening, median, efi_perf, iperf3_gbps, num, ratio
# shellcheck source=bench/pair.sh
. "$(dirname "$0")/pair.sh"
bound_udp() { [ -n "$(tb_exec 1 a ss -Hlun "sport = :$1")" ]; }

# udp_bw: one run of udp-limit send against udp-limit recv: "received sent"
# Gb/s (the receiver's is the limit; the sender's shows what the receiving
# socket dropped).  The receiver ends 1 s after the last datagram.
udp_bw() {
	local spid sent got
	srv timeout $((DURATION + 70)) "$UDP_LIMIT" recv "$IP_A" "$UDP_PORT" >"$TMPD/udp.recv" 2>&1 &
	spid=$!
	wait_for 10000 "udp-limit recv" bound_udp "$UDP_PORT"
	sent=$(cli timeout $((DURATION + 30)) "$UDP_LIMIT" send "$IP_A" "$UDP_PORT" "$DURATION" "$SEG" 2>/dev/null |
		awk '$1 == "sent" {print $5}')
	wait "$spid" 2>/dev/null || { echo "fail ${sent:-fail}"; return; }
	got=$(awk '$1 == "bytes" {print $8}' "$TMPD/udp.recv")
	echo "${got:-fail} ${sent:-fail}"
}

# udp_lat [epoll]: one ping-pong run of udp-limit: "p50 p99" of the half
# round trip; with epoll, both sides wait in epoll_wait instead of spinning
udp_lat() {
	local spid out
	srv timeout $((DURATION + 70)) "$UDP_LIMIT" pong "$IP_A" "$PING_PORT" "$@" >/dev/null 2>&1 &
	spid=$!
	wait_for 10000 "udp-limit pong" bound_udp "$PING_PORT"
	out=$(cli timeout $((DURATION + 30)) "$UDP_LIMIT" ping "$IP_A" "$PING_PORT" "$DURATION" "$@" 2>/dev/null)
	wait "$spid" 2>/dev/null
	awk '$1 == "p50_us" {print $2, $4}' <<<"$out"
}

# sock_lat: one sockperf TCP ping-pong of 14 B (its smallest message): "p50 avg p99 p99.9" of the
# half round trip (sockperf's "latency"), microseconds
sock_lat() {
	local spid out
	srv timeout $((DURATION + 70)) sockperf sr --tcp -i "$IP_A" -p "$SOCKPERF_PORT" >/dev/null 2>&1 &
	spid=$!
	wait_for 10000 "sockperf server" listening "$SOCKPERF_PORT"
	out=$(cli timeout $((DURATION + 30)) sockperf pp --tcp -i "$IP_A" -p "$SOCKPERF_PORT" -m 14 \
		-t "$DURATION" 2>&1)
	kill "$spid" 2>/dev/null
	wait "$spid" 2>/dev/null
	awk '/avg-latency=/ {sub(/.*avg-latency=/, ""); avg = $1 + 0}
	     /percentile 50.000 =/ {p50 = $NF} /percentile 99.000 =/ {p99 = $NF}
	     /percentile 99.900 =/ {p999 = $NF}
	     END {if (p50 != "") print p50, avg, p99, p999}' <<<"$out"
}

# perftest_lat: one ib_send_lat of 8 B through efi-run, polled: "p50 avg
# p99 p99.9" (perftest's t_typical, t_avg and percentiles), microseconds
perftest_lat() {
	local spid out n=$((DURATION * 50000))
	srv timeout $((DURATION + 70)) "$EFI_RUN" ib_send_lat -x 0 -s 8 -n "$n" -p "$PERFTEST_PORT" \
		>/dev/null 2>&1 &
	spid=$!
	wait_for 10000 "ib_send_lat server" listening "$PERFTEST_PORT"
	out=$(cli timeout $((DURATION + 60)) "$EFI_RUN" ib_send_lat -x 0 -s 8 -n "$n" -p "$PERFTEST_PORT" \
		"$IP_A" 2>/dev/null)
	wait "$spid" 2>/dev/null
	awk -v n="$n" '$1 == 8 && $2 == n {print $5, $6, $8, $9}' <<<"$out"
}

# perftest_bw: one ib_write_bw -s 1M run through efi-run (what a verbs
# application gets): its average, Gb/s
perftest_bw() {
	local spid out
	srv timeout $((DURATION + 70)) "$EFI_RUN" ib_write_bw -x 0 -s 1048576 -D "$DURATION" \
		--report_gbits -p "$PERFTEST_PORT" >/dev/null 2>&1 &
	spid=$!
	wait_for 10000 "ib_write_bw server" listening "$PERFTEST_PORT"
	out=$(cli timeout $((DURATION + 60)) "$EFI_RUN" ib_write_bw -x 0 -s 1048576 -D "$DURATION" \
		--report_gbits -p "$PERFTEST_PORT" "$IP_A" 2>/dev/null)
	wait "$spid" 2>/dev/null
	awk '$1 == 1048576 {print $4}' <<<"$out"
}

ROWFMT='| %-26s | %-36s | %8s | %9s | %7s | %13s |\n'
LATFMT='| %-26s | %-31s | %7s | %7s | %7s | %7s | %7s | %7s | %7s | %7s |\n'

# table OFFLOADS: every case RUNS times, round by round, with the
# instances' offloads on or off; prints the tables
table() {
	local offl=$1 i t s k bw p50 avg p99 p999 got sent out how
	declare -A R=() M=()
	tb_offloads "$offl" || fail "offloads $offl"
	# on: super-packets cross the routers whole, as on one bridge (the
	# demo's layout, where the raw-UDP limit is the wire's); off: every
	# hop carries wire-sized packets, as bench/lossy.sh
	if [ "$offl" = on ]; then
		tb_router_segments off || fail "router segments off"
	else
		tb_router_segments on || fail "router segments on"
	fi
	for ((i = 1; i <= RUNS; i++)); do
		log "offloads $offl: round $i of $RUNS"
		read -r got sent <<<"$(udp_bw)"
		R[udp]+="$got"$'\n'
		R[udp_sent]+="$sent"$'\n'
		R[cubic]+="$(iperf3_gbps cubic)"$'\n'
		R[bbr]+="$(iperf3_gbps bbr)"$'\n'
		for t in $TESTS; do
			for s in $SIZES; do
				read -r bw _ _ <<<"$(efi_perf "$t" -s "$s" -D "$DURATION")"
				R[$t:$s]+="${bw:-fail}"$'\n'
			done
		done
		if [ "$HAVE_PERFTEST" = 1 ] && [ "$TESTS" != none ]; then
			bw=$(perftest_bw)
			R[perftest_bw]+="${bw:-fail}"$'\n'
		fi
		read -r p50 p99 <<<"$(udp_lat)"
		R[udp:p50]+="${p50:-fail}"$'\n'
		R[udp:p99]+="${p99:-fail}"$'\n'
		if [[ " $LATROWS " == *" events "* ]]; then
			read -r p50 p99 <<<"$(udp_lat epoll)"
			R[udpev:p50]+="${p50:-fail}"$'\n'
			R[udpev:p99]+="${p99:-fail}"$'\n'
		fi
		for k in $LATROWS; do
			case $k in
			tcp) out=$(sock_lat) ;;
			perftest) out=$(perftest_lat) ;;
			events) out=$(efi_perf_lat send_lat -e -s 8 -D "$DURATION" -e) ;;
			*) out=$(efi_perf_lat "$k" "" -s 8 -D "$DURATION") ;;
			esac
			read -r p50 avg p99 p999 <<<"$out"
			R[$k:p50]+="${p50:-fail}"$'\n'
			R[$k:avg]+="${avg:-fail}"$'\n'
			R[$k:p99]+="${p99:-fail}"$'\n'
			R[$k:p999]+="${p999:-fail}"$'\n'
		done
		log "  UDP $got (sent $sent), cubic $(printf '%s' "${R[cubic]}" | tail -n 1)," \
			"bbr $(printf '%s' "${R[bbr]}" | tail -n 1) Gb/s;" \
			"EFI$(for t in $TESTS; do for s in $SIZES; do printf ' %s %s %s' "$t" "$s" \
				"$(printf '%s' "${R[$t:$s]}" | tail -n 1)"; done; done);" \
			"ping-pong p50/p99 us:$(for k in udp $LATROWS; do printf ' %s %s/%s' "$k" \
				"$(printf '%s' "${R[$k:p50]}" | tail -n 1)" "$(printf '%s' "${R[$k:p99]}" | tail -n 1)"; done)"
	done
	for k in "${!R[@]}"; do
		M[$k]=$(printf '%s' "${R[$k]}" | median)
	done

	echo
	if [ "$offl" = on ]; then
		printf 'offloads on: the instances'"'"' offloads as the kernel sets them (TSO/GSO on; TCP as users run it),\nsuper-packets forwarded whole (as on one bridge)\n'
	else
		printf 'offloads off: the per-packet setting, gso_max_segs 1 on efi0 and every router port (no super-packets leave an\ninstance, for TCP, UDP GSO and EFI alike; this slows TCP'"'"'s sender down: not how users run it)\n'
	fi
	printf 'medians of %s runs of %s s, interleaved; server pinned to CPU %s, client to CPU %s;\n' \
		"$RUNS" "$DURATION" "$SERVER_CPU" "$CLIENT_CPU"
	printf 'instance a of host 2 -> instance a of host 1 (%s), one path, efi0 MTU %s\n' "$IP_A" "$MTU"
	printf "$ROWFMT" "case" "how" "Gb/s" "EFI/cubic" "EFI/bbr" "EFI/UDP limit"
	printf '%s\n' "|---|---|--:|--:|--:|--:|"
	printf "$ROWFMT" "UDP limit (udp-limit)" "GSO 64 KB of $SEG B, GRO; sent $(num 3 "${M[udp_sent]}")" \
		"$(num 3 "${M[udp]}")" "" "" ""
	printf "$ROWFMT" "TCP cubic (iperf3)" "-C cubic -l 64K" "$(num 3 "${M[cubic]}")" "" "" ""
	printf "$ROWFMT" "TCP bbr (iperf3)" "-C bbr -l 64K" "$(num 3 "${M[bbr]}")" "" "" ""
	for t in $TESTS; do
		for s in $SIZES; do
			k=$t:$s
			printf "$ROWFMT" "EFI $t" "efi-perf -s $s" "$(num 3 "${M[$k]}")" \
				"$(ratio "${M[$k]}" "${M[cubic]}")" "$(ratio "${M[$k]}" "${M[bbr]}")" \
				"$(ratio "${M[$k]}" "${M[udp]}")"
		done
	done
	if [ -n "${M[perftest_bw]:-}" ]; then
		local vs=""
		[ -n "${M[write_bw:1M]:-}" ] && vs=" ($(ratio "${M[perftest_bw]}" "${M[write_bw:1M]}") of efi-perf)"
		printf "$ROWFMT" "EFI ib_write_bw" "perftest -s 1M via efi-run$vs" "$(num 3 "${M[perftest_bw]}")" \
			"$(ratio "${M[perftest_bw]}" "${M[cubic]}")" "$(ratio "${M[perftest_bw]}" "${M[bbr]}")" \
			"$(ratio "${M[perftest_bw]}" "${M[udp]}")"
	fi
	echo
	printf "$LATFMT" "8 B ping-pong, half RTT" "how" "p50 us" "avg us" "p99 us" "p99.9 us" \
		"p50/TCP" "avg/TCP" "p99/TCP" "p50/UDP"
	printf '%s\n' "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|"
	printf "$LATFMT" "UDP limit (udp-limit)" "ping/pong, spinning" "$(num 2 "${M[udp:p50]}")" "" \
		"$(num 2 "${M[udp:p99]}")" "" "" "" "" ""
	[ -n "${M[udpev:p50]:-}" ] &&
		printf "$LATFMT" "UDP, woken (udp-limit)" "ping/pong, epoll_wait" "$(num 2 "${M[udpev:p50]}")" "" \
			"$(num 2 "${M[udpev:p99]}")" "" "" "" "" "$(ratio "${M[udpev:p50]}" "${M[udp:p50]}")"
	for k in $LATROWS; do
		case $k in
		tcp) printf "$LATFMT" "TCP (sockperf)" "ping-pong --tcp -m 14 (its min)" "$(num 2 "${M[tcp:p50]}")" \
			"$(num 2 "${M[tcp:avg]}")" "$(num 2 "${M[tcp:p99]}")" "$(num 2 "${M[tcp:p999]}")" \
			"" "" "" "$(ratio "${M[tcp:p50]}" "${M[udp:p50]}")"
			continue ;;
		perftest) t="EFI ib_send_lat"; how="perftest -s 8 via efi-run" ;;
		events)
			t="EFI send_lat, events"; how="efi-perf -s 8 -e"
			# against the woken UDP baseline: both pay the kernel's wake-up
			printf "$LATFMT" "$t" "$how" "$(num 2 "${M[$k:p50]}")" "$(num 2 "${M[$k:avg]}")" \
				"$(num 2 "${M[$k:p99]}")" "$(num 2 "${M[$k:p999]}")" \
				"$(ratio "${M[$k:p50]}" "${M[tcp:p50]:-}")" "$(ratio "${M[$k:avg]}" "${M[tcp:avg]:-}")" \
				"$(ratio "${M[$k:p99]}" "${M[tcp:p99]:-}")" "$(ratio "${M[$k:p50]}" "${M[udpev:p50]}")*"
			continue ;;
		*) t="EFI $k"; how="efi-perf -s 8, polled" ;;
		esac
		printf "$LATFMT" "$t" "$how" "$(num 2 "${M[$k:p50]}")" "$(num 2 "${M[$k:avg]}")" \
			"$(num 2 "${M[$k:p99]}")" "$(num 2 "${M[$k:p999]}")" \
			"$(ratio "${M[$k:p50]}" "${M[tcp:p50]:-}")" "$(ratio "${M[$k:avg]}" "${M[tcp:avg]:-}")" \
			"$(ratio "${M[$k:p99]}" "${M[tcp:p99]:-}")" "$(ratio "${M[$k:p50]}" "${M[udp:p50]}")"
	done
	echo
}

# The latency rows (keys of R and M)
if [ "$LATENCY" = all ]; then
	LATROWS="tcp send_lat write_lat read_lat atomic_lat events"
	[ "$HAVE_PERFTEST" = 1 ] && LATROWS+=" perftest"
else
	LATROWS="send_lat"
fi

for offl in $TABLES; do
	table "$offl"
done
cat <<'EOF'
(Gb/s: higher is better; the ratios are EFI's median over the baseline's.
 UDP limit: bench/udp-limit, what one receiving socket got from one sending
 socket ("sent": what the sender pushed; more means the receiving socket
 dropped the rest).  Latency: half the round trip, microseconds, lower is
 better; *: the events row's p50/UDP is against the woken UDP ping-pong
 (both sides in epoll_wait), since both pay the kernel's wake-up.  "fail":
 no run gave a number.)
EOF
