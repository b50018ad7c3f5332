#!/bin/bash
# Hostile clients: malformed, truncated, oversized and unknown frames get an
# error reply or a closed connection; efid stays up, keeps answering, changes
# nothing, and its open descriptors return to where they were.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
. "$(dirname "$0")/lib.sh"
lib_init ho

A=${PFX}a
BR=${PFX}br
mk_netns "$A"
mk_bridge "$BR"
efid_start main
[ -x "$CTLRAW" ] || fail "ctlraw not built at $CTLRAW"
PID=$(efid_pid main)

assert_exit 0 ctl attach "$A" --name efi0 --address 10.87.0.1/24 --uplink "$BR"
settle "$A"
wait_for 1000 "link up" field_is "$A" efi0 .link up
for _ in 1 2 3; do ctl status >/dev/null; done
fds() {
	local f=("/proc/$PID/fd"/*)
	echo "${#f[@]}"
}
FD0=$(fds)
S0=$(status_snapshot)
K0=$(kernel_snapshot "$A")
log "efid pid $PID has $FD0 open descriptors"

log "a well-formed HELLO from the helper works (the helper speaks the protocol)"
assert_exit 0 "$CTLRAW" "$SOCK" hello
log "hello: $OUT"

alive() {
	pid_running "$PID" || fail "efid died after '$1'"
	assert_exit 0 ctl status
}

for c in garbage bad-magic bad-version unknown-type reply-type attr-overrun attr-short-header \
	str-no-nul str-embedded-nul u32-wrong-size repeated-attr huge-name too-many-addresses missing-attrs \
	missing-address detach-missing-attrs length-lies-short oversize oversize-full \
	list-bad-instance publish-no-fd; do
	assert_exit 0 "$CTLRAW" "$SOCK" "$c" "$A" 10.87.0.9/24
	log "$c: $OUT"
	alive "$c"
done

assert_exit 0 "$CTLRAW" "$SOCK" truncated "$A"
alive truncated

log "requests carrying descriptors nobody asked for"
for n in 1 16 17 200; do
	assert_exit 0 "$CTLRAW" "$SOCK" fds "$n"
	log "fds $n: $OUT"
	alive "fds $n"
done
for _ in $(seq 1 20); do
	"$CTLRAW" "$SOCK" fds 16 >/dev/null || fail "ctlraw fds 16 failed"
done
alive "20 x fds 16"

log "1000 tiny garbage connections"
assert_exit 0 "$CTLRAW" "$SOCK" flood 1000
alive flood

log "nothing changed"
ip -n "$A" link show efi9 >/dev/null 2>&1 && fail "a malformed request created efi9"
assert_same_snapshot "$S0" "$(status_snapshot)" "status after hostile clients"
assert_same_snapshot "$K0" "$(kernel_snapshot "$A")" "kernel after hostile clients"

log "descriptors back to $FD0"
fd_back() { [ "$(fds)" -le "$FD0" ]; }
if ! fd_back; then
	sleep 3
	fd_back || fail "efid's descriptors did not return to $FD0 within 3 s: $(fds) open:
$(for f in "/proc/$PID/fd"/*; do readlink "$f"; done | sort | uniq -c)"
fi

log "and efid still does real work"
assert_exit 0 ctl attach "$A" --name efi1 --address 10.87.1.1/24 --uplink "$BR"
assert_exit 0 ctl detach "$A" --all
efid_stop main
assert_eq 0 "$EFID_RC" "efid exit status after SIGTERM"
