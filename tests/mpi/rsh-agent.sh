#!/bin/sh
# Open MPI's remote shell for tests/mpi (mpirun --mca plm_rsh_agent THIS):
# Open MPI runs it as `THIS HOST COMMAND...` to start its daemon (orted) on
# HOST.  Here a "host" is an EFI instance, a network namespace of this
# machine, listed in the file $EFI_MPI_HOSTS, one line per host:
#
#     HOST NETNS EFI_SOCKET
#
# The command runs inside NETNS, with EFI_SOCKET set to that instance's
# efid, in a UTS namespace of its own whose host name is HOST: Open MPI
# tells its nodes apart by host name, and every namespace of one machine
# would otherwise have the same.  The rest of the environment (PATH,
# FI_PROVIDER_PATH, LD_LIBRARY_PATH, LD_PRELOAD, ASAN_OPTIONS) is mpirun's.
# This is test harness; a real cluster uses ssh.
set -u
[ $# -ge 2 ] || { echo "rsh-agent: usage: rsh-agent HOST COMMAND..." >&2; exit 2; }
host=$1
shift
map=${EFI_MPI_HOSTS:?rsh-agent: EFI_MPI_HOSTS (the host map) is not set}
line=$(awk -v h="$host" '$1 == h { print $2, $3; exit }' "$map") || exit 2
[ -n "$line" ] || { echo "rsh-agent: host '$host' is not in $map" >&2; exit 2; }
ns=${line% *}
sock=${line#* }
# "$*": Open MPI passes one shell command line, maybe split into words
# shellcheck disable=SC2016 # $1 and $2 are the inner sh's
exec ip netns exec "$ns" env EFI_SOCKET="$sock" \
	unshare --uts sh -c 'hostname "$1" && exec sh -c "$2"' rsh-agent "$host" "$*"
