#!/bin/bash
# What the efi provider's calls promise, as tcp and verbs keep it (issue
# 21, fab-msgops.c): a send or write with remote CQ data 0 reaches the
# target with FI_REMOTE_CQ_DATA (cq_data_size 4 also for FI_MSG-only
# hints, FI_RX_CQ_DATA in rx_attr->mode for an RMA target); FI_INJECT on
# fi_sendmsg/fi_writemsg frees the buffer at return and still completes;
# fi_shutdown is an FI_SHUTDOWN on both ends' EQs; fi_cq_signal wakes
# fi_cq_sread.  Cost: ~3 s.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/fabric/lib.sh
. "$(dirname "$0")/lib.sh"
fab_init fm
: "${FAB_MSGOPS:=$top_builddir/tests/fabric/fab-msgops}"
dp_one_host

log "fab-msgops: server in A, client in B"
fab_pair "$FAB_MSGOPS" 47598
fmatch '^fi_writedata, data 0: flags' "$(cat "$TMPD/srv")" "the write with data 0"
fmatch '^FI_SHUTDOWN: our fi_shutdown reached our EQ$' "$(cat "$TMPD/cli")" "the caller's FI_SHUTDOWN"
fmatch '^FI_SHUTDOWN: the peer' "$(cat "$TMPD/srv")" "the peer's FI_SHUTDOWN"
fmatch '^fi_cq_signal woke' "$(cat "$TMPD/srv")" "fi_cq_signal"
log "ok"
