#!/bin/bash
# t-rdmacm-qperf.sh between two hosts of the testbed (routed, two paths).
# Cost: ~20 s.
exec bash "$(dirname "$0")/t-rdmacm-qperf.sh" hosts
