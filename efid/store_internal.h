/* SPDX-License-Identifier: MIT */
/*
 * What store.c and store_migrations.c share: the store itself, the
 * statement cache, and the one function that turns an SQLite failure into a
 * negative errno plus a message that says what to do.
 */
#ifndef EFID_STORE_INTERNAL_H
#define EFID_STORE_INTERNAL_H

#include <sqlite3.h>

#include "store.h"

#define STORE_ERRMSG_MAX 768
#define STORE_HOST_ID_LEN 36     /* 8-4-4-4-12 */
#define STORE_BUSY_TIMEOUT_MS 2000

/* Statements prepared once, on first use, and kept until store_close. */
enum store_stmt {
	STMT_USER_VERSION,
	STMT_INSTANCE_ENSURE,
	STMT_INSTANCE_ID,
	STMT_INSTANCE_PRUNE,
	STMT_INSTANCE_LIST,
	STMT_IFACE_BY_NAME,
	STMT_IFACE_BY_ID,
	STMT_IFACE_BY_ADDRESS,
	STMT_IFACE_BY_HOST_IFNAME,
	STMT_IFACE_ALL,
	STMT_IFACE_OF_INSTANCE,
	STMT_IFACE_INSERT,
	STMT_IFACE_DELETE,
	STMT_IFACE_SET_STATE,
	STMT_ADDR_INSERT,
	STMT_ADDR_LIST,
	STMT_GID_LIST,
	STMT_GID_DELETE,
	STMT_GID_INSERT,
	STMT_INTENT_SET,
	STMT_INTENT_CLEAR,
	STMT_INTENT_GET,
	STMT_INTENT_ALL,
	STMT__COUNT
};

/* Indexed by enum store_stmt; in store_records.c, next to their users. */
extern const char *const store_stmt_sql[STMT__COUNT];

struct store {
	sqlite3 *db;
	char *path;
	char host_id[STORE_HOST_ID_LEN + 1];
	char errmsg[STORE_ERRMSG_MAX];
	sqlite3_stmt *stmts[STMT__COUNT];
};

/*
 * Records a failure of SQLite call `rc` while doing `what` ("inserting
 * interface vm1/efi0") and returns the negative errno for it:
 * BUSY → -EBUSY, READONLY → -EROFS, FULL → -ENOSPC, CORRUPT/NOTADB/IOERR →
 * -EIO, a UNIQUE constraint → -EEXIST, a foreign key → -ENOENT.  The message
 * names the database and the way out.
 */
int store_sqlite_error(struct store *s, int rc, const char *what);
/* Records a message of the caller's own and returns err. */
int store_set_error(struct store *s, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Records "what: the database is corrupt (detail)" and what to do; -EIO. */
int store_corrupt_error(struct store *s, const char *what, const char *detail);

/* Runs SQL with no result rows (may hold several statements). */
int store_exec(struct store *s, const char *sql, const char *what);
/* The cached statement `id`, reset and unbound, or NULL with *err set. */
sqlite3_stmt *store_stmt(struct store *s, enum store_stmt id, int *err);
/* Steps a statement that returns no row; leaves it reset. */
int store_step_done(struct store *s, sqlite3_stmt *st, const char *what);

/*
 * One change of several rows: its own transaction when the caller has none
 * open, a savepoint inside the caller's otherwise, so a failure undoes
 * exactly this change either way.  store_op_end commits when r == 0, rolls
 * back otherwise, and returns the first error.
 */
struct store_op {
	bool own_txn;
};
int store_op_begin(struct store *s, struct store_op *op, const char *what);
int store_op_end(struct store *s, struct store_op *op, int r);

/* Reads PRAGMA user_version into *version.  Returns 0 or -errno. */
int store_read_user_version(struct store *s, int *version);

/*
 * Applies the migrations from the database's version up to target, each
 * with its user_version bump in one BEGIN IMMEDIATE … COMMIT.  A failure
 * rolls that migration back, leaves the earlier ones in place, and returns
 * -errno with a message naming both versions.
 */
int store_migrate(struct store *s, int target);

/* Writes a random (version 4) UUID, 8-4-4-4-12, into buf[37]. */
int store_make_uuid(char buf[STORE_HOST_ID_LEN + 1]);

#endif
