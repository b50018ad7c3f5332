#!/bin/bash
# SPDX-License-Identifier: MIT
# `efictl status` shows the connection manager's state per interface: the
# listeners (service, pid, backlog, pending requests) and the connections
# (local QPN, peer GID and QPN, state, pid) on both hosts, in JSON and for
# people; a connection whose process died leaves the listing.  About 5 s.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/lifecycle/lib.sh
. "$(dirname "$0")/lib.sh"
cm_init ls
dp_two_hosts

cm_server srv 7490 --expect-disconnect
cm_bg victim in_b client "$IP_A" 7490 --hang
wait_for 10000 "client connected" grep -q '^established' "$TMPD/victim.out"
wait_for 10000 "server saw it established" grep -q '^established' "$TMPD/srv.out"

log "host one: the listener and the server's side of the connection"
efid_use one
srv_pid=${CM_PIDS[srv]}
cli_pid=${CM_PIDS[victim]}
j=$(iface_json "$A" efi0)
assert_eq "$(jq -r '.listeners | length' <<<"$j")" 1
assert_eq "$(jq -r '.listeners[0] | "\(.service) \(.pid) \(.backlog) \(.pending)"' <<<"$j")" \
	"7490 $srv_pid 64 0"
assert_eq "$(jq -r '.connections | length' <<<"$j")" 1
assert_eq "$(jq -r '.connections[0] | "\(.state) \(.role) \(.pid) \(.peer_gid)"' <<<"$j")" \
	"established server $srv_pid ::ffff:$IP_B"
a_qpn=$(jq -r '.connections[0].qpn' <<<"$j")
a_peer=$(jq -r '.connections[0].peer_qpn' <<<"$j")

log "host two: the client's side, naming the same pair of QPs"
efid_use two
j=$(iface_json "$B" efi0)
assert_eq "$(jq -r '.listeners | length' <<<"$j")" 0
assert_eq "$(jq -r '.connections[0] | "\(.state) \(.role) \(.pid) \(.peer_gid)"' <<<"$j")" \
	"established client $cli_pid ::ffff:$IP_A"
assert_eq "$(jq -r '.connections[0].qpn' <<<"$j")" "$a_peer"
assert_eq "$(jq -r '.connections[0].peer_qpn' <<<"$j")" "$a_qpn"
if [ "$a_qpn" -le 0 ] || [ "$a_peer" -le 0 ]; then
	fail "QP numbers missing: $a_qpn $a_peer"
fi

log "the human view"
out=$(ctl status "$B" efi0) || fail "efictl status failed"
printf '%s\n' "$out"
assert_match "connections +QP 0x[0-9a-f]{6} <-> ::ffff:$IP_A QP 0x[0-9a-f]{6}, established \\(client\\), pid $cli_pid" "$out"
efid_use one
out=$(ctl status "$A" efi0) || fail "efictl status failed"
assert_match "listeners +service 7490, pid $srv_pid, backlog 64, pending 0" "$out"

log "the client dies: its connection leaves both listings"
kill -KILL "$cli_pid"
wait "$cli_pid" 2>/dev/null
cm_wait srv
efid_use two
wait_for 3000 "client's connection gone" \
	conns_are "$B" 0
efid_use one
wait_for 3000 "server's connection gone" \
	conns_are "$A" 0
assert_eq "$(iface_json "$A" efi0 | jq -r '.listeners | length')" 0
log "pass"
