#!/bin/bash
# The EFI demo, from a fresh Debian 12 machine:
#
#   scripts/demo.sh
#
# 1. installs the build dependencies (scripts/install-deps.sh),
# 2. builds EFI out of tree in ./build-demo (autogen, configure, make),
# 3. starts efid with its defaults pointed at a temporary directory
#    (state, runtime socket, config: nothing outside it is touched),
# 4. makes two instances (network namespaces efidemo-PID-a and -b) and an
#    uplink bridge, attaches one EFI interface to each with efictl,
# 5. shows `efictl status` (instances, interfaces, link state, GIDs) and
#    proves the two instances reach each other (ping from a to b),
# 6. moves data between them over libefi's RC queue pairs with efi-perf
#    (send latency for 8 B, RDMA Write bandwidth for 64 KiB and 1 MiB), the
#    QPs connected by the connection manager (efid to efid),
# 7. detaches, stops efid and removes everything it made, also on failure or
#    Ctrl-C.
#
# Needs root (namespaces, links); re-runs itself with sudo when it can.
# Environment: EFI_BUILD_DIR (default ./build-demo), EFI_DEMO_SKIP_DEPS=1
# (skip step 1), EFI_DEMO_KEEP=1 (pause before cleaning up),
# EFI_DEMO_TCP_EXCHANGE=1 (connect the QPs by hand over TCP instead of
# through the connection manager).
set -euo pipefail

SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null 2>&1; then
		exec sudo --preserve-env=EFI_BUILD_DIR,EFI_DEMO_SKIP_DEPS,EFI_DEMO_KEEP,EFI_DEMO_TCP_EXCHANGE "$0" "$@"
	fi
	echo "demo.sh: needs root to create network namespaces; run it as root." >&2
	exit 1
fi

step() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }
run() {
	printf '$ %s\n' "$*"
	"$@"
}

# ---- 1. dependencies ------------------------------------------------------
if [ "${EFI_DEMO_SKIP_DEPS:-0}" != 1 ]; then
	step "Installing build dependencies"
	bash "$SRC/scripts/install-deps.sh"
fi

# ---- 2. build -------------------------------------------------------------
BUILD=${EFI_BUILD_DIR:-$SRC/build-demo}
if [ -f "$SRC/config.status" ] && [ -z "${EFI_BUILD_DIR:-}" ]; then
	# The tree was configured in place; an out-of-tree build would refuse.
	BUILD=$SRC
fi
step "Building in $BUILD"
if [ ! -x "$SRC/configure" ]; then
	(cd "$SRC" && ./autogen.sh)
fi
mkdir -p "$BUILD"
if [ ! -f "$BUILD/Makefile" ]; then
	(cd "$BUILD" && "$SRC/configure" --quiet)
fi
make -C "$BUILD" --no-print-directory -j"$(nproc)" >"$BUILD/demo-make.log" 2>&1 || {
	tail -n 40 "$BUILD/demo-make.log" >&2
	echo "demo.sh: the build failed; the log is $BUILD/demo-make.log" >&2
	exit 1
}
EFID=$BUILD/efid/efid
EFICTL=$BUILD/efictl/efictl
echo "built $EFID and $EFICTL"

# ---- 3. efid in a temporary directory -------------------------------------
TMP=$(mktemp -d /tmp/efidemo.XXXXXX)
INST_A=efidemo-$$-a
INST_B=efidemo-$$-b
BRIDGE=efibr-$$          # at most 15 characters: efibr- + a pid
ADDR_A=10.213.0.1/24     # 10.x, only ever inside the demo's own namespaces
ADDR_B=10.213.0.2/24
EFID_PID=

cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	set +e
	if [ "${EFI_DEMO_KEEP:-0}" = 1 ] && [ -t 0 ]; then
		printf '\nEFI_DEMO_KEEP=1: efid is at %s; press Enter to clean up.\n' "$EFI_SOCKET"
		read -r _
	fi
	step "Cleaning up"
	if [ -n "$EFID_PID" ] && kill -0 "$EFID_PID" 2>/dev/null; then
		for inst in "$INST_A" "$INST_B"; do
			"$EFICTL" detach "$inst" --all >/dev/null 2>&1
		done
		kill -TERM "$EFID_PID"
		for _ in $(seq 50); do kill -0 "$EFID_PID" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$EFID_PID" 2>/dev/null
		wait "$EFID_PID" 2>/dev/null
	fi
	# Deleting a namespace deletes the veth ends in it, and with them their
	# host-side peers, whatever state efid left them in.
	for inst in "$INST_A" "$INST_B"; do
		[ -e "/run/netns/$inst" ] && ip netns delete "$inst"
	done
	ip link show "$BRIDGE" >/dev/null 2>&1 && ip link delete "$BRIDGE"
	rm -rf "$TMP"
	echo "removed efid, $INST_A, $INST_B, $BRIDGE and $TMP"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

step "Starting efid (state, socket and config under $TMP)"
mkdir -p "$TMP/state" "$TMP/run"
# A config of our own: the machine's /etc/efi is not read, and no interface
# directory is applied at start.
cat >"$TMP/efid.conf" <<CONF
[Interfaces]
Directory=
Repair=yes
CONF
export EFI_SOCKET=$TMP/run/efid.sock   # where efictl looks for efid
EFID_ARGS=(--config "$TMP/efid.conf" --state-dir "$TMP/state" --runtime-dir "$TMP/run")
printf '$ %s %s &   # log: %s\n' "$EFID" "${EFID_ARGS[*]}" "$TMP/efid.log"
"$EFID" "${EFID_ARGS[@]}" >"$TMP/efid.log" 2>&1 &
EFID_PID=$!
# `efictl list` needs an answer from efid (exit 6 while it is unreachable).
for _ in $(seq 100); do
	"$EFICTL" list >/dev/null 2>&1 && break
	kill -0 "$EFID_PID" 2>/dev/null || { cat "$TMP/efid.log" >&2; echo "demo.sh: efid exited" >&2; exit 1; }
	sleep 0.1
done
"$EFICTL" list >/dev/null 2>&1 || { cat "$TMP/efid.log" >&2; echo "demo.sh: efid did not answer within 10 s" >&2; exit 1; }
run "$EFICTL" version

# ---- 4. two instances, one interface each ---------------------------------
step "Creating instances $INST_A and $INST_B and uplink bridge $BRIDGE"
run ip netns add "$INST_A"
run ip netns add "$INST_B"
run ip link add "$BRIDGE" type bridge
run ip link set "$BRIDGE" up

step "Attaching an EFI interface to each instance"
run "$EFICTL" attach "$INST_A" --address "$ADDR_A" --name efi0 --uplink "$BRIDGE"
run "$EFICTL" attach "$INST_B" --address "$ADDR_B" --name efi0 --uplink "$BRIDGE"
# Attach is idempotent: asking again changes nothing and succeeds.
run "$EFICTL" attach "$INST_A" --address "$ADDR_A" --name efi0 --uplink "$BRIDGE"

# ---- 5. what efid knows, and the wire -------------------------------------
step "efictl status"
run "$EFICTL" status

step "Inside $INST_A, as the instance sees it"
run ip -n "$INST_A" -br addr show dev efi0

step "Connectivity: $INST_A -> $INST_B"
run ip netns exec "$INST_A" ping -c 3 -W 2 "${ADDR_B%/*}"

# ---- 6. moving data: efi-perf over libefi ---------------------------------
# RC queue pairs between the two instances, on their EFI interfaces: the
# server runs in $INST_B, the client in $INST_A.  The connection manager
# connects the QPs (efid to efid: QP numbers, PSNs, MTU, the connection's
# secret; buffer keys as private data); a TCP channel carries only the test
# parameters and the barriers.  EFI_DEMO_TCP_EXCHANGE=1: QP numbers over TCP.
EFI_PERF=$BUILD/tools/efi-perf/efi-perf
PERF_EXCHANGE=()
[ "${EFI_DEMO_TCP_EXCHANGE:-0}" = 1 ] && PERF_EXCHANGE=(--tcp-exchange)
perf_pair() {
	local server_pid
	ip netns exec "$INST_B" "$EFI_PERF" "${PERF_EXCHANGE[@]}" "$@" >"$TMP/efi-perf-server.log" 2>&1 &
	server_pid=$!
	sleep 0.5
	run ip netns exec "$INST_A" timeout 120 "$EFI_PERF" "${PERF_EXCHANGE[@]}" "$@" "${ADDR_B%/*}" || {
		cat "$TMP/efi-perf-server.log" >&2
		kill "$server_pid" 2>/dev/null || true
		return 1
	}
	wait "$server_pid" || true
}
demo_move_data() {
	step "efi-perf send_lat, 8 B: $INST_A <-> $INST_B"
	perf_pair send_lat -s 8 -n 5000
	step "efi-perf write_bw, 64 KiB and 1 MiB: $INST_A -> $INST_B"
	perf_pair write_bw -s 65536 -n 2000
	perf_pair write_bw -s 1048576 -n 200
}
demo_move_data

step "Detaching"
run "$EFICTL" detach "$INST_A" efi0
run "$EFICTL" detach "$INST_B" --all
run "$EFICTL" list

printf '\nDemo finished: two instances, one EFI interface each, attached, used, detached.\n'
