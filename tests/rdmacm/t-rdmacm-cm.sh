#!/bin/bash
# rdmacm-check (tests/rdmacm/rdmacm-check.c, linked against the system
# librdmacm) under efi-run between the instances of two hosts: private
# data and depths both ways, a reject with the consumer's reason (status
# 28) and data, a port nobody listens on (REJECTED or UNREACHABLE, not a
# hang), an address that is no EFI interface's (ADDR_ERROR), a
# non-blocking pollable channel fd, and a client killed under a live
# connection (the server gets DISCONNECTED).  Cost: ~10 s.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# Argument: two (two efid on one bridge, the default) or hosts (two testbed
# hosts routed over two paths: t-rdmacm-cm-hosts.sh).
MODE=${1:-two}
if [ "$MODE" = hosts ]; then
	# shellcheck source=tests/testbed/testbed.sh
	. "$(dirname "$0")/../testbed/testbed.sh"
fi
# shellcheck source=tests/rdmacm/lib.sh
. "$(dirname "$0")/lib.sh"
if [ "$MODE" = hosts ]; then
	rcm_init cx testbed
else
	rcm_init rc
fi
CHECKER=$top_builddir/tests/rdmacm/rdmacm-check
[ -x "$CHECKER" ] || fail "rdmacm-check not built at $CHECKER"
rcm_topology "$MODE"

# rdmacm-check is ours: leak detection stays on in a sanitizer build
ra() { in_a "$EFI_RUN" "$@"; }
rb() { in_b "$EFI_RUN" "$@"; }

PORT=7390
# the server answers three requests: pdata, reject, hang
ra timeout -k 5 120 "$CHECKER" server "$IP_A" "$PORT" 3 >"$TMPD/s.out" 2>&1 &
spid=$!
TRACK_BGPIDS+=("$spid")
wait_for 10000 "the server listening" grep -q '^listening' "$TMPD/s.out"

# client CASE [ADDR [PORT]]: must pass
client() {
	local rc=0
	log "client $1"
	rb timeout -k 5 60 "$CHECKER" client "${2:-$IP_A}" "${3:-$PORT}" "$1" >"$TMPD/c.out" 2>&1 || rc=$?
	sed 's/^/    client: /' "$TMPD/c.out"
	[ $rc = 0 ] || fail "client $1: exit $rc"
	vmatch "^client $1 done" "$(cat "$TMPD/c.out")" "client $1 finished"
}
client pdata
vmatch '^accept private data ok' "$(cat "$TMPD/c.out")" "the server's private data"
client reject
vmatch '^event RDMA_CM_EVENT_REJECTED status 28' "$(cat "$TMPD/c.out")" "consumer reject"
client nolistener "$IP_A" $((PORT + 1))
client addrerror 127.0.0.1

log "client hang, then killed: the server gets DISCONNECTED"
vb timeout -k 5 60 "$CHECKER" client "$IP_A" "$PORT" hang >"$TMPD/h.out" 2>&1 &
hpid=$!
TRACK_BGPIDS+=("$hpid")
wait_for 20000 "the hanging client connected" grep -q '^pid ' "$TMPD/h.out"
# the client itself (efi-run and timeout exec'ed or wait on it), by its pid
cpid=$(awk '$1 == "pid" {print $2; exit}' "$TMPD/h.out")
kill -KILL "$cpid"
wait "$hpid" 2>/dev/null || true

src=0
wait "$spid" || src=$?
sed 's/^/    server: /' "$TMPD/s.out"
[ $src = 0 ] || fail "server exit $src"
out=$(cat "$TMPD/s.out")
vmatch '^server done' "$out" "the server finished"
[ "$(grep -c '^disconnected' <<<"$out")" = 2 ] || fail "the server saw $(grep -c '^disconnected' <<<"$out") DISCONNECTED, wanted 2 (pdata, killed client)"
[ "$(grep -c '^rejected' <<<"$out")" = 1 ] || fail "the server rejected $(grep -c '^rejected' <<<"$out") requests, wanted 1"
log "PASS: rdma_cm semantics over libefi-rdmacm"
