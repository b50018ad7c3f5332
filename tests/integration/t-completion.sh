#!/bin/bash
# efictl's bash completion: in an interactive bash (a real pty, a real TAB)
# `efictl at<TAB>` becomes `efictl attach `; and against a running efid the
# instance and interface names it completes are the ones efid has, found
# through the --socket of the command line; options and their values; a
# dead socket completes nothing, quickly.  `make install` puts the file where
# bash-completion looks.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
. "$(dirname "$0")/lib.sh"
lib_init bc
command -v python3 >/dev/null || skip "python3 is not installed"
COMPLETION=$top_srcdir/efictl/bash-completion/efictl
[ -r "$COMPLETION" ] || fail "no completion file at $COMPLETION"
bin=$TMPD/bin
mkdir -p "$bin"
ln -s "$EFICTL" "$bin/efictl"

# interactive LINE EXPECT: what an interactive bash shows after LINE is
# typed (TABs included) and Enter is not: the line as completion left it.
# Reads until EXPECT shows or 15 s passed (a loaded machine is slow).
interactive() {
	PATH="$bin:$PATH" COMPLETION="$COMPLETION" timeout 40 python3 - "$1" "$2" <<'EOF'
import os, pty, select, sys, time
line, expect = sys.argv[1], sys.argv[2].encode()
pid, fd = pty.fork()
if pid == 0:
    os.environ["PS1"] = "PROMPT> "
    os.environ["INPUTRC"] = "/dev/null"
    os.execvp("bash", ["bash", "--norc", "--noprofile", "-i"])
def read_until(want, sec):
    out, end = b"", time.time() + sec
    while time.time() < end and want not in out:
        r, _, _ = select.select([fd], [], [], 0.05)
        if r:
            try:
                out += os.read(fd, 4096)
            except OSError:
                break
    return out
os.write(fd, b'source "$COMPLETION"; echo SOURCED\r')
read_until(b"\nSOURCED", 15)
os.write(fd, line.encode())
out = read_until(expect, 15)
os.write(fd, b"\x15exit\r")
read_until(b"\0", 0.3)
sys.stdout.write(out.decode(errors="replace").replace("\x07", ""))
EOF
}

log "interactive: efictl at<TAB>"
got=$(interactive $'efictl at\t' "efictl attach ")
log "the line: $got"
[[ $got == *"efictl attach "* ]] || fail "efictl at<TAB> did not complete to 'efictl attach ': $got"
got=$(interactive $'efictl --js\t' "efictl --json ")
[[ $got == *"efictl --json "* ]] || fail "efictl --js<TAB> did not complete to 'efictl --json ': $got"

# complete WORDS...: COMPREPLY for the command line WORDS (the last one being
# completed), one per line, sorted.
complete_words() {
	PATH="$bin:$PATH" bash --norc --noprofile -c '
		source "$1"; shift
		COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
		_efictl
		printf "%s\n" "${COMPREPLY[@]}" | sort' completion "$COMPLETION" "$@"
}

A=${PFX}a
B=${PFX}b
BR=${PFX}br
mk_netns "$A"
mk_netns "$B"
mk_bridge "$BR"
efid_start main
ctl_ok attach "$A" --address 10.91.0.1/24 --uplink "$BR" --name efi0 >/dev/null
ctl_ok attach "$A" --address 10.91.1.1/24 --uplink "$BR" --name efi1 >/dev/null
ctl_ok attach "$B" --address 10.91.0.2/24 --uplink "$BR" --name efi7 >/dev/null

log "names from efid"
assert_eq "$(printf '%s\n' "$A" "$B" | sort)" "$(complete_words efictl --socket "$SOCK" detach "$PFX")" "instances of detach"
assert_eq "$A" "$(complete_words efictl --socket "$SOCK" status "${A:0:-1}a")" "instances of status by prefix"
assert_eq "$(printf 'efi0\nefi1')" "$(complete_words efictl --socket "$SOCK" detach "$A" "")" "interfaces of $A"
assert_eq efi7 "$(complete_words efictl detach --socket "$SOCK" "$B" e)" "interfaces of $B (--socket after the command)"
assert_eq "$(printf 'efi0\nefi1')" "$(EFI_SOCKET=$SOCK complete_words efictl show "$A" "")" "interfaces through \$EFI_SOCKET"
assert_eq "" "$(complete_words efictl --socket "$SOCK" detach "$A" efi0 "")" "nothing after the interface"
# attach: the host's namespaces too (an instance efid has not seen yet)
C=${PFX}c
mk_netns "$C"
complete_words efictl --socket "$SOCK" attach "$PFX" | grep -qx "$C" ||
	fail "attach does not offer the namespace $C"

log "options and values"
assert_eq "$(printf -- '--all\n--help\n--json\n--socket\n--timeout\n--wait')" "$(complete_words efictl detach "$A" --)" "options of detach"
assert_eq "$(printf -- '--address')" "$(complete_words efictl attach "$A" --ad)" "options of attach"
assert_eq "macvlan" "$(complete_words efictl attach "$A" --kind m)" "values of --kind"
assert_eq "$(printf 'stats\nstatus\n')" "$(complete_words efictl sta)" "commands"
assert_eq "--prometheus" "$(complete_words efictl stats --pro)" "options of stats"
assert_eq "" "$(complete_words efictl attach "$A" --address "")" "no guess for an address"

log "a dead socket: nothing, within the timeout"
t0=$(date +%s%N)
assert_eq "" "$(complete_words efictl --socket "$TMPD/nothing.sock" detach "")" "names from a dead socket"
ms=$((($(date +%s%N) - t0) / 1000000))
[ "$ms" -lt 5000 ] || fail "completing against a dead socket took $ms ms"

log "make install puts it where bash-completion looks"
make -s -C "$top_builddir" install-dist_bashcompletionDATA DESTDIR="$TMPD/root" \
	bashcompletiondir=/usr/share/bash-completion/completions >"$TMPD/install.log" 2>&1 ||
	fail "make install-dist_bashcompletionDATA failed: $(cat "$TMPD/install.log")"
cmp -s "$COMPLETION" "$TMPD/root/usr/share/bash-completion/completions/efictl" ||
	fail "not installed as bash-completion/completions/efictl"
echo "PASS: $TEST_NAME"
