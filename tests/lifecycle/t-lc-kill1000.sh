#!/bin/bash
# SPDX-License-Identifier: MIT
# 1,000 processes killed with SIGKILL while they hold what efid gave them:
# half of them a lease and a QP, half a lease and a CM listener.  Within a
# second of the last kill efid holds no lease, QP reservation or listener
# of theirs, and has exactly as many open descriptors as before.  Processes
# (forked by lc-fork) run 20 at a time, each killed once it holds everything.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/lifecycle/lib.sh
. "$(dirname "$0")/lib.sh"
cm_init lk
dp_one_host
: "${LC_KILLS:=1000}"
: "${LC_FORK:=$top_builddir/tests/lifecycle/lc-fork}"
[ -x "$LC_FORK" ] || fail "lc-fork not built at $LC_FORK"

efid_pid=$(efid_pid main)
fds() { find "/proc/$efid_pid/fd" -mindepth 1 -maxdepth 1 | wc -l; }
fds_are() { [ "$(fds)" -eq "$1" ]; }
# a first process, so that efid's lazily made state exists before the count
assert_exit 0 in_a "$CM_TEST" listen 7400
fds_before=$(fds)
log "efid has $fds_before descriptors open; $LC_KILLS processes follow"

start=$(date +%s)
in_a "$LC_FORK" "$LC_KILLS" 20 || fail "lc-fork failed"
log "$LC_KILLS processes started and killed in $(($(date +%s) - start)) s"

wait_for 1000 "no lease left" leases_are "$A" 0
log "leases reclaimed ${WAITED_MS} ms after the last kill"
assert_eq "$(qps_of "$A")" 0
assert_eq "$(iface_json "$A" efi0 | jq -r '.listeners | length')" 0
wait_for 1000 "efid's descriptors back to $fds_before" fds_are "$fds_before"
log "pass"
