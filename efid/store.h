/* SPDX-License-Identifier: MIT */
/*
 * efid's persistent state in SQLite (WAL): instances, interfaces, their
 * configured addresses, and their GID tables.  The kernel is made to match
 * this, never the other way round.
 *
 * Schema versions are applied by migrations (store_migrations.c), each with
 * its `PRAGMA user_version` bump inside one BEGIN IMMEDIATE … COMMIT.
 * Every function returns 0 or a negative errno and, on failure, leaves a
 * message for store_errmsg():
 *   -EBUSY    the database is locked by another process (after a timeout)
 *   -EROFS    the database or its directory is read-only
 *   -ENOSPC   the disk is full
 *   -EIO      corrupt or unreadable database (never "repaired" by deleting it)
 *   -ENOENT   no such record
 *   -EEXIST   a uniqueness conflict
 *   -EPROTO   the database has a schema newer than this efid knows
 * Single-threaded: the daemon's event loop owns the store.
 */
#ifndef EFID_STORE_H
#define EFID_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gid.h"
#include "ifacespec.h"

#define STORE_SCHEMA_VERSION 4   /* the version this build migrates to */
#define STORE_MAX_GIDS 64

struct store;

/* One interface as recorded. */
struct store_iface {
	int64_t id;
	struct efi_iface_spec spec;      /* instance, name, kind, uplink, mtu, addrs */
	char host_ifname[EFI_IFNAME_MAX + 1]; /* host-side device (veth peer / "" for macvlan) */
	char state[16];                  /* "attached" | "missing" */
	char link[16];                   /* "up" | "down" | "no-carrier" | "missing" */
	uint32_t ifindex;                /* inside the instance, 0 when missing */
	int64_t created_at;              /* unix seconds */
};

struct store_gid {
	uint32_t index;
	union efi_gid gid;
};

/*
 * Opens (creating if needed) the database at path, sets WAL and a busy
 * timeout, checks integrity (quick_check), and migrates it to
 * STORE_SCHEMA_VERSION.  A failed migration is rolled back and reported.
 */
int store_open(const char *path, struct store **out);
/* Like store_open but migrates only up to `version` (tests, fixtures). */
int store_open_at_version(const char *path, int version, struct store **out);
/* Closes; accepts NULL. */
void store_close(struct store *s);

/* The last failure's message, for logs and error replies ("" if none).
 * When store_open fails, *out is NULL: use store_open_error() instead. */
const char *store_errmsg(const struct store *s);
const char *store_open_error(void);

int store_schema_version(struct store *s);  /* PRAGMA user_version, or -errno */
const char *store_host_id(const struct store *s); /* random uuid made on first open */

/* BEGIN IMMEDIATE / COMMIT / ROLLBACK.  Callers that change several rows
 * (and the kernel) wrap them in one transaction. */
int store_begin(struct store *s);
int store_commit(struct store *s);
void store_rollback(struct store *s);

/* Instances are recorded when they first get an interface. */
int store_instance_ensure(struct store *s, const char *instance);
/* Removes an instance row with no interfaces left (no-op otherwise). */
int store_instance_prune(struct store *s, const char *instance);
/* Calls cb for each recorded instance name, in name order. */
int store_instance_foreach(struct store *s, int (*cb)(const char *instance, void *ud), void *ud);

/* Looks up one interface.  -ENOENT when absent. */
int store_iface_get(struct store *s, const char *instance, const char *name,
		    struct store_iface *out);
/* Finds the interface (any instance) that has ip (prefix ignored) configured.
 * -ENOENT when none. */
int store_iface_find_address(struct store *s, const struct efi_addr *ip, struct store_iface *out);
/* Finds the interface whose host_ifname is name.  -ENOENT when none. */
int store_iface_find_host_ifname(struct store *s, const char *host_ifname,
				 struct store_iface *out);
/* Inserts (instance row ensured); sets in->id, and fills in state
 * ("attached"), link ("missing") and created_at (now) when left 0/"".
 * -EEXIST on a name clash (or a host_ifname already recorded); atomic. */
int store_iface_insert(struct store *s, struct store_iface *in);
/* Deletes the interface, its addresses and GIDs.  -ENOENT when absent. */
int store_iface_delete(struct store *s, int64_t id);
/* Updates the observed state columns (state, link, ifindex). */
int store_iface_set_state(struct store *s, int64_t id, const char *state, const char *link,
			  uint32_t ifindex);
/* Calls cb for every interface (of one instance when instance != NULL),
 * ordered by instance then name.  A non-zero return from cb stops and is
 * returned. */
int store_iface_foreach(struct store *s, const char *instance,
			int (*cb)(const struct store_iface *iface, void *ud), void *ud);

/*
 * Replaces an interface's GID table with gids[0..n): a GID already present
 * keeps its index, a new one takes the lowest free index, a vanished one
 * frees its index.  So indexes stay stable while addresses come and go.
 * Returns 0, or -ENOSPC-like errors from SQLite; -E2BIG when n > STORE_MAX_GIDS.
 */
int store_gids_update(struct store *s, int64_t iface_id, const union efi_gid *gids, size_t n);
/* Reads the GID table ordered by index.  *n receives the count (≤ max). */
/* An attach or detach of instance/name recorded before the kernel is
 * changed (intents.c completes or rolls back the ones a crash left). */
struct store_intent {
	char op[8];                          /* "attach" | "detach" */
	char instance[EFI_INSTANCE_MAX + 1];
	char name[EFI_IFNAME_MAX + 1];
	char host_ifname[EFI_IFNAME_MAX + 1];
};
/* Records (or replaces) the intent for its instance/name.  Returns 0 or -errno. */
int store_intent_set(struct store *s, const struct store_intent *in);
/* Forgets the intent of instance/name (none is fine).  Returns 0 or -errno. */
int store_intent_clear(struct store *s, const char *instance, const char *name);
/* 0 and *out filled, -ENOENT when there is none, or -errno. */
int store_intent_get(struct store *s, const char *instance, const char *name,
		     struct store_intent *out);
/* Every intent, in a malloc'd array.  Returns 0 or -errno. */
int store_intent_all(struct store *s, struct store_intent **out, size_t *n);
int store_gids_get(struct store *s, int64_t iface_id, struct store_gid *out, size_t max,
		   size_t *n);

#endif
