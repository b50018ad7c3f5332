#!/bin/bash
# libefi-verbs under a verbs program of our own (verbs-check, linked with
# -libverbs): every call binds to EFI, the device and port look as the issue
# says, extended verbs fail like a provider without them, the inline data
# path, the ibv_wr_* API, completion and async events work.  Also efi-run's
# own errors.  Cost: ~5 s.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/verbs/lib.sh
. "$(dirname "$0")/lib.sh"
verbs_init vc
: "${VERBS_CHECK:=$top_builddir/tests/verbs/verbs-check}"
[ -x "$VERBS_CHECK" ] || fail "verbs-check not built at $VERBS_CHECK"

log "efi-run without a program, and with a missing library"
assert_exit 2 "$EFI_RUN"
vmatch 'usage: efi-run' "$ERR" "efi-run usage"
assert_exit 127 env EFI_VERBS_LIB=/nonexistent/libefi-verbs.so "$EFI_RUN" true
vmatch 'not found' "$ERR" "efi-run with a missing library"

dp_one_host
log "verbs-check in instance A"
# our own program: leak detection stays on in a sanitizer build
out=$(in_a timeout -k 5 60 "$EFI_RUN" "$VERBS_CHECK" efi0 "::ffff:$IP_A" libefi-verbs 2>&1) ||
	fail "verbs-check failed:
$out"
printf '%s\n' "$out"
vmatch 'verbs-check: all passed' "$out" "verbs-check summary"

log "without efi-run the same binary is plain libibverbs (no EFI device)"
out=$(in_a timeout 20 "$VERBS_CHECK" efi0 "::ffff:$IP_A" libefi-verbs 2>&1) &&
	fail "verbs-check passed without efi-run: $out"
vmatch 'FAILED: ibv_\* entry points bind to libefi-verbs' "$out" "binding check without efi-run"
