/* SPDX-License-Identifier: MIT */
/*
 * efid's state in SQLite, the database side: opening (integrity, WAL,
 * migration), errors that say what to do, the statement cache and
 * transactions.  The rows are in store_records.c, the schema in
 * store_migrations.c.
 *
 * The database is the user's: nothing here ever deletes, truncates or
 * "repairs" it.  A database that cannot be used is reported and left as it
 * was found.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "store_internal.h"

/* Set when store_open fails, as there is no store to hold the message. */
static __thread char open_error[STORE_ERRMSG_MAX];

/* ---- errors ------------------------------------------------------------ */

int store_set_error(struct store *s, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(s->errmsg, sizeof(s->errmsg), fmt, ap);
	va_end(ap);
	return err;
}

int store_corrupt_error(struct store *s, const char *what, const char *detail)
{
	return store_set_error(s, -EIO,
			       "%s: database %s is corrupt or not an efid database (%s). efid leaves "
			       "the file untouched and cannot use it: stop efid, move the file (and "
			       "any -wal/-shm files next to it) aside and restore it from a backup, "
			       "or start efid with an empty --state-dir",
			       what, s->path, detail);
}

/*
 * Why a database cannot be opened.  SQLite reports the errno of its last
 * attempt, a read-only open after the read-write one failed (ENOENT for a
 * file not there yet), so the directory is asked instead.
 */
static int cantopen_cause(const char *path, int sys)
{
	char *dir = strdup(path), *slash;
	struct statvfs vfs;
	struct stat st;
	int cause = sys;

	if (!dir)
		return sys;
	slash = strrchr(dir, '/');
	if (!slash)
		strcpy(dir, ".");   /* fits: path is not empty */
	else
		slash[slash == dir ? 1 : 0] = '\0';
	if (stat(dir, &st) < 0)
		cause = ENOENT;
	else if (statvfs(dir, &vfs) == 0 && (vfs.f_flag & ST_RDONLY))
		cause = EROFS;
	else if (access(dir, W_OK) < 0)
		cause = errno;
	free(dir);
	return cause;
}

int store_sqlite_error(struct store *s, int rc, const char *what)
{
	const char *detail = s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc);
	int sys = s->db ? sqlite3_system_errno(s->db) : 0;

	if ((rc & 0xff) == SQLITE_CANTOPEN)
		sys = cantopen_cause(s->path, sys);

	switch (rc & 0xff) {
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		return store_set_error(s, -EBUSY,
				       "%s: database %s is locked by another process (is another efid "
				       "running with the same --state-dir?); stop it, or give each efid "
				       "its own --state-dir",
				       what, s->path);
	case SQLITE_READONLY:
		return store_set_error(s, -EROFS,
				       "%s: database %s is read-only (%s); make the file, its "
				       "directory and filesystem writable for efid, or choose a "
				       "writable --state-dir",
				       what, s->path, detail);
	case SQLITE_FULL:
		return store_set_error(s, -ENOSPC,
				       "%s: no space left on the disk holding %s; nothing was "
				       "recorded, free some space and retry",
				       what, s->path);
	case SQLITE_CORRUPT:
	case SQLITE_NOTADB:
		return store_corrupt_error(s, what, detail);
	case SQLITE_CONSTRAINT:
		if (rc == SQLITE_CONSTRAINT_UNIQUE || rc == SQLITE_CONSTRAINT_PRIMARYKEY)
			return store_set_error(s, -EEXIST, "%s: already recorded (%s)", what, detail);
		if (rc == SQLITE_CONSTRAINT_FOREIGNKEY)
			return store_set_error(s, -ENOENT, "%s: the record it refers to does not exist",
					       what);
		return store_set_error(s, -EINVAL, "%s: invalid value (%s)", what, detail);
	case SQLITE_NOMEM:
		return store_set_error(s, -ENOMEM, "%s: out of memory", what);
	case SQLITE_PERM:
	case SQLITE_AUTH:
		return store_set_error(s, -EACCES, "%s: %s: permission denied", what, s->path);
	case SQLITE_IOERR:
	case SQLITE_CANTOPEN:
		/* What the OS said decides: a full disk or a read-only mount
		 * surfaces here as often as through FULL or READONLY. */
		if (sys == ENOSPC || sys == EDQUOT)
			return store_sqlite_error(s, SQLITE_FULL, what);
		if (sys == EROFS)
			return store_set_error(s, -EROFS,
					       "%s: database %s is on a read-only filesystem; remount it "
					       "read-write or choose a writable --state-dir",
					       what, s->path);
		if (sys == EACCES || sys == EPERM)
			return store_set_error(s, -EACCES,
					       "%s: cannot open %s: %s; efid needs to read and write "
					       "the file and its directory",
					       what, s->path, strerror(sys));
		if ((rc & 0xff) == SQLITE_CANTOPEN && sys == ENOENT)
			return store_set_error(s, -ENOENT,
					       "%s: cannot open %s: its directory does not exist; create "
					       "it or choose another --state-dir",
					       what, s->path);
		return store_set_error(s, -EIO, "%s: I/O error on %s (%s%s%s); check the disk and "
				       "the kernel log",
				       what, s->path, detail, sys ? ": " : "", sys ? strerror(sys) : "");
	default:
		return store_set_error(s, -EIO, "%s: database %s: %s", what, s->path, detail);
	}
}

const char *store_errmsg(const struct store *s)
{
	return s ? s->errmsg : "";
}

const char *store_open_error(void)
{
	return open_error;
}

/* ---- statements -------------------------------------------------------- */

int store_exec(struct store *s, const char *sql, const char *what)
{
	int rc = sqlite3_exec(s->db, sql, NULL, NULL, NULL);

	return rc == SQLITE_OK ? 0 : store_sqlite_error(s, rc, what);
}

sqlite3_stmt *store_stmt(struct store *s, enum store_stmt id, int *err)
{
	sqlite3_stmt *st = s->stmts[id];
	int rc;

	if (st) {
		sqlite3_reset(st);
		sqlite3_clear_bindings(st);
		return st;
	}
	rc = sqlite3_prepare_v3(s->db, store_stmt_sql[id], -1, SQLITE_PREPARE_PERSISTENT, &st, NULL);
	if (rc != SQLITE_OK) {
		*err = store_sqlite_error(s, rc, "preparing a query");
		return NULL;
	}
	s->stmts[id] = st;
	return st;
}

int store_step_done(struct store *s, sqlite3_stmt *st, const char *what)
{
	int rc = sqlite3_step(st);

	sqlite3_reset(st);
	return rc == SQLITE_DONE ? 0 : store_sqlite_error(s, rc, what);
}

int store_read_user_version(struct store *s, int *version)
{
	int r = 0, rc;
	sqlite3_stmt *st = store_stmt(s, STMT_USER_VERSION, &r);

	if (!st)
		return r;
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*version = sqlite3_column_int(st, 0);
	else
		r = store_sqlite_error(s, rc, "reading the schema version");
	sqlite3_reset(st);
	return r;
}

int store_op_begin(struct store *s, struct store_op *op, const char *what)
{
	op->own_txn = sqlite3_get_autocommit(s->db);
	return store_exec(s, op->own_txn ? "BEGIN IMMEDIATE" : "SAVEPOINT store_op", what);
}

int store_op_end(struct store *s, struct store_op *op, int r)
{
	if (r == 0) {
		r = store_exec(s, op->own_txn ? "COMMIT" : "RELEASE store_op", "committing");
		if (r == 0)
			return 0;
	}
	/* Errors here are ignored: SQLite may already have rolled back (a
	 * full disk does that), and the first error is the one to report. */
	if (op->own_txn) {
		if (!sqlite3_get_autocommit(s->db))
			sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
	} else {
		sqlite3_exec(s->db, "ROLLBACK TO store_op; RELEASE store_op", NULL, NULL, NULL);
	}
	return r;
}

/* ---- open / close ------------------------------------------------------ */

static int check_integrity(struct store *s)
{
	sqlite3_stmt *st = NULL;
	const char *what = "checking the database";
	int rc, r = 0;

	rc = sqlite3_prepare_v2(s->db, "PRAGMA quick_check(1)", -1, &st, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_step(st);
	if (rc != SQLITE_ROW)
		r = store_sqlite_error(s, rc, what);
	else if (strcmp((const char *)sqlite3_column_text(st, 0), "ok") != 0)
		r = store_corrupt_error(s, what, (const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	return r;
}

static int set_wal(struct store *s)
{
	sqlite3_stmt *st = NULL;
	const char *what = "switching to WAL mode";
	int rc, r = 0;

	rc = sqlite3_prepare_v2(s->db, "PRAGMA journal_mode = WAL", -1, &st, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_step(st);
	if (rc != SQLITE_ROW)
		r = store_sqlite_error(s, rc, what);
	else if (strcasecmp((const char *)sqlite3_column_text(st, 0), "wal") != 0)
		r = store_set_error(s, -EIO,
			            "%s: database %s stays in %s mode; its filesystem must support "
			            "shared memory and locks (use a local disk for --state-dir)",
			            what, s->path, sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	return r;
}

static int load_host_id(struct store *s)
{
	sqlite3_stmt *st = NULL;
	const char *what = "reading the host id";
	int rc, r = 0;

	rc = sqlite3_prepare_v2(s->db, "SELECT value FROM meta WHERE key = 'host_id'", -1, &st,
				NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_step(st);
	if (rc == SQLITE_ROW && sqlite3_column_bytes(st, 0) == STORE_HOST_ID_LEN)
		memcpy(s->host_id, sqlite3_column_text(st, 0), STORE_HOST_ID_LEN + 1);
	else if (rc == SQLITE_ROW || rc == SQLITE_DONE)
		r = store_corrupt_error(s, what, "the host_id in table meta is missing or malformed");
	else
		r = store_sqlite_error(s, rc, what);
	sqlite3_finalize(st);
	return r;
}

static void store_free(struct store *s, bool keep_wal)
{
	if (!s)
		return;
	for (int i = 0; i < STMT__COUNT; i++)
		sqlite3_finalize(s->stmts[i]);
	/* A database we refused is left exactly as found: no checkpoint of
	 * a WAL someone else wrote into it. */
	if (keep_wal && s->db)
		sqlite3_db_config(s->db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL);
	sqlite3_close(s->db);
	free(s->path);
	free(s);
}

static int open_db(struct store *s, int version, bool *touched);

/* Size of path plus that of its -wal file; -1 when path does not exist. */
static long long db_bytes(const char *path)
{
	char wal[PATH_MAX];
	struct stat st;
	long long n;

	if (stat(path, &st) < 0)
		return -1;
	n = st.st_size;
	snprintf(wal, sizeof(wal), "%s-wal", path);
	if (stat(wal, &st) == 0)
		n += st.st_size;
	return n;
}

/*
 * SQLite takes an empty file for a new database, so a database truncated
 * to zero bytes (a full disk, a bad restore, `> efid.db`) would silently
 * become a fresh one with a new host id and no records.  efid creates its
 * database next to a marker (PATH.creating) that it removes once the
 * schema is committed: an empty file without the marker is not efid's to
 * fill, and is refused like a corrupt one.  *created tells the caller to
 * remove the marker after a successful open.
 */
static int check_empty(struct store *s, bool *created)
{
	char marker[PATH_MAX];
	long long n = db_bytes(s->path);

	*created = false;
	if (snprintf(marker, sizeof(marker), "%s.creating", s->path) >= (int)sizeof(marker))
		return store_set_error(s, -ENAMETOOLONG, "database path %s is too long", s->path);
	if (n > 0)
		return 0;
	if (n == 0 && access(marker, F_OK) != 0)
		return store_corrupt_error(s, "opening the database",
					   "the file is empty (0 bytes) and efid did not create it, so "
					   "taking it as a new database would lose every record");
	if (n < 0) {
		int fd = open(marker, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
		if (fd < 0)
			return 0; /* sqlite's open says why the directory is unusable */
		fsync(fd);
		close(fd);
	}
	*created = true;
	return 0;
}

static int open_steps(struct store *s, int version, bool *touched)
{
	bool created;
	int r;

	r = check_empty(s, &created);
	if (r < 0)
		return r;
	r = open_db(s, version, touched);
	if (r == 0 && created) {
		char marker[PATH_MAX];
		snprintf(marker, sizeof(marker), "%s.creating", s->path);
		unlink(marker);
	}
	return r;
}

static int open_db(struct store *s, int version, bool *touched)
{
	int found, rc, r;

	rc = sqlite3_open_v2(s->path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
	if (s->db)
		sqlite3_extended_result_codes(s->db, 1);
	if (rc != SQLITE_OK)
		return store_sqlite_error(s, rc, "opening the database");
	sqlite3_busy_timeout(s->db, STORE_BUSY_TIMEOUT_MS);
	/* SQLite falls back to read-only without saying so. */
	if (sqlite3_db_readonly(s->db, "main") == 1)
		return store_set_error(s, -EROFS,
				       "opening the database: %s can only be opened read-only (the file, "
				       "its directory or its filesystem is not writable); efid needs to "
				       "write it: fix the permissions or mount, or choose another "
				       "--state-dir",
				       s->path);

	/* Only reads until the version and integrity are known good. */
	r = store_read_user_version(s, &found);
	if (r < 0)
		return r;
	if (found > STORE_SCHEMA_VERSION)
		return store_set_error(s, -EPROTO,
				       "database %s has schema version %d, newer than the %d this efid "
				       "knows: it was written by a newer efid. Run that version again (or "
				       "restore a backup taken before the upgrade); the file was left "
				       "untouched",
				       s->path, found, STORE_SCHEMA_VERSION);
	if (found > version)
		return store_set_error(s, -EPROTO,
				       "database %s has schema version %d, newer than the %d asked for",
				       s->path, found, version);
	r = check_integrity(s);
	if (r < 0)
		return r;

	*touched = true;
	r = set_wal(s);
	if (r < 0)
		return r;
	/* The kernel is made to match what is committed here, so a commit
	 * must survive a power cut, not just a crash. */
	r = store_exec(s, "PRAGMA foreign_keys = ON; PRAGMA synchronous = FULL",
		       "configuring the database");
	if (r < 0)
		return r;
	r = store_migrate(s, version);
	if (r < 0)
		return r;
	return version >= 1 ? load_host_id(s) : 0;
}

int store_open_at_version(const char *path, int version, struct store **out)
{
	bool touched = false;
	struct store *s;
	int r;

	*out = NULL;
	open_error[0] = '\0';
	if (!path || !*path || version < 0 || version > STORE_SCHEMA_VERSION) {
		snprintf(open_error, sizeof(open_error),
			 "store_open: no database path, or schema version %d outside 0..%d",
			 version, STORE_SCHEMA_VERSION);
		return -EINVAL;
	}
	s = calloc(1, sizeof(*s));
	if (s)
		s->path = strdup(path);
	if (!s || !s->path) {
		free(s);
		snprintf(open_error, sizeof(open_error), "opening %s: out of memory", path);
		return -ENOMEM;
	}
	r = open_steps(s, version, &touched);
	if (r < 0) {
		snprintf(open_error, sizeof(open_error), "%s", s->errmsg);
		store_free(s, !touched);
		return r;
	}
	*out = s;
	return 0;
}

int store_open(const char *path, struct store **out)
{
	return store_open_at_version(path, STORE_SCHEMA_VERSION, out);
}

void store_close(struct store *s)
{
	store_free(s, false);
}

int store_schema_version(struct store *s)
{
	int version, r = store_read_user_version(s, &version);

	return r < 0 ? r : version;
}

const char *store_host_id(const struct store *s)
{
	return s->host_id;
}

/* ---- transactions ------------------------------------------------------ */

int store_begin(struct store *s)
{
	if (!sqlite3_get_autocommit(s->db))
		return store_set_error(s, -EINVAL, "store_begin: a transaction is already open");
	return store_exec(s, "BEGIN IMMEDIATE", "starting a transaction");
}

int store_commit(struct store *s)
{
	int r;

	if (sqlite3_get_autocommit(s->db))
		return store_set_error(s, -EINVAL, "store_commit: no transaction is open (it was "
				       "rolled back after an earlier error)");
	r = store_exec(s, "COMMIT", "committing");
	/* A commit that failed leaves nothing half-done behind. */
	if (r < 0 && !sqlite3_get_autocommit(s->db))
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
	return r;
}

void store_rollback(struct store *s)
{
	if (!sqlite3_get_autocommit(s->db))
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
}

