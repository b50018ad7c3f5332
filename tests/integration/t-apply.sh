#!/bin/bash
# The declarative form: `efictl apply DIR` creates what the *.conf files say,
# is idempotent, efid applies Directory= at start, and a broken file is
# refused with FILE:LINE and nothing applied from it.
# shellcheck disable=SC2016 # jq programs: their $names are jq's
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
. "$(dirname "$0")/lib.sh"
lib_init ap

A=${PFX}a
B=${PFX}b
C=${PFX}c
BR=${PFX}br
mk_netns "$A"
mk_netns "$B"
mk_netns "$C"
mk_bridge "$BR"
D=$TMPD/ifaces.d
E=$TMPD/broken.d
mkdir -p "$D" "$E"
cat >"$D/10-a.conf" <<EOC
# instance A
[Interface]
Instance=$A
Name=efi0
Address=10.88.0.1/24
Address=fd88::1/64
Uplink=$BR
EOC
cat >"$D/20-b.conf" <<EOC
[Interface]
Instance=$B
Name=efi0
Address=10.88.0.2/24
Uplink=$BR
MTU=1400
Kind=veth
EOC
# not *.conf: ignored
echo "garbage" >"$D/README"

check_applied() {
	ns_has_addr "$A" efi0 10.88.0.1/24 || fail "$A/efi0 lacks 10.88.0.1/24 ($1)"
	ns_has_addr "$A" efi0 fd88::1/64 || fail "$A/efi0 lacks fd88::1/64 ($1)"
	ns_has_addr "$B" efi0 10.88.0.2/24 || fail "$B/efi0 lacks 10.88.0.2/24 ($1)"
	assert_eq 1400 "$(ip -n "$B" -j link show efi0 | jq -r '.[0].mtu')" "mtu of $B/efi0 ($1)"
	assert_eq attached "$(iface_field "$A" efi0 .state)" "state of $A/efi0 ($1)"
	assert_eq attached "$(iface_field "$B" efi0 .state)" "state of $B/efi0 ($1)"
	assert_eq 1400 "$(iface_field "$B" efi0 .mtu)" "mtu of $B/efi0 in status ($1)"
}

efid_start main
log "apply $D"
assert_exit 0 ctl apply "$D"
log "apply said: $OUT"
check_applied "after efictl apply"
settle "$A" "$B"
K1=$(kernel_snapshot "$A" "$B")
S1=$(status_snapshot)

log "apply again: nothing changes"
assert_exit 0 ctl apply "$D"
assert_exit 0 ctl apply "$D/20-b.conf"
assert_same_snapshot "$K1" "$(kernel_snapshot "$A" "$B")" "kernel after a second apply"
assert_same_snapshot "$S1" "$(status_snapshot)" "status after a second apply"
assert_exit 0 ctl --json apply "$D"
jq -e . <<<"$OUT" >/dev/null || fail "efictl --json apply is not JSON: $OUT"

log "a conflicting file is refused (4) without changes"
cat >"$E/30-conflict.conf" <<EOC
[Interface]
Instance=$B
Name=efi0
Address=10.88.0.7/24
Uplink=$BR
EOC
assert_exit 4 ctl apply "$E/30-conflict.conf"
assert_same_snapshot "$K1" "$(kernel_snapshot "$A" "$B")" "kernel after a conflicting apply"
rm "$E/30-conflict.conf"

log "broken files: exit 2, FILE:LINE, nothing applied"
cat >"$E/40-c.conf" <<EOC
[Interface]
Instance=$C
Name=efi0
Address=10.88.0.3/24
Bogus=1
EOC
assert_exit 2 ctl apply "$E/40-c.conf"
assert_match '40-c\.conf:5' "$ERR" "message for an unknown key"
cat >"$E/40-c.conf" <<EOC
[Interface]
Instance=$C
Name=efi0

Address=10.88.0.300/24
EOC
assert_exit 2 ctl apply "$E/40-c.conf"
assert_match '40-c\.conf:5' "$ERR" "message for a bad address"
assert_exit 2 ctl apply "$E"
assert_match '40-c\.conf:5' "$ERR" "message when applying the directory"
ip -n "$C" link show efi0 >/dev/null 2>&1 && fail "efi0 created in $C from a broken file"
assert_eq null "$(iface_json "$C" efi0)" "$C/efi0 in status after broken apply"
assert_exit 3 ctl apply "$TMPD/no-such-dir"

log "efid applies Directory= at start"
assert_exit 0 ctl detach "$A" --all
assert_exit 0 ctl detach "$B" --all
efid_stop main
efid_start boot Interfaces.Directory="$D"
wait_for 2000 "interfaces from $D applied at start" ns_has_addr "$B" efi0 10.88.0.2/24
check_applied "at efid start"
log "restart with the same directory: unchanged"
settle "$A" "$B"
K2=$(kernel_snapshot "$A" "$B")
efid_stop boot
efid_launch boot
sleep 0.3
assert_same_snapshot "$K2" "$(kernel_snapshot "$A" "$B")" "kernel after a restart that re-applies $D"

log "a broken file in Directory= does not keep efid from starting"
cp "$E/40-c.conf" "$D/40-c.conf"
efid_stop boot
efid_launch boot
check_applied "with a broken file beside"
ip -n "$C" link show efi0 >/dev/null 2>&1 && fail "efi0 created in $C from a broken file at start"
grep -q '40-c\.conf:5' "$TMPD/boot/efid.log" || fail "efid did not log the broken file with FILE:LINE"
