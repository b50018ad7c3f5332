#!/bin/bash
# t-lossy-integrity.sh with one CPU-burning process pinned to each core beside it
# (EFI_TEST_LOAD=1, tests/lossy/lib.sh): the transport must hold on a
# loaded, shared host, where processes are descheduled for long stretches.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
EFI_TEST_LOAD=1 exec bash "$(dirname "$0")/t-lossy-integrity.sh" "$@"
