#!/bin/bash
# GIDs follow the kernel: an address added or removed with `ip addr` inside
# the instance shows up in (or vanishes from) the GID table within 1 s, and
# the other GIDs keep their indexes.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
. "$(dirname "$0")/lib.sh"
lib_init ge

A=${PFX}a
BR=${PFX}br
mk_netns "$A"
mk_bridge "$BR"
efid_start main

assert_exit 0 ctl attach "$A" --name efi0 --address 10.83.0.1/24 --address fd83::1/64 --uplink "$BR"
settle "$A"
wait_for 2000 "link-local GID on $A/efi0" has_gid_prefix "$A" efi0 fe80:
G0=$(gids_of "$A" efi0)
log "GIDs at start:"$'\n'"$G0"
has_gid "$A" efi0 ::ffff:10.83.0.1 || fail "GID ::ffff:10.83.0.1 missing"
has_gid "$A" efi0 fd83::1 || fail "GID fd83::1 missing"

# keeps_indexes: every GID of G0 still has its index.
keeps_indexes() {
	local now line
	now=$(gids_of "$A" efi0)
	while read -r line; do
		grep -qxF "$line" <<<"$now" || fail "GID '$line' lost or re-indexed; now:"$'\n'"$now"
	done <<<"$G0"
}

log "ip addr add 10.83.0.2/24"
ip -n "$A" addr add 10.83.0.2/24 dev efi0 || fail "ip addr add failed"
wait_for 1000 "GID ::ffff:10.83.0.2 to appear" has_gid "$A" efi0 ::ffff:10.83.0.2
log "appeared after ${WAITED_MS} ms"
keeps_indexes

log "ip addr add fd83::2/64"
ip -n "$A" addr add fd83::2/64 dev efi0 nodad || fail "ip addr add (v6) failed"
wait_for 1000 "GID fd83::2 to appear" has_gid "$A" efi0 fd83::2
log "appeared after ${WAITED_MS} ms"
keeps_indexes
G1=$(gids_of "$A" efi0)
idx2=$(awk '$2 == "::ffff:10.83.0.2" {print $1}' <<<"$G1")
idx6=$(awk '$2 == "fd83::2" {print $1}' <<<"$G1")
assert_ne "$idx2" "$idx6" "indexes of the two new GIDs"

log "ip addr del 10.83.0.2/24"
ip -n "$A" addr del 10.83.0.2/24 dev efi0 || fail "ip addr del failed"
wait_for 1000 "GID ::ffff:10.83.0.2 to vanish" not has_gid "$A" efi0 ::ffff:10.83.0.2
log "vanished after ${WAITED_MS} ms"
keeps_indexes
assert_eq "$idx6 fd83::2" "$(gids_of "$A" efi0 | grep ' fd83::2$')" "index of fd83::2 after deleting 10.83.0.2"

log "ip addr del fd83::2/64"
ip -n "$A" addr del fd83::2/64 dev efi0 || fail "ip addr del (v6) failed"
wait_for 1000 "GID fd83::2 to vanish" not has_gid "$A" efi0 fd83::2
keeps_indexes
assert_eq "$G0" "$(gids_of "$A" efi0)" "GID table back to the start"

log "a new address takes a free index, the old ones stay"
ip -n "$A" addr add 10.83.0.3/24 dev efi0 || fail "ip addr add failed"
wait_for 1000 "GID ::ffff:10.83.0.3 to appear" has_gid "$A" efi0 ::ffff:10.83.0.3
keeps_indexes
