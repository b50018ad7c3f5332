#!/bin/bash
# efi-cni driven exactly as a container runtime drives a CNI plugin: the
# CNI_* environment (and nothing else of ours), the network configuration on
# stdin, the spec's result or error JSON on stdout, checked with jq.
#
# Two pods: A is a namespace with an `ip netns add` name, reached by the
# path /var/run/netns/A; B is a process unshared into a namespace of its own
# and reached only as /proc/PID/ns/net.  ADD both (addresses from a range
# file), CHECK, a restart of efid (B's namespace is found again by its
# path), efi-perf from B to A, DEL both, DEL again, DEL after the namespace
# is gone (both kinds), VERSION, and errors with the spec's codes.
# shellcheck disable=SC2016 # jq programs
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/data/lib.sh
. "$(dirname "$0")/../data/lib.sh"
dp_init ki
: "${EFI_CNI:=$top_builddir/cni/efi-cni}"
[ -x "$EFI_CNI" ] || fail "efi-cni not built at $EFI_CNI"
if ! command -v unshare >/dev/null || ! command -v nsenter >/dev/null; then
	skip "unshare and nsenter (util-linux) are needed"
fi

BR=${PFX}br
A=${PFX}a
mk_bridge "$BR"
mk_netns "$A"
efid_start main
SOCKM=${EFID_SOCK[main]}
PATHS=$TMPD/main/run/netns-paths
DATA=$TMPD/cni-data
NS_A=/var/run/netns/$A
CID_A=${PFX}-pod-a
CID_B=${PFX}-pod-b

# pod_process: a process unshared into a new network namespace (lo up, no
# DAD), as a runtime's pause container; sets PODPID once it is in there.
pod_process() {
	bg_track unshare --net sh -c 'ip link set lo up
		sysctl -qw net.ipv6.conf.default.accept_dad=0 net.ipv6.conf.all.accept_dad=0
		exec sleep 600'
	PODPID=$BGPID
	wait_for 5000 "pod process $PODPID in its namespace" \
		sh -c "[ \"\$(readlink /proc/$PODPID/ns/net)\" != \"\$(readlink /proc/self/ns/net)\" ] &&
			[ \"\$(readlink /proc/$PODPID/exe)\" != \"\$(readlink -f /usr/bin/unshare)\" ]"
}
pod_process
PID_B=$PODPID
NS_B=/proc/$PID_B/ns/net
in_pod_b() { nsenter --net="$NS_B" "$@"; }

# conf [jq assignments]: the network configuration.  The range has two
# addresses, so a third pod finds it used up.
conf() {
	jq -cn --arg br "$BR" --arg sock "$SOCKM" --arg dd "$DATA" \
		'{cniVersion: "1.0.0", name: "efinet", type: "efi-cni", uplink: $br,
		  efidSocket: $sock, dataDir: $dd,
		  range: {subnet: "10.78.0.0/24", rangeStart: "10.78.0.10", rangeEnd: "10.78.0.11"}}
		 '"${1:+| $1}"
}

# cni CMD CID NETNS IFNAME [STDIN]: runs the plugin with only the CNI
# environment; OUT is its stdout, RC its status.  NETNS "-" leaves
# CNI_NETNS out.
cni() {
	local cmd=$1 cid=$2 netns=$3 ifname=$4 input=${5-$(conf)} e=()
	[ "$cmd" = - ] || e+=("CNI_COMMAND=$cmd")
	[ "$cid" = - ] || e+=("CNI_CONTAINERID=$cid")
	[ "$netns" = - ] || e+=("CNI_NETNS=$netns")
	[ "$ifname" = - ] || e+=("CNI_IFNAME=$ifname")
	RC=0
	OUT=$(env -i PATH="$PATH" "${e[@]}" CNI_PATH=/opt/cni/bin CNI_ARGS="K8S_POD_NAMESPACE=t" \
		timeout 60 "$EFI_CNI" <<<"$input" 2>"$TMPD/cni.err") || RC=$?
	ERR=$(cat "$TMPD/cni.err")
}

# cni_ok ...: cni that must succeed.
cni_ok() {
	cni "$@"
	[ "$RC" = 0 ] || fail "efi-cni $1 for $2 exited $RC: $OUT $ERR"
}

# cni_err CODE ...: cni that must fail with the spec's error JSON and CODE.
cni_err() {
	local code=$1
	shift
	cni "$@"
	[ "$RC" != 0 ] || fail "efi-cni $1 for $2 succeeded, expected error $code: $OUT"
	jq -e --argjson c "$code" '.cniVersion == "1.0.0" and .code == $c and (.msg | length > 0)' \
		<<<"$OUT" >/dev/null || fail "efi-cni $1 for $2: expected error code $code, got: $OUT $ERR"
	log "error $code as expected: $(jq -r .msg <<<"$OUT")"
}

# efid_iface INSTANCE IFNAME: the interface as efictl list --json shows it
efid_iface() {
	ctl_on main --json list | jq -c --arg i "$1" --arg n "$2" \
		'[.instances[]? | select(.name == $i) | .interfaces[]? | select(.name == $n)]
		 | .[0] // empty'
}

log "ADD pod A by /var/run/netns/NAME"
cni_ok ADD "$CID_A" "$NS_A" eth1
RES_A=$OUT
printf '%s\n' "$RES_A"
jq -e --arg ns "$NS_A" '.cniVersion == "1.0.0" and (.interfaces | length) == 1
	and .interfaces[0].name == "eth1" and .interfaces[0].sandbox == $ns
	and (.interfaces[0].mac | test("^[0-9a-f]{2}(:[0-9a-f]{2}){5}$"))
	and .ips == [{address: "10.78.0.10/24", interface: 0}]' <<<"$RES_A" >/dev/null ||
	fail "ADD A: unexpected result: $RES_A"
ns_has_addr "$A" eth1 10.78.0.10/24 || fail "eth1 in $A lacks 10.78.0.10/24"
MAC_A=$(ip -n "$A" -j link show dev eth1 | jq -r '.[0].address')
assert_eq "$MAC_A" "$(jq -r '.interfaces[0].mac' <<<"$RES_A")" "the result's MAC is eth1's"
# the namespace already had a name: the instance is that name
[ -n "$(efid_iface "$A" eth1)" ] || fail "efid has no $A/eth1: $(ctl_on main --json list)"

log "ADD pod B by /proc/$PID_B/ns/net"
cni_ok ADD "$CID_B" "$NS_B" eth1
RES_B=$OUT
printf '%s\n' "$RES_B"
jq -e --arg ns "$NS_B" '.interfaces[0].name == "eth1" and .interfaces[0].sandbox == $ns
	and .ips == [{address: "10.78.0.11/24", interface: 0}]' <<<"$RES_B" >/dev/null ||
	fail "ADD B: unexpected result: $RES_B"
in_pod_b ip -j addr show dev eth1 | jq -e '[.[].addr_info[] | "\(.local)/\(.prefixlen)"] |
	index("10.78.0.11/24") != null' >/dev/null || fail "eth1 in pod B lacks 10.78.0.11/24"
INST_B=efi-$CID_B
[ -n "$(efid_iface "$INST_B" eth1)" ] || fail "efid has no $INST_B/eth1: $(ctl_on main --json list)"
[ -f "$PATHS/$INST_B" ] || fail "efid did not record pod B's namespace path in $PATHS"
assert_match "^[0-9]+ [0-9]+ $NS_B\$" "$(cat "$PATHS/$INST_B")" "the path record"
assert_eq "" "$(ip netns list | awk '{print $1}' | grep -x "$INST_B")" \
	"no /run/netns name is made for pod B"

log "ADD again is idempotent: same address, efid reports it unchanged"
cni_ok ADD "$CID_A" "$NS_A" eth1
jq -e '.ips[0].address == "10.78.0.10/24"' <<<"$OUT" >/dev/null || fail "re-ADD A: $OUT"

log "a third pod finds the range used up; nothing is left of it"
C=${PFX}c
mk_netns "$C"
cni_err 102 ADD "${PFX}-pod-c" "/var/run/netns/$C" eth1
assert_eq "" "$(efid_iface "efi-${PFX}-pod-c" eth1)$(efid_iface "$C" eth1)" "no interface for pod C"
[ ! -e "$DATA/efinet/att-${PFX}-pod-c-eth1" ] || fail "a record was left for pod C"

log "CHECK both, with the runtime's prevResult"
cni_ok CHECK "$CID_A" "$NS_A" eth1 "$(conf ".prevResult = $RES_A")"
assert_eq "" "$OUT" "CHECK prints nothing"
cni_ok CHECK "$CID_B" "$NS_B" eth1 "$(conf ".prevResult = $RES_B")"

log "CHECK fails when things are not as added"
ip -n "$A" link set eth1 down
cni_err 101 CHECK "$CID_A" "$NS_A" eth1
ip -n "$A" link set eth1 up
in_pod_b ip addr del 10.78.0.11/24 dev eth1
cni_err 101 CHECK "$CID_B" "$NS_B" eth1
in_pod_b ip addr add 10.78.0.11/24 dev eth1
cni_err 101 CHECK "$CID_A" "$NS_A" eth1 "$(conf '.prevResult = {cniVersion: "1.0.0",
	interfaces: [{name: "eth1"}], ips: [{address: "10.78.0.99/24", interface: 0}]}')"
cni_err 101 CHECK "$CID_A" "$NS_A" eth2
cni_ok CHECK "$CID_A" "$NS_A" eth1

log "efid restarts: pod B's namespace is found again by its path"
efid_stop main
efid_launch main
cni_ok CHECK "$CID_B" "$NS_B" eth1 "$(conf ".prevResult = $RES_B")"
jq -e '.state == "attached"' <<<"$(efid_iface "$INST_B" eth1)" >/dev/null ||
	fail "after the restart: $(efid_iface "$INST_B" eth1)"

log "efi-perf from pod B (known to efid only by its path) to pod A"
settle "$A"
wait_for 5000 "ping B -> A" in_pod_b ping -c 1 -W 1 10.78.0.10
ip netns exec "$A" env EFI_SOCKET="$SOCKM" timeout -k 5 120 "$EFI_PERF" send_lat \
	>"$TMPD/perf.sout" 2>"$TMPD/perf.serr" &
spid=$!
TRACK_BGPIDS+=("$spid")
crc=0
in_pod_b env EFI_SOCKET="$SOCKM" timeout -k 5 120 "$EFI_PERF" send_lat -s 64 -n 2000 10.78.0.10 \
	>"$TMPD/perf.cout" 2>"$TMPD/perf.cerr" || crc=$?
src=0
[ "$crc" = 0 ] || { sleep 1; pid_running "$spid" && kill "$spid"; }
wait "$spid" || src=$?
cat "$TMPD/perf.cout"
if [ "$crc" != 0 ] || [ "$src" != 0 ]; then
	fail "efi-perf: client $crc, server $src: $(cat "$TMPD/perf.cerr" "$TMPD/perf.serr")"
fi
awk '$1 == 64 && $2 == 2000 {found = 1} END {exit !found}' "$TMPD/perf.cout" ||
	fail "efi-perf: no row for 64 bytes x 2000"

log "DEL both; then DEL again (idempotent)"
cni_ok DEL "$CID_A" "$NS_A" eth1
assert_eq "" "$OUT" "DEL prints nothing"
cni_ok DEL "$CID_B" "$NS_B" eth1
assert_eq "" "$(efid_iface "$A" eth1)$(efid_iface "$INST_B" eth1)" "efid keeps no interface"
assert_eq "" "$(ls "$PATHS")" "efid let go of pod B's namespace"
assert_eq "" "$(find "$DATA/efinet" -mindepth 1 ! -name lock)" "no allocation or record is left"
in_pod_b ip link show eth1 >/dev/null 2>&1 && fail "eth1 is still in pod B"
cni_ok DEL "$CID_A" "$NS_A" eth1
cni_ok DEL "$CID_B" "$NS_B" eth1
cni_ok DEL "$CID_B" - eth1

log "two ADDs at once take different range addresses (the state lock)"
for p in A B; do
	ns=$NS_A cid=$CID_A
	[ "$p" = B ] && ns=$NS_B cid=$CID_B
	env -i PATH="$PATH" CNI_COMMAND=ADD CNI_CONTAINERID="$cid" CNI_NETNS="$ns" CNI_IFNAME=eth1 \
		CNI_PATH=/opt/cni/bin timeout 60 "$EFI_CNI" <<<"$(conf)" >"$TMPD/par-$p.out" 2>&1 &
	TRACK_BGPIDS+=("$!")
	eval "PAR_$p=\$!"
done
wait "$PAR_A" || fail "concurrent ADD A: $(cat "$TMPD/par-A.out")"
wait "$PAR_B" || fail "concurrent ADD B: $(cat "$TMPD/par-B.out")"
assert_eq "10.78.0.10/24 10.78.0.11/24" "$(jq -r '.ips[0].address' "$TMPD/par-A.out" "$TMPD/par-B.out" |
	sort | xargs)" "the two pods' addresses"
cni_ok DEL "$CID_A" "$NS_A" eth1
cni_ok DEL "$CID_B" "$NS_B" eth1

log "DEL after the namespace is gone: a pod process that exited"
pod_process
PID_B2=$PODPID
cni_ok ADD "${CID_B}2" "/proc/$PID_B2/ns/net" eth1
[ -n "$(efid_iface "efi-${CID_B}2" eth1)" ] || fail "no interface for the second pod B"
kill "$PID_B2"
wait "$PID_B2" 2>/dev/null
[ ! -e "/proc/$PID_B2/ns/net" ] || fail "pod process $PID_B2 still there"
cni_ok DEL "${CID_B}2" "/proc/$PID_B2/ns/net" eth1
assert_eq "" "$(efid_iface "efi-${CID_B}2" eth1)" "the interface is gone from efid"
assert_eq "" "$(ls "$PATHS")" "efid let go of the namespace"
no_host_devices || fail "host devices left: $(host_efi_devices)"

log "DEL after the pod went while efid was down"
pod_process
PID_B3=$PODPID
cni_ok ADD "${CID_B}3" "/proc/$PID_B3/ns/net" eth1
efid_stop main
kill "$PID_B3"
wait "$PID_B3" 2>/dev/null
efid_launch main
assert_eq "" "$(ls "$PATHS")" "the restarted efid dropped the record of a path that is gone"
jq -e '.state == "missing"' <<<"$(efid_iface "efi-${CID_B}3" eth1)" >/dev/null ||
	fail "the interface of the gone pod should be missing: $(efid_iface "efi-${CID_B}3" eth1)"
cni_ok DEL "${CID_B}3" "/proc/$PID_B3/ns/net" eth1
assert_eq "" "$(efid_iface "efi-${CID_B}3" eth1)" "DEL finished it"
no_host_devices || fail "host devices left: $(host_efi_devices)"

log "DEL after the namespace is gone: ip netns del"
cni_ok ADD "$CID_A" "$NS_A" eth1
ip netns del "$A"
cni_ok DEL "$CID_A" "$NS_A" eth1
cni_ok DEL "$CID_A" - eth1
assert_eq "" "$(efid_iface "$A" eth1)" "the interface is gone from efid"
no_host_devices || fail "host devices left: $(host_efi_devices)"
assert_eq "" "$(find "$DATA/efinet" -mindepth 1 ! -name lock)" "no allocation or record is left"

log "VERSION"
cni_ok VERSION - - - '{"cniVersion": "1.0.0"}'
jq -e '.cniVersion == "1.0.0" and (.supportedVersions | index("1.0.0") != null)' <<<"$OUT" \
	>/dev/null || fail "VERSION: $OUT"

log "errors, with the spec's codes"
cni_err 6 ADD "$CID_A" "/var/run/netns/$C" eth1 '{"cniVersion": "1.0.0", '
cni_err 6 ADD "$CID_A" "/var/run/netns/$C" eth1 ''
cni_err 4 - "$CID_A" "/var/run/netns/$C" eth1
cni_err 4 ADD - "/var/run/netns/$C" eth1
cni_err 4 ADD "$CID_A" - eth1
cni_err 4 CHECK "$CID_A" - eth1
cni_err 4 ADD "$CID_A" "/var/run/netns/$C" -
cni_err 4 DEL "../$CID_A" - eth1
cni_err 1 ADD "$CID_A" "/var/run/netns/$C" eth1 "$(conf '.cniVersion = "0.3.1"')"
cni_err 2 ADD "$CID_A" "/var/run/netns/$C" eth1 "$(conf '.ipam = {type: "host-local"}')"
cni_err 7 ADD "$CID_A" "/var/run/netns/$C" eth1 "$(conf '.mtu = "big"')"
cni_err 3 ADD "$CID_A" "/var/run/netns/${PFX}nothere" eth1
cni_err 100 ADD "$CID_A" /etc/hostname eth1
assert_match 'not a network namespace' "$(jq -r .details <<<"$OUT")" "efid's reason"
cni_err 100 ADD "$CID_A" /dev/null eth1
assert_match 'not a network namespace' "$(jq -r .details <<<"$OUT")" "efid's reason"
cni_err 100 ADD "$CID_A" "/proc/$$/ns/net" eth1
assert_match "host's own network namespace" "$(jq -r .details <<<"$OUT")" "efid's reason"
cni_err 100 ADD "$CID_A" $'/var/run/netns/x\ny' eth1
assert_match "one line" "$(jq -r .details <<<"$OUT")" "efid's reason"
cni_err 11 ADD "$CID_A" "/var/run/netns/$C" eth1 "$(conf ".efidSocket = \"$TMPD/none.sock\"")"
cni_err 11 DEL "$CID_A" - eth1 "$(conf ".efidSocket = \"$TMPD/none.sock\"")"
assert_eq "" "$(ctl_on main --json list | jq -c '[.instances[]?.interfaces[]?]' | grep -v '^\[\]$')" \
	"no failed request left an interface"
assert_eq "" "$(ls "$PATHS")" "no failed request left a namespace record"
assert_eq "" "$(find "$DATA/efinet" -mindepth 1 ! -name lock)" "no failed request left an allocation"

log "a member of [Control] Group= may attach, but not to a namespace by its path"
if command -v setpriv >/dev/null && command -v useradd >/dev/null; then
	GRP=${PFX}g
	USR=${PFX}u
	groupadd -r "$GRP" || fail "groupadd $GRP failed"
	track_group "$GRP"
	useradd -r -M -N -g 65534 -G "$GRP" -s /usr/sbin/nologin -d /nonexistent "$USR" ||
		fail "useradd $USR failed"
	track_user "$USR"
	efid_stop main
	efid_config main Control.Group="$GRP"
	efid_launch main
	# the plugin and its state where the member can reach them
	cp "$EFI_CNI" "$TMPD/efi-cni" && chmod 755 "$TMPD/efi-cni"
	mkdir -p "$TMPD/cni-member" && chmod 777 "$TMPD/cni-member"
	OUT=$(setpriv --reuid="$USR" --regid=65534 --init-groups env -i CNI_COMMAND=ADD \
		CNI_CONTAINERID="${PFX}-pod-m" CNI_NETNS="/var/run/netns/$C" CNI_IFNAME=eth1 \
		CNI_PATH=/opt/cni/bin timeout 60 "$TMPD/efi-cni" \
		<<<"$(conf ".dataDir = \"$TMPD/cni-member\"")") && fail "a group member's ADD succeeded: $OUT"
	jq -e '.code == 100 and (.details | test("needs root"))' <<<"$OUT" >/dev/null ||
		fail "a group member's ADD: expected error 100 (needs root), got: $OUT"
	# ... though the member may attach by name
	assert_exit 0 timeout -k 2 "$CTL_TIMEOUT" setpriv --reuid="$USR" --regid=65534 --init-groups \
		"$EFICTL" --socket "$SOCKM" attach "$C" --name efi0 --address 10.78.0.30/24 --uplink "$BR"
	assert_exit 0 ctl_on main detach "$C" efi0
	assert_eq "" "$(ls "$PATHS")" "the refused request left no namespace record"
else
	log "(skipped: setpriv or useradd missing)"
fi
