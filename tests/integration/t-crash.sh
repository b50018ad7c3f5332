#!/bin/bash
# A crash at any point loses nothing (issue 22).  efid is killed (SIGKILL,
# from inside, EFID_FAULT=OP:STEP) at every step of attach and detach, round
# after round (100 kills by default), and restarted each time: kernel and
# records agree every time, a killed detach stays detached, a killed attach
# leaves no device efid does not know (no stray).  A detach whose last
# record write fails leaves the interface detaching, not re-created, and the
# next start finishes it.  An empty efid.db is refused like a corrupt one and
# left alone, unless efid was creating it.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
. "$(dirname "$0")/lib.sh"
lib_init cr

A=${PFX}a
BR=${PFX}br
KILLS=${EFI_CRASH_KILLS:-100}
mk_netns "$A"
mk_bridge "$BR"

# agree: the record of efi0 and the device agree; no stray.  Prints
# "present" or "absent".
agree() {
	local json rec dev=absent
	json=$(ctl --json status) || fail "status after restart failed"
	rec=$(jq -r --arg a "$A" '[.instances[] | select(.name == $a) | .interfaces[] |
		select(.name == "efi0")] | if length > 0 then "present" else "absent" end' <<<"$json")
	ip -n "$A" link show efi0 >/dev/null 2>&1 && dev=present
	[ "$rec" = "$dev" ] || fail "after a kill at $1: record $rec, device $dev"
	[ "$(jq '.strays | length' <<<"$json")" = 0 ] ||
		fail "after a kill at $1: strays $(jq -c .strays <<<"$json")"
	if [ "$rec" = present ]; then
		assert_eq attached "$(iface_field "$A" efi0 .state)" "state of efi0 after a kill at $1"
	fi
	echo "$rec"
}

attach0() { ctl attach "$A" --name efi0 --address 10.91.0.1/24 --uplink "$BR"; }

log "--- $KILLS kills at every step of attach and detach"
steps=(attach:1 attach:2 attach:3 attach:4 detach:1 detach:2 detach:3)
declare -A seen=()
kills=0
while [ "$kills" -lt "$KILLS" ]; do
	for fp in "${steps[@]}"; do
		[ "$kills" -lt "$KILLS" ] || break
		EFID_FAULT=$fp efid_start main Interfaces.Repair=yes
		pid=$(efid_pid main)
		if [ "${fp%%:*}" = detach ]; then
			attach0 >/dev/null || fail "attach before the detach kill failed"
			ctl detach "$A" efi0 >/dev/null 2>&1
		else
			attach0 >/dev/null 2>&1
		fi
		wait_for 5000 "efid killed at $fp" not pid_running "$pid"
		efid_stop main KILL
		[ "$EFID_RC" = 137 ] || fail "efid exited $EFID_RC, not by SIGKILL, at $fp"
		kills=$((kills + 1))
		efid_start main Interfaces.Repair=yes
		got=$(agree "$fp")
		# a detach once its intent is committed is finished; an attach
		# once committed stays
		case $fp in
		detach:*) assert_eq absent "$got" "efi0 after a kill at $fp and a restart" ;;
		attach:4) assert_eq present "$got" "efi0 after a kill at $fp and a restart" ;;
		esac
		seen[$fp:$got]=1
		# and it stays so: nothing is re-created behind our back
		sleep 0.3
		assert_eq "$got" "$(agree "$fp (0.3 s later)")" "efi0 a moment after the restart"
		ctl detach "$A" --all >/dev/null || fail "cleanup detach failed"
		efid_stop main
	done
done
log "$kills kills; outcomes: ${!seen[*]}"

log "--- a detach whose last record write fails"
EFID_FAULT=detach-write efid_start main Interfaces.Repair=yes
assert_exit 0 attach0
settle "$A"
assert_fails ctl detach "$A" efi0
assert_match 'pending|record' "$ERR" "message of a detach whose record write failed"
ip -n "$A" link show efi0 >/dev/null 2>&1 && fail "efi0 still in the kernel after the detach"
sleep 2
ip -n "$A" link show efi0 >/dev/null 2>&1 && fail "efi0 was re-created after a detach whose record write failed"
assert_eq detaching "$(iface_field "$A" efi0 .state)" "state of a detach pending its record"
efid_stop main
efid_start main Interfaces.Repair=yes
assert_eq absent "$(agree detach-write)" "efi0 after the restart"
efid_stop main

log "--- an empty database is refused and left alone"
D=$TMPD/main
rm -f "$D/state/efid.db" "$D/state/efid.db-wal" "$D/state/efid.db-shm"
: >"$D/state/efid.db"
rc=0
OUT=$(timeout -k 2 15 "$EFID" --config "$D/efid.conf" --state-dir "$D/state" \
	--runtime-dir "$D/run" 2>&1 3>&-) || rc=$?
log "efid on an empty efid.db: exit $rc: $OUT"
if [ "$rc" = 0 ] || [ "$rc" = 124 ]; then fail "efid took an empty efid.db (exit $rc)"; fi
assert_match 'empty' "$OUT" "message about an empty database"
if [ ! -f "$D/state/efid.db" ] || [ -s "$D/state/efid.db" ]; then fail "the empty efid.db was changed"; fi
log "one efid was creating is taken (a crash right after it made the file)"
: >"$D/state/efid.db.creating"
efid_start main
[ -e "$D/state/efid.db.creating" ] && fail "the creation marker is left after a successful open"
efid_stop main
