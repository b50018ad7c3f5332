#!/bin/bash
# An interface deleted behind efid's back: with Repair=no it is reported
# missing within 1 s and the same attach repairs it; with Repair=yes efid
# re-creates it by itself within 2 s.
# shellcheck disable=SC2016 # jq programs: their $names are jq's
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
. "$(dirname "$0")/lib.sh"
lib_init de

A=${PFX}a
B=${PFX}b
BR=${PFX}br
mk_netns "$A"
mk_netns "$B"
mk_bridge "$BR"

log "Repair=no"
efid_start norep Interfaces.Repair=no
args=(attach "$A" --name efi0 --address 10.90.0.1/24 --address fd90::1/64 --uplink "$BR")
assert_exit 0 ctl "${args[@]}"
wait_for 1000 "link up" field_is "$A" efi0 .link up

ip -n "$A" link del efi0 || fail "ip link del efi0 failed"
wait_for 1000 "state missing" field_is "$A" efi0 .state missing
log "missing after ${WAITED_MS} ms"
assert_eq missing "$(iface_field "$A" efi0 .link)" "link of a deleted interface"
assert_eq "" "$(host_efi_devices)" "host end still there after the inner end was deleted"
sleep 1
assert_eq missing "$(iface_field "$A" efi0 .state)" "state 1 s later (Repair=no must not re-create)"
ip -n "$A" link show efi0 >/dev/null 2>&1 && fail "efi0 came back in $A although Repair=no"

log "re-attach with the same arguments repairs it"
assert_exit 0 ctl --json "${args[@]}"
assert_eq repaired "$(jq -r .result <<<"$OUT")" "attach result after deletion"
ns_has_addr "$A" efi0 10.90.0.1/24 || fail "repaired efi0 lacks 10.90.0.1/24"
ns_has_addr "$A" efi0 fd90::1/64 || fail "repaired efi0 lacks fd90::1/64"
assert_eq attached "$(iface_field "$A" efi0 .state)" "state after repair"
wait_for 1000 "link up after repair" field_is "$A" efi0 .link up
wait_for 1000 "GID back" has_gid "$A" efi0 ::ffff:10.90.0.1
assert_eq "$BR" "$(ip -j link show dev "$(iface_field "$A" efi0 .host_ifname)" | jq -r '.[0].master')" \
	"bridge of the repaired host end"

log "deleting the host end counts as deleting the interface"
ip link del "$(iface_field "$A" efi0 .host_ifname)" || fail "ip link del host end failed"
wait_for 1000 "state missing after host end deletion" field_is "$A" efi0 .state missing
assert_exit 0 ctl --json "${args[@]}"
assert_eq repaired "$(jq -r .result <<<"$OUT")" "attach result after host end deletion"

log "detaching an interface that is missing works and leaves nothing"
ip -n "$A" link del efi0 || fail "ip link del efi0 failed"
wait_for 1000 "state missing" field_is "$A" efi0 .state missing
assert_exit 0 ctl detach "$A" efi0
assert_eq null "$(iface_json "$A" efi0)" "$A/efi0 in status after detach"
assert_eq "" "$(host_efi_devices)" "host devices after detaching a missing interface"

log "the instance's namespace vanishes"
C=${PFX}c
mk_netns "$C"
assert_exit 0 ctl attach "$C" --name efi0 --address 10.90.3.1/24 --uplink "$BR"
ip netns del "$C" || fail "ip netns del $C failed"
wait_for 2000 "$C/efi0 missing" field_is "$C" efi0 .state missing
assert_eq missing "$(jq_status '.instances[] | select(.name == $i) | .netns' --arg i "$C")" "netns of $C in status"
wait_for 2000 "host end of $C/efi0 gone" no_host_devices
assert_exit 3 ctl attach "$C" --name efi0 --address 10.90.3.1/24 --uplink "$BR"
assert_exit 0 ctl detach "$C" --all
assert_eq null "$(iface_json "$C" efi0)" "$C/efi0 after detach --all"
pid_running "$(efid_pid norep)" || fail "efid died"
efid_stop norep

log "Repair=yes"
efid_start rep Interfaces.Repair=yes
assert_exit 0 ctl attach "$B" --name efi0 --address 10.90.0.2/24 --uplink "$BR"
wait_for 1000 "link up" field_is "$B" efi0 .link up
old=$(ip -n "$B" -j link show efi0 | jq -r '.[0].ifindex')
ip -n "$B" link del efi0 || fail "ip link del efi0 failed"
wait_for 2000 "efi0 re-created in $B" ns_has_addr "$B" efi0 10.90.0.2/24
log "re-created after ${WAITED_MS} ms"
new=$(ip -n "$B" -j link show efi0 | jq -r '.[0].ifindex')
assert_ne "$old" "$new" "ifindex of the re-created efi0"
wait_for 1000 "state attached" field_is "$B" efi0 .state attached
wait_for 1000 "link up" field_is "$B" efi0 .link up
assert_eq "$new" "$(iface_field "$B" efi0 .ifindex)" "ifindex in status"
H=$(iface_field "$B" efi0 .host_ifname)
assert_eq "$BR" "$(ip -j link show dev "$H" | jq -r '.[0].master')" "bridge of the re-created host end"
assert_eq 1 "$(host_efi_devices | wc -l)" "host devices of efid after repair"
assert_exit 0 ctl detach "$B" efi0
assert_eq "" "$(host_efi_devices)" "host devices after detach"
