#!/bin/bash
# Jumbo frames end to end (issue 14).  Two instances attached with --mtu
# 9000: their QPs move data in 8924-byte segments (bytes per packet of the
# writer's context in efictl status, while efi-perf writes 1 MiB messages;
# 4096-byte segments gave 4.2 KB), and every byte arrives, connected by hand
# and through the connection manager, also under injected loss, duplication
# and reordering (the reorder buffer holding jumbo packets).  Then a
# 9000-byte and a 1500-byte instance, two efids: the connection manager
# carries both link MTUs, both sides take the 1500-byte link's segment
# (1424), and Writes, Reads and Sends are byte-exact either way (Reads
# failed when each side sized segments for its own link).
# shellcheck disable=SC2016 # jq programs
# shellcheck disable=SC2015 # "A && B || fail": fail exits, so it is if-then-else
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/data/lib.sh
. "$(dirname "$0")/lib.sh"
dp_init dj

# bytes per packet the first context of instance $2 on efid $1 sent
bytes_per_packet() {
	ctl_on "$1" --json status "$2" |
		jq -r '.instances[0].interfaces[0].contexts[0] // {} |
		       if (.tx_packets // 0) > 0 then (.tx_bytes / .tx_packets | floor) else 0 end'
}
has_traffic() {
	[ "$(ctl_on "$1" --json status "$2" |
		jq -r '.instances[0].interfaces[0].contexts[0].tx_packets // 0')" -gt 2000 ]
}

# segment_size EFID WRITER_INSTANCE MIN MAX: efi-perf write_bw -s 1M from B
# to A; the writer's bytes per packet must lie in [MIN, MAX]
segment_size() {
	local efid=$1 inst=$2 lo=$3 hi=$4 spid cpid bpp
	in_a timeout -k 5 60 "$EFI_PERF" write_bw >"$TMPD/perf.server" 2>&1 &
	spid=$!
	TRACK_BGPIDS+=("$spid")
	sleep 0.5
	in_b timeout -k 5 60 "$EFI_PERF" write_bw -s 1M -D 3 "$IP_A" >"$TMPD/perf.client" 2>&1 &
	cpid=$!
	TRACK_BGPIDS+=("$cpid")
	wait_for 5000 "the writer's counters in efictl status" has_traffic "$efid" "$inst"
	sleep 0.5
	bpp=$(bytes_per_packet "$efid" "$inst")
	wait "$cpid" || fail "efi-perf client failed: $(cat "$TMPD/perf.client")"
	wait "$spid" || fail "efi-perf server failed: $(cat "$TMPD/perf.server")"
	log "the writer sent $bpp bytes per packet (expected $lo … $hi)"
	[ "$bpp" -ge "$lo" ] && [ "$bpp" -le "$hi" ] ||
		fail "bytes per packet $bpp, not within $lo … $hi"
}

efi0_mtu() { ip netns exec "$1" cat /sys/class/net/efi0/mtu; }

# --- both 9000, two efids ------------------------------------------------
DP_MTU_A=9000
DP_MTU_B=9000
dp_two_hosts
[ "$(efi0_mtu "$A")" = 9000 ] && [ "$(efi0_mtu "$B")" = 9000 ] ||
	fail "efi0 MTUs $(efi0_mtu "$A") and $(efi0_mtu "$B"), not 9000"
# a 1 MiB Write: 118 packets of 8924 B + 48 B of headers (the writer's own
# ACKs are few: it only receives requests' answers)
segment_size two "$B" 8600 9000
for c in opcodes sizes sge16; do
	dp_run "$c" --large-mb 64
	dp_run "$c" --large-mb 64 --cm
done
DP_ENV="EFI_FAULT=loss=0.01,dup=0.005,reorder=0.02,seed=90" dp_run loss
DP_ENV="EFI_FAULT=loss=0.01,dup=0.005,reorder=0.02,seed=91" dp_run loss --cm

# --- 9000 and 1500 ---------------------------------------------------------
assert_exit 0 ctl_on two detach "$B" efi0
assert_exit 0 ctl_on two attach "$B" --name efi0 --address "$IP_B/24" --uplink "$BR" --mtu 1500
# A still knows B's old interface's MAC address
ip -n "$A" neigh flush all
_dp_ready
[ "$(efi0_mtu "$A")" = 9000 ] && [ "$(efi0_mtu "$B")" = 1500 ] ||
	fail "efi0 MTUs $(efi0_mtu "$A") and $(efi0_mtu "$B"), not 9000 and 1500"
# the 1500-byte side writes 1424 + 48 per packet; dp-test below moves data
# both ways (Reads: the 9000-byte side's responses are segmented for 1500)
segment_size two "$B" 1300 1500
for c in opcodes sizes sge16; do
	dp_run "$c" --large-mb 64 --cm
done
DP_ENV="EFI_FAULT=loss=0.01,dup=0.005,reorder=0.02,seed=92" dp_run loss --cm
log "PASS"
