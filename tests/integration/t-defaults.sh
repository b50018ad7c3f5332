#!/bin/bash
# efid.conf defaults (DefaultUplink=, DefaultMTU=) fill what attach leaves
# out, repeated attaches relying on them stay idempotent, efid picks the
# lowest free efiN; efictl finds efid through $EFI_SOCKET and says "efid
# unreachable" (exit 6) when nobody listens.
# shellcheck disable=SC2016 # jq programs: their $names are jq's
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
. "$(dirname "$0")/lib.sh"
lib_init df

A=${PFX}a
BR=${PFX}br
mk_netns "$A"
mk_bridge "$BR"
efid_start main Interfaces.DefaultUplink="$BR" Interfaces.DefaultMTU=1300 Interfaces.DefaultKind=veth

log "attach without --uplink/--mtu/--name"
assert_exit 0 ctl --json attach "$A" --address 10.95.0.1/24
assert_eq created "$(jq -r .result <<<"$OUT")" "first attach"
assert_eq efi0 "$(jq -r .interface.name <<<"$OUT")" "picked name"
assert_eq "$BR" "$(iface_field "$A" efi0 .uplink)" "uplink from DefaultUplink"
assert_eq 1300 "$(iface_field "$A" efi0 .mtu)" "mtu from DefaultMTU"
assert_eq 1300 "$(ip -n "$A" -j link show efi0 | jq -r '.[0].mtu')" "kernel mtu of efi0"
H=$(iface_field "$A" efi0 .host_ifname)
assert_eq "$BR" "$(ip -j link show dev "$H" | jq -r '.[0].master')" "bridge of $H"

log "the same request again is unchanged"
assert_exit 0 ctl --json attach "$A" --address 10.95.0.1/24 --name efi0
assert_eq unchanged "$(jq -r .result <<<"$OUT")" "repeated attach relying on defaults"
assert_exit 0 ctl --json attach "$A" --address 10.95.0.1/24 --name efi0 --mtu 1300 --uplink "$BR"
assert_eq unchanged "$(jq -r .result <<<"$OUT")" "repeated attach naming the default mtu and uplink explicitly"

log "names: lowest free efiN"
assert_exit 0 ctl --json attach "$A" --address 10.95.0.2/24
assert_eq efi1 "$(jq -r .interface.name <<<"$OUT")" "second picked name"
assert_exit 0 ctl --json attach "$A" --address 10.95.0.3/24
assert_eq efi2 "$(jq -r .interface.name <<<"$OUT")" "third picked name"
assert_exit 0 ctl detach "$A" efi1
assert_exit 0 ctl --json attach "$A" --address 10.95.0.4/24
assert_eq efi1 "$(jq -r .interface.name <<<"$OUT")" "name after efi1 was detached"

log "explicit settings win over the defaults"
assert_exit 0 ctl attach "$A" --name x9 --address 10.95.0.9/24 --mtu 1400 --uplink "$BR"
assert_eq 1400 "$(ip -n "$A" -j link show x9 | jq -r '.[0].mtu')" "kernel mtu of x9"

log "EFI_SOCKET"
assert_exit 0 env EFI_SOCKET="$SOCK" timeout 10 "$EFICTL" --json status
assert_eq 4 "$(jq '[.instances[].interfaces[]] | length' <<<"$OUT")" "interfaces via EFI_SOCKET"

log "unreachable efid: exit 6 with advice"
assert_exit 6 timeout 10 "$EFICTL" --socket "$TMPD/nobody-here.sock" status
assert_match 'efid' "$ERR" "message when efid is unreachable"
assert_exit 6 env EFI_SOCKET="$TMPD/nobody-here.sock" timeout 10 "$EFICTL" list
assert_exit 0 ctl detach "$A" --all
efid_stop main
assert_exit 6 timeout 10 "$EFICTL" --socket "$SOCK" status
assert_exit 6 timeout 10 "$EFICTL" --socket "$SOCK" attach "$A" --address 10.95.0.1/24
# `efictl version` is how scripts wait for efid to be ready: it must fail
# while efid does not answer (checked at the end, so the rest still runs).
VERSION_BUG=""
rc=0
timeout 10 "$EFICTL" --socket "$SOCK" version >/dev/null 2>&1 || rc=$?
[ "$rc" = 6 ] || VERSION_BUG="efictl version exits $rc, not 6, when efid is unreachable"

log "version and help"
assert_exit 0 "$EFICTL" --help
assert_exit 0 "$EFID" --version
assert_exit 0 "$EFID" --help
assert_fails "$EFID" --no-such-option

[ -z "$VERSION_BUG" ] || fail "$VERSION_BUG"
