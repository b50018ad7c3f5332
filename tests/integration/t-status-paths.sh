#!/bin/bash
# Path health per peer reaches `efictl status` (issue 4): while efi-perf
# moves data from instance B to instance A, B's context lists A as a peer
# with its QP and, for at least one path, a measured RTT (min and smoothed)
# and a window, in the human view and in --json.  A second run under
# libefi's fault injector (EFI_FAULT loss) must show retransmissions on the
# peer's paths.  Does not depend on how many paths a QP has.
# Costs about 15 s (two 4-second transfers plus setup).
# shellcheck disable=SC2016 # jq programs
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/data/lib.sh
. "$(dirname "$0")/../data/lib.sh"
: "${CSHM_HOSTILE:=$top_builddir/tests/integration/cshm-hostile}"
dp_init sp
[ -x "$CSHM_HOSTILE" ] || fail "cshm-hostile not built at $CSHM_HOSTILE"
dp_one_host
# Peers are shown by GID, as the connections are: the IPv4-mapped form.
GID_A=::ffff:$IP_A
GID_B=::ffff:$IP_B

# The peers of the first context on instance $1's efi0, as JSON ([] if none).
peers_json() {
	ctl_on main --json status "$1" |
		jq -c '[.instances[0].interfaces[0].contexts[]?.peers[]?]'
}
# Peer $2 of instance $1 has a path with a measured RTT and a window.
peer_has_rtt() {
	peers_json "$1" | jq -e --arg p "$2" \
		'any(.[] | select(.address == $p and .qps >= 1) | .paths[];
		     .rtt_min_us > 0 and .srtt_us >= .rtt_min_us and .window_milli > 0)'
}
# Peer $2 is listed once among instance $1's peers.
peer_listed() {
	[ "$(peers_json "$1" | jq --arg p "$2" '[.[] | select(.address == $p)] | length')" = 1 ]
}
# Retransmissions summed over the paths to peer $2 of instance $1.
peer_retransmissions() {
	peers_json "$1" | jq --arg p "$2" \
		'[.[] | select(.address == $p) | .paths[].retransmissions] | add // 0'
}
peer_retransmits() { [ "$(peer_retransmissions "$1" "$2")" -gt 0 ]; }

# run_perf TAG [VAR=VALUE...]: efi-perf write_bw, server in A, client (the
# writer) in B, 4 seconds; the variables go into both environments.
run_perf() {
	local tag=$1
	shift
	in_a env "$@" timeout -k 5 60 "$EFI_PERF" write_bw >"$TMPD/$tag-server.out" 2>&1 &
	SPID=$!
	TRACK_BGPIDS+=("$SPID")
	sleep 0.5
	in_b env "$@" timeout -k 5 60 "$EFI_PERF" write_bw -s 65536 -D 4 "$IP_A" \
		>"$TMPD/$tag-client.out" 2>&1 &
	CPID=$!
	TRACK_BGPIDS+=("$CPID")
}
perf_done() {
	wait "$CPID" || fail "efi-perf client ($1) failed: $(cat "$TMPD/$1-client.out")"
	wait "$SPID" || fail "efi-perf server ($1) failed: $(cat "$TMPD/$1-server.out")"
}

# --- a clean network -------------------------------------------------------
run_perf clean
wait_for 4000 "a path to $IP_A with an RTT in $B's status" peer_has_rtt "$B" "$GID_A"
# and the other way: A's context answers B over its own paths
wait_for 3000 "peer $IP_B in $A's status" peer_listed "$A" "$GID_B"
peer_listed "$B" "$GID_A" || fail "$IP_A is not listed once among $B's peers: $(peers_json "$B")"
json=$(peers_json "$B")
log "peers of $B (json): $json"
assert_eq true "$(jq --arg p "$GID_A" 'all(.[] | select(.address == $p) | .paths[];
	(.state == "active" or .state == "suspect") and (.index >= 0 and .index < 8))' <<<"$json")" \
	"every path has a known state and an index below 8"
# peers_omitted is 0 (one peer) and present: this libefi publishes the table
assert_eq 0 "$(ctl_on main --json status "$B" | jq '.instances[0].interfaces[0].contexts[0].peers_omitted')" \
	"peers_omitted of $B's context"
status=$(ctl_on main status "$B")
printf '%s\n' "$status"
assert_match '^ +peers:$' "$status" "human status has a peers section"
assert_match "^ +$GID_A, 1 QP$" "$status" "human status lists the peer and its QP"
assert_match '^ +path [0-7] +(active|suspect) +rtt min [0-9]+ us, srtt [0-9]+ us, window [0-9]+\.[0-9]{3} pkts, retrans [0-9]+, suspected [0-9]+, restored [0-9]+$' \
	"$status" "human status has a path line with an RTT"
perf_done clean

# --- 2% loss in libefi's wire layer ----------------------------------------
run_perf loss EFI_FAULT=loss=0.02,seed=7
wait_for 6000 "retransmissions on the paths to $IP_A in $B's status" peer_retransmits "$B" "$GID_A"
log "retransmissions on the paths to $IP_A: $(peer_retransmissions "$B" "$GID_A")"
status=$(ctl_on main status "$B")
printf '%s\n' "$status"
assert_match '^ +path [0-7] .* retrans [1-9][0-9]*,' "$status" "human status shows a path's retransmissions"
perf_done loss

# --- a hostile counters page ------------------------------------------------
# hostile [stuck]: starts cshm-hostile in B, holding its lease while fd 5 is
# open; waits until efid accepted its page.
hostile() {
	rm -f "$TMPD/hold"
	mkfifo "$TMPD/hold"
	: >"$TMPD/hostile.out"	# not the last call's "ready" (t-rdmacm-detach's race)
	in_b "$CSHM_HOSTILE" efi0 "$@" <"$TMPD/hold" >"$TMPD/hostile.out" 2>&1 &
	HPID=$!
	TRACK_BGPIDS+=("$HPID")
	exec 5>"$TMPD/hold"
	wait_for 5000 "cshm-hostile ready" grep -q ready "$TMPD/hostile.out"
}
hostile_done() {
	exec 5>&-
	wait "$HPID" || fail "cshm-hostile failed: $(cat "$TMPD/hostile.out")"
}
# The hostile context: the one whose tx_packets is the page's 1000.
hostile_ctx='[.instances[0].interfaces[0].contexts[] | select(.tx_packets == 1000)]'

hostile
json=$(ctl_on main --json status "$B") || fail "efictl status failed with a hostile page"
ctx=$(jq -c "$hostile_ctx | .[0]" <<<"$json")
log "hostile context as listed: $(head -c 600 <<<"$ctx")…"
assert_eq 14 "$(jq '.peers | length' <<<"$ctx")" "peers listed from a page claiming 2^32-1"
assert_eq 7 "$(jq '.peers_omitted' <<<"$ctx")" "peers_omitted passed on"
assert_eq true "$(jq '[.peers[] | .paths | length] | all(. == 7)' <<<"$ctx")" \
	"8 paths per peer at most, the one in an unknown state left out"
assert_eq true "$(jq '[.peers[].paths[] | (.index < 8 and .index != 2 and
	(.state == "active" or .state == "suspect"))] | all' <<<"$ctx")" "path indexes and states"
status=$(ctl_on main status "$B") || fail "efictl status (human) failed with a hostile page"
if grep -q $'\e' <<<"$status"; then fail "an escape byte from the page reached the terminal"; fi
assert_match '1b1b:1b1b:.*, 3 QPs' "$status" "the page's address bytes shown as an address"
hostile_done

hostile stuck
json=$(ctl_on main --json status "$B") || fail "efictl status failed with a stuck page"
assert_eq 0 "$(jq "$hostile_ctx | length" <<<"$json")" "a page stuck mid-update is left out"
hostile_done
ctl_on main status >/dev/null || fail "efid stopped answering"
log "PASS"
