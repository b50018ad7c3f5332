#!/bin/bash
# The EFI test suite, from a fresh Debian 12 machine (what CI runs):
#
#   scripts/test.sh
#
# Stages, each in its own out-of-tree build under ./build-test/:
#   werror    ./configure --enable-werror, make, make check
#             (unit tests; integration and system tests run as root and
#             are skipped, exit 77, otherwise)
#   sanitize  ./configure --enable-sanitizers --enable-werror, make check
#             under AddressSanitizer (leaks included) and UBSan
#   fuzz      ./configure CC=clang --enable-fuzzing, each libFuzzer target
#             run for EFI_FUZZ_SECONDS (20) from tests/fuzz/corpus/TARGET/
#   distcheck make distcheck (tarball, out-of-tree build, check, install,
#             uninstall)
# The last line printed is "N passed, N failed, N skipped": the PASS/FAIL/SKIP
# totals of every test-suite.log (XFAIL counts as passed, XPASS and ERROR as
# failed), plus one test per fuzz target and one for distcheck.  The exit
# status is 0 only when nothing failed.  On failure the failing tests' logs
# are printed.  Every skipped test is listed with its reason; under CI=true a
# skip counts as a failure unless the test is in tests/skip-allowed.txt (one
# line each: the test's name, a colon, why it may skip) — a skip in CI proves
# nothing, and usually means install-deps.sh misses a package.
#
# Knobs for local use (ignored when CI=true, where every stage runs):
#   EFI_TEST_STAGES="werror sanitize"   run only these stages
#   EFI_TEST_SKIP_DEPS=1                do not run install-deps.sh
# Always honoured: EFI_TEST_BUILD (build root, default ./build-test),
# EFI_TEST_JOBS (default: number of CPUs), EFI_FUZZ_SECONDS (default 20).
set -uo pipefail

SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_ROOT=${EFI_TEST_BUILD:-$SRC/build-test}
JOBS=${EFI_TEST_JOBS:-$(nproc)}
FUZZ_SECONDS=${EFI_FUZZ_SECONDS:-20}
ALL_STAGES="werror sanitize fuzz distcheck"
STAGES=${EFI_TEST_STAGES:-$ALL_STAGES}
SKIP_DEPS=${EFI_TEST_SKIP_DEPS:-0}
if [ "${CI:-}" = true ]; then
	STAGES=$ALL_STAGES
	SKIP_DEPS=0
fi
# A hung test must not eat CI's whole budget: each make check gets this long.
CHECK_TIMEOUT=${EFI_CHECK_TIMEOUT:-1500}

passed=0
failed=0
skipped=0
failures=()
skips=()
ALLOWED_SKIPS=$SRC/tests/skip-allowed.txt
START=$(date +%s)

say() { printf '\n\033[1m==> [%ds] %s\033[0m\n' "$(($(date +%s) - START))" "$*"; }

# A step that is not a test (configure, build) failing counts as one failure.
fail_step() {
	failed=$((failed + 1))
	failures+=("$1")
	echo "FAILED: $1" >&2
	if [ -n "${2:-}" ] && [ -f "$2" ]; then
		echo "--- last lines of $2:" >&2
		tail -n 60 "$2" >&2
	fi
}

# Adds the summary of an automake test-suite.log to the totals; prints the
# whole log (which holds every failing test's own log) when something failed.
# When make check was cut short (timeout) there is no test-suite.log: the
# results of the tests that did finish are then read from their .trs files.
count_suite() {
	local stage=$1 dir=$2 log=$2/test-suite.log p f s
	if [ -f "$log" ]; then
		read -r p f s < <(awk '
			/^# PASS:/  { p += $3 } /^# XFAIL:/ { p += $3 }
			/^# FAIL:/  { f += $3 } /^# XPASS:/ { f += $3 } /^# ERROR:/ { f += $3 }
			/^# SKIP:/  { s += $3 }
			END { print p + 0, f + 0, s + 0 }' "$log")
	else
		echo "$stage: no test-suite.log (make check did not finish); counting finished tests" >&2
		read -r p f s < <(find "$dir" -name '*.trs' -exec cat {} + 2>/dev/null | awk '
			$1 == ":test-result:" && ($2 == "PASS" || $2 == "XFAIL") { p++ }
			$1 == ":test-result:" && ($2 == "FAIL" || $2 == "XPASS" || $2 == "ERROR") { f++ }
			$1 == ":test-result:" && $2 == "SKIP" { s++ }
			END { print p + 0, f + 0, s + 0 }')
		# A test's .log without its .trs is a test that never finished.
		# (Tests live in subdirectories; the top holds this script's logs.)
		find "$dir" -mindepth 2 -name '*.log' ! -name '*-suite.log' 2>/dev/null |
			while read -r t; do
				[ -f "${t%.log}.trs" ] && continue
				echo "--- unfinished test: $t" >&2
				tail -n 40 "$t" >&2
			done
	fi
	passed=$((passed + p))
	failed=$((failed + f))
	skipped=$((skipped + s))
	echo "$stage: $p passed, $f failed, $s skipped"
	[ "$s" -gt 0 ] && count_skips "$stage" "$dir"
	if [ "$f" -gt 0 ]; then
		failures+=("$stage: $f test(s), see $dir/test-suite.log and the tests' .log files")
		if [ -f "$log" ]; then
			echo "--- $log" >&2
			cat "$log" >&2
		else
			grep -lE '^:test-result: (FAIL|XPASS|ERROR)' -r --include='*.trs' "$dir" |
				while read -r trs; do
					echo "--- ${trs%.trs}.log" >&2
					cat "${trs%.trs}.log" >&2
				done
		fi
	fi
}

# skip_allowed TEST: the allow-list's reason for TEST, empty if it has none.
skip_allowed() {
	[ -f "$ALLOWED_SKIPS" ] || return 0
	awk -v t="$1" '/^[[:space:]]*(#|$)/ { next }
		{ i = index($0, ":"); if (i && substr($0, 1, i - 1) == t) { print substr($0, i + 1); exit } }' "$ALLOWED_SKIPS"
}

# count_skips STAGE DIR: lists each skipped test of DIR with the reason its
# log gives; under CI=true one that is not allow-listed is a failure.
count_skips() {
	local stage=$1 dir=$2 trs t why allowed
	while read -r trs; do
		t=${trs#"$dir"/}
		t=${t%.trs}
		why=$(grep -m1 -o 'SKIP: .*' "${trs%.trs}.log" 2>/dev/null | cut -c7-)
		allowed=$(skip_allowed "$t")
		skips+=("$stage: $t: ${why:-no reason given}${allowed:+ (allowed:$allowed)}")
		if [ "${CI:-}" = true ] && [ -z "$allowed" ]; then
			failed=$((failed + 1))
			failures+=("$stage: $t skipped in CI (${why:-no reason given}); install what it needs in scripts/install-deps.sh, or allow-list it with a reason in tests/skip-allowed.txt")
		fi
	done < <(grep -l '^:test-result: SKIP' -r --include='*.trs' "$dir" 2>/dev/null | sort)
}

# configure_in DIR ARGS...: a fresh configure of the source tree in DIR.
configure_in() {
	local dir=$1
	shift
	mkdir -p "$dir"
	(cd "$dir" && "$SRC/configure" --quiet "$@") > "$dir/configure.log" 2>&1
}

stage_check() {
	local stage=$1
	shift
	local dir=$BUILD_ROOT/$stage
	say "$stage: configure $*"
	configure_in "$dir" "$@" || { fail_step "$stage: configure" "$dir/configure.log"; return; }
	say "$stage: make"
	make -C "$dir" -j"$JOBS" > "$dir/make.log" 2>&1 ||
		{ fail_step "$stage: build" "$dir/make.log"; return; }
	say "$stage: make check"
	# Results of an earlier run must not be counted again.
	find "$dir" \( -name '*.trs' -o -name 'test-suite.log' \) -delete 2>/dev/null
	timeout --kill-after=30 "$CHECK_TIMEOUT" make -C "$dir" -j"$JOBS" check > "$dir/check.log" 2>&1
	local rc=$?
	grep -E '^(PASS|FAIL|SKIP|XFAIL|XPASS|ERROR):' "$dir/check.log" || true
	if [ "$rc" -eq 124 ]; then
		# make deletes the logs of the tests it interrupts; it names them.
		local hung
		hung=$(sed -n "s/.*Deleting file '\(.*\)\.log'.*/\1/p" "$dir/check.log" | sort -u | tr '\n' ' ')
		fail_step "$stage: make check timed out after ${CHECK_TIMEOUT}s; still running: ${hung:-?}" ""
	fi
	count_suite "$stage" "$dir"
	# make check can fail outside the tests (building a check program).
	if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && ! grep -qE '^# (FAIL|ERROR|XPASS): *[1-9]' "$dir/test-suite.log" 2>/dev/null &&
		! grep -qrE '^:test-result: (FAIL|XPASS|ERROR)' --include='*.trs' "$dir"; then
		fail_step "$stage: make check exited $rc" "$dir/check.log"
	fi
}

stage_fuzz() {
	local dir=$BUILD_ROOT/fuzz t
	if ! command -v clang >/dev/null 2>&1; then
		fail_step "fuzz: clang is not installed (scripts/install-deps.sh --test)" ""
		return
	fi
	say "fuzz: configure CC=clang --enable-fuzzing"
	configure_in "$dir" CC=clang --enable-fuzzing --enable-werror ||
		{ fail_step "fuzz: configure" "$dir/configure.log"; return; }
	local targets list
	# Bring the Makefile up to date first, so that only the list is printed.
	if ! make -C "$dir" Makefile > "$dir/make.log" 2>&1 ||
		! list=$(make -s -C "$dir" --no-print-directory print-fuzz-targets 2>>"$dir/make.log"); then
		fail_step "fuzz: listing the fuzz targets" "$dir/make.log"
		return
	fi
	read -r -a targets <<<"$list"
	[ "${#targets[@]}" -gt 0 ] || { fail_step "fuzz: the build lists no fuzz targets" ""; return; }
	say "fuzz: make ${targets[*]}"
	make -C "$dir" -j"$JOBS" "${targets[@]}" >> "$dir/make.log" 2>&1 ||
		{ fail_step "fuzz: build" "$dir/make.log"; return; }
	for t in "${targets[@]}"; do
		t=${t##*/}
		local seeds=$SRC/tests/fuzz/corpus/${t#fuzz_}
		local work=$dir/corpus-$t
		local log=$dir/$t.log
		mkdir -p "$work"
		[ -d "$seeds" ] || { fail_step "fuzz: $t has no seed corpus at $seeds" ""; continue; }
		say "fuzz: $t for ${FUZZ_SECONDS}s"
		# New inputs go to $work; the seed directory in the tree is only read.
		# libFuzzer saves an input that crashes as $dir/crash-*; the log names it.
		if (cd "$dir" && timeout --kill-after=30 $((FUZZ_SECONDS + 120)) \
			"./tests/fuzz/$t" -max_total_time="$FUZZ_SECONDS" -timeout=10 \
			-rss_limit_mb=2048 -print_final_stats=1 "$work" "$seeds") > "$log" 2>&1; then
			passed=$((passed + 1))
			grep -E '^stat::number_of_executed_units|DONE' "$log" | tail -n 2
			echo "PASS: $t"
		else
			failed=$((failed + 1))
			failures+=("fuzz: $t (log $log)")
			echo "FAIL: $t" >&2
			tail -n 60 "$log" >&2
		fi
	done
}

stage_distcheck() {
	# distcheck needs a configured tree; reuse werror's or make one.
	local dir=$BUILD_ROOT/werror
	if [ ! -f "$dir/Makefile" ]; then
		say "distcheck: configure --enable-werror"
		configure_in "$dir" --enable-werror || { fail_step "distcheck: configure" "$dir/configure.log"; return; }
	fi
	say "distcheck: make distcheck"
	# The root-only tests already ran twice (werror, sanitize); distcheck is
	# about the tarball, so its make check runs the unit tests only.
	if EFI_ROOT_TESTS=skip timeout --kill-after=30 "$CHECK_TIMEOUT" make -C "$dir" -j"$JOBS" distcheck \
		DISTCHECK_CONFIGURE_FLAGS=--enable-werror > "$dir/distcheck.log" 2>&1; then
		passed=$((passed + 1))
		grep -A3 -E '^=+$' "$dir/distcheck.log" | grep -E 'archives ready|distributions? ready|\.tar\.' || true
		echo "PASS: distcheck"
	else
		failed=$((failed + 1))
		failures+=("distcheck (log $dir/distcheck.log)")
		echo "FAIL: distcheck" >&2
		tail -n 80 "$dir/distcheck.log" >&2
		# The distcheck build's test-suite.log, if tests were what failed.
		find "$dir" -path '*/_build/*' -name test-suite.log -exec cat {} + >&2 2>/dev/null || true
	fi
}

# ---- go ---------------------------------------------------------------------
if [ "$SKIP_DEPS" != 1 ]; then
	say "Installing build and test dependencies"
	bash "$SRC/scripts/install-deps.sh" --test || { echo "test.sh: installing dependencies failed" >&2; exit 1; }
fi

if [ -f "$SRC/config.status" ]; then
	echo "test.sh: $SRC was configured in place; out-of-tree builds need it clean: run 'make distclean' there." >&2
	exit 1
fi
mkdir -p "$BUILD_ROOT"
if [ ! -x "$SRC/configure" ] || [ "$SRC/configure.ac" -nt "$SRC/configure" ]; then
	say "autogen.sh"
	(cd "$SRC" && ./autogen.sh) > "$BUILD_ROOT/autogen.log" 2>&1 ||
		{ cat "$BUILD_ROOT/autogen.log" >&2; echo "test.sh: autogen.sh failed" >&2; exit 1; }
fi

export ASAN_OPTIONS=detect_leaks=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1

for stage in $STAGES; do
	case "$stage" in
	werror) stage_check werror --enable-werror ;;
	# Under ASan every byte costs: the data-path tests' largest message is
	# 64 MiB there (1 GiB in the werror stage), and tests that move bulk
	# data read EFI_TEST_PROFILE=sanitize to do less of it (the behaviour
	# checked is the same; the werror stage runs the full volume).
	sanitize) DP_LARGE_MB=${DP_LARGE_MB:-64} EFI_TEST_PROFILE=sanitize \
		stage_check sanitize --enable-sanitizers --enable-werror ;;
	fuzz) stage_fuzz ;;
	distcheck) stage_distcheck ;;
	*) echo "test.sh: unknown stage '$stage' (known: $ALL_STAGES)" >&2; exit 2 ;;
	esac
done

say "Done"
if [ "${#skips[@]}" -gt 0 ]; then
	echo "Skipped:"
	printf '  %s\n' "${skips[@]}"
fi
if [ "${#failures[@]}" -gt 0 ]; then
	echo "Failures:"
	printf '  %s\n' "${failures[@]}"
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
