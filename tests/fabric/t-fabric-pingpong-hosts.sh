#!/bin/bash
# t-fabric-pingpong.sh between two hosts (two efid, one instance each).
# Cost: ~15 s.
exec bash "$(dirname "$0")/t-fabric-pingpong.sh" two
