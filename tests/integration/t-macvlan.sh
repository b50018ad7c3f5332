#!/bin/bash
# The macvlan kind: created on the uplink device and moved into the instance,
# addressed and up, its GIDs shown, removed by detach.
# shellcheck disable=SC2016 # jq programs: their $names are jq's
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
. "$(dirname "$0")/lib.sh"
lib_init mv

A=${PFX}a
UP=${PFX}up
mk_netns "$A"
# A dummy device where the kernel has the driver, else one end of a veth pair.
if ip link add "$UP" type dummy 2>/dev/null; then
	TRACK_LINKS+=("$UP")
else
	mk_link "$UP" type veth peer name "${PFX}uq"
	ip link set "${PFX}uq" up
fi
ip link set "$UP" up
efid_start main

args=(attach "$A" --kind macvlan --uplink "$UP" --name efi0 --address 10.89.0.1/24 --address fd89::1/64)
assert_exit 0 ctl --json "${args[@]}"
assert_eq created "$(jq -r .result <<<"$OUT")" "attach result"

kjson=$(ip -n "$A" -d -j link show efi0) || fail "efi0 is not in $A"
assert_eq macvlan "$(jq -r '.[0].linkinfo.info_kind' <<<"$kjson")" "kernel kind of efi0"
assert_eq "efi:$HID:$A/efi0" "$(jq -r '.[0].ifalias // ""' <<<"$kjson")" "ifalias of efi0"
ns_link_up "$A" efi0 || fail "efi0 is not UP"
ns_has_addr "$A" efi0 10.89.0.1/24 || fail "efi0 lacks 10.89.0.1/24"
ns_has_addr "$A" efi0 fd89::1/64 || fail "efi0 lacks fd89::1/64"
ip -d -j link show | jq -e --arg a "efi:$HID:$A/efi0" '[.[] | select(.ifalias == $a)] | length == 0' >/dev/null ||
	fail "a macvlan attach left a device with its mark in the host namespace"

assert_eq macvlan "$(iface_field "$A" efi0 .kind)" "kind in status"
assert_eq "$UP" "$(iface_field "$A" efi0 .uplink)" "uplink in status"
assert_eq attached "$(iface_field "$A" efi0 .state)" "state in status"
wait_for 1000 "link up" field_is "$A" efi0 .link up
has_gid "$A" efi0 ::ffff:10.89.0.1 || fail "GID ::ffff:10.89.0.1 missing: $(gids_of "$A" efi0)"
has_gid "$A" efi0 fd89::1 || fail "GID fd89::1 missing: $(gids_of "$A" efi0)"
wait_for 2000 "link-local GID" has_gid_prefix "$A" efi0 fe80:

log "again: unchanged"
assert_exit 0 ctl --json "${args[@]}"
assert_eq unchanged "$(jq -r .result <<<"$OUT")" "second attach result"
log "macvlan without an uplink is refused"
assert_fails ctl attach "$A" --kind macvlan --name efi1 --address 10.89.0.2/24
ip -n "$A" link show efi1 >/dev/null 2>&1 && fail "efi1 created without an uplink"

log "detach"
assert_exit 0 ctl detach "$A" efi0
ip -n "$A" link show efi0 >/dev/null 2>&1 && fail "efi0 still in $A after detach"
assert_eq 0 "$(jq_status '[.instances[].interfaces[]] | length')" "interfaces left"
ip link show "$UP" >/dev/null 2>&1 || fail "detach removed the uplink $UP"
