/* SPDX-License-Identifier: MIT */
/*
 * Network namespaces: an instance is /run/netns/NAME (made by `ip netns add`).
 * efid enters one only for as long as it takes to make a netlink socket (a
 * socket stays bound to the namespace it was created in), then switches the
 * thread straight back to its own namespace.  If switching back ever fails,
 * efid aborts: it must never go on running in a tenant's namespace.
 */
#ifndef EFID_NETNS_H
#define EFID_NETNS_H

#include <stdbool.h>
#include <stddef.h>

#define NETNS_RUN_PARENT "/run"
#define NETNS_RUN_NAME "netns"
#define NETNS_RUN_DIR NETNS_RUN_PARENT "/" NETNS_RUN_NAME

struct nl_sock;

/* Opens efid's own namespace (/proc/self/ns/net).  Returns an fd or -errno. */
int netns_self_open(void);

/* Opens /run/netns/INSTANCE.  Returns an fd, or -ENOENT when the namespace
 * does not exist, -EINVAL for a name that cannot be one, other -errno. */
int netns_open(const char *instance);

/* True when /run/netns/INSTANCE exists. */
bool netns_exists(const char *instance);

/*
 * Runs fn(ud) with the calling thread in the namespace ns_fd and returns what
 * fn returned, or -errno when the namespace cannot be entered.  The thread is
 * back in self_fd's namespace when this returns (or the process aborted).
 */
int netns_run(int self_fd, int ns_fd, int (*fn)(void *ud), void *ud);

/* A connected NETLINK_ROUTE socket living in ns_fd's namespace (ns_fd < 0:
 * the current one).  Returns NULL and sets errno. */
struct nl_sock *netns_rtnl_socket(int self_fd, int ns_fd);

#endif
