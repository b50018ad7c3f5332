#!/bin/bash
# Issue 4: every path down for longer than timeout x retry_cnt: the
# requester's QP completes the oldest Write with RETRY_EXC_ERR, flushes the
# rest in order, is in ERR and flushes new work; nothing hangs (lossy-test
# retry fails when no error comes within 30 s: the 10 s floor of silence,
# EFI_MIN_DEAD_NS, and a loaded host).  QP timeout 14 (67 ms),
# retry_cnt 7.  Every port of host 1 (the target's) goes down, so nothing
# gets through either way; they come back once the error is seen, for the
# side channel.  About 15 s, root.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/lossy/lib.sh
. "$(dirname "$0")/lib.sh"
lossy_init lr

tb_up 2 1 2 off
lossy_pair retry retry 18741 --size 4096 --window 8 --qp-timeout 14 --retry-cnt 7 --seconds 30 --timeout 30
lossy_wait_started retry
for p in h1p0 h1p1; do
	tb_link "$p" down || fail "tb_link $p down"
done
TB_ON_EXIT+=("tb_link h1p0 up; tb_link h1p1 up")
log "every path of host 1 is down"
_retry_seen() {
	grep -q '^RESULT' "$TMPD/retry.client" || ! pid_running "${LOSSY_CPID[retry]}"
}
wait_for 40000 "the client to see the QP fail" _retry_seen
for p in h1p0 h1p1; do
	tb_link "$p" up || fail "tb_link $p up"
done
lossy_finish retry
log "RETRY_EXC_ERR $(lossy_result retry error_after_last_success_ms) ms after the last success (timeout x (retry_cnt + 1) = $(lossy_result retry nominal_ms) ms)"
