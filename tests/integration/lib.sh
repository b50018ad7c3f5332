# shellcheck shell=bash
# shellcheck disable=SC2016 # jq programs: their $names are jq's, not ours
# Helpers shared by the integration tests (tests/integration/t-*.sh).
#
# Each test starts with
#     [ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
#     . "$(dirname "$0")/lib.sh"
#     lib_init TAG          # TAG: 2 lowercase chars, unique per test file
# and then creates everything through the mk_* / efid_* helpers, which track
# what they made so that lib_cleanup (trap on EXIT, INT, TERM) removes it all,
# even when the test fails halfway, and then checks that nothing carrying the
# test's prefix is left behind.
#
# Exit codes: 0 pass, 1 fail, 77 skip (not root, no `ip netns`, no jq).
#
# The automake harness exports EFID, EFICTL, top_srcdir, top_builddir and
# FIXTURES.  Run by hand from a build dir:
#     sudo env EFID=$PWD/efid/efid EFICTL=$PWD/efictl/efictl \
#          top_builddir=$PWD bash /work/main/tests/integration/t-attach-detach.sh
# Set EFI_IT_DEBUG=1 to trace (set -x) and keep efid's log on success too.

set -u
set -o pipefail

: "${top_builddir:=.}"
: "${EFID:=$top_builddir/efid/efid}"
: "${EFICTL:=$top_builddir/efictl/efictl}"
: "${CTLRAW:=$top_builddir/tests/integration/ctlraw}"

# How long one efictl call may take before we call it a hang.
CTL_TIMEOUT=${CTL_TIMEOUT:-20}

# --- tracking -------------------------------------------------------------

TRACK_NETNS=()
TRACK_LINKS=()     # bridges, dummies, veths made by the test in the host ns
TRACK_MOUNTS=()
TRACK_USERS=()
TRACK_GROUPS=()
TRACK_BGPIDS=()    # helper processes (ctlraw, sqlite3 lockers, pings)
TRACK_HOSTIDS=()   # host ids of every efid started, for the alias sweep
EFID_IDS=()
declare -A EFID_PID=() EFID_SOCK=() EFID_DIR=() EFID_HID=()
SOCK=""            # socket of the efid started last; what `ctl` talks to
HID=""             # its host id

# --- reporting ------------------------------------------------------------

log() {
	local t
	printf -v t '%(%T)T' "${EPOCHREALTIME%.*}"
	local us=${EPOCHREALTIME#*.}
	printf '%s.%s [%s] %s\n' "$t" "${us:0:3}" "${TEST_NAME:-?}" "$*"
}

skip() {
	echo "SKIP: $*"
	exit 77
}

# fail MESSAGE: prints where and why, then exits 1 (cleanup runs on EXIT).
fail() {
	local i caller=""
	for ((i = 1; i < ${#BASH_LINENO[@]}; i++)); do
		case "${FUNCNAME[$i]:-}" in
		assert_* | fail | wait_for | jq_status | iface_json | efid_*) continue ;;
		esac
		caller="${BASH_SOURCE[$i]##*/}:${BASH_LINENO[$((i - 1))]}"
		break
	done
	# fd 3 is the test's stderr even where a caller redirected 2
	echo "FAIL${caller:+ at $caller}: $*" >&3
	# Inside $(...) or a background job, exit alone would only end the
	# subshell: tell the test's main shell to fail as well.
	[ "$BASH_SUBSHELL" -gt 0 ] && kill -USR1 $$ 2>/dev/null
	exit 1
}

# --- init and cleanup -----------------------------------------------------

lib_init() {
	TEST_TAG=$1
	[ ${#TEST_TAG} = 2 ] || { echo "lib_init: tag must be 2 chars" >&2; exit 99; }
	TEST_NAME=$(basename "$0" .sh)
	exec 3>&2
	[ "${EFI_IT_DEBUG:-0}" = 1 ] && set -x
	[ "$(id -u)" = 0 ] || skip "integration tests need root"
	[ "${EFI_ROOT_TESTS:-run}" = skip ] && skip "EFI_ROOT_TESTS=skip (scripts/test.sh runs them in its other stages)"
	command -v ip >/dev/null 2>&1 || skip "iproute2 (ip) is not installed"
	command -v jq >/dev/null 2>&1 || skip "jq is not installed (apt-get install jq)"
	ip netns list >/dev/null 2>&1 || skip "ip netns is unavailable"
	[ -x "$EFID" ] || fail "efid not built at $EFID"
	[ -x "$EFICTL" ] || fail "efictl not built at $EFICTL"

	# Unique per test run: tag + pid in hex.  The fixed-length tag keeps one
	# test's prefix from being a prefix of another's; names stay <= 15
	# chars with a suffix of up to 6 (1 + 2 + 6 + 6).
	PFX="e${TEST_TAG}$(printf %x $$)"
	[ ${#PFX} -le 11 ] || fail "prefix $PFX too long: use a shorter tag"
	TMPD=$(mktemp -d "/tmp/efi-it-$TEST_TAG.XXXXXX") || fail "mktemp failed"
	# Traversable so that the non-root test can reach sockets below it.
	chmod 755 "$TMPD"
	trap lib_cleanup EXIT
	trap 'echo "interrupted" >&2; exit 1' INT TERM
	trap 'exit 1' USR1
	log "prefix $PFX, temp dir $TMPD"
}

# Removes every device in the host namespace whose alias starts with $1.
_delete_alias_devices() {
	local prefix=$1 dev
	for dev in $(ip -j link show 2>/dev/null |
		jq -r --arg p "$prefix" '.[] | select((.ifalias // "") | startswith($p)) | .ifname'); do
		ip link del "${dev%@*}" 2>/dev/null
	done
}

# What is left of this test in the kernel and the process table (empty when
# clean).
_leftovers() {
	local ns hid p
	ip netns list 2>/dev/null | awk '{print $1}' | grep "^$PFX" | sed 's/^/netns /'
	ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//' |
		grep "^$PFX" | sed 's/^/link /'
	for hid in "${TRACK_HOSTIDS[@]}"; do
		ip -j link show 2>/dev/null | jq -r --arg p "efi:$hid:" \
			'.[] | select((.ifalias // "") | startswith($p)) | "device \(.ifname) alias \(.ifalias)"'
	done
	for p in "${EFID_PID[@]}"; do
		pid_running "$p" && echo "efid pid $p"
	done
	for p in "${TRACK_MOUNTS[@]}"; do
		mountpoint -q "$p" 2>/dev/null && echo "mount $p"
	done
	return 0
}

lib_cleanup() {
	local rc=$? id p i left
	trap - EXIT INT TERM USR1
	set +e +x
	for p in "${TRACK_BGPIDS[@]}"; do
		pid_running "$p" && kill "$p" 2>/dev/null
	done
	for p in "${TRACK_BGPIDS[@]}"; do
		wait "$p" 2>/dev/null
	done
	# An efid still tracked here was not stopped by the test: it must still
	# be running, and exit cleanly (0) on SIGTERM.  A crash, or a sanitizer
	# report at exit, fails the test.
	for id in "${EFID_IDS[@]}"; do
		p=${EFID_PID[$id]:-}
		[ -n "$p" ] || continue
		if pid_running "$p"; then
			_stop_pid "$p" TERM
			if [ "$STOP_RC" != 0 ]; then
				echo "FAIL: efid '$id' exited with status $STOP_RC on SIGTERM" >&2
				rc=1
			fi
		else
			# 127: not (or no longer) our child, nothing to report
			wait "$p" 2>/dev/null
			i=$?
			if [ "$i" != 127 ]; then
				echo "FAIL: efid '$id' died during the test (status $i)" >&2
				rc=1
			fi
		fi
	done
	if [ "$rc" != 0 ] && [ "$rc" != 77 ] || [ "${EFI_IT_DEBUG:-0}" = 1 ]; then
		for id in "${EFID_IDS[@]}"; do
			echo "----- efid '$id' log (${EFID_DIR[$id]}/efid.log) -----"
			tail -n 200 "${EFID_DIR[$id]}/efid.log" 2>/dev/null
			echo "----- end of efid '$id' log -----"
		done
	fi
	# Host-side devices first: deleting a veth end takes its peer inside
	# the namespace with it, synchronously.
	for p in "${TRACK_HOSTIDS[@]}"; do
		_delete_alias_devices "efi:$p:"
	done
	for p in "${TRACK_NETNS[@]}"; do
		# processes still inside keep the namespace alive
		ip netns pids "$p" 2>/dev/null | xargs -r kill -9 2>/dev/null
		ip netns del "$p" 2>/dev/null
	done
	for ((i = ${#TRACK_LINKS[@]} - 1; i >= 0; i--)); do
		ip link del "${TRACK_LINKS[$i]}" 2>/dev/null
	done
	for ((i = ${#TRACK_MOUNTS[@]} - 1; i >= 0; i--)); do
		umount -l "${TRACK_MOUNTS[$i]}" 2>/dev/null
	done
	for p in "${TRACK_USERS[@]}"; do
		userdel "$p" 2>/dev/null
	done
	for p in "${TRACK_GROUPS[@]}"; do
		groupdel "$p" 2>/dev/null
	done
	[ -n "${TMPD:-}" ] && rm -rf "$TMPD"

	# Namespace teardown is asynchronous in the kernel: give it a moment.
	if [ -n "${PFX:-}" ]; then
		for i in $(seq 1 60); do
			left=$(_leftovers)
			[ -z "$left" ] && break
			sleep 0.05
		done
		if [ -n "$left" ]; then
			echo "FAIL: test left these behind:" >&2
			while IFS= read -r i; do
				echo "    $i"
			done <<<"$left" >&2
			rc=1
		fi
	fi
	case $rc in
	0) echo "PASS: ${TEST_NAME:-}" ;;
	77) ;;
	*) echo "FAIL: ${TEST_NAME:-} (exit $rc)" ;;
	esac
	exit "$rc"
}

# --- processes ------------------------------------------------------------

# True while pid exists, is not a zombie, and is still a child of this test:
# pids wrap around quickly on a busy machine, and a stale pid may by now
# belong to another test's efid, which we must never signal.
pid_running() {
	local st
	[ -n "$1" ] && [ -r "/proc/$1/stat" ] || return 1
	st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null)
	[ "${st%% *}" != Z ] && [ "${st%% *}" != X ] || return 1
	st=${st#* }
	# a child of this shell, or of the subshell running this (a function
	# called inside $(...) starts its jobs from $BASHPID, not $$)
	[ "${st%% *}" = "$$" ] || [ "${st%% *}" = "$BASHPID" ]
}

# Sends a signal to a child of this shell, waits up to 10 s (then SIGKILL) and
# sets STOP_RC to its exit status as `wait` reports it.  Not in $(...): only
# the parent shell can wait for its child.
_stop_pid() {
	local pid=$1 sig=${2:-TERM} i
	pid_running "$pid" && kill "-$sig" "$pid" 2>/dev/null
	for i in $(seq 1 200); do
		pid_running "$pid" || break
		sleep 0.05
	done
	if pid_running "$pid"; then
		echo "pid $pid did not exit within 10 s of SIG$sig; killing it" >&2
		kill -KILL "$pid" 2>/dev/null
	fi
	wait "$pid" 2>/dev/null
	STOP_RC=$?
}

# Runs a command in the background and tracks it for cleanup; sets BGPID.
bg_track() {
	"$@" &
	BGPID=$!
	TRACK_BGPIDS+=("$BGPID")
}

# --- kernel objects -------------------------------------------------------

# mk_netns NAME: an instance namespace (lo up, no IPv6 DAD so addresses are
# usable, and GIDs final, at once).
mk_netns() {
	ip netns add "$1" || fail "ip netns add $1 failed"
	TRACK_NETNS+=("$1")
	ip -n "$1" link set lo up
	ip netns exec "$1" sysctl -qw net.ipv6.conf.default.accept_dad=0 \
		net.ipv6.conf.all.accept_dad=0 >/dev/null 2>&1
	return 0
}

mk_bridge() {
	ip link add "$1" type bridge || fail "ip link add $1 type bridge failed"
	TRACK_LINKS+=("$1")
	# no STP/forward delay: ports forward at once
	ip link set "$1" type bridge forward_delay 0 stp_state 0 2>/dev/null
	ip link set "$1" up
}

# mk_link NAME ip-link-add-args...: any other host device, tracked.
mk_link() {
	local name=$1
	shift
	ip link add "$name" "$@" || fail "ip link add $name $* failed"
	TRACK_LINKS+=("$name")
}

track_mount() { TRACK_MOUNTS+=("$1"); }
track_user() { TRACK_USERS+=("$1"); }
track_group() { TRACK_GROUPS+=("$1"); }

# --- efid -----------------------------------------------------------------

# efid_config ID [Section.Key=Value ...]: writes $TMPD/ID/efid.conf.  The
# defaults keep tests away from /etc: an empty interfaces directory of the
# test's own, Repair=no, debug logs.
efid_config() {
	local id=$1 d=$TMPD/$1 kv sec key
	shift
	mkdir -p "$d/state" "$d/run" "$d/ifdir"
	chmod 755 "$d" "$d/run"
	declare -A cfg=([Daemon.LogLevel]=debug [Interfaces.Directory]="$d/ifdir"
		[Interfaces.Repair]=no)
	for kv in "$@"; do
		cfg[${kv%%=*}]=${kv#*=}
	done
	: >"$d/efid.conf"
	for sec in Daemon Control Interfaces Transport ConnectionManager Limits CongestionControl; do
		local lines=""
		for key in "${!cfg[@]}"; do
			[ "${key%%.*}" = "$sec" ] && lines+="${key#*.}=${cfg[$key]}"$'\n'
		done
		[ -n "$lines" ] && printf '[%s]\n%s' "$sec" "$lines" >>"$d/efid.conf"
	done
	EFID_DIR[$id]=$d
}

# efid_launch ID [extra efid args]: starts efid on $TMPD/ID (config written
# by efid_config), waits up to 10 s until `efictl status` answers, and makes
# it the current one (SOCK, HID).
efid_launch() {
	local id=$1 d=$TMPD/$1 pid i
	shift
	[ -f "$d/efid.conf" ] || efid_config "$id"
	echo "===== efid start $(date +%T.%N) =====" >>"$d/efid.log"
	# EFI_IT_WRAP: a command prefix for efid (e.g. "strace -f -o FILE") when
	# debugging.
	${EFI_IT_WRAP:-} "$EFID" --config "$d/efid.conf" --state-dir "$d/state" --runtime-dir "$d/run" "$@" \
		>>"$d/efid.log" 2>&1 3>&- &
	pid=$!
	EFID_PID[$id]=$pid
	EFID_SOCK[$id]=$d/run/efid.sock
	EFID_DIR[$id]=$d
	case " ${EFID_IDS[*]} " in *" $id "*) ;; *) EFID_IDS+=("$id") ;; esac
	for i in $(seq 1 200); do
		if ! pid_running "$pid"; then
			wait "$pid"
			i=$?
			EFID_PID[$id]=""
			fail "efid '$id' exited (status $i) before it was ready"
		fi
		# `status`, not `version`: efictl version prints its own version
		# and exits 0 even when no efid answers.
		timeout 5 "$EFICTL" --socket "$d/run/efid.sock" status >/dev/null 2>&1 && break
		sleep 0.05
	done
	[ "$i" -lt 200 ] || fail "efid '$id' not ready after 10 s"
	SOCK=$d/run/efid.sock
	HID=$(timeout "$CTL_TIMEOUT" "$EFICTL" --socket "$SOCK" --json status | jq -r .host_id)
	if [ -z "$HID" ] || [ "$HID" = null ]; then
		fail "efid '$id': no host_id in status --json"
	fi
	EFID_HID[$id]=$HID
	case " ${TRACK_HOSTIDS[*]} " in *" $HID "*) ;; *) TRACK_HOSTIDS+=("$HID") ;; esac
	log "efid '$id' ready: pid $pid host_id $HID"
}

# efid_start ID [Section.Key=Value ...]: efid_config + efid_launch.
efid_start() {
	efid_config "$@"
	efid_launch "$1"
}

# efid_stop ID [SIGNAL]: stops it and sets EFID_RC to its exit status; with
# SIGTERM (the default) anything but 0 fails the test.
efid_stop() {
	local id=$1 sig=${2:-TERM}
	_stop_pid "${EFID_PID[$id]}" "$sig"
	EFID_RC=$STOP_RC
	EFID_PID[$id]=""
	log "efid '$id' stopped by SIG$sig: exit status $EFID_RC"
	if [ "$sig" = TERM ] && [ "$EFID_RC" != 0 ]; then
		fail "efid '$id' exited with status $EFID_RC on SIGTERM (expected 0)"
	fi
}

# efid_use ID: makes ID the efid that `ctl` talks to.
efid_use() {
	SOCK=${EFID_SOCK[$1]}
	HID=${EFID_HID[$1]:-}
}

efid_pid() { echo "${EFID_PID[$1]}"; }

# --- efictl ---------------------------------------------------------------

# ctl ARGS...: efictl against the current efid, with a hang guard.
ctl() {
	timeout -k 2 "$CTL_TIMEOUT" "$EFICTL" --socket "$SOCK" "$@"
}

# ctl_on ID ARGS...: the same against another efid.
ctl_on() {
	local id=$1
	shift
	timeout -k 2 "$CTL_TIMEOUT" "$EFICTL" --socket "${EFID_SOCK[$id]}" "$@"
}

# ctl_ok ARGS...: ctl that must succeed; its stdout is printed.
ctl_ok() {
	local rc=0 out
	out=$(ctl "$@" 2>"$TMPD/ctl_ok.err") || rc=$?
	[ "$rc" = 0 ] || fail "efictl $* exited $rc: $(cat "$TMPD/ctl_ok.err") $out"
	printf '%s\n' "$out"
}

# --- assertions -----------------------------------------------------------

# assert_exit CODE CMD...: runs CMD; OUT and ERR receive its stdout/stderr.
assert_exit() {
	local want=$1 got=0
	shift
	"$@" >"$TMPD/assert.out" 2>"$TMPD/assert.err" || got=$?
	OUT=$(cat "$TMPD/assert.out")
	ERR=$(cat "$TMPD/assert.err")
	if [ "$got" != "$want" ]; then
		fail "$(printf '%s\n  expected exit %s, got %s\n  stdout: %s\n  stderr: %s' \
			"$*" "$want" "$got" "$OUT" "$ERR")"
	fi
}

# assert_fails CMD...: any non-zero exit (but not a timeout's 124); RC
# receives it.
assert_fails() {
	local got=0
	"$@" >"$TMPD/assert.out" 2>"$TMPD/assert.err" || got=$?
	# shellcheck disable=SC2034 # for the caller
	RC=$got
	OUT=$(cat "$TMPD/assert.out")
	ERR=$(cat "$TMPD/assert.err")
	if [ "$got" = 0 ] || [ "$got" -ge 124 ]; then
		fail "$(printf '%s\n  expected a failure exit, got %s\n  stdout: %s\n  stderr: %s' \
			"$*" "$got" "$OUT" "$ERR")"
	fi
}

assert_eq() {
	local want=$1 got=$2 what=${3:-value}
	[ "$want" = "$got" ] ||
		fail "$(printf '%s\n  expected: %s\n  got:      %s' "$what" "$want" "$got")"
}

assert_ne() {
	local bad=$1 got=$2 what=${3:-value}
	[ "$bad" != "$got" ] || fail "$what: got '$got', which it must not be"
}

# assert_match REGEX TEXT WHAT (extended regex, case-insensitive)
assert_match() {
	# A here-string, not a pipe: grep -q exits at the first match, and
	# under pipefail the writer's SIGPIPE would fail a matching text.
	grep -qiE -- "$1" <<<"$2" ||
		fail "$(printf '%s\n  expected to match: %s\n  got: %s' "${3:-text}" "$1" "$2")"
}

assert_no_match() {
	if grep -qiE -- "$1" <<<"$2"; then
		fail "$(printf '%s\n  must not match: %s\n  got: %s' "${3:-text}" "$1" "$2")"
	fi
}

# wait_for MS WHAT CMD...: polls CMD every 50 ms until it succeeds; fails
# after MS milliseconds.  WAITED_MS receives the time it took.
wait_for() {
	local ms=$1 what=$2 start now
	shift 2
	start=$(date +%s%3N)
	while :; do
		if "$@" >/dev/null 2>"$TMPD/wait_for.err"; then
			now=$(date +%s%3N)
			# shellcheck disable=SC2034 # for the caller
			WAITED_MS=$((now - start))
			return 0
		fi
		now=$(date +%s%3N)
		[ $((now - start)) -lt "$ms" ] ||
			fail "timed out after ${ms} ms waiting for: $what $(head -c 2000 "$TMPD/wait_for.err")"
		sleep 0.05
	done
}

# --- status as JSON ---------------------------------------------------------

# jq_status [jq options] FILTER [jq options]: `efictl --json status` through
# jq -r.
jq_status() {
	local json
	json=$(ctl --json status) || fail "efictl --json status failed"
	printf '%s' "$json" | jq -r "$@" || fail "jq $* failed on: $json"
}

# iface_json INSTANCE NAME: that interface's object, or "null".
iface_json() {
	jq_status '[.instances[] | select(.name == $i) | .interfaces[] | select(.name == $n)] | .[0]' \
		--arg i "$1" --arg n "$2"
}

# iface_field INSTANCE NAME JQ-PATH (e.g. .state)
iface_field() {
	iface_json "$1" "$2" | jq -r "$3"
}

# gids_of INSTANCE NAME: "index gid" lines sorted by index.
gids_of() {
	iface_json "$1" "$2" | jq -r '(.gids // []) | sort_by(.index) | .[] | "\(.index) \(.gid)"'
}

# has_gid INSTANCE NAME GID: true when that GID is in the interface's table.
has_gid() {
	[ "$(iface_json "$1" "$2" | jq --arg g "$3" '[(.gids // [])[] | select(.gid == $g)] | length')" -ge 1 ]
}

# has_gid_prefix INSTANCE NAME PREFIX: some GID starts with PREFIX (fe80:).
has_gid_prefix() {
	[ "$(iface_json "$1" "$2" | jq --arg g "$3" '[(.gids // [])[] | select(.gid | startswith($g))] | length')" -ge 1 ]
}

# not CMD...: inverts CMD, for wait_for.
not() { ! "$@"; }

# field_is INSTANCE NAME JQ-PATH VALUE: for wait_for.
field_is() {
	[ "$(iface_field "$1" "$2" "$3")" = "$4" ]
}

# --- kernel snapshots -----------------------------------------------------

# kernel_snapshot NS...: one line for the host namespace, one per namespace,
# without fields that change on their own (operstate, lifetimes, DAD flags,
# statistics).  Host devices are the test's own: carrying the mark of one of
# its efids, named with its prefix, or enslaved to one of its bridges.  One
# jq for everything: on a loaded machine each process costs.
kernel_snapshot() {
	local ns h hids=""
	for h in "${TRACK_HOSTIDS[@]}"; do
		hids+="\"$h\","
	done
	{
		ip -j -d link show
		for ns in "$@"; do
			ip -n "$ns" -j addr show 2>/dev/null || echo '[]'
		done
	} | jq -r -s --arg p "$PFX" --argjson h "[${hids%,}]" '
		. as $all |
		($all[0] | [.[] |
			select(((.ifalias // "") as $a | any($h[]; . as $x | $a | startswith("efi:" + $x + ":")))
				or (.ifname | startswith($p)) or ((.master // "") | startswith($p)))
			| {ifindex, ifname, mtu, master, ifalias, kind: (.linkinfo.info_kind // "")}]
			| sort_by(.ifname)) as $host |
		"host: \($host | tojson)",
		(range(0; $ARGS.positional | length) as $i |
			"\($ARGS.positional[$i]): \($all[$i + 1] | [.[] | {ifindex, ifname, mtu,
				up: ((.flags // []) | index("UP") != null),
				addrs: ([(.addr_info // [])[] | "\(.local)/\(.prefixlen)"] | sort)}]
				| sort_by(.ifname) | tojson)")' --args "$@"
}

# status_snapshot: efid's view, sorted so that order does not matter.
status_snapshot() {
	ctl --json status | jq -S '.instances |= sort_by(.name) |
		.instances[].interfaces |= sort_by(.name)' || fail "efictl --json status failed"
}

# assert_same_snapshot BEFORE AFTER WHAT: with a diff when they differ.
assert_same_snapshot() {
	if [ "$1" != "$2" ]; then
		diff <(printf '%s\n' "$1") <(printf '%s\n' "$2") >&2
		fail "${3:-state} changed (diff above: < before, > after)"
	fi
}

# host_efi_devices: names of host-side devices with this efid's alias.
host_efi_devices() {
	ip -j link show | jq -r --arg p "efi:$HID:" \
		'.[] | select((.ifalias // "") | startswith($p)) | .ifname' | sed 's/@.*//'
}

# no_host_devices: true when no host device carries this efid's mark.
no_host_devices() { [ -z "$(host_efi_devices)" ]; }

# ns_has_addr NS DEV ADDR/PREFIX
ns_has_addr() {
	ip -n "$1" -j addr show dev "$2" 2>/dev/null |
		jq -e --arg a "$3" '[.[].addr_info[] | "\(.local)/\(.prefixlen)"] | index($a) != null' \
			>/dev/null
}

# ns_link_up NS DEV: administratively up
ns_link_up() {
	ip -n "$1" -j link show dev "$2" 2>/dev/null | jq -e '.[0].flags | index("UP") != null' \
		>/dev/null
}

# ipv4_gid 10.1.2.3 → ::ffff:10.1.2.3
ipv4_gid() { echo "::ffff:$1"; }

# settle NS...: waits until no address in the namespaces is tentative and the
# link-local addresses exist, then a little for efid to see the events.
settle() {
	local ns i
	for ns in "$@"; do
		for i in $(seq 1 60); do
			ip -n "$ns" -j addr show 2>/dev/null |
				jq -e '[.[].addr_info[] | select(.tentative == true)] | length == 0' \
					>/dev/null && break
			sleep 0.05
		done
	done
	sleep 0.3
}
