#!/bin/bash
# fi_getinfo over the efi provider keeps to every combination of hints
# fab-getinfo.c walks (caps, modes, mr_mode, cq_data_size): 0 or
# -FI_ENODATA, never another error (issue 21: capability-only hints gave
# fabtests' getinfo_test -FI_EIO, FI_REMOTE_CQ_DATA being reported as a
# capability), no caps/mode/mr_mode beyond the hints (FI_MR_BASIC was
# answered with FI_MR_LOCAL), remote CQ data also to FI_MSG-only
# applications and FI_RX_CQ_DATA in rx_attr->mode where a write with data
# consumes a receive.  Cost: ~15 s.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/fabric/lib.sh
. "$(dirname "$0")/lib.sh"
fab_init fg
: "${FAB_GETINFO:=$top_builddir/tests/fabric/fab-getinfo}"
[ -x "$FAB_GETINFO" ] || fail "fab-getinfo not built at $FAB_GETINFO"
dp_one_host

log "fab-getinfo in instance A"
rc=0
fa env "${FAB_OWN_ENV[@]}" timeout -k 5 300 "$FAB_GETINFO" >"$TMPD/out" 2>&1 || rc=$?
sed 's/^/    /' "$TMPD/out"
[ "$rc" = 0 ] || fail "fab-getinfo: exit $rc"
fmatch '^ok$' "$(cat "$TMPD/out")" "fab-getinfo's verdict"
fmatch '^[0-9]+ fi_getinfo calls, [1-9][0-9]* answered' "$(cat "$TMPD/out")" "some answers"
log "ok"
