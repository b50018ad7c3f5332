#!/bin/bash
# fi_atomic over the efi provider between two instances of one host
# (FI_EP_MSG, tests/fabric/fab-atomic.c): fetch-add, compare-swap, atomic
# write and inject, atomic read and 64 concurrent fetch-adds, every fetched
# value and the target words checked; fi_atomicvalid / fetch / compare
# valid and fi_query_atomic answers; and fi_getinfo's hint checks (hints
# beyond the device get -FI_ENODATA, defaults are the device's limits).
# Cost: ~5 s.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/fabric/lib.sh
. "$(dirname "$0")/lib.sh"
fab_init fa
: "${FAB_ATOMIC:=$top_builddir/tests/fabric/fab-atomic}"
[ -x "$FAB_ATOMIC" ] || fail "fab-atomic not built at $FAB_ATOMIC"
dp_one_host
PORT=47593

log "fi_getinfo hints against the device's limits (in A)"
out=$(fa timeout -k 5 30 "$FAB_ATOMIC" info 2>&1) || fail "fab-atomic info: $out"
printf '%s\n' "$out" | sed 's/^/    /'

log "fi_atomic: server in A, client in B"
fa timeout -k 5 40 "$FAB_ATOMIC" server "$PORT" >"$TMPD/srv" 2>&1 &
spid=$!
TRACK_BGPIDS+=("$spid")
wait_for 10000 "fab-atomic listening in $A" grep -q listening "$TMPD/srv"
crc=0
srv=0
fb timeout -k 5 40 "$FAB_ATOMIC" client "$IP_A" "$PORT" >"$TMPD/cli" 2>&1 || crc=$?
wait "$spid" || srv=$?
sed 's/^/    server: /' "$TMPD/srv"
sed 's/^/    client: /' "$TMPD/cli"
if [ "$crc" != 0 ] || [ "$srv" != 0 ]; then
	fail "fab-atomic: client exit $crc, server exit $srv"
fi
fmatch '^client: ok$' "$(cat "$TMPD/cli")" "the client's verdict"
fmatch '^server: ok$' "$(cat "$TMPD/srv")" "the server's verdict"
log "ok"
