/* SPDX-License-Identifier: MIT */
/*
 * Network namespaces: an instance is /run/netns/NAME (made by `ip netns add`),
 * or a namespace a CNI plugin named by its path (netns_path.h).
 * efid enters one only for as long as it takes to make a netlink socket (a
 * socket stays bound to the namespace it was created in), then switches the
 * thread straight back to its own namespace.  If switching back ever fails,
 * efid aborts: it must never go on running in a tenant's namespace.
 */
#ifndef EFID_NETNS_H
#define EFID_NETNS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define NETNS_RUN_PARENT "/run"
#define NETNS_RUN_NAME "netns"
#define NETNS_RUN_DIR NETNS_RUN_PARENT "/" NETNS_RUN_NAME

struct nl_sock;

/* Opens efid's own namespace (/proc/self/ns/net).  Returns an fd or -errno. */
int netns_self_open(void);

/* Opens /run/netns/INSTANCE, or the namespace of the path instance INSTANCE
 * (netns_path.h).  Returns an fd, or -ENOENT when the namespace does not
 * exist, -EINVAL for a name that cannot be one, other -errno. */
int netns_open(const char *instance);

/* stat() of INSTANCE's namespace (its st_ino tells one namespace from a
 * later one of the same name).  Returns 0 or -errno as netns_open. */
struct stat;
int netns_stat(const char *instance, struct stat *st);

/* True when the namespace of INSTANCE exists (netns_open succeeds). */
bool netns_exists(const char *instance);

/* The instance whose namespace is (dev, ino): a /run/netns entry first, then
 * a path instance.  Copies its name to name and returns true, or false. */
bool netns_find(dev_t dev, ino_t ino, char *name, size_t len);

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
