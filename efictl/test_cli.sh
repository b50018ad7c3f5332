#!/bin/sh
# SPDX-License-Identifier: MIT
# efictl from the outside: argument parsing, usage errors and exit codes, the
# unreachable-daemon path, timeouts and malformed replies (against small fake
# servers), and, when run as root with efid built, attach/status/list/detach/
# apply end to end in network namespaces this script creates and removes.
set -u

EFICTL=${EFICTL:-$(pwd)/efictl/efictl}
EFID=${EFID:-$(pwd)/efid/efid}
TMP=$(mktemp -d /tmp/efictl-test.XXXXXX)
TAG=ect$$
failures=0
EFID_PID=
FAKE_PID=

cleanup() {
	[ -n "$FAKE_PID" ] && kill "$FAKE_PID" 2>/dev/null
	if [ -n "$EFID_PID" ]; then
		# Detach through efid first, so nothing it created is left behind.
		EFI_SOCKET=$TMP/run/efid.sock "$EFICTL" --timeout 5 detach ${TAG}a --all >/dev/null 2>&1
		EFI_SOCKET=$TMP/run/efid.sock "$EFICTL" --timeout 5 detach ${TAG}b --all >/dev/null 2>&1
		kill "$EFID_PID" 2>/dev/null
		wait "$EFID_PID" 2>/dev/null
	fi
	ip netns del ${TAG}a 2>/dev/null
	ip netns del ${TAG}b 2>/dev/null
	ip link del ${TAG}br 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

fail() {
	echo "FAIL: $*"
	failures=$((failures + 1))
}

# expect RC PATTERN -- efictl ARGS: runs efictl, checks the exit code and that
# stdout+stderr contain PATTERN (a fixed string; "" matches anything).
expect() {
	want_rc=$1
	pattern=$2
	shift 3
	out=$("$EFICTL" "$@" 2>&1)
	rc=$?
	if [ "$rc" -ne "$want_rc" ]; then
		fail "efictl $*: exit $rc, expected $want_rc; output: $out"
	elif [ -n "$pattern" ] && ! printf '%s' "$out" | grep -qF -- "$pattern"; then
		fail "efictl $*: output lacks '$pattern': $out"
	else
		echo "ok: efictl $* -> $rc"
	fi
}

# json_ok CMD...: stdout of efictl is one valid JSON document (jq or python3).
json_check() {
	if command -v jq >/dev/null 2>&1; then
		jq -e "$1" >/dev/null 2>&1
	elif command -v python3 >/dev/null 2>&1; then
		python3 -c 'import json,sys; json.load(sys.stdin)'
	else
		cat >/dev/null
	fi
}

json_expect() {
	filter=$1
	shift
	out=$("$EFICTL" "$@" 2>/dev/null)
	if printf '%s' "$out" | json_check "$filter"; then
		echo "ok: efictl $* | jq '$filter'"
	else
		fail "efictl $*: JSON check '$filter' failed on: $out"
	fi
}

export EFI_SOCKET=$TMP/nobody-listens.sock

echo "--- usage errors (exit 2)"
expect 2 "no command given" -- 
expect 0 "Exit status" -- --help
expect 0 "Usage: efictl attach" -- attach --help
expect 0 "Usage: efictl status" -- help show
expect 2 "unknown command 'frobnicate'" -- frobnicate
expect 2 "unknown option '--frob'" -- --frob list
expect 2 "unknown option '--frob'" -- list --frob
expect 2 "no INSTANCE given" -- attach
expect 2 "no --address given" -- attach vm1
expect 2 "has no prefix length" -- attach vm1 --address 10.0.0.5
expect 2 "too large" -- attach vm1 --address 10.0.0.5/33
expect 2 "not an IPv4 or IPv6 address" -- attach vm1 --address garbage/8
expect 2 "given twice" -- attach vm1 -a 10.0.0.5/24 -a 10.0.0.5/16
expect 2 "invalid instance name '../x'" -- attach ../x -a 10.0.0.5/24
expect 2 "not a valid interface name" -- attach vm1 -a 10.0.0.5/24 --name a/b
expect 2 "not a valid interface name" -- attach vm1 -a 10.0.0.5/24 --name 1234567890123456
expect 2 "--mtu '100' is invalid" -- attach vm1 -a 10.0.0.5/24 --mtu 100
expect 2 "--mtu '70000' is invalid" -- attach vm1 -a 10.0.0.5/24 --mtu 70000
expect 2 "--kind 'bond' is invalid" -- attach vm1 -a 10.0.0.5/24 --kind bond
expect 2 "'--address' needs a value" -- attach vm1 --address
expect 2 "which interface?" -- detach vm1
expect 2 "not both" -- detach vm1 efi0 --all
expect 2 "unexpected argument" -- detach vm1 efi0 extra
expect 2 "unexpected argument" -- status vm1 efi0 extra
expect 2 "invalid interface name" -- status vm1 'a b'
expect 2 "--timeout 'soon' is invalid" -- list --timeout soon
expect 2 "--socket needs a path" -- --socket= list
expect 2 "no FILE or DIR given" -- apply
json_expect '.error.code == "usage" and .error.errno == 22' --json attach vm1

echo "--- efid unreachable (exit 6)"
expect 6 "efid is not running (cannot connect to $EFI_SOCKET: No such file or directory): start it with \`systemctl start efid\`" -- list
expect 6 "set EFI_SOCKET or --socket" -- status
expect 6 "cannot connect to $TMP/other.sock" -- --socket "$TMP/other.sock" list
expect 6 "cannot connect to $TMP/other.sock" -- list --socket "$TMP/other.sock"
expect 6 "efid is not running" -- attach vm1 -a 10.0.0.5/24
expect 6 "efid is not running" -- detach vm1 --all
json_expect '.error.code == "unreachable" and .error.errno == 2' list --json
json_expect '.efid == null and .protocol == 1 and (.efictl | type) == "string"' version --json
expect 6 "efid      unknown" -- version

echo "--- apply: files are checked before efid is asked"
mkdir -p "$TMP/ifaces"
printf '[Interface]\nInstance=vm1\nAddress=10.0.0.999/24\n' >"$TMP/ifaces/bad.conf"
expect 2 "bad.conf:3: Address=" -- apply "$TMP/ifaces/bad.conf"
json_expect '.results == [] and (.errors | length) == 1' apply --json "$TMP/ifaces"
expect 3 "No such file or directory" -- apply "$TMP/missing"

# Fake servers: one that never answers, one that answers garbage, one whose
# reply is well framed but lacks what a LIST interface must carry.
if command -v python3 >/dev/null 2>&1; then
	echo "--- fake servers"
	cat >"$TMP/fake.py" <<'PY'
import os, socket, struct, sys
path, mode = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path); s.listen(8)
open(path + ".ready", "w").close()
def attr(t, v):
    a = struct.pack("<HH", t, len(v)) + v
    return a + b"\0" * (-len(a) % 4)
while True:
    c, _ = s.accept()
    hdr = c.recv(16)
    if len(hdr) < 16:
        c.close(); continue
    magic, ver, typ, length, seq = struct.unpack("<IHHII", hdr)
    left = length
    while left > 0:
        left -= len(c.recv(left))
    if mode == "silent":
        c.recv(1)  # hold the connection open until the client gives up
    elif mode == "garbage":
        c.sendall(b"this is not an efid reply at all")
    elif mode == "badlist":
        body = attr(1, struct.pack("<i", 0)) + attr(30, attr(10, b"vm1\0"))
        c.sendall(struct.pack("<IHHII", 0x31494645, 1, 1, len(body), seq) + body)
    c.close()
PY
	for mode in silent garbage badlist; do
		sock=$TMP/$mode.sock
		python3 "$TMP/fake.py" "$sock" "$mode" &
		FAKE_PID=$!
		i=0
		while [ ! -e "$sock.ready" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
		case $mode in
		silent) expect 6 "did not answer" -- --socket "$sock" --timeout 0.5 list ;;
		garbage) expect 1 "malformed reply" -- --socket "$sock" list ;;
		badlist)
			expect 1 "malformed reply" -- --socket "$sock" status
			json_expect '.error.code == "protocol-error"' --socket "$sock" list --json
			;;
		esac
		kill "$FAKE_PID" 2>/dev/null
		wait "$FAKE_PID" 2>/dev/null
		FAKE_PID=
	done
else
	echo "--- fake servers skipped (no python3)"
fi

# End to end with a real efid.
if [ "$(id -u)" -ne 0 ] || [ "${EFI_ROOT_TESTS:-run}" = skip ] || [ ! -x "$EFID" ] || ! command -v ip >/dev/null 2>&1; then
	echo "--- end-to-end part skipped (needs root, ip and $EFID)"
else
	echo "--- end to end"
	mkdir -p "$TMP/state" "$TMP/run"
	"$EFID" --state-dir "$TMP/state" --runtime-dir "$TMP/run" --config /dev/null \
		>"$TMP/efid.log" 2>&1 &
	EFID_PID=$!
	export EFI_SOCKET=$TMP/run/efid.sock
	i=0
	while [ ! -S "$EFI_SOCKET" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
	ip netns add ${TAG}a && ip netns add ${TAG}b &&
		ip link add ${TAG}br type bridge && ip link set ${TAG}br up ||
		fail "cannot create namespaces and bridge"
	BR=${TAG}br

	expect 0 "efid      " -- version
	json_expect '(.efid | type) == "string"' version --json
	expect 0 "created efi0 on instance ${TAG}a" -- attach ${TAG}a --address 10.250.0.5/24 --uplink $BR
	json_expect '.result == "unchanged" and .interface.name == "efi0" and .interface.gids[0].gid == "::ffff:10.250.0.5"' \
		attach ${TAG}a --address 10.250.0.5/24 --uplink $BR --json
	expect 0 "created efi3" -- attach ${TAG}b -a 10.250.0.6/24 -a fd00:250::6/64 --name efi3 --uplink $BR --mtu 9000
	expect 4 "already used" -- attach ${TAG}a -a 10.250.0.6/24 --uplink $BR
	expect 3 "" -- attach ${TAG}nope -a 10.250.0.7/24 --uplink $BR
	expect 3 "" -- attach ${TAG}a -a 10.250.0.8/24 --uplink ${TAG}nobr
	expect 0 "INSTANCE" -- list
	expect 0 "10.250.0.6/24,fd00:250::6/64" -- list
	expect 0 "::ffff:10.250.0.5" -- status
	expect 0 "instance ${TAG}b" -- show ${TAG}b efi3
	expect 3 "" -- status ${TAG}a efi9
	json_expect "[.instances[] | select(.name == \"${TAG}b\") | .interfaces[0].mtu] == [9000]" status --json
	json_expect "[.instances[].interfaces[].name] | length >= 2" list --json
	if command -v setpriv >/dev/null 2>&1; then
		out=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$EFICTL" detach ${TAG}a efi0 2>&1)
		rc=$?
		if [ $rc -eq 5 ] && printf '%s' "$out" | grep -q root; then
			echo "ok: detach as nobody -> 5"
		else
			fail "detach as nobody: exit $rc: $out"
		fi
	fi
	expect 3 "" -- detach ${TAG}a efi7
	json_expect '.detached == 1' detach ${TAG}a efi0 --json
	expect 0 "detached 1 interface from instance ${TAG}b" -- detach ${TAG}b --all

	rm -f "$TMP/ifaces/bad.conf"
	printf '[Interface]\nInstance=%sa\nName=efi0\nAddress=10.250.1.5/24\nUplink=%s\n' ${TAG} $BR >"$TMP/ifaces/10-a.conf"
	printf '[Interface]\nInstance=%sb\nAddress=10.250.1.6/24\nUplink=%s\n' ${TAG} $BR >"$TMP/ifaces/20-b.conf"
	expect 0 "10-a.conf: created efi0 on instance ${TAG}a" -- apply "$TMP/ifaces"
	json_expect '[.results[].result] == ["unchanged", "unchanged"] and .errors == []' apply "$TMP/ifaces" --json
	printf '[Interface]\nInstance=%sb\nName=efi5\nAddress=10.250.1.5/24\nUplink=%s\n' ${TAG} $BR >"$TMP/ifaces/30-conflict.conf"
	expect 4 "30-conflict.conf: attach to ${TAG}b refused" -- apply "$TMP/ifaces"
	expect 0 "detached" -- detach ${TAG}a --all
	expect 0 "detached" -- detach ${TAG}b --all
	expect 0 "no interfaces attached" -- list
fi

if [ $failures -ne 0 ]; then
	echo "$failures check(s) failed"
	exit 1
fi
echo "all checks passed"
exit 0
