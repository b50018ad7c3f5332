#!/bin/bash
# SPDX-License-Identifier: MIT
# The stall detector (issue 20): a QP with send work outstanding and no
# progress shows in `efictl status` (human and --json) and in `efictl stats
# --prometheus`, with the reason when the peer answers RNR, and clears once
# the work completes.  The client posts a send toward a server that posts
# no receive for 6 s (its send waits on RNR: rnr_retry 7 is "for ever"),
# then the server posts one.  About 12 s.
# shellcheck disable=SC2016 # jq programs
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/cm/lib.sh
. "$(dirname "$0")/lib.sh"
cm_init cs
dp_one_host

# The QPs of the contexts on instance $1's efi0 (efictl stats: every QP),
# as one JSON array.
qps_json() {
	ctl_on main --json stats "$1" | jq -c '[.interfaces[0].contexts[]?.qps[]?]'
}
# efictl status: the stalled QPs of those contexts, and their count.
stalled_json() {
	ctl_on main --json status "$1" | jq -c '[.instances[0].interfaces[0].contexts[]?.stalled[]?]'
}
stalled_qps() {
	ctl_on main --json status "$1" | jq -r '[.instances[0].interfaces[0].contexts[]?.stalled_qps] | add'
}
client_stalled() {
	stalled_json "$B" | jq -e 'length == 1 and all(.[]; .outstanding == 1 and .stalled_ms >= 2000 and .rnr_wait == true)' >/dev/null
}
client_done() {
	qps_json "$B" | jq -e 'any(.[]; .state == "rts") and all(.[]; .outstanding == 0 and .stalled_ms == 0 and .rnr_wait == false)' >/dev/null
}

log "a send toward a peer with no receive posted: stalled, RNR"
cm_server srv 7481 --expect-disconnect --no-recv --recv-after 6000
cm_bg cli in_b client "$IP_A" 7481 --hang-send
wait_for 10000 "client connected" grep -q '^established' "$TMPD/cli.out"
wait_for 10000 "server saw it established" grep -q '^established' "$TMPD/srv.out"
# before 2 s without progress it is waiting, not stalled yet (the page
# is rewritten every 100 ms: the QP shows within a few)
client_waiting() {
	local js
	js=$(qps_json "$B")
	echo "$js" | jq -e 'any(.[]; .outstanding == 1 and .stalled_ms < 2000)' >/dev/null ||
		{ echo "B's QPs: $js; $(ctl_on main --json status "$B" | jq -c .instances)" >&2; return 1; }
}
wait_for 1500 "B's QP shown with its send outstanding, under 2 s" client_waiting
log "B's QPs at first: $(qps_json "$B")"
assert_eq 0 "$(stalled_qps "$B")" "stalled_qps of B's contexts before 2 s"
wait_for 5500 "B's QP shown stalled (>= 2 s, RNR)" client_stalled
log "B's stalled QPs: $(stalled_json "$B")"
assert_eq 1 "$(stalled_qps "$B")" "stalled_qps of B's contexts"
qps_json "$B" | jq -e 'length == 1 and .[0].outstanding == 1 and .[0].stalled_ms >= 2000 and .[0].rnr_wait' >/dev/null ||
	fail "efictl stats does not show B's QP stalled: $(qps_json "$B")"
# the server's QP has nothing outstanding: not stalled
qps_json "$A" | jq -e 'length >= 1 and all(.[]; .outstanding == 0 and .stalled_ms == 0)' >/dev/null ||
	fail "A's QP (nothing to send) is shown waiting: $(qps_json "$A")"
assert_eq 0 "$(stalled_qps "$A")" "stalled_qps of A's contexts"
assert_eq "[]" "$(stalled_json "$A")" "A's stalled QPs"
human=$(ctl_on main status "$B")
echo "$human" | sed 's/^/    /'
assert_match 'STALLED: 1 send WQEs outstanding, no progress for [0-9.]+ s \(the peer answers RNR' "$human" \
	"the QP's stall in efictl status"
assert_match 'qp 0x[0-9a-f]+ to ::ffff:'"$IP_A"' STALLED' "$human" "the stalled QP and its peer in efictl status"
assert_match '1 QP stalled' "$human" "the context's stalled QPs in efictl status"
assert_match 'STALLED: 1 send WQEs outstanding' "$(ctl_on main stats "$B")" "the QP's stall in efictl stats"
prom=$(ctl_on main stats --prometheus)
assert_match '^efi_context_qps_stalled\{[^}]*instance="'"$B"'"[^}]*\} 1$' "$prom" "efi_context_qps_stalled"
assert_match '^efi_qp_outstanding_wqes\{[^}]*instance="'"$B"'"[^}]*\} 1$' "$prom" "efi_qp_outstanding_wqes"
assert_match '^efi_qp_stalled_seconds\{[^}]*instance="'"$B"'"[^}]*\} [2-9]' "$prom" "efi_qp_stalled_seconds"

log "the server posts its receive: the send completes, the stall clears"
wait_for 10000 "server posted its receive" grep -q '^receive posted' "$TMPD/srv.out"
wait_for 5000 "B's QP shown done" client_done
assert_eq 0 "$(stalled_qps "$B")" "stalled_qps of B's contexts after the send completed"
assert_eq "[]" "$(stalled_json "$B")" "B's stalled QPs after the send completed"
human=$(ctl_on main status "$B")
if echo "$human" | grep -q STALLED; then
	echo "$human" | sed 's/^/    /'
	fail "efictl status still shows a stall"
fi
kill -KILL "${CM_PIDS[cli]}"
wait "${CM_PIDS[cli]}" 2>/dev/null
cm_wait srv
log "pass"
