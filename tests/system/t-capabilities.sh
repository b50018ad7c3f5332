#!/bin/bash
# efid does its whole job with only the capabilities efid.service grants:
# the test reads CapabilityBoundingSet= from the generated unit and runs efid
# under setpriv with exactly that bounding set (and no inheritable ones), then
# attaches, queries as an unprivileged user on the host and inside the
# instance (which needs CAP_SYS_PTRACE to identify the caller's namespace),
# and detaches.
: "${top_srcdir:?run through make check (top_srcdir is not set)}"
# shellcheck source=tests/system/lib.sh
. "$top_srcdir/tests/system/lib.sh"

need_root
need_cmd setpriv
need_cmd ip
[ -x "$EFID" ] || fail "efid is not built at $EFID"
[ -x "$EFICTL" ] || fail "efictl is not built at $EFICTL"
UNIT="$top_builddir/systemd/efid.service"
[ -f "$UNIT" ] || fail "systemd/efid.service was not generated (run make)"

# "CAP_NET_ADMIN CAP_SYS_ADMIN" -> "-all,+net_admin,+sys_admin"
caps=$(sed -n 's/^CapabilityBoundingSet=//p' "$UNIT")
[ -n "$caps" ] || fail "no CapabilityBoundingSet= in $UNIT"
bounding="-all"
for c in $caps; do
	c=${c#CAP_}
	bounding="$bounding,+${c,,}"
done
echo "efid runs with bounding set: $bounding"

make_tmpdir
# Unprivileged clients must reach the socket: open the path to it.
chmod 0755 "$TEST_TMP"
mkdir -p "$TEST_TMP/state" "$TEST_TMP/run"
chmod 0755 "$TEST_TMP/run"
write_test_config "$TEST_TMP/efid.conf"
SOCK="$TEST_TMP/run/efid.sock"
INST=efcap-$$
BRIDGE=efcapbr-$$
NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all --bounding-set=-all)

remove_net() {
	ip netns delete "$INST" 2>/dev/null
	ip link delete "$BRIDGE" 2>/dev/null
	return 0
}
at_exit remove_net

ip netns add "$INST" || fail "ip netns add $INST"
ip link add "$BRIDGE" type bridge || fail "ip link add $BRIDGE"
ip link set "$BRIDGE" up

setpriv --bounding-set="$bounding" --inh-caps=-all -- \
	"$EFID" --config "$TEST_TMP/efid.conf" --state-dir "$TEST_TMP/state" \
	--runtime-dir "$TEST_TMP/run" --log-level debug > "$TEST_TMP/efid.log" 2>&1 &
EFID_PID=$!
track_pid "$EFID_PID"
wait_for 15 test -S "$SOCK" || fail "efid did not come up"
grep -E '^Cap(Bnd|Eff)' "/proc/$EFID_PID/status"

"$EFICTL" --socket "$SOCK" attach "$INST" --address 10.214.0.1/24 --name efi0 \
	--uplink "$BRIDGE" || fail "attach with the unit's capabilities failed"
ip -n "$INST" -br addr show dev efi0 | grep -q '10\.214\.0\.1/24' \
	|| fail "efi0 is not addressed inside $INST"

# An unprivileged user on the host may read everything (but not change it).
"${NOBODY[@]}" "$EFICTL" --socket "$SOCK" --json status > "$TEST_TMP/host.json" \
	|| fail "status as an unprivileged host user failed"
grep -q "$INST" "$TEST_TMP/host.json" || fail "host user does not see $INST"

# Inside the instance, an unprivileged process sees its own instance: efid
# must identify the caller's namespace through /proc/PID/ns/net.
ip netns exec "$INST" "${NOBODY[@]}" "$EFICTL" --socket "$SOCK" --json status \
	> "$TEST_TMP/inst.json" || fail "status from inside the instance as nobody failed"
grep -q "$INST" "$TEST_TMP/inst.json" || fail "the instance does not see itself"

"$EFICTL" --socket "$SOCK" detach "$INST" efi0 || fail "detach with the unit's capabilities failed"
kill -TERM "$EFID_PID"
rc=0
wait "$EFID_PID" || rc=$?
[ "$rc" -eq 0 ] || fail "efid exited $rc on SIGTERM"
echo "PASS: $TEST_NAME"
