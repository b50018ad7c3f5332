/* SPDX-License-Identifier: MIT */
/*
 * Instances named by a namespace path.  A container runtime's CNI plugin
 * knows its pod's network namespace only as a path (/proc/PID/ns/net,
 * /var/run/netns/cni-…); efid cannot ask it for an `ip netns add` name, and
 * under its unit (ProtectSystem=strict, a slave mount namespace) it could not
 * make one either.  So efid keeps its own table: instance name -> the
 * namespace, identified by the (st_dev, st_ino) of its nsfs file, with an open
 * descriptor that keeps it reachable (and alive) until the last interface of
 * the instance is detached, even after the runtime removed its path.  Each
 * entry is also written to RUNTIME_DIR/netns-paths/NAME ("dev ino path"), so a
 * restarted efid finds the namespace again by its path, and accepts it only
 * if the path still names the same namespace.
 *
 * netns_open() and auth consult this table after /run/netns, so every other
 * part of efid sees a path instance as an ordinary instance.
 */
#ifndef EFID_NETNS_PATH_H
#define EFID_NETNS_PATH_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Loads the table from RUNTIME_DIR/netns-paths (made if missing), dropping
 * entries whose path is gone or names another namespace now.  Returns 0 or
 * -errno (the directory cannot be made). */
int netns_path_init(const char *runtime_dir);

/* Closes every descriptor (the files stay for the next start). */
void netns_path_exit(void);

/*
 * Makes PATH's network namespace an instance.  The name is `want`, unless the
 * namespace already is an instance (a /run/netns entry or an earlier path
 * instance): then that name, so that one namespace never has two.  The chosen
 * name goes to name (at least EFI_INSTANCE_MAX + 1 bytes).  Returns 0,
 * -EINVAL (not an absolute path, not a network namespace, efid's own),
 * -ENOENT (no such file), -EEXIST (`want` names another namespace), or
 * another -errno, with a message in err.
 */
int netns_path_adopt(const char *want, const char *path, char *name, size_t namelen,
		     char *err, size_t errlen);

/* A new descriptor of the path instance NAME's namespace, or -ENOENT. */
int netns_path_open(const char *name);

/* The path instance whose namespace is (dev, ino), if any, into name. */
bool netns_path_find(dev_t dev, ino_t ino, char *name, size_t len);

/* Forgets the path instance NAME (a no-op for other names): closes its
 * descriptor and removes its file.  For when it has no interface left. */
void netns_path_forget(const char *name);

#endif
