#!/bin/bash
# fio's rdma engine (Debian's fio 3.33, linked with libibverbs and
# librdmacm), unmodified, between the instances of two hosts under efi-run
# (issue 16): its connection through libefi-rdmacm, its QPs and MRs through
# libefi-verbs.  The client (rw=write, hostname set) moves 64 MiB in 64 KiB
# requests with each verb fio has: RDMA Write, RDMA Read and Send; both
# sides must end with err=0 and the client must report io=64.0MiB.  The
# same binary without efi-run must fail (the system librdmacm finds no
# rdma_cm device): proof that EFI carried it.
# Cost: ~15 s.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/verbs/lib.sh
. "$(dirname "$0")/lib.sh"
verbs_init vf
verbs_need fio fio
dp_two_hosts
# efi-run's librdmacm: libefi-rdmacm's, in the build tree (make check makes
# the directory)
: "${EFI_RDMACM_DIR:=$top_builddir/rdmacm/.libs/efi/rdmacm}"
export EFI_RDMACM_DIR
[ -r "$EFI_RDMACM_DIR/librdmacm.so.1" ] ||
	skip "libefi-rdmacm is not built ($EFI_RDMACM_DIR/librdmacm.so.1)"

# fio_pair VERB PORT: the receiving side in A (fio's rdma server: no
# hostname), the client in B; their outputs in $TMPD/VERB.s and .c
fio_pair() {
	local verb=$1 port=$2 spid crc=0 src=0
	va timeout -k 5 60 fio --name=recv --ioengine=rdma --port="$port" --bs=64k --size=64m \
		--rw=read --iodepth=16 >"$TMPD/$verb.s" 2>&1 &
	spid=$!
	TRACK_BGPIDS+=("$spid")
	# fio's server listens through the connection manager, not on a TCP
	# port: wait for its banner
	wait_for 10000 "fio's rdma server" grep -q 'waiting for connection' "$TMPD/$verb.s"
	vb timeout -k 5 60 fio --name=send --ioengine=rdma --hostname="$IP_A" --port="$port" \
		--verb="$verb" --bs=64k --size=64m --rw=write --iodepth=16 --iodepth_batch_complete=8 \
		>"$TMPD/$verb.c" 2>&1 || crc=$?
	wait "$spid" || src=$?
	if [ "$crc" != 0 ] || [ "$src" != 0 ]; then
		_dp_show "$TMPD/$verb.s" server
		_dp_show "$TMPD/$verb.c" client
		fail "fio rdma verb=$verb: client exit $crc, server exit $src (output above)"
	fi
	grep -q 'send: (groupid=0, jobs=1): err= 0' "$TMPD/$verb.c" ||
		{ _dp_show "$TMPD/$verb.c" client; fail "fio rdma verb=$verb: the client's job has an error"; }
	grep -q 'recv: (groupid=0, jobs=1): err= 0' "$TMPD/$verb.s" ||
		{ _dp_show "$TMPD/$verb.s" server; fail "fio rdma verb=$verb: the server's job has an error"; }
	grep -q 'io=64.0MiB' "$TMPD/$verb.c" ||
		{ _dp_show "$TMPD/$verb.c" client; fail "fio rdma verb=$verb: not 64 MiB moved"; }
	log "fio rdma verb=$verb: $(grep -o 'WRITE: bw=[^,]*' "$TMPD/$verb.c")"
}

port=15100
for verb in write read send; do
	port=$((port + 1))
	fio_pair "$verb" "$port"
done

# without efi-run: the system librdmacm, no rdma_cm device, no run
out=$(in_b timeout -k 5 20 fio --name=send --ioengine=rdma --hostname="$IP_A" --port=15199 \
	--verb=write --bs=64k --size=1m --rw=write 2>&1) &&
	fail "fio rdma without efi-run succeeded: $out"
vmatch 'rdma_create_event_channel fail' "$out" "fio without efi-run: no rdma_cm"
