#!/bin/bash
# Two interfaces of one instance on one L2 segment (issue 22): each answers
# ARP only for its own addresses (efid sets arp_ignore=1 and
# arp_announce=2 on the interfaces it makes), so a peer resolves efi0's
# address to efi0's MAC and efi1's to efi1's, every time; re-created
# (repaired) interfaces get the same settings, and interfaces an older efid
# made get them at the next start.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
. "$(dirname "$0")/lib.sh"
lib_init ar

command -v ping >/dev/null || skip "ping (iputils-ping) is not installed"

A=${PFX}a
B=${PFX}b
BR=${PFX}br
mk_netns "$A"
mk_netns "$B"
mk_bridge "$BR"
efid_start main Interfaces.Repair=yes
assert_exit 0 ctl attach "$A" --name efi0 --address 10.93.0.1/24 --uplink "$BR"
assert_exit 0 ctl attach "$A" --name efi1 --address 10.93.0.2/24 --uplink "$BR"
assert_exit 0 ctl attach "$B" --name efi0 --address 10.93.0.9/24 --uplink "$BR"
settle "$A"
settle "$B"

sysctl_of() { ip netns exec "$1" sysctl -n "net.ipv4.conf.$2.$3"; }
for dev in efi0 efi1; do
	assert_eq 1 "$(sysctl_of "$A" "$dev" arp_ignore)" "arp_ignore of $A/$dev"
	assert_eq 2 "$(sysctl_of "$A" "$dev" arp_announce)" "arp_announce of $A/$dev"
done

mac_of() { ip -n "$A" -j link show "$1" | jq -r '.[0].address'; }
M0=$(mac_of efi0)
M1=$(mac_of efi1)
# resolved IP: the MAC the peer's neighbour table holds for IP after a ping
resolved() {
	ip -n "$B" neigh flush dev efi0 >/dev/null 2>&1
	ip netns exec "$B" ping -c 1 -W 2 "$1" >/dev/null 2>&1 || fail "ping $1 from $B failed"
	ip -n "$B" -j neigh show "$1" dev efi0 | jq -r '.[0].lladdr'
}
log "efi0 $M0, efi1 $M1: five resolutions each from $B"
for _ in 1 2 3 4 5; do
	assert_eq "$M0" "$(resolved 10.93.0.1)" "MAC $B resolves for $A/efi0's address"
	assert_eq "$M1" "$(resolved 10.93.0.2)" "MAC $B resolves for $A/efi1's address"
done

# The traffic that failed with both on one segment ("retry counter
# exceeded"): an RDMA Write through the connection manager from B to each
# of A's interfaces.  To efi0 it needs the ARP settings (B's packets for
# efi0's address went to efi1's MAC, and efi0's wire sockets, bound to
# efi0, never saw them); to efi1, efid's answers leaving from the address
# the request was sent to (they left from efi0's, and B's efid, matching
# answers by address, reported "unreachable").  The server listens before
# the client connects: a client that finds no listener yet is run again.
EFI_PERF=${EFI_PERF:-$top_builddir/tools/efi-perf/efi-perf}
cm_transfer() { # DEV ADDR SERVICE
	local spid try
	ip netns exec "$A" env EFI_SOCKET="$SOCK" timeout -k 5 60 "$EFI_PERF" write_bw -d "$1" -p "$3" -n 300 \
		>"$TMPD/server-$1" 2>&1 &
	spid=$!
	TRACK_BGPIDS+=("$spid")
	for try in 1 2 3 4 5 6 7 8 9 10; do
		sleep 0.5
		ip netns exec "$B" env EFI_SOCKET="$SOCK" timeout -k 5 60 "$EFI_PERF" write_bw -p "$3" -n 300 "$2" \
			>"$TMPD/client-$1" 2>&1 && break
		pid_running "$spid" || break
		log "client to $2 (try $try): $(tail -n 1 "$TMPD/client-$1")"
	done
	wait "$spid" || fail "efi-perf server on $A/$1 failed: $(cat "$TMPD/server-$1") client: $(cat "$TMPD/client-$1")"
	grep -q "BW" "$TMPD/client-$1" || fail "no RDMA Write to $A/$1 ($2): $(cat "$TMPD/client-$1")"
}
cm_transfer efi0 10.93.0.1 18601
cm_transfer efi1 10.93.0.2 18602
log "RDMA Writes through the connection manager to $A/efi0 and $A/efi1"

log "an interface made without them (an older efid) gets them at the next start"
ip netns exec "$A" sysctl -qw net.ipv4.conf.efi0.arp_ignore=0 net.ipv4.conf.efi0.arp_announce=0
efid_stop main
efid_start main Interfaces.Repair=yes
assert_eq 1 "$(sysctl_of "$A" efi0 arp_ignore)" "arp_ignore of $A/efi0 after a restart"
assert_eq 2 "$(sysctl_of "$A" efi0 arp_announce)" "arp_announce of $A/efi0 after a restart"

log "a re-created interface gets the settings too"
ip -n "$A" link del efi1
wait_for 5000 "efi1 re-created" ip -n "$A" link show efi1
wait_for 2000 "arp_ignore on the new efi1" test "$(sysctl_of "$A" efi1 arp_ignore)" = 1
assert_eq 2 "$(sysctl_of "$A" efi1 arp_announce)" "arp_announce of the re-created efi1"
assert_exit 0 ctl detach "$A" --all
assert_exit 0 ctl detach "$B" --all
efid_stop main
