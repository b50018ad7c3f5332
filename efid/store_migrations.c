/* SPDX-License-Identifier: MIT */
/*
 * Schema migrations.  Version N of the schema is what migrations[0..N)
 * built; a migration is never edited once released (old databases and the
 * fixtures under tests/fixtures/ were made by it), a change is a new entry.
 *
 *   1  meta (host_id), instances, interfaces, addresses
 *   2  observed state of interfaces (state, link, ifindex) and their GIDs
 *   3  intents: an attach or detach recorded before the kernel is changed,
 *      completed or rolled back at reconcile after a crash (issue 22)
 *   4  the connection manager's listeners and established connections, so
 *      that they outlive an efid restart (issue 18; store_cm.c)
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include "store_internal.h"

struct migration {
	const char *summary;
	const char *sql;
	/* Run after sql, inside the same transaction; may be NULL. */
	int (*post)(struct store *s);
};

static int migration_1_host_id(struct store *s);

static const struct migration migrations[] = {
	{
		.summary = "instances, interfaces and addresses",
		.sql =
		"CREATE TABLE meta ("
		"  key TEXT PRIMARY KEY NOT NULL,"
		"  value TEXT NOT NULL);"
		"CREATE TABLE instances ("
		"  id INTEGER PRIMARY KEY,"
		"  name TEXT NOT NULL UNIQUE,"
		"  created_at INTEGER NOT NULL);"
		"CREATE TABLE interfaces ("
		"  id INTEGER PRIMARY KEY,"
		"  instance_id INTEGER NOT NULL REFERENCES instances(id) ON DELETE CASCADE,"
		"  name TEXT NOT NULL,"
		"  kind TEXT NOT NULL,"
		"  uplink TEXT NOT NULL DEFAULT '',"
		"  mtu INTEGER NOT NULL DEFAULT 0,"
		"  host_ifname TEXT NOT NULL DEFAULT '',"
		"  created_at INTEGER NOT NULL,"
		"  UNIQUE (instance_id, name));"
		/* Two records naming one host device would fight over it;
		 * macvlans have none (""), so only the named ones are unique. */
		"CREATE UNIQUE INDEX interfaces_host_ifname ON interfaces(host_ifname)"
		"  WHERE host_ifname <> '';"
		/* family is 4 or 6 (not AF_*, whose values are the OS's);
		 * address is inet_ntop's text, so equal IPs are equal strings. */
		"CREATE TABLE addresses ("
		"  interface_id INTEGER NOT NULL REFERENCES interfaces(id) ON DELETE CASCADE,"
		"  position INTEGER NOT NULL,"
		"  family INTEGER NOT NULL CHECK (family IN (4, 6)),"
		"  address TEXT NOT NULL,"
		"  prefixlen INTEGER NOT NULL,"
		"  PRIMARY KEY (interface_id, position));"
		"CREATE INDEX addresses_by_ip ON addresses(family, address);",
		.post = migration_1_host_id,
	},
	{
		.summary = "interface state, link, ifindex and GID tables",
		.sql =
		"ALTER TABLE interfaces ADD COLUMN state TEXT NOT NULL DEFAULT 'attached';"
		"ALTER TABLE interfaces ADD COLUMN link TEXT NOT NULL DEFAULT 'missing';"
		"ALTER TABLE interfaces ADD COLUMN ifindex INTEGER NOT NULL DEFAULT 0;"
		"CREATE TABLE gids ("
		"  interface_id INTEGER NOT NULL REFERENCES interfaces(id) ON DELETE CASCADE,"
		"  gid_index INTEGER NOT NULL CHECK (gid_index >= 0),"
		"  gid BLOB NOT NULL CHECK (length(gid) = 16),"
		"  UNIQUE (interface_id, gid_index),"
		"  UNIQUE (interface_id, gid));",
	},
	{
		.summary = "attach and detach intents",
		.sql =
		/* At most one change in flight per interface name; host_ifname
		 * is known for a detach, not for an attach (the kernel side
		 * names it). */
		"CREATE TABLE intents ("
		"  op TEXT NOT NULL CHECK (op IN ('attach', 'detach')),"
		"  instance TEXT NOT NULL,"
		"  name TEXT NOT NULL,"
		"  host_ifname TEXT NOT NULL DEFAULT '',"
		"  created_at INTEGER NOT NULL,"
		"  PRIMARY KEY (instance, name));",
	},
	{
		.summary = "connection-manager listeners and connections",
		.sql =
		/* Keyed as efid finds them: a listener by where it listens, a
		 * connection by its instance and tid (one efid serving both
		 * ends holds an active and a passive record of one tid).  No
		 * foreign key to instances: efid ends the connections of an
		 * interface that goes (cm_iface_gone) and drops what no
		 * application takes up again after a restart. */
		"CREATE TABLE cm_listeners ("
		"  instance TEXT NOT NULL,"
		"  ifname TEXT NOT NULL,"
		"  service INTEGER NOT NULL CHECK (service BETWEEN 1 AND 65535),"
		"  backlog INTEGER NOT NULL CHECK (backlog BETWEEN 1 AND 4096),"
		"  pid INTEGER NOT NULL,"
		"  PRIMARY KEY (instance, ifname, service));"
		"CREATE TABLE cm_connections ("
		"  instance TEXT NOT NULL,"
		"  tid INTEGER NOT NULL,"
		"  active INTEGER NOT NULL CHECK (active IN (0, 1)),"
		"  handle INTEGER NOT NULL,"
		"  ifname TEXT NOT NULL,"
		"  peer BLOB NOT NULL CHECK (length(peer) = 16),"
		"  peer_gid BLOB NOT NULL CHECK (length(peer_gid) = 16),"
		"  local_qpn INTEGER NOT NULL,"
		"  peer_qpn INTEGER NOT NULL,"
		"  pid INTEGER NOT NULL,"
		"  PRIMARY KEY (instance, tid, active));",
	},
};

_Static_assert(sizeof(migrations) / sizeof(migrations[0]) == STORE_SCHEMA_VERSION,
	       "one migration per schema version");

int store_make_uuid(char buf[STORE_HOST_ID_LEN + 1])
{
	uint8_t b[16];
	size_t got = 0;

	while (got < sizeof(b)) {
		ssize_t r = getrandom(b + got, sizeof(b) - got, 0);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		got += (size_t)r;
	}
	b[6] = (uint8_t)((b[6] & 0x0f) | 0x40);   /* version 4: random */
	b[8] = (uint8_t)((b[8] & 0x3f) | 0x80);   /* RFC 4122 variant */
	snprintf(buf, STORE_HOST_ID_LEN + 1,
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11],
		 b[12], b[13], b[14], b[15]);
	return 0;
}

/* The host id is made with the schema, so every database has exactly one
 * and it never changes across restarts. */
static int migration_1_host_id(struct store *s)
{
	char uuid[STORE_HOST_ID_LEN + 1];
	sqlite3_stmt *st = NULL;
	int rc, r;

	r = store_make_uuid(uuid);
	if (r < 0)
		return store_set_error(s, r, "cannot make a host id: getrandom: %s", strerror(-r));
	rc = sqlite3_prepare_v2(s->db, "INSERT INTO meta(key, value) VALUES ('host_id', ?1)", -1,
				&st, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_text(st, 1, uuid, -1, SQLITE_TRANSIENT);
	if (rc == SQLITE_OK)
		rc = sqlite3_step(st);
	r = rc == SQLITE_DONE ? 0 : store_sqlite_error(s, rc, "recording the host id");
	sqlite3_finalize(st);
	return r;
}

/*
 * Under the write lock, reads the version into *version and applies the
 * migration from it, with its version bump, in one transaction.  Returns 1
 * when the database was already at target, 0 after one migration, or
 * -errno after rolling that migration back.  Taking the lock even when
 * there is nothing to do makes a database held by another process show up
 * at open, not at the first change.
 */
static int migrate_step(struct store *s, int target, int *version)
{
	char bump[64];
	int r;

	*version = -1;
	r = store_exec(s, "BEGIN IMMEDIATE", "starting the schema upgrade");
	if (r < 0)
		return r;
	/* Read under the lock: another process may have migrated meanwhile,
	 * and a migration must never run twice. */
	r = store_read_user_version(s, version);
	if (r < 0)
		goto rollback;
	if (*version >= target) {
		store_exec(s, "ROLLBACK", "ending the schema check");
		return 1;
	}
	r = store_exec(s, migrations[*version].sql, "upgrading the schema");
	if (r == 0 && migrations[*version].post)
		r = migrations[*version].post(s);
	if (r < 0)
		goto rollback;
	snprintf(bump, sizeof(bump), "PRAGMA user_version = %d", *version + 1);
	r = store_exec(s, bump, "recording the new schema version");
	if (r < 0)
		goto rollback;
	r = store_exec(s, "COMMIT", "committing the schema upgrade");
	if (r < 0)
		goto rollback;
	return 0;

rollback:
	/* A failed COMMIT (a full disk) may have rolled back by itself. */
	if (!sqlite3_get_autocommit(s->db))
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
	return r;
}

int store_migrate(struct store *s, int target)
{
	char cause[STORE_ERRMSG_MAX];
	int version, r;

	while ((r = migrate_step(s, target, &version)) == 0)
		;
	if (r > 0)
		return 0;
	if (version < 0 || version >= target)
		return r;    /* failed before or after any migration: as reported */
	snprintf(cause, sizeof(cause), "%s", s->errmsg);
	return store_set_error(s, r,
			       "cannot upgrade database %s from schema version %d to %d (%s): %s. "
			       "The upgrade was rolled back and the database is unchanged at version "
			       "%d; efid cannot start until it can upgrade it: fix the cause, or "
			       "restore the database from a backup",
			       s->path, version, version + 1, migrations[version].summary, cause,
			       version);
}
