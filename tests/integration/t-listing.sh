#!/bin/bash
# Listings longer than one reply (issue 22): sixteen contexts, each with a
# full peer table, on one interface make its IFACE nest pass the 64 KiB an
# attribute may carry and the listing pass one page.  efictl status, list,
# --json status and detach --wait still work and show every context;
# a client from before paging (a plain LIST, as libefi sends) still gets a
# reply that parses, short of what did not fit.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
. "$(dirname "$0")/lib.sh"
lib_init lg

: "${CSHM_HOSTILE:=$top_builddir/tests/integration/cshm-hostile}"
[ -x "$CSHM_HOSTILE" ] || fail "cshm-hostile not built at $CSHM_HOSTILE"
[ -x "$CTLRAW" ] || fail "ctlraw not built at $CTLRAW"

A=${PFX}a
BR=${PFX}br
N=16
mk_netns "$A"
mk_bridge "$BR"
efid_start main
assert_exit 0 ctl attach "$A" --name efi0 --address 10.89.0.1/24 --uplink "$BR"
assert_exit 0 ctl attach "$A" --name efi1 --address 10.89.1.1/24 --uplink "$BR"
settle "$A"

log "$N contexts with full peer tables on efi0"
rm -f "$TMPD/hold"
mkfifo "$TMPD/hold"
for i in $(seq 1 "$N"); do
	# not bg_track: the fifo must be opened by the child, not by us
	ip netns exec "$A" env EFI_SOCKET="$SOCK" "$CSHM_HOSTILE" efi0 \
		<"$TMPD/hold" >"$TMPD/ctx.$i" 2>&1 &
	TRACK_BGPIDS+=("$!")
done
exec 5>"$TMPD/hold"
for i in $(seq 1 "$N"); do
	wait_for 10000 "context $i ready" grep -q ready "$TMPD/ctx.$i"
done

assert_exit 0 ctl --json status
assert_eq "$N" "$(jq '[.instances[].interfaces[] | select(.name == "efi0") | .contexts[]] | length' <<<"$OUT")" \
	"contexts listed on efi0 (status --json)"
assert_eq 14 "$(jq '[.instances[].interfaces[] | select(.name == "efi0") | .contexts[-1].peers | length] | .[0]' <<<"$OUT")" \
	"peers of the last context"
assert_eq 2 "$(jq '[.instances[].interfaces[]] | length' <<<"$OUT")" "interfaces listed once each"
assert_exit 0 ctl status
assert_match 'efi0' "$OUT" "human status names efi0"
assert_exit 0 ctl status "$A" efi0
assert_exit 0 ctl list
assert_match 'efi1' "$OUT" "list names efi1"
assert_exit 0 ctl --json status "$A"
assert_eq "$N" "$(jq '[.instances[].interfaces[] | select(.name == "efi0") | .contexts[]] | length' <<<"$OUT")" \
	"contexts listed on efi0 (status INSTANCE)"

log "a client from before paging"
assert_exit 0 "$CTLRAW" "$SOCK" list
log "plain LIST: $OUT"

log "detach --wait while the contexts are open, then after they close"
assert_exit 0 ctl detach "$A" efi1 --wait=5
exec 5>&-
for i in $(seq 1 "$N"); do
	wait_for 10000 "context $i gone" not pid_running "${TRACK_BGPIDS[$((i - 1))]}"
done
assert_exit 0 ctl detach "$A" efi0 --wait=5
efid_stop main
