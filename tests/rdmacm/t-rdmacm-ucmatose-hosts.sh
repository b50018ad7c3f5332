#!/bin/bash
# t-rdmacm-ucmatose.sh between two hosts of the testbed (routed, two paths).
# Cost: ~15 s.
exec bash "$(dirname "$0")/t-rdmacm-ucmatose.sh" hosts
