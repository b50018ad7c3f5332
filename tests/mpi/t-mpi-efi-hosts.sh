#!/bin/bash
# t-mpi-efi.sh between two hosts of the testbed (tests/testbed/testbed.sh:
# each host a namespace with its own efid, joined by two ECMP paths).
# Cost: ~1 min.
exec bash "$(dirname "$0")/t-mpi-efi.sh" hosts
