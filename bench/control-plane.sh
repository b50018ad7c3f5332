#!/usr/bin/env bash
# Control-plane costs, each next to a baseline measured in the same run:
#  - efid start-up (fresh database, and with N interfaces to reconcile)
#    next to `sqlite3` opening the same database (the floor for "open state");
#  - one `efictl attach` (veth pair, netns move, address, bridge, record)
#    next to the same kernel work done by iproute2 commands.
# Medians of ROUNDS (default 20). Needs root. Creates only namespaces and
# links named cpb<PID>*, removes them on exit.
#
# Usage: bench/control-plane.sh [BUILD_DIR]   (default: ./build or .)
set -euo pipefail
BUILD=${1:-}
if [ -z "$BUILD" ]; then
	for b in build build-demo .; do [ -x "$b/efid/efid" ] && BUILD=$b && break; done
fi
EFID=$(readlink -f "$BUILD/efid/efid"); EFICTL=$(readlink -f "$BUILD/efictl/efictl")
ROUNDS=${ROUNDS:-20}
[ "$(id -u)" = 0 ] || { echo "bench/control-plane.sh needs root (namespaces, links)" >&2; exit 1; }

P=cpb$$
TMP=$(mktemp -d /tmp/$P.XXXX)
EFID_PID=
cleanup() {
	[ -n "$EFID_PID" ] && kill "$EFID_PID" 2>/dev/null && wait "$EFID_PID" 2>/dev/null
	for ns in $(ip netns list | awk '{print $1}' | grep "^$P" || true); do ip netns del "$ns"; done
	for l in $(ip -o link show | awk -F': ' '{print $2}' | cut -d@ -f1 | grep "^$P" || true); do ip link del "$l" 2>/dev/null || true; done
	ip -o link show | awk -F': ' '{print $2}' | cut -d@ -f1 | while read -r l; do
		alias=$(cat "/sys/class/net/$l/ifalias" 2>/dev/null || true)
		if [ -n "${HOSTID:-}" ] && [[ "$alias" == "efi:$HOSTID:"* ]]; then
			ip link del "$l" 2>/dev/null || true
		fi
	done
	rm -rf "$TMP"
}
trap cleanup EXIT INT TERM

now_ns() { date +%s%N; }
median() { sort -n | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
ms() { awk -v ns="$1" 'BEGIN {printf "%.2f", ns/1e6}'; }

printf '[Interfaces]\nDirectory=\nRepair=no\n' > "$TMP/efid.conf"
start_efid() {
	"$EFID" --config "$TMP/efid.conf" --state-dir "$TMP/state" --runtime-dir "$TMP/run" --log-level warning 2>>"$TMP/efid.log" &
	EFID_PID=$!
	until "$EFICTL" --socket "$TMP/run/efid.sock" list >/dev/null 2>&1; do sleep 0.001; done
}
stop_efid() { kill "$EFID_PID"; wait "$EFID_PID" || true; EFID_PID=; }

ip link add "${P}br" type bridge && ip link set "${P}br" up
ip netns add "${P}a"

# --- start-up, empty database ---
: > "$TMP/start"; : > "$TMP/sqlite"
for _ in $(seq "$ROUNDS"); do
	rm -rf "$TMP/state" "$TMP/run"
	t0=$(now_ns); start_efid; t1=$(now_ns); stop_efid
	echo $((t1 - t0)) >> "$TMP/start"
	t0=$(now_ns); sqlite3 "$TMP/state/efid.db" "PRAGMA quick_check; SELECT count(*) FROM interfaces;" >/dev/null; t1=$(now_ns)
	echo $((t1 - t0)) >> "$TMP/sqlite"
done
start_empty=$(median < "$TMP/start"); sqlite_open=$(median < "$TMP/sqlite")

# --- attach cost vs iproute2 doing the same kernel work ---
start_efid
HOSTID=$("$EFICTL" --socket "$TMP/run/efid.sock" --json status | jq -r .host_id)
: > "$TMP/attach"; : > "$TMP/ip"
for i in $(seq "$ROUNDS"); do
	t0=$(now_ns)
	"$EFICTL" --socket "$TMP/run/efid.sock" attach "${P}a" --name "e$i" --address "10.77.$i.1/24" --uplink "${P}br" >/dev/null
	t1=$(now_ns); echo $((t1 - t0)) >> "$TMP/attach"
	t0=$(now_ns)
	ip link add "${P}h$i" type veth peer name "i$i" netns "${P}a"
	ip link set "${P}h$i" master "${P}br" up
	ip -n "${P}a" addr add "10.78.$i.1/24" dev "i$i"
	ip -n "${P}a" link set "i$i" up
	t1=$(now_ns); echo $((t1 - t0)) >> "$TMP/ip"
done
attach=$(median < "$TMP/attach"); iproute=$(median < "$TMP/ip")
stop_efid

# --- start-up with ROUNDS interfaces to reconcile ---
: > "$TMP/start2"
for _ in $(seq 5); do
	t0=$(now_ns); start_efid; t1=$(now_ns); stop_efid
	echo $((t1 - t0)) >> "$TMP/start2"
done
start_full=$(median < "$TMP/start2")

printf '\n%-44s %12s %12s\n' "what (median)" "EFI" "baseline"
printf '%-44s %9s ms %9s ms   (baseline: sqlite3 quick_check of the same db)\n' "efid start-up to socket answering, empty db" "$(ms "$start_empty")" "$(ms "$sqlite_open")"
printf '%-44s %9s ms %12s\n' "efid start-up with $ROUNDS interfaces reconciled" "$(ms "$start_full")" "-"
printf '%-44s %9s ms %9s ms   (baseline: 4 iproute2 commands, same kernel work)\n' "efictl attach (veth, netns, address, bridge)" "$(ms "$attach")" "$(ms "$iproute")"
echo "rounds: $ROUNDS; start-up timed from exec to the first answered efictl list"
