#!/bin/bash
# efictl stats (issue 19): while efi-perf moves data from instance B to
# instance A, `efictl stats --prometheus` is parsed by two real parsers,
# promtool (check metrics: the format and Prometheus' naming conventions)
# and python3-prometheus-client's text parser, and what they read is
# checked: every family is efi_*, counters end in _total, B's context sent
# packets and bytes, a path to A is up with an RTT, retransmissions and drops
# are counted (libefi's fault injector drops 1%), and a second scrape a
# second later has every counter at least where it was and B's bytes grown.
# The --json and human forms and the usage errors are checked as well.
# Costs about 15 s.
# shellcheck disable=SC2016 # jq programs
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/data/lib.sh
. "$(dirname "$0")/../data/lib.sh"
dp_init ps
command -v promtool >/dev/null 2>&1 ||
	fail "promtool is missing: scripts/install-deps.sh --test installs it (package prometheus)"
# Debian's python3, not whatever python3 comes first on PATH
PY=/usr/bin/python3
"$PY" -c 'import prometheus_client.parser' 2>/dev/null ||
	fail "python3-prometheus-client is missing: scripts/install-deps.sh --test installs it"
dp_one_host
GID_A=::ffff:$IP_A

# usage and lookup errors, before any traffic
assert_exit 2 ctl_on main stats --json --prometheus
assert_exit 2 ctl_on main stats "$A" efi0 extra
assert_exit 3 ctl_on main stats "${PFX}zz"
assert_exit 3 ctl_on main stats "$A" efi9
assert_exit 0 ctl_on main stats --prometheus
assert_match '^efi_interface_up\{efi_instance="'"$A"'",interface="efi0"\} 1$' "$OUT" \
	"an idle interface is up in the exposition"

# parse FILE: prometheus_client's parser reads the exposition; prints one
# line per sample, "name{labels} value" with labels sorted, and checks the
# conventions the parser does not: efi_ prefix, _total on counters, HELP.
parse() {
	"$PY" - "$1" <<'PYEOF'
import sys
from prometheus_client.parser import text_string_to_metric_families
text = open(sys.argv[1]).read()
n = 0
for fam in text_string_to_metric_families(text):
    if not fam.name.startswith("efi_"):
        sys.exit("family %s is not efi_*" % fam.name)
    if not fam.documentation:
        sys.exit("family %s has no HELP" % fam.name)
    if fam.type not in ("counter", "gauge"):
        sys.exit("family %s has type %s" % (fam.name, fam.type))
    for s in fam.samples:
        if fam.type == "counter" and not s.name.endswith("_total"):
            sys.exit("counter sample %s does not end in _total" % s.name)
        if s.value < 0:
            sys.exit("sample %s is negative" % s.name)
        labels = ",".join('%s="%s"' % kv for kv in sorted(s.labels.items()))
        print("%s{%s} %r" % (s.name, labels, s.value))
        n += 1
if n == 0:
    sys.exit("no samples")
PYEOF
}

# scrape N: the exposition to $TMPD/scrapeN.prom, checked by both parsers,
# and the samples to $TMPD/scrapeN.samples.
scrape() {
	local n=$1 out
	ctl_on main stats --prometheus >"$TMPD/scrape$n.prom" || fail "efictl stats --prometheus failed"
	out=$(promtool check metrics <"$TMPD/scrape$n.prom" 2>&1) ||
		fail "promtool check metrics rejected scrape $n: $out
$(head -c 3000 "$TMPD/scrape$n.prom")"
	[ -z "$out" ] || fail "promtool check metrics complained about scrape $n: $out"
	parse "$TMPD/scrape$n.prom" >"$TMPD/scrape$n.samples" ||
		fail "prometheus_client's parser rejected scrape $n"
	log "scrape $n: $(wc -l <"$TMPD/scrape$n.samples") samples, promtool and prometheus_client agree it is valid"
}
# sample N REGEX: the value of the one sample of scrape N matching REGEX
sample() {
	local v
	v=$(grep -E -- "$2" "$TMPD/scrape$1.samples" | awk '{print $NF}')
	if [ -z "$v" ] || [ "$(wc -l <<<"$v")" != 1 ]; then
		fail "scrape $1: not exactly one sample matches $2: $(grep -E -- "$2" "$TMPD/scrape$1.samples")"
	fi
	printf '%s\n' "$v"
}

# traffic: efi-perf write_bw from B to A for 8 s, with 1% of the datagrams
# dropped by libefi's fault injector on both sides, so that drops and
# retransmissions have something to count
FAULT=EFI_FAULT=loss=0.01,seed=19
in_a env "$FAULT" timeout -k 5 60 "$EFI_PERF" write_bw >"$TMPD/server.out" 2>&1 &
SPID=$!
TRACK_BGPIDS+=("$SPID")
sleep 0.5
in_b env "$FAULT" timeout -k 5 60 "$EFI_PERF" write_bw -s 65536 -D 8 "$IP_A" >"$TMPD/client.out" 2>&1 &
CPID=$!
TRACK_BGPIDS+=("$CPID")

# a path from B's context to A with an RTT sample, in --json
path_measured() {
	ctl_on main --json stats "$B" efi0 | jq -e --arg p "$GID_A" \
		'any(.interfaces[0].contexts[].peers[] | select(.address == $p) | .paths[]; .srtt_us > 0)'
}
wait_for 5000 "a measured path from $B to $IP_A in efictl --json stats" path_measured

scrape 1
sleep 1
scrape 2

ctxB='efi_context_tx_bytes_total\{efi_instance="'"$B"'",interface="efi0",pid="[0-9]+"\}'
b1=$(sample 1 "^$ctxB")
b2=$(sample 2 "^$ctxB")
log "B's context sent ${b1%.0} then ${b2%.0} bytes"
awk -v a="$b1" -v b="$b2" 'BEGIN { exit !(a > 0 && b > a) }' ||
	fail "B's tx bytes did not grow while efi-perf ran: $b1 then $b2"
sample 2 '^efi_context_tx_packets_total\{efi_instance="'"$B"'",.*' >/dev/null
sample 2 '^efi_context_rx_packets_total\{efi_instance="'"$A"'",.*' >/dev/null
up=$(grep -E '^efi_path_up\{.*efi_instance="'"$B"'".*peer="'"$GID_A"'"' "$TMPD/scrape2.samples" |
	awk '$NF == 1.0' | wc -l)
[ "$up" -ge 1 ] || fail "no path from $B to $GID_A is up: $(grep '^efi_path_up' "$TMPD/scrape2.samples")"
srtt=$(grep -E '^efi_path_rtt_smoothed_seconds\{.*efi_instance="'"$B"'"' "$TMPD/scrape2.samples" |
	awk '$NF > 0 && $NF < 1' | wc -l)
[ "$srtt" -ge 1 ] || fail "no path of $B has a smoothed RTT in (0, 1) s"
sample 2 '^efi_interface_contexts\{efi_instance="'"$B"'",interface="efi0"\}' >/dev/null
# the injected loss shows: B retransmitted, on some path to A, and datagrams
# were dropped (the injector's drops are counted as drops)
positive() { awk -v v="$1" 'BEGIN { exit !(v > 0) }'; }
r=$(sample 2 '^efi_context_retransmissions_total\{efi_instance="'"$B"'",')
positive "$r" || fail "no retransmissions of $B under 1% loss: $r"
r=$(grep -E '^efi_path_retransmissions_total\{.*efi_instance="'"$B"'"' "$TMPD/scrape2.samples" |
	awk '{ s += $NF } END { print s + 0 }')
positive "$r" || fail "no path of $B counts a retransmission under 1% loss"
r=$(grep -E '^efi_context_drops_total\{' "$TMPD/scrape2.samples" | awk '{ s += $NF } END { print s + 0 }')
positive "$r" || fail "no drops counted under 1% injected loss"
log "under 1% loss: $B retransmitted $(sample 2 '^efi_context_retransmissions_total\{efi_instance="'"$B"'",'), $r datagrams dropped"

# version 3 counters pages: drops by reason, each context's reasons adding
# up to its drops, and B's QP to A with counters of its own
inj=$(grep -E '^efi_context_drops_by_reason_total\{.*reason="injected"' "$TMPD/scrape2.samples" |
	awk '{ s += $NF } END { print s + 0 }')
positive "$inj" || fail "no drops counted as reason injected under 1% injected loss"
if ! awk '{ split($1, a, "{"); l = a[2]; gsub(/,?reason="[^"]*"/, "", l); sub(/^,/, "", l)
	if (a[1] == "efi_context_drops_by_reason_total") by[l] += $2
	if (a[1] == "efi_context_drops_total") all[l] = $2 }
	END { for (l in all) if (by[l] != all[l]) { print l, by[l], all[l]; bad = 1 }; exit bad }' \
	"$TMPD/scrape2.samples" >"$TMPD/reasons"; then
	fail "drops by reason do not add up to the drops: $(cat "$TMPD/reasons")"
fi
qpb=$(grep -E '^efi_qp_tx_bytes_total\{.*efi_instance="'"$B"'".*peer="'"$GID_A"'",.*qpn="[0-9]+"' \
	"$TMPD/scrape2.samples" | awk '{ s += $NF } END { print s + 0 }')
positive "$qpb" || fail "no QP of $B counts bytes sent to $GID_A: $(grep '^efi_qp_tx_bytes' "$TMPD/scrape2.samples")"
log "under 1% loss: $inj drops by reason injected; B's QPs to A sent $qpb bytes"
json=$(ctl_on main --json stats "$B" efi0)
jq -e --arg p "$GID_A" '.interfaces[0].contexts | length >= 1 and all(
	(.drops_by_reason | keys | length) == 10 and .qps_omitted == 0 and
	([.qps[] | select(.state == "rts" and .peer == $p and .tx_bytes > 0)] | length) >= 1)' \
	<<<"$json" >/dev/null || fail "--json stats lacks drops by reason or B's QP to A: $json"

# counters never go back between the two scrapes (series present in both)
if ! awk 'NR == FNR { if ($1 ~ /_total\{/) first[$1] = $2; next }
	($1 in first) && $2 + 0 < first[$1] + 0 { print; bad = 1 }
	END { exit bad }' "$TMPD/scrape1.samples" "$TMPD/scrape2.samples" >"$TMPD/back"; then
	fail "counters went back between scrapes: $(cat "$TMPD/back")"
fi

# the same numbers, for people and as JSON
human=$(ctl_on main stats "$B")
printf '%s\n' "$human"
assert_match "^$B/efi0: attached, link up, 1 context, [0-9]+ QPs?, paths [0-9]+ active [0-9]+ suspect$" \
	"$human" "human header line"
assert_match '^  pid [0-9]+ +tx [1-9][0-9]* pkts [1-9][0-9]* B, rx [0-9]+ pkts' "$human" \
	"human context line"
json=$(ctl_on main --json stats)
assert_eq 2 "$(jq '.interfaces | length' <<<"$json")" "interfaces in --json stats"
assert_eq true "$(jq --arg b "$B" '.interfaces[] | select(.instance == $b) |
	.totals.tx_bytes > 0 and .totals.tx_bytes == ([.contexts[].tx_bytes] | add)' <<<"$json")" \
	"--json totals are the sum of the contexts"

wait "$CPID" || fail "efi-perf client failed: $(cat "$TMPD/client.out")"
wait "$SPID" || fail "efi-perf server failed: $(cat "$TMPD/server.out")"

# one process, two contexts on A's efi0: two series, told apart by context="1"
: "${TWO_CONTEXTS:=$top_builddir/tests/packaging/two-contexts}"
[ -x "$TWO_CONTEXTS" ] || fail "two-contexts not built at $TWO_CONTEXTS"
in_a timeout -k 5 60 "$TWO_CONTEXTS" 5 >"$TMPD/two.out" 2>&1 &
TBG=$!
TRACK_BGPIDS+=("$TBG")
wait_for 5000 "two contexts open" grep -q ready "$TMPD/two.out"
two_listed() {
	[ "$(ctl_on main --json stats "$A" efi0 |
		jq --argjson p "$TPID" '[.interfaces[0].contexts[] | select(.pid == $p)] | length')" = 2 ]
}
TPID=$(awk '$1 == "ready" {print $2}' "$TMPD/two.out")
wait_for 3000 "both contexts of pid $TPID in efictl stats" two_listed
scrape 3
# (parse prints labels sorted by name: context, efi_instance, interface, pid)
assert_eq "$(printf '%s\n' "{context=\"1\",efi_instance=\"$A\",interface=\"efi0\",pid=\"$TPID\"}" \
	"{efi_instance=\"$A\",interface=\"efi0\",pid=\"$TPID\"}")" \
	"$(grep "^efi_context_tx_packets_total{.*pid=\"$TPID\"" "$TMPD/scrape3.samples" |
		sed 's/^efi_context_tx_packets_total//; s/ .*//' | sort)" \
	"series of the two contexts of pid $TPID"
wait "$TBG" || fail "two-contexts failed: $(cat "$TMPD/two.out")"

# pages of other versions, from cshm-hostile (a process that leases an
# endpoint and publishes a page it wrote itself): a version 2 page (an older
# libefi) and a page that says version 3 but is one page long give neither
# drops by reason nor QPs; a hostile version 3 page is bounded by efid
: "${CSHM_HOSTILE:=$top_builddir/tests/integration/cshm-hostile}"
[ -x "$CSHM_HOSTILE" ] || fail "cshm-hostile not built at $CSHM_HOSTILE"
hostile_ctx='[.interfaces[0].contexts[] | select(.tx_packets == 1000)]'
hostile() {
	rm -f "$TMPD/hold"
	mkfifo "$TMPD/hold"
	: >"$TMPD/hostile.out"	# not the last call's "ready" (t-rdmacm-detach's race)
	in_b "$CSHM_HOSTILE" efi0 "$@" <"$TMPD/hold" >"$TMPD/hostile.out" 2>&1 &
	HPID=$!
	TRACK_BGPIDS+=("$HPID")
	exec 5>"$TMPD/hold"
	wait_for 5000 "cshm-hostile $* ready" grep -q ready "$TMPD/hostile.out"
	json=$(ctl_on main --json stats "$B" efi0) || fail "efictl stats failed with a $* page"
	ctx=$(jq -c "$hostile_ctx | .[0]" <<<"$json")
	log "cshm-hostile $*: $(head -c 400 <<<"$ctx")"
	scrape "h${1:-v2}"
}
hostile_done() {
	exec 5>&-
	wait "$HPID" || fail "cshm-hostile failed: $(cat "$TMPD/hostile.out")"
}
for mode in "" v3small; do
	hostile ${mode:+"$mode"}
	assert_eq 'null null 0' "$(jq -r '"\(.drops_by_reason) \(.qps_omitted) \(.qps | length)"' <<<"$ctx")" \
		"a ${mode:-version 2} page: no drops by reason, no QPs"
	assert_eq 0 "$(grep -c '^efi_qp_tx_packets_total' "$TMPD/scrapeh${mode:-v2}.samples")" \
		"a ${mode:-version 2} page: no QP series"
	hostile_done
done
hostile v3
assert_eq 64 "$(jq '.qps | length' <<<"$ctx")" "QPs listed from a page claiming 2^32-1"
assert_eq 9 "$(jq '.qps_omitted' <<<"$ctx")" "qps_omitted passed on"
assert_eq true "$(jq '[.qps[] | .qpn <= 16777215 and .state == "unknown"] | all' <<<"$ctx")" \
	"QP numbers cut to 24 bits, an unknown state named so"
assert_eq 16 "$(jq '.drops_by_reason | length' <<<"$ctx")" "16 drop reasons, 8 of them by number"
assert_eq '1 16' "$(jq -r '"\(.drops_by_reason.malformed) \(.drops_by_reason.reason_15)"' <<<"$ctx")" \
	"drop reasons in order"
if ctl_on main stats "$B" efi0 | grep -q $'\e'; then fail "an escape byte from the page reached the terminal"; fi
hostile_done
