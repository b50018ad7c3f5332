/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "auth.h"
#include "log.h"
#include "netns.h"

#ifndef SO_PEERGROUPS
#define SO_PEERGROUPS 59
#endif
#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif

static dev_t own_ns_dev;
static ino_t own_ns_ino;

int auth_init(void)
{
	struct stat st;
	if (stat("/proc/self/ns/net", &st) < 0)
		return -errno;
	own_ns_dev = st.st_dev;
	own_ns_ino = st.st_ino;
	return 0;
}

int auth_identify(int fd, struct peer *p)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	char path[64];
	struct stat st;

	memset(p, 0, sizeof(*p));
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
		return -errno;
	p->pid = cred.pid;
	p->uid = cred.uid;
	p->gid = cred.gid;

	len = sizeof(p->groups);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, p->groups, &len) == 0)
		p->ngroups = (int)(len / sizeof(gid_t));
	else
		p->ngroups = 0; /* too many groups, or old kernel: primary gid only */

	/*
	 * The namespace is read through /proc/PID.  To be sure PID still is the
	 * process that connected (and not a reuse), hold a pidfd for it and
	 * check the process is alive after reading.
	 */
	int pidfd = -1;
	len = sizeof(pidfd);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) < 0)
		pidfd = -1;
	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)cred.pid);
	int r = stat(path, &st);
	int saved = errno;
	if (pidfd >= 0) {
		/* Signal 0 only probes.  EPERM (a caller of another uid, and efid
		 * without CAP_KILL under its unit's bounding set) still proves the
		 * process is alive; only ESRCH says it is gone. */
		if (syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) < 0 && errno == ESRCH)
			r = -1, saved = ESRCH;
		close(pidfd);
	}
	if (r < 0)
		return -saved;

	if (st.st_dev == own_ns_dev && st.st_ino == own_ns_ino) {
		p->host = true;
		return 0;
	}
	/* /run/netns names, then namespaces CNI plugins named by path. */
	netns_find(st.st_dev, st.st_ino, p->instance, sizeof(p->instance));
	return 0;
}

bool auth_can_mutate(const struct peer *p, bool have_group, gid_t mutate_gid)
{
	if (!p->host)
		return false;
	if (p->uid == 0)
		return true;
	if (!have_group)
		return false;
	if (p->gid == mutate_gid)
		return true;
	for (int i = 0; i < p->ngroups; i++)
		if (p->groups[i] == mutate_gid)
			return true;
	return false;
}
