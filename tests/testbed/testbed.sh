#!/bin/bash
# shellcheck shell=bash
# shellcheck disable=SC2015 # "A && B || fail": fail exits, so it is if-then-else
# The lossy multi-host testbed (docs/testbed.md): N hosts, each a network
# namespace running its own efid with instances attached to a bridge, joined
# to a fabric namespace by P independent paths (one veth pair per host and
# path), with knobs for loss, duplication, bottlenecks and link failure that
# can be turned while traffic runs.
#
# As a command (root):
#     testbed.sh [--name NAME] up [--hosts N] [--instances K] [--paths P]
#                                 [--offloads on|off] [--uplinks on|off] [--build DIR]
#     testbed.sh [--name NAME] down | show
#     testbed.sh [--name NAME] loss PORT P [tx|rx|both]
#     testbed.sh [--name NAME] dup PORT P [tx|rx|both]
#     testbed.sh [--name NAME] hole PORT UDP_PORT [tx|rx|both]
#     testbed.sh [--name NAME] rate PORT RATE QUEUE [tx|rx|both]
#     testbed.sh [--name NAME] rate PORT off [tx|rx|both]
#     testbed.sh [--name NAME] link PORT down|up
#     testbed.sh [--name NAME] flap PORT PERIOD_MS DURATION_S
#     testbed.sh [--name NAME] exec HOST INSTANCE CMD...
#     testbed.sh [--name NAME] addr HOST INSTANCE
# PORT is hHpP (host H = 1.., path P = 0..), INSTANCE a letter (a = first).
# tx is the host-to-fabric direction of a port, rx fabric-to-host.
#
# As a library (tests, benchmarks), after tests/integration/lib.sh's style:
#     . tests/testbed/testbed.sh
#     tb_test_init TAG          # lib_init TAG + testbed checks and cleanup
#     tb_up 2 1 2 off           # hosts, instances per host, paths, offloads
#     tb_loss h1p0 0.01; tb_exec 1 a CMD...; ...
# Everything is removed on exit, also on failure or interrupt.
#
# Layout (host h = 1..N, path p = 0..P-1, instance i = 1.. as a, b, ...):
#   instance ns PFXh<h><i>: efi0 10.1.h.(9+i)/24 (made by that host's efid),
#       route 10.1.0.0/16 via 10.1.h.1
#   host ns PFXh<h>: efid; bridge br0 10.1.h.1/24 (the instances' uplink);
#       up<p> 10.(2+p).h.2/24; route 10.1.0.0/16 over every up<p>, ECMP hashed
#       on the L4 header (fib_multipath_hash_policy=1).  With uplinks on
#       (TB_UPLINKS=on, the default; --uplinks off or TB_UPLINKS=off for
#       none) efid.conf says [Transport] Uplinks=up0 … (at most Lanes of
#       them): efid pins lane L to up<L mod P> by policy routing and
#       publishes their state in the path table (docs/path-table.md)
#   fabric ns PFXf: h<h>p<p> 10.(2+p).h.1/24; route 10.1.h.0/24 over every
#       h<h>p<p> that is up, ECMP hashed the same way
# So kernel TCP between two instances and EFI's UDP take the same paths, and
# different UDP source ports between the same two addresses can take
# different paths.  `link hHpP down` sets the fabric end down: the fabric
# drops that nexthop, the host sees no carrier and ignores it
# (ignore_routes_with_linkdown), so traffic moves to the other paths in both
# directions.  Droppers (bpf/loss.c) sit on the ingress of both ends of every
# port from the start (p = 0), so their counters also show which paths
# traffic took.  Both ends of every port have gso_max_segs 1: a router
# segments what it forwards onto a port, so the dropper on the far end sees
# wire-sized packets and p means "per MTU-sized packet" for TCP (TSO) and
# UDP GSO alike, while the instances send as the kernel lets them
# (offloads on).  Offloads off (gso_max_segs 1 on the instances' efi0 too)
# is the older, per-packet setting that cripples TCP's sender; it stays for
# comparison.

[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"

TB_SRCDIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/integration/lib.sh
. "$TB_SRCDIR/../integration/lib.sh"

: "${TB_STATE_DIR:=/run/efi-testbed}"
# tbf's bucket: big enough for the hrtimer's granularity at Gb/s rates
: "${TB_TBF_BURST:=32kb}"
# on: each host's efid pins lanes to its uplinks ([Transport] Uplinks=)
: "${TB_UPLINKS:=on}"
# The MTU of every link (fabric ports, uplinks, bridges) and of the
# instances' efi0 ("": the kernel's, 1500).  A list gives host h the h-th
# word as its instances' MTU (the last word for the hosts beyond), the links
# taking the largest: "9000 1500" is a jumbo fabric with a 1500-byte host 2.
: "${TB_MTU:=}"

TB_NAME=""
TB_STATE=""     # the state file: everything this testbed created, a line each
TB_LETTERS=abcdefghijklmnopqrstuvwxyz
TB_KEEP=0       # 1 once `up` succeeded from the command line: leave it running

# --- state file -------------------------------------------------------------
# Lines: "KEY FIELD...".  Written before (netns, mount, dir) or right after
# (efid, whose pid is known only then) each object is made, so a failure or
# an interrupt at any point still finds it.

_tb_add() { printf '%s\n' "$*" >>"$TB_STATE"; }

# _tb_get KEY [FIELD1-MATCH]: the matching lines, without the key.
_tb_get() {
	[ -f "$TB_STATE" ] || return 0
	awk -v k="$1" -v m="${2:-}" '$1 == k && (m == "" || $2 == m) {sub(/^[^ ]+ /, ""); print}' "$TB_STATE"
}

_tb_one() { _tb_get "$@" | head -n 1; }

_tb_need_state() {
	[ -f "$TB_STATE" ] || { echo "testbed.sh: no testbed named '$TB_NAME' (no $TB_STATE)" >&2; exit 3; }
}

# --- checks ----------------------------------------------------------------

# tb_find_bpf: sets TB_BPF_OBJ to the dropper's object: $TB_BPF_OBJ, the
# build tree's, or one compiled now into DIR ($1) when clang can target BPF.
tb_find_bpf() {
	local dir=$1 arch
	if [ -n "${TB_BPF_OBJ:-}" ] && [ -s "$TB_BPF_OBJ" ]; then
		return 0
	fi
	TB_BPF_OBJ=${top_builddir:-.}/tests/testbed/bpf/loss.o
	[ -s "$TB_BPF_OBJ" ] && return 0
	command -v clang >/dev/null 2>&1 || return 1
	arch=$(gcc -print-multiarch 2>/dev/null || clang -print-multiarch 2>/dev/null)
	TB_BPF_OBJ=$dir/loss.o
	clang -O2 -g -target bpf ${arch:+-I/usr/include/$arch} -c "$TB_SRCDIR/bpf/loss.c" \
		-o "$TB_BPF_OBJ" 2>"$dir/clang.err" || return 1
}

# tb_missing: prints why the testbed cannot be built here (empty if it can).
tb_missing() {
	local c
	[ "$(id -u)" = 0 ] || { echo "the testbed needs root"; return; }
	for c in ip tc bpftool jq nsenter awk mount; do
		command -v "$c" >/dev/null 2>&1 || { echo "$c is not installed"; return; }
	done
	ip netns list >/dev/null 2>&1 || { echo "ip netns is unavailable"; return; }
	[ -x "$EFID" ] || { echo "efid not built at $EFID"; return; }
	[ -x "$EFICTL" ] || { echo "efictl not built at $EFICTL"; return; }
}

# --- names ----------------------------------------------------------------

tb_ns_fabric() { echo "${TB_PFX}f"; }
# tb_ns HOST [INSTANCE-LETTER]
tb_ns() { echo "${TB_PFX}h$1${2:-}"; }
_tb_letter_index() { printf '%d' "$(($(printf '%d' "'$1") - 96))"; }
# tb_addr HOST INSTANCE-LETTER: the instance's efi0 address
tb_addr() { echo "10.1.$1.$((9 + $(_tb_letter_index "$2")))"; }

# _tb_port PORT: sets PH (its host), PDEV_H, PDEV_F, NS_H, NS_F, or
# fails with a message when the testbed has no such port.
_tb_port() {
	local l
	l=$(_tb_one port "$1")
	[ -n "$l" ] || { echo "testbed.sh: no port '$1' in testbed '$TB_NAME' (see show)" >&2; return 3; }
	read -r _ PH _ NS_H PDEV_H NS_F PDEV_F <<<"$l"
}

# _tb_dirs DIR: the directions (tx, rx) named by DIR
_tb_dirs() {
	case ${1:-both} in
	tx | rx) echo "$1" ;;
	both) echo "tx rx" ;;
	*) echo "testbed.sh: direction '$1' is not tx, rx or both" >&2; return 2 ;;
	esac
}

# _tb_end DIR: the namespace and device whose egress carries DIR of the port
# set by _tb_port (tx: the host's uplink, rx: the fabric's port).
_tb_end() {
	if [ "$1" = tx ]; then END_NS=$NS_H END_DEV=$PDEV_H; else END_NS=$NS_F END_DEV=$PDEV_F; fi
}

# _tb_far_end DIR: the namespace and device whose ingress receives DIR of the
# port (tx: the fabric's port, rx: the host's uplink).
_tb_far_end() {
	if [ "$1" = tx ]; then END_NS=$NS_F END_DEV=$PDEV_F; else END_NS=$NS_H END_DEV=$PDEV_H; fi
}

# --- building ---------------------------------------------------------------

_tb_sysctls() {
	ip netns exec "$1" sysctl -qw net.ipv4.ip_forward=1 \
		net.ipv4.fib_multipath_hash_policy=1 \
		net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0 \
		net.ipv4.conf.all.ignore_routes_with_linkdown=1 >/dev/null ||
		fail "sysctls in $1 failed"
}

_tb_netns() {
	_tb_add netns "$1"
	mk_netns "$1"
}

# _tb_dropper PORT DIR: the dropper on the egress of that end, maps pinned
# under the testbed's bpffs.
_tb_dropper() {
	local d=$TB_BPFFS/$1-$2
	_tb_port "$1" || fail "no port $1"
	_tb_far_end "$2"
	mkdir "$d" || fail "mkdir $d failed"
	bpftool prog load "$TB_BPF_OBJ" "$d/prog" type classifier pinmaps "$d" ||
		fail "bpftool prog load $TB_BPF_OBJ failed"
	# nsenter, not ip netns exec/tc -n: those give tc a fresh mount
	# namespace where the pins are not visible
	nsenter --net="/run/netns/$END_NS" tc qdisc add dev "$END_DEV" clsact &&
		nsenter --net="/run/netns/$END_NS" tc filter add dev "$END_DEV" ingress prio 1 \
			handle 1 bpf direct-action object-pinned "$d/prog" ||
		fail "attaching the dropper to $END_DEV in $END_NS failed"
}

# _tb_routes HOST: the fabric's route to HOST's instances over every path
# whose fabric end is up (none: unreachable).  The kernel drops a route
# whose nexthops all went down and does not bring it back, hence this after
# every link change.
_tb_routes() {
	local h=$1 p nh=() f dev
	f=$(tb_ns_fabric)
	for ((p = 0; p < TB_PATHS; p++)); do
		dev=h${h}p$p
		ip -n "$f" -j link show dev "$dev" | jq -e '.[0].flags | index("UP") != null' >/dev/null &&
			nh+=(nexthop via "10.$((2 + p)).$h.2" dev "$dev")
	done
	if [ ${#nh[@]} -gt 0 ]; then
		ip -n "$f" route replace "10.1.$h.0/24" "${nh[@]}"
	else
		ip -n "$f" route replace unreachable "10.1.$h.0/24"
	fi
}

# _tb_uplinks_conf PATHS: sets TB_UPLINKS_WORD, efid_config's Uplinks=
# word (empty with TB_UPLINKS=off): the first min(PATHS, 4) uplinks, as
# efid's default 4 lanes can be pinned to at most 4
_tb_uplinks_conf() {
	local p names=""
	TB_UPLINKS_WORD=""
	[ "$TB_UPLINKS" = on ] || return 0
	for ((p = 0; p < $1 && p < 4; p++)); do
		names+="${names:+ }up$p"
	done
	TB_UPLINKS_WORD="Transport.Uplinks=$names"
}

# tb_up HOSTS INSTANCES PATHS OFFLOADS(on|off)
tb_up() {
	local hosts=$1 insts=$2 paths=$3 offl=$4 h i p f hn in dev nh letter
	[[ $hosts =~ ^[0-9]+$ ]] && [ "$hosts" -ge 1 ] && [ "$hosts" -le 250 ] ||
		fail "hosts: 1..250, not '$hosts'"
	[[ $insts =~ ^[0-9]+$ ]] && [ "$insts" -ge 1 ] && [ "$insts" -le 26 ] ||
		fail "instances: 1..26, not '$insts'"
	[[ $paths =~ ^[0-9]+$ ]] && [ "$paths" -ge 1 ] && [ "$paths" -le 8 ] ||
		fail "paths: 1..8, not '$paths'"
	case $offl in on | off) ;; *) fail "offloads: on or off, not '$offl'" ;; esac
	case $TB_UPLINKS in on | off) ;; *) fail "uplinks: on or off, not '$TB_UPLINKS'" ;; esac
	local mtus=() linkmtu="" m
	read -r -a mtus <<<"$TB_MTU"
	for m in "${mtus[@]}"; do
		[[ $m =~ ^[0-9]+$ ]] && [ "$m" -ge 576 ] && [ "$m" -le 65535 ] ||
			fail "TB_MTU: MTUs of 576..65535, not '$m'"
		[ -z "$linkmtu" ] || [ "$m" -gt "$linkmtu" ] && linkmtu=$m
	done
	TB_PATHS=$paths
	_tb_add name "$TB_NAME" "$TB_PFX" "$$"
	_tb_add shape "$hosts" "$insts" "$paths" "$offl"
	_tb_add dir "$TB_TMP"
	mkdir -p "$TB_TMP" "$TB_STATE_DIR" || fail "mkdir $TB_TMP failed"
	tb_find_bpf "$TB_TMP" || fail "no BPF object for the dropper: build tests/testbed/bpf/loss.o (make check) or install clang"
	# libbpf turns dots in a pin path into underscores: no dots here
	TB_BPFFS=$TB_STATE_DIR/bpf-$TB_PFX
	_tb_add mount "$TB_BPFFS"
	mkdir -p "$TB_BPFFS" && mount -t bpf bpf "$TB_BPFFS" || fail "mount -t bpf on $TB_BPFFS failed"

	f=$(tb_ns_fabric)
	_tb_netns "$f"
	_tb_sysctls "$f"
	for ((h = 1; h <= hosts; h++)); do
		hn=$(tb_ns "$h")
		_tb_netns "$hn"
		_tb_sysctls "$hn"
		ip -n "$hn" link add name br0 ${linkmtu:+mtu "$linkmtu"} type bridge forward_delay 0 stp_state 0 &&
			ip -n "$hn" addr add "10.1.$h.1/24" dev br0 && ip -n "$hn" link set dev br0 up ||
			fail "bridge in $hn failed"
		nh=()
		for ((p = 0; p < paths; p++)); do
			dev=h${h}p$p
			ip -n "$hn" link add name "up$p" type veth peer name "$dev" netns "$f" &&
				ip -n "$hn" addr add "10.$((2 + p)).$h.2/24" dev "up$p" &&
				ip -n "$f" addr add "10.$((2 + p)).$h.1/24" dev "$dev" &&
				ip -n "$hn" link set dev "up$p" up ${linkmtu:+mtu "$linkmtu"} &&
				ip -n "$f" link set dev "$dev" up ${linkmtu:+mtu "$linkmtu"} ||
				fail "uplink $dev failed"
			# the routers segment what they forward onto the port, so
			# the far end's dropper sees wire packets (see the top)
			ip -n "$hn" link set dev "up$p" gso_max_segs 1 && ip -n "$f" link set dev "$dev" gso_max_segs 1 ||
				fail "gso_max_segs on $dev failed"
			_tb_add port "$dev" "$h" "$p" "$hn" "up$p" "$f" "$dev"
			_tb_dropper "$dev" tx
			_tb_dropper "$dev" rx
			nh+=(nexthop via "10.$((2 + p)).$h.1" dev "up$p")
		done
		ip -n "$hn" route add 10.1.0.0/16 "${nh[@]}" || fail "routes of $hn failed"
		_tb_routes "$h"

		# its efid, running inside the host's namespace
		_tb_uplinks_conf "$paths"
		efid_config "tb$h" Daemon.LogLevel=info ${TB_UPLINKS_WORD:+"$TB_UPLINKS_WORD"}
		EFI_IT_WRAP="nsenter --net=/run/netns/$hn" efid_launch "tb$h"
		_tb_add efid "$h" "${EFID_PID[tb$h]}" "${EFID_DIR[tb$h]}" "${EFID_SOCK[tb$h]}" "$hn"
		for ((i = 1; i <= insts; i++)); do
			letter=${TB_LETTERS:i-1:1}
			in=$(tb_ns "$h" "$letter")
			_tb_netns "$in"
			# efictl from the host's namespace: efid takes a caller in
			# any other for a process of an instance
			m=""
			[ ${#mtus[@]} -gt 0 ] && m=${mtus[h - 1]:-${mtus[${#mtus[@]} - 1]}}
			assert_exit 0 tb_ctl "$h" attach "$in" --name efi0 \
				--address "$(tb_addr "$h" "$letter")/24" --uplink br0 ${m:+--mtu "$m"}
			ip -n "$in" route add 10.1.0.0/16 via "10.1.$h.1" dev efi0 ||
				fail "route in $in failed"
			# offloads off, the old per-packet setting: no super-packets
			# leave the instance at all (TCP's sender pays for that;
			# loss is per packet either way, see the top)
			[ "$offl" = off ] && { ip -n "$in" link set efi0 gso_max_segs 1 ||
				fail "gso_max_segs on efi0 in $in failed"; }
			_tb_add inst "$h" "$letter" "$in" "$(tb_addr "$h" "$letter")"
		done
	done
	# every instance reaches every other one
	for ((h = 1; h <= hosts; h++)); do
		wait_for 5000 "instance $h a reaches the others" _tb_reach_all "$h" a
	done
}

# tb_ctl HOST ARGS...: efictl against that host's efid, from its namespace.
tb_ctl() {
	local h=$1 l sock ns
	shift
	l=$(_tb_one efid "$h")
	[ -n "$l" ] || { echo "testbed.sh: no host '$h'" >&2; return 3; }
	read -r _ _ _ sock ns <<<"$l"
	timeout -k 2 "$CTL_TIMEOUT" nsenter --net="/run/netns/$ns" "$EFICTL" --socket "$sock" "$@"
}

_tb_reach_all() {
	local addr
	while read -r _ _ _ addr; do
		tb_exec "$1" "$2" ping -c 1 -W 1 "$addr" >/dev/null || return 1
	done < <(_tb_get inst)
}

# _tb_load: reads the testbed's shape and places back from the state file.
_tb_load() {
	local l
	l=$(_tb_one name)
	[ -n "$l" ] || { echo "testbed.sh: $TB_STATE is not a testbed state file" >&2; exit 1; }
	read -r _ TB_PFX _ <<<"$l"
	read -r _ _ TB_PATHS _ <<<"$(_tb_one shape)"
	TB_TMP=$(_tb_one dir)
	TB_BPFFS=$(_tb_one mount)
}

# --- knobs ------------------------------------------------------------------

# _tb_u64le N: the 8 little-endian bytes of N, for bpftool
_tb_u64le() {
	local n=$1 i out=""
	for ((i = 0; i < 8; i++)); do
		out+="$((n & 255)) "
		n=$((n >> 8))
	done
	echo "$out"
}

# _tb_prob P: P (0..1, or a percentage "5%") as a threshold of 2^32
_tb_prob() {
	local p=$1
	if [[ $p =~ ^([0-9]+(\.[0-9]*)?|\.[0-9]+)%$ ]]; then
		p=$(awk -v v="${p%\%}" 'BEGIN {printf "%.10f", v / 100}')
	fi
	[[ $p =~ ^([0-9]+(\.[0-9]*)?|\.[0-9]+)$ ]] &&
		awk -v v="$p" 'BEGIN {exit !(v >= 0 && v <= 1)}' || {
		echo "testbed.sh: probability '$1' is not in 0..1 (or 0%..100%)" >&2
		return 2
	}
	awk -v v="$p" 'BEGIN {printf "%.0f\n", v * 4294967296}'
}

# _tb_threshold PORT P DIRS INDEX (0 loss, 1 duplicate)
_tb_threshold() {
	local port=$1 thr dirs d
	_tb_port "$port" || return
	thr=$(_tb_prob "$2") || return
	dirs=$(_tb_dirs "${3:-both}") || return
	for d in $dirs; do
		# shellcheck disable=SC2046 # the bytes are separate words
		bpftool map update pinned "$TB_BPFFS/$port-$d/thresholds" key "$4" 0 0 0 \
			value $(_tb_u64le "$thr") || { echo "testbed.sh: map update for $port $d failed" >&2; return 1; }
	done
}

# tb_loss PORT P [tx|rx|both]: drop with probability P (1: black hole)
tb_loss() { _tb_threshold "$1" "$2" "${3:-both}" 0; }
# tb_dup PORT P [tx|rx|both]: send packets twice with probability P
tb_dup() { _tb_threshold "$1" "$2" "${3:-both}" 1; }

# tb_hole PORT UDP_PORT [tx|rx|both]: drop every IPv4 datagram to UDP
# destination port UDP_PORT (0: none), carrier up: the black hole an ECMP
# fabric makes of a dead link for the flows it hashed there
tb_hole() {
	local port=$1 udp=$2 dirs d
	_tb_port "$port" || return
	[[ $udp =~ ^[0-9]+$ ]] && [ "$udp" -le 65535 ] ||
		{ echo "testbed.sh: hole $port: a UDP port 0..65535, not '$udp'" >&2; return 2; }
	dirs=$(_tb_dirs "${3:-both}") || return
	for d in $dirs; do
		# shellcheck disable=SC2046 # the bytes are separate words
		bpftool map update pinned "$TB_BPFFS/$port-$d/thresholds" key 2 0 0 0 \
			value $(_tb_u64le "$udp") || { echo "testbed.sh: map update for $port $d failed" >&2; return 1; }
	done
}

# tb_rate PORT RATE QUEUE [DIR] | tb_rate PORT off [DIR]: a tbf bottleneck
# (RATE as tc: 1gbit, 100mbit; QUEUE its byte limit: 100kb) on the port's
# egress, or none.
tb_rate() {
	local port=$1 rate=$2 queue dir dirs d
	_tb_port "$port" || return
	if [ "$rate" = off ]; then
		dir=${3:-both}
	else
		queue=${3:-}
		dir=${4:-both}
		[[ $rate =~ ^[0-9]+(\.[0-9]+)?[kmgt]?(bit|bps)$ ]] ||
			{ echo "testbed.sh: rate '$rate': a number with kbit, mbit, gbit (tc's units)" >&2; return 2; }
		[[ $queue =~ ^[0-9]+[kmg]?b?$ ]] ||
			{ echo "testbed.sh: queue '$queue': bytes, e.g. 100kb" >&2; return 2; }
	fi
	dirs=$(_tb_dirs "$dir") || return
	for d in $dirs; do
		_tb_end "$d"
		if [ "$rate" = off ]; then
			tc -n "$END_NS" qdisc del dev "$END_DEV" root 2>/dev/null
		else
			tc -n "$END_NS" qdisc replace dev "$END_DEV" root tbf rate "$rate" \
				burst "$TB_TBF_BURST" limit "$queue" || return 1
		fi
	done
	return 0
}

# tb_offloads on|off: every instance's efi0 as the kernel sets it (on) or
# with gso_max_segs 1 (off: no super-packets leave the instance, the older
# per-packet setting, which slows TCP's sender down).  Loss is per wire
# packet either way (the droppers sit where packets are segmented).
tb_offloads() {
	local segs ins
	case ${1:-} in
	on) segs=65535 ;;
	off) segs=1 ;;
	*) echo "testbed.sh: offloads on or off, not '${1:-}'" >&2; return 2 ;;
	esac
	while read -r _ _ ins _; do
		ip -n "$ins" link set efi0 gso_max_segs "$segs" || return 1
	done < <(_tb_get inst)
}

# tb_router_segments on|off: whether the routers segment what they forward
# onto the ports (on, the default: droppers see wire packets, loss is per
# packet) or forward super-packets whole as a plain bridge does (off: a
# clean network's ceiling, for benchmarks without loss; the droppers then
# count super-packets).
tb_router_segments() {
	local segs dev h _p hn up f
	case ${1:-} in
	on) segs=1 ;;
	off) segs=65535 ;;
	*) echo "testbed.sh: router segments on or off, not '${1:-}'" >&2; return 2 ;;
	esac
	while read -r dev _ _ hn up f _; do
		ip -n "$hn" link set dev "$up" gso_max_segs "$segs" &&
			ip -n "$f" link set dev "$dev" gso_max_segs "$segs" || return 1
	done < <(_tb_get port)
}

# tb_link PORT down|up
tb_link() {
	_tb_port "$1" || return
	case ${2:-} in
	down | up) ;;
	*) echo "testbed.sh: link $1: say down or up" >&2; return 2 ;;
	esac
	ip -n "$NS_F" link set "$PDEV_F" "$2" || return 1
	_tb_routes "$PH"
}

# tb_flap PORT PERIOD_MS DURATION_S: down half a period, up half a period,
# for DURATION_S seconds; ends (also when interrupted) with the link up.
tb_flap() {
	local port=$1 period=${2:-} dur=${3:-} end half saved
	_tb_port "$port" || return
	[[ $period =~ ^[0-9]+$ ]] && [ "$period" -ge 2 ] &&
		[[ $dur =~ ^[0-9]+(\.[0-9]+)?$ ]] ||
		{ echo "testbed.sh: flap PORT PERIOD_MS DURATION_S (integers)" >&2; return 2; }
	half=$(awk -v p="$period" 'BEGIN {printf "%.3f", p / 2000}')
	end=$(awk -v n="$EPOCHREALTIME" -v d="$dur" 'BEGIN {printf "%.3f", n + d}')
	saved=$(trap -p INT TERM)
	# shellcheck disable=SC2064 # the port is fixed now
	trap "tb_link $port up; exit 130" INT TERM
	while awk -v n="$EPOCHREALTIME" -v e="$end" 'BEGIN {exit !(n < e)}'; do
		tb_link "$port" down || break
		sleep "$half"
		tb_link "$port" up || break
		sleep "$half"
	done
	trap - INT TERM
	eval "$saved"
	tb_link "$port" up
}

# tb_stats PORT DIR: "packets dropped segments segments_dropped duplicated"
tb_stats() {
	_tb_port "$1" || return
	bpftool -j map dump pinned "$TB_BPFFS/$1-$2/loss_stats" |
		jq -r 'sort_by(.formatted.key) | map([.formatted.values[].value] | add) | map(tostring) | join(" ")'
}

# tb_stats_reset PORT DIR: zero the counters
tb_stats_reset() {
	local k
	_tb_port "$1" || return
	for k in 0 1 2 3 4; do
		bpftool map update pinned "$TB_BPFFS/$1-$2/loss_stats" key "$k" 0 0 0 \
			value 0 0 0 0 0 0 0 0 || return 1
	done
}

# tb_exec HOST INSTANCE CMD...: CMD inside the instance, with its efid's
# socket in EFI_SOCKET.
tb_exec() {
	local h=$1 i=$2 l sock
	shift 2
	l=$(_tb_get inst "$h" | awk -v i="$i" '$2 == i')
	[ -n "$l" ] || { echo "testbed.sh: no instance '$i' on host '$h'" >&2; return 3; }
	sock=$(_tb_one efid "$h" | awk '{print $4}')
	ip netns exec "$(tb_ns "$h" "$i")" env EFI_SOCKET="$sock" "$@"
}

# --- show ------------------------------------------------------------------

tb_show() {
	local h pid dir sock ns d port thr p st l ins addr pk pd sg sd du
	echo "testbed $TB_NAME (state $TB_STATE)"
	echo "  fabric namespace $(tb_ns_fabric); files in $TB_TMP; BPF pins in $TB_BPFFS"
	while read -r h pid dir sock ns; do
		echo "  host $h: namespace $ns, efid pid $pid, socket $sock"
		while read -r _ l ins addr; do
			echo "    instance $l: namespace $ins, efi0 $addr/24"
		done < <(_tb_get inst "$h")
	done < <(_tb_get efid)
	echo "  ports (tx: host to fabric, rx: fabric to host):"
	while read -r port _ _ _ _ _ _; do
		_tb_port "$port"
		st=$(ip -n "$NS_F" -j link show dev "$PDEV_F" | jq -r '.[0].operstate')
		printf '    %-6s link %-5s' "$port" "$st"
		for d in tx rx; do
			_tb_end "$d"
			thr=$(bpftool -j map dump pinned "$TB_BPFFS/$port-$d/thresholds" |
				jq -r 'sort_by(.formatted.key) | map(.formatted.value) | join(" ")')
			p=$(awk -v t="${thr% *}" -v u="${thr#* }" 'BEGIN {printf "loss %g dup %g", t / 4294967296, u / 4294967296}')
			read -r pk pd sg sd du <<<"$(tb_stats "$port" "$d")"
			l=$(tc -n "$END_NS" qdisc show dev "$END_DEV" root | awk '/tbf/ {print "tbf " $8 ", queue up to " $12}')
			printf '  %s: %s (saw %s pkts/%s segs, dropped %s = %s, duplicated %s)%s' "$d" "$p" "$pk" "$sg" \
				"$sd" "$(awk -v d="$sd" -v s="$sg" 'BEGIN {printf "%.3f%%", s ? 100 * d / s : 0}')" \
				"$du" "${l:+, $l}"
			: "$pd"
		done
		echo
	done < <(_tb_get port)
}

# --- teardown ---------------------------------------------------------------

# _tb_signal_efid PID DIR: SIGTERM to an efid this testbed started; true
# if it was still that efid (pids get reused: check its command line).
_tb_signal_efid() {
	tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | grep -qF -- "--config $2/efid.conf" || return 1
	kill -TERM "$1" 2>/dev/null
}

# _tb_reap_efid PID: waits for a signalled efid to exit: reaped with its
# status checked when this process started it (test use), else polled for
# 10 s, then SIGKILL.
_tb_reap_efid() {
	local pid=$1 id i
	for id in "${!EFID_PID[@]}"; do
		if [ "${EFID_PID[$id]}" = "$pid" ]; then
			_stop_pid "$pid" TERM
			EFID_PID["$id"]=""
			[ "$STOP_RC" = 0 ] || { echo "FAIL: efid $pid exited $STOP_RC on SIGTERM" >&2; return 1; }
			return 0
		fi
	done
	for i in $(seq 1 200); do
		[ -d "/proc/$pid" ] || return 0
		sleep 0.05
	done
	kill -KILL "$pid" 2>/dev/null
	return 0
}

# tb_teardown: removes what the state file lists (nothing else), then the
# file.  Returns 1 if an efid did not exit cleanly.
tb_teardown() {
	local rc=0 l pid dir ns i pids=()
	[ -n "$TB_STATE" ] && [ -f "$TB_STATE" ] || return 0
	# all at once: each takes a while to exit
	while read -r _ pid dir _; do
		_tb_signal_efid "$pid" "$dir" && pids+=("$pid")
	done < <(_tb_get efid)
	for pid in "${pids[@]}"; do
		_tb_reap_efid "$pid" || rc=1
	done
	# instances, then hosts, then the fabric: the reverse of creation
	while read -r ns; do
		[ -e "/run/netns/$ns" ] || continue
		ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null
		ip netns del "$ns" 2>/dev/null
	done < <(_tb_get netns | tac)
	while read -r l; do
		mountpoint -q "$l" && umount "$l"
		[ -d "$l" ] && rmdir "$l" 2>/dev/null
	done < <(_tb_get mount)
	while read -r l; do
		case $l in /tmp/efi-tb-* | "${TMPD:-/nonexistent}"/tb) rm -rf "$l" ;; esac
	done < <(_tb_get dir)
	rm -f "$TB_STATE"
	rmdir "$TB_STATE_DIR" 2>/dev/null # shared by testbeds: only once empty
	# namespaces go away asynchronously: wait until they are gone
	for i in $(seq 1 100); do
		ip netns list | awk '{print $1}' | grep -q "^$TB_PFX" || break
		sleep 0.05
	done
	return "$rc"
}

# --- library use from tests -------------------------------------------------

# Commands run first at exit in library use (e.g. a test's own cleanup).
TB_ON_EXIT=()

_tb_test_exit() {
	local rc=$? c
	trap - EXIT
	for c in "${TB_ON_EXIT[@]}"; do
		eval "$c"
	done
	tb_teardown || rc=1
	(exit "$rc")
	lib_cleanup
}

# tb_test_init TAG: lib_init TAG, the testbed's own checks (skip, 77, when it
# cannot be built) and a cleanup that removes the testbed before lib_cleanup.
tb_test_init() {
	local why
	lib_init "$1"
	why=$(tb_missing)
	[ -z "$why" ] || skip "$why"
	TB_NAME=$TEST_TAG
	TB_PFX=$PFX
	TB_TMP=$TMPD/tb
	TB_STATE=$TMPD/testbed.state
	mkdir -p "$TB_TMP"
	tb_find_bpf "$TB_TMP" || skip "no BPF dropper: tests/testbed/bpf/loss.o is not built and clang cannot target BPF ($(head -c 300 "$TB_TMP/clang.err" 2>/dev/null))"
	trap _tb_test_exit EXIT
}

# --- command line ---------------------------------------------------------

# _tb_usage [EXIT]: the synopsis (on stderr unless asked for), then exit
_tb_usage() {
	if [ "${1:-2}" = 0 ]; then
		sed -n '/^# As a command/,/^# tx is/p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
	else
		sed -n '/^# As a command/,/^# tx is/p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
	fi
	exit "${1:-2}"
}

_tb_cli_exit() {
	local rc=$?
	trap - EXIT INT TERM USR1
	if [ "$TB_KEEP" != 1 ] && [ -n "$TB_STATE" ] && [ -f "$TB_STATE" ]; then
		echo "testbed.sh: up failed (exit $rc): removing what it built" >&2
		tb_teardown
		for id in "${EFID_IDS[@]}"; do
			[ "$rc" = 0 ] || tail -n 20 "${EFID_DIR[$id]}/efid.log" 2>/dev/null | sed "s/^/    efid $id: /" >&2
		done
	fi
	exit "$rc"
}

tb_main() {
	local cmd hosts=2 insts=1 paths=2 offl=on
	TB_NAME=${TB_NAME_DEFAULT:-tb}
	while [ $# -gt 0 ]; do
		case $1 in
		--name)
			[ $# -ge 2 ] || _tb_usage
			TB_NAME=$2
			shift 2 ;;
		-h | --help) _tb_usage 0 ;;
		*) break ;;
		esac
	done
	cmd=${1:-}
	[ -n "$cmd" ] || _tb_usage
	shift
	if [ "$cmd" = up ] || [ "$cmd" = down ] || [ "$cmd" = show ]; then
		while [ $# -gt 0 ]; do
			[ $# -ge 2 ] || { echo "testbed.sh $cmd: '$1' needs a value" >&2; exit 2; }
			case $1 in
			--name) TB_NAME=${2:-} ;;
			--hosts) hosts=${2:-} ;;
			--instances) insts=${2:-} ;;
			--paths) paths=${2:-} ;;
			--offloads) offl=${2:-} ;;
			--uplinks) TB_UPLINKS=${2:-} ;;
			--build)
				top_builddir=$(cd "${2:-}" && pwd) || exit 2
				EFID=$top_builddir/efid/efid EFICTL=$top_builddir/efictl/efictl ;;
			*) echo "testbed.sh $cmd: unknown option '$1'" >&2; exit 2 ;;
			esac
			shift 2
		done
	fi
	[[ $TB_NAME =~ ^[a-z][a-z0-9]{0,5}$ ]] ||
		{ echo "testbed.sh: name '$TB_NAME': 1-6 characters, a-z then a-z or 0-9" >&2; exit 2; }
	[ "$(id -u)" = 0 ] || { echo "testbed.sh: needs root" >&2; exit 1; }
	TB_STATE=$TB_STATE_DIR/$TB_NAME.state
	exec 3>&2
	# shellcheck disable=SC2034 # lib.sh's log and fail use it
	TEST_NAME=testbed

	case $cmd in
	up)
		local why
		why=$(tb_missing)
		[ -z "$why" ] || { echo "testbed.sh: $why" >&2; exit 1; }
		[ -e "$TB_STATE" ] && { echo "testbed.sh: testbed '$TB_NAME' exists ($TB_STATE): 'down' it first" >&2; exit 4; }
		mkdir -p "$TB_STATE_DIR" && chmod 700 "$TB_STATE_DIR" || exit 1
		TB_PFX=$TB_NAME$(printf %x $$)
		TMPD=$(mktemp -d "/tmp/efi-tb-$TB_NAME-XXXXXX") || exit 1
		TB_TMP=$TMPD
		(umask 077 && : >"$TB_STATE")
		trap _tb_cli_exit EXIT
		trap 'echo "testbed.sh: interrupted" >&2; exit 130' INT
		trap 'exit 143' TERM
		trap 'exit 1' USR1
		tb_up "$hosts" "$insts" "$paths" "$offl"
		TB_KEEP=1
		tb_show
		;;
	down) _tb_need_state; _tb_load; tb_teardown; echo "testbed $TB_NAME removed" ;;
	show) _tb_need_state; _tb_load; tb_show ;;
	loss) _tb_need_state; _tb_load; [ $# -ge 2 ] || _tb_usage; tb_loss "$@" ;;
	dup) _tb_need_state; _tb_load; [ $# -ge 2 ] || _tb_usage; tb_dup "$@" ;;
	hole) _tb_need_state; _tb_load; [ $# -ge 2 ] || _tb_usage; tb_hole "$@" ;;
	rate) _tb_need_state; _tb_load; [ $# -ge 2 ] || _tb_usage; tb_rate "$@" ;;
	link) _tb_need_state; _tb_load; [ $# = 2 ] || _tb_usage; tb_link "$@" ;;
	flap) _tb_need_state; _tb_load; [ $# = 3 ] || _tb_usage; tb_flap "$@" ;;
	exec) _tb_need_state; _tb_load; [ $# -ge 3 ] || _tb_usage; tb_exec "$@" ;;
	addr) _tb_need_state; _tb_load; [ $# = 2 ] || _tb_usage; _tb_get inst "$1" | awk -v i="$2" '$2 == i {print $4; f = 1} END {exit !f}' ;;
	*) echo "testbed.sh: unknown command '$cmd'" >&2; _tb_usage ;;
	esac
}

# Run as a command, not when sourced.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	tb_main "$@"
fi
