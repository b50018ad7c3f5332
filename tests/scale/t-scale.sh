#!/bin/bash
# SPDX-License-Identifier: MIT
# 10,000 connected QPs between two processes on two hosts (issue 18): each
# process holds more than the 4,096 QPs of one efid slot, so its context
# takes further QPN blocks from efid (libefi/qpn_blocks.c) and reserves its
# quota in batches (libefi/lease.c).  The QPs are connected by hand (QPNs
# over TCP, no connection key): every packet of a QP in a later block must
# pass the peer's keyless source check, i.e. leave from its own block's
# ports.  One message over each QP, checked; efid's tables (contexts, QPs
# reserved) and its descriptors while connected and after teardown; RSS
# per QP; an efid restart (SIGKILL) while connected, after which efid knows
# every block of the context again.  SCALE_QPS changes N (default 10,000);
# SCALE_WINDOW the messages in flight at once (scale-test's default 256).
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/data/lib.sh
. "$(dirname "$0")/../data/lib.sh"
: "${SCALE_TEST:=$top_builddir/tests/scale/scale-test}"
N=${SCALE_QPS:-10000}
dp_init sx
[ -x "$SCALE_TEST" ] || fail "scale-test not built at $SCALE_TEST"
dp_two_hosts

fds_of() { find "/proc/${EFID_PID[$1]}/fd" -mindepth 1 -maxdepth 1 | wc -l; }
rss_of() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }
# table ID INSTANCE: "LEASES QPS" as efid ID lists them
table() { efid_use "$1"; iface_json "$2" efi0 | jq -r '"\(.leases) \(.qps)"'; }
# for wait_for, which runs its command again and again
table_is() { [ "$(table "$1" "$2")" = "$3" ]; }
fds_are() { [ "$(fds_of "$1")" = "$2" ]; }

FD1=$(fds_of one) FD2=$(fds_of two)
assert_eq "$(table one "$A")" "0 0"
assert_eq "$(table two "$B")" "0 0"
log "before: efid one $FD1 fds, $(rss_of "${EFID_PID[one]}") KiB; efid two $FD2 fds"

log "$N QPs in $A and in $B, connected pairwise, one message over each"
in_a timeout -k 5 300 "$SCALE_TEST" server --qps "$N" --port 7911 --hold "$TMPD/hold.a" \
	>"$TMPD/server.out" 2>&1 &
SPID=$!
TRACK_BGPIDS+=("$SPID")
in_b timeout -k 5 300 "$SCALE_TEST" client --qps "$N" --host "$IP_A" --port 7911 \
	${SCALE_WINDOW:+--window "$SCALE_WINDOW"} --hold "$TMPD/hold.b" --hold-destroyed "$TMPD/destroyed.b" >"$TMPD/client.out" 2>&1 &
CPID=$!
TRACK_BGPIDS+=("$CPID")
# both connected and every message checked, or one of them gone
deadline=$(($(date +%s) + 240))
until [ -e "$TMPD/hold.a" ] && [ -e "$TMPD/hold.b" ]; do
	if ! pid_running "$SPID" || ! pid_running "$CPID" || [ "$(date +%s)" -ge "$deadline" ]; then
		_dp_show "$TMPD/server.out" server
		_dp_show "$TMPD/client.out" client
		fail "the QPs did not all connect (output above)"
	fi
	sleep 0.1
done
_dp_show "$TMPD/server.out" server
_dp_show "$TMPD/client.out" client

# While connected: one context per host, holding at least N QPs (a batch
# reserved ahead is at most a quarter more).
for h in "one $A" "two $B"; do
	read -r id inst <<<"$h"
	read -r leases qps <<<"$(table "$id" "$inst")"
	[ "$leases" = 1 ] || fail "efid $id lists $leases contexts, not 1"
	[ "$qps" -ge "$N" ] && [ "$qps" -le $((N + N / 4 + 16)) ] ||
		fail "efid $id accounts $qps QPs for $N"
	log "efid $id while connected: $leases context, $qps QPs reserved, $(fds_of "$id") fds, $(rss_of "${EFID_PID[$id]}") KiB"
done
# one descriptor per context (its lease connection), none per QP or block
assert_eq "$(fds_of one)" "$((FD1 + 1))"
assert_eq "$(fds_of two)" "$((FD2 + 1))"
blocks=$(awk '$1 == "qps" {print $4}' "$TMPD/client.out")
[ "${blocks:-0}" -ge $(((N + 4095) / 4096)) ] || fail "the client's QPs span ${blocks:-no} blocks"

# efid two killed and started again while connected: the client's context
# hands back every block's sockets (one LEASE_RESUME each) and what it
# reserved, exactly its QPs (the batch ahead is not reported).
log "efid two: SIGKILL and started again while the QPs are connected"
efid_stop two KILL
efid_launch two
wait_for 5000 "efid two knows the client's context again" table_is two "$B" "1 $N"
resumed=$(grep -c "lease: slot [0-9]* of $B/efi0 resumed by pid" "${EFID_DIR[two]}/efid.log")
[ "$resumed" = "$blocks" ] || fail "efid two took back $resumed slots of the client's $blocks"
log "efid two took back all $blocks slots ${WAITED_MS} ms after it answered"
FD2=$(($(fds_of two) - 1))	# its baseline: what it holds without the context

rm -f "$TMPD/hold.a" "$TMPD/hold.b"
# The client destroyed its QPs and keeps its context open: it gives back
# every QP it reserved, the batch ahead too (detach --wait waits for 0).
wait_for 120000 "the client's QPs destroyed" test -e "$TMPD/destroyed.b"
wait_for 3000 "efid two's table: the context, no QP" table_is two "$B" "1 0"
rm -f "$TMPD/destroyed.b"
src=0 crc=0
wait "$SPID" || src=$?
wait "$CPID" || crc=$?
_dp_show "$TMPD/server.out" server
_dp_show "$TMPD/client.out" client
[ "$src" = 0 ] && [ "$crc" = 0 ] || fail "server exited $src, client $crc"
for f in server client; do
	grep -q "^bad_source 0$" "$TMPD/$f.out" || fail "the $f dropped packets as forged"
	log "$f: $(grep '^rss_per_qp_b' "$TMPD/$f.out") ($(grep '^rss_kb' "$TMPD/$f.out"))"
done
log "client: $(grep '^connect_us' "$TMPD/client.out") (median, p99), $(grep '^connects_per_s' "$TMPD/client.out")"

# Torn down: efid's tables and descriptors where they started.
wait_for 3000 "efid one's table empty" table_is one "$A" "0 0"
wait_for 3000 "efid two's table empty" table_is two "$B" "0 0"
wait_for 3000 "efid one's fds back to $FD1" fds_are one "$FD1"
wait_for 3000 "efid two's fds back to $FD2" fds_are two "$FD2"
log "after: efid one $(fds_of one) fds, $(rss_of "${EFID_PID[one]}") KiB; efid two $(fds_of two) fds"
