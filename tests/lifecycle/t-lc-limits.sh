#!/bin/bash
# SPDX-License-Identifier: MIT
# [Limits] in efid.conf, per instance and summed over its processes:
# MaxQPs, MaxRegisteredBytes and MaxListeners.  Going past one fails the
# call with EDQUOT (efi_create_qp, efi_reg_mr, efi_listen) and a message in
# efid's log, changes nothing else, and efid stays up; what a process held
# is given back when it exits.  About 10 s.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/lifecycle/lib.sh
. "$(dirname "$0")/lib.sh"
cm_init ll

_dp_instances
efid_config main
printf '[Limits]\nMaxQPs=2\nMaxMRs=8\nMaxRegisteredBytes=16M\nMaxListeners=1\n' \
	>>"$TMPD/main/efid.conf"
efid_launch main
assert_exit 0 ctl_on main attach "$A" --name efi0 --address "$IP_A/24" --uplink "$BR"
assert_exit 0 ctl_on main attach "$B" --name efi0 --address "$IP_B/24" --uplink "$BR"
SOCK_A=${EFID_SOCK[main]}
SOCK_B=${EFID_SOCK[main]}
_dp_ready
lc_require_hooks main
LOGF=${EFID_DIR[main]}/efid.log

# perf_bg NAME ARGS...: efi-perf in A in the background
perf_bg() {
	local name=$1
	shift
	in_a timeout -k 5 60 "$EFI_PERF" "$@" >"$TMPD/$name.out" 2>&1 &
	CM_PIDS[$name]=$!
	TRACK_BGPIDS+=("$!")
}

log "MaxQPs=2: a third QP in the instance is refused, across processes"
cm_bg one in_a hold 1
cm_bg two in_a hold 1
wait_for 5000 "first holder" grep -q '^held' "$TMPD/one.out"
wait_for 5000 "second holder" grep -q '^held' "$TMPD/two.out"
assert_eq "$(qps_of "$A")" 2
rc=0
in_a "$CM_TEST" hold 1 >"$TMPD/third.out" 2>&1 || rc=$?
[ "$rc" = 3 ] || fail "a third QP past MaxQPs=2: exit $rc, $(cat "$TMPD/third.out")"
grep -q 'efi_create_qp: Disk quota exceeded' "$TMPD/third.out" ||
	fail "not refused with EDQUOT: $(cat "$TMPD/third.out")"
grep -q "instance '$A' holds 2 of its 2 QPs" "$LOGF" || fail "no message in efid's log"
# the other instance has its own count
cm_bg other in_b hold 2
wait_for 5000 "two QPs in $B as well" grep -q '^held' "$TMPD/other.out"
kill -KILL "${CM_PIDS[one]}" "${CM_PIDS[two]}" "${CM_PIDS[other]}" 2>/dev/null
wait "${CM_PIDS[one]}" "${CM_PIDS[two]}" "${CM_PIDS[other]}" 2>/dev/null
wait_for 2000 "their QPs given back" qps_are "$A" 0

log "within the limits: two QPs each way carry data"
in_a timeout -k 5 30 "$EFI_PERF" send_bw -n 200 -q 2 >"$TMPD/srv.out" 2>&1 &
srv=$!
TRACK_BGPIDS+=("$srv")
sleep 0.3
assert_exit 0 in_b timeout -k 5 30 "$EFI_PERF" send_bw -n 200 -q 2 "$IP_A"
wait "$srv" || { _dp_show "$TMPD/srv.out" server; fail "efi-perf server failed within the limits"; }

log "MaxRegisteredBytes=16M: 32 MiB more are refused"
rc=0
in_a "$CM_TEST" hold 0 33554432 >"$TMPD/big.out" 2>&1 || rc=$?
[ "$rc" = 3 ] || fail "32 MiB registered past MaxRegisteredBytes=16M: exit $rc"
grep -q 'efi_reg_mr: Disk quota exceeded' "$TMPD/big.out" ||
	fail "not refused with EDQUOT: $(cat "$TMPD/big.out")"
grep -q "bytes registered (\[Limits\] MaxRegisteredBytes" "$LOGF" || fail "no message in efid's log"

log "MaxListeners=1"
cm_bg holder in_a listen 7401 --hold
wait_for 10000 "holder listening" grep -q '^listening' "$TMPD/holder.out"
rc=0
in_a "$CM_TEST" listen 7402 >"$TMPD/second.out" 2>&1 || rc=$?
[ "$rc" != 0 ] || fail "a second listener past MaxListeners=1"
grep -q 'Disk quota exceeded' "$TMPD/second.out" || fail "not refused with EDQUOT: $(cat "$TMPD/second.out")"
grep -q "has 1 of its 1 listeners" "$LOGF" || fail "no message in efid's log"
# another instance has its own count
assert_exit 0 in_b "$CM_TEST" listen 7402
kill -KILL "${CM_PIDS[holder]}"
wait "${CM_PIDS[holder]}" 2>/dev/null
wait_for 2000 "a listener allowed again" in_a "$CM_TEST" listen 7402

ctl_on main status >/dev/null || fail "efid no longer answers"
log "pass"
