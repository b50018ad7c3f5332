#!/bin/bash
# The Debian packages (issue 19): builds them from this source tree with
# dpkg-buildpackage -us -uc -b (once, in a copy under the test's temp dir,
# DEB_BUILD_OPTIONS below), checks that every binary package is
# there with the files it must ship, runs lintian (errors fail the test,
# warnings are printed), checks with apt-get -s that their dependencies
# resolve, installs all of them with dpkg --root into a throwaway root (their
# maintainer scripts run too, kept away from the host's systemd) and runs
# what they hold: the packaged efid in foreground mode with its state in
# the temp dir, the packaged efictl attaching an interface to a namespace of
# the test's own and reading its status, and the packaged efi-perf (on the
# packaged libefi0) between two instances; then purges them from the root.
# The system itself is not touched: nothing is installed into /.
# Costs about 2 to 3 minutes on 2 cores (the package build).
# shellcheck disable=SC2016 # jq programs
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/integration/lib.sh
. "$(dirname "$0")/../integration/lib.sh"
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
lib_init pk
for t in dpkg-buildpackage dh lintian dpkg-deb fi_info ibv_devices gcc; do
	command -v "$t" >/dev/null 2>&1 ||
		fail "$t is missing: scripts/install-deps.sh --test installs it (dpkg-dev debhelper lintian libfabric-bin ibverbs-utils)"
done
[ -f "$top_srcdir/debian/control" ] || fail "no debian/ in $top_srcdir"

# --- a copy of the source tree ----------------------------------------------
# From git: what is tracked (as it is in the working tree) and what is new
# but not ignored, so that the packages are built from the tree under test
# and not from another engineer's build directories.  From a dist tarball
# (make distcheck): all of it.  (A dist tree unpacked inside a checkout's
# build directory is inside a git work tree too, but not its top.)
SRC=$TMPD/src/efi-0.1.0
mkdir -p "$SRC"
if [ "$(git -C "$top_srcdir" rev-parse --show-toplevel 2>/dev/null)" = "$(cd "$top_srcdir" && pwd -P)" ]; then
	(cd "$top_srcdir" && git ls-files -z --cached --others --exclude-standard |
		while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
		tar --null -T - -cf -) | tar -xf - -C "$SRC" || fail "copying the git tree failed"
else
	# (distcheck builds in _build/ and installs in _inst/ inside the tree)
	(cd "$top_srcdir" && tar --exclude=./_build --exclude=./_inst -cf - .) | tar -xf - -C "$SRC" ||
		fail "copying $top_srcdir failed"
	chmod -R u+w "$SRC"
	# a configured dist tree would make the package build's configure refuse
	rm -f "$SRC/config.status" "$SRC/Makefile" "$SRC/config.h" "$SRC/config.log"
fi

# --- build once -------------------------------------------------------------
# The test has 420 s on a shared 2-core machine, and the -O2 build alone
# took 330 s there under a load of 15: compile without optimization, make
# no -dbgsym packages, and skip the unit tests (make check runs them).
# EFI_DEB_BUILD_OPTIONS overrides this (e.g. "nocheck parallel=4" for the
# optimized build as shipped).
: "${EFI_DEB_BUILD_OPTIONS:=nocheck noopt noautodbgsym parallel=$(nproc)}"
log "DEB_BUILD_OPTIONS='$EFI_DEB_BUILD_OPTIONS' dpkg-buildpackage -us -uc -b in $SRC"
start=$(date +%s)
# (make check's MAKEFLAGS would hand the package build a jobserver it cannot use)
if ! (cd "$SRC" && unset MAKEFLAGS MFLAGS MAKELEVEL &&
	DEB_BUILD_OPTIONS=$EFI_DEB_BUILD_OPTIONS dpkg-buildpackage -us -uc -b) \
	>"$TMPD/build.log" 2>&1; then
	tail -n 60 "$TMPD/build.log"
	fail "dpkg-buildpackage failed (last lines above)"
fi
log "packages built in $(($(date +%s) - start)) s"
DEBS=$TMPD/src
VER=$(cd "$SRC" && dpkg-parsechangelog -S Version)
ARCH=$(dpkg --print-architecture)
MA=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
PKGS=(efid efictl libefi0 libefi-dev libefi-verbs libfabric-efi efi-perf)
for p in "${PKGS[@]}"; do
	[ -f "$DEBS/${p}_${VER}_${ARCH}.deb" ] || fail "package $p was not built: $(ls "$DEBS")"
done
# compiler warnings of the package build (with Debian's hardening flags)
if grep -E ':[0-9]+:[0-9]+: (warning|error): |^dpkg-gensymbols: warning' "$TMPD/build.log" >"$TMPD/warn"; then
	log "compiler warnings in the package build:"
	sed 's/^/    /' "$TMPD/warn"
fi

# debian/libefi0.symbols lists exactly what libefi.so exports: a function
# added to libefi.map must be added there too (dpkg-gensymbols only warns).
if grep -q '^dpkg-gensymbols: warning' "$TMPD/build.log"; then
	fail "debian/libefi0.symbols does not match libefi.so.0; add or remove these lines
(version: the package version that first has them, debian/changelog):
$(grep -E '^[+-] [^ ]+@' "$TMPD/build.log")"
fi

# contains PKG PATH...: each path is in the package
contains() {
	local p=$1 f list
	shift
	list=$(dpkg-deb -c "$DEBS/${p}_${VER}_${ARCH}.deb" | awk '{print $6}' | sed 's|^\./|/|')
	for f in "$@"; do
		grep -qxF -- "$f" <<<"$list" || fail "package $p lacks $f; it has:
$list"
	done
}
contains efid /usr/sbin/efid /etc/efi/efid.conf /lib/systemd/system/efid.service \
	/lib/systemd/system/efid.socket /usr/share/man/man8/efid.8.gz \
	/usr/share/man/man5/efid.conf.5.gz /usr/share/doc/efid/README.md \
	/usr/lib/cni/efi-cni /usr/share/man/man8/efi-cni.8.gz
contains efictl /usr/bin/efictl /usr/share/man/man8/efictl.8.gz \
	/usr/share/bash-completion/completions/efictl
contains libefi0 "/usr/lib/$MA/libefi.so.0"
contains libefi-dev /usr/include/efi/efi.h "/usr/lib/$MA/libefi.so" \
	"/usr/lib/$MA/pkgconfig/libefi.pc" /usr/share/man/man3/efi_post_send.3.gz
contains libefi-verbs /usr/bin/efi-run "/usr/lib/$MA/libefi-verbs.so" \
	/usr/lib/tmpfiles.d/efi-verbs.conf
# ... and its postinst creates /dev/infiniband/efi from it (dh_installtmpfiles)
dpkg-deb --ctrl-tarfile "$DEBS/libefi-verbs_${VER}_${ARCH}.deb" | tar -xOf - ./postinst |
	grep -q 'systemd-tmpfiles.*efi-verbs.conf' || fail "libefi-verbs' postinst does not apply efi-verbs.conf"
contains libfabric-efi "/usr/lib/$MA/libfabric/libefi-fi.so"
contains efi-perf /usr/bin/efi-perf
# /etc/efi/efid.conf is a conffile, and the units are enabled and started on
# install (debhelper's postinst)
dpkg-deb --ctrl-tarfile "$DEBS/efid_${VER}_${ARCH}.deb" | tar -xOf - ./conffiles |
	grep -qx /etc/efi/efid.conf || fail "efid: /etc/efi/efid.conf is not a conffile"
dpkg-deb --ctrl-tarfile "$DEBS/efid_${VER}_${ARCH}.deb" | tar -xOf - ./postinst |
	grep -q 'efid.socket' || fail "efid's postinst does not enable efid.socket"
# the symbols file made it into libefi0, and libefi-verbs depends on it
dpkg-deb --ctrl-tarfile "$DEBS/libefi0_${VER}_${ARCH}.deb" | tar -xOf - ./symbols |
	grep -q '^ efi_post_send@EFI_0.1 ' || fail "libefi0 has no symbols file with efi_post_send"
assert_match 'libefi0' "$(dpkg-deb -f "$DEBS/libefi-verbs_${VER}_${ARCH}.deb" Depends)" \
	"libefi-verbs depends on libefi0"

# --- lintian ----------------------------------------------------------------
log "lintian"
lrc=0
lintian --fail-on error "$DEBS/efi_${VER}_${ARCH}.changes" >"$TMPD/lintian.out" 2>&1 || lrc=$?
sed 's/^/    lintian: /' "$TMPD/lintian.out"
[ "$lrc" = 0 ] || fail "lintian found errors (exit $lrc; lines starting E: above)"

# --- their dependencies resolve on this Debian ------------------------------
DEBFILES=()
for p in "${PKGS[@]}"; do
	DEBFILES+=("$DEBS/${p}_${VER}_${ARCH}.deb")
done
apt-get -s -q install "${DEBFILES[@]}" >"$TMPD/apt-s.out" 2>&1 ||
	fail "apt-get -s install of the packages fails: $(tail -n 20 "$TMPD/apt-s.out")"

# --- installed into a throwaway root, and run --------------------------------
# dpkg --root with its own database, maintainer scripts run without chroot
# (DPKG_ROOT set for them, so deb-systemd-helper enables the units inside
# the root).  Nothing reaches the host's systemd: policy-rc.d in the root
# forbids deb-systemd-invoke to start anything, and a systemctl that only
# logs comes first on PATH.  --force-depends: the root's empty database has
# no libc6 (apt-get -s above checked the dependencies).
ROOT=$TMPD/root
mkdir -p "$ROOT/var/lib/dpkg/info" "$ROOT/var/lib/dpkg/updates" "$ROOT/var/lib/dpkg/triggers" \
	"$ROOT/usr/sbin" "$TMPD/stub"
: >"$ROOT/var/lib/dpkg/status"
printf '#!/bin/sh\nexit 101\n' >"$ROOT/usr/sbin/policy-rc.d"
printf '#!/bin/sh\necho "systemctl $*" >>"%s"\n' "$TMPD/systemctl.log" >"$TMPD/stub/systemctl"
chmod +x "$ROOT/usr/sbin/policy-rc.d" "$TMPD/stub/systemctl"
rootdpkg() {
	PATH=$TMPD/stub:$PATH dpkg --root="$ROOT" --force-script-chrootless --force-depends "$@"
}
rootdpkg -i "${DEBFILES[@]}" >"$TMPD/dpkg-i.out" 2>&1 ||
	fail "dpkg --root -i failed: $(tail -n 30 "$TMPD/dpkg-i.out")"
for p in "${PKGS[@]}"; do
	assert_eq "install ok installed" \
		"$(dpkg-query --admindir="$ROOT/var/lib/dpkg" -W -f='${Status}' "$p")" "status of $p"
done
# efid's postinst enabled both units, in the root
[ -L "$ROOT/etc/systemd/system/sockets.target.wants/efid.socket" ] ||
	fail "efid.socket was not enabled in the root: $(find "$ROOT/etc/systemd" 2>&1)"
[ -L "$ROOT/etc/systemd/system/multi-user.target.wants/efid.service" ] ||
	fail "efid.service was not enabled in the root"
# libefi-dev is enough to build a program: pkg-config finds libefi (in the
# root, through the sysroot variables), the headers compile as C, it links.
cat >"$TMPD/devtest.c" <<'CEOF'
#include <efi/efi.h>
#include <efi/efi_cm.h>
#include <stddef.h>
int main(void)
{
	int n = 0;
	struct efi_device **l = efi_get_device_list(&n);
	if (l)
		efi_free_device_list(l);
	return 0;
}
CEOF
pc=$(PKG_CONFIG_SYSROOT_DIR=$ROOT PKG_CONFIG_LIBDIR=$ROOT/usr/lib/$MA/pkgconfig \
	pkg-config --cflags --libs libefi) || fail "pkg-config does not find the packaged libefi"
# shellcheck disable=SC2086 # pkg-config's words
gcc -Wall -Werror -o "$TMPD/devtest" "$TMPD/devtest.c" $pc >"$TMPD/devtest.out" 2>&1 ||
	fail "a program does not build against libefi-dev ($pc): $(cat "$TMPD/devtest.out")"

EFID=$ROOT/usr/sbin/efid
EFICTL=$ROOT/usr/bin/efictl
export LD_LIBRARY_PATH=$ROOT/usr/lib/$MA
# the packaged tools are the ones that run from here on
# (exit 6: no efid yet; the first line is efictl's own version)
assert_exit 6 "$EFICTL" --socket "$TMPD/none.sock" --version
assert_match "^efictl +$VER\$" "$(head -n 1 <<<"$OUT")" "packaged efictl --version"

A=${PFX}a
B=${PFX}b
BR=${PFX}br
mk_netns "$A"
mk_netns "$B"
mk_bridge "$BR"
efid_start main
assert_exit 0 ctl attach "$A" --name efi0 --address 10.79.0.1/24 --uplink "$BR"
assert_exit 0 ctl attach "$B" --name efi0 --address 10.79.0.2/24 --uplink "$BR"
settle "$A" "$B"
assert_eq efi0 "$(iface_field "$A" efi0 .name)" "the interface the packaged efictl attached"
assert_eq attached "$(iface_field "$A" efi0 .state)" "its state"
assert_eq up "$(iface_field "$A" efi0 .link)" "its link"
assert_match '10\.79\.0\.1/24' "$(ctl status "$A")" "packaged efictl status"
wait_for 5000 "ping $A -> $B" ip netns exec "$A" ping -c 1 -W 1 10.79.0.2
# the packaged efictl's metrics (tests/packaging/t-stats.sh parses them)
assert_exit 0 ctl stats --prometheus "$A"
assert_match '^efi_interface_up\{efi_instance="'"$A"'",interface="efi0"\} 1$' "$OUT" \
	"packaged efictl stats --prometheus"

# the packaged efi-perf, on the packaged libefi0 (ldd shows which one)
assert_match "$ROOT/usr/lib/$MA/libefi.so.0" "$(ldd "$ROOT/usr/bin/efi-perf")" \
	"efi-perf loads the packaged libefi"
ip netns exec "$A" env EFI_SOCKET="$SOCK" timeout -k 5 60 "$ROOT/usr/bin/efi-perf" send_lat \
	>"$TMPD/perf-server.out" 2>&1 &
SPID=$!
TRACK_BGPIDS+=("$SPID")
sleep 0.5
rc=0
ip netns exec "$B" env EFI_SOCKET="$SOCK" timeout -k 5 60 "$ROOT/usr/bin/efi-perf" send_lat \
	-n 1000 10.79.0.1 >"$TMPD/perf-client.out" 2>&1 || rc=$?
sed 's/^/    efi-perf: /' "$TMPD/perf-client.out"
[ "$rc" = 0 ] || fail "packaged efi-perf client failed ($rc): $(cat "$TMPD/perf-server.out")"
wait "$SPID" || fail "packaged efi-perf server failed: $(cat "$TMPD/perf-server.out")"

# the packaged libfabric provider, loaded by the system's libfabric from the
# root's provider directory (the package puts it in libfabric's default one)
out=$(ip netns exec "$A" env EFI_SOCKET="$SOCK" FI_PROVIDER_PATH="$ROOT/usr/lib/$MA/libfabric" \
	timeout -k 5 30 fi_info -p efi -t FI_EP_MSG 2>&1) || fail "fi_info -p efi with the packaged provider failed: $out"
assert_match '^provider: efi$' "$out" "fi_info lists the packaged efi provider"
# the packaged efi-run and libefi-verbs under an unmodified verbs program
# (efi-run finds the efi/ibverbs directory beside the library it is given)
out=$(ip netns exec "$A" env EFI_SOCKET="$SOCK" EFI_VERBS_LIB="$ROOT/usr/lib/$MA/libefi-verbs.so" \
	timeout -k 5 30 "$ROOT/usr/bin/efi-run" ibv_devices 2>&1) ||
	fail "efi-run ibv_devices with the packaged libefi-verbs failed: $out"
assert_match 'efi0' "$out" "ibv_devices under the packaged efi-run lists efi0"

# the packaged CNI plugin as a runtime runs it: a third namespace by its
# path gets an interface (the spec's result), and loses it again
C=${PFX}c
mk_netns "$C"
cni_run() {
	env -i CNI_COMMAND="$1" CNI_CONTAINERID="${PFX}-pod" CNI_NETNS="/var/run/netns/$C" \
		CNI_IFNAME=eth1 CNI_PATH=/usr/lib/cni timeout 30 "$ROOT/usr/lib/cni/efi-cni" <<<"$(jq -cn \
		--arg br "$BR" --arg s "$SOCK" --arg d "$TMPD/cni" '{cniVersion: "1.0.0", name: "efi",
		type: "efi-cni", uplink: $br, efidSocket: $s, dataDir: $d, addresses: ["10.79.0.3/24"]}')"
}
out=$(cni_run VERSION) || fail "packaged efi-cni VERSION failed: $out"
jq -e '.supportedVersions | index("1.0.0") != null' <<<"$out" >/dev/null || fail "efi-cni VERSION: $out"
out=$(cni_run ADD) || fail "packaged efi-cni ADD failed: $out"
jq -e '.interfaces[0].name == "eth1" and .ips[0].address == "10.79.0.3/24"' <<<"$out" >/dev/null ||
	fail "packaged efi-cni ADD: $out"
ns_has_addr "$C" eth1 10.79.0.3/24 || fail "the packaged efi-cni's eth1 lacks its address"
out=$(cni_run DEL) || fail "packaged efi-cni DEL failed: $out"
ip -n "$C" link show eth1 >/dev/null 2>&1 && fail "eth1 is still in $C after DEL"

assert_exit 0 ctl detach "$A" efi0
assert_exit 0 ctl detach "$B" efi0
efid_stop main

# purged, nothing of the packages is left in the root but dpkg's database
# and the policy-rc.d the test put there
rootdpkg --purge "${PKGS[@]}" >"$TMPD/dpkg-purge.out" 2>&1 ||
	fail "dpkg --root --purge failed: $(tail -n 30 "$TMPD/dpkg-purge.out")"
left=$(cd "$ROOT" && find . ! -type d ! -path './var/lib/dpkg/*' ! -path ./usr/sbin/policy-rc.d)
[ -z "$left" ] || fail "purging left files in the root: $left"
