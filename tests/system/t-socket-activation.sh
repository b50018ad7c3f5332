#!/bin/bash
# efid serves on a listening socket handed over by the service manager
# (sd_listen_fds), as with efid.socket: systemd-socket-activate binds the
# socket, waits for the first client, then execs efid with the fd.
: "${top_srcdir:?run through make check (top_srcdir is not set)}"
# shellcheck source=tests/system/lib.sh
. "$top_srcdir/tests/system/lib.sh"

need_root
need_cmd systemd-socket-activate
[ -x "$EFID" ] || fail "efid is not built at $EFID"
[ -x "$EFICTL" ] || fail "efictl is not built at $EFICTL"

make_tmpdir
mkdir -p "$TEST_TMP/state" "$TEST_TMP/run"
write_test_config "$TEST_TMP/efid.conf"
SOCK="$TEST_TMP/activated.sock"

systemd-socket-activate -l "$SOCK" \
	"$EFID" --config "$TEST_TMP/efid.conf" --state-dir "$TEST_TMP/state" \
	--runtime-dir "$TEST_TMP/run" --log-level debug > "$TEST_TMP/efid.log" 2>&1 &
ACT_PID=$! # systemd-socket-activate execs efid: the same pid
track_pid "$ACT_PID"
wait_for 5 test -S "$SOCK" || fail "systemd-socket-activate did not bind $SOCK"

# The first connection starts efid; efictl's request waits in the backlog
# until efid accepts it.
# `efictl version` succeeds without efid too (it then reports efid as null),
# so the answer must carry efid's version.
rc=0
out=$(timeout 20 "$EFICTL" --socket "$SOCK" --json version 2>&1) || rc=$?
echo "$out"
[ "$rc" -eq 0 ] || fail "efictl version over the activated socket exited $rc"
grep -qE '"efid": *"[0-9]' <<<"$out" || fail "efictl version did not get efid's version: efid did not answer"

# A second client, after efid is up, is served on the same socket.
"$EFICTL" --socket "$SOCK" --json list > "$TEST_TMP/list.json" \
	|| fail "efictl list over the activated socket failed"
if command -v jq >/dev/null 2>&1; then
	jq -e . "$TEST_TMP/list.json" >/dev/null || fail "efictl --json list is not JSON"
fi

# efid used the passed socket instead of creating its own.
[ ! -e "$TEST_TMP/run/efid.sock" ] || fail "efid created $TEST_TMP/run/efid.sock despite socket activation"
[ "$(readlink "/proc/$ACT_PID/exe")" = "$(readlink -f "$EFID")" ] \
	|| fail "pid $ACT_PID is not efid (did systemd-socket-activate exec it?)"

kill -TERM "$ACT_PID"
rc=0
wait "$ACT_PID" || rc=$?
[ "$rc" -eq 0 ] || fail "efid exited $rc on SIGTERM, expected 0"
# The socket belongs to the service manager, which keeps it across restarts
# of efid: efid must not have removed it.
[ -S "$SOCK" ] || fail "efid removed the activated socket $SOCK on exit"

echo "PASS: $TEST_NAME"
