#!/bin/bash
# The database in trouble: corrupt, from a newer efid, locked by another
# process, on a full disk, on a read-only file system.  Each gives a clear error, loses nothing, and
# leaves the kernel as it was.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
. "$(dirname "$0")/lib.sh"
lib_init st

command -v sqlite3 >/dev/null || skip "sqlite3 is not installed (apt-get install sqlite3)"
A=${PFX}a
BR=${PFX}br
mk_netns "$A"
mk_bridge "$BR"

# efid_refuses ID: efid must exit non-zero (not hang) on its own; OUT holds
# its output.
efid_refuses() {
	local d=$TMPD/$1 rc=0
	OUT=$(timeout -k 2 15 "$EFID" --config "$d/efid.conf" --state-dir "$d/state" \
		--runtime-dir "$d/run" 2>&1 3>&-) || rc=$?
	[ "$rc" != 0 ] || fail "efid started on $2"
	if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
		fail "efid hung on $2 instead of exiting"
	fi
	log "efid refused ($rc): $(tail -n 3 <<<"$OUT")"
}

log "corrupt database"
efid_config corrupt
head -c 16384 /dev/urandom >"$TMPD/corrupt/state/efid.db"
sum=$(sha256sum <"$TMPD/corrupt/state/efid.db")
efid_refuses corrupt "a corrupt database"
assert_match 'efid\.db|database' "$OUT" "message about a corrupt database"
assert_eq "$sum" "$(sha256sum <"$TMPD/corrupt/state/efid.db")" "corrupt database file after the attempt"

log "database from a newer efid"
efid_start future
assert_exit 0 ctl attach "$A" --name efi0 --address 10.94.0.1/24 --uplink "$BR"
assert_exit 0 ctl detach "$A" --all
efid_stop future
DB=$TMPD/future/state/efid.db
sqlite3 "$DB" "PRAGMA user_version=999;" || fail "cannot set user_version"
sum=$(sha256sum <"$DB")
efid_refuses future "a database with user_version 999"
assert_match 'version|newer|999' "$OUT" "message about a newer schema"
assert_eq "$sum" "$(sha256sum <"$DB")" "future database file after the attempt"
assert_eq 999 "$(sqlite3 "$DB" 'PRAGMA user_version;')" "user_version after the attempt"

log "locked database"
efid_start locked
DB=$TMPD/locked/state/efid.db
assert_exit 0 ctl attach "$A" --name efi0 --address 10.94.0.1/24 --uplink "$BR"
settle "$A"
K0=$(kernel_snapshot "$A")
S0=$(status_snapshot)
# sqlite3 reading from a pipe holds the lock until we say COMMIT.
coproc LOCKER { sqlite3 "$DB"; }
TRACK_BGPIDS+=("$LOCKER_PID")
LOCKER_IN=${LOCKER[1]}
echo 'BEGIN EXCLUSIVE;' >&"$LOCKER_IN"
db_locked() { ! sqlite3 -cmd '.timeout 0' "$DB" 'BEGIN IMMEDIATE; ROLLBACK;' >/dev/null 2>&1; }
wait_for 3000 "the database to be locked by sqlite3" db_locked
start=$(date +%s)
assert_fails ctl attach "$A" --name efi1 --address 10.94.0.2/24 --uplink "$BR"
log "attach refused after $(($(date +%s) - start)) s: $ERR"
assert_match 'lock|busy' "$ERR$OUT" "message of an attach on a locked database"
assert_same_snapshot "$K0" "$(kernel_snapshot "$A")" "kernel after an attach on a locked database"
assert_fails ctl detach "$A" efi0
ns_has_addr "$A" efi0 10.94.0.1/24 || fail "a detach on a locked database removed efi0 anyway"
echo 'COMMIT;' >&"$LOCKER_IN"
exec {LOCKER_IN}>&-
wait "$LOCKER_PID"
pid_running "$(efid_pid locked)" || fail "efid died while the database was locked"
assert_same_snapshot "$S0" "$(status_snapshot)" "status after the lock is gone"
assert_exit 0 ctl attach "$A" --name efi1 --address 10.94.0.2/24 --uplink "$BR"
assert_exit 0 ctl detach "$A" --all
efid_stop locked

log "full disk"
efid_config full
mount -t tmpfs -o size=4m,mode=0700 efi-itest "$TMPD/full/state" || fail "cannot mount a tmpfs"
track_mount "$TMPD/full/state"
efid_launch full
assert_exit 0 ctl attach "$A" --name efi0 --address 10.94.0.1/24 --uplink "$BR"
settle "$A"
K0=$(kernel_snapshot "$A")
S0=$(status_snapshot)
dd if=/dev/zero of="$TMPD/full/state/junk" bs=64k >/dev/null 2>&1
dd if=/dev/zero of="$TMPD/full/state/junk2" bs=512 >/dev/null 2>&1
log "free space left: $(df --output=avail -B1 "$TMPD/full/state" | tail -1) bytes"
assert_fails ctl attach "$A" --name efi1 --address 10.94.0.2/24 --uplink "$BR"
log "attach refused: $ERR"
assert_match 'space|full|disk' "$ERR$OUT" "message of an attach on a full disk"
assert_same_snapshot "$K0" "$(kernel_snapshot "$A")" "kernel after an attach on a full disk"
pid_running "$(efid_pid full)" || fail "efid died on a full disk"
rm -f "$TMPD/full/state/junk" "$TMPD/full/state/junk2"
assert_same_snapshot "$S0" "$(status_snapshot)" "status after the disk has room again"
assert_exit 0 ctl attach "$A" --name efi1 --address 10.94.0.2/24 --uplink "$BR"
ns_has_addr "$A" efi1 10.94.0.2/24 || fail "efi1 not created once the disk had room"

assert_exit 0 ctl detach "$A" --all
efid_stop full
assert_eq 0 "$EFID_RC" "efid exit status after SIGTERM"

log "read-only file system (remounted while efid is down)"
mount -o remount,ro "$TMPD/full/state" || fail "cannot remount read-only"
sum=$(sha256sum <"$TMPD/full/state/efid.db")
K0=$(kernel_snapshot "$A")
# efid may refuse to start, or start and refuse every change: both must say
# why, and neither may touch the file or the kernel.
rc=0
OUT=$(timeout -k 2 15 "$EFID" --config "$TMPD/full/efid.conf" --state-dir "$TMPD/full/state" \
	--runtime-dir "$TMPD/full/run" 2>&1 3>&- &
	ro_efid=$!
	sleep 2
	if timeout 5 "$EFICTL" --socket "$TMPD/full/run/efid.sock" status >/dev/null 2>&1; then
		timeout 10 "$EFICTL" --socket "$TMPD/full/run/efid.sock" attach "$A" --name efi2 \
			--address 10.94.0.3/24 --uplink "$BR" && echo "ATTACH-SUCCEEDED"
		echo "EFID-RAN"
	fi
	kill "$ro_efid" 2>/dev/null
	wait) || rc=$?
log "on a read-only file system: $(tail -n 4 <<<"$OUT")"
assert_no_match 'ATTACH-SUCCEEDED' "$OUT" "attach on a read-only database"
assert_match 'read-only|readonly|read only' "$OUT" "message about the read-only database"
assert_eq "$sum" "$(sha256sum <"$TMPD/full/state/efid.db")" "database file on the read-only file system"
assert_same_snapshot "$K0" "$(kernel_snapshot "$A")" "kernel after efid on a read-only database"
mount -o remount,rw "$TMPD/full/state" || fail "cannot remount read-write"
umount "$TMPD/full/state" || fail "umount failed"
