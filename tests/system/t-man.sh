#!/bin/bash
# The manual pages: each one lints clean under mandoc (warnings and worse)
# and renders under groff -ww without a warning; efictl(8) and efid.conf(5)
# cover every command, exit status and key efictl and efid accept; `make
# install` puts them
# where man finds them, with every public function of <efi/efi.h> and
# <efi/efi_cm.h> reachable by its own name (`man efi_poll_cq`).
: "${top_srcdir:?run through make check (top_srcdir is not set)}"
# shellcheck source=tests/system/lib.sh
. "$top_srcdir/tests/system/lib.sh"

need_cmd mandoc
need_cmd groff
need_cmd man
make_tmpdir

pages=("$top_srcdir"/man/man[1-8]/*.[1-8])
[ "${#pages[@]}" -ge 16 ] || fail "expected the 16 pages under man/, found ${#pages[@]}"
for p in "${pages[@]}"; do
	out=$(mandoc -T lint -W warning "$p" 2>&1) || fail "mandoc: $p: $out"
	[ -z "$out" ] || fail "mandoc: $out"
	out=$(groff -ww -z -t -man "$p" 2>&1)
	[ -z "$out" ] || fail "groff -ww $p: $out"
done

# efictl(8) names every command and exit status `efictl --help` lists, and
# efid.conf(5) every section and key efid's parser accepts.
cmds=$("$top_builddir/efictl/efictl" --help | sed -n '/^Commands:/,/^$/s/^  \([a-z]\+\).*/\1/p')
[ "$(echo "$cmds" | wc -l)" -ge 6 ] || fail "efictl --help lists too few commands: $cmds"
codes=$("$top_builddir/efictl/efictl" --help | sed -n '/^Exit status:/,/^$/s/^  \([0-9]\+\) .*/\1/p')
[ -n "$codes" ] || fail "efictl --help lists no exit status"
ctl=$(MANWIDTH=200 man -l "$top_srcdir/man/man8/efictl.8" 2>/dev/null)
for c in $cmds; do
	printf '%s\n' "$ctl" | grep -qE "^ +(efictl .*)?\b$c\b" || fail "efictl(8) does not describe the command $c"
done
# ... and no command efictl does not have.
while read -r c; do
	printf '%s\n' "$cmds" | grep -qx -- "$c" || fail "efictl(8) describes a command efictl does not have: $c"
done < <(sed -n '/^\.SH COMMANDS/,/^\.SH /p' "$top_srcdir/man/man8/efictl.8" |
	awk 'prev == ".TP" && ($1 == ".B" || $1 == ".BR") {print $2} {prev = $1}')
for c in $codes; do
	printf '%s\n' "$ctl" | sed -n '/^EXIT STATUS/,/^[A-Z]/p' | grep -qE "^ +$c\b" ||
		fail "efictl(8) EXIT STATUS does not list $c"
done
cfg=$top_srcdir/efid/efid_config.c
keys=$( { grep -oP 'strcasecmp\((key|section), "\K[A-Za-z]+' "$cfg"
	grep -oP '^\t\{ "\K[A-Z][A-Za-z]+(?=", ")' "$cfg"
	grep -oP 'counts\[\] = \{\K[^}]*' "$cfg" | grep -oP '"\K[A-Za-z]+'; } | sort -u)
[ "$(echo "$keys" | wc -l)" -ge 30 ] || fail "found too few efid.conf keys in $cfg: $keys"
conf=$(MANWIDTH=200 man -l "$top_srcdir/man/man5/efid.conf.5" 2>/dev/null)
for k in $keys; do
	printf '%s\n' "$conf" | grep -qw -- "$k" || fail "efid.conf(5) does not describe $k"
done

# Install only the pages (and the section-3 links) into a throwaway tree.
make -s -C "$top_builddir" install-man install-man-links \
	DESTDIR="$TEST_TMP/root" mandir=/man >"$TEST_TMP/install.log" 2>&1 ||
	fail "make install-man failed: $(cat "$TEST_TMP/install.log")"
mp="$TEST_TMP/root/man"
funcs=$(sed -n 's/^[a-z].*[ *]\(efi_[a-z_0-9]*\)(.*/\1/p' \
	"$top_srcdir"/include/efi/efi.h "$top_srcdir"/include/efi/efi_cm.h | sort -u)
[ "$(echo "$funcs" | wc -l)" -ge 40 ] || fail "found too few public functions: $funcs"
for f in $funcs efid efictl efid.conf efi-interface efi-perf efi-run libefi; do
	# The page man finds under that name must really describe it.
	text=$(MANWIDTH=100 man -M "$mp" "$f" 2>"$TEST_TMP/man.err") ||
		fail "man $f: not found in the installed tree ($(cat "$TEST_TMP/man.err"))"
	printf '%s\n' "$text" | sed -n '/^NAME/,/^[A-Z]/p' | grep -qw -- "$f" ||
		fail "man $f: the page found does not name $f in NAME"
	[ -s "$TEST_TMP/man.err" ] && fail "man $f: warnings: $(cat "$TEST_TMP/man.err")"
done
for s in 1 3 5 7 8; do
	for l in "$mp/man$s"/*; do
		[ -e "$l" ] || fail "dangling link $l"
	done
done
echo "PASS: $TEST_NAME (${#pages[@]} pages, $(echo "$funcs" | wc -l) functions, $(echo "$cmds" | wc -l) efictl commands, $(echo "$keys" | wc -l) efid.conf names)"
