/* SPDX-License-Identifier: MIT */
/*
 * Intent records (schema 3): an attach or detach is written down and
 * committed before the kernel is touched, so that a crash at any point
 * leaves something reconcile can finish or undo (efid/intents.c).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store_internal.h"

static bool valid(const struct store_intent *in)
{
	return (!strcmp(in->op, "attach") || !strcmp(in->op, "detach")) &&
	       efi_instance_name_valid(in->instance) && efi_ifname_valid(in->name);
}

int store_intent_set(struct store *s, const struct store_intent *in)
{
	sqlite3_stmt *st;
	int r = 0;

	if (!valid(in))
		return store_set_error(s, -EINVAL, "an intent needs attach or detach, an instance "
				       "and an interface name");
	if (!(st = store_stmt(s, STMT_INTENT_SET, &r)))
		return r;
	sqlite3_bind_text(st, 1, in->op, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, in->instance, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, in->name, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, in->host_ifname, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 5, (sqlite3_int64)time(NULL));
	return store_step_done(s, st, "recording what is about to change");
}

int store_intent_clear(struct store *s, const char *instance, const char *name)
{
	sqlite3_stmt *st;
	int r = 0;

	if (!(st = store_stmt(s, STMT_INTENT_CLEAR, &r)))
		return r;
	sqlite3_bind_text(st, 1, instance, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
	return store_step_done(s, st, "forgetting a finished change");
}

static void copy_col(sqlite3_stmt *st, int col, char *dst, size_t len)
{
	const unsigned char *v = sqlite3_column_text(st, col);
	snprintf(dst, len, "%s", v ? (const char *)v : "");
}

static void read_row(sqlite3_stmt *st, struct store_intent *out)
{
	copy_col(st, 0, out->op, sizeof(out->op));
	copy_col(st, 1, out->instance, sizeof(out->instance));
	copy_col(st, 2, out->name, sizeof(out->name));
	copy_col(st, 3, out->host_ifname, sizeof(out->host_ifname));
}

int store_intent_get(struct store *s, const char *instance, const char *name,
		     struct store_intent *out)
{
	sqlite3_stmt *st;
	int r = 0, rc;

	if (!(st = store_stmt(s, STMT_INTENT_GET, &r)))
		return r;
	sqlite3_bind_text(st, 1, instance, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		read_row(st, out);
		r = 0;
	} else if (rc == SQLITE_DONE) {
		r = -ENOENT;
	} else {
		r = store_sqlite_error(s, rc, "reading the changes in flight");
	}
	sqlite3_reset(st);
	return r;
}

int store_intent_all(struct store *s, struct store_intent **out, size_t *n)
{
	struct store_intent *v = NULL;
	size_t cnt = 0;
	sqlite3_stmt *st;
	int r = 0, rc;

	*out = NULL;
	*n = 0;
	if (!(st = store_stmt(s, STMT_INTENT_ALL, &r)))
		return r;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct store_intent *p = realloc(v, (cnt + 1) * sizeof(*v));
		if (!p) {
			r = store_set_error(s, -ENOMEM, "reading the changes in flight: out of memory");
			goto out;
		}
		v = p;
		read_row(st, &v[cnt++]);
	}
	if (rc != SQLITE_DONE)
		r = store_sqlite_error(s, rc, "reading the changes in flight");
out:
	sqlite3_reset(st);
	if (r < 0) {
		free(v);
		return r;
	}
	*out = v;
	*n = cnt;
	return 0;
}
