#!/bin/bash
# Endpoints keep the address they were bound to, sockets-style (issue 21,
# fab-sockets.c, what fabtests' msg_sockets does): a passive endpoint from
# fi_getinfo(IP, PORT, FI_SOURCE) and the endpoint it accepts are named
# IP:PORT; a passive endpoint opened without an address takes the one
# fi_setname gives, and an active endpoint opened with hints->handle = it
# takes that address over and keeps it through fi_connect.  Cost: ~3 s.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/fabric/lib.sh
. "$(dirname "$0")/lib.sh"
fab_init fk
: "${FAB_SOCKETS:=$top_builddir/tests/fabric/fab-sockets}"
dp_one_host

log "fab-sockets: server in A bound to $IP_A:47599, client in B bound to $IP_B:47600"
fab_pair "$FAB_SOCKETS" 47599 "$IP_A" -- "$IP_B" 47600
fmatch "^name of the accepted endpoint: $IP_A:47599\$" "$(cat "$TMPD/srv")" "the accepted endpoint's name"
fmatch "^name of the connected endpoint: $IP_B:47600\$" "$(cat "$TMPD/cli")" "the client's name"
log "ok"
