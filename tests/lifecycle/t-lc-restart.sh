#!/bin/bash
# SPDX-License-Identifier: MIT
# efid restarts while QPs carry traffic: efi-perf send_bw runs through the
# connection manager between two hosts while host one's efid is stopped with
# SIGTERM and started again, then host two's is killed with SIGKILL and
# started again, then host one's is replaced by another build of efid (a
# copy of the binary: the upgrade path).  The transfer must finish with zero
# errors; each restarted efid must learn the running contexts again on its
# own (their leases, in `efictl status`), must not lease a slot still in use
# to a new process, and must let a process that opened its device before
# the restart connect after it.  About 20 s.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/lifecycle/lib.sh
. "$(dirname "$0")/lib.sh"
cm_init lr
dp_two_hosts
lc_require_hooks one

# perf_alive: both efi-perf processes still run (else: their output, fail)
perf_alive() {
	pid_running "$perf_srv" && pid_running "$perf_cli" && return 0
	_dp_show "$TMPD/perf.sout" perf-server
	_dp_show "$TMPD/perf.cout" perf-client
	fail "efi-perf ended early: $*"
}

log "efi-perf send_bw for 8 s through the connection manager"
in_a timeout -k 5 60 "$EFI_PERF" send_bw -D 8 -s 4096 >"$TMPD/perf.sout" 2>&1 &
perf_srv=$!
TRACK_BGPIDS+=("$perf_srv")
sleep 0.3
in_b timeout -k 5 60 "$EFI_PERF" send_bw -D 8 -s 4096 "$IP_A" >"$TMPD/perf.cout" 2>&1 &
perf_cli=$!
TRACK_BGPIDS+=("$perf_cli")
efid_use one
wait_for 5000 "efi-perf's context on host one" leases_are "$A" 1
efid_use two
wait_for 5000 "efi-perf's context on host two" leases_are "$B" 1

# a client that opens its device now and connects only after the restarts
cm_bg early in_b client "$IP_A" 7495 --wait-for "$TMPD/go"
wait_for 10000 "early client opened" grep -q '^opened' "$TMPD/early.out"

log "host one's efid: SIGTERM, then started again"
efid_stop one TERM
efid_launch one
perf_alive "after host one's efid restarted"
wait_for 2000 "host one's efid knows efi-perf's context again" leases_are "$A" 1
log "lease resumed ${WAITED_MS} ms after efid answered"

log "host two's efid: SIGKILL, then started again"
efid_stop two KILL
efid_launch two
perf_alive "after host two's efid was killed"
wait_for 2000 "host two's efid knows both contexts again" leases_are "$B" 2
log "leases resumed ${WAITED_MS} ms after efid answered"

log "host one's efid replaced by another build"
cp "$EFID" "$TMPD/efid-new"
efid_stop one TERM
EFID=$TMPD/efid-new efid_launch one
wait_for 2000 "the new efid knows efi-perf's context" leases_are "$A" 1

log "efi-perf finishes without an error"
rc=0
wait "$perf_cli" || rc=$?
wait "$perf_srv" || rc=$((rc + $?))
_dp_show "$TMPD/perf.cout" perf-client
[ "$rc" = 0 ] || { _dp_show "$TMPD/perf.sout" perf-server; fail "efi-perf exited $rc across efid restarts"; }

log "a listener made after the restarts, and the early client connects to it"
cm_server late2 7495
touch "$TMPD/go"
cm_wait early
grep -q '^echo ok' "$TMPD/early.out" || fail "the early client's connection carried no data"
cm_wait late2

log "status and reconciliation after the restarts"
efid_use one
assert_eq "$(iface_field "$A" efi0 .state)" attached
assert_eq "$(iface_field "$A" efi0 .link)" up
efid_use two
assert_eq "$(iface_field "$B" efi0 .state)" attached
grep -q 'reconciled 1 interface(s): 1 attached' "${EFID_DIR[two]}/efid.log" ||
	fail "host two's efid did not reconcile its interface at the restart"
grep -q 'lease: slot .* resumed by pid' "${EFID_DIR[one]}/efid.log" || fail "no resumed lease in host one's log"
if grep -q 'is leased already' "${EFID_DIR[one]}/efid.log" "${EFID_DIR[two]}/efid.log"; then
	fail "a lease could not be resumed: its slot was handed out"
fi
log "pass"
