#!/bin/bash
# efid started on a database left by an older efid (the schema-v1 fixture)
# migrates it, keeps every record and the host id, and reports the
# interfaces whose kernel side does not exist as missing (Repair=no: it
# creates nothing).  The fixture itself is never touched.
# shellcheck disable=SC2016 # jq programs: their $names are jq's
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
. "$(dirname "$0")/lib.sh"
lib_init up

command -v sqlite3 >/dev/null || skip "sqlite3 is not installed (apt-get install sqlite3)"
FIX=${FIXTURES:-${top_srcdir:-.}/tests/fixtures}/schema-v1.db
[ -r "$FIX" ] || fail "fixture $FIX not found (FIXTURES=${FIXTURES:-unset})"
fixsum=$(sha256sum <"$FIX")

efid_config old Interfaces.Repair=no
cp "$FIX" "$TMPD/old/state/efid.db" || fail "cannot copy the fixture"
DB=$TMPD/old/state/efid.db
fixture_host=$(sqlite3 "$DB" "SELECT value FROM meta WHERE key = 'host_id';")
assert_eq 1 "$(sqlite3 "$DB" 'PRAGMA user_version;')" "schema version of the fixture"
efid_launch old

assert_eq "$fixture_host" "$HID" "host id after the upgrade"
view=$(jq_status -c '[.instances[] | {name, ifs: [.interfaces[] |
	{name, kind, uplink, mtu, state, addresses: (.addresses | sort)}]}] | sort_by(.name)')
want='[{"name":"vm1","ifs":[{"name":"efi0","kind":"veth","uplink":"br0","mtu":1500,"state":"missing","addresses":["10.0.0.5/24","fd00::5/64"]},{"name":"efi1","kind":"macvlan","uplink":"eth0","mtu":9000,"state":"missing","addresses":["10.1.0.5/16"]}]},{"name":"vm2","ifs":[{"name":"efi0","kind":"veth","uplink":"br0","mtu":0,"state":"missing","addresses":["10.0.0.6/24","10.2.0.6/32","fd00:0:0:1::6/64"]}]}]'
# MTU 0 ("the default") may be shown as 0 or as what it stands for; compare
# the rest exactly.
norm='map(.ifs |= map(if .mtu == 0 or .mtu == 1500 then .mtu = "default-or-1500" else . end))'
assert_eq "$(jq -c "$norm" <<<"$want")" "$(jq -c "$norm" <<<"$view")" "records after the upgrade"
assert_eq missing "$(iface_field vm1 efi0 .link)" "link of a record without a kernel side"
assert_eq "" "$(host_efi_devices)" "devices created on an upgrade with Repair=no"

efid_stop old
assert_eq 4 "$(sqlite3 "$DB" 'PRAGMA user_version;')" "schema version after the upgrade"
assert_eq 0 "$(sqlite3 "$DB" 'SELECT count(*) FROM intents;')" "intents after the upgrade (schema 3)"
assert_eq 0 "$(sqlite3 "$DB" 'SELECT count(*) FROM cm_connections;')" "CM connections after the upgrade (schema 4)"
assert_eq 6 "$(sqlite3 "$DB" 'SELECT count(*) FROM addresses;')" "addresses after the upgrade"
assert_eq "$fixsum" "$(sha256sum <"$FIX")" "the fixture in the source tree"

log "and the upgraded database opens again"
efid_launch old
assert_eq 3 "$(jq_status '[.instances[].interfaces[]] | length')" "interfaces after a second start"
