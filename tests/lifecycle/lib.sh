# shellcheck shell=bash
# Helpers of the lifecycle tests (tests/lifecycle/t-lc-*.sh), on top of
# tests/cm/lib.sh (cm_init, cm_server, cm_bg, ...; dp_one_host /
# dp_two_hosts from tests/data/lib.sh).
# shellcheck source=tests/cm/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../cm/lib.sh"

# leases INSTANCE [IFNAME]: the contexts efid knows on the interface (LIST)
leases() { iface_json "$1" "${2:-efi0}" | jq -r '.leases'; }
# qps_of INSTANCE [IFNAME]: the QPs those contexts hold (their reservations)
qps_of() { iface_json "$1" "${2:-efi0}" | jq -r '.qps'; }

# lc_require_hooks ID: skips the test unless libefi reports to efid (the
# lease watcher is started by efi_open_device and QP creation reserves
# quota: docs/connection-manager.md, "Lifecycles").  Opens a device once in
# instance A and looks for the reservation in efid ID's log.
lc_require_hooks() {
	local id=$1
	in_a "$CM_TEST" listen 7400 >/dev/null 2>&1 || fail "cm-test listen failed"
	grep -q 'lease: pid [0-9]* reserves' "${EFID_DIR[$id]}/efid.log" ||
		skip "libefi does not watch its lease yet (the hooks in device.c/qp.c/pd_mr.c are not in)"
}

# For wait_for (which runs a command again and again, so the value must be
# read inside it): leases_are INSTANCE N, qps_are INSTANCE N,
# conns_are INSTANCE N (CM connections on efi0).
leases_are() { [ "$(leases "$1")" = "$2" ]; }
qps_are() { [ "$(qps_of "$1")" = "$2" ]; }
conns_are() { [ "$(iface_json "$1" efi0 | jq -r '.connections | length')" = "$2" ]; }
