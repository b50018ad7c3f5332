#!/bin/bash
# fi_pingpong (Debian's libfabric-bin, unmodified) over the efi provider
# between two instances of one host and between two hosts: -e msg (the
# core provider: FI_EP_MSG over RC QPs and the connection manager), every
# size, and -e rdm (ofi_rxm layered on it: "efi;ofi_rxm", what MPI uses),
# with data integrity checks (-c).  Argument: one (default) or two hosts.
# Cost: ~15 s.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/fabric/lib.sh
. "$(dirname "$0")/lib.sh"
fab_init fp fi_pingpong libfabric-bin

: "${FAB_PP_ITERS:=50}"
PP_PORT=47592

# pingpong EP-TYPE [ARGS...]: server in A, client in B toward IP_A; both
# must run to the end and print a line per size.
pingpong() {
	local ep=$1 spid crc=0 src=0
	shift
	fa timeout -k 5 50 fi_pingpong -p efi -e "$ep" -I "$FAB_PP_ITERS" -c "$@" \
		>"$TMPD/pp.s" 2>&1 &
	spid=$!
	TRACK_BGPIDS+=("$spid")
	wait_for 10000 "fi_pingpong server on TCP $PP_PORT in $A" \
		bash -c "ip netns exec '$A' ss -Hltn 'sport = :$PP_PORT' | grep -q ."
	fb timeout -k 5 50 fi_pingpong -p efi -e "$ep" -I "$FAB_PP_ITERS" -c "$@" "$IP_A" \
		>"$TMPD/pp.c" 2>&1 || crc=$?
	wait "$spid" || src=$?
	sed 's/^/    server: /' "$TMPD/pp.s"
	sed 's/^/    client: /' "$TMPD/pp.c"
	if [ "$crc" != 0 ] || [ "$src" != 0 ]; then
		fail "fi_pingpong -e $ep $*: client exit $crc, server exit $src"
	fi
	local f
	for f in "$TMPD/pp.s" "$TMPD/pp.c"; do
		# "all": 64 B … 1 MiB, every one of them ran its iterations
		local sz
		for sz in 64 256 1k 4k 64k 1m; do
			fmatch "^$sz +$FAB_PP_ITERS +=$FAB_PP_ITERS +[0-9.]+[kmg]? +[0-9.]+s +[0-9.]+ +[0-9.]+ +[0-9.]+\$" \
				"$(cat "$f")" "the result line for $sz bytes"
		done
	done
}

case "${1:-one}" in
one)
	dp_one_host
	log "one host: fi_pingpong -p efi -e msg"
	;;
*)
	dp_two_hosts
	log "two hosts: fi_pingpong -p efi -e msg"
	;;
esac
pingpong msg
log "fi_pingpong -p efi -e rdm (efi;ofi_rxm)"
pingpong rdm
log "ok"
