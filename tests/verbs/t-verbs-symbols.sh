#!/bin/bash
# Every symbol a verbs program may bind to is exported by libefi-verbs.so at
# the version the system libibverbs.so.1 gives it, or is a deliberate
# omission listed with its reason in verbs/omitted-symbols.txt; nothing else
# is exported but EFI's own two accessors at EFI_VERBS_1.0
# (include/efi/efi_verbs.h).  No root needed.  Cost: < 1 s.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
set -u
: "${top_builddir:=.}"
: "${top_srcdir:=.}"
ours=${EFI_VERBS_LIB:-$top_builddir/verbs/.libs/libefi-verbs.so}
omit=$top_srcdir/verbs/omitted-symbols.txt

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }

command -v objdump >/dev/null || skip "objdump is not installed (binutils)"
sys=$(ldconfig -p 2>/dev/null | awk '$1 == "libibverbs.so.1" {print $NF; exit}')
if [ -z "$sys" ] || [ ! -r "$sys" ]; then
	skip "the system libibverbs.so.1 is not installed (libibverbs1)"
fi
[ -r "$ours" ] || fail "libefi-verbs.so not built at $ours"
[ -r "$omit" ] || fail "$omit missing"

# "NAME VERSION" of every defined function/object; hidden (non-default)
# versions keep their parentheses; the version nodes themselves are left out.
exports() {
	objdump -T "$1" | grep -v '[*]UND[*]' |
		awk '$0 ~ / (DF|DO) / && $NF != $(NF-1) {print $NF, $(NF-1)}' | sort -u
}
mapfile -t sys_syms < <(exports "$sys")
mapfile -t our_syms < <(exports "$ours")
[ ${#sys_syms[@]} -gt 50 ] || fail "could not read the symbols of $sys"
declare -A have=() in_sys=() used=()
for s in "${our_syms[@]}"; do have[$s]=1; done
for s in "${sys_syms[@]}"; do in_sys[$s]=1; done

# the omissions: pattern, version, reason (each must have one)
pats=() vers=()
while read -r name ver reason; do
	case $name in '' | '#'*) continue ;; esac
	[ -n "${reason:-}" ] || fail "omitted-symbols.txt: '$name $ver' has no reason"
	pats+=("$name")
	vers+=("$ver")
done <"$omit"

errors=0
for s in "${sys_syms[@]}"; do
	[ -n "${have[$s]:-}" ] && continue
	name=${s% *} ver=${s#* }
	ok=0
	for i in "${!pats[@]}"; do
		# shellcheck disable=SC2053 # the omission names are patterns
		if [[ $name == ${pats[$i]} ]] && [ "$ver" = "${vers[$i]}" ]; then
			ok=1
			used[$i]=1
			break
		fi
	done
	if [ $ok = 0 ]; then
		echo "missing: $name@$ver (export it, or list it with a reason in verbs/omitted-symbols.txt)"
		errors=$((errors + 1))
	fi
done
for i in "${!pats[@]}"; do
	if [ -z "${used[$i]:-}" ]; then
		echo "stale omission: ${pats[$i]} ${vers[$i]} matches nothing the system library exports and we do not"
		errors=$((errors + 1))
	fi
done
ours_own=0
for s in "${our_syms[@]}"; do
	# EFI's own node (include/efi/efi_verbs.h), which no libibverbs
	# program binds to
	case ${s#* } in EFI_VERBS_*)
		ours_own=$((ours_own + 1))
		continue ;;
	esac
	if [ -z "${in_sys[$s]:-}" ]; then
		echo "extra export: ${s% *}@${s#* } (not in $sys)"
		errors=$((errors + 1))
	fi
done
echo "system $sys: ${#sys_syms[@]} symbols; libefi-verbs: ${#our_syms[@]} exported ($ours_own at EFI_VERBS_*)"
[ "$ours_own" = 2 ] || { echo "EFI_VERBS_* exports: $ours_own, wanted 2 (efi_verbs_get_context, efi_verbs_get_qp)"; errors=$((errors + 1)); }
[ $errors = 0 ] || fail "$errors symbol mismatch(es)"
echo "PASS: every libibverbs symbol is exported at its version or omitted with a reason"
