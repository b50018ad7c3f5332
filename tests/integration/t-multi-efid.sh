#!/bin/bash
# Two efid side by side with their own directories: each sees only its own
# interfaces, neither reports the other's devices as strays, and stopping,
# restarting or detaching on one leaves the other alone.
# shellcheck disable=SC2016 # jq programs: their $names are jq's
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
. "$(dirname "$0")/lib.sh"
lib_init me

A=${PFX}a
B=${PFX}b
BR=${PFX}br
mk_netns "$A"
mk_netns "$B"
mk_bridge "$BR"

efid_start one
H_ONE=$HID
assert_exit 0 ctl_on one attach "$A" --name efi0 --address 10.93.0.1/24 --uplink "$BR"
efid_start two
H_TWO=$HID
assert_ne "$H_ONE" "$H_TWO" "host ids of the two efid"
assert_exit 0 ctl_on two attach "$B" --name efi0 --address 10.93.0.2/24 --uplink "$BR"

view() {
	ctl_on "$1" --json status | jq -c '{i: [.instances[] | {name, ifs: [.interfaces[].name]}], s: (.strays // [])}'
}
assert_eq "{\"i\":[{\"name\":\"$A\",\"ifs\":[\"efi0\"]}],\"s\":[]}" "$(view one)" "what efid one sees"
assert_eq "{\"i\":[{\"name\":\"$B\",\"ifs\":[\"efi0\"]}],\"s\":[]}" "$(view two)" "what efid two sees"
assert_eq "efi:$H_ONE:$A/efi0" "$(ip -n "$A" -j link show efi0 | jq -r '.[0].ifalias')" "mark of $A/efi0"
assert_eq "efi:$H_TWO:$B/efi0" "$(ip -n "$B" -j link show efi0 | jq -r '.[0].ifalias')" "mark of $B/efi0"

log "restarting one: no strays from two"
efid_stop one
assert_eq 0 "$EFID_RC" "exit status of efid one"
ns_has_addr "$B" efi0 10.93.0.2/24 || fail "efid two's interface changed while one stopped"
efid_launch one
assert_eq "{\"i\":[{\"name\":\"$A\",\"ifs\":[\"efi0\"]}],\"s\":[]}" "$(view one)" "what efid one sees after restart"
assert_eq "{\"i\":[{\"name\":\"$B\",\"ifs\":[\"efi0\"]}],\"s\":[]}" "$(view two)" "what efid two sees after one restarted"

log "the same address and name in each efid's own books do not conflict across them"
assert_exit 0 ctl_on two attach "$B" --name efi1 --address 10.93.0.1/24 --uplink "$BR"

log "detach on one leaves two alone"
assert_exit 0 ctl_on one detach "$A" --all
assert_exit 3 ctl_on one detach "$B" efi0
ns_has_addr "$B" efi0 10.93.0.2/24 || fail "efid one's detach touched efid two's interface"
assert_eq "{\"i\":[{\"name\":\"$B\",\"ifs\":[\"efi0\",\"efi1\"]}],\"s\":[]}" "$(view two)" "what efid two sees at the end"
efid_stop two
assert_eq 0 "$EFID_RC" "exit status of efid two"
efid_stop one
