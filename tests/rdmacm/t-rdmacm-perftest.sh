#!/bin/bash
# perftest with -R (QPs connected by rdma_cm), unmodified, over EFI:
# ib_send_lat, ib_write_bw and ib_read_bw run to completion and print a
# table row for the size and iterations asked.  Argument: one (two
# instances of one host, the default), two (two efid on one bridge) or
# hosts (two testbed hosts, routed over two paths:
# t-rdmacm-perftest-hosts.sh).  A failure shows both programs' output and
# the last counters of both efids (retransmissions, timeouts, drops per
# context).  Cost: ~5 s (~15 s for hosts).
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
MODE=${1:-one}
if [ "$MODE" = hosts ]; then
	# shellcheck source=tests/testbed/testbed.sh
	. "$(dirname "$0")/../testbed/testbed.sh"
fi
# shellcheck source=tests/rdmacm/lib.sh
. "$(dirname "$0")/lib.sh"
if [ "$MODE" = hosts ]; then
	rcm_init rh testbed
else
	rcm_init rf
fi
verbs_need ib_send_lat perftest
rcm_topology "$MODE"

PORT=18600

# perf TOOL ARGS...: server in A, client in B; sets COUT (client output).
perf() {
	local tool=$1 spid crc=0 src=0
	shift
	va timeout -k 5 90 "$tool" -R -p "$PORT" "$@" >"$TMPD/perf.s" 2>&1 &
	spid=$!
	TRACK_BGPIDS+=("$spid")
	# the second connection of -R needs no wait: the library retries a
	# request that finds no listener for 2 s (docs/rdmacm.md)
	rcm_wait_listen "$PORT"
	rcm_watch_start
	vb timeout -k 5 90 "$tool" -R -p "$PORT" "$@" "$IP_A" >"$TMPD/perf.c" 2>&1 || crc=$?
	wait "$spid" || src=$?
	PORT=$((PORT + 1))
	COUT=$(cat "$TMPD/perf.c")
	if [ "$crc" != 0 ] || [ "$src" != 0 ]; then
		rcm_watch_show
		fail "$(printf '%s -R %s: client exit %s, server exit %s\n--- client:\n%s\n--- server:\n%s' \
			"$tool" "$*" "$crc" "$src" "$COUT" "$(cat "$TMPD/perf.s")")"
	fi
	rcm_watch_stop
}

for spec in "ib_send_lat 8 1000" "ib_write_bw 65536 500" "ib_read_bw 65536 500"; do
	read -r tool size iters <<<"$spec"
	log "$tool -R -s $size -n $iters (server in A, client in B)"
	perf "$tool" -s "$size" -n "$iters"
	case $tool in
	*_lat)
		vmatch 't_typical\[usec\]' "$COUT" "$tool: latency table"
		row=$(awk -v s="$size" -v n="$iters" '$1 == s && $2 == n && $5 > 0' <<<"$COUT")
		;;
	*_bw)
		vmatch 'BW average\[MB/sec\]' "$COUT" "$tool: bandwidth table"
		row=$(awk -v s="$size" -v n="$iters" '$1 == s && $2 == n && $4 > 0' <<<"$COUT")
		;;
	esac
	[ -n "$row" ] || fail "$tool: no row for $size bytes × $iters in:
$COUT"
	printf '    %s\n' "$row"
done
log "PASS: perftest -R over libefi-rdmacm ($MODE)"
