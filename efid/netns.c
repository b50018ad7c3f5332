/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <dirent.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <netlink/netlink.h>
#include <netlink/socket.h>

#include "ifacespec.h"
#include "log.h"
#include "netns.h"
#include "netns_path.h"

int netns_self_open(void)
{
	int fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

int netns_open(const char *instance)
{
	char path[sizeof(NETNS_RUN_DIR) + EFI_INSTANCE_MAX + 2];
	int fd;

	/* The name becomes a path: refuse anything that could leave the
	 * directory before it gets near open(). */
	if (!efi_instance_name_valid(instance))
		return -EINVAL;
	snprintf(path, sizeof(path), NETNS_RUN_DIR "/%s", instance);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT)
		return netns_path_open(instance); /* a CNI pod's, by path */
	return fd < 0 ? -errno : fd;
}

bool netns_find(dev_t dev, ino_t ino, char *name, size_t len)
{
	DIR *dir = opendir(NETNS_RUN_DIR);
	struct dirent *de;

	name[0] = '\0';
	while (dir && (de = readdir(dir))) {
		struct stat st;
		size_t n = strlen(de->d_name);

		if (!efi_instance_name_valid(de->d_name) || n >= len)
			continue;
		if (fstatat(dirfd(dir), de->d_name, &st, 0) == 0 && st.st_dev == dev &&
		    st.st_ino == ino) {
			memcpy(name, de->d_name, n + 1);
			closedir(dir);
			return true;
		}
	}
	if (dir)
		closedir(dir);
	return netns_path_find(dev, ino, name, len);
}

int netns_stat(const char *instance, struct stat *st)
{
	int fd = netns_open(instance), rc = 0;

	if (fd < 0)
		return fd;
	if (fstat(fd, st) < 0)
		rc = -errno;
	close(fd);
	return rc;
}

bool netns_exists(const char *instance)
{
	int fd = netns_open(instance);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

int netns_run(int self_fd, int ns_fd, int (*fn)(void *ud), void *ud)
{
	int rc;

	if (ns_fd < 0)
		return fn(ud);
	if (setns(ns_fd, CLONE_NEWNET) < 0)
		return -errno;
	rc = fn(ud);
	if (setns(self_fd, CLONE_NEWNET) < 0) {
		/* Going on would run every later request in a tenant's
		 * namespace.  There is no safe way forward. */
		log_error("cannot return to efid's own network namespace: %m; aborting");
		abort();
	}
	return rc;
}

static int make_rtnl_socket(void *ud)
{
	struct nl_sock **out = ud;
	struct nl_sock *sk;
	int rc;

	sk = nl_socket_alloc();
	if (!sk)
		return -ENOMEM;
	rc = nl_connect(sk, NETLINK_ROUTE);
	if (rc < 0) {
		nl_socket_free(sk);
		return -EIO;
	}
	*out = sk;
	return 0;
}

struct nl_sock *netns_rtnl_socket(int self_fd, int ns_fd)
{
	struct nl_sock *sk = NULL;
	int rc = netns_run(self_fd, ns_fd, make_rtnl_socket, &sk);

	if (rc < 0) {
		errno = -rc;
		return NULL;
	}
	return sk;
}
