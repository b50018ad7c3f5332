/* SPDX-License-Identifier: MIT */
/* Instances named by a namespace path; see netns_path.h. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/nsfs.h>

#include "ifacespec.h"
#include "log.h"
#include "netns.h"
#include "netns_path.h"

#define TABLE_DIR "netns-paths"
/* A record file is "dev ino path\n"; bounded so a damaged one is refused. */
#define RECORD_MAX (PATH_MAX + 64)

struct path_ns {
	struct path_ns *next;
	char name[EFI_INSTANCE_MAX + 1];
	dev_t dev;
	ino_t ino;
	int fd; /* holds the namespace until the instance is forgotten */
};

static struct path_ns *table;
static int dir_fd = -1;

static struct path_ns *lookup(const char *name)
{
	for (struct path_ns *e = table; e; e = e->next)
		if (strcmp(e->name, name) == 0)
			return e;
	return NULL;
}

/* fd is a network namespace (and not efid's own).  Returns 0, -EINVAL with
 * err set, or -errno. */
static int check_netns_fd(int fd, struct stat *st, char *err, size_t errlen)
{
	struct stat self;

	if (fstat(fd, st) < 0)
		return -errno;
	/* NS_GET_NSTYPE answers only on nsfs files: anything else (a regular
	 * file, a directory, /dev/null) fails with ENOTTY. */
	int type = ioctl(fd, NS_GET_NSTYPE);
	if (type != CLONE_NEWNET) {
		snprintf(err, errlen, "not a network namespace (give a path like "
			 "/proc/PID/ns/net or /var/run/netns/NAME)");
		return -EINVAL;
	}
	if (stat("/proc/self/ns/net", &self) == 0 && self.st_dev == st->st_dev &&
	    self.st_ino == st->st_ino) {
		snprintf(err, errlen, "that is the host's own network namespace; EFI interfaces "
			 "go into an instance's");
		return -EINVAL;
	}
	return 0;
}

/* Opens PATH and checks it still is the namespace (dev, ino). */
static int open_same(const char *path, dev_t dev, ino_t ino)
{
	struct stat st;
	char ignored[160];
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);

	if (fd < 0)
		return -errno;
	if (check_netns_fd(fd, &st, ignored, sizeof(ignored)) < 0 || st.st_dev != dev ||
	    st.st_ino != ino) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

static int add_entry(const char *name, dev_t dev, ino_t ino, int fd)
{
	struct path_ns *e;
	size_t n = strlen(name);

	if (n >= sizeof(e->name))
		return -ENAMETOOLONG;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	memcpy(e->name, name, n + 1);
	e->dev = dev;
	e->ino = ino;
	e->fd = fd;
	e->next = table;
	table = e;
	return 0;
}

/* Reads one record file; returns its descriptor (the namespace, checked) or
 * a negative errno when the entry is to be dropped. */
static int load_one(const char *name, dev_t *dev, ino_t *ino)
{
	char buf[RECORD_MAX + 1];
	unsigned long long d, i;
	int n, fd = openat(dir_fd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	ssize_t len;

	if (fd < 0)
		return -errno;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0 || (size_t)len >= sizeof(buf) - 1 || buf[len - 1] != '\n')
		return -EBADMSG;
	buf[len - 1] = '\0';
	if (sscanf(buf, "%llu %llu %n", &d, &i, &n) != 2 || buf[n] != '/')
		return -EBADMSG;
	*dev = (dev_t)d;
	*ino = (ino_t)i;
	return open_same(buf + n, *dev, *ino);
}

int netns_path_init(const char *runtime_dir)
{
	char path[PATH_MAX];
	DIR *dir;
	struct dirent *de;

	if ((size_t)snprintf(path, sizeof(path), "%s/" TABLE_DIR, runtime_dir) >= sizeof(path))
		return -ENAMETOOLONG;
	if (mkdir(path, 0700) < 0 && errno != EEXIST)
		return -errno;
	dir_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir_fd < 0)
		return -errno;
	dir = fdopendir(dup(dir_fd));
	if (!dir)
		return 0;
	while ((de = readdir(dir))) {
		dev_t dev = 0;
		ino_t ino = 0;
		int fd;

		if (!efi_instance_name_valid(de->d_name)) {
			if (strstr(de->d_name, ".tmp"))
				unlinkat(dir_fd, de->d_name, 0);
			continue;
		}
		fd = load_one(de->d_name, &dev, &ino);
		if (fd >= 0 && add_entry(de->d_name, dev, ino, fd) == 0) {
			log_debug("instance %s: namespace path found again", de->d_name);
			continue;
		}
		if (fd >= 0)
			close(fd);
		/* The pod went while efid was away: its records show the
		 * instance as missing, and a detach still finishes them. */
		log_info("instance %s: its namespace path is gone (%s); forgetting it",
			 de->d_name, strerror(fd == -ENOMEM ? ENOMEM : fd < 0 ? -fd : EIO));
		unlinkat(dir_fd, de->d_name, 0);
	}
	closedir(dir);
	return 0;
}

void netns_path_exit(void)
{
	while (table) {
		struct path_ns *e = table;
		table = e->next;
		close(e->fd);
		free(e);
	}
	if (dir_fd >= 0)
		close(dir_fd);
	dir_fd = -1;
}

static int write_record(const char *name, dev_t dev, ino_t ino, const char *path)
{
	char tmp[EFI_INSTANCE_MAX + 8];
	int fd, rc = 0;

	snprintf(tmp, sizeof(tmp), "%s.tmp", name);
	fd = openat(dir_fd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	if (dprintf(fd, "%llu %llu %s\n", (unsigned long long)dev, (unsigned long long)ino,
		    path) < 0 || fsync(fd) < 0)
		rc = errno ? -errno : -EIO;
	if (close(fd) < 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && renameat(dir_fd, tmp, dir_fd, name) < 0)
		rc = -errno;
	if (rc < 0)
		unlinkat(dir_fd, tmp, 0);
	return rc;
}

int netns_path_adopt(const char *want, const char *path, char *name, size_t namelen,
		     char *err, size_t errlen)
{
	struct stat st;
	struct path_ns *e;
	int fd, rc;

	err[0] = '\0';
	if (!efi_instance_name_valid(want)) {
		snprintf(err, errlen, "'%s' is not a valid instance name", want);
		return -EINVAL;
	}
	/* The record is one line: a newline in the path would end it early. */
	if (path[0] != '/' || strchr(path, '\n') || strlen(path) >= PATH_MAX) {
		snprintf(err, errlen, "the namespace path must be an absolute path of one line");
		return -EINVAL;
	}
	if (dir_fd < 0) {
		snprintf(err, errlen, "efid cannot record namespace paths (see its log at start)");
		return -ENOTSUP;
	}
	/* nsfs files are regular files: never open a device node or a FIFO
	 * (opening some devices does something). */
	if (stat(path, &st) < 0) {
		rc = -errno;
		snprintf(err, errlen, "cannot open the namespace %s: %s", path, strerror(errno));
		return rc;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s is not a network namespace (give a path like "
			 "/proc/PID/ns/net or /var/run/netns/NAME)", path);
		return -EINVAL;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "cannot open the namespace %s: %s", path, strerror(errno));
		return rc;
	}
	rc = check_netns_fd(fd, &st, err, errlen);
	if (rc < 0) {
		if (!err[0])
			snprintf(err, errlen, "cannot read %s: %s", path, strerror(-rc));
		goto out_close;
	}

	/* One namespace, one name: auth maps a client's namespace back to its
	 * instance by (dev, ino), which must give one answer. */
	char existing[EFI_INSTANCE_MAX + 1];
	if (netns_find(st.st_dev, st.st_ino, existing, sizeof(existing))) {
		snprintf(name, namelen, "%s", existing);
		rc = 0;
		goto out_close;
	}
	int other = netns_open(want);
	if (other >= 0 || other != -ENOENT) {
		if (other >= 0)
			close(other);
		snprintf(err, errlen, "instance name '%s' already names another namespace", want);
		rc = -EEXIST;
		goto out_close;
	}
	rc = write_record(want, st.st_dev, st.st_ino, path);
	if (rc == 0)
		rc = add_entry(want, st.st_dev, st.st_ino, fd);
	if (rc < 0) {
		snprintf(err, errlen, "cannot record the namespace of instance '%s': %s", want,
			 strerror(-rc));
		unlinkat(dir_fd, want, 0);
		goto out_close;
	}
	e = lookup(want);
	log_info("instance %s: namespace %s (inode %llu)", e->name, path,
		 (unsigned long long)e->ino);
	snprintf(name, namelen, "%s", want);
	return 0;

out_close:
	close(fd);
	return rc;
}

int netns_path_open(const char *name)
{
	struct path_ns *e = lookup(name);
	int fd;

	if (!e)
		return -ENOENT;
	fd = fcntl(e->fd, F_DUPFD_CLOEXEC, 0);
	return fd < 0 ? -errno : fd;
}

bool netns_path_find(dev_t dev, ino_t ino, char *name, size_t len)
{
	for (struct path_ns *e = table; e; e = e->next) {
		if (e->dev == dev && e->ino == ino && strlen(e->name) < len) {
			memcpy(name, e->name, strlen(e->name) + 1);
			return true;
		}
	}
	return false;
}

void netns_path_forget(const char *name)
{
	for (struct path_ns **pp = &table; *pp; pp = &(*pp)->next) {
		struct path_ns *e = *pp;

		if (strcmp(e->name, name) != 0)
			continue;
		*pp = e->next;
		if (dir_fd >= 0 && unlinkat(dir_fd, e->name, 0) < 0 && errno != ENOENT)
			log_warning("instance %s: cannot remove its namespace record: %m", e->name);
		close(e->fd);
		log_info("instance %s: namespace let go", e->name);
		free(e);
		return;
	}
}
