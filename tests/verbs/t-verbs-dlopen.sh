#!/bin/bash
# Issue 23: efi-run serves programs that dlopen("libibverbs.so.1") and
# dlsym every function on that handle (PyTorch's TensorPipe does), which
# LD_PRELOAD alone does not reach.  verbs-dlopen (never linked with
# libibverbs) must find each function in libefi-verbs.so and move a Send
# and a Write between two QPs of its instance.  The same program with only
# the LD_PRELOAD of the old efi-run must get the system's functions and
# fail, so the check can fail.  Cost: ~3 s.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/verbs/lib.sh
. "$(dirname "$0")/lib.sh"
verbs_init vd
: "${VERBS_DLOPEN:=$top_builddir/tests/verbs/verbs-dlopen}"
[ -x "$VERBS_DLOPEN" ] || fail "verbs-dlopen not built at $VERBS_DLOPEN"

log "efi-run with a directory that does not hold the library"
assert_exit 127 env EFI_VERBS_DIR="$TMPD" "$EFI_RUN" true
vmatch 'libibverbs.so.1 is not' "$ERR" "efi-run with a wrong EFI_VERBS_DIR"

dp_one_host
log "verbs-dlopen under efi-run in instance A"
out=$(in_a timeout -k 5 60 "$EFI_RUN" "$VERBS_DLOPEN" efi0 "$EFI_VERBS_LIB" 2>&1) ||
	fail "verbs-dlopen failed under efi-run:
$out"
printf '%s\n' "$out"
vmatch 'verbs-dlopen: all passed' "$out" "verbs-dlopen summary"

log "with LD_PRELOAD alone, dlopen gets the system's libibverbs"
asan=$(ldd "$EFI_VERBS_LIB" 2>/dev/null | awk '$1 ~ /^libasan/ {print $3; exit}')
out=$(in_a env LD_PRELOAD="${asan:+$asan }$EFI_VERBS_LIB" timeout 20 "$VERBS_DLOPEN" efi0 "$EFI_VERBS_LIB" 2>&1) &&
	fail "verbs-dlopen passed with LD_PRELOAD alone: $out"
vmatch 'FAILED: dlsym\(ibv_get_device_list\) is libefi-verbs.so.s \(found in .*libibverbs' "$out" \
	"the lookup check without the directory"
echo "PASS: $TEST_NAME"
