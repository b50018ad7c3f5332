#!/bin/bash
# efi-perf with EFI_LANES=1 and 4, side by side for two builds of libefi
# (e.g. main and a branch), between the instances of two hosts on one bridge
# (tests/data/lib.sh dp_two_hosts).  For each test, size, lanes and build,
# the median of RUNS runs; builds alternate within each round so that the
# machine's noise falls on both alike.
#
#     sudo bench/lanes.sh BUILD_DIR [OTHER_BUILD_DIR]
#
# Environment: RUNS (3), CASES (default below: "test:size:iters" words),
# LANES ("1 4"), SERVER_CPU (0), CLIENT_CPU (1), NICE (0: e.g. -10 on a
# machine others load).  efid comes from the first
# build.  Prints one table: test size lanes, then per build the median
# (Gb/s for *_bw, typical/average µs for *_lat) and the transport line's
# retransmitted / duplicates / dropped of the last run.
# shellcheck disable=SC2015
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
top_builddir=$(cd "${1:?usage: lanes.sh BUILD_DIR [OTHER_BUILD_DIR]}" && pwd) || exit 2
export top_builddir
BUILDS=("$top_builddir")
[ -n "${2:-}" ] && BUILDS+=("$(cd "$2" && pwd)")
# shellcheck source=tests/data/lib.sh
. "$(dirname "$0")/../tests/data/lib.sh"
dp_init bl
dp_two_hosts

: "${NICE:=0}" "${RUNS:=3}" "${LANES:=1 4}" "${SERVER_CPU:=0}" "${CLIENT_CPU:=1}"
: "${CASES:=write_bw:64K:2000 write_bw:1M:300 write_bw:4M:80 write_bw:16M:20 send_bw:64K:2000 send_bw:1M:300 send_bw:4M:80 send_bw:16M:20 send_lat:64K:300 send_lat:1M:100}"

median() { sort -g | awk '{v[NR] = $1} END {print NR ? v[int((NR + 1) / 2)] : "fail"}'; }

# one BUILD TEST SIZE ITERS LANES: prints "value retx dups drops"
one() {
	local b=$1 t=$2 s=$3 n=$4 l=$5 spid out
	in_a env EFI_LANES="$l" nice -n "$NICE" taskset -c "$SERVER_CPU" timeout 120 "$b/tools/efi-perf/efi-perf" "$t" >/dev/null 2>&1 &
	spid=$!
	out=$(in_b env EFI_LANES="$l" nice -n "$NICE" taskset -c "$CLIENT_CPU" timeout 120 "$b/tools/efi-perf/efi-perf" "$t" -s "$s" -n "$n" "$IP_A" 2>&1)
	wait "$spid" 2>/dev/null
	local val
	case $t in
	*_bw) val=$(awk '$1 ~ /^[0-9]+$/ && NF == 5 {print $4}' <<<"$out" | tail -1) ;;
	*) val=$(awk '$1 ~ /^[0-9]+$/ && NF == 9 {print $5 "/" $6}' <<<"$out" | tail -1) ;;
	esac
	local tr
	tr=$(grep ' transport:' <<<"$out" | tail -1 |
		sed -E 's/.* ([0-9]+) retransmitted.* ([0-9]+) duplicates.* ([0-9]+) dropped.*/\1 \2 \3/')
	echo "${val:-fail} ${tr:-? ? ?}"
}

declare -A VALS=() AVGS=() LAST=()
for ((r = 1; r <= RUNS; r++)); do
	for c in $CASES; do
		IFS=: read -r t s n <<<"$c"
		for l in $LANES; do
			for bi in "${!BUILDS[@]}"; do
				res=$(one "${BUILDS[$bi]}" "$t" "$s" "$n" "$l")
				v=${res%% *}
				VALS[$c:$l:$bi]+="${v%%/*}"$'\n'
				AVGS[$c:$l:$bi]+="${v#*/}"$'\n'
				LAST[$c:$l:$bi]=${res#* }
				log "run $r $t $s lanes=$l build=$bi: $res"
			done
		done
	done
done

printf '\n%-9s %-5s %-5s' test size lanes
for bi in "${!BUILDS[@]}"; do printf ' | %-15s %-16s' "b$bi" "retx/dup/drop"; done
printf '\n'
for c in $CASES; do
	IFS=: read -r t s n <<<"$c"
	for l in $LANES; do
		printf '%-9s %-5s %-5s' "$t" "$s" "$l"
		for bi in "${!BUILDS[@]}"; do
			m=$(printf '%s' "${VALS[$c:$l:$bi]}" | grep -E '^[0-9.]+$' | median)
			case $t in *_lat) m="$m/$(printf '%s' "${AVGS[$c:$l:$bi]}" | grep -E '^[0-9.]+$' | median)" ;; esac
			printf ' | %-15s %-16s' "$m" "${LAST[$c:$l:$bi]// //}"
		done
		printf '\n'
	done
done
echo "(bw: Gb/s average; lat: typical/average us, medians of each; b0 = ${BUILDS[0]}${BUILDS[1]:+, b1 = ${BUILDS[1]}})"
