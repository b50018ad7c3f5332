#!/bin/bash
# An EFI interface detached (efictl detach) under a live rdma_cm
# connection, between two hosts: the program on the detached side gets
# RDMA_CM_EVENT_DEVICE_REMOVAL for its connection, as librdmacm gives it
# when the kernel removes an RDMA device, and nothing after it; the peer
# gets DISCONNECTED.  Three rounds (detach, attach again), since the
# library learns the removal from libefi's revoke, which efid sends on
# another socket just before it ends the connections.  Cost: ~10 s.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/rdmacm/lib.sh
. "$(dirname "$0")/lib.sh"
rcm_init rx
CHECKER=$top_builddir/tests/rdmacm/rdmacm-check
[ -x "$CHECKER" ] || fail "rdmacm-check not built at $CHECKER"
rcm_topology two

# rdmacm-check is ours: leak detection stays on in a sanitizer build
ra() { in_a "$EFI_RUN" "$@"; }
rb() { in_b "$EFI_RUN" "$@"; }

# b_has_efi0 JQ-FILTER: B's efi0 is listed by its efid and matches
b_has_efi0() {
	rcm_ctl b --json status "$B" 2>/dev/null |
		jq -e "[.instances[]?.interfaces[]? | select(.name == \"efi0\") | select($1)] | length > 0" >/dev/null
}

PORT=7420
for round in 1 2 3; do
	log "round $round: connect, then detach $B's efi0 under the connection"
	# emptied here, not by the background jobs' redirections: a job that
	# starts late left the last round's "listening" and "pid" for the
	# waits below, and the detach came before the client opened its
	# device (CI, loaded: "rdma_create_event_channel: No such device")
	: >"$TMPD/s.out"
	: >"$TMPD/c.out"
	ra timeout -k 5 60 "$CHECKER" server "$IP_A" "$PORT" 1 >"$TMPD/s.out" 2>&1 &
	spid=$!
	TRACK_BGPIDS+=("$spid")
	wait_for 10000 "the server listening" grep -q '^listening' "$TMPD/s.out"
	rb timeout -k 5 60 "$CHECKER" client "$IP_A" "$PORT" detach >"$TMPD/c.out" 2>&1 &
	cpid=$!
	TRACK_BGPIDS+=("$cpid")
	wait_for 20000 "the client connected" grep -q '^pid \|FAIL' "$TMPD/c.out"
	assert_exit 0 rcm_ctl b detach "$B" efi0
	crc=0 src=0
	wait "$cpid" || crc=$?
	wait "$spid" || src=$?
	sed 's/^/    client: /' "$TMPD/c.out"
	sed 's/^/    server: /' "$TMPD/s.out"
	[ $crc = 0 ] || fail "round $round: the client exit $crc (wanted DEVICE_REMOVAL, then nothing)"
	[ $src = 0 ] || fail "round $round: the server exit $src"
	vmatch '^event RDMA_CM_EVENT_DEVICE_REMOVAL status 0' "$(cat "$TMPD/c.out")" "the client's DEVICE_REMOVAL"
	vmatch '^disconnected' "$(cat "$TMPD/s.out")" "the server's DISCONNECTED"
	[ $round = 3 ] && break
	# a detach finishes after its answer ("detaching"): attach again
	# once efid lists no efi0 in B, and use it once it is attached
	wait_for 10000 "efi0 gone from $B" not b_has_efi0 '.'
	assert_exit 0 rcm_ctl b attach "$B" --name efi0 --address "$IP_B/24" --uplink "$BR"
	wait_for 10000 "efi0 attached in $B" b_has_efi0 '.state == "attached"'
	settle "$B"
	wait_for 5000 "ping $B -> $A" ip netns exec "$B" ping -c 1 -W 1 "$IP_A"
	PORT=$((PORT + 1))
done
log "PASS: DEVICE_REMOVAL when the interface is detached under a connection"
