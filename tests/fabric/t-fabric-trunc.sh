#!/bin/bash
# A message longer than the receive over the efi provider (issue 21): the
# target's fi_cq_readerr says FI_ETRUNC with len = what the buffer holds
# and olen = what did not fit, and the buffer holds the message's first
# bytes (tests/fabric/fab-trunc.c).  Cost: ~2 s.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/fabric/lib.sh
. "$(dirname "$0")/lib.sh"
fab_init ft
: "${FAB_TRUNC:=$top_builddir/tests/fabric/fab-trunc}"
dp_one_host

log "fab-trunc: server in A, client in B"
fab_pair "$FAB_TRUNC" 47594
fmatch '^truncated receive: FI_ETRUNC, len 100, olen 3900' "$(cat "$TMPD/srv")" "the truncated receive"
fmatch '^the send failed' "$(cat "$TMPD/cli")" "the sender's error"
log "ok"
