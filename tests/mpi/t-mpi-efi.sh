#!/bin/bash
# Open MPI over EFI (issue 6): mpirun -np 2 of our ping-pong and allreduce
# (tests/mpi/mpi-*.c, 8 B … 16 MiB, every byte and element checked) with
# one rank in each of two instances, the data on the efi libfabric provider
# (--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include efi, btl self
# only).  Both must succeed and print their figures; efid's counters,
# sampled during the runs, must show each rank's libefi context sending the
# bulk of the data, so a run that went over TCP would fail.  Then the
# negative check: with MPI_TEST_CORRUPT=1 one rank spoils one element and
# both programs must fail.
# Argument: one (default: one efid, two instances) or hosts (two hosts of
# the testbed, tests/testbed/testbed.sh).  Cost: ~1 min (more with the
# sanitizers).
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
MODE=${1:-one}
# shellcheck source=tests/mpi/lib.sh
. "$(dirname "$0")/lib.sh"
case $MODE in
one)
	mpi_init mo
	dp_one_host
	WATCH=("ctl_on main")
	;;
hosts)
	# shellcheck source=tests/testbed/testbed.sh
	. "$(dirname "$0")/../testbed/testbed.sh"
	mpi_init mh testbed
	tb_up 2 1 2 off
	A=$(tb_ns 1 a)
	B=$(tb_ns 2 a)
	SOCK_A=${EFID_SOCK[tb1]}
	SOCK_B=${EFID_SOCK[tb2]}
	WATCH=("tb_ctl 1" "tb_ctl 2")
	;;
*) fail "argument: one or hosts, not '$MODE'" ;;
esac
mpi_host efi-a "$A" "$SOCK_A"
mpi_host efi-b "$B" "$SOCK_B"

: "${MPI_PP_ITERS:=20}" "${MPI_AR_ITERS:=10}"
# Bytes the ping-pong moves each way with its defaults, 8 B … 16 MiB in
# powers of 2 (sizes from 2 MiB on repeat less; see mpi-pingpong.c), is
# about 200 MiB, the all-reduce's about 180 MiB; over TCP a rank's libefi
# context sends none of it.  A context's counters vanish with its process
# and are sampled every 0.1 s (mpi_watch_start), so the last samples miss
# what the run sent after them: since the ranks no longer share one core
# (lib.sh, --bind-to none) the 16 MiB rounds (64 MiB) take well under
# that: sampled every 0.2 s, a sanitizer build's all-reduce was seen at
# 86 MB.  Each rank's context must be seen to send at least a third of its
# share.
MPI_MIN_EFI_BYTES=$((64 << 20))

# run NAME PROGRAM ARGS...: must succeed, with every check passed; its
# output on the log.
run() {
	local name=$1 rc=0
	shift
	log "mpirun -np 2 $*"
	mpi_watch_start "${WATCH[@]}"
	mpi_run "$TMPD/$name" 2 "$@" || rc=$?
	mpi_watch_stop
	mpi_show "$TMPD/$name" "$name"
	if [ "$rc" != 0 ]; then
		mpi_watch_show
		fail "$name: mpirun exited $rc (124: timeout after ${MPI_TIMEOUT}s; output above)"
	fi
	fmatch '^OK: every (byte|element) checked$' "$(cat "$TMPD/$name")" "$name's verdict"
	fmatch '^ +16777216 ' "$(cat "$TMPD/$name")" "$name's line for 16 MiB"
}

# on_efi NAME: each rank's libefi context sent the data (efid's counters)
on_efi() {
	local ns bytes
	for ns in "$A" "$B"; do
		bytes=$(mpi_efi_bytes "$ns")
		log "$1: most bytes sent by one libefi context in $ns: $bytes"
		[ "$bytes" -ge "$MPI_MIN_EFI_BYTES" ] ||
			fail "$1: the ranks in $ns sent $bytes bytes through EFI, expected >= $MPI_MIN_EFI_BYTES: the data did not go over the efi provider"
	done
}

# the MTL's choice, on the log: ofi, over the efi provider's domain
MPI_EXTRA="--mca mtl_base_verbose 10" run pingpong "$MPI_BIN/mpi-pingpong" -i "$MPI_PP_ITERS"
fmatch 'select: component ofi selected' "$(cat "$TMPD/pingpong")" "the ofi MTL"
on_efi pingpong
run allreduce "$MPI_BIN/mpi-allreduce" -i "$MPI_AR_ITERS"
on_efi allreduce

# the checks can fail: one spoilt byte / element, small sizes
for prog in pingpong allreduce; do
	log "negative check: $prog with MPI_TEST_CORRUPT=1 must fail"
	rc=0
	MPI_ENV=MPI_TEST_CORRUPT=1 mpi_run "$TMPD/$prog.bad" 2 "$MPI_BIN/mpi-$prog" -M 64k -i 4 || rc=$?
	mpi_show "$TMPD/$prog.bad" "$prog.bad"
	[ "$rc" != 0 ] || fail "$prog: a corrupted run exited 0"
	fmatch '^FAILED: ' "$(cat "$TMPD/$prog.bad")" "$prog's verdict on a corrupted run"
	fmatch 'expected' "$(cat "$TMPD/$prog.bad")" "$prog's report of the wrong value"
done
log "ok"
