# shellcheck shell=bash
# Helpers of the rdma_cm tests (tests/rdmacm/t-*.sh), on top of
# tests/verbs/lib.sh (two instances with efid, efi-run, va/vb):
#
#     . "$(dirname "$0")/lib.sh"
#     rcm_init TAG          # verbs_init + libefi-rdmacm as efi-run's librdmacm.so.1
#     dp_one_host / dp_two_hosts
#     va CMD... / vb CMD... # CMD under efi-run inside instance A / B
# shellcheck source=tests/verbs/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../verbs/lib.sh"

: "${EFI_RDMACM_LIB:=$top_builddir/rdmacm/.libs/libefi-rdmacm.so}"
: "${EFI_RDMACM_DIR:=$top_builddir/rdmacm/.libs/efi/rdmacm}"
export EFI_RDMACM_DIR
# the uninstalled libefi-rdmacm.so finds the uninstalled libefi-verbs.so here
export LD_LIBRARY_PATH="$top_builddir/verbs/.libs:$LD_LIBRARY_PATH"

rcm_init() {
	verbs_init "$1"
	[ -r "$EFI_RDMACM_LIB" ] || fail "libefi-rdmacm.so not built at $EFI_RDMACM_LIB"
	[ "$EFI_RDMACM_DIR/librdmacm.so.1" -ef "$EFI_RDMACM_LIB" ] ||
		fail "$EFI_RDMACM_DIR/librdmacm.so.1 is not a link to $EFI_RDMACM_LIB"
}

# rcm_wait_efi_listen NS: nothing to poll for an EFI listener from outside
# (it is efid's, not a socket), so the caller retries the client instead.
