#!/bin/bash
# 50 clients at once (30 attaches to distinct instances/names, 20 status
# readers) all succeed and the final state is exactly what was asked; a slow
# client that sends half a header and sleeps, and idle connections, do not
# keep efid from answering everybody else.
# shellcheck disable=SC2016 # jq programs: their $names are jq's
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
. "$(dirname "$0")/lib.sh"
lib_init cc

BR=${PFX}br
NS_COUNT=10
PER_NS=3
mk_bridge "$BR"
for i in $(seq 0 $((NS_COUNT - 1))); do
	mk_netns "${PFX}n$i"
done
efid_start main
[ -x "$CTLRAW" ] || fail "ctlraw not built at $CTLRAW"

log "50 concurrent clients"
mkdir -p "$TMPD/rc"
pids=()
for i in $(seq 0 $((NS_COUNT - 1))); do
	for j in $(seq 0 $((PER_NS - 1))); do
		(
			rc=0
			ctl attach "${PFX}n$i" --name "efi$j" --address "10.86.$i.$((j + 1))/24" \
				--uplink "$BR" >"$TMPD/rc/a$i.$j.out" 2>&1 || rc=$?
			echo "$rc" >"$TMPD/rc/a$i.$j"
		) &
		pids+=($!)
	done
done
for k in $(seq 1 20); do
	(
		rc=0
		ctl --json status >"$TMPD/rc/s$k.out" 2>&1 || rc=$?
		[ "$rc" = 0 ] && ! jq -e . "$TMPD/rc/s$k.out" >/dev/null 2>&1 && rc=json
		echo "$rc" >"$TMPD/rc/s$k"
	) &
	pids+=($!)
done
wait "${pids[@]}"
bad=0
for f in "$TMPD"/rc/a* "$TMPD"/rc/s*; do
	case $f in *.out) continue ;; esac
	if [ "$(cat "$f")" != 0 ]; then
		echo "client ${f##*/} exited $(cat "$f"): $(cat "$f.out")" >&2
		bad=$((bad + 1))
	fi
done
assert_eq 0 "$bad" "clients that failed"
ran=0
for f in "$TMPD"/rc/*; do
	[[ $f == *.out ]] || ran=$((ran + 1))
done
assert_eq 50 "$ran" "clients that ran"

log "final state is exactly what was asked"
json=$(ctl --json status) || fail "status failed"
assert_eq $((NS_COUNT * PER_NS)) "$(jq '[.instances[].interfaces[]] | length' <<<"$json")" "interfaces in status"
assert_eq $((NS_COUNT * PER_NS)) "$(host_efi_devices | wc -l)" "host devices with efid's mark"
for i in $(seq 0 $((NS_COUNT - 1))); do
	for j in $(seq 0 $((PER_NS - 1))); do
		ns=${PFX}n$i
		ns_has_addr "$ns" "efi$j" "10.86.$i.$((j + 1))/24" || fail "$ns/efi$j lacks 10.86.$i.$((j + 1))/24"
		got=$(jq -r --arg i "$ns" --arg n "efi$j" \
			'.instances[] | select(.name == $i) | .interfaces[] | select(.name == $n) | "\(.state) \(.addresses | join(","))"' <<<"$json")
		assert_eq "attached 10.86.$i.$((j + 1))/24" "$got" "status of $ns/efi$j"
	done
	assert_eq $((PER_NS + 1)) "$(ip -n "${PFX}n$i" -j link | jq length)" "devices in ${PFX}n$i"
done
assert_eq $((NS_COUNT * PER_NS)) "$(ip -j link show master "$BR" | jq length)" "ports on $BR"

log "a slow client, idle connections and a client that never reads its replies do not block the others"
bg_track "$CTLRAW" "$SOCK" slow 20
slow=$BGPID
bg_track "$CTLRAW" "$SOCK" idle 20 20
bg_track "$CTLRAW" "$SOCK" no-read 10000 20
noread=$BGPID
sleep 0.5
pid_running "$slow" || fail "slow client exited early"
for k in 1 2 3 4 5; do
	start=$(date +%s%3N)
	assert_exit 0 timeout 5 "$EFICTL" --socket "$SOCK" --json status
	log "status answered in $(($(date +%s%3N) - start)) ms while the slow client waits"
done
assert_exit 0 timeout 5 "$EFICTL" --socket "$SOCK" attach "${PFX}n0" --name efi9 --address 10.86.0.99/24 --uplink "$BR"
assert_exit 0 timeout 5 "$EFICTL" --socket "$SOCK" detach "${PFX}n0" efi9
pid_running "$(efid_pid main)" || fail "efid died"
pid_running "$slow" && kill "$slow"
pid_running "$noread" && kill "$noread"
sleep 0.2
pid_running "$(efid_pid main)" || fail "efid died after the clients went away"

log "8 concurrent attaches to one instance without --name: distinct names"
pids=()
for k in $(seq 1 8); do
	(
		rc=0
		ctl --json attach "${PFX}n1" --address "10.86.100.$k/24" --uplink "$BR" \
			>"$TMPD/rc/auto$k.out" 2>&1 || rc=$?
		echo "$rc" >"$TMPD/rc/auto$k"
	) &
	pids+=($!)
done
wait "${pids[@]}"
names=""
for k in $(seq 1 8); do
	assert_eq 0 "$(cat "$TMPD/rc/auto$k")" "auto-named attach $k ($(cat "$TMPD/rc/auto$k.out"))"
	names+="$(jq -r .interface.name "$TMPD/rc/auto$k.out") "
done
assert_eq 8 "$(tr ' ' '\n' <<<"$names" | grep -c .)" "names given: $names"
assert_eq 8 "$(tr ' ' '\n' <<<"$names" | grep . | sort -u | wc -l)" "distinct names among: $names"
assert_eq $((PER_NS + 8)) "$(jq_status '[.instances[] | select(.name == $i) | .interfaces[]] | length' --arg i "${PFX}n1")" \
	"interfaces of ${PFX}n1"

log "the same address asked for by 6 clients at once: exactly one wins"
pids=()
for k in $(seq 0 5); do
	(
		rc=0
		ctl attach "${PFX}n$k" --name race --address 10.86.200.1/24 --uplink "$BR" \
			>"$TMPD/rc/race$k.out" 2>&1 || rc=$?
		echo "$rc" >"$TMPD/rc/race$k"
	) &
	pids+=($!)
done
wait "${pids[@]}"
codes=$(cat "$TMPD"/rc/race? | sort | tr '\n' ' ')
assert_eq "0 4 4 4 4 4 " "$codes" "exit codes of the racing attaches"
assert_eq 1 "$(jq_status '[.instances[].interfaces[] | select(.name == "race")] | length')" "interfaces named race"
won=0
for k in $(seq 0 5); do
	if ip -n "${PFX}n$k" link show race >/dev/null 2>&1; then
		won=$((won + 1))
		race_ns=$k
	fi
done
assert_eq 1 "$won" "namespaces holding an interface named race"

log "concurrent detach --all"
pids=()
for i in $(seq 0 $((NS_COUNT - 1))); do
	(
		rc=0
		ctl --json detach "${PFX}n$i" --all >"$TMPD/rc/d$i.out" 2>&1 || rc=$?
		echo "$rc" >"$TMPD/rc/d$i"
	) &
	pids+=($!)
done
wait "${pids[@]}"
for i in $(seq 0 $((NS_COUNT - 1))); do
	assert_eq 0 "$(cat "$TMPD/rc/d$i")" "detach ${PFX}n$i --all exit ($(cat "$TMPD/rc/d$i.out"))"
	want=$PER_NS
	[ "$i" = 1 ] && want=$((want + 8))
	[ "$i" = "$race_ns" ] && want=$((want + 1))
	assert_eq "$want" "$(jq -r .detached "$TMPD/rc/d$i.out")" "interfaces detached from ${PFX}n$i"
done
assert_eq 0 "$(jq_status '[.instances[].interfaces[]] | length')" "interfaces left"
assert_eq "" "$(host_efi_devices)" "host devices left"
