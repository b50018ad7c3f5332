#!/bin/bash
# The path table (docs/path-table.md): a host's uplink loses carrier in the
# middle of a bulk transfer and of a ping-pong; efid, whose [Transport]
# Uplinks pin lane L to up<L mod 2>, publishes it down at once and libefi
# suspects the lanes on it without waiting for their silence.  Zero QP
# errors either way; printed, for each: the longest completion gap that
# began within a second of the failure, with the table and without it
# (EFI_PATHTABLE=0, the same testbed, the same run), next to the longest
# gap before the failure (the run's noise).  `efictl status --json` shows
# the uplink down, then up again.
# The port taken down is LOSSY_DOWN_PORT, by default h2p0: host 2 runs the
# clients (the requesters, whose data leaves by that uplink), so the table
# of the host that sends is the one that can act.
# With fallthrough (the testbed's ignore_routes_with_linkdown=1) lanes of
# a dead uplink still carry packets over the others, so only what was in
# flight is at stake; LOSSY_FALLTHROUGH=0 turns it off in that host, so a
# dead uplink's lanes black-hole until libefi stops using them (what the
# table is for, measured against suspicion).  About 45 s, root.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/lossy/lib.sh
. "$(dirname "$0")/lib.sh"
lossy_init lt
TB_UPLINKS=on
DOWN_PORT=${LOSSY_DOWN_PORT:-h2p0}
DOWN_HOST=${DOWN_PORT#h}
DOWN_HOST=${DOWN_HOST%%p*}
DOWN_UPLINK=up${DOWN_PORT##*p}

tb_up 2 1 2 off
if [ "${LOSSY_FALLTHROUGH:-1}" = 0 ]; then
	ip netns exec "$(tb_ns "$DOWN_HOST")" sysctl -qw net.ipv4.conf.all.ignore_routes_with_linkdown=0 \
		net.ipv4.conf.default.ignore_routes_with_linkdown=0 >/dev/null || fail "sysctl"
	for ((p = 0; p < TB_PATHS; p++)); do
		ip netns exec "$(tb_ns "$DOWN_HOST")" sysctl -qw "net.ipv4.conf.up$p.ignore_routes_with_linkdown=0" >/dev/null
	done
	log "host $DOWN_HOST: no fallthrough (ignore_routes_with_linkdown=0)"
fi

uplink_state() {
	tb_ctl "$DOWN_HOST" --json status | jq -r --arg n "$DOWN_UPLINK" '.uplinks[]? | select(.name == $n) | .link'
}
uplink_is() { [ "$(uplink_state)" = "$1" ]; }
assert_eq up "$(uplink_state)" "$DOWN_UPLINK of host $DOWN_HOST before"
log "host $DOWN_HOST's uplinks: $(tb_ctl "$DOWN_HOST" --json status | jq -c '[.uplinks[] | {name, link, lanes}]')"

# lane_paths STATE: the states of the client context's paths whose lanes
# leave by the downed uplink, as its counters page shows them (one word
# per QP and path, e.g. "suspect suspect")
lane_paths() {
	tb_ctl "$DOWN_HOST" --json status | jq -r --arg n "$DOWN_UPLINK" '
		(.uplinks[] | select(.name == $n) | .lanes) as $l |
		[.instances[].interfaces[].contexts[]?.peers[]?.paths[]? | select(.index as $i | $l | index($i)) | .state] | join(" ")'
}

# wait_for_quiet MS CMD...: like wait_for, but returns 1 instead of failing
wait_for_quiet() {
	local ms=$1 t=0
	shift
	WAITED_MS=0
	while ! "$@"; do
		[ "$t" -ge "$ms" ] && return 1
		sleep 0.02
		t=$((t + 20))
	done
	WAITED_MS=$t
}

lane_paths_suspect() { [[ "$(lane_paths)" =~ ^suspect( suspect)*$ ]]; }

# fail_during NAME VARIANT: after 2 s of traffic the port goes down (its
# time in the client's clock in DOWN_AT); up again after the pair finished
fail_during() {
	lossy_wait_started "$1"
	sleep 2
	DOWN_AT=$(lossy_since_start "$1")
	tb_link "$DOWN_PORT" down || fail "tb_link $DOWN_PORT down"
	wait_for 2000 "efid of host $DOWN_HOST to see $DOWN_UPLINK down" uplink_is down
	log "$1: $DOWN_PORT down at $DOWN_AT s of the client's time; efid showed it after ${WAITED_MS} ms"
	if [ "$2" = table ] && [ "$DOWN_HOST" = 2 ]; then
		# libefi read it: the lanes' paths are suspected and stay so
		# (the counters page is published every 100 ms; efictl
		# may be slow on a loaded machine)
		if ! wait_for_quiet 5000 lane_paths_suspect; then
			pid_running "${LOSSY_CPID[$1]}" || { log "$1: the client finished before its paths could be seen"; return 0; }
			tb_ctl "$DOWN_HOST" --json status >&2
			fail "$1: the client's paths on $DOWN_UPLINK are not suspected: '$(lane_paths)'"
		fi
		log "$1: paths on $DOWN_UPLINK: $(lane_paths) (after ${WAITED_MS} ms, as the counters page shows)"
	else
		log "$1: paths on $DOWN_UPLINK: $(lane_paths)"
	fi
}

# table_maps PID: the inodes of the path tables PID has mapped (efid's
# memfd), one line each
table_maps() { awk '/memfd:efi-pathtable/ {print $5}' "/proc/$1/maps" 2>/dev/null | sort -u; }

# gaps NAME: "at before" (ms): the longest gap beginning within 1 s of the
# failure, the longest before it (from 1 s)
gaps() {
	local from to
	from=$(awk -v t="$DOWN_AT" 'BEGIN {print t - 0.05}')
	to=$(awk -v t="$DOWN_AT" 'BEGIN {print t + 1}')
	echo "$(lossy_gap_within "$1" "$from" "$to") $(lossy_gap_within "$1" 1 "$from")"
}

declare -A AT=() BEFORE=()
run() { # run VARIANT MODE PORT ARGS...
	local v=$1 mode=$2 name="$2-$1" g
	shift 2
	if [ "$v" = table ]; then LOSSY_ENV=""; else LOSSY_ENV="EFI_PATHTABLE=0"; fi
	lossy_pair "$name" "$mode" "$@"
	fail_during "$name" "$v"
	lossy_finish "$name"
	tb_link "$DOWN_PORT" up || fail "tb_link $DOWN_PORT up"
	wait_for 2000 "$DOWN_UPLINK up again" uplink_is up
	g=$(gaps "$name")
	AT[$name]=${g% *}
	BEFORE[$name]=${g#* }
	log "$name: no QP error; longest gap at the failure ${AT[$name]} ms (before it ${BEFORE[$name]} ms)"
	sleep 0.5
}

for v in table notable; do
	run "$v" bulk 18741 --qps 1 --size 65536 --window 16 --seconds 7 --warmup 1 --timeout 20
	run "$v" pingpong 18742 --size 8 --seconds 7 --timeout 20
done
for m in bulk pingpong; do
	log "RESULT $m, $DOWN_PORT down: longest gap at the failure: with the table ${AT[$m-table]} ms, without ${AT[$m-notable]} ms (before the failure: ${BEFORE[$m-table]} / ${BEFORE[$m-notable]} ms)"
done

# efid restarts under a running context: the lease resumes and the
# context swaps the old efid's table for the new one's (one mapping, a new
# memfd), then a failure is still survived.
if [ "$DOWN_HOST" = 2 ]; then
	LOSSY_ENV=""
	lossy_pair resume pingpong 18743 --size 8 --seconds 8 --timeout 20
	lossy_wait_started resume
	cpid=$(pgrep -f -- "^[^ ]*lossy-test client pingpong .* -p 18743" | head -n 1)
	[ -n "$cpid" ] || fail "no lossy-test client"
	old=$(table_maps "$cpid")
	[ "$(printf '%s\n' "$old" | grep -c .)" = 1 ] || fail "the client maps $(printf '%s' "$old" | grep -c .) path tables, not 1"
	efid_stop tb2
	EFI_IT_WRAP="nsenter --net=/run/netns/$(tb_ns 2)" efid_launch tb2
	new_table() { local t; t=$(table_maps "$cpid"); [ -n "$t" ] && [ "$t" != "$old" ] && [ "$(printf '%s\n' "$t" | grep -c .)" = 1 ]; }
	wait_for 5000 "the client to map the new efid's table (and only it)" new_table
	log "resume: the client swapped its path table (inode $old -> $(table_maps "$cpid")) ${WAITED_MS} ms after efid was back"
	downs_before=$(grep -c "uplink $DOWN_UPLINK is down" "${EFID_DIR[tb2]}/efid.log")
	DOWN_AT=$(lossy_since_start resume)
	tb_link "$DOWN_PORT" down || fail "tb_link $DOWN_PORT down"
	# (its log, not efictl: after a restart inside the testbed efid
	# reports the instance's efi0 as a stray, which efictl refuses)
	new_down() { [ "$(grep -c "uplink $DOWN_UPLINK is down" "${EFID_DIR[tb2]}/efid.log")" -gt "$downs_before" ]; }
	wait_for 2000 "the new efid to see $DOWN_UPLINK down" new_down
	lossy_finish resume
	tb_link "$DOWN_PORT" up || fail "tb_link $DOWN_PORT up"
	log "resume: no QP error; longest gap at the failure $(gaps resume | cut -d' ' -f1) ms"
	# the testbed's record names the first efid: this one is ours to stop
	efid_stop tb2
fi
