#!/bin/bash
# The shipped examples work as shipped: the interface files that
# etc/cloud-init.yaml writes and etc/interfaces.d/example.conf.example are
# applied by a real efid through `efictl apply` (twice: apply is
# idempotent), and every efid this suite starts reads etc/efid.conf
# (lib.sh's write_test_config).  Instance and bridge names are made unique
# for the test; everything else is the files' own text.
: "${top_srcdir:?run through make check (top_srcdir is not set)}"
# shellcheck source=tests/system/lib.sh
. "$top_srcdir/tests/system/lib.sh"

need_root
need_cmd ip
[ -x "$EFID" ] || fail "efid is not built at $EFID"
[ -x "$EFICTL" ] || fail "efictl is not built at $EFICTL"

make_tmpdir
mkdir -p "$TEST_TMP/state" "$TEST_TMP/run" "$TEST_TMP/ifaces"
write_test_config "$TEST_TMP/efid.conf"
SOCK="$TEST_TMP/run/efid.sock"
PREFIX=efex-$$
BRIDGE=efexbr-$$
INSTANCES=("$PREFIX-vm1" "$PREFIX-vm2" "$PREFIX-vm3")

remove_net() {
	local i
	for i in "${INSTANCES[@]}"; do
		ip netns delete "$i" 2>/dev/null
	done
	ip link delete "$BRIDGE" 2>/dev/null
	return 0
}
at_exit remove_net

unique_names() {
	sed -e "s/^Instance=\(vm[0-9]\)\$/Instance=$PREFIX-\1/" -e "s/^Uplink=br-efi\$/Uplink=$BRIDGE/"
}

# The write_files contents of the cloud-config: the indented block after
# each "content: |".
awk -v dir="$TEST_TMP/ifaces" '
	/^[[:space:]]*content:[[:space:]]*\|[[:space:]]*$/ {
		n++; file = sprintf("%s/cloud-init-%d.conf", dir, n); inblock = 1; indent = -1; next
	}
	inblock {
		if ($0 ~ /^[[:space:]]*$/) { print "" > file; next }
		match($0, /^[[:space:]]*/)
		if (indent < 0) indent = RLENGTH
		if (RLENGTH < indent) { inblock = 0; next }
		print substr($0, indent + 1) > file
	}' "$top_srcdir/etc/cloud-init.yaml"
count=$(find "$TEST_TMP/ifaces" -name 'cloud-init-*.conf' | wc -l)
[ "$count" -ge 1 ] || fail "found no write_files content in etc/cloud-init.yaml"
for f in "$TEST_TMP"/ifaces/cloud-init-*.conf; do
	unique_names < "$f" > "$f.new" && mv "$f.new" "$f"
done
# The example is installed as .example (not applied); here it is applied,
# to an instance of its own and with its own addresses (the cloud-init files
# use the same ones).
sed -e "s/^Instance=vm1\$/Instance=$PREFIX-vm3/" -e 's/^Address=10\.77\.0\.5/Address=10.77.0.7/' \
	-e 's/^Address=fd00:77::5/Address=fd00:77::7/' \
	"$top_srcdir/etc/interfaces.d/example.conf.example" > "$TEST_TMP/ifaces/example.conf"
head -n 50 "$TEST_TMP"/ifaces/*.conf

for i in "${INSTANCES[@]}"; do
	ip netns add "$i" || fail "ip netns add $i"
done
ip link add "$BRIDGE" type bridge || fail "ip link add $BRIDGE"
ip link set "$BRIDGE" up

"$EFID" --config "$TEST_TMP/efid.conf" --state-dir "$TEST_TMP/state" \
	--runtime-dir "$TEST_TMP/run" > "$TEST_TMP/efid.log" 2>&1 &
track_pid $!
wait_for 15 "$EFICTL" --socket "$SOCK" list >/dev/null 2>&1 || fail "efid did not come up"

"$EFICTL" --socket "$SOCK" apply "$TEST_TMP/ifaces" || fail "efictl apply of the shipped examples failed"
"$EFICTL" --socket "$SOCK" apply "$TEST_TMP/ifaces" || fail "applying the examples again failed (not idempotent)"
"$EFICTL" --socket "$SOCK" --json status > "$TEST_TMP/status.json" || fail "efictl status failed"
for i in "${INSTANCES[@]}"; do
	ip -n "$i" link show efi0 >/dev/null 2>&1 || fail "$i has no efi0 after apply"
	grep -q "\"$i\"" "$TEST_TMP/status.json" || fail "efictl status does not list $i"
done
ip -n "$PREFIX-vm3" -br addr show dev efi0 | grep -q '10\.77\.0\.7/24' \
	|| fail "the interfaces.d example did not give $PREFIX-vm3 efi0 with 10.77.0.7/24"

echo "PASS: $TEST_NAME"
