/* SPDX-License-Identifier: MIT */
/*
 * Hash indexes of the connection manager's records (issue 18): a datagram
 * finds its connection by tid, an accept or reject its request by handle,
 * a control request its listener or connection by client, in O(1) — the
 * records used to be one list scanned per datagram and per request.  The
 * maps are multi-valued (one efid serving both instances of a connection
 * holds an active and a passive record with the same tid): callers walk
 * the entries of a key and check the rest.  The list in struct cm stays,
 * for what really visits everything (status, an interface going away).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "cm_int.h"

#define MAP_FIRST_BUCKETS 64u

static unsigned bucket(const struct cm_map *m, uint64_t key)
{
	/* tids and handles are random, clients are pointers: mix anyway */
	key ^= key >> 33;
	key *= 0xff51afd7ed558ccdull;
	key ^= key >> 33;
	return (unsigned)(key & (m->nb - 1));
}

static int grow(struct cm_map *m)
{
	unsigned nb = m->nb ? m->nb * 2 : MAP_FIRST_BUCKETS;
	struct cm_map_node **b = calloc(nb, sizeof(*b));
	if (!b)
		return -ENOMEM;
	struct cm_map old = *m;
	m->b = b;
	m->nb = nb;
	for (unsigned i = 0; i < old.nb; i++)
		for (struct cm_map_node *n = old.b[i], *next; n; n = next) {
			next = n->next;
			unsigned k = bucket(m, n->key);
			n->next = m->b[k];
			m->b[k] = n;
		}
	free(old.b);
	return 0;
}

int cm_map_put(struct cm_map *m, uint64_t key, void *val)
{
	if ((m->nb == 0 || m->n >= m->nb * 2) && grow(m) < 0 && m->nb == 0)
		return -ENOMEM; /* a failed grow of a non-empty map only lengthens chains */
	struct cm_map_node *n = malloc(sizeof(*n));
	if (!n)
		return -ENOMEM;
	unsigned k = bucket(m, key);
	n->key = key;
	n->val = val;
	n->next = m->b[k];
	m->b[k] = n;
	m->n++;
	return 0;
}

void cm_map_del(struct cm_map *m, uint64_t key, const void *val)
{
	if (!m->nb)
		return;
	for (struct cm_map_node **pp = &m->b[bucket(m, key)]; *pp; pp = &(*pp)->next) {
		struct cm_map_node *n = *pp;
		if (n->key == key && n->val == val) {
			*pp = n->next;
			free(n);
			m->n--;
			return;
		}
	}
}

struct cm_map_node *cm_map_first(const struct cm_map *m, uint64_t key)
{
	if (!m->nb)
		return NULL;
	struct cm_map_node *n = m->b[bucket(m, key)];
	while (n && n->key != key)
		n = n->next;
	return n;
}

struct cm_map_node *cm_map_next(const struct cm_map_node *n)
{
	uint64_t key = n->key;
	for (n = n->next; n && n->key != key; n = n->next)
		;
	return (struct cm_map_node *)n;
}

void cm_map_free(struct cm_map *m)
{
	for (unsigned i = 0; i < m->nb; i++)
		for (struct cm_map_node *n = m->b[i], *next; n; n = next) {
			next = n->next;
			free(n);
		}
	free(m->b);
	*m = (struct cm_map){ 0 };
}

/* ---- the records' keys ----------------------------------------------- */

static uint64_t client_key(const struct client *cl)
{
	return (uint64_t)(uintptr_t)cl;
}

int cm_conn_set_client(struct cm *cm, struct cm_conn *c, struct client *cl)
{
	if (c->client == cl)
		return 0;
	if (cl && cm_map_put(&cm->by_client, client_key(cl), c) < 0)
		return -ENOMEM;
	if (c->client)
		cm_map_del(&cm->by_client, client_key(c->client), c);
	c->client = cl;
	return 0;
}

int cm_conn_set_handle(struct cm *cm, struct cm_conn *c, uint64_t handle)
{
	if (cm_map_put(&cm->by_handle, handle, c) < 0)
		return -ENOMEM;
	if (c->handle)
		cm_map_del(&cm->by_handle, c->handle, c);
	c->handle = handle;
	return 0;
}

void cm_conn_unindex(struct cm *cm, struct cm_conn *c)
{
	cm_map_del(&cm->by_tid, c->tid, c);
	if (c->handle)
		cm_map_del(&cm->by_handle, c->handle, c);
	if (c->client)
		cm_map_del(&cm->by_client, client_key(c->client), c);
}

struct cm_conn *cm_conn_by_handle(struct cm *cm, uint64_t handle)
{
	for (struct cm_map_node *n = cm_map_first(&cm->by_handle, handle); n; n = cm_map_next(n))
		return n->val; /* random 64 bits: one record at most */
	return NULL;
}

struct cm_conn *cm_conn_of_client(struct cm *cm, const struct client *cl)
{
	struct cm_map_node *n = cm_map_first(&cm->by_client, client_key(cl));
	return n ? n->val : NULL;
}

int cm_listener_index(struct cm *cm, struct cm_listener *l)
{
	return cm_map_put(&cm->listener_by_client, client_key(l->client), l);
}

void cm_listener_unindex(struct cm *cm, struct cm_listener *l)
{
	if (l->client)
		cm_map_del(&cm->listener_by_client, client_key(l->client), l);
}

struct cm_listener *cm_listener_of_client(struct cm *cm, const struct client *cl)
{
	struct cm_map_node *n = cm_map_first(&cm->listener_by_client, client_key(cl));
	return n ? n->val : NULL;
}

/* ---- the records waiting for a time ------------------------------------ */

void cm_timed_add(struct cm *cm, struct cm_conn *c)
{
	if (c->timed)
		return;
	c->timed = true;
	c->tprev = NULL;
	c->tnext = cm->timed;
	if (cm->timed)
		cm->timed->tprev = c;
	cm->timed = c;
}

void cm_timed_del(struct cm *cm, struct cm_conn *c)
{
	if (!c->timed)
		return;
	if (c->tprev)
		c->tprev->tnext = c->tnext;
	else
		cm->timed = c->tnext;
	if (c->tnext)
		c->tnext->tprev = c->tprev;
	c->timed = false;
	c->tnext = c->tprev = NULL;
}
