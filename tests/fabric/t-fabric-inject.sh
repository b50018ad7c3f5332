#!/bin/bash
# Injects above libefi's 1024-byte inline limit, up to the 16448 bytes
# fi_info offers (fab-inject.c, fabric/bounce.c): the data of the call
# arrives, buffers are the caller's on return, no completion surfaces for
# fi_inject, a full bounce pool is -FI_EAGAIN until fi_cq_read gives slots
# back, FI_INJECT on sendmsg/writemsg completes once with its context, an
# endpoint without a transmit CQ injects through a pool of its own.
# Cost: ~3 s.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/fabric/lib.sh
. "$(dirname "$0")/lib.sh"
fab_init fj
: "${FAB_INJECT:=$top_builddir/tests/fabric/fab-inject}"
dp_one_host

log "fab-inject: server in A, client in B"
fab_pair "$FAB_INJECT" 47596
fmatch '^received [0-9]+ messages .* intact, in order$' "$(cat "$TMPD/srv")" "the injected messages"
fmatch '^burst of [0-9]+ injects .* -FI_EAGAIN [1-9]' "$(cat "$TMPD/cli")" "the full pool"
fmatch '^[0-9]+ messages back from an endpoint without a transmit CQ: intact$' \
	"$(cat "$TMPD/cli")" "injects without a transmit CQ"
log "ok"
