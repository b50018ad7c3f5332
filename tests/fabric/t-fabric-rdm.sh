#!/bin/bash
# Remote CQ data over "efi;ofi_rxm" (FI_EP_RDM, what MPI uses; issue 21):
# FI_MSG|FI_TAGGED hints without any mode get cq_data_size > 0, and
# fi_senddata/fi_tsenddata with data 0 and 0x1234abcd arrive with
# FI_REMOTE_CQ_DATA and their data (fab-rdm.c).  Cost: ~3 s.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/fabric/lib.sh
. "$(dirname "$0")/lib.sh"
fab_init fr
: "${FAB_RDM:=$top_builddir/tests/fabric/fab-rdm}"
dp_one_host
# ofi_rxm is libfabric's, not ours: its leaks at exit are not findings
FAB_OWN_ENV=()

log "fab-rdm: server in A, client in B"
fab_pair "$FAB_RDM" 47601
fmatch '^message 0: flags 0x[0-9a-f]+ data 0x0$' "$(cat "$TMPD/srv")" "data 0 over rdm"
log "ok"
