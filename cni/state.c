/* SPDX-License-Identifier: MIT */
/*
 * efi-cni's state, one directory per network under dataDir, every change
 * under one exclusive flock (runtimes run plugins for many pods at once):
 *   lock                   the lock file
 *   att-CONTAINER-IFNAME   what ADD did: "instance NAME" and "address A/P"
 *                          lines, so DEL finds the instance after the pod's
 *                          namespace is gone and CHECK knows what to expect
 *   ip-A.B.C.D             a range address and its holder, "CONTAINER IFNAME"
 * Files are written to a temporary name and renamed, so a crash leaves the
 * old version or the new one.
 */
#include "config.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cni.h"

struct cni_state {
	int dir;
	int lock;
};

static int mkdir_p(const char *path)
{
	char buf[PATH_MAX];
	size_t n = strlen(path);

	if (n >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, n + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, 0700) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

struct cni_state *cni_state_open(const struct cni_conf *c, struct cni_err *e)
{
	char path[PATH_MAX];
	struct cni_state *s;
	int r;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", c->data_dir, c->name) >= sizeof(path)) {
		cni_fail(e, CNI_E_CONFIG, NULL, "\"dataDir\" is too long");
		return NULL;
	}
	r = mkdir_p(path);
	if (r < 0) {
		cni_fail(e, CNI_E_IO, strerror(-r), "cannot make the state directory %s", path);
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		cni_fail(e, CNI_E_IO, NULL, "out of memory");
		return NULL;
	}
	s->dir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	s->lock = s->dir < 0 ? -1 :
		openat(s->dir, "lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (s->lock < 0 || flock(s->lock, LOCK_EX) < 0) {
		cni_fail(e, CNI_E_IO, strerror(errno), "cannot lock the state directory %s", path);
		cni_state_close(s);
		return NULL;
	}
	return s;
}

void cni_state_close(struct cni_state *s)
{
	if (!s)
		return;
	if (s->lock >= 0)
		close(s->lock); /* and the flock with it */
	if (s->dir >= 0)
		close(s->dir);
	free(s);
}

static void record_name(const struct cni_env *env, char *name, size_t len)
{
	snprintf(name, len, "att-%s-%s", env->container_id, env->ifname);
}

/* Writes text to name atomically.  Returns 0 or -errno. */
static int write_file(struct cni_state *s, const char *name, const char *text)
{
	char tmp[NAME_MAX + 1];
	size_t n = strlen(text);
	int fd, r = 0;

	snprintf(tmp, sizeof(tmp), ".%.200s.tmp", name);
	fd = openat(s->dir, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	if (write(fd, text, n) != (ssize_t)n || fsync(fd) < 0)
		r = errno ? -errno : -EIO;
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r == 0 && renameat(s->dir, tmp, s->dir, name) < 0)
		r = -errno;
	if (r < 0)
		unlinkat(s->dir, tmp, 0);
	return r;
}

/* Reads a small file into buf.  Returns its length, or -errno. */
static ssize_t read_file(struct cni_state *s, const char *name, char *buf, size_t len)
{
	int fd = openat(s->dir, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return n;
}

int cni_record_get(struct cni_state *s, const struct cni_env *env, struct cni_record *r,
		   struct cni_err *e)
{
	char name[NAME_MAX + 1], buf[4096], *save = NULL;
	ssize_t n;

	memset(r, 0, sizeof(*r));
	record_name(env, name, sizeof(name));
	n = read_file(s, name, buf, sizeof(buf));
	if (n == -ENOENT)
		return 1;
	if (n < 0)
		return cni_fail(e, CNI_E_IO, strerror((int)-n), "cannot read the state file %s", name);
	for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char why[128];

		if (strncmp(line, "instance ", 9) == 0 && efi_instance_name_valid(line + 9)) {
			snprintf(r->instance, sizeof(r->instance), "%s", line + 9);
		} else if (strncmp(line, "address ", 8) == 0 && r->naddrs < EFI_MAX_ADDRS &&
			   efi_addr_parse(line + 8, &r->addrs[r->naddrs], why, sizeof(why)) == 0) {
			r->naddrs++;
		} else {
			return cni_fail(e, CNI_E_IO, line, "the state file %s is damaged", name);
		}
	}
	if (!r->instance[0])
		return cni_fail(e, CNI_E_IO, NULL, "the state file %s names no instance", name);
	return 0;
}

int cni_record_put(struct cni_state *s, const struct cni_env *env, const struct cni_record *r,
		   struct cni_err *e)
{
	char name[NAME_MAX + 1], buf[4096], a[INET6_ADDRSTRLEN + 8];
	size_t off = 0;
	int rc;

	record_name(env, name, sizeof(name));
	off += (size_t)snprintf(buf + off, sizeof(buf) - off, "instance %s\n", r->instance);
	for (size_t i = 0; i < r->naddrs && off < sizeof(buf); i++)
		off += (size_t)snprintf(buf + off, sizeof(buf) - off, "address %s\n",
					efi_addr_format(&r->addrs[i], a, sizeof(a)));
	rc = write_file(s, name, buf);
	if (rc < 0)
		return cni_fail(e, CNI_E_IO, strerror(-rc), "cannot write the state file %s", name);
	return 0;
}

void cni_record_drop(struct cni_state *s, const struct cni_env *env)
{
	char name[NAME_MAX + 1];

	record_name(env, name, sizeof(name));
	unlinkat(s->dir, name, 0);
}

/* ---- the address range ------------------------------------------------- */

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

/* Is the ip-* file name held by (container, ifname)? */
static bool held_by(struct cni_state *s, const char *name, const struct cni_env *env)
{
	char buf[512], want[512];

	snprintf(want, sizeof(want), "%s %s\n", env->container_id, env->ifname);
	return read_file(s, name, buf, sizeof(buf)) > 0 && strcmp(buf, want) == 0;
}

/* Calls fn for every ip-* file, with its address; stops at non-zero. */
static int foreach_ip(struct cni_state *s, int (*fn)(const char *name, uint32_t ip, void *ud),
		      void *ud)
{
	DIR *d = fdopendir(dup(s->dir));
	struct dirent *de;
	int r = 0;

	if (!d)
		return -errno;
	rewinddir(d);
	while (r == 0 && (de = readdir(d))) {
		struct in_addr a;
		if (strncmp(de->d_name, "ip-", 3) == 0 && inet_pton(AF_INET, de->d_name + 3, &a) == 1)
			r = fn(de->d_name, ntohl(a.s_addr), ud);
	}
	closedir(d);
	return r;
}

struct take_ctx {
	struct cni_state *s;
	const struct cni_env *env;
	uint32_t *used;
	size_t n, cap;
	uint32_t mine;
	bool found;
};

static int collect(const char *name, uint32_t ip, void *ud)
{
	struct take_ctx *t = ud;

	if (held_by(t->s, name, t->env)) {
		t->mine = ip;
		t->found = true;
		return 1;
	}
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		uint32_t *p = realloc(t->used, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		t->used = p;
		t->cap = cap;
	}
	t->used[t->n++] = ip;
	return 0;
}

int cni_range_take(struct cni_state *s, const struct cni_conf *c, const struct cni_env *env,
		   struct efi_addr *out, struct cni_err *e)
{
	struct take_ctx t = { .s = s, .env = env };
	char name[32], holder[512];
	int r = foreach_ip(s, collect, &t);

	if (r < 0) {
		free(t.used);
		return cni_fail(e, CNI_E_IO, strerror(-r), "cannot read the range's allocations");
	}
	if (!t.found) {
		if (t.n)
			qsort(t.used, t.n, sizeof(*t.used), cmp_u32);
		snprintf(holder, sizeof(holder), "%s %s\n", env->container_id, env->ifname);
		for (uint64_t ip = c->range.start; ip <= c->range.end; ip++) {
			uint32_t v = (uint32_t)ip;
			struct in_addr a = { .s_addr = htonl(v) };

			if (t.n && bsearch(&v, t.used, t.n, sizeof(*t.used), cmp_u32))
				continue;
			snprintf(name, sizeof(name), "ip-%s", inet_ntoa(a));
			/* Under the lock no one else allocates; the file is
			 * written like the others, whole or not at all. */
			r = write_file(s, name, holder);
			if (r < 0) {
				free(t.used);
				return cni_fail(e, CNI_E_IO, strerror(-r), "cannot write %s", name);
			}
			t.mine = v;
			t.found = true;
			break;
		}
	}
	free(t.used);
	if (!t.found)
		return cni_fail(e, CNI_E_RANGE, NULL, "every address of the range is in use");
	out->family = AF_INET;
	out->a.v4.s_addr = htonl(t.mine);
	out->prefixlen = c->range.prefixlen;
	return 0;
}

static int release_one(const char *name, uint32_t ip, void *ud)
{
	struct take_ctx *t = ud;

	(void)ip;
	if (held_by(t->s, name, t->env))
		unlinkat(t->s->dir, name, 0);
	return 0;
}

void cni_range_release(struct cni_state *s, const struct cni_env *env)
{
	struct take_ctx t = { .s = s, .env = env };

	foreach_ip(s, release_one, &t);
}
