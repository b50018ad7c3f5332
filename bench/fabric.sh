#!/bin/bash
# libfabric and Open MPI over EFI against the same over kernel TCP, between
# the same two instances (one efid, two network namespaces on one bridge;
# tests/data/lib.sh's dp_one_host), in one go:
#   fi_pingpong -e msg -p efi  against  -p tcp   (latency of a transfer and
#       bandwidth, sizes FI_SIZES)
#   mpi-pingpong (tests/mpi) over efi  against  over tcp: half round trip
#       at 8 B, 1 KiB, 4 KiB, bandwidth at 64 KiB, 1 MiB, 16 MiB
#   mpi-allreduce over efi  against  over tcp: time of one call at 8 B,
#       64 KiB, 1 MiB, 16 MiB
# Open MPI runs as in tests/mpi (pml cm, mtl ofi, btl self), with
# mtl_ofi_provider_include efi or tcp: the same MPI stack, only the
# libfabric provider differs ("efi;ofi_rxm" or "tcp;ofi_rxm").  Every
# figure is the median of RUNS runs; the table gives efi/tcp for each.
#
#     sudo bench/fabric.sh [BUILD_DIR]         (default: .)
#
# Pinned as bench/vs-tcp.sh pins: fi_pingpong's server on CPU 1, its
# client on CPU 0; MPI rank 0 on CPU 0, rank 1 on CPU 1 (each rank's
# threads with it).  Unpinned, two ranks and their progress threads land
# wherever the scheduler puts them, and the same 8 B figure swung 4-20 us
# between runs of one build.  The latency sizes (up to 4 KiB) take
# MPI_ITERS calls each, the bandwidth sizes as many as 32 MiB allow (the
# programs' budget): a median of 10 calls was noise.
#
# Environment: RUNS (3); MPI_ITERS (2000); EFI_ENV (words NAME=VALUE
# passed to every efi run, e.g. EFI_ACK_PIGGYBACK=1); EFI_LANES (passed to the efi runs when set);
# LANES1=1 adds a column "efi1": efi with EFI_LANES=1 in both ends (libefi
# sends over one UDP lane instead of spraying over several), measured in
# the same runs, interleaved with the others.
# Needs root, libfabric-bin, Open MPI, and a build with the efi provider
# and tests/mpi's programs (make check TESTS= builds them).  Everything it
# creates is removed on exit.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
top_builddir=$(cd "${1:-.}" && pwd) || exit 2
top_srcdir=$(cd "$(dirname "$0")/.." && pwd) || exit 2
export top_builddir top_srcdir
# shellcheck source=tests/mpi/lib.sh
. "$top_srcdir/tests/mpi/lib.sh"
command -v fi_pingpong >/dev/null 2>&1 || { echo "fi_pingpong is not installed (apt-get install libfabric-bin)" >&2; exit 77; }
mpi_init fb
: "${RUNS:=3}" "${MPI_ITERS:=2000}"
FI_SIZES="64 4096 65536 1048576"
dp_one_host
mpi_host efi-a "$A" "$SOCK_A"
mpi_host efi-b "$B" "$SOCK_B"
[ -n "${EFI_LANES:-}" ] && log "EFI_LANES=$EFI_LANES in the efi runs"
KINDS="efi tcp"
[ "${LANES1:-0}" = 1 ] && KINDS="efi efi1 tcp"

# lanes KIND: the environment of a kind of run (words NAME=VALUE): its
# EFI_LANES setting and EFI_ENV
lanes() {
	case $1 in
	efi1) echo "EFI_LANES=1 ${EFI_ENV:-}" ;;
	efi) echo "${EFI_LANES:+EFI_LANES=$EFI_LANES }${EFI_ENV:-}" ;;
	esac
}

median() { grep -E '^[0-9.]+$' | sort -g | awk '{v[NR] = $1} END {print NR ? v[int((NR + 1) / 2)] : "fail"}'; }

# fi_pp KIND SIZE: one fi_pingpong -e msg; prints "usec/xfer MB/s"
PORT=47600
fi_pp() {
	local prov=${1%1} size=$2 iters spid out env
	env=$(lanes "$1")
	case $size in
	64 | 4096) iters=2000 ;;
	65536) iters=300 ;;
	*) iters=40 ;;
	esac
	PORT=$((PORT + 1))
	# shellcheck disable=SC2086 # $env: words
	fa $env timeout 120 taskset -c 1 fi_pingpong -p "$prov" -e msg -B "$PORT" \
		-I "$iters" -S "$size" >"$TMPD/fi.s" 2>&1 &
	spid=$!
	TRACK_BGPIDS+=("$spid")
	wait_for 10000 "fi_pingpong server on $PORT" \
		bash -c "ip netns exec '$A' ss -Hltn 'sport = :$PORT' | grep -q ."
	# shellcheck disable=SC2086
	out=$(fb $env timeout 120 taskset -c 0 fi_pingpong -p "$prov" -e msg \
		-P "$PORT" -I "$iters" -S "$size" "$IP_A" 2>&1)
	wait "$spid" 2>/dev/null
	# bytes #sent #ack total time MB/sec usec/xfer Mxfers/sec (#ack "=2k":
	# the counts have unit suffixes)
	awk '$3 ~ /^=/ { print $7, $6; exit }' <<<"$out"
}

# mpi_fig KIND PROGRAM RUN: one run of the program into
# $TMPD/PROGRAM.KIND.RUN (empty when it failed)
mpi_fig() {
	local out=$TMPD/$2.$1.$3
	# each rank pins itself (SC2016: its own sh expands the variables)
	# shellcheck disable=SC2016
	MPI_TRANSPORT=${1%1} MPI_ENV=$(lanes "$1") \
		mpi_run "$out" 2 sh -c 'exec taskset -c "$OMPI_COMM_WORLD_RANK" "$0" "$@"' \
		"$MPI_BIN/mpi-$2" -i "$MPI_ITERS" || { log "mpi-$2 over $1 failed:"; mpi_show "$out" "$2"; : >"$out"; }
}

declare -A V=()
for ((r = 1; r <= RUNS; r++)); do
	log "run $r of $RUNS"
	for s in $FI_SIZES; do
		for p in $KINDS; do
			read -r lat bw <<<"$(fi_pp "$p" "$s")"
			V[fi.$p.$s.lat]+="${lat:-x} "
			V[fi.$p.$s.bw]+="${bw:-x} "
		done
	done
	for p in $KINDS; do
		mpi_fig "$p" pingpong "$r"
		mpi_fig "$p" allreduce "$r"
		# pingpong: bytes iters lat_us lat_min_us MB/s
		# 1 KiB and 4 KiB: where rxm's messages stopped being injects
		# before the provider's bounce pool (docs/libfabric.md)
		for s in 8 1024 4096; do
			V[pp.$p.$s.lat]+="$(awk -v s="$s" '$1 == s { print $3 }' "$TMPD/pingpong.$p.$r") "
		done
		for s in 65536 1048576 16777216; do
			V[pp.$p.$s.bw]+="$(awk -v s="$s" '$1 == s { print $5 }' "$TMPD/pingpong.$p.$r") "
		done
		# allreduce: bytes type iters time_us time_min_us
		for s in 8 65536 1048576 16777216; do
			V[ar.$p.$s.t]+="$(awk -v s="$s" '$1 == s { print $4 }' "$TMPD/allreduce.$p.$r") "
		done
	done
done

med() { tr ' ' '\n' <<<"${V[$1]:-}" | median; }
row() {
	local what=$1 key=$2 e e1 t
	ratio() { awk -v e="$1" -v t="$2" 'BEGIN { if (e + 0 > 0 && t + 0 > 0) printf "%.2f", e / t; else print "-" }'; }
	e=$(med "${key/@/efi}")
	t=$(med "${key/@/tcp}")
	if [ "${LANES1:-0}" = 1 ]; then
		e1=$(med "${key/@/efi1}")
		printf '| %s | %s | %s | %s | %s | %s |\n' "$what" "$e" "$e1" "$t" "$(ratio "$e" "$t")" "$(ratio "$e1" "$t")"
	else
		printf '| %s | %s | %s | %s |\n' "$what" "$e" "$t" "$(ratio "$e" "$t")"
	fi
}
human() { awk -v b="$1" 'BEGIN { if (b >= 1048576) printf "%d MiB", b / 1048576; else if (b >= 1024) printf "%d KiB", b / 1024; else printf "%d B", b }'; }

echo
echo "fabric bench: median of $RUNS runs, one host (load $(cut -d' ' -f1-3 /proc/loadavg)), ${EFI_LANES:+EFI_LANES=$EFI_LANES, }$(nproc) CPUs"
echo
if [ "${LANES1:-0}" = 1 ]; then
	echo "| measure | efi | efi1 (EFI_LANES=1) | tcp | efi/tcp | efi1/tcp |"
	echo "| --- | ---: | ---: | ---: | ---: | ---: |"
else
	echo "| measure | efi | tcp | efi/tcp |"
	echo "| --- | ---: | ---: | ---: |"
fi
for s in $FI_SIZES; do
	row "fi_pingpong msg $(human "$s"): µs/xfer" "fi.@.$s.lat"
	row "fi_pingpong msg $(human "$s"): MB/s" "fi.@.$s.bw"
done
for s in 8 1024 4096; do
	row "MPI ping-pong $(human "$s"): half round trip µs" "pp.@.$s.lat"
done
for s in 65536 1048576 16777216; do
	row "MPI ping-pong $(human "$s"): MB/s" "pp.@.$s.bw"
done
for s in 8 65536 1048576 16777216; do
	row "MPI_Allreduce $(human "$s"): µs per call" "ar.@.$s.t"
done
