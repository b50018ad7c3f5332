/* SPDX-License-Identifier: MIT */
/*
 * The remaining public helpers of libibverbs: fork support, sysfs access,
 * and the provider-registration entry a provider library's constructor
 * calls (so that libmlx5 & co., loaded by programs like perftest, register
 * with us and never run code of the real libibverbs).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "verbs_int.h"

/* Declared in rdma-core's <infiniband/driver.h>, not installed by Debian. */
EFIV_EXPORT int ibv_dontfork_range(void *base, size_t size);
EFIV_EXPORT int ibv_dofork_range(void *base, size_t size);
EFIV_EXPORT const char *ibv_get_sysfs_path(void);
EFIV_EXPORT int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size);
EFIV_EXPORT void verbs_register_driver_34(const void *ops);

/* libefi neither pins memory nor maps device pages: a child after fork()
 * cannot corrupt anything, so fork support is "unneeded", as libibverbs says
 * on kernels that make it so. */
EFIV_EXPORT int ibv_fork_init(void)
{
	return 0;
}

EFIV_EXPORT enum ibv_fork_status ibv_is_fork_initialized(void)
{
	return IBV_FORK_UNNEEDED;
}

int ibv_dontfork_range(void *base, size_t size)
{
	(void)base;
	(void)size;
	return 0;
}

int ibv_dofork_range(void *base, size_t size)
{
	(void)base;
	(void)size;
	return 0;
}

/* rdma-core's signature (librdmacm calls it): the sysfs mount point, or
 * $SYSFS_PATH as libibverbs honours it. */
const char *ibv_get_sysfs_path(void)
{
	const char *env = getenv("SYSFS_PATH");

	return env && *env ? env : "/sys";
}

/* Files of an EFI device's virtual sysfs directory (its ibdev_path, a
 * /sys/class/infiniband/NAME that does not exist): what ibv_devinfo reads.
 * Other paths are read from the file system. */
static const struct {
	const char *file;
	const char *text;
} efi_files[] = {
	{ "board_id", "EFI\n" },
	{ "node_type", "1: CA\n" },
};

int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size)
{
	static const char prefix[] = "/sys/class/infiniband/";
	char path[512];
	ssize_t len;
	int fd;

	if (!dir || !file || !buf || !size)
		return -1;
	if (!strncmp(dir, prefix, sizeof(prefix) - 1) && access(dir, F_OK)) {
		for (size_t i = 0; i < sizeof(efi_files) / sizeof(efi_files[0]); i++) {
			if (strcmp(file, efi_files[i].file))
				continue;
			len = snprintf(buf, size, "%s", efi_files[i].text);
			if (len > 0 && buf[len - 1] == '\n')
				buf[--len] = '\0';
			return (int)len;
		}
		errno = ENOENT;
		return -1;
	}
	if (snprintf(path, sizeof(path), "%s/%s", dir, file) >= (int)sizeof(path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	len = read(fd, buf, size);
	close(fd);
	if (len < 0)
		return -1;
	if ((size_t)len < size)
		buf[len] = '\0';
	if (len > 0 && buf[len - 1] == '\n')
		buf[--len] = '\0';
	return (int)len;
}

/* Provider libraries (libmlx5, libefa …) register themselves from their
 * constructors.  EFI devices need no provider: the registration is
 * accepted and forgotten. */
void verbs_register_driver_34(const void *ops)
{
	(void)ops;
}
