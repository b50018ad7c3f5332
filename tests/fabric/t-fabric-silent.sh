#!/bin/bash
# Failed silent operations stay out of the CQ (fabric/cq.c): fab-silent's
# injects are held back by a peer that posts no receive, then flushed by
# fi_shutdown; the CQ must report the receive's and the send's errors with
# their contexts and nothing without one (what crashed ofi_rxm, and Open
# MPI over it, in tests/mpi).  Cost: ~2 s.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/fabric/lib.sh
. "$(dirname "$0")/lib.sh"
fab_init fz
: "${FAB_SILENT:=$top_builddir/tests/fabric/fab-silent}"
[ -x "$FAB_SILENT" ] || fail "fab-silent not built at $FAB_SILENT"
dp_one_host
PORT=47595

log "16 injects to a peer without receives, then fi_shutdown: server in A, client in B"
fa timeout -k 5 30 "$FAB_SILENT" server "$PORT" >"$TMPD/srv" 2>&1 &
spid=$!
TRACK_BGPIDS+=("$spid")
wait_for 10000 "fab-silent listening in $A" grep -q listening "$TMPD/srv"
crc=0
srv=0
fb timeout -k 5 30 "$FAB_SILENT" client "$IP_A" "$PORT" 16 >"$TMPD/cli" 2>&1 || crc=$?
wait "$spid" || srv=$?
sed 's/^/    server: /' "$TMPD/srv"
sed 's/^/    client: /' "$TMPD/cli"
if [ "$crc" != 0 ] || [ "$srv" != 0 ]; then
	fail "fab-silent: client exit $crc, server exit $srv"
fi
fmatch '^client: ok$' "$(cat "$TMPD/cli")" "the client's verdict"
fmatch '^16 injects held back' "$(cat "$TMPD/cli")" "the injects posted"
log "ok"
