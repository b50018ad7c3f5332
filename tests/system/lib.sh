# shellcheck shell=bash
# Helpers shared by the tests in tests/system/ (sourced, not run).
#
# Every test gets its own directory from make_tmpdir and registers what it
# starts with track_pid; the EXIT trap kills those processes and removes the
# directory whatever way the test ends.

: "${top_srcdir:?run through make check (top_srcdir is not set)}"
: "${top_builddir:?run through make check (top_builddir is not set)}"
: "${EFID:=$top_builddir/efid/efid}"
: "${EFICTL:=$top_builddir/efictl/efictl}"

SKIP=77
TEST_NAME=$(basename "$0" .sh)
TEST_TMP=
TRACKED_PIDS=()
EXIT_HOOKS=()

fail() {
	echo "FAIL: $TEST_NAME: $*" >&2
	exit 1
}

skip() {
	echo "SKIP: $TEST_NAME: $*" >&2
	exit "$SKIP"
}

need_root() {
	[ "$(id -u)" -eq 0 ] || skip "needs root"
	[ "${EFI_ROOT_TESTS:-run}" = skip ] && skip "EFI_ROOT_TESTS=skip (scripts/test.sh runs them in its other stages)"
}

need_cmd() {
	command -v "$1" >/dev/null 2>&1 || skip "needs $1 (scripts/install-deps.sh --test installs it)"
}

cleanup() {
	local rc=$? pid hook
	for pid in "${TRACKED_PIDS[@]}"; do
		kill -TERM "$pid" 2>/dev/null || true
	done
	for pid in "${TRACKED_PIDS[@]}"; do
		# Give each a moment, then make sure.
		for _ in 1 2 3 4 5 6 7 8 9 10; do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	# Test-specific undo (namespaces, links), newest first, after the
	# processes that used them are gone.
	for ((i = ${#EXIT_HOOKS[@]} - 1; i >= 0; i--)); do
		hook=${EXIT_HOOKS[i]}
		"$hook" || true
	done
	if [ -n "$TEST_TMP" ] && [ -d "$TEST_TMP" ]; then
		if [ "$rc" -ne 0 ] && [ "$rc" -ne "$SKIP" ]; then
			# Leave the evidence in the test's log.
			for f in "$TEST_TMP"/*.log; do
				[ -f "$f" ] || continue
				echo "--- $f"
				tail -n 50 "$f"
			done
		fi
		rm -rf "$TEST_TMP"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

make_tmpdir() {
	TEST_TMP=$(mktemp -d "/tmp/efi-$TEST_NAME.XXXXXX") || fail "mktemp failed"
}

track_pid() {
	TRACKED_PIDS+=("$1")
}

# at_exit FUNCTION: run FUNCTION on exit, after tracked processes are killed.
at_exit() {
	EXIT_HOOKS+=("$1")
}

# wait_for SECONDS COMMAND...: polls COMMAND every 50 ms until it succeeds.
wait_for() {
	local deadline=$(( $(date +%s%N) / 1000000 + $1 * 1000 ))
	shift
	until "$@"; do
		[ $(( $(date +%s%N) / 1000000 )) -lt "$deadline" ] || return 1
		sleep 0.05
	done
}

# A config that applies no interface directory, so a test never touches what
# the machine has in /etc/efi/interfaces.d.  The shipped efid.conf comes
# first: every efid a test starts also proves that the shipped file parses.
write_test_config() {
	cat "$top_srcdir/etc/efid.conf" > "$1"
	printf '\n# test overrides\n[Interfaces]\nDirectory=\n' >> "$1"
}
