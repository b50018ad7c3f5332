#!/bin/bash
# perftest with -R (QPs connected by rdma_cm), unmodified, over EFI between
# the instances of two hosts: ib_send_lat, ib_write_bw and ib_read_bw run
# to completion and print their tables.  Cost: ~15 s (small -n).
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/rdmacm/lib.sh
. "$(dirname "$0")/lib.sh"
rcm_init rf
verbs_need ib_send_lat perftest
dp_two_hosts

PORT=18600

# perf TOOL ARGS...: server in A, client in B
perf() {
	local tool=$1 spid crc=0 src=0
	shift
	va timeout -k 5 60 "$tool" -R -p "$PORT" "$@" >"$TMPD/perf.s" 2>&1 &
	spid=$!
	TRACK_BGPIDS+=("$spid")
	# an EFI listener is efid's, not a socket: its log says when it is
	# there (the second connection of -R needs no wait: the library
	# retries a request that finds no listener for a while, docs/rdmacm.md)
	wait_for 20000 "$tool server listening" \
		grep -q "listens on .* service $PORT\$" "$TMPD/one/efid.log"
	vb timeout -k 5 60 "$tool" -R -p "$PORT" "$@" "$IP_A" >"$TMPD/perf.c" 2>&1 || crc=$?
	wait "$spid" || src=$?
	PORT=$((PORT + 1))
	COUT=$(cat "$TMPD/perf.c")
	SOUT=$(cat "$TMPD/perf.s")
	if [ "$crc" != 0 ] || [ "$src" != 0 ]; then
		fail "$(printf '%s -R %s: client exit %s, server exit %s\n--- client:\n%s\n--- server:\n%s' \
			"$tool" "$*" "$crc" "$src" "$COUT" "$SOUT")"
	fi
}

for spec in "ib_send_lat 8 200" "ib_write_bw 65536 200" "ib_read_bw 65536 200"; do
	read -r tool size iters <<<"$spec"
	log "$tool -R -s $size -n $iters"
	perf "$tool" -s "$size" -n "$iters"
	case $tool in
	*_lat)
		vmatch 't_typical\[usec\]' "$COUT" "$tool: latency table"
		row=$(awk -v s="$size" -v n="$iters" '$1 == s && $2 == n' <<<"$COUT")
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
log "PASS: perftest -R over libefi-rdmacm"
