#!/bin/bash
# Open MPI's pml ucx (Debian's Open MPI 4.1.4 over UCX 1.13) and EFI
# (issue 16), with one rank in each of two instances:
#
#  - Over EFI (ranks under efi-run, the device node from libefi-verbs'
#    tmpfiles.d file, UCX_TLS=rc: UCX's rc_verbs, wired up through
#    ud_verbs over EFI's UD QPs), tests/mpi's ping-pong (every byte of
#    every size checked) and allreduce (every element checked); UCX's
#    ep_cfg lines must show the tag lane on rc_verbs/efi0:1 on both ranks,
#    and no tcp is offered, so every byte goes over EFI.
#  - The same programs over pml ucx with UCX_TLS=tcp (kernel TCP on the
#    instances' interfaces, no EFI), for comparison: the pml, the programs
#    and the launch are sound either way.
# Cost: ~40 s.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/verbs/lib.sh
. "$(dirname "$0")/../verbs/lib.sh"
# shellcheck source=tests/mpi/lib.sh
. "$(dirname "$0")/lib.sh"
mpi_init mu
verbs_need ucx_info ucx-utils
ompi_info 2>/dev/null | grep -q 'MCA pml: ucx' || skip "Open MPI has no pml ucx"
[ -x "$EFI_RUN" ] || fail "efi-run not built at $EFI_RUN"
verbs_dev_node
dp_one_host
mpi_host efi-a "$A" "$SOCK_A"
mpi_host efi-b "$B" "$SOCK_B"

# pml ucx instead of the CM PML over ofi; the "self" BTL only.  pml ucx
# runs only over the transports of pml_ucx_tls (by default RDMA ones, not
# tcp): "any" for the baseline.  --bind-to none as tests/mpi/lib.sh says:
# the two "hosts" are instances of one machine, and Open MPI would bind
# both ranks to core 0.
mpi_flags() {
	MPI_FLAGS=(--mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any
		--mca btl self --mca osc ^ucx --mca mpi_yield_when_idle 1 --bind-to none)
}

# ucx RESULT NAME UCX_TLS UCX_NET_DEVICES PROGRAM ARGS...: mpirun -np 2 of
# PROGRAM with pml ucx over UCX_TLS; must end with RESULT (pass or fail)
ucx() {
	local want=$1 name=$2 tls=$3 devs=$4 rc=0
	shift 4
	log "pml ucx, UCX_TLS=$tls: $*"
	MPI_ENV="EFI_VERBS_LIB=$EFI_VERBS_LIB UCX_TLS=$tls UCX_NET_DEVICES=$devs UCX_LOG_LEVEL=info" \
		mpi_run "$TMPD/$name" 2 "$@" || rc=$?
	if [ "$want" = pass ]; then
		if [ "$rc" != 0 ]; then
			mpi_show "$TMPD/$name" "$name"
			fail "$name: mpirun exited $rc (124: timeout after ${MPI_TIMEOUT}s; output above)"
		fi
		fmatch '^OK: every (byte|element) checked$' "$(cat "$TMPD/$name")" "$name's verdict"
	else
		[ "$rc" != 0 ] || { mpi_show "$TMPD/$name" "$name"; fail "$name passed: update docs/verbs.md and this test"; }
	fi
}

# (self: UCX's loopback, for a rank's messages to itself)
for prog in pingpong allreduce; do
	if [ $prog = pingpong ]; then args=("$MPI_BIN/mpi-pingpong"); else args=("$MPI_BIN/mpi-allreduce" -i 5); fi
	ucx pass "rc_$prog" rc,self efi0:1 "$EFI_RUN" "${args[@]}"
	out=$(cat "$TMPD/rc_$prog")
	# UCX took EFI's device for the tag lane, on both ranks
	[ "$(grep -c 'ep_cfg\[[0-9]*\]: tag(rc_verbs/efi0:1)' <<<"$out")" -ge 2 ] ||
		{ mpi_show "$TMPD/rc_$prog" "rc_$prog"; fail "pml ucx ($prog) did not choose rc_verbs/efi0:1 on both ranks"; }
	mpi_show "$TMPD/rc_$prog" "$prog (pml ucx, EFI rc_verbs)"
done

ucx pass pingpong tcp efi0 "$MPI_BIN/mpi-pingpong"
mpi_show "$TMPD/pingpong" "pingpong (pml ucx, tcp)"
ucx pass allreduce tcp efi0 "$MPI_BIN/mpi-allreduce" -i 5
