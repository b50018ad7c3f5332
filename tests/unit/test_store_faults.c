/* SPDX-License-Identifier: MIT */
/*
 * The store against what a host really does to a database: a lock held by
 * another process, a corrupt file, a missing directory, a read-only
 * filesystem, a full disk.  Each gives its errno and a message that says
 * what to do, and loses nothing.
 *
 * The read-only and full-disk cases mount a tmpfs, in a mount namespace of
 * the test's own (check forks each test), so nothing outlives the test even
 * if it crashes; they are skipped, saying so, when not run as root.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "tests/unit/store_testutil.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

START_TEST(locked_database_is_busy)
{
	const char *path = tmp_path("efid.db");
	struct store *s = open_ok(path), *other = NULL;
	struct store_iface a = iface("vm1", "efi0", "efh1", "10.0.0.5", 24, NULL, 0);
	struct store_iface f;
	sqlite3 *holder;
	double t0, took;
	int r;

	ck_assert_int_eq(sqlite3_open(path, &holder), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(holder, "BEGIN EXCLUSIVE", NULL, NULL, NULL), SQLITE_OK);

	t0 = now_s();
	r = store_iface_insert(s, &a);
	took = now_s() - t0;
	ck_assert_int_eq(r, -EBUSY);
	ck_assert_msg(took >= 1.0 && took < 5.0, "gave up after %.1f s", took);
	ck_assert_ptr_nonnull(strstr(store_errmsg(s), "locked by another process"));
	ck_assert_ptr_nonnull(strstr(store_errmsg(s), "--state-dir"));
	ck_assert_ptr_nonnull(strstr(store_errmsg(s), path));

	/* A second efid on the same file is told at open. */
	t0 = now_s();
	r = store_open(path, &other);
	took = now_s() - t0;
	ck_assert_int_eq(r, -EBUSY);
	ck_assert_ptr_null(other);
	ck_assert_msg(took < 5.0, "gave up after %.1f s", took);
	ck_assert_ptr_nonnull(strstr(store_open_error(), "is another efid running"));

	ck_assert_int_eq(sqlite3_exec(holder, "ROLLBACK", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(holder);
	ck_assert_int_eq(store_iface_insert(s, &a), 0);
	ck_assert_int_eq(store_iface_get(s, "vm1", "efi0", &f), 0);
	store_close(s);
}
END_TEST

START_TEST(corrupt_file_is_eio_and_untouched)
{
	const char *path = tmp_path("efid.db");
	struct store *s = NULL;
	char garbage[8192];
	size_t len;
	char *before;

	for (size_t i = 0; i < sizeof(garbage); i++)
		garbage[i] = (char)(i * 7 + 13);
	spit(path, garbage, sizeof(garbage));
	ck_assert_int_eq(store_open(path, &s), -EIO);
	ck_assert_ptr_null(s);
	ck_assert_ptr_nonnull(strstr(store_open_error(), "corrupt"));
	ck_assert_ptr_nonnull(strstr(store_open_error(), "backup"));
	assert_same_bytes(path, garbage, sizeof(garbage));

	/* A real database with a damaged page: the header reads fine, the
	 * integrity check does not. */
	const char *real = tmp_path("real.db");
	s = open_ok(real);
	for (int i = 0; i < 200; i++) {
		char name[16], host[16], ip[32];
		snprintf(name, sizeof(name), "efi%d", i);
		snprintf(host, sizeof(host), "efh%d", i);
		snprintf(ip, sizeof(ip), "10.0.%d.%d", i / 250, i % 250 + 1);
		struct store_iface f = iface("vm1", name, host, ip, 24, NULL, 0);
		ck_assert_int_eq(store_iface_insert(s, &f), 0);
	}
	store_close(s);
	before = slurp(real, &len);
	ck_assert_uint_gt(len, 4096 * 6);
	memset(before + 4096 * 3, 0x5a, 4096 * 2);
	spit(real, before, len);
	ck_assert_int_eq(store_open(real, &s), -EIO);
	ck_assert_ptr_nonnull(strstr(store_open_error(), "corrupt"));
	assert_same_bytes(real, before, len);
	free(before);
}
END_TEST

START_TEST(missing_directory)
{
	struct store *s = NULL;

	ck_assert_int_eq(store_open(tmp_path("no/such/dir/efid.db"), &s), -ENOENT);
	ck_assert_ptr_nonnull(strstr(store_open_error(), "directory does not exist"));
}
END_TEST

/* ---- mounted filesystems ----------------------------------------------- */

static char mnt[512];
static const char *mount_skip;

/* Runs in the forked test process: the namespace and the tmpfs in it go
 * away with that process, whatever happens; teardown unmounts anyway. */
static void mount_setup(void)
{
	make_tmpdir();
	mount_skip = NULL;
	snprintf(mnt, sizeof(mnt), "%s/mnt", store_test_dir);
	ck_assert_int_eq(mkdir(mnt, 0700), 0);
	if (geteuid() != 0) {
		mount_skip = "not root: cannot mount a tmpfs";
		return;
	}
	if (unshare(CLONE_NEWNS) < 0 ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount("efi-test-store", mnt, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0700") < 0) {
		mount_skip = "cannot make a mount namespace with a tmpfs here";
		mnt[0] = '\0';
	}
}

static void mount_teardown(void)
{
	if (mnt[0])
		umount2(mnt, MNT_DETACH);
	mnt[0] = '\0';
	remove_tmpdir();
}

#define SKIP_UNLESS_MOUNTED()                                                         \
	do {                                                                          \
		if (mount_skip) {                                                     \
			fprintf(stderr, "SKIP %s: %s\n", __func__, mount_skip);       \
			return;                                                       \
		}                                                                     \
	} while (0)

static const char *mnt_path(const char *name)
{
	static char buf[16][600];
	static int next;
	char *p = buf[next++ % 16];

	snprintf(p, sizeof(buf[0]), "%s/%s", mnt, name);
	return p;
}

START_TEST(read_only_filesystem_is_erofs)
{
	SKIP_UNLESS_MOUNTED();
	const char *path = mnt_path("efid.db");
	struct store_iface a = iface("vm1", "efi0", "efh1", "10.0.0.5", 24, NULL, 0);
	struct store *s = open_ok(path);
	size_t len;
	char *before;

	ck_assert_int_eq(store_iface_insert(s, &a), 0);
	store_close(s);
	before = slurp(path, &len);
	ck_assert_int_eq(mount(NULL, mnt, NULL, MS_REMOUNT | MS_RDONLY, NULL), 0);

	s = (struct store *)1;
	ck_assert_int_eq(store_open(path, &s), -EROFS);
	ck_assert_ptr_null(s);
	ck_assert_ptr_nonnull(strstr(store_open_error(), "read-only"));
	ck_assert_ptr_nonnull(strstr(store_open_error(), "--state-dir"));
	assert_same_bytes(path, before, len);

	/* No database yet, on a read-only filesystem. */
	ck_assert_int_eq(store_open(mnt_path("new.db"), &s), -EROFS);
	ck_assert_ptr_nonnull(strstr(store_open_error(), "read-only"));

	ck_assert_int_eq(mount(NULL, mnt, NULL, MS_REMOUNT, NULL), 0);
	s = open_ok(path);
	ck_assert_int_eq(store_iface_get(s, "vm1", "efi0", &a), 0);
	store_close(s);
	free(before);
}
END_TEST

static void fill_disk(const char *path)
{
	static char block[4096];
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ssize_t w;

	ck_assert_int_ge(fd, 0);
	memset(block, 0xee, sizeof(block));
	while ((w = write(fd, block, sizeof(block))) > 0)
		;
	while ((w = write(fd, block, 1)) > 0)
		;
	ck_assert_int_eq(errno, ENOSPC);
	close(fd);
}

START_TEST(full_disk_is_enospc)
{
	SKIP_UNLESS_MOUNTED();
	const char *path = mnt_path("efid.db");
	struct store_iface a = iface("vm1", "efi0", "efh1", "10.0.0.5", 24, "fd00::5", 64);
	struct store_iface f;
	struct store *s = open_ok(path);
	int r = 0, i;

	ck_assert_int_eq(store_iface_insert(s, &a), 0);
	fill_disk(mnt_path("filler"));

	/* Keep inserting until the WAL must grow onto the full disk. */
	for (i = 0; i < 5000 && r == 0; i++) {
		char name[16], host[16];
		snprintf(name, sizeof(name), "x%d", i);
		snprintf(host, sizeof(host), "xh%d", i);
		f = iface("vm2", name, host, "10.9.0.1", 24, NULL, 0);
		r = store_iface_insert(s, &f);
	}
	ck_assert_int_eq(r, -ENOSPC);
	ck_assert_ptr_nonnull(strstr(store_errmsg(s), "no space left"));
	ck_assert_ptr_nonnull(strstr(store_errmsg(s), "free some space"));
	ck_assert_int_eq(store_iface_get(s, "vm2", f.spec.name, &f), -ENOENT);
	ck_assert_int_eq(store_iface_get(s, "vm1", "efi0", &f), 0);
	store_close(s);

	ck_assert_int_eq(unlink(mnt_path("filler")), 0);
	s = open_ok(path);
	ck_assert_int_eq(store_iface_get(s, "vm1", "efi0", &f), 0);
	ck_assert_uint_eq(f.spec.naddrs, 2);
	assert_addr(&f.spec.addrs[1], "fd00::5", 64);
	store_close(s);
}
END_TEST

static Suite *store_faults_suite(void)
{
	Suite *su = suite_create("store_faults");
	TCase *tc = tcase_create("faults");
	TCase *tm = tcase_create("mounted");

	tcase_add_checked_fixture(tc, make_tmpdir, remove_tmpdir);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, locked_database_is_busy);
	tcase_add_test(tc, corrupt_file_is_eio_and_untouched);
	tcase_add_test(tc, missing_directory);
	suite_add_tcase(su, tc);

	tcase_add_checked_fixture(tm, mount_setup, mount_teardown);
	tcase_set_timeout(tm, 60);
	tcase_add_test(tm, read_only_filesystem_is_erofs);
	tcase_add_test(tm, full_disk_is_enospc);
	suite_add_tcase(su, tm);
	return su;
}

int main(void)
{
	return store_test_run(store_faults_suite());
}
