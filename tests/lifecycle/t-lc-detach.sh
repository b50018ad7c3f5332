#!/bin/bash
# SPDX-License-Identifier: MIT
# Detach under load.  efi-perf send_bw runs through the connection manager
# between two hosts; `efictl detach` of host one's interface revokes the
# context there (its QP goes to ERR and its outstanding work completes with
# WR_FLUSH_ERR), tells the peer through the connection manager (host two's
# efid gets the DREQ and the peer's QP goes to ERR), and removes everything.
# Then `detach --wait`: with a connection that stays open it gives up after
# the time given and detaches nothing; with a transfer that ends on its
# own it waits for it, so the transfer finishes without an error.  ~20 s.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/lifecycle/lib.sh
. "$(dirname "$0")/lib.sh"
cm_init ld
dp_two_hosts
lc_require_hooks one

# perf_start SECONDS: efi-perf send_bw server in A, client in B
perf_start() {
	in_a timeout -k 5 60 "$EFI_PERF" send_bw -D "$1" -s 4096 >"$TMPD/perf.sout" 2>&1 &
	PERF_SRV=$!
	TRACK_BGPIDS+=("$PERF_SRV")
	sleep 0.3
	in_b timeout -k 5 60 "$EFI_PERF" send_bw -D "$1" -s 4096 "$IP_A" >"$TMPD/perf.cout" 2>&1 &
	PERF_CLI=$!
	TRACK_BGPIDS+=("$PERF_CLI")
	efid_use one
	wait_for 5000 "efi-perf's QP on host one" qps_are "$A" 1
}

log "detach under load"
perf_start 30
assert_exit 0 ctl_on one detach "$A" efi0
src=0 crc=0
wait "$PERF_SRV" || src=$?
wait "$PERF_CLI" || crc=$?
_dp_show "$TMPD/perf.sout" perf-server
_dp_show "$TMPD/perf.cout" perf-client
if [ "$src" = 0 ] || [ "$crc" = 0 ]; then
	fail "efi-perf survived the detach of its interface ($src, $crc)"
fi
grep -q 'Work Request Flushed Error' "$TMPD/perf.sout" ||
	fail "the detached side's work did not complete with WR_FLUSH_ERR"
grep -Eq 'Work Request Flushed Error|Retry' "$TMPD/perf.cout" ||
	fail "the peer's work did not fail with WR_FLUSH_ERR or RETRY_EXC_ERR"
grep -q 'the peer disconnected' "${EFID_DIR[two]}/efid.log" ||
	fail "the peer's efid was not told (no DREQ from the detaching efid)"
grep -q 'context(s) revoked' "${EFID_DIR[one]}/efid.log" || fail "no lease revoked"
efid_use one
# shellcheck disable=SC2016 # $i is jq's
assert_eq "$(jq_status '[.instances[] | select(.name == $i) | .interfaces[]] | length' --arg i "$A")" 0
efid_use two
wait_for 3000 "the peer's connection gone from host two's status" \
	conns_are "$B" 0

log "re-attach; detach --wait with a connection that stays open gives up"
assert_exit 0 ctl_on one attach "$A" --name efi0 --address "$IP_A/24" --uplink "$BR"
wait_for 5000 "ping $B -> $A" ip netns exec "$B" ping -c 1 -W 1 "$IP_A"
cm_server hold 7496 --expect-disconnect
cm_bg victim in_b client "$IP_A" 7496 --hang
wait_for 10000 "client connected" grep -q '^established' "$TMPD/victim.out"
efid_use one
assert_exit 1 ctl_on one detach "$A" efi0 --wait=1
assert_eq "$(iface_field "$A" efi0 .state)" attached
kill -KILL "${CM_PIDS[victim]}"
wait "${CM_PIDS[victim]}" 2>/dev/null
cm_wait hold

log "detach --wait lets a transfer finish"
perf_start 3
assert_exit 0 ctl_on one detach "$A" efi0 --wait=30
rc=0
wait "$PERF_SRV" || rc=$?
wait "$PERF_CLI" || rc=$((rc + $?))
[ "$rc" = 0 ] || { _dp_show "$TMPD/perf.sout" perf-server; _dp_show "$TMPD/perf.cout" perf-client; fail "efi-perf failed under detach --wait"; }
log "pass"
