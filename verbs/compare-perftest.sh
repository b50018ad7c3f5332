#!/bin/bash
# compare-perftest.sh: perftest over EFI (efi-run) next to efi-perf, in the
# same run, between the instances of two hosts: ib_send_lat -s 8 vs
# efi-perf send_lat -s 8, ib_write_bw -s 65536 and -s 1048576 vs efi-perf
# write_bw at the same sizes (and ib_write_lat vs efi-perf write_lat).  Run by hand from a build
# directory, as root:
#     sudo env top_builddir=$PWD top_srcdir=/path/to/src \
#          bash /path/to/src/verbs/compare-perftest.sh [ITERATIONS]
# Prints each tool's result row; no pass/fail (speeds are not asserted).
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
: "${top_srcdir:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${top_builddir:=.}"
: "${EFID:=$top_builddir/efid/efid}"
: "${EFICTL:=$top_builddir/efictl/efictl}"
export top_srcdir top_builddir EFID EFICTL
# shellcheck source=tests/verbs/lib.sh
. "$top_srcdir/tests/verbs/lib.sh"
ITERS=${1:-5000}
BW_ITERS=$(((ITERS + 9) / 10))	# of 1 MiB
verbs_init vx
verbs_need ib_send_lat perftest
dp_two_hosts

PORT=18600
# pair NAME SERVER-CMD... -- CLIENT-CMD...: prints the client's output
pair() {
	local name=$1 s=() c=() spid
	shift
	while [ "$1" != -- ]; do s+=("$1"); shift; done
	shift
	c=("$@")
	"${s[@]}" >"$TMPD/$name.s" 2>&1 &
	spid=$!
	TRACK_BGPIDS+=("$spid")
	verbs_wait_listen "$A" "$PORT"
	"${c[@]}" >"$TMPD/$name.c" 2>&1 || echo "$name: client failed"
	wait "$spid" || echo "$name: server failed"
	PORT=$((PORT + 1))
}
row() { grep -E "^ *$1 +$2 " "$TMPD/$3.c" | head -1; }

pair pt_send_lat va ib_send_lat -x 0 -p "$PORT" -s 8 -n "$ITERS" -- \
	vb ib_send_lat -x 0 -p "$PORT" -s 8 -n "$ITERS" "$IP_A"
pair ep_send_lat in_a "$EFI_PERF" send_lat -p "$PORT" -- \
	in_b "$EFI_PERF" send_lat -p "$PORT" -s 8 -n "$ITERS" "$IP_A"
# efi-perf without inline data, as perftest sends on a device it does not know
pair ep_send_lat_noinl in_a "$EFI_PERF" send_lat -I 0 -p "$PORT" -- \
	in_b "$EFI_PERF" send_lat -I 0 -p "$PORT" -s 8 -n "$ITERS" "$IP_A"
pair pt_write_bw va ib_write_bw -x 0 --report_gbits -p "$PORT" -s 65536 -n "$ITERS" -- \
	vb ib_write_bw -x 0 --report_gbits -p "$PORT" -s 65536 -n "$ITERS" "$IP_A"
pair ep_write_bw in_a "$EFI_PERF" write_bw -p "$PORT" -- \
	in_b "$EFI_PERF" write_bw -p "$PORT" -s 65536 -n "$ITERS" "$IP_A"
pair pt_write_bw_1m va ib_write_bw -x 0 --report_gbits -p "$PORT" -s 1048576 -n "$BW_ITERS" -- \
	vb ib_write_bw -x 0 --report_gbits -p "$PORT" -s 1048576 -n "$BW_ITERS" "$IP_A"
pair ep_write_bw_1m in_a "$EFI_PERF" write_bw -p "$PORT" -- \
	in_b "$EFI_PERF" write_bw -p "$PORT" -s 1048576 -n "$BW_ITERS" "$IP_A"
pair pt_write_lat va ib_write_lat -x 0 -p "$PORT" -s 8 -n "$ITERS" -- \
	vb ib_write_lat -x 0 -p "$PORT" -s 8 -n "$ITERS" "$IP_A"
pair ep_write_lat in_a "$EFI_PERF" write_lat -p "$PORT" -- \
	in_b "$EFI_PERF" write_lat -p "$PORT" -s 8 -n "$ITERS" "$IP_A"

echo "latency: #bytes #iterations t_min t_max t_typical t_avg t_stdev p99 p99.9 [usec]"
printf '  %-28s %s\n' "perftest ib_send_lat -s 8" "$(row 8 "$ITERS" pt_send_lat)"
printf '  %-28s %s\n' "efi-perf send_lat -s 8" "$(row 8 "$ITERS" ep_send_lat)"
printf '  %-28s %s\n' "efi-perf send_lat -s 8 -I 0" "$(row 8 "$ITERS" ep_send_lat_noinl)"
printf '  %-28s %s\n' "perftest ib_write_lat -s 8" "$(row 8 "$ITERS" pt_write_lat)"
printf '  %-28s %s\n' "efi-perf write_lat -s 8" "$(row 8 "$ITERS" ep_write_lat)"
echo "bandwidth: #bytes #iterations BW peak, BW average [Gb/s], message rate [Mpps]"
printf '  %-28s %s\n' "perftest ib_write_bw 64 KiB" "$(row 65536 "$ITERS" pt_write_bw)"
printf '  %-28s %s\n' "efi-perf write_bw 64 KiB" "$(row 65536 "$ITERS" ep_write_bw)"
printf '  %-28s %s\n' "perftest ib_write_bw 1 MiB" "$(row 1048576 "$BW_ITERS" pt_write_bw_1m)"
printf '  %-28s %s\n' "efi-perf write_bw 1 MiB" "$(row 1048576 "$BW_ITERS" ep_write_bw_1m)"
grep -h 'transport:' "$TMPD"/ep_*.c | sed 's/^/  efi-perf /'
