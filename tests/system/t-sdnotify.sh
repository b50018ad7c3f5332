#!/bin/bash
# efid speaks sd_notify as Type=notify with WatchdogSec= expects: READY=1
# only once its socket accepts connections, STATUS= lines, WATCHDOG=1 pings
# while WATCHDOG_USEC is set, STOPPING=1 on SIGTERM, then exit 0.
#
# tests/system/notify-listen plays systemd: it owns $NOTIFY_SOCKET and, the
# moment READY=1 arrives, connects to efid's control socket (CONNECT=ok).
: "${top_srcdir:?run through make check (top_srcdir is not set)}"
# shellcheck source=tests/system/lib.sh
. "$top_srcdir/tests/system/lib.sh"

need_root
LISTEN="$top_builddir/tests/system/notify-listen"
[ -x "$EFID" ] || fail "efid is not built at $EFID"
[ -x "$LISTEN" ] || fail "notify-listen is not built at $LISTEN"

make_tmpdir
mkdir -p "$TEST_TMP/state" "$TEST_TMP/run"
write_test_config "$TEST_TMP/efid.conf"
NOTIFY="$TEST_TMP/notify"
LOG="$TEST_TMP/notify.log"
SOCK="$TEST_TMP/run/efid.sock"

"$LISTEN" "$NOTIFY" --check-connect "$SOCK" --timeout 60 > "$LOG" 2> "$TEST_TMP/listen.log" &
track_pid $!
wait_for 5 test -S "$NOTIFY" || fail "notify-listen did not bind $NOTIFY"

# WATCHDOG_PID is set to efid's own pid (the subshell's pid survives exec),
# as systemd does: sd_watchdog_enabled() then knows the pings are wanted
# from this process.
(
	export NOTIFY_SOCKET="$NOTIFY" WATCHDOG_USEC=500000 WATCHDOG_PID="$BASHPID"
	exec "$EFID" --config "$TEST_TMP/efid.conf" --state-dir "$TEST_TMP/state" \
		--runtime-dir "$TEST_TMP/run" --log-level debug
) > "$TEST_TMP/efid.log" 2>&1 &
EFID_PID=$!
track_pid "$EFID_PID"

has_line() { grep -qE "^[0-9]+ $1\$" "$LOG"; }

wait_for 15 has_line 'READY=1' || fail "no READY=1 within 15 s"
kill -0 "$EFID_PID" 2>/dev/null || fail "efid exited after READY=1"
grep -E '^[0-9]+ CONNECT=' "$LOG" | head -n 1
has_line 'CONNECT=ok' || fail "READY=1 came before the control socket accepted connections"
[ -S "$SOCK" ] || fail "efid did not create its socket at $SOCK"
has_line 'STATUS=.+' || fail "no STATUS= line"
grep -E '^[0-9]+ STATUS=' "$LOG"

# sd-event pings at a quarter to a half of WATCHDOG_USEC (500 ms); in 2 s
# there must be several pings, not just one.
sleep 2
pings=$(grep -cE '^[0-9]+ WATCHDOG=1$' "$LOG" || true)
echo "watchdog pings in ~2 s: $pings"
[ "$pings" -ge 3 ] || fail "expected >= 3 WATCHDOG=1 pings with WATCHDOG_USEC=500000, got $pings"

kill -TERM "$EFID_PID"
rc=0
wait "$EFID_PID" || rc=$?
[ "$rc" -eq 0 ] || fail "efid exited $rc on SIGTERM, expected 0"
wait_for 5 has_line 'STOPPING=1' || fail "no STOPPING=1 on SIGTERM"
# STOPPING=1 must come after READY=1.
ready_line=$(grep -nE '^[0-9]+ READY=1$' "$LOG" | head -n 1 | cut -d: -f1)
stop_line=$(grep -nE '^[0-9]+ STOPPING=1$' "$LOG" | head -n 1 | cut -d: -f1)
[ "$stop_line" -gt "$ready_line" ] || fail "STOPPING=1 before READY=1"

echo "PASS: $TEST_NAME"
