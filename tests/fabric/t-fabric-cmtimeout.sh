#!/bin/bash
# fi_connect waits for a slow server (issue 21: a fixed 5 s timeout lost
# the connection of a server that took a few seconds between FI_CONNREQ and
# fi_accept, as one allocating its buffers or on a loaded host does): the
# server sleeps 7 s before fi_accept and the client must connect.  And a
# request the client gave up on (FI_EFI_CONNECT_TIMEOUT=1000) answers
# clearly: the client's FI_ETIMEDOUT names the setting, the server's late
# fi_accept fails (FI_ECONNABORTED) without harm.  fab-connreq.c, cases S
# and F.  Cost: ~12 s.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/fabric/lib.sh
. "$(dirname "$0")/lib.sh"
fab_init ft
: "${FAB_CONNREQ:=$top_builddir/tests/fabric/fab-connreq}"
dp_one_host
mkdir -p "$TMPD/sync"
chmod 777 "$TMPD/sync"

log "a server 7 s slow to fi_accept, then a client that gives up after 1 s"
fab_pair "$FAB_CONNREQ" 47597 "$TMPD/sync" SF -- "$TMPD/sync" SF
fmatch '^case S: as expected$' "$(cat "$TMPD/cli")" "the slow server's client"
fmatch '^case F: .*did not accept in time.*FI_EFI_CONNECT_TIMEOUT' "$(cat "$TMPD/cli")" \
	"the client's timeout, explained"
fmatch 'fi_accept of a request the client gave up: -103 ' "$(cat "$TMPD/srv")" \
	"the late fi_accept: FI_ECONNABORTED"
log "ok"
