#!/bin/bash
# The data path between two hosts (two efid, each with its own state and
# runtime directories and instance, one bridge): every dp-test case, then 1%
# injected loss.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
# shellcheck source=tests/data/lib.sh
. "$(dirname "$0")/lib.sh"
dp_init dh
dp_two_hosts

# DP_CASES: a subset, when debugging
for c in ${DP_CASES:-opcodes sizes sge16 inline unsignaled events solicited rkey rnr atomics8 threads peerkill}; do
	dp_run "$c" --large-mb "$DP_LARGE_MB"
done
[ -n "${DP_CASES:-}" ] || DP_ENV="EFI_FAULT=loss=0.01,seed=12" dp_run loss
