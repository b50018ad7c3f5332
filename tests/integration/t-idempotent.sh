#!/bin/bash
# The same attach twice: the second succeeds, says "unchanged", and changes
# nothing in the kernel (same devices, ifindexes, addresses) or in efid's view.
# shellcheck disable=SC2016 # jq programs: their $names are jq's
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
. "$(dirname "$0")/lib.sh"
lib_init id

A=${PFX}a
BR=${PFX}br
mk_netns "$A"
mk_bridge "$BR"
efid_start main

args=(attach "$A" --name efi0 --address 10.81.0.1/24 --address fd81::1/64 --uplink "$BR" --mtu 1400)
assert_exit 0 ctl --json "${args[@]}"
assert_eq created "$(jq -r .result <<<"$OUT")" "first attach result"
settle "$A"
wait_for 1000 "link up" field_is "$A" efi0 .link up
k1=$(kernel_snapshot "$A")
s1=$(status_snapshot)

log "same attach again"
assert_exit 0 ctl --json "${args[@]}"
assert_eq unchanged "$(jq -r .result <<<"$OUT")" "second attach result"
assert_eq efi0 "$(jq -r .interface.name <<<"$OUT")" "second attach reply names efi0"

log "and once more in human form, addresses in the other order"
assert_exit 0 ctl attach "$A" --name efi0 --address fd81::1/64 --address 10.81.0.1/24 --uplink "$BR" --mtu 1400
assert_exit 0 ctl --json attach "$A" --name efi0 --address fd81::1/64 --address 10.81.0.1/24 --uplink "$BR" --mtu 1400
assert_eq unchanged "$(jq -r .result <<<"$OUT")" "attach with reordered addresses"

sleep 0.3
k2=$(kernel_snapshot "$A")
s2=$(status_snapshot)
assert_same_snapshot "$k1" "$k2" "kernel state"
assert_same_snapshot "$s1" "$s2" "efictl status"
assert_eq 1 "$(jq_status '[.instances[].interfaces[]] | length')" "number of interfaces"
assert_eq 1400 "$(ip -n "$A" -j link show efi0 | jq -r '.[0].mtu')" "kernel mtu of efi0"

log "detach, then the same attach creates it again"
assert_exit 0 ctl detach "$A" efi0
assert_exit 0 ctl --json "${args[@]}"
assert_eq created "$(jq -r .result <<<"$OUT")" "attach after detach"
assert_exit 0 ctl detach "$A" --all
