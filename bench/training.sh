#!/bin/bash
# Data-parallel training over EFI against the same job over kernel TCP,
# between the same two instances (one efid, two network namespaces on one
# bridge: tests/data/lib.sh's dp_one_host), in one go (issue 20).
#
# The job is tests/mpi/train.py (numpy + mpi4py, seeded): every step
# all-reduces the gradients, in one buffer or in buckets as a DDP does.  It
# runs with one rank per instance over
#   efi       Open MPI pml cm, mtl ofi, the efi provider (ofi_rxm above it)
#   efi1      the same with EFI_LANES=1 in both ranks (one UDP lane)
#   ob1-tcp   Open MPI's own TCP BTL (pml ob1, btl tcp): what users without
#             RDMA run — the baseline
#   tcp       the same MPI stack as efi over libfabric's tcp provider
# for each model size in PARAMS and bucket size in BUCKETS_MB, and prints
# the median steps/s of RUNS runs with efi/ob1-tcp beside it.  Every run's
# loss digest must equal the ob1-tcp run's (the job is deterministic): a
# mismatch is printed and makes the exit status 1.  A run that fails or
# stalls (a step over STALL seconds) is printed as "fail" with its output.
#
#     sudo bench/training.sh [BUILD_DIR]          (default: .)
#
# Environment: RUNS (3), STEPS (30 timed steps a run, after train.py's
# warm-up), PARAMS ("1000000 25000000"), BUCKETS_MB ("0 25"), KINDS
# ("efi efi1 ob1-tcp tcp"), STALL (120).  Needs root, Open MPI, mpi4py,
# numpy, libfabric-bin and a build with the efi provider (make check
# TESTS= builds tests/mpi's programs).  Everything it creates is removed on
# exit.  The figures are only worth comparing within one run: run it on a
# quiet machine.
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
mpi_init tr
: "${RUNS:=3}" "${STEPS:=30}" "${STALL:=120}"
: "${PARAMS:=1000000 25000000}" "${BUCKETS_MB:=0 25}" "${KINDS:=efi efi1 ob1-tcp tcp}"
TRAIN=$top_srcdir/tests/mpi/train.py
dp_one_host
mpi_host efi-a "$A" "$SOCK_A"
mpi_host efi-b "$B" "$SOCK_B"

# one_run KIND PARAMS BUCKET_MB OUT: one job; its RESULT line in OUT, or
# OUT empty when it failed (its output on the log)
one_run() {
	local kind=$1 params=$2 bucket=$3 out=$4 lanes_env=""
	[ "$kind" = efi1 ] && lanes_env=EFI_LANES=1
	MPI_TRANSPORT=${kind%1} MPI_ENV=$lanes_env mpi_run "$out.log" 2 "$PY" "$TRAIN" \
		--params "$params" --steps "$STEPS" --bucket-mb "$bucket" \
		--print-every 1000000 --stall-seconds "$STALL" || true
	if ! grep '^RESULT ' "$out.log" >"$out"; then
		log "$kind, $params params, buckets $bucket MB: failed"
		mpi_show "$out.log" "$kind"
		: >"$out"
	fi
}

field() { sed -n "s/.* $1=\\([^ ]*\\).*/\\1/p" "$2"; }
median() { grep -E '^[0-9.]+$' | sort -g | awk '{v[NR] = $1} END {print NR ? v[int((NR + 1) / 2)] : "fail"}'; }

declare -A V=()
mismatch=0
for ((r = 1; r <= RUNS; r++)); do
	log "run $r of $RUNS"
	for p in $PARAMS; do
		for b in $BUCKETS_MB; do
			# interleaved, so that the machine's moods fall on every kind
			for k in $KINDS; do
				f=$TMPD/$k.$p.$b.$r
				one_run "$k" "$p" "$b" "$f"
				V[$k.$p.$b]+="$(field steps_per_s "$f") "
			done
			ref=$TMPD/ob1-tcp.$p.$b.$r
			[ -s "$ref" ] || continue
			for k in $KINDS; do
				f=$TMPD/$k.$p.$b.$r
				[ -s "$f" ] || continue
				if [ "$(field digest "$f")" != "$(field digest "$ref")" ]; then
					log "loss curve of $k differs from ob1-tcp's ($p params, buckets $b MB, run $r)"
					mismatch=1
				fi
			done
		done
	done
done

med() { tr ' ' '\n' <<<"${V[$1]:-}" | median; }
ratio() { awk -v e="$1" -v t="$2" 'BEGIN { if (e + 0 > 0 && t + 0 > 0) printf "%.2f", e / t; else print "-" }'; }
echo
echo "training bench: steps/s, median of $RUNS runs of $STEPS steps, two instances on one host (load $(cut -d' ' -f1-3 /proc/loadavg)), $(nproc) CPUs"
echo
hdr="| model | buckets"
sep="| --- | ---"
for k in $KINDS; do
	hdr+=" | $k"
	sep+=" | ---:"
done
echo "$hdr | efi / ob1-tcp |"
echo "$sep | ---: |"
for p in $PARAMS; do
	for b in $BUCKETS_MB; do
		line="| $(awk -v p="$p" 'BEGIN { printf "%g M params (%g MB)", p / 1e6, p * 4 / 1e6 }') | $([ "$b" = 0 ] && echo "one buffer" || echo "$b MB")"
		for k in $KINDS; do
			line+=" | $(med "$k.$p.$b")"
		done
		echo "$line | $(ratio "$(med "efi.$p.$b")" "$(med "ob1-tcp.$p.$b")") |"
	done
done
echo
[ "$mismatch" = 0 ] && echo "loss curves: identical over every transport" ||
	echo "loss curves: DIFFER (see above)"
exit "$mismatch"
