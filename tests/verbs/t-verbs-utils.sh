#!/bin/bash
# Debian's ibverbs-utils, unmodified, over EFI between the instances of two
# hosts: ibv_devices and ibv_devinfo -v show the interface (GIDs at the
# indexes efictl shows, port state, MTU, a stable GUID), every ibv_* they
# call binds to libefi-verbs (LD_DEBUG=bindings), ibv_rc_pingpong -g 0 and ibv_ud_pingpong -g 0
# completes with and without -e, reporting its bandwidth.  Cost: ~10 s.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/verbs/lib.sh
. "$(dirname "$0")/lib.sh"
verbs_init vu
verbs_need ibv_devices ibverbs-utils
verbs_need ibv_rc_pingpong ibverbs-utils
dp_two_hosts

log "ibv_devices"
out=$(va ibv_devices) || fail "ibv_devices failed: $out"
printf '%s\n' "$out"
guid=$(awk '$1 == "efi0" {print $2}' <<<"$out")
if ! [[ $guid =~ ^[0-9a-f]{16}$ ]] || [ "$guid" = 0000000000000000 ]; then
	fail "ibv_devices: no efi0 with a GUID in: $out"
fi
again=$(va ibv_devices | awk '$1 == "efi0" {print $2}')
assert_eq "$guid" "$again" "the node GUID is stable across processes"
other=$(vb ibv_devices | awk '$1 == "efi0" {print $2}')
assert_ne "$guid" "$other" "the other instance's efi0 GUID"

log "ibv_devinfo -v"
out=$(va ibv_devinfo -v) || fail "ibv_devinfo -v failed: $out"
printf '%s\n' "$out" | sed -n '1,12p;/port:/,$p'
vmatch 'hca_id:[[:space:]]+efi0' "$out" "devinfo hca_id"
vmatch "node_guid:[[:space:]]+${guid:0:4}:${guid:4:4}:${guid:8:4}:${guid:12:4}" "$out" "devinfo node_guid = ibv_devices'"
vmatch 'state:[[:space:]]+PORT_ACTIVE' "$out" "port state"
vmatch 'link_layer:[[:space:]]+Ethernet' "$out" "link layer"
vmatch 'active_mtu:[[:space:]]+1024 \(3\)' "$out" "active MTU of a 1500-byte interface"
# the GIDs at the indexes efictl status shows
status=$(in_a "$EFICTL" status) || fail "efictl status failed"
mapfile -t gids < <(sed -n '/GIDs/,/^ *[a-z]/p' <<<"$status" | grep -oE '[0-9]+ +[0-9a-f:.]+:[0-9a-f:.]*$')
[ ${#gids[@]} -ge 1 ] || fail "no GIDs in efictl status: $status"
for g in "${gids[@]}"; do
	read -r idx addr <<<"$g"
	vmatch "GID\[ *$idx\]:[[:space:]]+$addr, RoCE v2" "$out" "GID $idx ($addr) as efictl shows it"
done
vmatch "GID\[ *0\]:[[:space:]]+::ffff:$IP_A" "$out" "GID 0 is the IPv4-mapped address"

log "LD_DEBUG=bindings: ibv_devinfo's ibv_* calls land in libefi-verbs"
in_a env LD_DEBUG=bindings LD_DEBUG_OUTPUT="$TMPD/bind" "${VERBS_FOREIGN_ENV[@]}" "$EFI_RUN" ibv_devinfo >/dev/null ||
	fail "ibv_devinfo under LD_DEBUG failed"
# the references of the program and the libraries it loads (libibverbs'
# relocations against itself are resolved at load time but never called)
binds=$(cat "$TMPD"/bind.* | grep -E "normal symbol \`_?ibv_" | grep -v 'binding file [^ ]*libibverbs\.so')
ours=$(grep -c 'libefi-verbs.so' <<<"$binds")
theirs=$(grep -v 'libefi-verbs.so' <<<"$binds" | grep -c 'libibverbs.so' || true)
log "ibv_* bindings: $ours to libefi-verbs, $theirs to libibverbs"
[ "$ours" -ge 5 ] || fail "too few bindings to libefi-verbs: $binds"
[ "$theirs" = 0 ] || fail "ibv_* bound to the real libibverbs: $(grep -v 'libefi-verbs.so' <<<"$binds")"

# pingpong SERVER-ARGS...: server in A, client in B with the same args
# (PP: ibv_rc_pingpong, or ibv_ud_pingpong for UD QPs)
PP=ibv_rc_pingpong
pingpong() {
	local spid crc=0 src=0
	va timeout -k 5 40 "$PP" "$@" >"$TMPD/pp.s" 2>&1 &
	spid=$!
	TRACK_BGPIDS+=("$spid")
	verbs_wait_listen "$A" 18515
	vb timeout -k 5 40 "$PP" "$@" "$IP_A" >"$TMPD/pp.c" 2>&1 || crc=$?
	wait "$spid" || src=$?
	sed 's/^/    server: /' "$TMPD/pp.s"
	sed 's/^/    client: /' "$TMPD/pp.c"
	if [ "$crc" != 0 ] || [ "$src" != 0 ]; then
		fail "$PP $*: client exit $crc, server exit $src"
	fi
	for f in "$TMPD/pp.s" "$TMPD/pp.c"; do
		vmatch '[0-9]+ bytes in [0-9.]+ seconds = [0-9.]+ Mbit/sec' "$(cat "$f")" "pingpong bandwidth line"
		vmatch 'GID ::ffff:10\.77\.0\.' "$(cat "$f")" "pingpong addresses are the GIDs"
	done
}
log "ibv_rc_pingpong -g 0"
pingpong -g 0 -n 500
log "ibv_rc_pingpong -g 0 -e (completion events)"
pingpong -g 0 -e -n 500
# UD QPs: address handles, datagrams of the port's MTU with their GRH
# (ibv_ud_pingpong checks the messages' count, not their bytes)
PP=ibv_ud_pingpong
log "ibv_ud_pingpong -g 0 -s 1024"
pingpong -g 0 -s 1024 -n 500
log "ibv_ud_pingpong -g 0 -e (completion events)"
pingpong -g 0 -e -n 200
