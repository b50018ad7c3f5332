#!/bin/bash
# Debian's qperf, unmodified, with -cm1 (QPs connected by rdma_cm) over EFI:
# rc_lat, rc_bw, rc_rdma_write_bw and rc_rdma_read_bw each give their
# figure.  Without -cm1 qperf cannot connect RoCE QPs at all (it exchanges
# LIDs; tests/verbs/t-verbs-qperf.sh), so this is qperf's way onto EFI.
# And with the system's librdmacm in place of libefi-rdmacm (efi-run without
# it) the same -cm1 run fails at the event channel: the figures above are
# the library's doing.  Argument: one (two instances of one host, the
# default), two (two efid on one bridge) or hosts (two testbed hosts:
# t-rdmacm-qperf-hosts.sh).  Cost: ~10 s (~20 s for hosts).
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
MODE=${1:-one}
if [ "$MODE" = hosts ]; then
	# shellcheck source=tests/testbed/testbed.sh
	. "$(dirname "$0")/../testbed/testbed.sh"
fi
# shellcheck source=tests/rdmacm/lib.sh
. "$(dirname "$0")/lib.sh"
if [ "$MODE" = hosts ]; then
	rcm_init qh testbed
else
	rcm_init rq
fi
verbs_need qperf qperf
rcm_topology "$MODE"

PORT=19766
va timeout -k 5 180 qperf --listen_port "$PORT" >"$TMPD/qperf.s" 2>&1 &
TRACK_BGPIDS+=("$!")
verbs_wait_listen "$A" "$PORT"

# qperf_run TEST [OPTION...]: one client run of 1 s; sets OUT.  qperf's
# server now and then answers a client with an empty "server: " error
# before it has opened any device (t-verbs-qperf.sh: nothing of EFI's had
# run); only such a run is tried again, twice at most.
qperf_run() {
	local t=$1 rc try
	shift
	for try in 1 2 3; do
		rc=0
		OUT=$(vb timeout -k 5 60 qperf --listen_port "$PORT" "$@" -t 1 "$IP_A" "$t" 2>&1) || rc=$?
		[ "$rc" -lt 124 ] || fail "qperf $t $*: exit $rc (a hang or a crash): $OUT"
		grep -qE '^server: *$' <<<"$OUT" || return 0
		log "qperf $t $*: the server's empty error (try $try): $OUT"
	done
}

rcm_watch_start
for t in rc_lat rc_bw rc_rdma_write_bw rc_rdma_read_bw; do
	log "qperf -cm1 $t (server in A, client in B)"
	qperf_run "$t" -cm1
	printf '    %s\n' "$OUT"
	case $t in
	*_lat) fig=$(awk '$1 == "latency" && $2 == "=" && $3 > 0 {print $3, $4}' <<<"$OUT") ;;
	*) fig=$(awk '$1 == "bw" && $2 == "=" && $3 > 0 {print $3, $4}' <<<"$OUT") ;;
	esac
	if [ -z "$fig" ]; then
		rcm_watch_show
		fail "qperf -cm1 $t: no figure in: $OUT
--- server:
$(cat "$TMPD/qperf.s")"
	fi
done
rcm_watch_stop

log "the same without libefi-rdmacm: the system's librdmacm has no device"
mkdir -p "$TMPD/no-rdmacm"
OUT=$(in_b env "${VERBS_FOREIGN_ENV[@]}" EFI_RDMACM_DIR="$TMPD/no-rdmacm" "$EFI_RUN" \
	timeout -k 5 60 qperf --listen_port "$PORT" -cm1 -t 1 "$IP_A" rc_lat 2>&1) && rc=0 || rc=$?
printf '    %s\n' "$OUT"
if [ "$rc" = 0 ] || [ "$rc" -ge 124 ]; then
	fail "qperf -cm1 without libefi-rdmacm: exit $rc (wanted qperf's own failure)"
fi
vmatch 'rdma_create_event_channel failed' "$OUT" "qperf -cm1 with the system librdmacm"
log "PASS: qperf -cm1 over libefi-rdmacm ($MODE)"
