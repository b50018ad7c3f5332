#!/bin/bash
# efi-perf between the instances of two hosts: send_lat and write_bw print
# perftest's tables, --json is JSON with the numbers, every other test runs,
# send_bw and send_lat run with --use-srq (one SRQ for the QPs), and the
# errors are clear (no device, peer unreachable, mismatched test).
# shellcheck disable=SC2016 # jq programs
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/data/lib.sh
. "$(dirname "$0")/lib.sh"
dp_init ep
dp_two_hosts

PERF_TIMEOUT=120

# perf_pair NAME SERVER-ARGS -- CLIENT-ARGS: server in A, client in B;
# both must succeed.  SOUT/COUT receive their output.
perf_pair() {
	local name=$1 spid crc=0 src=0 sargs=() cargs=()
	shift
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		sargs+=("$1")
		shift
	done
	shift
	cargs=("$@")
	in_a timeout -k 5 "$PERF_TIMEOUT" "$EFI_PERF" "${sargs[@]}" >"$TMPD/$name.sout" 2>"$TMPD/$name.serr" &
	spid=$!
	TRACK_BGPIDS+=("$spid")
	in_b timeout -k 5 "$PERF_TIMEOUT" "$EFI_PERF" "${cargs[@]}" "$IP_A" >"$TMPD/$name.cout" 2>"$TMPD/$name.cerr" ||
		crc=$?
	[ "$crc" = 0 ] || { sleep 1; pid_running "$spid" && kill "$spid"; }
	wait "$spid" || src=$?
	SOUT=$(cat "$TMPD/$name.sout")
	COUT=$(cat "$TMPD/$name.cout")
	SERR=$(cat "$TMPD/$name.serr")
	CERR=$(cat "$TMPD/$name.cerr")
	if [ "$crc" != 0 ] || [ "$src" != 0 ]; then
		fail "$(printf 'efi-perf %s: client exit %s, server exit %s\n--- client:\n%s\n%s\n--- server:\n%s\n%s' \
			"$name" "$crc" "$src" "$COUT" "$CERR" "$SOUT" "$SERR")"
	fi
}

log "send_lat, 8 bytes"
perf_pair send_lat send_lat -- send_lat -s 8 -n 5000
printf '%s\n' "$COUT"
assert_match 't_typical\[usec\]' "$COUT" "send_lat table header"
assert_match '99\.9% percentile' "$COUT" "send_lat table header"
row=$(awk '$1 == 8 && $2 == 5000' <<<"$COUT")
[ -n "$row" ] || fail "send_lat: no row for 8 bytes and 5000 iterations in: $COUT"
typ=$(awk '{print $5}' <<<"$row")
awk -v t="$typ" 'BEGIN {exit !(t > 0)}' || fail "send_lat: t_typical '$typ' is not a positive number"

log "write_bw, 64 KiB and 1 MiB"
for sz in 65536 1M; do
	perf_pair "write_bw_$sz" write_bw -- write_bw -s "$sz" -n 2000
	printf '%s\n' "$COUT"
	assert_match 'BW average\[Gb/sec\]' "$COUT" "write_bw table header"
	bytes=$([ "$sz" = 1M ] && echo 1048576 || echo "$sz")
	row=$(awk -v b="$bytes" '$1 == b && $2 == 2000' <<<"$COUT")
	[ -n "$row" ] || fail "write_bw: no row for $bytes bytes × 2000 in: $COUT"
	awk '{exit !($4 > 0 && $5 > 0)}' <<<"$row" || fail "write_bw $sz: average BW or message rate not positive: $row"
done

log "--json"
perf_pair json write_lat --json -- write_lat --json -s 64 -n 1000
jq -e '.test == "write_lat" and .role == "client" and (.results | length) == 1
	and .results[0].bytes == 64 and .results[0].iterations == 1000
	and .results[0].t_typical_us > 0 and .results[0].t_p99_9_us >= .results[0].t_typical_us' \
	<<<"$COUT" >/dev/null || fail "write_lat --json: unexpected: $COUT"
jq -e '.role == "server"' <<<"$SOUT" >/dev/null || fail "server --json: unexpected: $SOUT"

log "the other tests, briefly"
perf_pair read_lat read_lat -- read_lat -s 4096 -n 500
assert_match '^ 4096 +500 ' "$COUT" "read_lat row"
perf_pair atomic_lat atomic_lat -- atomic_lat -n 500
assert_match '^ 8 +500 ' "$COUT" "atomic_lat row"
perf_pair send_bw send_bw -- send_bw -s 4096 -n 2000 -q 2
assert_match '^ 4096 +4000 ' "$COUT" "send_bw row (2 QPs × 2000)"
assert_match '^ 4096 +4000 ' "$SOUT" "send_bw server's row (what it received)"
perf_pair read_bw read_bw -- read_bw -s 65536 -n 500
assert_match '^ 65536 +500 ' "$COUT" "read_bw row"
perf_pair atomic_bw atomic_bw -- atomic_bw -n 2000
assert_match '^ 8 +2000 ' "$COUT" "atomic_bw row"
perf_pair send_lat_e send_lat -e -- send_lat -e -s 64 -n 500
assert_match '^ 64 +500 ' "$COUT" "send_lat -e row"
perf_pair write_bw_e write_bw -e -- write_bw -e -s 65536 -n 500
assert_match '^ 65536 +500 ' "$COUT" "write_bw -e row"
perf_pair send_lat_D send_lat -- send_lat -D 1
assert_match '^ 2 +[0-9]+ ' "$COUT" "send_lat -D 1 row"
perf_pair write_lat_a write_lat -- write_lat -a -n 20
assert_eq 23 "$(grep -cE '^ [0-9]+ +20 ' <<<"$COUT")" "write_lat -a: rows for 2 B … 8 MiB"

log "--use-srq: the QPs receive through one SRQ (they have no receive queue)"
perf_pair send_bw_srq send_bw -- send_bw --use-srq -s 4096 -n 2000 -q 4
assert_match '^ 4096 +8000 ' "$COUT" "send_bw --use-srq row (4 QPs × 2000)"
assert_match '^ 4096 +8000 ' "$SOUT" "send_bw --use-srq: the server received every message"
# the client's --use-srq reaches the server, whose receives matter here
assert_match 'Receive queue  : one SRQ of [0-9]+ WRs for 4 QP' "$SOUT" "the server's banner names its SRQ"
perf_pair send_lat_srq send_lat --use-srq --json -- send_lat --use-srq --json -s 64 -n 1000
jq -e '.srq == true and .results[0].iterations == 1000' <<<"$COUT" >/dev/null ||
	fail "send_lat --use-srq --json: unexpected: $COUT"
jq -e '.srq == true' <<<"$SOUT" >/dev/null || fail "send_lat --use-srq: the server has no SRQ: $SOUT"
assert_exit 2 in_a "$EFI_PERF" write_bw --use-srq "$IP_B"
assert_match 'only the send tests post receives' "$ERR" "--use-srq with write_bw"

log "errors"
# shellcheck disable=SC2153 # ERR: set by assert_fails
assert_fails in_b timeout 20 "$EFI_PERF" send_lat -p 18999 "$IP_A"
assert_match 'peer unreachable' "$ERR" "efi-perf with no server"
in_a timeout -k 5 30 "$EFI_PERF" send_lat >"$TMPD/mm.sout" 2>"$TMPD/mm.serr" &
spid=$!
TRACK_BGPIDS+=("$spid")
assert_fails in_b timeout 20 "$EFI_PERF" write_bw "$IP_A"
assert_match 'mismatched test.*send_lat.*write_bw' "$ERR" "client of another test"
src=0
wait "$spid" || src=$?
[ "$src" != 0 ] || fail "the server accepted a client of another test"
assert_match 'mismatched test' "$(cat "$TMPD/mm.serr")" "the server's message"
C=${PFX}c
mk_netns "$C"
assert_fails ip netns exec "$C" env EFI_SOCKET="$SOCK_A" timeout 20 "$EFI_PERF" send_lat
assert_match 'no EFI device' "$ERR" "efi-perf in an instance without interfaces"
assert_exit 2 in_a "$EFI_PERF" bogus_lat
assert_match 'unknown test' "$ERR" "unknown test name"
assert_exit 2 in_a "$EFI_PERF" send_lat -q 2 "$IP_B"
assert_match 'latency tests use one QP' "$ERR" "-q with a latency test"
