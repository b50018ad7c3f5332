#!/bin/bash
# Issue 20's acceptance run: the data-parallel training job over EFI, many
# consecutive steps, many runs, beside a CPU load, watching for a hang.
#
# One efid, two instances on one bridge (tests/data/lib.sh's dp_one_host),
# one CPU-burning process pinned to each core (BURN=1, the "background
# load"), then RUNS runs of tests/mpi/train.py with one rank per instance
# over the efi provider (Open MPI pml cm, mtl ofi, ofi_rxm above it).  The
# runs cycle through SPECS, words RNDV:LANES:BUCKET_MB:
#   RNDV      read (rxm's default rendezvous, what a user gets) or write
#             (FI_OFI_RXM_USE_RNDV_WRITE=1, as the tests run it)
#   LANES     default, or 1 (EFI_LANES=1 in both ranks)
#   BUCKET_MB 0 (one buffer) or the bucket size, as a DDP buckets
# A run is
#   pass      mpirun exited 0 and train.py printed its RESULT
#   ERROR     anything else (a QP error, a provider error, a crash: loud)
#   HANG      rank 0 printed no step for DETECT seconds: each rank's stacks
#             (gdb) and efictl status/stats are saved in the run's
#             directory, then the job is killed
# and its line (steps/s, the load, each context's drops, retransmissions and
# timeouts from efictl) goes to the summary.  Exit status 0 only if every
# run passed.
#
#     sudo bench/training-soak.sh [BUILD_DIR]       (default: .)
#
# Environment: RUNS (10), STEPS (200), PARAMS (25000000: 100 MB of
# gradients a step), SPECS ("read:default:0 write:default:0"), BURN (1),
# DETECT (120 s), MPI_TIMEOUT (3600 s a run), XENV (words NAME=VALUE for
# both ranks, e.g. EFI_FAULT=loss=0.01 to hunt under injected loss),
# OUTDIR (kept; default a new directory under /tmp).  One run of 25 M
# parameters takes about 4 minutes at 0.9 steps/s with the burners.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
top_builddir=$(cd "${1:-.}" && pwd) || exit 2
top_srcdir=$(cd "$(dirname "$0")/.." && pwd) || exit 2
export top_builddir top_srcdir
# shellcheck source=tests/mpi/lib.sh
. "$top_srcdir/tests/mpi/lib.sh"
PY=/usr/bin/python3
"$PY" -c 'import numpy, mpi4py' 2>/dev/null || {
	echo "numpy and mpi4py are not installed for $PY (apt-get install python3-numpy python3-mpi4py)" >&2
	exit 77
}
command -v gdb >/dev/null 2>&1 || echo "training-soak: gdb not installed: a hang will be reported without stacks" >&2
mpi_init ts
: "${RUNS:=10}" "${STEPS:=200}" "${PARAMS:=25000000}" "${DETECT:=120}" "${BURN:=1}"
: "${SPECS:=read:default:0 write:default:0}" "${MPI_TIMEOUT:=3600}"
: "${OUTDIR:=$(mktemp -d /tmp/efi-training-soak-XXXXXX)}"
mkdir -p "$OUTDIR" || fail "cannot create $OUTDIR"
TRAIN=$top_srcdir/tests/mpi/train.py
read -ra specs <<<"$SPECS"
for s in "${specs[@]}"; do
	IFS=: read -r r l b <<<"$s"
	case $r:$l in read:default | write:default | read:1 | write:1) ;;
	*) fail "SPECS word '$s': RNDV must be read or write, LANES default or 1" ;;
	esac
	[[ $b =~ ^[0-9]+(\.[0-9]+)?$ ]] || fail "SPECS word '$s': BUCKET_MB must be a number"
done
dp_one_host
mpi_host efi-a "$A" "$SOCK_A"
mpi_host efi-b "$B" "$SOCK_B"
if [ "$BURN" = 1 ]; then
	for ((i = 0; i < $(nproc); i++)); do
		taskset -c "$i" bash -c 'while :; do :; done' &
		TRACK_BGPIDS+=("$!")
	done
	log "load: $(nproc) CPU-burning processes, one pinned to each core"
fi

# capture DIR: what a hang looks like from outside, before the job dies
capture() {
	local d=$1 p
	ctl_on main status >"$d/status.txt" 2>&1
	ctl_on main --json status >"$d/status.json" 2>&1
	ctl_on main --json stats >"$d/stats.json" 2>&1
	for p in $(ip netns pids "$A"; ip netns pids "$B"); do
		case "$(cat "/proc/$p/comm" 2>/dev/null)" in
		python3*) timeout 60 gdb -p "$p" -batch -ex 'thread apply all bt' >"$d/gdb.$p.txt" 2>&1 ;;
		esac
	done
	# again: did anything move while we looked?
	ctl_on main --json stats >"$d/stats2.json" 2>&1
}

# counters FILE: each context's drops, retransmissions and timeouts
counters() {
	jq -r '[.. | objects | select(has("drops") and has("retransmissions") and has("pid"))] |
		map("pid\(.pid) drops=\(.drops) retx=\(.retransmissions) to=\(.timeouts)") | join(" ")' \
		"$1" 2>/dev/null
}

failed=0
for ((r = 1; r <= RUNS; r++)); do
	spec=${specs[$(((r - 1) % ${#specs[@]}))]}
	IFS=: read -r rndv lanes bucket <<<"$spec"
	renv=${XENV:-}
	[ "$lanes" = 1 ] && renv="EFI_LANES=1 $renv"
	d=$OUTDIR/run$r
	mkdir -p "$d"
	log "run $r of $RUNS: $spec, $PARAMS parameters, $STEPS steps"
	t0=$(date +%s)
	MPI_TRANSPORT=efi MPI_RNDV=$rndv MPI_ENV=$renv mpi_run "$d/out" 2 "$PY" "$TRAIN" \
		--params "$PARAMS" --steps "$STEPS" --bucket-mb "$bucket" --print-every 1 \
		--stall-seconds "$((MPI_TIMEOUT + 60))" &
	job=$!
	last=0 lastt=$t0 verdict=""
	while pid_running "$job"; do
		sleep 1
		# the last counters while the contexts live (they vanish with them)
		ctl_on main --json stats >"$d/stats.tmp" 2>/dev/null && [ -n "$(counters "$d/stats.tmp")" ] &&
			mv "$d/stats.tmp" "$d/last-stats.json"
		n=$(grep -c '^STEP ' "$d/out" 2>/dev/null)
		now=$(date +%s)
		[ "$n" != "$last" ] && { last=$n; lastt=$now; }
		if [ $((now - lastt)) -ge "$DETECT" ]; then
			verdict="HANG(after $n steps)"
			log "run $r: no step for ${DETECT} s after $n steps: capturing stacks and counters in $d"
			capture "$d"
			for p in $(ip netns pids "$A"; ip netns pids "$B"); do
				case "$(cat "/proc/$p/comm" 2>/dev/null)" in python3* | mpirun | orted) kill -9 "$p" ;; esac
			done
			break
		fi
	done
	rc=0
	wait "$job" || rc=$?
	t1=$(date +%s)
	if [ -z "$verdict" ]; then
		if [ "$rc" = 0 ] && grep -q '^RESULT' "$d/out"; then verdict=pass; else verdict="ERROR(rc=$rc)"; fi
	fi
	[ "$verdict" = pass ] || { failed=$((failed + 1)); tail -n 30 "$d/out" | mpi_show /dev/stdin "run $r"; }
	sps=$(sed -n 's/.*steps_per_s=\([0-9.]*\).*/\1/p' "$d/out")
	printf 'run%-3s %-16s %-18s wall=%4ss steps/s=%-6s load=%s %s\n' "$r" "$spec" "$verdict" \
		"$((t1 - t0))" "${sps:--}" "$(cut -d' ' -f1-3 /proc/loadavg | tr ' ' /)" \
		"$(counters "$d/last-stats.json")" | tee -a "$OUTDIR/summary" >&3
done
log "$((RUNS - failed)) of $RUNS runs passed; summary in $OUTDIR/summary"
[ "$failed" = 0 ]
