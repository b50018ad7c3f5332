#!/bin/bash
# SPDX-License-Identifier: MIT
# The connection manager at scale, by hand (root; measures, does not judge;
# issue 18).  Between two hosts (two efids):
#   - P cm-test clients in parallel, each M connects in a row (connect,
#     ESTABLISHED, disconnect, a new QP each): connects per second through
#     the efids, and each client's set-up median;
#   - one cm-many process opening N connections, 32 in flight, and keeping
#     them: set-up median and p99, rate, and the threads of the process.
# From a build directory (EFID, CM_TEST and CM_MANY may name another
# build's, to compare builds in one sitting):
#   sudo env top_builddir=$PWD bash /path/to/tests/cm/bench-cm-scale.sh [P] [M] [N]
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/cm/many.sh
. "$(dirname "$0")/many.sh"
P=${1:-4}
M=${2:-250}
N=${3:-1000}
cm_init cs
# efid at the level it runs with in production: the tests' debug log costs
# each efid a formatted line per CM message, 0.05-0.1 ms of every set-up
# median with 4 clients on 2 cores (CM_BENCH_LOGLEVEL=debug for the old
# figures)
DP_CONF_ONE=("Daemon.LogLevel=${CM_BENCH_LOGLEVEL:-info}")
DP_CONF_TWO=("Daemon.LogLevel=${CM_BENCH_LOGLEVEL:-info}")
dp_two_hosts

log "$P clients in parallel, $M connects each"
cm_server bench 7490 --count $((P * M))
start=$(date +%s%N)
pids=()
for i in $(seq 1 "$P"); do
	in_b "$CM_TEST" client "$IP_A" 7490 --count "$M" >"$TMPD/par$i.out" 2>&1 &
	pids+=($!)
	TRACK_BGPIDS+=("$!")
done
for p in "${pids[@]}"; do
	wait "$p" || fail "a client failed: $(cat "$TMPD"/par*.out)"
done
end=$(date +%s%N)
cm_wait bench >/dev/null
medians=$(sed -n 's/.*set-up median \([0-9.]*\) ms.*/\1/p' "$TMPD"/par*.out | tr '\n' ' ')
log "parallel: $((P * M)) connects in $(((end - start) / 1000000)) ms: $((P * M * 1000000000 / (end - start))) per second; set-up medians per client (ms): $medians"

log "one process, $N connections kept, 32 in flight"
many_bg srv in_a server 7481 "$N"
many_wait srv 10000 '^listening'
many_bg cli in_b client "$IP_A" 7481 "$N" --parallel 32
many_wait cli 120000 '^ready'
log "kept: $(grep '^ready' "$TMPD/cli.out")"
log "server: $(grep '^ready' "$TMPD/srv.out")"
many_cmd cli quit
wait "${MANY_PID[cli]}"
many_cmd srv quit
wait "${MANY_PID[srv]}"
log "done"
