# shellcheck shell=bash
# Helpers of the lossy-network tests (tests/lossy/t-lossy-*.sh), on top of
# the testbed (tests/testbed/testbed.sh, docs/testbed.md):
#
#     . "$(dirname "$0")/lib.sh"
#     lossy_init TAG            # tb_test_init + lossy-test + the profile
#     tb_up 2 1 2 off           # host 1 runs the servers, host 2 the clients
#     lossy_pair NAME MODE PORT [lossy-test options]   # server + client
#     lossy_wait_started NAME   # its traffic runs
#     lossy_finish NAME         # both must exit 0; their output on the log
#     lossy_result NAME KEY     # a value of the client's RESULT line
#
# Servers run in instance a of host 1, clients (the requesters) in instance
# a of host 2, so data goes host 2 -> fabric -> host 1.
#
# EFI_TEST_LOAD=1: the test runs with one CPU-burning process pinned to each
# core beside it for its whole length, as on a shared cloud host (a test
# that only passes on an idle machine is a bug).  t-lossy-*-load.sh are the
# suite's tests run that way in make check.
#
# LOSSY_PROFILE: "sanitize" when lossy-test is built with AddressSanitizer,
# or when EFI_TEST_PROFILE says so; "normal" otherwise.  Tests size their
# work by it (scripts/test.sh runs the suite in both builds).
# shellcheck source=tests/testbed/testbed.sh
. "$(dirname "${BASH_SOURCE[0]}")/../testbed/testbed.sh"

: "${LOSSY_TEST:=$top_builddir/tests/lossy/lossy-test}"
# Seconds one lossy-test process may run before it counts as a hang.
: "${LOSSY_TIMEOUT:=300}"

declare -A LOSSY_SPID=() LOSSY_CPID=()

lossy_init() {
	tb_test_init "$1"
	[ -x "$LOSSY_TEST" ] || fail "lossy-test not built at $LOSSY_TEST"
	LOSSY_PROFILE=${EFI_TEST_PROFILE:-$("$LOSSY_TEST" build)}
	case $LOSSY_PROFILE in
	normal | sanitize) ;;
	*) fail "EFI_TEST_PROFILE '$LOSSY_PROFILE': normal or sanitize" ;;
	esac
	log "profile $LOSSY_PROFILE"
	[ "${EFI_TEST_LOAD:-0}" = 1 ] && lossy_load
	return 0
}

# lossy_load: one busy loop pinned to each core until the test ends (the
# cleanup kills TRACK_BGPIDS).  Same priority as the test's processes: the
# point is that they get descheduled.
lossy_load() {
	local n i
	n=$(nproc)
	for ((i = 0; i < n; i++)); do
		taskset -c "$i" bash -c 'while :; do :; done' &
		TRACK_BGPIDS+=("$!")
	done
	log "load: $n CPU-burning processes, one pinned to each core (EFI_TEST_LOAD=1)"
}

# lossy_pair NAME MODE PORT [options]: lossy-test server MODE in host 1,
# then the client in host 2, both in the background (outputs in
# $TMPD/NAME.server, $TMPD/NAME.client).  LOSSY_ENV (words NAME=VALUE) goes
# into both environments; LOSSY_EXTRA (words) after both command lines, to
# explore (e.g. LOSSY_EXTRA="--window 64").
lossy_pair() {
	local name=$1 mode=$2 port=$3
	shift 3
	# shellcheck disable=SC2086 # LOSSY_ENV is a list of words
	tb_exec 1 a ${LOSSY_ENV:-} timeout -k 5 "$LOSSY_TIMEOUT" "$LOSSY_TEST" server "$mode" \
		-p "$port" "$@" ${LOSSY_EXTRA:-} >"$TMPD/$name.server" 2>&1 &
	LOSSY_SPID[$name]=$!
	TRACK_BGPIDS+=("$!")
	# shellcheck disable=SC2086
	tb_exec 2 a ${LOSSY_ENV:-} timeout -k 5 "$LOSSY_TIMEOUT" "$LOSSY_TEST" client "$mode" \
		"$(tb_addr 1 a)" -p "$port" "$@" ${LOSSY_EXTRA:-} >"$TMPD/$name.client" 2>&1 &
	LOSSY_CPID[$name]=$!
	TRACK_BGPIDS+=("$!")
}

_lossy_started() {
	grep -q '^STARTED' "$TMPD/$1.client" && return 0
	pid_running "${LOSSY_CPID[$1]}" || pid_running "${LOSSY_SPID[$1]}" || return 0
	return 1
}

# lossy_wait_started NAME [MS]: until the client says its traffic runs; a
# pair that died before that fails here, with its output.
lossy_wait_started() {
	wait_for "${2:-20000}" "lossy-test $1 to start" _lossy_started "$1"
	grep -q '^STARTED' "$TMPD/$1.client" || lossy_finish "$1"
}

_lossy_show() {
	[ -s "$1" ] || return 0
	sed "s/^/    $2: /" "$1"
}

# lossy_finish NAME: waits for the client, then the server; shows both
# outputs; fails unless both exited 0.
lossy_finish() {
	local name=$1 crc=0 src=0 _i
	wait "${LOSSY_CPID[$name]}" 2>/dev/null || crc=$?
	if [ "$crc" != 0 ]; then
		# a failed client leaves the server waiting: let it notice
		for _i in $(seq 1 60); do
			pid_running "${LOSSY_SPID[$name]}" || break
			sleep 0.05
		done
		pid_running "${LOSSY_SPID[$name]}" && kill "${LOSSY_SPID[$name]}" 2>/dev/null
	fi
	wait "${LOSSY_SPID[$name]}" 2>/dev/null || src=$?
	_lossy_show "$TMPD/$name.server" "$name server"
	_lossy_show "$TMPD/$name.client" "$name client"
	if [ "$crc" != 0 ] || [ "$src" != 0 ]; then
		lossy_dump_net
	fi
	[ "$crc" != 124 ] || fail "$name: the client was still running after LOSSY_TIMEOUT = $LOSSY_TIMEOUT s: killed (a hang, or far too slow; its progress is above)"
	[ "$crc" = 0 ] || fail "$name: the client exited $crc (output above)"
	[ "$src" = 0 ] || fail "$name: the server exited $src (output above)"
}

# lossy_dump_net: where packets may have died, after a failure: the UDP
# counters of every host and instance namespace (socket buffers full, no
# port), every fabric port's counters and the dropper's, and the fabric's
# routes to the hosts
lossy_dump_net() {
	local ns p h
	echo "----- network at the failure -----"
	for ns in $(ip netns list | awk -v p="$TB_PFX" 'index($1, p) == 1 {print $1}'); do
		echo "$ns: $(ip netns exec "$ns" nstat -az 2>/dev/null |
			awk '$1 ~ /^Udp(InDatagrams|OutDatagrams|RcvbufErrors|SndbufErrors|NoPorts|InErrors)$/ {printf "%s=%s ", $1, $2}')"
	done
	for ((h = 1; h <= 2; h++)); do
		for ((p = 0; p < TB_PATHS; p++)); do
			echo "port h${h}p$p: dropper rx $(tb_stats "h${h}p$p" rx 2>/dev/null) tx $(tb_stats "h${h}p$p" tx 2>/dev/null);" \
				"$(ip -n "$(tb_ns_fabric)" -s -o link show dev "h${h}p$p" 2>/dev/null | tr -s ' ' | cut -c1-400)"
		done
	done
	ip -n "$(tb_ns_fabric)" route show 2>/dev/null | sed 's/^/fabric route: /'
	echo "-----"
}

# lossy_since_start NAME: seconds from the client's STARTED to now (its
# clock, to place an event among its "..._at_s" figures)
lossy_since_start() {
	local t0
	t0=$(sed -n 's/^STARTED epoch=//p' "$TMPD/$1.client" | head -n 1)
	awk -v t0="${t0:-0}" -v now="$EPOCHREALTIME" 'BEGIN {printf "%.2f\n", now - t0}'
}

# lossy_ports_reset HOST: zero the dropper's counters of HOST's ports
lossy_ports_reset() {
	local h=$1 p
	for ((p = 0; p < TB_PATHS; p++)); do
		tb_stats_reset "h${h}p$p" rx >/dev/null || fail "tb_stats_reset h${h}p$p rx failed"
		tb_stats_reset "h${h}p$p" tx >/dev/null || fail "tb_stats_reset h${h}p$p tx failed"
	done
}

# lossy_result NAME KEY: KEY's value on the client's RESULT line
lossy_result() {
	sed -n 's/^RESULT //p' "$TMPD/$1.client" | tr ' ' '\n' | sed -n "s/^$2=//p" | head -n 1
}

# lossy_busiest_port HOST: the port of HOST that receives the most packets
# (rx: fabric to host) in half a second: the path a flow uses now.
lossy_busiest_port() {
	local h=$1 p best="" most=-1 n
	lossy_ports_reset "$h"
	sleep 0.5
	for ((p = 0; p < TB_PATHS; p++)); do
		n=$(tb_stats "h${h}p$p" rx | awk '{print $1}')
		if [ "${n:-0}" -gt "$most" ]; then
			most=${n:-0}
			best=h${h}p$p
		fi
	done
	echo "$best"
}

# lossy_gap_within NAME FROM TO: the longest pause (ms) of the client's
# GAPS line (pauses over 2 ms) that began between FROM and TO seconds of
# its time; 0 when none did.  The pause a failure causes begins at the
# last completion before it: FROM a little before the failure.
lossy_gap_within() {
	sed -n 's/^GAPS //p' "$TMPD/$1.client" | tr ' ' '\n' |
		awk -F@ -v from="$2" -v to="$3" '$2 != "" && $2 + 0 >= from && $2 + 0 <= to && $1 + 0 > max {max = $1 + 0}
			END {printf "%.2f\n", max + 0}'
}

# lossy_holds VALUE OP LIMIT: true when the two numbers compare so (awk)
lossy_holds() {
	[ -n "$1" ] && awk -v v="$1" -v l="$3" "BEGIN {exit !(v $2 l)}"
}

# lossy_log_ports HOST: packets each port of HOST received (rx) and sent
# (tx) since the counters were last reset: which paths carried the traffic.
lossy_log_ports() {
	local h=$1 p rx tx
	for ((p = 0; p < TB_PATHS; p++)); do
		rx=$(tb_stats "h${h}p$p" rx | awk '{print $1}')
		tx=$(tb_stats "h${h}p$p" tx | awk '{print $1}')
		log "  port h${h}p$p: $rx packets to host $h, $tx from it"
	done
}
