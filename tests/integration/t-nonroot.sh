#!/bin/bash
# Non-root clients may read but not mutate; members of the group named in
# [Control] Group= may attach and detach.
# shellcheck disable=SC2016 # jq programs: their $names are jq's
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
. "$(dirname "$0")/lib.sh"
lib_init nr

command -v setpriv >/dev/null || skip "setpriv (util-linux) is not installed"
command -v useradd >/dev/null || skip "useradd is not installed"

A=${PFX}a
BR=${PFX}br
GRP=${PFX}g
USR=${PFX}u
mk_netns "$A"
mk_bridge "$BR"

# The built efictl may sit somewhere nobody cannot reach: use a copy.
CTL_BIN=$EFICTL
if ! setpriv --reuid=65534 --regid=65534 --clear-groups test -x "$EFICTL"; then
	cp "$EFICTL" "$TMPD/efictl" || fail "cannot copy efictl"
	chmod 755 "$TMPD/efictl"
	CTL_BIN=$TMPD/efictl
fi

# as UID GID-ARGS... -- ARGS: efictl as another user
as_nobody() {
	timeout -k 2 "$CTL_TIMEOUT" setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$CTL_BIN" --socket "$SOCK" "$@"
}
as_member() {
	timeout -k 2 "$CTL_TIMEOUT" setpriv --reuid="$USR" --regid=65534 --init-groups \
		"$CTL_BIN" --socket "$SOCK" "$@"
}

log "no Group= configured"
efid_start nog
assert_exit 0 ctl attach "$A" --name efi0 --address 10.92.0.1/24 --uplink "$BR"
S0=$(status_snapshot)
assert_exit 0 as_nobody --json status
assert_eq "[\"$A\"]" "$(jq -c '[.instances[].name]' <<<"$OUT")" "instances seen by nobody"
assert_exit 0 as_nobody status
assert_exit 0 as_nobody list
assert_exit 5 as_nobody attach "$A" --name efi1 --address 10.92.0.2/24 --uplink "$BR"
assert_match 'root|group' "$ERR" "message of a refused attach"
assert_exit 5 as_nobody detach "$A" efi0
assert_match 'root|group' "$ERR" "message of a refused detach"
assert_exit 5 as_nobody detach "$A" --all
printf '[Interface]\nInstance=%s\nName=efi3\nAddress=10.92.0.9/24\nUplink=%s\n' "$A" "$BR" >"$TMPD/efi3.conf"
chmod 644 "$TMPD/efi3.conf"
assert_exit 5 as_nobody apply "$TMPD/efi3.conf"
assert_same_snapshot "$S0" "$(status_snapshot)" "status after refused mutations"
ip -n "$A" link show efi1 >/dev/null 2>&1 && fail "efi1 was created by a refused attach"
assert_exit 0 ctl detach "$A" --all
efid_stop nog

log "Group=$GRP with member $USR"
groupadd -r "$GRP" || fail "groupadd $GRP failed"
track_group "$GRP"
useradd -r -M -N -g 65534 -G "$GRP" -s /usr/sbin/nologin -d /nonexistent "$USR" || fail "useradd $USR failed"
track_user "$USR"
efid_start grp Control.Group="$GRP"
assert_exit 0 as_member --json attach "$A" --name efi0 --address 10.92.0.3/24 --uplink "$BR"
assert_eq created "$(jq -r .result <<<"$OUT")" "attach by a group member"
ns_has_addr "$A" efi0 10.92.0.3/24 || fail "efi0 attached by $USR is not in the kernel"
assert_exit 5 as_nobody attach "$A" --name efi1 --address 10.92.0.4/24 --uplink "$BR"
assert_exit 5 as_nobody detach "$A" efi0
assert_exit 0 as_member detach "$A" efi0
ip -n "$A" link show efi0 >/dev/null 2>&1 && fail "efi0 still there after detach by $USR"

log "primary group works as well"
assert_exit 0 timeout -k 2 "$CTL_TIMEOUT" setpriv --reuid=65534 --regid="$GRP" --clear-groups \
	"$CTL_BIN" --socket "$SOCK" attach "$A" --name efi2 --address 10.92.0.5/24 --uplink "$BR"
assert_exit 0 ctl detach "$A" --all
