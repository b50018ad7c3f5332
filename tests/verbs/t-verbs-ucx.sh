#!/bin/bash
# UCX (Debian's ucx-utils 1.13), unmodified, over EFI between the instances
# of two hosts (issue 16):
#
#  - The device node UCX insists on (/dev/infiniband/<dev_name>: stat,
#    S_ISCHR, access R_OK|W_OK) comes from libefi-verbs' tmpfiles.d file,
#    applied with systemd-tmpfiles as an installed system applies it
#    (tests/verbs/lib.sh, verbs_dev_node); ucx_info -d then lists efi0:1
#    with rc_verbs.
#  - UCT over rc_verbs: ucx_perftest put_lat, put_bw, am_lat, am_bw between
#    the instances, figures beside UCX's tcp transport's (no put there).
#  - UCP connected by socket address (ucp_listener, as UCX's client/server
#    programs connect): io_demo's TAG traffic with its data check (-q)
#    over rc_verbs, the connection set up through UCX's tcp sockaddr
#    CM; UCX's own ep_cfg lines show that the final lanes are rc_verbs
#    and no tcp.  Figures beside the same run over UCX_TLS=tcp.
#  - UCT over ud_verbs (EFI's UD QPs): am_lat, with UCX's check of the
#    GRH's destination GID on, as it is by default.
#  - UCP connected by worker address (ucx_perftest tag_lat, tag_bw,
#    ucp_put_bw; Open MPI's pml ucx in tests/mpi/t-mpi-ucx.sh) with
#    UCX_TLS=rc: UCX wires the rc_verbs endpoints up through ud_verbs, its
#    auxiliary transport, and moves the data over rc_verbs (the lanes UCX
#    prints are checked); figures beside UCX's tcp.
#  - UCX's rdmacm CM makes its dummy UD QP now and stops at rdma_connect on
#    an id without a QP, which libefi-rdmacm does not offer.
#    docs/verbs.md, "UCX".
# Cost: ~60 s.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/verbs/lib.sh
. "$(dirname "$0")/lib.sh"
verbs_init vx
verbs_need ucx_perftest ucx-utils
verbs_need io_demo ucx-utils
verbs_dev_node
dp_two_hosts
# efi-run's librdmacm: libefi-rdmacm's, in the build tree (make check makes
# the directory)
: "${EFI_RDMACM_DIR:=$top_builddir/rdmacm/.libs/efi/rdmacm}"
export EFI_RDMACM_DIR

# UCX is not ours: its leaks at exit are no finding of a sanitizer build
xa() { va timeout -k 5 60 "$@"; }
xb() { vb timeout -k 5 60 "$@"; }
port=13400
# wait_port PORT: until a TCP server listens on PORT in A
wait_port() {
	local _
	for _ in $(seq 1 200); do
		ip netns exec "$A" ss -Hltn "sport = :$1" | grep -q . && return 0
		sleep 0.05
	done
}
# perf NAME SERVER_ARGS -- CLIENT_ARGS: ucx_perftest, server in A, client
# in B, both with the environment PENV; outputs in $TMPD/NAME.s and
# $TMPD/NAME.c, the client's exit status in $TMPD/NAME.rc
PENV=()
perf() {
	local name=$1 s=() spid rc=0
	shift
	while [ "$1" != -- ]; do s+=("$1"); shift; done
	shift
	port=$((port + 1))
	xa env "${PENV[@]}" ucx_perftest -p "$port" "${s[@]}" >"$TMPD/$name.s" 2>&1 &
	spid=$!
	TRACK_BGPIDS+=("$spid")
	wait_port "$port"
	xb env "${PENV[@]}" ucx_perftest -p "$port" "$@" "$IP_A" >"$TMPD/$name.c" 2>&1 || rc=$?
	echo "$rc" >"$TMPD/$name.rc"
	# a server whose client failed waits for nobody
	kill "$spid" 2>/dev/null || true
	wait "$spid" || true
}
# demo NAME ARGS...: io_demo server in A, client in B (connected by socket
# address), both with the environment PENV; the client's exit status in
# $TMPD/NAME.rc.  The server serves until it is stopped.
demo() {
	local name=$1 spid rc=0 t0
	shift
	port=$((port + 1))
	# the server's own pid (sh execs it), to stop it when the client is done
	# shellcheck disable=SC2016 # $$ and $0 are the inner sh's
	xa env "${PENV[@]}" sh -c 'echo $$ >"$0"; exec "$@"' "$TMPD/$name.pid" \
		io_demo -p "$port" "$@" >"$TMPD/$name.s" 2>&1 &
	spid=$!
	TRACK_BGPIDS+=("$spid")
	wait_port "$port"
	t0=$(date +%s%N)
	xb env "${PENV[@]}" io_demo -p "$port" -c 1 "$@" "$IP_A" >"$TMPD/$name.c" 2>&1 || rc=$?
	echo "$rc" >"$TMPD/$name.rc"
	echo $((($(date +%s%N) - t0) / 1000000)) >"$TMPD/$name.ms"
	kill "$(cat "$TMPD/$name.pid")" 2>/dev/null || true
	wait "$spid" || true
}
# show NAME: both sides' output on the log (for failures)
show() { _dp_show "$TMPD/$1.s" server; _dp_show "$TMPD/$1.c" client; }

info=$(xa ucx_info -d 2>&1) || fail "ucx_info -d failed: $info"
vmatch 'Transport: rc_verbs' "$info" "ucx_info -d: rc_verbs"
vmatch 'Device: efi0:1' "$info" "ucx_info -d: efi0:1"

# --- UCT --------------------------------------------------------------------
for spec in "put_lat 8 short" "put_bw 65536 zcopy" "am_lat 8 short" "am_bw 4096 bcopy"; do
	read -r t size layout <<<"$spec"
	perf "rc_$t" -d efi0:1 -x rc_verbs -- -d efi0:1 -x rc_verbs -t "$t" -n 1000 -s "$size" -D "$layout"
	perf "tcp_$t" -d efi0 -x tcp -- -d efi0 -x tcp -t "$t" -n 1000 -s "$size" -D "$layout"
done
# UD: UCX's own reliability over EFI's datagrams; its GRH check (the
# destination GID of every datagram against the interface's GIDs) is on
perf ud_am_lat -d efi0:1 -x ud_verbs -- -d efi0:1 -x ud_verbs -t am_lat -n 1000 -s 8 -D short
# median and average latency (us), average bandwidth (MB/s); "-" where
# the transport lacks the operation (tcp has no put)
row() { awk '/^Final:/ {print $3, $4, $6; f = 1} END {if (!f) print "-"}' "$TMPD/$1.c"; }
log "UCT (ucx_perftest): median and average latency (us), average bandwidth (MB/s)"
printf '    %-8s %-28s %s\n' test "rc_verbs (EFI)" "tcp (kernel TCP, same interface)"
for t in put_lat put_bw am_lat am_bw; do
	[ "$(cat "$TMPD/rc_$t.rc")" = 0 ] || { show "rc_$t"; fail "ucx_perftest -x rc_verbs -t $t failed"; }
	r=$(row "rc_$t")
	[ "$r" != - ] || { show "rc_$t"; fail "ucx_perftest -x rc_verbs -t $t: no Final row"; }
	printf '    %-8s %-28s %s\n' "$t" "$r" "$(row "tcp_$t")"
done
[ "$(cat "$TMPD/ud_am_lat.rc")" = 0 ] || { show ud_am_lat; fail "ucx_perftest -x ud_verbs -t am_lat failed"; }
[ "$(row ud_am_lat)" != - ] || { show ud_am_lat; fail "ucx_perftest -x ud_verbs: no Final row"; }
log "UCT am_lat over ud_verbs (EFI UD QPs): $(row ud_am_lat)"

# --- UCP, connected by socket address ----------------------------------------
# io_demo: reads and writes of 1..64 KiB through the TAG API, their data
# and transactions checked (-q).  The connection manager is UCX's tcp one
# (it needs tcp in UCX_TLS to accept the interface); UCX's rdmacm CM wants
# a dummy UD QP (below).  Not its AM API (-A): UCX 1.13 replays the
# requests queued while the endpoint moves from its first (tcp) lanes to
# rc_verbs with the protocol chosen for tcp ("Invalid am_short length:
# 273 (expected: <= 64)"), on any RC device.
# shellcheck disable=SC2054 # commas inside arguments
ucp_args=(-i 3000 -d 1024:65536 -o read,write -q)
last_cfg() { grep -o 'ep_cfg\[[0-9]*\]: .*' "$TMPD/$1" | tail -n 1; }
# shellcheck disable=SC2054
PENV=(UCX_TLS=rc_verbs,tcp UCX_SOCKADDR_TLS_PRIORITY=tcp UCX_LOG_LEVEL=info)
demo ucp_rc_tag "${ucp_args[@]}"
[ "$(cat "$TMPD/ucp_rc_tag.rc")" = 0 ] || { show ucp_rc_tag; fail "io_demo over rc_verbs failed"; }
c=$(cat "$TMPD/ucp_rc_tag.c")
vmatch "Client exit with status 'OK'" "$c" "io_demo over rc_verbs: the client ends OK"
! grep -qiE 'corrupt|mismatch|UCX +ERROR' "$TMPD/ucp_rc_tag.c" "$TMPD/ucp_rc_tag.s" ||
	{ show ucp_rc_tag; fail "io_demo over rc_verbs reported errors"; }
# the lanes each side ended with: rc_verbs only (the first configuration,
# before the peer's address came through the CM, is tcp's)
for side in c s; do
	lanes=$(last_cfg "ucp_rc_tag.$side")
	vmatch 'tag\(rc_verbs/efi0:1' "$lanes" "io_demo ($side): the tag lane"
	if grep -q tcp <<<"$lanes"; then
		fail "io_demo ($side): a tcp lane is left: $lanes"
	fi
done
log "UCP io_demo over rc_verbs, final lanes: $(last_cfg ucp_rc_tag.c)"
PENV=(UCX_TLS=tcp UCX_NET_DEVICES=efi0 UCX_SOCKADDR_TLS_PRIORITY=tcp)
demo ucp_tcp_tag "${ucp_args[@]}"
[ "$(cat "$TMPD/ucp_tcp_tag.rc")" = 0 ] || { show ucp_tcp_tag; fail "io_demo over tcp failed"; }
# the client's wall time, connection included (io_demo reports rates only
# for runs longer than a second)
log "UCP io_demo, 3000 TAG reads and writes of 1-64 KiB, the client's time:"
log "    rc_verbs (EFI): $(cat "$TMPD/ucp_rc_tag.ms") ms;  tcp (kernel): $(cat "$TMPD/ucp_tcp_tag.ms") ms"

# UCX's rdmacm CM, over libefi-rdmacm, reserves the QP number it announces
# with a dummy UD QP on the id's PD (which it makes now), then calls
# rdma_connect on an id without a QP: libefi-rdmacm connects only ids with
# a QP, so the client stops there, before it sends anything (so no server
# is needed)
if [ -r "$EFI_RDMACM_DIR/librdmacm.so.1" ]; then
	# (io_demo retries every 5 s whatever -c says: 8 s see the first try)
	c=$(vb timeout -k 2 8 env UCX_TLS=rc,tcp UCX_SOCKADDR_TLS_PRIORITY=rdmacm UCX_LOG_LEVEL=info \
		io_demo -p "$((port + 1))" -c 1 -i 10 "$IP_A" 2>&1) &&
		fail "io_demo over the rdmacm CM passed: update docs/verbs.md: $c"
	! grep -q 'dummy ud qp' <<<"$c" || fail "rdmacm CM: the dummy UD QP failed: $c"
	vmatch 'rdma_connect.*failed: Operation not supported' "$c" "rdmacm CM: stops at rdma_connect without a QP"
fi

# --- UCP, connected by worker address ----------------------------------------
# UCX_TLS=rc is UCX's rc_verbs with ud_verbs as the auxiliary transport the
# endpoints are wired up through; no tcp, so every byte goes over EFI.
# tag_bw of 64 KiB goes by rendezvous (RDMA Read), ucp_put_bw by RDMA Write.
for spec in "tag_lat 8 10000" "tag_bw 65536 2000" "ucp_put_bw 65536 2000"; do
	read -r t size n <<<"$spec"
	PENV=(UCX_TLS=rc UCX_NET_DEVICES=efi0:1 UCX_LOG_LEVEL=info)
	perf "ucp_rc_$t" -- -t "$t" -n "$n" -s "$size"
	PENV=(UCX_TLS=tcp UCX_NET_DEVICES=efi0 UCX_LOG_LEVEL=info)
	perf "ucp_tcp_$t" -- -t "$t" -n "$n" -s "$size"
done
log "UCP (ucx_perftest, by worker address): median and average latency (us), average bandwidth (MB/s)"
printf '    %-11s %-28s %s\n' test "rc (EFI rc_verbs + ud_verbs)" "tcp (kernel TCP, same interface)"
for t in tag_lat tag_bw ucp_put_bw; do
	[ "$(cat "$TMPD/ucp_rc_$t.rc")" = 0 ] || { show "ucp_rc_$t"; fail "ucx_perftest -t $t over UCX_TLS=rc failed"; }
	[ "$(cat "$TMPD/ucp_tcp_$t.rc")" = 0 ] || { show "ucp_tcp_$t"; fail "ucx_perftest -t $t over tcp failed"; }
	r=$(row "ucp_rc_$t")
	[ "$r" != - ] || { show "ucp_rc_$t"; fail "ucx_perftest -t $t over rc: no Final row"; }
	# the data lane UCX chose, on both sides: EFI's rc_verbs
	lane='tag'
	[ "$t" != ucp_put_bw ] || lane='rma'
	for side in c s; do
		grep -q "ep_cfg\[[0-9]*\]: $lane(rc_verbs/efi0:1)" "$TMPD/ucp_rc_$t.$side" ||
			{ show "ucp_rc_$t"; fail "ucx_perftest -t $t ($side): the $lane lane is not rc_verbs/efi0:1"; }
	done
	printf '    %-11s %-28s %s\n' "$t" "$r" "$(row "ucp_tcp_$t")"
done
