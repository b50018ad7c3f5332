/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the store's unit tests: a temporary directory per test,
 * file bytes, a second SQLite connection to look behind the store's back,
 * and builders for interfaces, addresses and GIDs.
 */
#include "config.h"

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "tests/unit/store_testutil.h"

char store_test_basedir[128];
char store_test_dir[256];

void make_tmpdir(void)
{
	static int n;

	snprintf(store_test_dir, sizeof(store_test_dir), "%s/t%d.%d", store_test_basedir, (int)getpid(), n++);
	ck_assert_int_eq(mkdir(store_test_dir, 0700), 0);
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(p);
}

void remove_tree(const char *dir)
{
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

void remove_tmpdir(void)
{
	if (store_test_dir[0])
		remove_tree(store_test_dir);
	store_test_dir[0] = '\0';
}

const char *tmp_path(const char *name)
{
	/* Enough buffers that no test reuses one it still holds. */
	static char buf[16][512];
	static int next;
	char *p = buf[next++ % 16];

	snprintf(p, sizeof(buf[0]), "%s/%s", store_test_dir, name);
	return p;
}

char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	ck_assert_msg(f, "cannot open %s: %s", path, strerror(errno));
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = malloc((size_t)n + 1);
	ck_assert_ptr_nonnull(buf);
	ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return buf;
}

void spit(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");

	ck_assert_msg(f, "cannot create %s: %s", path, strerror(errno));
	ck_assert_uint_eq(fwrite(data, 1, len, f), len);
	ck_assert_int_eq(fclose(f), 0);
}

void assert_same_bytes(const char *path, const char *before, size_t before_len)
{
	size_t len;
	char *now = slurp(path, &len);

	ck_assert_msg(len == before_len && memcmp(now, before, len) == 0,
		      "%s was changed (%zu bytes before, %zu after)", path, before_len, len);
	free(now);
}

const char *fixture(const char *name)
{
	static char buf[1024];
	const char *dir = getenv("FIXTURES");

	snprintf(buf, sizeof(buf), "%s/%s", dir ? dir : STORE_FIXTURES_DIR, name);
	return buf;
}

void copy_file(const char *from, const char *to)
{
	size_t len;
	char *data = slurp(from, &len);

	spit(to, data, len);
	free(data);
}

/* Runs sql on its own connection, returning the first column of the first
 * row as an integer (or -1 when there is no row). */
long long raw_int(const char *path, const char *sql)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	long long v = -1;
	int rc;

	ck_assert_int_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
	rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
	ck_assert_msg(rc == SQLITE_OK, "%s: %s", sql, sqlite3_errmsg(db));
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	else
		ck_assert_msg(rc == SQLITE_DONE, "%s: %s", sql, sqlite3_errmsg(db));
	sqlite3_finalize(st);
	sqlite3_close(db);
	return v;
}

void raw_exec(const char *path, const char *sql)
{
	sqlite3 *db = NULL;

	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	ck_assert_msg(sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK, "%s: %s", sql,
		      sqlite3_errmsg(db));
	sqlite3_close(db);
}

struct efi_addr addr(const char *text, int prefixlen)
{
	struct efi_addr a;

	memset(&a, 0, sizeof(a));
	a.family = strchr(text, ':') ? AF_INET6 : AF_INET;
	ck_assert_int_eq(inet_pton(a.family, text, &a.a), 1);
	a.prefixlen = (uint8_t)prefixlen;
	return a;
}

struct store_iface iface(const char *instance, const char *name, const char *host,
				const char *a1, int p1, const char *a2, int p2)
{
	struct store_iface f;

	memset(&f, 0, sizeof(f));
	snprintf(f.spec.instance, sizeof(f.spec.instance), "%s", instance);
	snprintf(f.spec.name, sizeof(f.spec.name), "%s", name);
	snprintf(f.spec.kind, sizeof(f.spec.kind), "veth");
	snprintf(f.spec.uplink, sizeof(f.spec.uplink), "br0");
	snprintf(f.host_ifname, sizeof(f.host_ifname), "%s", host);
	f.spec.mtu = 1500;
	if (a1)
		f.spec.addrs[f.spec.naddrs++] = addr(a1, p1);
	if (a2)
		f.spec.addrs[f.spec.naddrs++] = addr(a2, p2);
	return f;
}

void assert_addr(const struct efi_addr *a, const char *text, int prefixlen)
{
	char buf[INET6_ADDRSTRLEN];

	ck_assert_ptr_nonnull(inet_ntop(a->family, &a->a, buf, sizeof(buf)));
	ck_assert_str_eq(buf, text);
	ck_assert_int_eq(a->prefixlen, prefixlen);
}

struct store *open_ok(const char *path)
{
	struct store *s = NULL;
	int r = store_open(path, &s);

	ck_assert_msg(r == 0, "store_open(%s) = %d: %s", path, r, store_open_error());
	ck_assert_ptr_nonnull(s);
	return s;
}

union efi_gid gid_of(const char *text)
{
	union efi_gid g;

	ck_assert_int_eq(inet_pton(AF_INET6, text, g.raw), 1);
	return g;
}

int store_test_run(Suite *suite)
{
	SRunner *sr = srunner_create(suite);
	int failed;

	snprintf(store_test_basedir, sizeof(store_test_basedir), "/tmp/test_store.%d.XXXXXX",
		 (int)getpid());
	if (!mkdtemp(store_test_basedir)) {
		perror("mkdtemp");
		return EXIT_FAILURE;
	}
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	remove_tree(store_test_basedir);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
