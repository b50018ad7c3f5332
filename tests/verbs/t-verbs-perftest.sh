#!/bin/bash
# Debian's perftest, unmodified, over EFI between the instances of two hosts:
# ib_send_lat, ib_write_lat, ib_read_lat, ib_atomic_lat, ib_send_bw,
# ib_write_bw and ib_read_bw with -x 0 run to completion in both directions
# and print their tables, ib_send_lat and ib_send_bw with --use-srq too
# (shared receive queues, issue 16) and with -c UD (UD QPs, datagrams of up
# to the port's MTU); options that need what EFI lacks
# (UC/XRC QPs) fail with perftest's own message, never a crash, and so
# does -R (rdma_cm) here, where efi-run has no libefi-rdmacm on its path
# (tests/rdmacm/t-rdmacm-perftest.sh runs -R with it).
# Cost: ~30 s (small -n).
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/verbs/lib.sh
. "$(dirname "$0")/lib.sh"
verbs_init vp
verbs_need ib_send_lat perftest
dp_two_hosts

PORT=18515
PERF_CLIENT_ENV=()

# perf SERVER_NS TOOL ARGS...: the server in SERVER_NS (A or B), the client
# in the other instance; sets CRC, SRC (exit codes), COUT, SOUT (outputs).
perf() {
	local where=$1 tool=$2 spid srv cli dst sns
	shift 2
	if [ "$where" = A ]; then srv=va cli=vb dst=$IP_A sns=$A; else srv=vb cli=va dst=$IP_B sns=$B; fi
	CRC=0 SRC=0
	$srv timeout -k 5 40 "$tool" -p "$PORT" "$@" >"$TMPD/perf.s" 2>&1 &
	spid=$!
	TRACK_BGPIDS+=("$spid")
	# a server that fails early (unsupported option) never listens
	for _ in $(seq 1 100); do
		ip netns exec "$sns" ss -Hltn "sport = :$PORT" | grep -q . && break
		pid_running "$spid" || break
		sleep 0.05
	done
	$cli env "${PERF_CLIENT_ENV[@]}" timeout -k 5 40 "$tool" -p "$PORT" "$@" "$dst" \
		>"$TMPD/perf.c" 2>&1 || CRC=$?
	wait "$spid" || SRC=$?
	COUT=$(cat "$TMPD/perf.c")
	SOUT=$(cat "$TMPD/perf.s")
	PORT=$((PORT + 1))	# no TIME_WAIT surprises between runs
}

# Each tool, each direction: both sides exit 0, the client prints the table
# header and a row for the size and iterations it ran.
for where in A B; do
	for spec in "ib_send_lat 8 200" "ib_write_lat 8 200" "ib_read_lat 8 200" \
		"ib_atomic_lat 8 200" "ib_send_bw 65536 200" "ib_write_bw 65536 200" \
		"ib_read_bw 65536 200" "ib_send_lat 8 200 --use-srq" "ib_send_bw 65536 200 --use-srq" \
		"ib_send_lat 8 200 -c UD" "ib_send_bw 1024 200 -c UD"; do
		read -r tool size iters extra <<<"$spec"
		log "$tool -x 0 -s $size -n $iters $extra, server in $where"
		# shellcheck disable=SC2086 # extra: options, split on purpose
		perf "$where" "$tool" -x 0 -s "$size" -n "$iters" $extra
		if [ "$CRC" != 0 ] || [ "$SRC" != 0 ]; then
			fail "$(printf '%s %s: client exit %s, server exit %s\n--- client:\n%s\n--- server:\n%s' \
				"$tool" "$extra" "$CRC" "$SRC" "$COUT" "$SOUT")"
		fi
		vmatch 'Link type +: Ethernet' "$COUT" "$tool: link type"
		vmatch 'GID: 00:00:00:00:00:00:00:00:00:00:255:255:10:77' "$COUT" "$tool: the RoCE GID"
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
done

# What a perftest client calls binds to EFI: the references of perftest and
# of the libraries it loads (librdmacm, the provider libraries perftest
# links).  Only the providers' private ABI (IBVERBS_PRIVATE_*: kernel
# commands, context set-up; never reached, as no device is theirs) and
# libibverbs' references to itself stay with libibverbs - except the
# registration their constructors do call, which must be ours.
log "LD_DEBUG=bindings: ib_write_bw's calls land in libefi-verbs"
PERF_CLIENT_ENV=(LD_DEBUG=bindings LD_DEBUG_OUTPUT="$TMPD/bind")
perf A ib_write_bw -x 0 -n 50
PERF_CLIENT_ENV=()
if [ "$CRC" != 0 ] || [ "$SRC" != 0 ]; then
	fail "ib_write_bw under LD_DEBUG: client $CRC, server $SRC: $COUT"
fi
all=$(cat "$TMPD"/bind.* | grep -E "normal symbol \`(_?ibv_|verbs_)" | grep -v 'binding file [^ ]*libibverbs\.so')
reg=$(grep "symbol \`verbs_register_driver_" <<<"$all")
[ -n "$reg" ] || fail "no provider registered (perftest links libmlx5): $all"
if grep -v 'libefi-verbs.so' <<<"$reg"; then fail "a provider registered with the real libibverbs"; fi
binds=$(grep -v '\[IBVERBS_PRIVATE_[0-9]*\]' <<<"$all")
ours=$(grep -c 'libefi-verbs.so' <<<"$binds")
theirs=$(grep -v 'libefi-verbs.so' <<<"$binds" | grep -c 'libibverbs.so' || true)
log "bindings: $ours to libefi-verbs, $theirs to libibverbs"
[ "$ours" -ge 20 ] || fail "too few bindings to libefi-verbs: $binds"
[ "$theirs" = 0 ] || fail "bound to the real libibverbs: $(grep -v 'libefi-verbs.so' <<<"$binds")"

# unsupported: OPTION, the message perftest prints for a device without it
unsupported() {
	local what=$1 msg=$2
	shift 2
	log "ib_send_lat $* ($what): perftest's own error"
	perf A ib_send_lat -x 0 -n 10 "$@"
	for rc in "$CRC" "$SRC"; do
		if [ "$rc" -eq 0 ] || [ "$rc" -ge 124 ]; then
			fail "ib_send_lat $*: exit $rc (wanted a clean failure)
--- client:
$COUT
--- server:
$SOUT"
		fi
	done
	vmatch "$msg" "$COUT" "client's message for $*"
	vmatch "$msg" "$SOUT" "server's message for $*"
}
unsupported "UC QPs" "Unable to create QP" -c UC
unsupported "XRC" "Error opening XRC domain" -c XRC
unsupported "rdma_cm" "rdma_create_event_channel failed" -R
