#!/bin/bash
# Two builds' efi-perf, alternated on one testbed: is a change faster?
# One testbed (docs/testbed.md: two hosts, one instance each, one path, the
# efid of NEW_BUILD), the server pinned to SERVER_CPU and the client to
# CLIENT_CPU as bench/vs-tcp.sh does; each round runs every TESTS × SIZES
# case once with BASE_BUILD's efi-perf (its libefi) and once with
# NEW_BUILD's, the order swapped every round, so that the machine's noise
# (a shared, loaded host) falls on both alike.  Prints each run as it ends,
# then the median and the range of RUNS runs per case and build, and the
# load average before and after.
#
#     sudo bench/ab.sh BASE_BUILD NEW_BUILD
#
# Environment: RUNS (5), DURATION seconds per run (3), SERVER_CPU (1),
# CLIENT_CPU (0), TESTS ("write_bw read_bw send_bw"), SIZES ("1M"), MTU
# (the kernel's 1500: every link's and efi0's, e.g. 9000), OFFLOADS (on:
# as bench/vs-tcp.sh's first table; off: its second).
# Needs what bench/vs-tcp.sh needs, less iperf3 and sockperf.
# shellcheck disable=SC2015 # "A && B || fail": fail exits, so it is if-then-else
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
[ $# = 2 ] || { echo "usage: $0 BASE_BUILD NEW_BUILD" >&2; exit 2; }
base_builddir=$(cd "$1" && pwd) || exit 2
top_builddir=$(cd "$2" && pwd) || exit 2
export top_builddir
: "${EFID:=$top_builddir/efid/efid}"
: "${EFICTL:=$top_builddir/efictl/efictl}"
# shellcheck source=tests/testbed/testbed.sh
. "$(dirname "$0")/../tests/testbed/testbed.sh"
tb_test_init ab
PERF_BASE=$base_builddir/tools/efi-perf/efi-perf
PERF_NEW=$top_builddir/tools/efi-perf/efi-perf
[ -x "$PERF_BASE" ] || fail "efi-perf not built at $PERF_BASE"
[ -x "$PERF_NEW" ] || fail "efi-perf not built at $PERF_NEW"

: "${RUNS:=5}" "${DURATION:=3}" "${SERVER_CPU:=1}" "${CLIENT_CPU:=0}"
: "${SIZES:=1M}" "${TESTS:=write_bw read_bw send_bw}" "${OFFLOADS:=on}"
[[ $RUNS =~ ^[1-9][0-9]*$ ]] || fail "RUNS: a positive integer, not '$RUNS'"
[[ $DURATION =~ ^[1-9][0-9]*$ ]] || fail "DURATION: whole seconds, not '$DURATION'"
for c in "$SERVER_CPU" "$CLIENT_CPU"; do
	[[ $c =~ ^[0-9]+$ ]] && [ "$c" -lt "$(nproc)" ] || fail "SERVER_CPU, CLIENT_CPU: 0..$(($(nproc) - 1)), not '$c'"
done
for t in $TESTS; do
	case $t in send_bw | write_bw | read_bw) ;; *) fail "TESTS: send_bw, write_bw, read_bw, not '$t'" ;; esac
done
for s in $SIZES; do
	[[ $s =~ ^[1-9][0-9]*[KMG]?$ ]] || fail "SIZES: efi-perf sizes (64K, 1M, 65536), not '$s'"
done
case $OFFLOADS in on | off) ;; *) fail "OFFLOADS: on or off, not '$OFFLOADS'" ;; esac
if [ -n "${MTU:-}" ]; then
	[[ $MTU =~ ^[0-9]+$ ]] && [ "$MTU" -ge 576 ] && [ "$MTU" -le 65535 ] || fail "MTU: 576..65535, not '$MTU'"
	TB_MTU=$MTU
fi

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
tb_up 2 1 1 on
tb_offloads "$OFFLOADS" || fail "offloads $OFFLOADS"
if [ "$OFFLOADS" = on ]; then
	tb_router_segments off || fail "router segments off"
else
	tb_router_segments on || fail "router segments on"
fi
IP_A=$(tb_addr 1 a)
LINK_MTU=$(tb_exec 2 a cat /sys/class/net/efi0/mtu) || fail "no MTU of efi0"
[ -z "${MTU:-}" ] || [ "$LINK_MTU" = "$MTU" ] || fail "efi0 has MTU $LINK_MTU, not $MTU"

# srv, cli, median, efi_perf, num, ratio
# shellcheck source=bench/pair.sh
. "$(dirname "$0")/pair.sh"

declare -A R=()
for ((i = 1; i <= RUNS; i++)); do
	order="base new"
	((i % 2 == 0)) && order="new base"
	for t in $TESTS; do
		for s in $SIZES; do
			for b in $order; do
				if [ "$b" = base ]; then EFI_PERF=$PERF_BASE; else EFI_PERF=$PERF_NEW; fi
				read -r bw _ _ <<<"$(efi_perf "$t" -s "$s" -D "$DURATION")"
				R[$b:$t:$s]+="${bw:-fail}"$'\n'
				log "round $i: $b $t -s $s: ${bw:-fail} Gb/s (load $(cut -d' ' -f1 /proc/loadavg))"
			done
		done
	done
done

# range: "min–max" of the numbers among the lines read
range() { grep -E '^[0-9.]+$' | sort -g | awk 'NR == 1 {lo = $1} {hi = $1} END {if (NR) printf "%s–%s", lo, hi; else printf "-"}'; }

echo
printf 'efi-perf, medians of %s runs of %s s, alternated; server pinned to CPU %s, client to CPU %s;\n' \
	"$RUNS" "$DURATION" "$SERVER_CPU" "$CLIENT_CPU"
printf 'efi0 MTU %s, offloads %s; load average %s before, %s after\n' "$LINK_MTU" "$OFFLOADS" \
	"$LOAD_BEFORE" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf 'base: %s\nnew:  %s\n' "$base_builddir" "$top_builddir"
printf '| %-9s | %-5s | %9s | %-15s | %9s | %-15s | %7s |\n' test size "base Gb/s" "base range" "new Gb/s" "new range" new/base
printf '%s\n' "|---|---|--:|---|--:|---|--:|"
for t in $TESTS; do
	for s in $SIZES; do
		mb=$(printf '%s' "${R[base:$t:$s]}" | median)
		mn=$(printf '%s' "${R[new:$t:$s]}" | median)
		printf '| %-9s | %-5s | %9s | %-15s | %9s | %-15s | %7s |\n' "$t" "$s" "$(num 3 "$mb")" \
			"$(printf '%s' "${R[base:$t:$s]}" | range)" "$(num 3 "$mn")" \
			"$(printf '%s' "${R[new:$t:$s]}" | range)" "$(ratio "$mn" "$mb")"
	done
done
