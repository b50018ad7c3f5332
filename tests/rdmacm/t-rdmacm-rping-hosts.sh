#!/bin/bash
# t-rdmacm-rping.sh between two hosts of the testbed (routed, two paths).
# Cost: ~15 s.
exec bash "$(dirname "$0")/t-rdmacm-rping.sh" hosts
