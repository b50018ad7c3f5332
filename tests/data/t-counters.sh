#!/bin/bash
# A libefi context's transport counters reach `efictl status`: while efi-perf
# moves data between two instances, each instance's interface lists the
# context (its pid and counters that grow); when the processes exit, the
# contexts vanish (the lease ended).
# shellcheck disable=SC2016 # jq programs
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/data/lib.sh
. "$(dirname "$0")/lib.sh"
dp_init ct
dp_one_host

# tx_packets of the first context on instance $1's efi0 (0 when none)
tx_packets() {
	ctl_on main --json status "$1" | jq -r '[.instances[0].interfaces[0].contexts[]?.tx_packets] | (.[0] // 0)'
}
has_traffic() { [ "$(tx_packets "$1")" -gt 1000 ]; }
no_contexts() {
	[ "$(ctl_on main --json status "$1" | jq '.instances[0].interfaces[0].contexts | length')" = 0 ]
}

assert_exit 0 no_contexts "$A"

in_a timeout -k 5 60 "$EFI_PERF" write_bw >"$TMPD/server.out" 2>&1 &
spid=$!
TRACK_BGPIDS+=("$spid")
sleep 0.5
in_b timeout -k 5 60 "$EFI_PERF" write_bw -s 65536 -D 4 "$IP_A" >"$TMPD/client.out" 2>&1 &
cpid=$!
TRACK_BGPIDS+=("$cpid")

# Both sides publish: the writer's packets out, the target's ACKs out.
wait_for 3000 "counters of $B's context in efictl status" has_traffic "$B"
wait_for 3000 "counters of $A's context in efictl status" has_traffic "$A"
first=$(tx_packets "$B")
sleep 0.5
second=$(tx_packets "$B")
[ "$second" -gt "$first" ] || fail "counters did not grow while data moved: $first then $second"
status=$(ctl_on main status "$B")
printf '%s\n' "$status"
assert_match 'contexts +pid [0-9]+: tx [0-9]+ pkts' "$status" "human status shows the context"
pid=$(ctl_on main --json status "$B" | jq -r '.instances[0].interfaces[0].contexts[0].pid')
[ "$pid" -gt 0 ] || fail "context pid '$pid'"

wait "$cpid" || fail "efi-perf client failed: $(cat "$TMPD/client.out")"
wait "$spid" || fail "efi-perf server failed: $(cat "$TMPD/server.out")"
wait_for 2000 "contexts gone from $A after the processes exited" no_contexts "$A"
wait_for 2000 "contexts gone from $B after the processes exited" no_contexts "$B"
log "PASS"
