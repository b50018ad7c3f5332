# shellcheck shell=bash
# Helpers of the Open MPI tests (tests/mpi/t-*.sh) and bench/fabric.sh, on
# top of tests/fabric/lib.sh (instances with efid, the provider's
# environment):
#
#     . "$(dirname "$0")/lib.sh"
#     mpi_init TAG [testbed]       # skips (77) without Open MPI or the provider
#     dp_one_host  |  tb_up 2 1 2 off
#     mpi_host NAME NETNS SOCKET   # a "host" for mpirun: an instance
#     mpi_run OUT NP PROGRAM ARGS...   # mpirun from the first host
#     mpi_watch_start EFICTL-CMD... / mpi_watch_stop   # efid's counters
#     mpi_watch_show               # the last ones, after a failure
#     mpi_efi_bytes INSTANCE       # most bytes a context there sent
#
# mpirun runs inside the first host's namespace and starts the others'
# daemons through rsh-agent.sh (--mca plm_rsh_agent), which enters their
# namespaces; each host gets a UTS namespace named after it, so Open MPI
# sees distinct nodes.  Its out-of-band channel (TCP) and PMIx's then run
# over the instances' own addresses (efi0, kernel TCP: control only); MPI's
# data goes through the CM PML and the ofi MTL to libfabric's provider
# MPI_TRANSPORT: efi (default; libfabric layers ofi_rxm on it for
# FI_EP_RDM), tcp (libfabric's tcp provider: bench/fabric.sh's baseline) or
# ob1-tcp (Open MPI's own TCP BTL, no libfabric).
# shellcheck source=tests/fabric/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../fabric/lib.sh"

: "${MPI_BIN:=$top_builddir/tests/mpi}"
: "${MPI_AGENT:=${top_srcdir:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}/tests/mpi/rsh-agent.sh}"
# Seconds one mpirun may take before it counts as a hang.
: "${MPI_TIMEOUT:=300}"
: "${MPI_TRANSPORT:=efi}"
MPI_HOSTS=()
MPI_WATCH_PID=""

# mpi_init TAG [testbed]: the checks of the Open MPI tests, then lib_init
# (or tb_test_init: the caller sourced tests/testbed/testbed.sh) and the
# provider's setup.  A missing Open MPI or libfabric is a skip with its
# reason; a missing piece of our own build a failure.
mpi_init() {
	command -v mpirun >/dev/null 2>&1 || skip "Open MPI not installed (apt-get install openmpi-bin libopenmpi-dev)"
	command -v fi_info >/dev/null 2>&1 || skip "libfabric not installed (apt-get install libfabric-bin libfabric-dev)"
	[ -r "${EFI_FI_DIR:-$top_builddir/fabric/.libs}/libefi-fi.so" ] ||
		skip "libfabric not installed at build time: the efi provider (fabric/libefi-fi.so) was not built (apt-get install libfabric-dev, then configure)"
	if [ ! -x "$MPI_BIN/mpi-pingpong" ] || [ ! -x "$MPI_BIN/mpi-allreduce" ]; then
		skip "Open MPI not installed at build time: tests/mpi/mpi-pingpong and mpi-allreduce were not built (apt-get install libopenmpi-dev, then configure)"
	fi
	command -v unshare >/dev/null 2>&1 || skip "unshare (util-linux) is not installed"
	if [ "${2:-}" = testbed ]; then
		tb_test_init "$1"
	else
		lib_init "$1"
	fi
	fab_setup
	[ -x "$MPI_AGENT" ] || fail "rsh agent not found at $MPI_AGENT"
	MPI_MAP=$TMPD/mpi-hosts.map
	MPI_HOSTFILE=$TMPD/mpi-hostfile
	: >"$MPI_MAP"
	: >"$MPI_HOSTFILE"
}

# mpi_host NAME NETNS SOCKET: one more host (one slot) for mpirun; the
# first is where mpirun runs.
mpi_host() {
	printf '%s %s %s\n' "$1" "$2" "$3" >>"$MPI_MAP"
	printf '%s slots=1\n' "$1" >>"$MPI_HOSTFILE"
	MPI_HOSTS+=("$1")
}

# mpi_flags: MPI_FLAGS, what a user of Open MPI over efi puts on mpirun's
# command line (docs/libfabric.md): the CM PML over the ofi MTL, restricted
# to the provider; the "self" BTL only, so no BTL can carry data between
# the ranks; mpi_yield_when_idle because two ranks, their progress threads
# and efid share 2 cores here; over efi, FI_OFI_RXM_USE_RNDV_WRITE=1
# unless MPI_RNDV=read.
#
# --bind-to none, for every transport: each "host" here is an instance on
# the same machine, and Open MPI binds the first rank of every node to the
# node's first core, so all ranks (with their threads) shared CPU 0 while
# the other cores idled.  A polling transport in user space then waits for
# its peer's time slice (2-3 ms gaps in a packet trace, each rank on CPU a
# third of the time): MPI_Allreduce 16 MiB took 225 ms over efi and 72 ms
# over tcp, 17.5 and 9.9 ms unbound (same run).  Real hosts have their own
# cores; here the scheduler must be free to spread the ranks.
mpi_flags() {
	if [ "$MPI_TRANSPORT" = ob1-tcp ]; then
		# Open MPI's own TCP path (ob1 PML, tcp BTL): what a user without
		# RDMA runs, the baseline of issue 20
		# shellcheck disable=SC2054
		MPI_FLAGS=(--mca pml ob1 --mca btl tcp,self --mca mpi_yield_when_idle 1 --bind-to none)
		return
	fi
	MPI_FLAGS=(--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include "$MPI_TRANSPORT"
		--mca btl self --mca mpi_yield_when_idle 1 --bind-to none)
	# over efi, rxm's rendezvous (messages above 128 KiB) by RDMA Write:
	# its default Read loses packets over libefi's lanes (docs/libfabric.md,
	# "Rendezvous"); tcp is left as a user gets it.  MPI_RNDV=read leaves
	# efi as a user gets it too (rxm's Read rendezvous), for the cases that
	# must hold without the workaround.
	[ "$MPI_TRANSPORT" = efi ] && [ "${MPI_RNDV:-write}" != read ] &&
		MPI_FLAGS+=(-x FI_OFI_RXM_USE_RNDV_WRITE=1)
	return 0
}

# mpi_run OUT NP PROGRAM [ARGS...]: mpirun -np NP of PROGRAM over the hosts
# (one rank per host, by node), output (both streams) in OUT; returns
# mpirun's exit status.  MPI_ENV (words NAME=VALUE) goes to the ranks'
# environments, MPI_EXTRA (words) onto mpirun's command line.
mpi_run() {
	local out=$1 np=$2 first ns sock env=() w
	shift 2
	mpi_flags
	read -r first ns sock <"$MPI_MAP"
	# the ranks: the provider (FI_PROVIDER_PATH, LD_LIBRARY_PATH) and, in a
	# sanitizer build, the ASan runtime it needs loaded first; mpirun and
	# orted themselves never load the provider and run without it
	env=(-x FI_PROVIDER_PATH -x LD_LIBRARY_PATH
		-x "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0")
	for w in "${FAB_ENV[@]}"; do
		case $w in LD_PRELOAD=*) env+=(-x "$w") ;; esac
	done
	for w in ${MPI_ENV:-}; do
		env+=(-x "$w")
	done
	# SC2086: MPI_EXTRA is a list of words; SC2016: $1 is the inner sh's
	# shellcheck disable=SC2086,SC2016
	ip netns exec "$ns" env EFI_SOCKET="$sock" EFI_MPI_HOSTS="$MPI_MAP" \
		unshare --uts sh -c 'hostname "$1" && shift && exec "$@"' mpirun "$first" \
		timeout -k 10 "$MPI_TIMEOUT" mpirun --allow-run-as-root --oversubscribe \
		--hostfile "$MPI_HOSTFILE" --map-by node -np "$np" \
		--mca plm_rsh_agent "$MPI_AGENT" \
		"${MPI_FLAGS[@]}" "${env[@]}" ${MPI_EXTRA:-} \
		"$@" >"$out" 2>&1
}

# mpi_show FILE LABEL: an output, indented, on the test's log.
mpi_show() {
	sed "s/^/    $2: /" "$1"
}

# mpi_watch_start "EFICTL-COMMAND"...: samples `EFICTL-COMMAND --json
# status` of each (words, e.g. "ctl_on main" or "tb_ctl 1") ten times a
# second into $TMPD/mpi-watch (lines "INSTANCE PID TX_BYTES RX_BYTES
# STALLED_QPS", one per libefi context) until mpi_watch_stop.  A context's counters vanish
# with its process, so only sampling while MPI runs can show what its
# ranks sent through EFI.
mpi_watch_start() {
	: >"$TMPD/mpi-watch"
	(
		trap 'exit 0' TERM
		while :; do
			n=0
			for c in "$@"; do
				n=$((n + 1))
				# shellcheck disable=SC2086 # a command in words
				$c --json status >"$TMPD/mpi-watch.json.$n" 2>/dev/null
				jq -r '.instances[] | .name as $i |
					.interfaces[] | (.contexts // [])[] |
					"\($i) \(.pid) \(.tx_bytes) \(.rx_bytes) \(.stalled_qps // 0)"' \
					"$TMPD/mpi-watch.json.$n" 2>/dev/null
			done
			sleep 0.1
		done
	) >>"$TMPD/mpi-watch" &
	MPI_WATCH_PID=$!
	TRACK_BGPIDS+=("$MPI_WATCH_PID")
}

mpi_watch_stop() {
	[ -n "$MPI_WATCH_PID" ] || return 0
	kill "$MPI_WATCH_PID" 2>/dev/null
	wait "$MPI_WATCH_PID" 2>/dev/null
	MPI_WATCH_PID=""
}

# mpi_watch_show: the last status sampled from each efid (JSON), on the
# log: what the transport was doing when a run failed or hung.
mpi_watch_show() {
	local f
	for f in "$TMPD"/mpi-watch.json.*; do
		[ -s "$f" ] || continue
		echo "    last efid status sampled ($f):"
		jq -c '.instances[] | {name, interfaces: [.interfaces[] |
			{name, contexts, qps, connections}]}' "$f" 2>/dev/null | sed 's/^/      /'
	done
}

# mpi_efi_stalls: the most stalled QPs (send work outstanding, no progress
# for 2 s: libefi's stall detector) one context was seen to have.
mpi_efi_stalls() {
	awk '$5 > m { m = $5 } END { print m + 0 }' "$TMPD/mpi-watch"
}

# mpi_efi_bytes INSTANCE: the most bytes one libefi context of INSTANCE
# (efid's name for it: its namespace) was seen to have sent (0 when none).
mpi_efi_bytes() {
	awk -v ns="$1" '$1 == ns && $3 > m { m = $3 } END { print m + 0 }' "$TMPD/mpi-watch"
}
