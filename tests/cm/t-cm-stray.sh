#!/bin/bash
# A stray inside an instance namespace (issue 18, one of the restart
# defects): efid finds a device it made (its mark in the alias) but has no
# record of, and the device has no host end in efid's namespace, so efid
# lists it with an empty host-device name.  efictl required a non-empty one
# and answered "malformed reply" to the whole status; the CM restart tests
# met it when efid ran inside a named namespace (t-cm-restart-testbed).
# Here the host end of a veth efid made goes into another namespace and its
# record is deleted while efid is down: after the restart `efictl status`
# (human and JSON) must answer, list the stray by instance and name with
# no host end (JSON null), and keep listing the recorded interface.  ~3 s.
# shellcheck disable=SC2016 # jq programs: their $names are jq's
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/integration/lib.sh
. "$(dirname "$0")/../integration/lib.sh"
lib_init sy
command -v sqlite3 >/dev/null || fail "sqlite3 is not installed (apt-get install sqlite3)"

A=${PFX}a
X=${PFX}x
BR=${PFX}br
mk_netns "$A"
mk_netns "$X"
mk_bridge "$BR"
efid_start s
DB=$TMPD/s/state/efid.db

assert_exit 0 ctl attach "$A" --name efi0 --address 10.86.0.1/24 --uplink "$BR"
assert_exit 0 ctl attach "$A" --name efi1 --address 10.86.1.1/24 --uplink "$BR"
H1=$(iface_field "$A" efi1 .host_ifname)
[ -n "$H1" ] && [ "$H1" != null ] || fail "no host end for $A/efi1"
assert_eq '[]' "$(jq_status -c '.strays // []')" "strays before"

log "efid down: $A/efi1's record deleted, its host end $H1 moved into $X"
efid_stop s
sqlite3 "$DB" "PRAGMA foreign_keys=ON; DELETE FROM interfaces WHERE host_ifname='$H1';" ||
	fail "cannot delete the record of $H1"
ip link set "$H1" netns "$X" || fail "cannot move $H1 into $X"
ip link show "$H1" >/dev/null 2>&1 && fail "$H1 is still in the host namespace"
efid_launch s

log "efictl status answers, with the stray inside $A"
assert_exit 0 ctl status
assert_no_match "malformed" "$OUT" "human status"
assert_match "instance $A  name efi1" "$OUT" "human status lists the stray"
stray=$(jq_status -c '[.strays[] | select(.instance == $a and .name == "efi1")]' --arg a "$A")
assert_eq 1 "$(jq length <<<"$stray")" "strays naming $A/efi1 (all: $(jq_status -c .strays))"
assert_eq null "$(jq -r '.[0].host_ifname' <<<"$stray")" "host end of a stray inside its namespace"
assert_eq attached "$(iface_field "$A" efi0 .state)" "state of the recorded $A/efi0"
assert_eq null "$(iface_json "$A" efi1)" "$A/efi1 in status after its record was deleted"
ip -n "$A" link show efi1 >/dev/null 2>&1 || fail "the stray $A/efi1 was deleted"
log "done"
