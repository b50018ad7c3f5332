/* SPDX-License-Identifier: MIT */
/*
 * The connection manager's tables (store_cm.h; schema 4 in
 * store_migrations.c).  tids and handles are 64 random bits; SQLite keeps
 * them as the signed integer of the same bits.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "store_cm.h"
#include "store_internal.h"

static sqlite3_stmt *prepare(struct store *s, const char *sql, int *err)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
	if (rc != SQLITE_OK) {
		*err = store_sqlite_error(s, rc, "preparing a connection-manager statement");
		return NULL;
	}
	return st;
}

static int step_done(struct store *s, sqlite3_stmt *st, const char *what)
{
	int rc = sqlite3_step(st);
	int r = rc == SQLITE_DONE ? 0 : store_sqlite_error(s, rc, what);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return r;
}

enum { ST_LISTENER_PUT, ST_LISTENER_DEL, ST_CONN_PUT, ST_CONN_DEL };

static const char *const batch_sql[4] = {
	[ST_LISTENER_PUT] = "INSERT OR REPLACE INTO cm_listeners(instance, ifname, service, backlog, pid) "
			    "VALUES (?1, ?2, ?3, ?4, ?5)",
	[ST_LISTENER_DEL] = "DELETE FROM cm_listeners WHERE instance = ?1 AND ifname = ?2 AND service = ?3",
	[ST_CONN_PUT] = "INSERT OR REPLACE INTO cm_connections(instance, tid, active, handle, ifname, peer, "
			"peer_gid, local_qpn, peer_qpn, pid) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
	[ST_CONN_DEL] = "DELETE FROM cm_connections WHERE instance = ?1 AND tid = ?2 AND active = ?3",
};

void store_cm_batch_begin(struct store_cm_batch *b, struct store *s)
{
	memset(b, 0, sizeof(*b));
	b->s = s;
}

void store_cm_batch_end(struct store_cm_batch *b)
{
	for (int i = 0; i < 4; i++)
		sqlite3_finalize(b->st[i]);
	memset(b->st, 0, sizeof(b->st));
}

static sqlite3_stmt *batch_stmt(struct store_cm_batch *b, int which, int *err)
{
	if (!b->st[which])
		b->st[which] = prepare(b->s, batch_sql[which], err);
	return b->st[which];
}

int store_cm_listener_put(struct store_cm_batch *b, const struct store_cm_listener *l)
{
	struct store *s = b->s;
	int r = 0;
	sqlite3_stmt *st = batch_stmt(b, ST_LISTENER_PUT, &r);
	if (!st)
		return r;
	sqlite3_bind_text(st, 1, l->instance, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, l->ifname, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, l->service);
	sqlite3_bind_int64(st, 4, l->backlog);
	sqlite3_bind_int64(st, 5, l->pid);
	return step_done(s, st, "recording a listener");
}

int store_cm_listener_del(struct store_cm_batch *b, const char *instance, const char *ifname,
			  uint32_t service)
{
	struct store *s = b->s;
	int r = 0;
	sqlite3_stmt *st = batch_stmt(b, ST_LISTENER_DEL, &r);
	if (!st)
		return r;
	sqlite3_bind_text(st, 1, instance, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, ifname, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, service);
	return step_done(s, st, "forgetting a listener");
}

int store_cm_conn_put(struct store_cm_batch *b, const struct store_cm_conn *c)
{
	struct store *s = b->s;
	int r = 0;
	sqlite3_stmt *st = batch_stmt(b, ST_CONN_PUT, &r);
	if (!st)
		return r;
	sqlite3_bind_text(st, 1, c->instance, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)c->tid);
	sqlite3_bind_int(st, 3, c->active);
	sqlite3_bind_int64(st, 4, (sqlite3_int64)c->handle);
	sqlite3_bind_text(st, 5, c->ifname, -1, SQLITE_STATIC);
	sqlite3_bind_blob(st, 6, c->peer, 16, SQLITE_STATIC);
	sqlite3_bind_blob(st, 7, c->peer_gid.raw, 16, SQLITE_STATIC);
	sqlite3_bind_int64(st, 8, c->local_qpn);
	sqlite3_bind_int64(st, 9, c->peer_qpn);
	sqlite3_bind_int64(st, 10, c->pid);
	return step_done(s, st, "recording a connection");
}

int store_cm_conn_del(struct store_cm_batch *b, const char *instance, uint64_t tid, bool active)
{
	struct store *s = b->s;
	int r = 0;
	sqlite3_stmt *st = batch_stmt(b, ST_CONN_DEL, &r);
	if (!st)
		return r;
	sqlite3_bind_text(st, 1, instance, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)tid);
	sqlite3_bind_int(st, 3, active);
	return step_done(s, st, "forgetting a connection");
}

/* Copies a text column into dst[size]; false when absent or too long. */
static bool text_col(sqlite3_stmt *st, int col, char *dst, size_t size)
{
	const unsigned char *t = sqlite3_column_text(st, col);
	if (!t || strlen((const char *)t) >= size || !t[0])
		return false;
	snprintf(dst, size, "%s", (const char *)t);
	return true;
}

static bool blob16(sqlite3_stmt *st, int col, uint8_t *dst)
{
	if (sqlite3_column_bytes(st, col) != 16)
		return false;
	memcpy(dst, sqlite3_column_blob(st, col), 16);
	return true;
}

int store_cm_load(struct store *s, void (*listener)(const struct store_cm_listener *, void *),
		  void (*conn)(const struct store_cm_conn *, void *), void *ud)
{
	int r = 0, rc;
	sqlite3_stmt *st = prepare(s,
		"SELECT instance, ifname, service, backlog, pid FROM cm_listeners", &r);
	if (!st)
		return r;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct store_cm_listener l = { 0 };
		sqlite3_int64 svc = sqlite3_column_int64(st, 2), bl = sqlite3_column_int64(st, 3);
		if (!text_col(st, 0, l.instance, sizeof(l.instance)) ||
		    !text_col(st, 1, l.ifname, sizeof(l.ifname)) || svc < 1 || svc > 65535 ||
		    bl < 1 || bl > 4096)
			continue;
		l.service = (uint32_t)svc;
		l.backlog = (uint32_t)bl;
		l.pid = (pid_t)sqlite3_column_int64(st, 4);
		if (listener)
			listener(&l, ud);
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return store_sqlite_error(s, rc, "reading the listeners");
	st = prepare(s,
		"SELECT instance, tid, active, handle, ifname, peer, peer_gid, local_qpn, peer_qpn, pid "
		"FROM cm_connections", &r);
	if (!st)
		return r;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct store_cm_conn c = { 0 };
		sqlite3_int64 lq = sqlite3_column_int64(st, 7), pq = sqlite3_column_int64(st, 8);
		if (!text_col(st, 0, c.instance, sizeof(c.instance)) ||
		    !text_col(st, 4, c.ifname, sizeof(c.ifname)) || !blob16(st, 5, c.peer) ||
		    !blob16(st, 6, c.peer_gid.raw) || lq < 1 || lq > 0xffffff || pq < 1 ||
		    pq > 0xffffff)
			continue;
		c.tid = (uint64_t)sqlite3_column_int64(st, 1);
		c.active = sqlite3_column_int(st, 2) != 0;
		c.handle = (uint64_t)sqlite3_column_int64(st, 3);
		c.local_qpn = (uint32_t)lq;
		c.peer_qpn = (uint32_t)pq;
		c.pid = (pid_t)sqlite3_column_int64(st, 9);
		if (c.tid && conn)
			conn(&c, ud);
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : store_sqlite_error(s, rc, "reading the connections");
}
