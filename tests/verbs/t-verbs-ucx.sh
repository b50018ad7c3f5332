#!/bin/bash
# UCX (Debian's ucx-utils 1.13), unmodified, over EFI between the instances
# of two hosts (issue 16), as far as it goes today:
#
#  - UCX keeps a verbs device only if /dev/infiniband/<ibv_device.dev_name>
#    is a character device it may read and write (uct_ib_device_is_accessible:
#    stat, S_ISCHR, access; it never opens it).  EFI has no such node yet
#    (docs/verbs.md, "UCX"): this test makes one, an alias of /dev/null, in
#    a private mount namespace (an overlay on /dev), never on the host.
#  - With it, ucx_info -d lists efi0:1 with rc_verbs (its QPs receive
#    through an SRQ), ud_verbs fails cleanly (no UD QPs).
#  - UCT over rc_verbs runs: ucx_perftest put_lat, put_bw, am_lat, am_bw
#    between the instances, and their figures print beside UCX's tcp
#    transport's (which has no put).
#  - UCP (tag_lat …) over rc_verbs stops at "no auxiliary transport": UCX
#    1.13 wires RC endpoints up through ud_verbs, which needs UD QPs.
# Cost: ~20 s.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/verbs/lib.sh
. "$(dirname "$0")/lib.sh"
verbs_init vx
verbs_need ucx_perftest ucx-utils
verbs_need unshare util-linux
dp_two_hosts

# Everything below runs in one private mount namespace whose /dev is an
# overlay holding /dev/infiniband/uverbs0 (libefi-verbs' dev_name).
mkdir -p "$TMPD/ov/u" "$TMPD/ov/w"
export A B SOCK_A SOCK_B IP_A IP_B EFI_RUN TMPD
cat >"$TMPD/inner.sh" <<'EOS'
set -eu
mount -t overlay overlay -o "lowerdir=/dev,upperdir=$TMPD/ov/u,workdir=$TMPD/ov/w" /dev
mkdir -p /dev/infiniband
mknod -m 666 /dev/infiniband/uverbs0 c 1 3
# UCX is not ours: its leaks at exit are no finding of a sanitizer build
# (tests/verbs/lib.sh, VERBS_FOREIGN_ENV)
asan="ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
xa() { ip netns exec "$A" env EFI_SOCKET="$SOCK_A" "$asan" "$EFI_RUN" "$@"; }
xb() { ip netns exec "$B" env EFI_SOCKET="$SOCK_B" "$asan" "$EFI_RUN" "$@"; }
port=13400
# perf NAME SERVER_ARGS -- CLIENT_ARGS: server in A, client in B, both
# with the environment PENV; the client's output in $TMPD/NAME.c, the
# server's in $TMPD/NAME.s, the client's exit status in $TMPD/NAME.rc if
# it failed
PENV=()
perf() {
	local name=$1 s=() spid
	shift
	while [ "$1" != -- ]; do s+=("$1"); shift; done
	shift
	port=$((port + 1))
	xa timeout -k 5 60 env "${PENV[@]}" ucx_perftest -p "$port" "${s[@]}" >"$TMPD/$name.s" 2>&1 &
	spid=$!
	for _ in $(seq 1 100); do
		ip netns exec "$A" ss -Hltn "sport = :$port" | grep -q . && break
		sleep 0.05
	done
	xb timeout -k 5 60 env "${PENV[@]}" ucx_perftest -p "$port" "$@" "$IP_A" >"$TMPD/$name.c" 2>&1 ||
		echo "$?" >"$TMPD/$name.rc"
	# a server whose client failed waits for nobody
	kill "$spid" 2>/dev/null || true
	wait "$spid" || true
}
xa ucx_info -d >"$TMPD/info" 2>&1 || true
for spec in "put_lat 8 short" "put_bw 65536 zcopy" "am_lat 8 short" "am_bw 4096 bcopy"; do
	read -r t size layout <<<"$spec"
	perf "rc_$t" -d efi0:1 -x rc_verbs -- -d efi0:1 -x rc_verbs -t "$t" -n 1000 -s "$size" -D "$layout"
	perf "tcp_$t" -d efi0 -x tcp -- -d efi0 -x tcp -t "$t" -n 1000 -s "$size" -D "$layout"
done
PENV=(UCX_TLS=rc_verbs)
perf ucp_rc -- -t tag_lat -n 100
PENV=(UCX_TLS=tcp UCX_NET_DEVICES=efi0)
perf ucp_tcp -- -t tag_lat -n 2000
EOS
before=$(ls -l /dev/infiniband 2>&1)
unshare -m --propagation private bash "$TMPD/inner.sh" || fail "the private /dev with a uverbs0 node could not be made"
[ "$(ls -l /dev/infiniband 2>&1)" = "$before" ] || fail "the host's /dev/infiniband changed"

info=$(cat "$TMPD/info")
vmatch 'Transport: rc_verbs' "$info" "ucx_info -d: rc_verbs"
vmatch 'Device: efi0:1' "$info" "ucx_info -d: efi0:1"
# median and average latency (us), average bandwidth (MB/s); "-" where
# the transport lacks the operation (tcp has no put)
row() { awk '/^Final:/ {print $3, $4, $6; f = 1} END {if (!f) print "-"}' "$TMPD/$1.c"; }
log "UCT: median and average latency (us), average bandwidth (MB/s)"
printf '    %-8s %-28s %s\n' test "rc_verbs (EFI)" "tcp (kernel TCP, same interface)"
for t in put_lat put_bw am_lat am_bw; do
	[ ! -e "$TMPD/rc_$t.rc" ] || fail "ucx_perftest -x rc_verbs -t $t failed: $(cat "$TMPD/rc_$t.c" "$TMPD/rc_$t.s")"
	r=$(row "rc_$t")
	[ -n "$r" ] || fail "ucx_perftest -x rc_verbs -t $t: no Final row: $(cat "$TMPD/rc_$t.c")"
	printf '    %-8s %-28s %s\n' "$t" "$r" "$(row "tcp_$t")"
done
out=$(cat "$TMPD/ucp_rc.c")
vmatch 'no auxiliary transport' "$out" "UCP over rc_verbs alone: needs ud_verbs to wire up"
[ ! -e "$TMPD/ucp_tcp.rc" ] || fail "UCP tag_lat over tcp failed: $(cat "$TMPD/ucp_tcp.c")"
log "UCP tag_lat over tcp: $(row ucp_tcp)"
