#!/bin/bash
# efid restarted with interfaces attached: nothing is lost (same status, same
# GID indexes), nothing is torn down; an interface deleted while efid was down
# is reported missing (Repair=no) or re-created (Repair=yes); a device efid
# made but has no record of is listed as a stray and left alone; SIGKILL,
# even in the middle of an attach, leaves a state the next start accepts.
# shellcheck disable=SC2016 # jq programs: their $names are jq's
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
. "$(dirname "$0")/lib.sh"
lib_init rs

A=${PFX}a
B=${PFX}b
BR=${PFX}br
mk_netns "$A"
mk_netns "$B"
mk_bridge "$BR"
efid_start r Interfaces.Repair=no
DB=$TMPD/r/state/efid.db

assert_exit 0 ctl attach "$A" --name efi0 --address 10.85.0.1/24 --address fd85::1/64 --uplink "$BR"
assert_exit 0 ctl attach "$B" --name efi0 --address 10.85.0.2/24 --uplink "$BR"
# Shuffle A's GID table so that the indexes are not simply the order of the
# addresses: add two, remove the first of them.
ip -n "$A" addr add 10.85.0.3/24 dev efi0
ip -n "$A" addr add 10.85.0.4/24 dev efi0
wait_for 1000 "GID ::ffff:10.85.0.4" has_gid "$A" efi0 ::ffff:10.85.0.4
ip -n "$A" addr del 10.85.0.3/24 dev efi0
wait_for 1000 "GID ::ffff:10.85.0.3 gone" not has_gid "$A" efi0 ::ffff:10.85.0.3
settle "$A" "$B"
wait_for 1000 "link-local GID" has_gid_prefix "$A" efi0 fe80:
wait_for 1000 "link up" field_is "$B" efi0 .link up
S1=$(status_snapshot)
K1=$(kernel_snapshot "$A" "$B")

log "SIGTERM: clean exit, interfaces stay in the kernel"
efid_stop r TERM
assert_eq 0 "$EFID_RC" "efid exit status after SIGTERM"
assert_same_snapshot "$K1" "$(kernel_snapshot "$A" "$B")" "kernel after efid stopped"

log "start again: identical status"
efid_launch r
sleep 0.3
assert_same_snapshot "$S1" "$(status_snapshot)" "efictl status across a restart"
assert_same_snapshot "$K1" "$(kernel_snapshot "$A" "$B")" "kernel across a restart"

log "delete $B/efi0 while efid is down (Repair=no): reported missing"
efid_stop r
ip -n "$B" link del efi0 || fail "ip link del failed"
efid_launch r
assert_eq missing "$(iface_field "$B" efi0 .state)" "state of $B/efi0 deleted while efid was down"
assert_eq attached "$(iface_field "$A" efi0 .state)" "state of $A/efi0"
ip -n "$B" link show efi0 >/dev/null 2>&1 && fail "efi0 re-created in $B although Repair=no"

log "same with Repair=yes: re-created at start"
efid_stop r
efid_config r Interfaces.Repair=yes
efid_launch r
wait_for 2000 "efi0 re-created in $B" ns_has_addr "$B" efi0 10.85.0.2/24
assert_eq attached "$(iface_field "$B" efi0 .state)" "state of $B/efi0 after repair at start"
assert_eq "$BR" "$(ip -j link show dev "$(iface_field "$B" efi0 .host_ifname)" | jq -r '.[0].master')" \
	"bridge of the re-created host end"
assert_eq '[]' "$(jq_status -c '.strays // []')" "strays after repair"

log "stray: a device whose record is gone is listed, not deleted"
assert_exit 0 ctl attach "$A" --name efi1 --address 10.85.1.1/24 --uplink "$BR"
H1=$(iface_field "$A" efi1 .host_ifname)
efid_stop r
command -v sqlite3 >/dev/null || fail "sqlite3 is not installed (apt-get install sqlite3)"
sqlite3 "$DB" "PRAGMA foreign_keys=ON; DELETE FROM interfaces WHERE host_ifname='$H1';" ||
	fail "cannot delete the record of $H1"
efid_launch r
assert_eq null "$(iface_json "$A" efi1)" "$A/efi1 in status after its record was deleted"
stray=$(jq_status -c '[.strays[] | select(.host_ifname == $h)]' --arg h "$H1")
assert_eq 1 "$(jq length <<<"$stray")" "strays naming $H1 (all: $(jq_status -c .strays))"
assert_eq "$A" "$(jq -r '.[0].instance' <<<"$stray")" "instance of the stray"
assert_eq efi1 "$(jq -r '.[0].name' <<<"$stray")" "name of the stray"
ip link show "$H1" >/dev/null 2>&1 || fail "stray host end $H1 was deleted"
ns_has_addr "$A" efi1 10.85.1.1/24 || fail "stray efi1 in $A was deleted or changed"
sleep 1
ip link show "$H1" >/dev/null 2>&1 || fail "stray host end $H1 was deleted a moment later"
assert_exit 0 ctl status
assert_match "$H1" "$OUT" "human status mentions the stray $H1"
# The operator cleans up; efid notices.
ip link del "$H1"

log "SIGKILL while idle, then restart"
S2=$(status_snapshot | jq 'del(.strays)')
efid_stop r KILL
efid_launch r
assert_same_snapshot "$S2" "$(status_snapshot | jq 'del(.strays)')" "efictl status after SIGKILL"

log "SIGKILL in the middle of attaches, then restart: consistent"
for i in 2 3 4 5 6 7; do
	ctl attach "$B" --name "efi$i" --address "10.85.2.$i/24" --uplink "$BR" >/dev/null 2>&1 &
done
sleep 0.1
efid_stop r KILL
wait
efid_launch r
# Every host device carrying our mark is either recorded or listed as a
# stray; every recorded interface that is "attached" exists in the kernel.
json=$(ctl --json status) || fail "status after SIGKILL restart failed"
for dev in $(host_efi_devices); do
	jq -e --arg h "$dev" '([.instances[].interfaces[].host_ifname] + [(.strays // [])[].host_ifname]) | index($h) != null' \
		<<<"$json" >/dev/null || fail "device $dev is neither recorded nor a stray: $json"
done
for n in $(jq -r --arg b "$B" '.instances[] | select(.name == $b) | .interfaces[] | select(.state == "attached") | .name' <<<"$json"); do
	ip -n "$B" link show "$n" >/dev/null 2>&1 || fail "$B/$n is attached in status but not in the kernel"
done
log "after the kill: $(jq -c '[.instances[] | {name, ifs: [.interfaces[] | "\(.name):\(.state)"]}]' <<<"$json")"
# and it still works
assert_exit 0 ctl detach "$B" --all
assert_exit 0 ctl attach "$B" --name efi9 --address 10.85.9.1/24 --uplink "$BR"
efid_stop r
assert_eq 0 "$EFID_RC" "efid exit status after SIGTERM"
