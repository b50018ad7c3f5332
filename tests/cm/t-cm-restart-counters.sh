#!/bin/bash
# SPDX-License-Identifier: MIT
# After an efid restart, efictl still shows a running process's counters
# and path states (issue 18: a resumed context did not publish its counters
# page again, so the restarted efid had none to read).  Four connections
# between a server on host one and a client on host two carry a message;
# host one's efid is stopped with SIGTERM and started again, then killed
# with SIGKILL and started again: each time the server's context must
# reappear in `efictl --json status` with its peer's paths, and `efictl
# status` must answer (exit 0, no stray).  About 10 s.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/cm/many.sh
. "$(dirname "$0")/many.sh"
cm_init ck
dp_two_hosts

# paths_shown INSTANCE PID: PID's context on efi0 shows at least one path
paths_shown() {
	[ "$(iface_json "$1" efi0 | jq -r --argjson p "$2" \
		'[.contexts[]? | select(.pid == $p) | .peers[]?.paths[]?] | length')" -gt 0 ]
}

many_bg srv in_a server 7484 4
many_wait srv 10000 '^listening'
many_bg cli in_b client "$IP_A" 7484 4 --parallel 4
many_wait cli 20000 '^ready'
round=0
traffic() {
	round=$((round + 1))
	many_cmd cli send
	many_wait cli 20000 '^send ok' "$round"
	many_cmd srv recv
	many_wait srv 20000 '^recv ok' "$round"
}
traffic
srv_pid=${MANY_PID[srv]}
efid_use one
wait_for 5000 "the server's paths in efictl status" paths_shown "$A" "$srv_pid"

for sig in TERM KILL; do
	log "host one's efid: SIG$sig, then started again"
	efid_stop one "$sig"
	efid_launch one
	efid_use one
	traffic
	wait_for 5000 "the server's paths in efictl status after the SIG$sig restart" \
		paths_shown "$A" "$srv_pid"
	log "counters and paths shown again ${WAITED_MS} ms after efid answered"
	ctl status >"$TMPD/status.txt" 2>&1 || { cat "$TMPD/status.txt"; fail "efictl status failed after the restart"; }
	assert_match "path 0" "$(cat "$TMPD/status.txt")" "efictl status after the SIG$sig restart"
	assert_eq 0 "$(jq_status '.strays | length')" "strays after the SIG$sig restart"
done
# the client first: a server that quit first would end its connections
many_cmd cli quit
wait "${MANY_PID[cli]}" || fail "the client exited $?: $(cat "$TMPD/cli.out")"
many_cmd srv quit
wait "${MANY_PID[srv]}" || fail "the server exited $?: $(cat "$TMPD/srv.out")"
log "done"
