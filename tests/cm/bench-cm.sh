#!/bin/bash
# SPDX-License-Identifier: MIT
# The connection manager's acceptance figures, by hand (root; not part of
# make check: it measures, it does not judge):
#   - connection set-up time: median and p99 of N connects (efi_connect until
#     ESTABLISHED, QP in RTS), each with a new QP, between two hosts (two
#     efids) and between two instances of one host (one efid);
#   - connects per second through the efids, the same runs;
#   - how long a SIGKILLed process's peer takes to receive DISCONNECTED
#     (K kills).
# From a build directory:
#   sudo env top_builddir=$PWD bash /path/to/tests/cm/bench-cm.sh [N] [K]
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/cm/lib.sh
. "$(dirname "$0")/lib.sh"
N=${1:-1000}
K=${2:-10}
cm_init cb

bench_pair() {
	local label=$1
	cm_server bench 7490 --count "$N"
	cm_client "$IP_A" 7490 --expect established --count "$N"
	cm_wait bench >/dev/null
	log "$label: $(grep '^connects' "$TMPD/client.out")"
}

kill_delays() {
	local i killed seen delays=()
	for i in $(seq 1 "$K"); do
		cm_server "kill$i" 7491 --expect-disconnect
		cm_bg "victim$i" in_b client "$IP_A" 7491 --hang
		wait_for 10000 "client connected" grep -q '^established' "$TMPD/victim$i.out"
		wait_for 10000 "server saw it" grep -q '^established' "$TMPD/kill$i.out"
		killed=$(date +%s%3N)
		kill -KILL "${CM_PIDS[victim$i]}"
		wait "${CM_PIDS[victim$i]}" 2>/dev/null
		cm_wait "kill$i" >/dev/null
		seen=$(sed -n 's/^disconnected at \([0-9]*\).*/\1/p' "$TMPD/kill$i.out")
		delays+=($((seen - killed)))
	done
	log "$1: peer told of a SIGKILL after (ms): ${delays[*]}"
}

dp_two_hosts
bench_pair "two hosts, $N connects"
kill_delays "two hosts"
log "done"
