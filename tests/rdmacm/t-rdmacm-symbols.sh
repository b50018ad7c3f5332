#!/bin/bash
# Every symbol of the system librdmacm.so.1 is exported by libefi-rdmacm.so
# at the same version, and nothing else is: a program linked against
# librdmacm binds to us under efi-run whatever it calls (what is not served
# fails with ENOSYS/EOPNOTSUPP, docs/rdmacm.md).  The library is linked
# as librdmacm.so.1 in the directory efi-run puts first.  No root needed.
# Cost: < 1 s.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
set -u
: "${top_builddir:=.}"
ours=${EFI_RDMACM_LIB:-$top_builddir/rdmacm/.libs/libefi-rdmacm.so}
dir=${EFI_RDMACM_DIR:-$top_builddir/rdmacm/.libs/efi/rdmacm}

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }

command -v objdump >/dev/null || skip "objdump is not installed (binutils)"
sys=$(ldconfig -p 2>/dev/null | awk '$1 == "librdmacm.so.1" {print $NF; exit}')
if [ -z "$sys" ] || [ ! -r "$sys" ]; then
	skip "the system librdmacm.so.1 is not installed (librdmacm1)"
fi
[ -r "$ours" ] || fail "libefi-rdmacm.so not built at $ours"
[ "$dir/librdmacm.so.1" -ef "$ours" ] || fail "$dir/librdmacm.so.1 is not a link to $ours"

# "NAME VERSION" of every defined function/object, as t-verbs-symbols.sh
exports() {
	objdump -T "$1" | grep -v '[*]UND[*]' |
		awk '$0 ~ / (DF|DO) / && $NF != $(NF-1) {print $NF, $(NF-1)}' | sort -u
}
sys_syms=$(exports "$sys")
our_syms=$(exports "$ours")
[ "$(wc -l <<<"$sys_syms")" -gt 40 ] || fail "could not read the symbols of $sys"
missing=$(comm -23 <(echo "$sys_syms") <(echo "$our_syms"))
extra=$(comm -13 <(echo "$sys_syms") <(echo "$our_syms"))
[ -z "$missing" ] || echo "missing (export them in rdmacm/librdmacm.map): $missing"
[ -z "$extra" ] || echo "extra exports (not in $sys): $extra"
echo "system $sys: $(wc -l <<<"$sys_syms") symbols; libefi-rdmacm: $(wc -l <<<"$our_syms") exported"
[ -z "$missing$extra" ] || fail "symbol mismatch"
echo "PASS: libefi-rdmacm exports librdmacm's symbols at their versions, nothing else"
