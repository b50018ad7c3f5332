/* SPDX-License-Identifier: MIT */
/*
 * The store: opening and migrating (from every fixture under
 * tests/fixtures/), refusing a schema it does not know without touching
 * it, a migration that fails rolling back, records, transactions and GID
 * index stability.  Failures of the host (locks, read-only, full disk,
 * corruption) are in test_store_faults.c.
 */
#include "config.h"

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <time.h>

#include <sqlite3.h>

#include "tests/unit/store_testutil.h"

/* ---- opening and migrating --------------------------------------------- */

START_TEST(fresh_open_creates_current_schema)
{
	const char *path = tmp_path("efid.db");
	struct store *s = open_ok(path);
	const char *id = store_host_id(s);

	ck_assert_int_eq(store_schema_version(s), STORE_SCHEMA_VERSION);
	ck_assert_str_eq(store_errmsg(s), "");
	ck_assert_uint_eq(strlen(id), 36);
	for (int i = 0; i < 36; i++)
		ck_assert_msg((i == 8 || i == 13 || i == 18 || i == 23) ? id[i] == '-' :
			      strchr("0123456789abcdef", id[i]) != NULL, "bad host id %s", id);
	ck_assert_int_eq(id[14], '4');
	store_close(s);

	ck_assert_int_eq(raw_int(path, "PRAGMA user_version"), STORE_SCHEMA_VERSION);
	ck_assert_int_eq(raw_int(path, "SELECT count(*) FROM pragma_journal_mode "
				 "WHERE journal_mode = 'wal'"), 1);
	ck_assert_int_eq(raw_int(path, "SELECT count(*) FROM sqlite_master WHERE name IN "
				 "('meta','instances','interfaces','addresses','gids','intents')"), 6);
}
END_TEST

START_TEST(reopen_keeps_host_id)
{
	const char *path = tmp_path("efid.db");
	struct store *s = open_ok(path);
	char first[64];

	snprintf(first, sizeof(first), "%s", store_host_id(s));
	store_close(s);
	s = open_ok(path);
	ck_assert_str_eq(store_host_id(s), first);
	ck_assert_int_eq(store_schema_version(s), STORE_SCHEMA_VERSION);
	store_close(s);

	/* Another database is another host. */
	s = open_ok(tmp_path("other.db"));
	ck_assert_str_ne(store_host_id(s), first);
	store_close(s);
}
END_TEST

/* An empty file is someone's truncated database, not a new one (issue 22):
 * refused and left as it is, unless efid was creating it (the marker). */
START_TEST(empty_file_refused_unless_efid_made_it)
{
	const char *path = tmp_path("efid.db");
	char marker[4096];
	struct store *s = NULL;
	struct stat st;

	spit(path, "", 0);
	ck_assert_int_eq(store_open(path, &s), -EIO);
	ck_assert_ptr_null(s);
	ck_assert_ptr_nonnull(strstr(store_open_error(), "empty"));
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_size, 0);

	snprintf(marker, sizeof(marker), "%s.creating", path);
	spit(marker, "", 0);
	s = open_ok(path);
	ck_assert_int_eq(store_schema_version(s), STORE_SCHEMA_VERSION);
	ck_assert_uint_eq(strlen(store_host_id(s)), 36);
	store_close(s);
	ck_assert_int_eq(access(marker, F_OK), -1);

	/* A fresh file made by efid leaves no marker behind either. */
	s = open_ok(tmp_path("fresh.db"));
	store_close(s);
	snprintf(marker, sizeof(marker), "%s.creating", tmp_path("fresh.db"));
	ck_assert_int_eq(access(marker, F_OK), -1);
}
END_TEST

START_TEST(open_at_version_then_upgrade)
{
	const char *path = tmp_path("efid.db");
	struct store *s = NULL;
	char id[64];

	ck_assert_int_eq(store_open_at_version(tmp_path("v0.db"), 0, &s), 0);
	ck_assert_int_eq(store_schema_version(s), 0);
	ck_assert_str_eq(store_host_id(s), "");
	store_close(s);

	ck_assert_int_eq(store_open_at_version(path, 1, &s), 0);
	ck_assert_int_eq(store_schema_version(s), 1);
	snprintf(id, sizeof(id), "%s", store_host_id(s));
	store_close(s);
	ck_assert_int_eq(raw_int(path, "SELECT count(*) FROM sqlite_master WHERE name = 'gids'"), 0);

	s = open_ok(path);
	ck_assert_int_eq(store_schema_version(s), STORE_SCHEMA_VERSION);
	ck_assert_str_eq(store_host_id(s), id);
	store_close(s);

	/* Asking for an older version than the file has is refused. */
	ck_assert_int_eq(store_open_at_version(path, 1, &s), -EPROTO);
	ck_assert_ptr_null(s);
	ck_assert_int_eq(store_open_at_version(path, STORE_SCHEMA_VERSION + 1, &s), -EINVAL);
	ck_assert_int_eq(store_open("", &s), -EINVAL);
}
END_TEST

struct collected {
	char names[8][80];
	struct store_iface ifaces[8];
	int n;
	int stop_at;
};

static int collect_instance(const char *instance, void *ud)
{
	struct collected *c = ud;

	ck_assert_int_lt(c->n, 8);
	snprintf(c->names[c->n++], sizeof(c->names[0]), "%s", instance);
	return 0;
}

static int collect_iface(const struct store_iface *f, void *ud)
{
	struct collected *c = ud;

	ck_assert_int_lt(c->n, 8);
	c->ifaces[c->n++] = *f;
	return c->stop_at && c->n == c->stop_at ? 42 : 0;
}

START_TEST(migrates_v1_fixture)
{
	const char *path = tmp_path("efid.db");
	struct collected c = { .n = 0 };
	struct store_iface f;
	struct store *s;
	char host_id[64];
	sqlite3 *db;
	sqlite3_stmt *st;

	copy_file(fixture("schema-v1.db"), path);
	ck_assert_int_eq(raw_int(path, "PRAGMA user_version"), 1);
	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key='host_id'", -1,
					    &st, NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
	snprintf(host_id, sizeof(host_id), "%s", sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	sqlite3_close(db);

	s = open_ok(path);
	ck_assert_int_eq(store_schema_version(s), STORE_SCHEMA_VERSION);
	ck_assert_str_eq(store_host_id(s), host_id);

	ck_assert_int_eq(store_instance_foreach(s, collect_instance, &c), 0);
	ck_assert_int_eq(c.n, 2);
	ck_assert_str_eq(c.names[0], "vm1");
	ck_assert_str_eq(c.names[1], "vm2");

	c.n = 0;
	ck_assert_int_eq(store_iface_foreach(s, NULL, collect_iface, &c), 0);
	ck_assert_int_eq(c.n, 3);
	for (int i = 0; i < 3; i++) {
		/* The columns version 2 added, at their defaults. */
		ck_assert_str_eq(c.ifaces[i].state, "attached");
		ck_assert_str_eq(c.ifaces[i].link, "missing");
		ck_assert_uint_eq(c.ifaces[i].ifindex, 0);
	}
	f = c.ifaces[0];
	ck_assert_str_eq(f.spec.instance, "vm1");
	ck_assert_str_eq(f.spec.name, "efi0");
	ck_assert_str_eq(f.spec.kind, "veth");
	ck_assert_str_eq(f.spec.uplink, "br0");
	ck_assert_uint_eq(f.spec.mtu, 1500);
	ck_assert_str_eq(f.host_ifname, "efh-vm1-0");
	ck_assert_int_eq(f.created_at, 1764000001);
	ck_assert_uint_eq(f.spec.naddrs, 2);
	assert_addr(&f.spec.addrs[0], "10.0.0.5", 24);
	assert_addr(&f.spec.addrs[1], "fd00::5", 64);
	f = c.ifaces[1];
	ck_assert_str_eq(f.spec.name, "efi1");
	ck_assert_str_eq(f.spec.kind, "macvlan");
	ck_assert_str_eq(f.spec.uplink, "eth0");
	ck_assert_uint_eq(f.spec.mtu, 9000);
	ck_assert_str_eq(f.host_ifname, "");
	ck_assert_uint_eq(f.spec.naddrs, 1);
	assert_addr(&f.spec.addrs[0], "10.1.0.5", 16);
	f = c.ifaces[2];
	ck_assert_str_eq(f.spec.instance, "vm2");
	ck_assert_str_eq(f.spec.name, "efi0");
	ck_assert_uint_eq(f.spec.mtu, 0);
	ck_assert_str_eq(f.host_ifname, "efh-vm2-0");
	ck_assert_uint_eq(f.spec.naddrs, 3);
	assert_addr(&f.spec.addrs[0], "fd00:0:0:1::6", 64);
	assert_addr(&f.spec.addrs[1], "10.0.0.6", 24);
	assert_addr(&f.spec.addrs[2], "10.2.0.6", 32);

	/* The migrated rows work with version 2 features. */
	union efi_gid g = gid_of("::ffff:10.0.0.6");
	struct store_gid got[4];
	size_t n;
	ck_assert_int_eq(store_gids_update(s, f.id, &g, 1), 0);
	ck_assert_int_eq(store_gids_get(s, f.id, got, 4, &n), 0);
	ck_assert_uint_eq(n, 1);
	ck_assert_int_eq(store_iface_set_state(s, f.id, "attached", "up", 7), 0);
	ck_assert_int_eq(store_iface_find_host_ifname(s, "efh-vm2-0", &f), 0);
	ck_assert_str_eq(f.link, "up");
	ck_assert_uint_eq(f.ifindex, 7);
	ck_assert_int_eq(store_iface_delete(s, f.id), 0);
	store_close(s);
	ck_assert_int_eq(raw_int(path, "SELECT count(*) FROM addresses"), 3);
	ck_assert_int_eq(raw_int(path, "SELECT count(*) FROM gids"), 0);
}
END_TEST

static void check_newer_refused(const char *path)
{
	struct store *s = (struct store *)1;
	size_t len;
	char *before = slurp(path, &len);

	ck_assert_int_eq(store_open(path, &s), -EPROTO);
	ck_assert_ptr_null(s);
	ck_assert_ptr_nonnull(strstr(store_open_error(), "newer"));
	ck_assert_ptr_nonnull(strstr(store_open_error(), path));
	assert_same_bytes(path, before, len);
	free(before);
}

START_TEST(newer_schema_refused_untouched)
{
	const char *wal = tmp_path("wal.db"), *plain = tmp_path("plain.db");

	/* One written by a (future) efid, in WAL mode … */
	store_close(open_ok(wal));
	raw_exec(wal, "PRAGMA user_version = 99");
	check_newer_refused(wal);
	ck_assert_int_eq(raw_int(wal, "PRAGMA user_version"), 99);

	/* … and one in rollback mode, which switching to WAL would rewrite. */
	raw_exec(plain, "CREATE TABLE future(x); INSERT INTO future VALUES (1); "
		 "PRAGMA user_version = 99");
	check_newer_refused(plain);
	ck_assert_int_eq(raw_int(plain, "SELECT count(*) FROM pragma_journal_mode "
				 "WHERE journal_mode = 'delete'"), 1);
}
END_TEST

START_TEST(failed_migration_rolls_back)
{
	const char *path = tmp_path("efid.db");
	struct store *s = NULL;
	const char *msg;
	int r;

	/* A table in the way of version 2's CREATE TABLE gids: the migration
	 * fails after its ALTER TABLEs have run. */
	copy_file(fixture("schema-v1.db"), path);
	raw_exec(path, "CREATE TABLE gids(unrelated TEXT); INSERT INTO gids VALUES ('mine')");

	r = store_open(path, &s);
	ck_assert_int_lt(r, 0);
	ck_assert_ptr_null(s);
	msg = store_open_error();
	ck_assert_ptr_nonnull(strstr(msg, "from schema version 1 to 2"));
	ck_assert_ptr_nonnull(strstr(msg, "rolled back"));
	ck_assert_ptr_nonnull(strstr(msg, "gids"));

	ck_assert_int_eq(raw_int(path, "PRAGMA user_version"), 1);
	ck_assert_int_eq(raw_int(path, "SELECT count(*) FROM pragma_table_info('interfaces') "
				 "WHERE name IN ('state','link','ifindex')"), 0);
	ck_assert_int_eq(raw_int(path, "SELECT count(*) FROM interfaces"), 3);
	ck_assert_int_eq(raw_int(path, "SELECT count(*) FROM addresses"), 6);
	ck_assert_int_eq(raw_int(path, "SELECT count(*) FROM gids WHERE unrelated = 'mine'"), 1);

	/* Once the obstacle is gone, the same file upgrades. */
	raw_exec(path, "DROP TABLE gids");
	s = open_ok(path);
	ck_assert_int_eq(store_schema_version(s), STORE_SCHEMA_VERSION);
	store_close(s);
}
END_TEST

/* ---- records ----------------------------------------------------------- */

START_TEST(iface_records)
{
	struct store *s = open_ok(tmp_path("efid.db"));
	struct store_iface a = iface("vm1", "efi0", "efh1", "10.0.0.5", 24, "fd00::5", 64);
	struct store_iface b = iface("vm1", "efi1", "efh2", "10.0.1.5", 24, NULL, 0);
	struct store_iface c = iface("vm2", "efi0", "efh3", "10.0.2.5", 24, NULL, 0);
	struct store_iface f, dup;
	struct collected col = { .n = 0 };
	struct efi_addr ip;

	ck_assert_int_eq(store_iface_insert(s, &a), 0);
	ck_assert_int_gt(a.id, 0);
	ck_assert_int_eq(store_iface_insert(s, &b), 0);
	ck_assert_int_eq(store_iface_insert(s, &c), 0);

	ck_assert_int_eq(store_iface_get(s, "vm1", "efi0", &f), 0);
	ck_assert_int_eq(f.id, a.id);
	ck_assert_str_eq(f.spec.kind, "veth");
	ck_assert_str_eq(f.spec.uplink, "br0");
	ck_assert_uint_eq(f.spec.mtu, 1500);
	ck_assert_str_eq(f.host_ifname, "efh1");
	ck_assert_str_eq(f.state, "attached");
	ck_assert_str_eq(f.link, "missing");
	ck_assert_int_ge(f.created_at, time(NULL) - 60);
	ck_assert_uint_eq(f.spec.naddrs, 2);
	assert_addr(&f.spec.addrs[0], "10.0.0.5", 24);
	assert_addr(&f.spec.addrs[1], "fd00::5", 64);

	/* Conflicts. */
	dup = iface("vm1", "efi0", "efh9", NULL, 0, NULL, 0);
	ck_assert_int_eq(store_iface_insert(s, &dup), -EEXIST);
	ck_assert_ptr_nonnull(strstr(store_errmsg(s), "already exists"));
	dup = iface("vm3", "efi0", "efh1", NULL, 0, NULL, 0);
	ck_assert_int_eq(store_iface_insert(s, &dup), -EEXIST);
	ck_assert_ptr_nonnull(strstr(store_errmsg(s), "efh1"));
	ck_assert_int_eq(store_iface_get(s, "vm3", "efi0", &f), -ENOENT);
	ck_assert_ptr_nonnull(strstr(store_errmsg(s), "vm3"));
	dup = iface("", "efi0", "", NULL, 0, NULL, 0);
	ck_assert_int_eq(store_iface_insert(s, &dup), -EINVAL);

	/* Lookups by address (prefix ignored) and host device. */
	ip = addr("fd00::5", 128);
	ck_assert_int_eq(store_iface_find_address(s, &ip, &f), 0);
	ck_assert_int_eq(f.id, a.id);
	ip = addr("10.0.2.5", 8);
	ck_assert_int_eq(store_iface_find_address(s, &ip, &f), 0);
	ck_assert_str_eq(f.spec.instance, "vm2");
	ip = addr("10.0.2.6", 24);
	ck_assert_int_eq(store_iface_find_address(s, &ip, &f), -ENOENT);
	ck_assert_ptr_nonnull(strstr(store_errmsg(s), "10.0.2.6"));
	ip = addr("::ffff:10.0.2.5", 128);   /* same bytes, other family */
	ck_assert_int_eq(store_iface_find_address(s, &ip, &f), -ENOENT);
	ck_assert_int_eq(store_iface_find_host_ifname(s, "efh2", &f), 0);
	ck_assert_int_eq(f.id, b.id);
	ck_assert_int_eq(store_iface_find_host_ifname(s, "efh7", &f), -ENOENT);

	/* foreach: ordered, filtered, stoppable. */
	ck_assert_int_eq(store_iface_foreach(s, "vm1", collect_iface, &col), 0);
	ck_assert_int_eq(col.n, 2);
	ck_assert_str_eq(col.ifaces[0].spec.name, "efi0");
	ck_assert_str_eq(col.ifaces[1].spec.name, "efi1");
	col.n = 0;
	col.stop_at = 2;
	ck_assert_int_eq(store_iface_foreach(s, NULL, collect_iface, &col), 42);
	ck_assert_int_eq(col.n, 2);
	col.n = 0;
	col.stop_at = 0;
	ck_assert_int_eq(store_iface_foreach(s, "nope", collect_iface, &col), 0);
	ck_assert_int_eq(col.n, 0);

	/* State. */
	ck_assert_int_eq(store_iface_set_state(s, b.id, "missing", "missing", 0), 0);
	ck_assert_int_eq(store_iface_set_state(s, b.id, "attached", "up", 12), 0);
	ck_assert_int_eq(store_iface_get(s, "vm1", "efi1", &f), 0);
	ck_assert_str_eq(f.link, "up");
	ck_assert_uint_eq(f.ifindex, 12);
	ck_assert_int_eq(store_iface_set_state(s, 9999, "attached", "up", 1), -ENOENT);

	/* Delete and prune. */
	ck_assert_int_eq(store_iface_delete(s, c.id), 0);
	ck_assert_int_eq(store_iface_delete(s, c.id), -ENOENT);
	ck_assert_int_eq(store_iface_get(s, "vm2", "efi0", &f), -ENOENT);
	ck_assert_int_eq(store_instance_prune(s, "vm1"), 0);    /* still has interfaces */
	ck_assert_int_eq(store_instance_prune(s, "vm2"), 0);
	col.n = 0;
	ck_assert_int_eq(store_instance_foreach(s, collect_instance, &col), 0);
	/* vm2 pruned; vm3's row went with the failed insert that made it. */
	ck_assert_int_eq(col.n, 1);
	ck_assert_str_eq(col.names[0], "vm1");
	store_close(s);
}
END_TEST

static int delete_each(const struct store_iface *f, void *ud)
{
	return store_iface_delete(ud, f->id);
}

START_TEST(foreach_callback_may_change_the_store)
{
	struct store *s = open_ok(tmp_path("efid.db"));
	struct store_iface a = iface("vm1", "efi0", "efh1", "10.0.0.5", 24, NULL, 0);
	struct store_iface b = iface("vm1", "efi1", "efh2", "10.0.0.6", 24, NULL, 0);
	struct collected col = { .n = 0 };

	ck_assert_int_eq(store_iface_insert(s, &a), 0);
	ck_assert_int_eq(store_iface_insert(s, &b), 0);
	ck_assert_int_eq(store_iface_foreach(s, "vm1", delete_each, s), 0);
	ck_assert_int_eq(store_iface_foreach(s, NULL, collect_iface, &col), 0);
	ck_assert_int_eq(col.n, 0);
	store_close(s);
}
END_TEST

/* ---- transactions ------------------------------------------------------ */

START_TEST(transactions)
{
	const char *path = tmp_path("efid.db");
	struct store *s = open_ok(path);
	struct store_iface a = iface("vm1", "efi0", "efh1", "10.0.0.5", 24, NULL, 0);
	struct store_iface b = iface("vm1", "efi1", "efh2", "10.0.0.6", 24, NULL, 0);
	struct store_iface clash = iface("vm1", "efi0", "efh3", NULL, 0, NULL, 0);
	struct collected col = { .n = 0 };
	struct store_iface f;

	/* begin, insert, rollback: nothing there, not even the instance. */
	ck_assert_int_eq(store_begin(s), 0);
	ck_assert_int_eq(store_begin(s), -EINVAL);
	ck_assert_int_eq(store_iface_insert(s, &a), 0);
	ck_assert_int_eq(store_iface_get(s, "vm1", "efi0", &f), 0);
	store_rollback(s);
	ck_assert_int_eq(store_iface_get(s, "vm1", "efi0", &f), -ENOENT);
	ck_assert_int_eq(store_instance_foreach(s, collect_instance, &col), 0);
	ck_assert_int_eq(col.n, 0);
	store_rollback(s);   /* harmless without a transaction */
	ck_assert_int_eq(store_commit(s), -EINVAL);

	/* A failed insert inside a transaction undoes only itself. */
	ck_assert_int_eq(store_begin(s), 0);
	ck_assert_int_eq(store_iface_insert(s, &a), 0);
	ck_assert_int_eq(store_iface_insert(s, &clash), -EEXIST);
	ck_assert_int_eq(store_iface_insert(s, &b), 0);
	ck_assert_int_eq(store_commit(s), 0);
	ck_assert_int_eq(raw_int(path, "SELECT count(*) FROM interfaces"), 2);

	/* An insert that fails halfway (its second address is bad) leaves
	 * nothing behind. */
	struct store_iface bad = iface("vm2", "efi0", "efh4", "10.0.0.9", 24, NULL, 0);
	bad.spec.addrs[bad.spec.naddrs].family = 12345;
	bad.spec.naddrs++;
	ck_assert_int_eq(store_iface_insert(s, &bad), -EINVAL);
	ck_assert_int_eq(store_iface_get(s, "vm2", "efi0", &f), -ENOENT);
	ck_assert_int_eq(raw_int(path, "SELECT count(*) FROM addresses"), 2);
	ck_assert_int_eq(raw_int(path, "SELECT count(*) FROM instances WHERE name = 'vm2'"), 0);

	/* Deleting inside a transaction that is rolled back keeps the row,
	 * its addresses and GIDs. */
	union efi_gid g = gid_of("::ffff:10.0.0.5");
	ck_assert_int_eq(store_gids_update(s, a.id, &g, 1), 0);
	ck_assert_int_eq(store_begin(s), 0);
	ck_assert_int_eq(store_iface_delete(s, a.id), 0);
	store_rollback(s);
	ck_assert_int_eq(store_iface_get(s, "vm1", "efi0", &f), 0);
	ck_assert_uint_eq(f.spec.naddrs, 1);
	ck_assert_int_eq(raw_int(path, "SELECT count(*) FROM gids"), 1);
	store_close(s);
}
END_TEST

/* ---- GIDs -------------------------------------------------------------- */

static void assert_gids(struct store *s, int64_t id, const char *const *expect, size_t n)
{
	struct store_gid got[STORE_MAX_GIDS];
	size_t count;

	ck_assert_int_eq(store_gids_get(s, id, got, STORE_MAX_GIDS, &count), 0);
	ck_assert_uint_eq(count, n);
	for (size_t i = 0; i < n; i++) {
		union efi_gid g = gid_of(expect[i]);
		ck_assert_uint_eq(got[i].index, i);
		ck_assert_msg(memcmp(got[i].gid.raw, g.raw, 16) == 0, "index %zu is not %s", i,
			      expect[i]);
	}
}

START_TEST(gid_indexes_are_stable)
{
	struct store *s = open_ok(tmp_path("efid.db"));
	struct store_iface f = iface("vm1", "efi0", "efh1", NULL, 0, NULL, 0);
	union efi_gid A = gid_of("::ffff:10.0.0.1"), B = gid_of("fd00::b"),
		      C = gid_of("::ffff:10.0.0.3"), D = gid_of("fd00::d"), E = gid_of("fd00::e");
	union efi_gid many[STORE_MAX_GIDS + 1];
	struct store_gid got[4];
	size_t n;

	ck_assert_int_eq(store_iface_insert(s, &f), 0);
	ck_assert_int_eq(store_gids_update(s, f.id, (union efi_gid[]){ A, B, C }, 3), 0);
	assert_gids(s, f.id, (const char *[]){ "::ffff:10.0.0.1", "fd00::b", "::ffff:10.0.0.3" },
		    3);
	/* B leaves, D comes: D takes B's index 1, A and C stay. */
	ck_assert_int_eq(store_gids_update(s, f.id, (union efi_gid[]){ A, C, D }, 3), 0);
	assert_gids(s, f.id, (const char *[]){ "::ffff:10.0.0.1", "fd00::d", "::ffff:10.0.0.3" },
		    3);
	/* Order of the input does not matter; duplicates count once. */
	ck_assert_int_eq(store_gids_update(s, f.id, (union efi_gid[]){ D, C, A, C }, 4), 0);
	assert_gids(s, f.id, (const char *[]){ "::ffff:10.0.0.1", "fd00::d", "::ffff:10.0.0.3" },
		    3);
	/* A leaves: index 0 is free, C keeps 2; E then takes 0. */
	ck_assert_int_eq(store_gids_update(s, f.id, (union efi_gid[]){ C, D }, 2), 0);
	ck_assert_int_eq(store_gids_get(s, f.id, got, 4, &n), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert_uint_eq(got[0].index, 1);
	ck_assert_uint_eq(got[1].index, 2);
	ck_assert_int_eq(store_gids_update(s, f.id, (union efi_gid[]){ C, D, E }, 3), 0);
	assert_gids(s, f.id, (const char *[]){ "fd00::e", "fd00::d", "::ffff:10.0.0.3" }, 3);
	/* max limits what is read. */
	ck_assert_int_eq(store_gids_get(s, f.id, got, 2, &n), 0);
	ck_assert_uint_eq(n, 2);

	/* Limits and unknown interfaces. */
	for (int i = 0; i <= STORE_MAX_GIDS; i++) {
		memset(&many[i], 0, sizeof(many[i]));
		many[i].raw[0] = 0xfd;
		many[i].raw[15] = (uint8_t)i;
	}
	ck_assert_int_eq(store_gids_update(s, f.id, many, STORE_MAX_GIDS + 1), -E2BIG);
	ck_assert_int_eq(store_gids_update(s, f.id, many, STORE_MAX_GIDS), 0);
	ck_assert_int_eq(store_gids_update(s, f.id + 100, &A, 1), -ENOENT);

	ck_assert_int_eq(store_gids_update(s, f.id, NULL, 0), 0);
	ck_assert_int_eq(store_gids_get(s, f.id, got, 4, &n), 0);
	ck_assert_uint_eq(n, 0);

	/* GIDs go with their interface. */
	ck_assert_int_eq(store_gids_update(s, f.id, &A, 1), 0);
	ck_assert_int_eq(store_iface_delete(s, f.id), 0);
	ck_assert_int_eq(store_gids_get(s, f.id, got, 4, &n), 0);
	ck_assert_uint_eq(n, 0);
	store_close(s);
}
END_TEST

static Suite *store_suite(void)
{
	Suite *su = suite_create("store");
	TCase *tc = tcase_create("store");

	tcase_add_checked_fixture(tc, make_tmpdir, remove_tmpdir);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, fresh_open_creates_current_schema);
	tcase_add_test(tc, reopen_keeps_host_id);
	tcase_add_test(tc, empty_file_refused_unless_efid_made_it);
	tcase_add_test(tc, open_at_version_then_upgrade);
	tcase_add_test(tc, migrates_v1_fixture);
	tcase_add_test(tc, newer_schema_refused_untouched);
	tcase_add_test(tc, failed_migration_rolls_back);
	tcase_add_test(tc, iface_records);
	tcase_add_test(tc, foreach_callback_may_change_the_store);
	tcase_add_test(tc, transactions);
	tcase_add_test(tc, gid_indexes_are_stable);
	suite_add_tcase(su, tc);
	return su;
}

int main(void)
{
	return store_test_run(store_suite());
}
