#!/bin/bash
# Attach interfaces to two instances on one bridge, check efid's view (human
# and JSON) and the kernel's, ping between them, then detach one by name and
# the other with --all and check that nothing is left.
# shellcheck disable=SC2016 # jq programs: their $names are jq's
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
. "$(dirname "$0")/lib.sh"
lib_init ad

A=${PFX}a
B=${PFX}b
BR=${PFX}br
mk_netns "$A"
mk_netns "$B"
mk_bridge "$BR"
efid_start main

log "attach $A/efi0 with an IPv4 and an IPv6 address"
assert_exit 0 ctl --json attach "$A" --address 10.80.0.1/24 --address fd80::1/64 --name efi0 --uplink "$BR"
assert_eq created "$(jq -r .result <<<"$OUT")" "attach $A result"
assert_eq "$A" "$(jq -r '.instance' <<<"$OUT")" "attach reply .instance"
assert_eq efi0 "$(jq -r '.interface.name' <<<"$OUT")" "attach reply .interface.name"

log "attach $B without --name: efid picks efi0"
assert_exit 0 ctl --json attach "$B" --address 10.80.0.2/24 --uplink "$BR"
assert_eq created "$(jq -r .result <<<"$OUT")" "attach $B result"
assert_eq efi0 "$(jq -r '.interface.name' <<<"$OUT")" "default interface name"

log "kernel: inner ends addressed and up, host ends on the bridge"
for ns in "$A" "$B"; do
	ns_link_up "$ns" efi0 || fail "efi0 in $ns is not UP: $(ip -n "$ns" link show efi0 2>&1)"
	alias=$(ip -n "$ns" -j link show efi0 | jq -r '.[0].ifalias // ""')
	assert_eq "efi:$HID:$ns/efi0" "$alias" "ifalias of efi0 in $ns"
	host=$(iface_field "$ns" efi0 .host_ifname)
	assert_match '^efh[0-9a-f]{12}$' "$host" "host_ifname of $ns/efi0"
	hjson=$(ip -j link show dev "$host") || fail "host end $host of $ns/efi0 not in the host namespace"
	assert_eq "$BR" "$(jq -r '.[0].master // ""' <<<"$hjson")" "bridge of host end $host"
	assert_eq "efi:$HID:$ns/efi0" "$(jq -r '.[0].ifalias // ""' <<<"$hjson")" "ifalias of host end $host"
	jq -e '.[0].flags | index("UP") != null' <<<"$hjson" >/dev/null || fail "host end $host is not UP"
	kidx=$(ip -n "$ns" -j link show efi0 | jq -r '.[0].ifindex')
	assert_eq "$kidx" "$(iface_field "$ns" efi0 .ifindex)" "ifindex of $ns/efi0 in status"
done
ns_has_addr "$A" efi0 10.80.0.1/24 || fail "10.80.0.1/24 not on efi0 in $A"
ns_has_addr "$A" efi0 fd80::1/64 || fail "fd80::1/64 not on efi0 in $A"
ns_has_addr "$B" efi0 10.80.0.2/24 || fail "10.80.0.2/24 not on efi0 in $B"
settle "$A" "$B"

log "status --json: instances, interfaces, GIDs"
j=$(iface_json "$A" efi0)
assert_eq present "$(jq_status '.instances[] | select(.name == $i) | .netns' --arg i "$A")" "netns of $A"
assert_eq veth "$(jq -r .kind <<<"$j")" "kind"
assert_eq attached "$(jq -r .state <<<"$j")" "state"
wait_for 1000 "link of $A/efi0 to be up" field_is "$A" efi0 .link up
assert_eq 1500 "$(jq -r .mtu <<<"$j")" "mtu"
assert_eq "$BR" "$(jq -r .uplink <<<"$j")" "uplink"
assert_eq '["10.80.0.1/24","fd80::1/64"]' "$(jq -c '.addresses | sort' <<<"$j")" "addresses of $A/efi0"
has_gid "$A" efi0 ::ffff:10.80.0.1 || fail "GID ::ffff:10.80.0.1 missing: $(gids_of "$A" efi0)"
has_gid "$A" efi0 fd80::1 || fail "GID fd80::1 missing: $(gids_of "$A" efi0)"
has_gid "$B" efi0 ::ffff:10.80.0.2 || fail "GID ::ffff:10.80.0.2 missing: $(gids_of "$B" efi0)"
# indexes are unique per interface
n=$(iface_json "$A" efi0 | jq '[.gids[].index] | (length == (unique | length))')
assert_eq true "$n" "GID indexes of $A/efi0 unique"
assert_eq '[]' "$(jq_status -c '.strays // []')" "strays"
# The schema: every field there, with its type.
schema='def iface: (.name|type) == "string" and (.kind|type) == "string" and (.state|type) == "string"
	and (.link|type) == "string" and (.mtu|type) == "number" and (.uplink|type) == "string"
	and (.host_ifname|type) == "string" and (.ifindex|type) == "number"
	and (.addresses|type) == "array" and all(.addresses[]; type == "string")
	and (.gids|type) == "array" and all(.gids[]; (.index|type) == "number" and (.gid|type) == "string");
	(.host_id|type) == "string" and (.efid_version|type) == "string" and (.strays|type) == "array"
	and all(.instances[]; (.name|type) == "string" and (.netns|type) == "string"
		and all(.interfaces[]; iface))'
assert_eq true "$(jq_status "$schema")" "status --json follows the schema ($(ctl --json status))"

log "status/list/show, human output"
assert_exit 0 ctl status
for w in "$A" "$B" efi0 ::ffff:10.80.0.1 fd80::1 ::ffff:10.80.0.2 attached; do
	assert_match "$w" "$OUT" "efictl status output mentions $w"
done
assert_exit 0 ctl list
assert_match "$A" "$OUT" "efictl list mentions $A"
assert_match "$B" "$OUT" "efictl list mentions $B"
assert_exit 0 ctl show "$A" efi0
assert_match "::ffff:10.80.0.1" "$OUT" "efictl show $A efi0"
assert_no_match "10.80.0.2" "$OUT" "efictl show $A efi0 shows only $A"
assert_exit 0 ctl --json status "$A"
assert_eq "[\"$A\"]" "$(jq -c '[.instances[].name]' <<<"$OUT")" "status $A lists only $A"
assert_exit 0 ctl --json list
jq -e . <<<"$OUT" >/dev/null || fail "efictl --json list is not JSON: $OUT"

log "ping between the two instances"
wait_for 5000 "ping $A -> $B" ip netns exec "$A" ping -c 1 -W 1 10.80.0.2
ip netns exec "$B" ping -c 2 -i 0.2 -W 1 10.80.0.1 >/dev/null || fail "ping $B -> $A failed"

log "detach $A efi0"
hostA=$(iface_field "$A" efi0 .host_ifname)
assert_exit 0 ctl --json detach "$A" efi0
assert_eq 1 "$(jq -r .detached <<<"$OUT")" "detach $A efi0 count"
ip -n "$A" link show efi0 >/dev/null 2>&1 && fail "efi0 still in $A after detach"
ip link show "$hostA" >/dev/null 2>&1 && fail "host end $hostA still there after detach"
assert_eq null "$(iface_json "$A" efi0)" "$A/efi0 in status after detach"
assert_exit 3 ctl detach "$A" efi0

log "detach $B --all"
assert_exit 0 ctl --json detach "$B" --all
assert_eq 1 "$(jq -r .detached <<<"$OUT")" "detach $B --all count"
ip -n "$B" link show efi0 >/dev/null 2>&1 && fail "efi0 still in $B after detach --all"
assert_eq 0 "$(jq_status '[.instances[].interfaces[]] | length')" "interfaces left in status"
assert_eq "" "$(host_efi_devices)" "host devices with efid's alias left"
assert_eq "lo" "$(ip -n "$A" -j link | jq -r '[.[].ifname] | join(",")')" "devices in $A"
assert_eq "lo" "$(ip -n "$B" -j link | jq -r '[.[].ifname] | join(",")')" "devices in $B"

efid_stop main
assert_eq 0 "$EFID_RC" "efid exit status after SIGTERM"
