#!/bin/bash
# Link state follows the kernel: efi0 down → "down", up → "up"; the host end
# down → the inner end loses carrier → "no-carrier"; back up → "up".
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
. "$(dirname "$0")/lib.sh"
lib_init ls

A=${PFX}a
BR=${PFX}br
mk_netns "$A"
mk_bridge "$BR"
efid_start main

assert_exit 0 ctl attach "$A" --name efi0 --address 10.84.0.1/24 --uplink "$BR"
wait_for 1000 "link up after attach" field_is "$A" efi0 .link up
H=$(iface_field "$A" efi0 .host_ifname)

log "inner end down"
ip -n "$A" link set efi0 down
wait_for 1000 "link down" field_is "$A" efi0 .link down
log "seen after ${WAITED_MS} ms"
assert_eq attached "$(iface_field "$A" efi0 .state)" "state while down"

log "inner end up"
ip -n "$A" link set efi0 up
wait_for 1000 "link up" field_is "$A" efi0 .link up
log "seen after ${WAITED_MS} ms"

log "host end $H down: inner end has no carrier"
ip link set "$H" down
wait_for 1000 "link no-carrier" field_is "$A" efi0 .link no-carrier
log "seen after ${WAITED_MS} ms"
assert_eq attached "$(iface_field "$A" efi0 .state)" "state without carrier"

log "host end up again"
ip link set "$H" up
wait_for 1000 "link up again" field_is "$A" efi0 .link up

log "human status shows the link state"
ip -n "$A" link set efi0 down
wait_for 1000 "link down" field_is "$A" efi0 .link down
assert_exit 0 ctl status "$A"
assert_match 'down' "$OUT" "efictl status $A while down"
ip -n "$A" link set efi0 up
wait_for 1000 "link up" field_is "$A" efi0 .link up
