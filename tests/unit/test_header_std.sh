#!/bin/sh
# SPDX-License-Identifier: MIT
# <efi/efi.h> and <efi/efi_cm.h> compile on their own under strict standards: C99 and C11 with
# -pedantic, and C++ (it is an extern "C" header applications include from
# C++ too).  A compiler that is not installed is skipped, not failed.
set -eu
: "${top_srcdir:?run through make check}"
CC=${CC:-cc}
CXX=${CXX:-g++}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/efi-header.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

cat >"$tmp/use.c" <<'SRC'
#include <efi/efi_cm.h>
#include <efi/efi.h>
int use_it(struct efi_qp *qp, struct efi_send_wr *wr);
int use_it(struct efi_qp *qp, struct efi_send_wr *wr)
{
	struct efi_send_wr *bad = 0;
	struct efi_wc wc[4];
	int n = efi_poll_cq(qp->send_cq, 4, wc);
	struct efi_cm_event ev;
	(void)ev;
	return n < 0 ? n : efi_post_send(qp, wr, &bad) + efi_mtu_to_num(EFI_MTU_1024) +
		efi_cm_get_fd((struct efi_cm_id *)0);
}
SRC
warn="-Wall -Wextra -Werror -pedantic -Wshadow"
ran=0
for std in c99 c11; do
	"$CC" -std=$std $warn -Wstrict-prototypes -Wmissing-prototypes -I"$top_srcdir/include" \
		-fsyntax-only "$tmp/use.c"
	echo "ok: $CC -std=$std"
	ran=1
done
if command -v "$CXX" >/dev/null 2>&1; then
	for std in c++11 c++17; do
		"$CXX" -x c++ -std=$std $warn -I"$top_srcdir/include" -fsyntax-only "$tmp/use.c"
		echo "ok: $CXX -std=$std"
	done
else
	echo "skipped C++: $CXX not installed"
fi
[ $ran = 1 ]

# Declarations start in column 0 with their return type; static inline
# helpers are not symbols.
cat "$top_srcdir/include/efi/efi.h" "$top_srcdir/include/efi/efi_cm.h" |
	grep -E '^[a-z].*[ *]efi_[a-z0-9_]+\(' | grep -v '^static' |
	sed -E 's/^[^(]*[ *](efi_[a-z0-9_]+)\(.*/\1/' | sort >"$tmp/header.syms"
sed -n -E 's/^[[:space:]]+(efi_[a-z0-9_]+);$/\1/p' "$top_srcdir/libefi/libefi.map" | sort >"$tmp/map.syms"
if ! diff -u "$tmp/header.syms" "$tmp/map.syms"; then
	echo "libefi/libefi.map and include/efi/efi.h + efi_cm.h disagree (- header, + map): add or remove the symbols above" >&2
	exit 1
fi
echo "ok: libefi.map exports the $(wc -l <"$tmp/map.syms") functions of efi.h and efi_cm.h"
