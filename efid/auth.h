/* SPDX-License-Identifier: MIT */
/*
 * Who is on the other end of a control connection: credentials from the
 * kernel (SO_PEERCRED, SO_PEERGROUPS) and the network namespace the caller
 * lives in, which tells whether it is an instance's process.  Nothing the
 * client says about itself is trusted.
 */
#ifndef EFID_AUTH_H
#define EFID_AUTH_H

#include <stdbool.h>
#include <sys/types.h>

#include "ifacespec.h"

#define AUTH_MAX_GROUPS 64

struct peer {
	pid_t pid;
	uid_t uid;
	gid_t gid;
	gid_t groups[AUTH_MAX_GROUPS];
	int ngroups;
	/* true when the caller shares efid's network namespace (an operator on
	 * the host); false for instance processes and unknown namespaces */
	bool host;
	/* the instance whose netns the caller is in; "" when host or unknown */
	char instance[EFI_INSTANCE_MAX + 1];
};

/* Remembers efid's own network namespace.  Returns 0 or -errno. */
int auth_init(void);

/*
 * Fills *p for the peer of connected socket fd.  Returns 0, or -errno when
 * the credentials cannot be read (the connection should then be refused).
 */
int auth_identify(int fd, struct peer *p);

/* True when the caller may change state: a host client that is root, or
 * whose primary or supplementary groups include mutate_gid (when
 * have_group). */
bool auth_can_mutate(const struct peer *p, bool have_group, gid_t mutate_gid);

#endif
