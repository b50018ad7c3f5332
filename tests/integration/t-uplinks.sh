#!/bin/bash
# [Transport] Uplinks (efid/uplinks.h), in a throwaway namespace that
# stands for the host (efid runs inside it, so nothing touches the real
# host's rules): per-lane rules and per-uplink tables installed exactly,
# lane ports routed by their uplink and falling through to main's ECMP
# when it loses carrier, tables following main's routes, the uplinks'
# state in `efictl status`, a stale rule of an earlier efid removed and a
# foreign rule and route at efid's numbers left alone, and everything of
# efid's removed at shutdown (also after a crash, by the next efid).
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
. "$(dirname "$0")/lib.sh"
lib_init ul

H=${PFX}h
F=${PFX}f
mk_netns "$H"
mk_netns "$F"
ip -n "$H" link add br0 type bridge && ip -n "$H" addr add 10.1.1.1/24 dev br0 &&
	ip -n "$H" link set br0 up || fail "bridge"
for p in 0 1; do
	ip -n "$H" link add "up$p" type veth peer name "f$p" netns "$F" &&
		ip -n "$H" addr add "10.$((2 + p)).0.2/24" dev "up$p" &&
		ip -n "$H" addr add "fd00:$((2 + p))::2/64" dev "up$p" nodad &&
		ip -n "$F" addr add "10.$((2 + p)).0.1/24" dev "f$p" &&
		ip -n "$F" addr add "fd00:$((2 + p))::1/64" dev "f$p" nodad &&
		ip -n "$H" link set "up$p" up && ip -n "$F" link set "f$p" up || fail "uplink $p"
done
ip netns exec "$H" sysctl -qw net.ipv4.ip_forward=1 net.ipv4.fib_multipath_hash_policy=1 \
	net.ipv4.conf.all.ignore_routes_with_linkdown=1 >/dev/null || fail "sysctls"
ip -n "$H" route add 10.1.0.0/16 nexthop via 10.2.0.1 dev up0 nexthop via 10.3.0.1 dev up1 ||
	fail "ECMP route"
ip -n "$H" -6 route add fd00:1::/48 nexthop via fd00:2::1 dev up0 nexthop via fd00:3::1 dev up1 ||
	fail "ECMP route (IPv6)"
# Someone else's rule and route at efid's numbers (another protocol), and
# a leftover of an earlier efid (efid's protocol 239).
ip -n "$H" rule add prio 17401 ipproto udp sport 1-2 lookup 17400 proto static || fail "foreign rule"
ip -n "$H" route add 10.77.0.0/16 dev up0 table 17401 proto static || fail "foreign route"
ip -n "$H" rule add prio 17403 ipproto udp sport 3-4 lookup 17401 proto 239 || fail "stale rule"

hns() { ip -n "$H" "$@"; }
# rules PRIO..: "prio sport table" of efid's rules (protocol 239), sorted
our_rules() {
	hns "$@" -j rule show | jq -r '.[] | select(.protocol == "239" or .protocol == 239) |
		"\(.priority) \(.sport_start // "-")-\(.sport_end // "-") \(.table)"' | sort
}
other_rules() {
	hns -j rule show | jq -r '.[] | select(.protocol != "239" and .protocol != 239 and .priority >= 17400 and .priority < 17408) | "\(.priority) \(.table)"'
}
table_routes() { hns "${@:2}" -j route show table "$1" | jq -r '.[] | "\(.dst) \(.gateway // "-") \(.dev // "-") \(.protocol)"' | sort; }
dev_for_sport() { hns -j route get 10.1.2.5 from 10.1.1.10 iif br0 ipproto udp sport "$1" dport 9 | jq -r '.[0].dev'; }
status_json() { timeout -k 2 "$CTL_TIMEOUT" nsenter --net="/run/netns/$H" "$EFICTL" --socket "$SOCK" --json status; }
uplink_field() { status_json | jq -r --arg n "$1" ".uplinks[] | select(.name == \$n) | $2"; }

efid_config main Transport.Uplinks="up0 up1" Transport.Lanes=4 Transport.PortBase=20000
EFI_IT_WRAP="nsenter --net=/run/netns/$H" efid_launch main

want_rules="17400 20000-24095 17400
17400 20000-24095 17400
17401 24096-28191 17401
17401 24096-28191 17401
17402 28192-32287 17400
17402 28192-32287 17400
17403 32288-36383 17401
17403 32288-36383 17401"
got=$( (our_rules -4; our_rules -6) | sort)
assert_eq "$want_rules" "$got" "efid's rules (IPv4 and IPv6, one per lane)"
assert_eq "17401 17400" "$(other_rules)" "the foreign rule is left alone"
assert_match "stale policy rules" "$(cat "${EFID_DIR[main]}/efid.log")"

# main's routes over the uplink (the ECMP one restricted to it, its
# connected subnet) and what the first would shadow (br0's subnet)
assert_eq "10.1.0.0/16 10.2.0.1 up0 239
10.1.1.0/24 - br0 239
10.2.0.0/24 - up0 239" "$(table_routes 17400)" "table of up0"
assert_eq "10.1.0.0/16 10.3.0.1 up1 239
10.1.1.0/24 - br0 239
10.3.0.0/24 - up1 239
10.77.0.0/16 - up0 static" "$(table_routes 17401)" "table of up1 (with the foreign route)"
assert_eq "fd00:1::/48 fd00:2::1 up0 239" "$(table_routes 17400 -6 | grep fd00:1::)" "IPv6 table of up0"

log "lane ports are routed by their uplink"
assert_eq up0 "$(dev_for_sport 20001)" "lane 0"
assert_eq up1 "$(dev_for_sport 24097)" "lane 1"
assert_eq up0 "$(dev_for_sport 28193)" "lane 2"
assert_eq up1 "$(dev_for_sport 32289)" "lane 3"
assert_eq br0 "$(hns -j route get 10.1.1.20 from 10.1.1.10 iif br0 ipproto udp sport 20001 dport 9 | jq -r '.[0].dev')" \
	"a more specific route of main still wins for lane traffic"

log "status shows the uplinks"
assert_eq "up [0,2]" "$(uplink_field up0 '"\(.link) \(.lanes | tojson)"')" "up0 in status"
assert_eq "up [1,3]" "$(uplink_field up1 '"\(.link) \(.lanes | tojson)"')" "up1 in status"
assert_match "up0 +up +lanes 0,2" "$(timeout 10 nsenter --net="/run/netns/$H" "$EFICTL" --socket "$SOCK" status)"
# and in the metrics (docs/metrics.md)
stats_prom() { timeout 10 nsenter --net="/run/netns/$H" "$EFICTL" --socket "$SOCK" stats --prometheus; }
assert_match '^efi_uplink_up\{uplink="up0"\} 1$' "$(stats_prom)" "up0 up in stats --prometheus"
assert_match '^efi_uplink_lanes\{uplink="up1"\} 2$' "$(stats_prom)" "up1's lanes in stats --prometheus"

log "up0 loses carrier"
ip -n "$F" link set f0 down
wait_for 2000 "up0 down in status" eval '[ "$(uplink_field up0 .link)" = down ]'
log "seen after ${WAITED_MS} ms"
assert_eq up1 "$(dev_for_sport 20001)" "lane 0 falls through to main's ECMP"
assert_eq 1 "$(uplink_field up0 .changes)" "one change"
assert_match '^efi_uplink_up\{uplink="up0"\} 0$' "$(stats_prom)" "up0 down in stats --prometheus"
assert_match '^efi_uplink_changes_total\{uplink="up0"\} 1$' "$(stats_prom)" "up0's change counted"
ip -n "$F" link set f0 up
wait_for 2000 "up0 up again" eval '[ "$(uplink_field up0 .link)" = up ]'
wait_for 2000 "lane 0 back on up0" eval '[ "$(dev_for_sport 20001)" = up0 ]'

log "tables follow main"
hns route add 10.9.0.0/16 nexthop via 10.2.0.1 dev up0 nexthop via 10.3.0.1 dev up1 || fail "route add"
wait_for 2000 "new route in up1's table" eval 'table_routes 17401 | grep -q "^10.9.0.0/16 10.3.0.1 up1 239"'
hns route del 10.9.0.0/16 || fail "route del"
wait_for 2000 "gone again" eval '! table_routes 17401 | grep -q "^10.9.0.0/16"'

log "a crash leaves them; the next efid takes them over exactly"
efid_stop main KILL
assert_eq "$want_rules" "$( (our_rules -4; our_rules -6) | sort)" "left by the crash"
EFI_IT_WRAP="nsenter --net=/run/netns/$H" efid_launch main
assert_eq "$want_rules" "$( (our_rules -4; our_rules -6) | sort)" "rules after the restart"
assert_eq 3 "$(table_routes 17400 | grep -c ' 239$')" "up0's table after the restart"

log "shutdown removes exactly what efid installed"
efid_stop main
assert_eq "" "$( (our_rules -4; our_rules -6))" "no rule of efid's"
assert_eq "" "$(table_routes 17400)" "up0's table empty"
assert_eq "10.77.0.0/16 - up0 static" "$(table_routes 17401)" "only the foreign route in 17401"
assert_eq "17401 17400" "$(other_rules)" "the foreign rule survives"

log "a missing uplink: efid runs, its lanes follow main"
efid_config bad Transport.Uplinks="up0 nosuch0" Transport.Lanes=2
EFI_IT_WRAP="nsenter --net=/run/netns/$H" efid_launch bad
SOCK=${EFID_SOCK[bad]}
assert_eq "down" "$(uplink_field nosuch0 .link)" "a missing uplink is down"
assert_eq "10.77.0.0/16 - up0 static" "$(table_routes 17401)" "no routes of efid's for nosuch0"
assert_match "^up[01]$" "$(dev_for_sport 24097)" "lane 1 (nosuch0) follows main's ECMP"
efid_stop bad
log "ok"
