#!/bin/bash
# efi_post_send, efi_post_recv and efi_poll_cq make no system call other than
# the datagram I/O itself: strace the client of a 2000-round ping-pong and
# count, in the thread that posts and polls, every system call between the
# loop's two markers.  Lock hand-offs with the progress thread (futex) are
# counted and shown, not failed.  epoll_wait is datagram I/O too: with
# several lanes (sockets, [Transport] Lanes) the wire asks in one call
# which of them have datagrams before it reads those.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/data/lib.sh
. "$(dirname "$0")/lib.sh"
dp_init ds
command -v strace >/dev/null 2>&1 || skip "strace is not installed (apt-get install strace)"
dp_one_host

TRACE=$TMPD/strace.out
# LeakSanitizer cannot run under ptrace; leaks are checked by every other
# test of the sanitizer build, so switch it off for this traced run only.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
DP_CLIENT_WRAP="strace -f -qq -o $TRACE" dp_run syscalls
[ -s "$TRACE" ] || fail "strace wrote nothing to $TRACE"

# the first line is dp-test's execve: its pid is the main thread's
main_tid=$(awk 'NR == 1 {print $1}' "$TRACE")
calls=$(awk -v tid="$main_tid" '
	$1 != tid { next }
	/DP-LOOP-BEGIN/ { inside = 1; next }
	/DP-LOOP-END/ { inside = 0; done = 1; next }
	!inside { next }
	{
		# "<... name resumed>" continues a call counted when it began
		if ($2 == "<...") next
		name = $2; sub(/\(.*/, "", name)
		print name
	}
	END { if (!done) print "MARKERS-MISSING" }' "$TRACE" | sort | uniq -c | sort -rn)
log "system calls of the posting thread inside the loop:"
printf '%s\n' "${calls:-    (none)}" | sed 's/^/    /'
assert_no_match 'MARKERS-MISSING' "$calls" "loop markers in the strace output"
bad=$(printf '%s\n' "$calls" | awk 'NF == 2 && $2 !~ /^(sendmmsg|recvmmsg|sendmsg|recvmsg|sendto|recvfrom|epoll_wait|futex)$/')
[ -z "$bad" ] || fail "$(printf 'post/poll made system calls other than datagram I/O:\n%s' "$bad")"
io=$(printf '%s\n' "$calls" | awk '$2 ~ /^(sendmmsg|recvmmsg|sendmsg|recvmsg|sendto|recvfrom)$/ {n += $1} END {print n + 0}')
[ "$io" -gt 0 ] || fail "no datagram I/O in the posting thread at all: does the loop run?"
log "only datagram I/O ($io calls) in 2000 ping-pongs"
