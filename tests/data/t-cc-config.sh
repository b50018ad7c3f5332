#!/bin/bash
# efid.conf's [CongestionControl] reaches libefi: a context on a host whose
# efid caps the window at 3 packets never lets a path's window exceed 3, and
# EFI_CC overrides efid.conf for one process.  The figures come from
# efi-perf's per-path footer (efi_query_qp_counters).
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/data/lib.sh
. "$(dirname "$0")/lib.sh"
dp_init cc
DP_CONF_TWO=(CongestionControl.MaxWindow=3 CongestionControl.InitialWindow=3)
dp_two_hosts

# write_bw_max_window [ENV...]: runs write_bw from B (host two) to A and
# prints the largest window any path of the client's QP ended with.
write_bw_max_window() {
	local spid out
	in_a timeout -k 5 60 "$EFI_PERF" write_bw >"$TMPD/server.out" 2>&1 &
	spid=$!
	TRACK_BGPIDS+=("$spid")
	out=$(in_b env "$@" timeout -k 5 60 "$EFI_PERF" write_bw -s 65536 -n 2000 "$IP_A" 2>&1) ||
		fail "efi-perf client failed: $out"
	wait "$spid" || fail "efi-perf server failed: $(cat "$TMPD/server.out")"
	printf '%s\n' "$out" >&2
	printf '%s\n' "$out" | awk '/ path [0-9]+: / {
		for (i = 1; i < NF; i++) if ($(i + 1) == "packets,") w = $i
		if (w > max) max = w; seen = 1 }
		END { if (!seen) exit 1; print max + 0 }' ||
		fail "no per-path line in efi-perf's output"
}

w=$(write_bw_max_window)
log "window with [CongestionControl] MaxWindow=3: $w packets"
awk -v w="$w" 'BEGIN { exit !(w > 0 && w <= 3) }' ||
	fail "efid.conf MaxWindow=3 not applied: a path's window is $w packets"

w=$(write_bw_max_window EFI_CC=max_cwnd=2,init_cwnd=2)
log "window with EFI_CC=max_cwnd=2: $w packets"
awk -v w="$w" 'BEGIN { exit !(w > 0 && w <= 2) }' ||
	fail "EFI_CC did not override efid.conf: a path's window is $w packets"

# A [CongestionControl] that contradicts itself keeps efid from starting,
# and says which section is wrong.
efid_config bad CongestionControl.MaxWindow=4 CongestionControl.MinWindow=8
out=$("$EFID" --config "$TMPD/bad/efid.conf" --state-dir "$TMPD/bad/state" \
	--runtime-dir "$TMPD/bad/run" 2>&1) && fail "efid started with a contradicting [CongestionControl]"
assert_match 'CongestionControl.*contradict' "$out" "efid's refusal"
log "PASS"
