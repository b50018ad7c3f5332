#!/bin/bash
# Every order of fi_accept, fi_reject, fi_close of the handle, closing the
# endpoint opened on a request, fi_freeinfo and closing the passive
# endpoint frees each object once (fab-connreq.c, issue 21: fi_reject
# freed the request and closing the endpoint freed it again: "free():
# double free detected").  In the sanitizer build ASan also catches a use
# after free or a leak.  Cost: ~10 s.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/fabric/lib.sh
. "$(dirname "$0")/lib.sh"
fab_init fc
: "${FAB_CONNREQ:=$top_builddir/tests/fabric/fab-connreq}"
dp_one_host
mkdir -p "$TMPD/sync"
chmod 777 "$TMPD/sync"

log "15 ways to end a connection request: server in A, client in B"
fab_pair "$FAB_CONNREQ" 47596 "$TMPD/sync" -- "$TMPD/sync"
fmatch '^case F: as expected$' "$(cat "$TMPD/cli")" "the client that gave up"
fmatch 'fi_accept of a request the client gave up: -[0-9]+' "$(cat "$TMPD/srv")" \
	"the late fi_accept's error"
log "ok"
