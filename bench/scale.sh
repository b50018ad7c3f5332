#!/bin/bash
# SPDX-License-Identifier: MIT
# Scale of one process and one efid (issue 18), by hand (root; it measures,
# it does not judge).  Two hosts (two efids, tests/data/lib.sh's testbed of
# namespaces), instance A on one, B on two.  For N = 1k, 4k, 16k:
#   - one pair: tests/scale/scale-test creates N QPs in a process of A and
#     N in a process of B and connects them pairwise (QPNs over TCP, as
#     perftest does; one message over each, checked).  Time per connect on
#     B's side: efi_create_qp + INIT + RTR + RTS of one QP, median and p99
#     (the QP's lease reservation and, past each 4,096, a further QPN block
#     from efid are inside it);
#   - P pairs at once (default 4, N/P QPs each, the clients told to start
#     connecting at the same moment): connects per second through efid two,
#     all pairs' connects over the span from the first one's start to the
#     last one's end;
#   - while connected: RSS of the processes and of each efid, efid's
#     descriptors and its table (contexts, QPs reserved); then the
#     processes are SIGKILLed and the same figures are shown again: efid's
#     table back to 0, its descriptors back to where they started.
#   - through the connection manager (efid ⇄ efid), CM_PAIRS cm-test
#     clients at once, CM_N connects each (connect, ESTABLISHED, disconnect,
#     one after another): connects/s summed over the clients, their set-up
#     medians and p99s (tests/cm/bench-cm.sh has the single-client figures).
# Baselines in the same run: efid's RSS and fds before anything ran.
#
# From a build directory:
#   sudo env top_builddir=$PWD bash /path/to/bench/scale.sh [N...]
# SCALE_PAIRS=P changes P; SCALE_LOGLEVEL the efids' log level (default info).
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
: "${top_builddir:=.}"
top_builddir=$(readlink -f "$top_builddir")
export top_builddir
: "${EFID:=$top_builddir/efid/efid}" "${EFICTL:=$top_builddir/efictl/efictl}"
export EFID EFICTL
# shellcheck source=tests/data/lib.sh
. "$(dirname "$0")/../tests/data/lib.sh"
SCALE_TEST=$top_builddir/tests/scale/scale-test
PAIRS=${SCALE_PAIRS:-4}
# a message over every SAMPLE-th QP (1: every QP; the transport walks every
# QP per run, so a message over each of 16,000 takes a minute)
SAMPLE=${SCALE_SAMPLE:-16}
# the connection manager: CM_PAIRS cm-test clients at once, CM_N connects each
CM_PAIRS=${SCALE_CM_PAIRS:-4}
CM_N=${SCALE_CM_N:-250}
CM_TEST=$top_builddir/tests/cm/cm-test
SIZES=("$@")
[ ${#SIZES[@]} -gt 0 ] || SIZES=(1000 4000 16000)
dp_init sb
[ -x "$SCALE_TEST" ] || fail "scale-test not built at $SCALE_TEST (make check builds it, or make tests/scale/scale-test)"
# efid at the level it runs with in production, as tests/cm/bench-cm-scale.sh
# does: the tests' debug log costs each efid a formatted line per CM message
# (SCALE_LOGLEVEL=debug for the figures before)
DP_CONF_ONE=("Daemon.LogLevel=${SCALE_LOGLEVEL:-info}")
DP_CONF_TWO=("Daemon.LogLevel=${SCALE_LOGLEVEL:-info}")
dp_two_hosts

fds_of() { find "/proc/${EFID_PID[$1]}/fd" -mindepth 1 -maxdepth 1 | wc -l; }
rss_of() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
table() { efid_use "$1"; iface_json "$2" efi0 | jq -r '"\(.leases)/\(.qps)"'; }
table_is() { [ "$(table "$1" "$2")" = "$3" ]; }
fds_are() { [ "$(fds_of "$1")" = "$2" ]; }
val() { awk -v k="$1" -v i="${3:-2}" '$1 == k {print $i; exit}' "$2"; }

FD1=$(fds_of one) FD2=$(fds_of two)
RSS1=$(rss_of "${EFID_PID[one]}") RSS2=$(rss_of "${EFID_PID[two]}")
log "baseline: efid one ${RSS1} KiB, ${FD1} fds; efid two ${RSS2} KiB, ${FD2} fds; tables $(table one "$A") $(table two "$B")"

PORT=7920
# start_a/start_b CMD... &: the process itself, so that $! is its pid
start_a() { exec ip netns exec "$A" env EFI_SOCKET="$SOCK_A" "$@"; }
start_b() { exec ip netns exec "$B" env EFI_SOCKET="$SOCK_B" "$@"; }
# run_pairs N P: P pairs of N/P QPs each, held connected; sets PIDS_S,
# PIDS_C and OUTS (client outputs)
run_pairs() {
	local n=$1 p=$2 k each=$(($1 / $2)) at
	PIDS_S=() PIDS_C=() OUTS=()
	# every client connects from the same moment, when all have started
	at=$(awk -v t="$EPOCHREALTIME" -v p="$p" 'BEGIN {printf "%.3f", t + 1 + p * 0.5}')
	for k in $(seq 1 "$p"); do
		PORT=$((PORT + 1))
		rm -f "$TMPD/hold.s$k" "$TMPD/hold.c$k"
		start_a "$SCALE_TEST" server --qps "$each" --port "$PORT" --hold "$TMPD/hold.s$k" \
			--sample "$SAMPLE" \
			>"$TMPD/s$k.out" 2>&1 &
		PIDS_S+=($!)
		start_b "$SCALE_TEST" client --qps "$each" --host "$IP_A" --port "$PORT" --sample "$SAMPLE" \
			--hold "$TMPD/hold.c$k" --start-at "$at" >"$TMPD/c$k.out" 2>&1 &
		PIDS_C+=($!)
		OUTS+=("$TMPD/c$k.out")
	done
	TRACK_BGPIDS+=("${PIDS_S[@]}" "${PIDS_C[@]}")
	local deadline=$(($(date +%s) + 600))
	for k in $(seq 1 "$p"); do
		until [ -e "$TMPD/hold.s$k" ] && [ -e "$TMPD/hold.c$k" ]; do
			if ! pid_running "${PIDS_S[k-1]}" || ! pid_running "${PIDS_C[k-1]}" ||
			   [ "$(date +%s)" -ge "$deadline" ]; then
				_dp_show "$TMPD/s$k.out" server
				_dp_show "$TMPD/c$k.out" client
				fail "pair $k of $p ($each QPs) did not connect"
			fi
			sleep 0.1
		done
	done
}

# kill_pairs: SIGKILL every process of the run; efid must clean up
kill_pairs() {
	kill -KILL "${PIDS_S[@]}" "${PIDS_C[@]}" 2>/dev/null
	for pid in "${PIDS_S[@]}" "${PIDS_C[@]}"; do wait "$pid" 2>/dev/null; done
	local t0
	t0=$(date +%s%3N)
	wait_for 5000 "efid one's table empty" table_is one "$A" "0/0"
	wait_for 5000 "efid two's table empty" table_is two "$B" "0/0"
	wait_for 5000 "efid one's fds back to $FD1" fds_are one "$FD1"
	wait_for 5000 "efid two's fds back to $FD2" fds_are two "$FD2"
	KILL_MS=$(($(date +%s%3N) - t0))
}

ROWS=()
for n in "${SIZES[@]}"; do
	log "N=$n: one pair"
	run_pairs "$n" 1
	c=${OUTS[0]}
	med=$(val connect_us "$c" 2) p99=$(val connect_us "$c" 3) rate1=$(val connects_per_s "$c")
	rss_c=$(rss_of "${PIDS_C[0]}") rss_s=$(rss_of "${PIDS_S[0]}")
	per_qp=$(val rss_per_qp_b "$c")
	e1=$(rss_of "${EFID_PID[one]}") e2=$(rss_of "${EFID_PID[two]}")
	f1=$(fds_of one) f2=$(fds_of two) t1=$(table one "$A") t2=$(table two "$B")
	blocks=$(val qps "$c" 4)
	kill_pairs
	after="$(table one "$A") $(table two "$B"), fds $(fds_of one)/$(fds_of two)"
	log "N=$n: connect median ${med} µs p99 ${p99} µs, ${rate1}/s; $blocks blocks; client ${rss_c} KiB (${per_qp} B/QP), server ${rss_s} KiB; efid ${e1}/${e2} KiB, fds ${f1}/${f2}, tables ${t1} ${t2}; after SIGKILL: ${after} within ${KILL_MS} ms"

	log "N=$n: $PAIRS pairs of $((n / PAIRS)) at once"
	run_pairs "$n" "$PAIRS"
	first=$(for o in "${OUTS[@]}"; do val connect_window "$o" 2; done | sort -n | head -1)
	last=$(for o in "${OUTS[@]}"; do val connect_window "$o" 3; done | sort -n | tail -1)
	ratep=$(awk -v n=$(((n / PAIRS) * PAIRS)) -v a="$first" -v b="$last" 'BEGIN {printf "%.0f", n / (b - a)}')
	pmed=$(for o in "${OUTS[@]}"; do val connect_us "$o" 2; done | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
	pe2=$(rss_of "${EFID_PID[two]}") pf2=$(fds_of two) pt2=$(table two "$B")
	kill_pairs
	log "N=$n, $PAIRS pairs: ${ratep} connects/s through efid two (median of the pairs' medians ${pmed} µs); efid two ${pe2} KiB, ${pf2} fds, table ${pt2}; after SIGKILL: $(table one "$A") $(table two "$B"), fds $(fds_of one)/$(fds_of two) within ${KILL_MS} ms"
	ROWS+=("| $n | $blocks | $med | $p99 | $rate1 | $ratep | $((rss_c / 1024)) | $per_qp | $e2 | $f2 → $pf2 | $t2 | $(table two "$B"), $(fds_of two) fds |")
done

CM_LINE="not run (no $CM_TEST)"
if [ -x "$CM_TEST" ]; then
	log "connection manager: $CM_PAIRS clients of $CM_N connects at once"
	CPIDS=()
	for k in $(seq 1 "$CM_PAIRS"); do
		ip netns exec "$A" env EFI_SOCKET="$SOCK_A" "$CM_TEST" server $((7960 + k)) --count "$CM_N" \
			>"$TMPD/cms$k.out" 2>&1 &
		TRACK_BGPIDS+=($!)
	done
	for k in $(seq 1 "$CM_PAIRS"); do
		wait_for 10000 "cm server $k listening" grep -q '^listening' "$TMPD/cms$k.out"
	done
	for k in $(seq 1 "$CM_PAIRS"); do
		ip netns exec "$B" env EFI_SOCKET="$SOCK_B" timeout -k 5 300 "$CM_TEST" client "$IP_A" $((7960 + k)) \
			--expect established --count "$CM_N" >"$TMPD/cmc$k.out" 2>&1 &
		CPIDS+=($!)
	done
	ok=1
	for pid in "${CPIDS[@]}"; do wait "$pid" || ok=0; done
	if [ "$ok" = 1 ]; then
		sum=0 meds="" p99s=""
		for k in $(seq 1 "$CM_PAIRS"); do
			l=$(grep '^connects:' "$TMPD/cmc$k.out")
			r=$(sed -n 's/.*ms: \([0-9]*\) per second.*/\1/p' <<<"$l")
			sum=$((sum + r))
			meds+=" $(sed -n 's/.*median \([0-9.]*\) ms.*/\1/p' <<<"$l")"
			p99s+=" $(sed -n 's/.*p99 \([0-9.]*\) ms.*/\1/p' <<<"$l")"
		done
		CM_LINE="$CM_PAIRS clients x $CM_N connects: $sum connects/s summed; set-up medians (ms):$meds; p99s (ms):$p99s; efid two $(rss_of "${EFID_PID[two]}") KiB, $(fds_of two) fds"
	else
		for k in $(seq 1 "$CM_PAIRS"); do _dp_show "$TMPD/cmc$k.out" "cm client $k"; done
		CM_LINE="FAILED (output above)"
	fi
	log "connection manager: $CM_LINE"
fi

echo
echo "connection manager: $CM_LINE"
echo "baseline: efid one ${RSS1} KiB ${FD1} fds, efid two ${RSS2} KiB ${FD2} fds (before anything ran)"
echo "| N QPs | blocks | connect median µs | p99 µs | connects/s, 1 process | connects/s, $PAIRS processes | client RSS MiB | RSS B/QP | efid RSS KiB | efid fds (1 / $PAIRS procs) | efid table (contexts/QPs) | after SIGKILL |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
printf '%s\n' "${ROWS[@]}"
