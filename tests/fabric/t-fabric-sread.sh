#!/bin/bash
# A ping-pong over the efi provider (FI_EP_MSG) whose two sides block in
# fi_cq_sread: the CQ's fd wait object and fi_trywait's arming, the path
# ofi_rxm and blocking applications take.  Every message is checked; a
# lost wake-up shows as a 10 s timeout.  The mean round trip is printed
# (a figure, not a verdict).  Cost: ~3 s.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/fabric/lib.sh
. "$(dirname "$0")/lib.sh"
fab_init fs
: "${FAB_SREAD:=$top_builddir/tests/fabric/fab-sread}"
: "${FAB_SREAD_ITERS:=2000}"
[ -x "$FAB_SREAD" ] || fail "fab-sread not built at $FAB_SREAD"
dp_one_host
PORT=47594

log "fi_cq_sread ping-pong, $FAB_SREAD_ITERS round trips: server in A, client in B"
fa timeout -k 5 50 "$FAB_SREAD" server "$PORT" "$FAB_SREAD_ITERS" >"$TMPD/srv" 2>&1 &
spid=$!
TRACK_BGPIDS+=("$spid")
wait_for 10000 "fab-sread listening in $A" grep -q listening "$TMPD/srv"
crc=0
srv=0
fb timeout -k 5 50 "$FAB_SREAD" client "$IP_A" "$PORT" "$FAB_SREAD_ITERS" >"$TMPD/cli" 2>&1 || crc=$?
wait "$spid" || srv=$?
sed 's/^/    server: /' "$TMPD/srv"
sed 's/^/    client: /' "$TMPD/cli"
if [ "$crc" != 0 ] || [ "$srv" != 0 ]; then
	fail "fab-sread: client exit $crc, server exit $srv"
fi
fmatch '^client: ok$' "$(cat "$TMPD/cli")" "the client's verdict"
fmatch '^server: ok$' "$(cat "$TMPD/srv")" "the server's verdict"
log "ok"
