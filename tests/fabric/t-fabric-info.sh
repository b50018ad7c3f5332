#!/bin/bash
# fi_info (Debian's libfabric-bin) inside an instance lists the efi
# provider from the build tree, tells the truth about it (FI_EP_MSG,
# FI_MSG|FI_RMA|FI_ATOMIC, the interface's address, the MR mode) and lists
# "efi;ofi_rxm" with FI_EP_RDM and FI_TAGGED on top of it; outside an
# instance (no interface) it lists nothing.  Cost: ~3 s.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/fabric/lib.sh
. "$(dirname "$0")/lib.sh"
fab_init 'fi' fi_info libfabric-bin
dp_one_host

log "fi_info -p efi -t FI_EP_MSG -v in instance A (the core provider alone)"
out=$(fa fi_info -p efi -t FI_EP_MSG -v) || fail "fi_info -p efi failed: $out"
printf '%s\n' "$out" | head -80
fmatch "prov_name: efi\$" "$out" "provider name"
fmatch 'type: FI_EP_MSG' "$out" "endpoint type"
fmatch 'caps: .*FI_MSG.*FI_RMA.*FI_ATOMIC' "$out" "capabilities"
fmatch "FI_SOCKADDR_IN" "$out" "address format"
fmatch "fi_sockaddr_in://$IP_A:0" "$out" "source address: the interface's"
fmatch 'mr_mode: \[ FI_MR_LOCAL, FI_MR_VIRT_ADDR, FI_MR_ALLOCATED, FI_MR_PROV_KEY \]' "$out" "MR mode"
fmatch 'name: efi0' "$out" "domain name: the interface"
if grep -qE 'FI_TAGGED|FI_COLLECTIVE' <<<"$(grep 'caps:' <<<"$out")"; then
	fail "efi claims FI_TAGGED or FI_COLLECTIVE: $out"
fi

log "fi_info -p 'efi;ofi_rxm' -t FI_EP_RDM"
out=$(fa fi_info -p 'efi;ofi_rxm' -t FI_EP_RDM -v) || fail "fi_info efi;ofi_rxm failed: $out"
printf '%s\n' "$out" | grep -E 'provider|prov_name|type:|caps:' | head -8
fmatch 'prov_name: efi;ofi_rxm' "$out" "rxm over efi"
fmatch 'type: FI_EP_RDM' "$out" "RDM endpoint"
fmatch 'caps: .*FI_TAGGED' "$out" "tagged messages from rxm"

log "fi_info -p efi with a destination: an entry toward it"
out=$(fa fi_info -p efi -t FI_EP_MSG -n "$IP_B" -P 7000 -v) || fail "fi_info -n $IP_B failed: $out"
fmatch "dest_addr: fi_sockaddr_in://$IP_B:7000" "$out" "destination address"

log "outside an instance: no efi entry"
if out=$(env "${FAB_ENV[@]}" EFI_SOCKET="$SOCK_A" fi_info -p efi 2>&1); then
	fail "fi_info -p efi found something in the host namespace: $out"
fi
log "ok"
