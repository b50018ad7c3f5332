#!/bin/bash
# The user-facing scripts (scripts/, .ci/run, bench/) and the tests in shell
# (system, testbed, lossy, fabric, mpi) are
# clean under the shellcheck linter: they run as root on fresh machines,
# where a quoting slip costs the most.
: "${top_srcdir:?run through make check (top_srcdir is not set)}"
# shellcheck source=tests/system/lib.sh
. "$top_srcdir/tests/system/lib.sh"

need_cmd shellcheck
cd "$top_srcdir" || fail "cannot cd to $top_srcdir"
files=(scripts/*.sh tests/system/*.sh tests/testbed/*.sh tests/lossy/*.sh tests/fabric/*.sh
	tests/mpi/*.sh bench/*.sh efictl/bash-completion/efictl)
[ -f .ci/run ] && files+=(.ci/run)
shellcheck -x "${files[@]}" || fail "shellcheck found problems (above)"
echo "PASS: $TEST_NAME (${#files[@]} files)"
