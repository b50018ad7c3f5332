/* SPDX-License-Identifier: MIT */
/*
 * The connection manager's tables (efid/store_cm.c, schema 4): listeners
 * and connections written, replaced, deleted and loaded back across a
 * reopen, 64-bit tids with the top bit set kept exact, and rows a person
 * edited into something efid cannot use skipped at load without hiding
 * the good ones.
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "efid/store_cm.h"
#include "tests/unit/store_testutil.h"

struct seen {
	struct store_cm_listener l[8];
	struct store_cm_conn c[8];
	int nl, nc;
};

static void on_listener(const struct store_cm_listener *l, void *ud)
{
	struct seen *s = ud;
	ck_assert_int_lt(s->nl, 8);
	s->l[s->nl++] = *l;
}

static void on_conn(const struct store_cm_conn *c, void *ud)
{
	struct seen *s = ud;
	ck_assert_int_lt(s->nc, 8);
	s->c[s->nc++] = *c;
}

static struct store_cm_conn conn(uint64_t tid, bool active, uint64_t handle)
{
	struct store_cm_conn c = { .tid = tid, .active = active, .handle = handle,
				   .local_qpn = 0x1001, .peer_qpn = 0x2002, .pid = 4242 };
	snprintf(c.instance, sizeof(c.instance), "vm1");
	snprintf(c.ifname, sizeof(c.ifname), "efi0");
	for (int i = 0; i < 16; i++)
		c.peer[i] = (uint8_t)(0xa0 + i);
	c.peer_gid = gid_of("::ffff:10.0.0.6");
	return c;
}

START_TEST(round_trip_across_reopen)
{
	const char *path = tmp_path("efid.db");
	struct store *s = open_ok(path);
	struct store_cm_listener l = { .service = 7471, .backlog = 64, .pid = 4242 };
	snprintf(l.instance, sizeof(l.instance), "vm1");
	snprintf(l.ifname, sizeof(l.ifname), "efi0");
	/* one efid serving both ends: an active and a passive record, one tid */
	struct store_cm_conn a = conn(0xfedcba9876543210ull, true, 0);
	struct store_cm_conn p = conn(0xfedcba9876543210ull, false, 0x8000000000000001ull);

	struct store_cm_batch b;
	ck_assert_int_eq(store_begin(s), 0);
	store_cm_batch_begin(&b, s);
	ck_assert_int_eq(store_cm_listener_put(&b, &l), 0);
	ck_assert_int_eq(store_cm_conn_put(&b, &a), 0);
	ck_assert_int_eq(store_cm_conn_put(&b, &p), 0);
	l.backlog = 128; /* replaced, not added */
	ck_assert_int_eq(store_cm_listener_put(&b, &l), 0);
	store_cm_batch_end(&b);
	ck_assert_int_eq(store_commit(s), 0);
	store_close(s);

	s = open_ok(path);
	struct seen seen = { 0 };
	ck_assert_int_eq(store_cm_load(s, on_listener, on_conn, &seen), 0);
	ck_assert_int_eq(seen.nl, 1);
	ck_assert_str_eq(seen.l[0].instance, "vm1");
	ck_assert_str_eq(seen.l[0].ifname, "efi0");
	ck_assert_uint_eq(seen.l[0].service, 7471);
	ck_assert_uint_eq(seen.l[0].backlog, 128);
	ck_assert_int_eq(seen.l[0].pid, 4242);
	ck_assert_int_eq(seen.nc, 2);
	for (int i = 0; i < 2; i++) {
		const struct store_cm_conn *c = &seen.c[i];
		const struct store_cm_conn *want = c->active ? &a : &p;
		ck_assert(c->tid == want->tid);
		ck_assert(c->handle == want->handle);
		ck_assert_str_eq(c->instance, "vm1");
		ck_assert_str_eq(c->ifname, "efi0");
		ck_assert_mem_eq(c->peer, want->peer, 16);
		ck_assert_mem_eq(c->peer_gid.raw, want->peer_gid.raw, 16);
		ck_assert_uint_eq(c->local_qpn, 0x1001);
		ck_assert_uint_eq(c->peer_qpn, 0x2002);
		ck_assert_int_eq(c->pid, 4242);
	}
	ck_assert(seen.c[0].active != seen.c[1].active);

	/* deleting one side leaves the other (outside a transaction: each
	 * statement its own) */
	store_cm_batch_begin(&b, s);
	ck_assert_int_eq(store_cm_conn_del(&b, "vm1", a.tid, true), 0);
	ck_assert_int_eq(store_cm_listener_del(&b, "vm1", "efi0", 7471), 0);
	memset(&seen, 0, sizeof(seen));
	ck_assert_int_eq(store_cm_load(s, on_listener, on_conn, &seen), 0);
	ck_assert_int_eq(seen.nl, 0);
	ck_assert_int_eq(seen.nc, 1);
	ck_assert(!seen.c[0].active);
	/* deleting what is not there is no error */
	ck_assert_int_eq(store_cm_conn_del(&b, "vm2", 1, true), 0);
	store_cm_batch_end(&b);
	store_close(s);
}
END_TEST

START_TEST(unusable_rows_are_skipped)
{
	const char *path = tmp_path("efid.db");
	struct store *s = open_ok(path);
	struct store_cm_conn good = conn(77, true, 0);
	struct store_cm_batch b;
	store_cm_batch_begin(&b, s);
	ck_assert_int_eq(store_cm_conn_put(&b, &good), 0);
	store_cm_batch_end(&b);
	store_close(s);
	/* what the schema's checks let through but efid cannot use */
	raw_exec(path, "INSERT INTO cm_connections VALUES ('', 1, 1, 0, 'efi0', "
		       "zeroblob(16), zeroblob(16), 1, 1, 1)");
	raw_exec(path, "INSERT INTO cm_connections VALUES ('vm1', 2, 1, 0, "
		       "'a-name-far-too-long-for-an-interface', zeroblob(16), zeroblob(16), 1, 1, 1)");
	raw_exec(path, "INSERT INTO cm_connections VALUES ('vm1', 3, 1, 0, 'efi0', "
		       "zeroblob(16), zeroblob(16), 0, 1, 1)");
	raw_exec(path, "INSERT INTO cm_connections VALUES ('vm1', 4, 1, 0, 'efi0', "
		       "zeroblob(16), zeroblob(16), 1, 16777216, 1)");
	raw_exec(path, "INSERT INTO cm_connections VALUES ('vm1', 0, 1, 0, 'efi0', "
		       "zeroblob(16), zeroblob(16), 1, 1, 1)");
	raw_exec(path, "INSERT INTO cm_listeners VALUES ('', 'efi0', 1, 1, 1)");
	raw_exec(path, "INSERT INTO cm_listeners VALUES ('vm1', 'efi0', 9, 1, 1)");
	s = open_ok(path);
	struct seen seen = { 0 };
	ck_assert_int_eq(store_cm_load(s, on_listener, on_conn, &seen), 0);
	ck_assert_int_eq(seen.nc, 1);
	ck_assert(seen.c[0].tid == 77);
	ck_assert_int_eq(seen.nl, 1);
	ck_assert_uint_eq(seen.l[0].service, 9);
	store_close(s);
	/* skipped, not deleted: the database is the user's */
	ck_assert_int_eq(raw_int(path, "SELECT count(*) FROM cm_connections"), 6);
}
END_TEST

static Suite *store_cm_suite(void)
{
	Suite *su = suite_create("store_cm");
	TCase *tc = tcase_create("store_cm");

	tcase_add_checked_fixture(tc, make_tmpdir, remove_tmpdir);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, round_trip_across_reopen);
	tcase_add_test(tc, unusable_rows_are_skipped);
	suite_add_tcase(su, tc);
	return su;
}

int main(void)
{
	return store_test_run(store_cm_suite());
}
