/* SPDX-License-Identifier: MIT */
/*
 * The rows of efid's store: instances, interfaces with their configured
 * addresses, and GID tables.  Opening, errors and transactions are in
 * store.c, the schema in store_migrations.c.
 *
 * Addresses are kept as inet_ntop text with a family of 4 or 6, so one IP is
 * always one string and lookups by address are plain index lookups.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store_internal.h"

#define IFACE_COLUMNS                                                                     \
	"SELECT i.id, n.name, i.name, i.kind, i.uplink, i.mtu, i.host_ifname, i.state, "   \
	"i.link, i.ifindex, i.created_at FROM interfaces i "                               \
	"JOIN instances n ON n.id = i.instance_id "

/* The SQL of each cached statement (store_internal.h). */
const char *const store_stmt_sql[STMT__COUNT] = {
	[STMT_USER_VERSION] = "PRAGMA user_version",
	[STMT_INSTANCE_ENSURE] = "INSERT OR IGNORE INTO instances(name, created_at) VALUES (?1, ?2)",
	[STMT_INSTANCE_ID] = "SELECT id FROM instances WHERE name = ?1",
	[STMT_INSTANCE_PRUNE] = "DELETE FROM instances WHERE name = ?1 AND NOT EXISTS "
				"(SELECT 1 FROM interfaces WHERE instance_id = instances.id)",
	[STMT_INSTANCE_LIST] = "SELECT name FROM instances ORDER BY name",
	[STMT_IFACE_BY_NAME] = IFACE_COLUMNS "WHERE n.name = ?1 AND i.name = ?2",
	[STMT_IFACE_BY_ID] = "SELECT 1 FROM interfaces WHERE id = ?1",
	[STMT_IFACE_BY_ADDRESS] = IFACE_COLUMNS "JOIN addresses a ON a.interface_id = i.id "
				  "WHERE a.family = ?1 AND a.address = ?2 "
				  "ORDER BY n.name, i.name LIMIT 1",
	[STMT_IFACE_BY_HOST_IFNAME] = IFACE_COLUMNS "WHERE i.host_ifname = ?1",
	[STMT_IFACE_ALL] = IFACE_COLUMNS "ORDER BY n.name, i.name",
	[STMT_IFACE_OF_INSTANCE] = IFACE_COLUMNS "WHERE n.name = ?1 ORDER BY i.name",
	[STMT_IFACE_INSERT] = "INSERT INTO interfaces(instance_id, name, kind, uplink, mtu, "
			      "host_ifname, state, link, ifindex, created_at) "
			      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
	[STMT_IFACE_DELETE] = "DELETE FROM interfaces WHERE id = ?1",
	[STMT_IFACE_SET_STATE] = "UPDATE interfaces SET state = ?2, link = ?3, ifindex = ?4 "
				 "WHERE id = ?1",
	[STMT_ADDR_INSERT] = "INSERT INTO addresses(interface_id, position, family, address, "
			     "prefixlen) VALUES (?1, ?2, ?3, ?4, ?5)",
	[STMT_ADDR_LIST] = "SELECT family, address, prefixlen FROM addresses "
			   "WHERE interface_id = ?1 ORDER BY position",
	[STMT_GID_LIST] = "SELECT gid_index, gid FROM gids WHERE interface_id = ?1 "
			  "ORDER BY gid_index",
	[STMT_GID_DELETE] = "DELETE FROM gids WHERE interface_id = ?1 AND gid_index = ?2",
	[STMT_GID_INSERT] = "INSERT INTO gids(interface_id, gid_index, gid) VALUES (?1, ?2, ?3)",
	[STMT_INTENT_SET] = "INSERT OR REPLACE INTO intents(op, instance, name, host_ifname, "
			    "created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
	[STMT_INTENT_CLEAR] = "DELETE FROM intents WHERE instance = ?1 AND name = ?2",
	[STMT_INTENT_GET] = "SELECT op, instance, name, host_ifname FROM intents "
			    "WHERE instance = ?1 AND name = ?2",
	[STMT_INTENT_ALL] = "SELECT op, instance, name, host_ifname FROM intents "
			    "ORDER BY instance, name",
};

/* ---- instances --------------------------------------------------------- */

static bool text_fits(const char *v, size_t max)
{
	return v && strnlen(v, max + 1) <= max;
}

static int check_instance(struct store *s, const char *instance)
{
	if (!instance || !*instance || !text_fits(instance, EFI_INSTANCE_MAX))
		return store_set_error(s, -EINVAL, "instance name must be 1..%d characters",
				       EFI_INSTANCE_MAX);
	return 0;
}

int store_instance_ensure(struct store *s, const char *instance)
{
	int r = check_instance(s, instance);
	sqlite3_stmt *st;

	if (r < 0 || !(st = store_stmt(s, STMT_INSTANCE_ENSURE, &r)))
		return r;
	sqlite3_bind_text(st, 1, instance, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)time(NULL));
	return store_step_done(s, st, "recording the instance");
}

int store_instance_prune(struct store *s, const char *instance)
{
	int r = check_instance(s, instance);
	sqlite3_stmt *st;

	if (r < 0 || !(st = store_stmt(s, STMT_INSTANCE_PRUNE, &r)))
		return r;
	sqlite3_bind_text(st, 1, instance, -1, SQLITE_STATIC);
	return store_step_done(s, st, "removing the instance record");
}

int store_instance_foreach(struct store *s, int (*cb)(const char *instance, void *ud), void *ud)
{
	char **names = NULL;
	size_t n = 0, cap = 0;
	sqlite3_stmt *st;
	int r = 0, rc;

	if (!(st = store_stmt(s, STMT_INSTANCE_LIST, &r)))
		return r;
	/* Read them all first so cb may change the store as it likes. */
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 16;
			char **nn = realloc(names, ncap * sizeof(*nn));
			if (!nn) {
				r = store_set_error(s, -ENOMEM, "listing instances: out of memory");
				goto out;
			}
			names = nn;
			cap = ncap;
		}
		names[n] = strdup((const char *)sqlite3_column_text(st, 0));
		if (!names[n]) {
			r = store_set_error(s, -ENOMEM, "listing instances: out of memory");
			goto out;
		}
		n++;
	}
	if (rc != SQLITE_DONE) {
		r = store_sqlite_error(s, rc, "listing instances");
		goto out;
	}
	sqlite3_reset(st);
	for (size_t i = 0; i < n && r == 0; i++)
		r = cb(names[i], ud);
out:
	sqlite3_reset(st);
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return r;
}

/* ---- interfaces -------------------------------------------------------- */

static int copy_text(struct store *s, sqlite3_stmt *st, int col, char *buf, size_t size)
{
	const char *v = (const char *)sqlite3_column_text(st, col);
	size_t len = (size_t)sqlite3_column_bytes(st, col);

	if (!v || len >= size)
		return store_corrupt_error(s, "reading an interface", "a text column is missing or too long");
	memcpy(buf, v, len + 1);
	return 0;
}

/* Fills out from an IFACE_COLUMNS row (addresses come separately). */
static int read_iface_row(struct store *s, sqlite3_stmt *st, struct store_iface *out)
{
	int r;

	memset(out, 0, sizeof(*out));
	out->id = sqlite3_column_int64(st, 0);
	if ((r = copy_text(s, st, 1, out->spec.instance, sizeof(out->spec.instance))) < 0 ||
	    (r = copy_text(s, st, 2, out->spec.name, sizeof(out->spec.name))) < 0 ||
	    (r = copy_text(s, st, 3, out->spec.kind, sizeof(out->spec.kind))) < 0 ||
	    (r = copy_text(s, st, 4, out->spec.uplink, sizeof(out->spec.uplink))) < 0)
		return r;
	out->spec.mtu = (uint32_t)sqlite3_column_int64(st, 5);
	if ((r = copy_text(s, st, 6, out->host_ifname, sizeof(out->host_ifname))) < 0 ||
	    (r = copy_text(s, st, 7, out->state, sizeof(out->state))) < 0 ||
	    (r = copy_text(s, st, 8, out->link, sizeof(out->link))) < 0)
		return r;
	out->ifindex = (uint32_t)sqlite3_column_int64(st, 9);
	out->created_at = sqlite3_column_int64(st, 10);
	return 0;
}

static int load_addresses(struct store *s, struct store_iface *iface)
{
	sqlite3_stmt *st;
	int r = 0, rc;

	if (!(st = store_stmt(s, STMT_ADDR_LIST, &r)))
		return r;
	sqlite3_bind_int64(st, 1, iface->id);
	iface->spec.naddrs = 0;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct efi_addr *a = &iface->spec.addrs[iface->spec.naddrs];
		int family = sqlite3_column_int(st, 0);
		const char *text = (const char *)sqlite3_column_text(st, 1);
		int prefixlen = sqlite3_column_int(st, 2);

		memset(a, 0, sizeof(*a));
		a->family = family == 6 ? AF_INET6 : AF_INET;
		if (iface->spec.naddrs == EFI_MAX_ADDRS || (family != 4 && family != 6) || !text ||
		    inet_pton(a->family, text, &a->a) != 1 || prefixlen < 0 ||
		    prefixlen > (family == 4 ? 32 : 128)) {
			sqlite3_reset(st);
			return store_corrupt_error(s, "reading addresses",
					     "an address row is malformed or there are too many");
		}
		a->prefixlen = (uint8_t)prefixlen;
		iface->spec.naddrs++;
	}
	sqlite3_reset(st);
	return rc == SQLITE_DONE ? 0 : store_sqlite_error(s, rc, "reading addresses");
}

/* Runs a lookup that yields at most one interface. */
static int iface_lookup(struct store *s, sqlite3_stmt *st, struct store_iface *out,
			const char *what)
{
	int rc = sqlite3_step(st), r;

	if (rc == SQLITE_DONE) {
		sqlite3_reset(st);
		return store_set_error(s, -ENOENT, "%s: no such interface recorded", what);
	}
	if (rc != SQLITE_ROW) {
		r = store_sqlite_error(s, rc, what);
		sqlite3_reset(st);
		return r;
	}
	r = read_iface_row(s, st, out);
	sqlite3_reset(st);
	return r < 0 ? r : load_addresses(s, out);
}

int store_iface_get(struct store *s, const char *instance, const char *name,
		    struct store_iface *out)
{
	sqlite3_stmt *st;
	int r = 0;

	if (!instance || !name)
		return store_set_error(s, -EINVAL, "store_iface_get: instance and name are required");
	if (!(st = store_stmt(s, STMT_IFACE_BY_NAME, &r)))
		return r;
	sqlite3_bind_text(st, 1, instance, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
	r = iface_lookup(s, st, out, "looking up the interface");
	if (r == -ENOENT)
		store_set_error(s, r, "no interface %s in instance %s", name, instance);
	return r;
}

/* The canonical text an address is stored as. */
static int addr_text(struct store *s, const struct efi_addr *a, char *buf, size_t len,
		     int *family)
{
	if (!a || (a->family != AF_INET && a->family != AF_INET6))
		return store_set_error(s, -EINVAL, "an address must be IPv4 or IPv6");
	if (a->prefixlen > (a->family == AF_INET ? 32 : 128))
		return store_set_error(s, -EINVAL, "prefix length /%u is too long for the address",
				       a->prefixlen);
	*family = a->family == AF_INET ? 4 : 6;
	inet_ntop(a->family, &a->a, buf, (socklen_t)len);
	return 0;
}

int store_iface_find_address(struct store *s, const struct efi_addr *ip, struct store_iface *out)
{
	char text[INET6_ADDRSTRLEN];
	sqlite3_stmt *st;
	int family, r = 0;

	if (!ip || (ip->family != AF_INET && ip->family != AF_INET6))
		return store_set_error(s, -EINVAL, "an address must be IPv4 or IPv6");
	/* Only the IP matters here, not the prefix. */
	inet_ntop(ip->family, &ip->a, text, sizeof(text));
	family = ip->family == AF_INET ? 4 : 6;
	if (!(st = store_stmt(s, STMT_IFACE_BY_ADDRESS, &r)))
		return r;
	sqlite3_bind_int(st, 1, family);
	sqlite3_bind_text(st, 2, text, -1, SQLITE_STATIC);
	r = iface_lookup(s, st, out, "looking up an address");
	if (r == -ENOENT)
		store_set_error(s, r, "no interface has address %s", text);
	return r;
}

int store_iface_find_host_ifname(struct store *s, const char *host_ifname,
				 struct store_iface *out)
{
	sqlite3_stmt *st;
	int r = 0;

	/* "" is what every macvlan records: it names no device. */
	if (!host_ifname || !*host_ifname)
		return store_set_error(s, -EINVAL, "store_iface_find_host_ifname: empty device name");
	if (!(st = store_stmt(s, STMT_IFACE_BY_HOST_IFNAME, &r)))
		return r;
	sqlite3_bind_text(st, 1, host_ifname, -1, SQLITE_STATIC);
	r = iface_lookup(s, st, out, "looking up a host device");
	if (r == -ENOENT)
		store_set_error(s, r, "no interface uses host device %s", host_ifname);
	return r;
}

static int check_iface(struct store *s, const struct store_iface *in)
{
	const struct efi_iface_spec *sp = &in->spec;
	int r = check_instance(s, sp->instance);

	if (r < 0)
		return r;
	if (!sp->name[0] || !text_fits(sp->name, EFI_IFNAME_MAX))
		return store_set_error(s, -EINVAL, "interface name must be 1..%d characters",
				       EFI_IFNAME_MAX);
	if (!sp->kind[0] || !text_fits(sp->kind, sizeof(sp->kind) - 1))
		return store_set_error(s, -EINVAL, "interface kind must be set (veth or macvlan)");
	if (!text_fits(sp->uplink, EFI_IFNAME_MAX) || !text_fits(in->host_ifname, EFI_IFNAME_MAX))
		return store_set_error(s, -EINVAL, "uplink and host device names are at most %d "
				       "characters", EFI_IFNAME_MAX);
	if (!text_fits(in->state, sizeof(in->state) - 1) ||
	    !text_fits(in->link, sizeof(in->link) - 1))
		return store_set_error(s, -EINVAL, "state and link must be NUL-terminated");
	if (sp->naddrs > EFI_MAX_ADDRS)
		return store_set_error(s, -EINVAL, "at most %d addresses per interface", EFI_MAX_ADDRS);
	return 0;
}

static int insert_addresses(struct store *s, const struct store_iface *in)
{
	for (size_t i = 0; i < in->spec.naddrs; i++) {
		char text[INET6_ADDRSTRLEN];
		sqlite3_stmt *st;
		int family = 0, r = addr_text(s, &in->spec.addrs[i], text, sizeof(text), &family);

		if (r < 0 || !(st = store_stmt(s, STMT_ADDR_INSERT, &r)))
			return r;
		sqlite3_bind_int64(st, 1, in->id);
		sqlite3_bind_int64(st, 2, (sqlite3_int64)i);
		sqlite3_bind_int(st, 3, family);
		sqlite3_bind_text(st, 4, text, -1, SQLITE_TRANSIENT);
		sqlite3_bind_int(st, 5, in->spec.addrs[i].prefixlen);
		r = store_step_done(s, st, "recording an address");
		if (r < 0)
			return r;
	}
	return 0;
}

static int insert_iface_row(struct store *s, struct store_iface *in)
{
	const struct efi_iface_spec *sp = &in->spec;
	sqlite3_int64 instance_id;
	sqlite3_stmt *st;
	int r, rc;

	r = store_instance_ensure(s, sp->instance);
	if (r < 0 || !(st = store_stmt(s, STMT_INSTANCE_ID, &r)))
		return r;
	sqlite3_bind_text(st, 1, sp->instance, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	instance_id = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
	sqlite3_reset(st);
	if (rc != SQLITE_ROW)
		return store_sqlite_error(s, rc, "recording the instance");

	if (!(st = store_stmt(s, STMT_IFACE_INSERT, &r)))
		return r;
	sqlite3_bind_int64(st, 1, instance_id);
	sqlite3_bind_text(st, 2, sp->name, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, sp->kind, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, sp->uplink, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 5, sp->mtu);
	sqlite3_bind_text(st, 6, in->host_ifname, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 7, in->state, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 8, in->link, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 9, in->ifindex);
	sqlite3_bind_int64(st, 10, in->created_at);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc == SQLITE_CONSTRAINT_UNIQUE) {
		if (strstr(sqlite3_errmsg(s->db), "host_ifname"))
			return store_set_error(s, -EEXIST, "host device %s is already recorded for "
					       "another interface", in->host_ifname);
		return store_set_error(s, -EEXIST, "interface %s already exists in instance %s",
				       sp->name, sp->instance);
	}
	if (rc != SQLITE_DONE)
		return store_sqlite_error(s, rc, "recording the interface");
	in->id = sqlite3_last_insert_rowid(s->db);
	return insert_addresses(s, in);
}

int store_iface_insert(struct store *s, struct store_iface *in)
{
	struct store_op op;
	int r = check_iface(s, in);

	if (r < 0)
		return r;
	if (!in->state[0])
		snprintf(in->state, sizeof(in->state), "attached");
	if (!in->link[0])
		snprintf(in->link, sizeof(in->link), "missing");
	if (!in->created_at)
		in->created_at = (int64_t)time(NULL);
	r = store_op_begin(s, &op, "recording the interface");
	if (r < 0)
		return r;
	r = store_op_end(s, &op, insert_iface_row(s, in));
	if (r < 0)
		in->id = 0;
	return r;
}

int store_iface_delete(struct store *s, int64_t id)
{
	sqlite3_stmt *st;
	int r = 0;

	if (!(st = store_stmt(s, STMT_IFACE_DELETE, &r)))
		return r;
	sqlite3_bind_int64(st, 1, id);
	/* One statement, so atomic; addresses and GIDs go by cascade. */
	r = store_step_done(s, st, "deleting the interface");
	if (r == 0 && sqlite3_changes(s->db) == 0)
		r = store_set_error(s, -ENOENT, "no interface with id %lld is recorded", (long long)id);
	return r;
}

int store_iface_set_state(struct store *s, int64_t id, const char *state, const char *link,
			  uint32_t ifindex)
{
	sqlite3_stmt *st;
	int r = 0;

	if (!state || !link || !*state || !*link || !text_fits(state, 15) || !text_fits(link, 15))
		return store_set_error(s, -EINVAL, "state and link must be 1..15 characters");
	if (!(st = store_stmt(s, STMT_IFACE_SET_STATE, &r)))
		return r;
	sqlite3_bind_int64(st, 1, id);
	sqlite3_bind_text(st, 2, state, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, link, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, ifindex);
	r = store_step_done(s, st, "recording the interface state");
	if (r == 0 && sqlite3_changes(s->db) == 0)
		r = store_set_error(s, -ENOENT, "no interface with id %lld is recorded", (long long)id);
	return r;
}

int store_iface_foreach(struct store *s, const char *instance,
			int (*cb)(const struct store_iface *iface, void *ud), void *ud)
{
	struct store_iface *all = NULL;
	size_t n = 0, cap = 0;
	sqlite3_stmt *st;
	int r = 0, rc;

	if (!(st = store_stmt(s, instance ? STMT_IFACE_OF_INSTANCE : STMT_IFACE_ALL, &r)))
		return r;
	if (instance)
		sqlite3_bind_text(st, 1, instance, -1, SQLITE_STATIC);
	/* A snapshot first, so cb may insert, delete or look up freely. */
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 8;
			struct store_iface *na = realloc(all, ncap * sizeof(*na));
			if (!na) {
				r = store_set_error(s, -ENOMEM, "listing interfaces: out of memory");
				goto out;
			}
			all = na;
			cap = ncap;
		}
		r = read_iface_row(s, st, &all[n++]);
		if (r < 0)
			goto out;
	}
	if (rc != SQLITE_DONE) {
		r = store_sqlite_error(s, rc, "listing interfaces");
		goto out;
	}
	sqlite3_reset(st);
	for (size_t i = 0; i < n && r == 0; i++)
		r = load_addresses(s, &all[i]);
	for (size_t i = 0; i < n && r == 0; i++)
		r = cb(&all[i], ud);
out:
	sqlite3_reset(st);
	free(all);
	return r;
}

/* ---- GIDs -------------------------------------------------------------- */

static int iface_exists(struct store *s, int64_t id)
{
	sqlite3_stmt *st;
	int r = 0, rc;

	if (!(st = store_stmt(s, STMT_IFACE_BY_ID, &r)))
		return r;
	sqlite3_bind_int64(st, 1, id);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc == SQLITE_DONE)
		return store_set_error(s, -ENOENT, "no interface with id %lld is recorded", (long long)id);
	return rc == SQLITE_ROW ? 0 : store_sqlite_error(s, rc, "looking up the interface");
}

static bool gid_in(const union efi_gid *g, const union efi_gid *set, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (memcmp(g->raw, set[i].raw, sizeof(g->raw)) == 0)
			return true;
	return false;
}

static int gids_replace(struct store *s, int64_t iface_id, const union efi_gid *gids, size_t n)
{
	struct store_gid cur[STORE_MAX_GIDS];
	union efi_gid kept[STORE_MAX_GIDS];
	bool used[STORE_MAX_GIDS] = { false };
	size_t ncur = 0, nkept = 0;
	sqlite3_stmt *st;
	int r;

	r = store_gids_get(s, iface_id, cur, STORE_MAX_GIDS, &ncur);
	if (r < 0)
		return r;
	/* First free the indexes of GIDs that went away … */
	for (size_t i = 0; i < ncur; i++) {
		if (gid_in(&cur[i].gid, gids, n)) {
			kept[nkept++] = cur[i].gid;
			if (cur[i].index < STORE_MAX_GIDS)
				used[cur[i].index] = true;
			continue;
		}
		if (!(st = store_stmt(s, STMT_GID_DELETE, &r)))
			return r;
		sqlite3_bind_int64(st, 1, iface_id);
		sqlite3_bind_int64(st, 2, cur[i].index);
		if ((r = store_step_done(s, st, "updating the GID table")) < 0)
			return r;
	}
	/* … then give each new one the lowest free index.  At most n ≤ 64
	 * GIDs are in use, so a free index below 64 always exists. */
	for (size_t i = 0; i < n; i++) {
		uint32_t idx = 0;

		if (gid_in(&gids[i], kept, nkept))
			continue;     /* kept, or a duplicate in gids */
		while (used[idx])
			idx++;
		used[idx] = true;
		kept[nkept++] = gids[i];
		if (!(st = store_stmt(s, STMT_GID_INSERT, &r)))
			return r;
		sqlite3_bind_int64(st, 1, iface_id);
		sqlite3_bind_int64(st, 2, idx);
		sqlite3_bind_blob(st, 3, gids[i].raw, sizeof(gids[i].raw), SQLITE_STATIC);
		if ((r = store_step_done(s, st, "updating the GID table")) < 0)
			return r;
	}
	return 0;
}

int store_gids_update(struct store *s, int64_t iface_id, const union efi_gid *gids, size_t n)
{
	struct store_op op;
	int r;

	if (n > STORE_MAX_GIDS)
		return store_set_error(s, -E2BIG, "%zu GIDs, but an interface has at most %d", n,
				       STORE_MAX_GIDS);
	if (n && !gids)
		return store_set_error(s, -EINVAL, "store_gids_update: no GIDs given");
	r = store_op_begin(s, &op, "updating the GID table");
	if (r < 0)
		return r;
	r = iface_exists(s, iface_id);
	if (r == 0)
		r = gids_replace(s, iface_id, gids, n);
	return store_op_end(s, &op, r);
}

int store_gids_get(struct store *s, int64_t iface_id, struct store_gid *out, size_t max,
		   size_t *n)
{
	sqlite3_stmt *st;
	int r = 0, rc;

	*n = 0;
	if (!(st = store_stmt(s, STMT_GID_LIST, &r)))
		return r;
	sqlite3_bind_int64(st, 1, iface_id);
	while (*n < max && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (sqlite3_column_bytes(st, 1) != sizeof(out->gid.raw)) {
			sqlite3_reset(st);
			return store_corrupt_error(s, "reading GIDs", "a GID is not 16 bytes");
		}
		out[*n].index = (uint32_t)sqlite3_column_int64(st, 0);
		memcpy(out[*n].gid.raw, sqlite3_column_blob(st, 1), sizeof(out->gid.raw));
		(*n)++;
	}
	if (*n == max)
		rc = SQLITE_DONE;
	sqlite3_reset(st);
	return rc == SQLITE_DONE ? 0 : store_sqlite_error(s, rc, "reading GIDs");
}
