#!/bin/bash
# A client inside an instance's namespace sees only that instance and may not
# attach or detach; the host sees everything.
# shellcheck disable=SC2016 # jq programs: their $names are jq's
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
. "$(dirname "$0")/lib.sh"
lib_init iv

A=${PFX}x
B=${PFX}y
BR=${PFX}br
mk_netns "$A"
mk_netns "$B"
mk_bridge "$BR"
efid_start main

assert_exit 0 ctl attach "$A" --name efi0 --address 10.91.0.1/24 --uplink "$BR"
assert_exit 0 ctl attach "$B" --name efi0 --address 10.91.0.2/24 --uplink "$BR"
settle "$A" "$B"
S0=$(status_snapshot)
K0=$(kernel_snapshot "$A" "$B")

# in_a ARGS...: efictl run inside instance A's namespace.
in_a() {
	timeout -k 2 "$CTL_TIMEOUT" ip netns exec "$A" "$EFICTL" --socket "$SOCK" "$@"
}

log "status from inside $A"
assert_exit 0 in_a --json status
assert_eq "[\"$A\"]" "$(jq -c '[.instances[].name]' <<<"$OUT")" "instances seen from inside $A"
assert_eq '[]' "$(jq -c '.strays // []' <<<"$OUT")" "strays seen from inside $A"
assert_no_match "10\\.91\\.0\\.2|$B" "$OUT" "JSON status from inside $A"
assert_exit 0 in_a status
assert_match "$A" "$OUT" "human status from inside $A"
assert_no_match "10\\.91\\.0\\.2|$B" "$OUT" "human status from inside $A"
assert_exit 0 in_a list
assert_match "$A" "$OUT" "list from inside $A"
assert_no_match "$B" "$OUT" "list from inside $A"
assert_exit 0 in_a show "$A" efi0
assert_match "::ffff:10.91.0.1" "$OUT" "show $A efi0 from inside $A"
assert_fails in_a show "$B" efi0
assert_no_match "10\\.91\\.0\\.2" "$OUT$ERR" "show $B efi0 from inside $A"
assert_exit 0 in_a version

log "mutations from inside $A are refused"
assert_exit 5 in_a attach "$A" --name efi1 --address 10.91.1.1/24 --uplink "$BR"
assert_exit 5 in_a attach "$B" --name efi1 --address 10.91.1.2/24 --uplink "$BR"
assert_exit 5 in_a detach "$A" efi0
assert_exit 5 in_a detach "$B" efi0
assert_exit 5 in_a detach "$A" --all
assert_same_snapshot "$S0" "$(status_snapshot)" "status after refused mutations"
assert_same_snapshot "$K0" "$(kernel_snapshot "$A" "$B")" "kernel after refused mutations"

log "the host sees both"
assert_exit 0 ctl list
assert_match "$A" "$OUT" "list from the host"
assert_match "$B" "$OUT" "list from the host"
assert_eq 2 "$(jq_status '[.instances[].interfaces[]] | length')" "interfaces seen from the host"

log "from inside $B: only $B"
assert_exit 0 timeout 10 ip netns exec "$B" "$EFICTL" --socket "$SOCK" --json status
assert_eq "[\"$B\"]" "$(jq -c '[.instances[].name]' <<<"$OUT")" "instances seen from inside $B"
