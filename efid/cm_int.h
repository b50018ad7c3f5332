/* SPDX-License-Identifier: MIT */
/* Connection-manager internals shared by cm.c (the state machine between
 * efids), cm_requests.c (the applications' requests) and cm_index.c (the
 * records' hash indexes). */
#ifndef EFID_CM_INT_H
#define EFID_CM_INT_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "cm.h"
#include "ifacespec.h"

struct client;
#include <systemd/sd-event.h>

#define RTO_FIRST_USEC (50ull * 1000)
#define RTO_MAX_USEC (800ull * 1000)
#define TICK_USEC (10ull * 1000)
#define DREQ_LINGER_USEC (2ull * 1000000)
/* A DREQ is resent until the peer answers (DREP, or its own DREQ), with
 * the interval doubling up to DREQ_RTO_MAX_USEC, for at most
 * DREQ_GIVEUP_USEC: a peer efid stalled or restarting for longer than the
 * first 2 s still hears of the disconnect (issue 18), and a peer host that
 * is gone costs ~45 datagrams a connection before it is given up. */
#define DREQ_RTO_MAX_USEC (1600ull * 1000)
#define DREQ_GIVEUP_USEC (60ull * 1000000)
#define TOMBSTONE_MAX_USEC (5ull * 1000000)
#define DEFAULT_TIMEOUT_MS 5000u
#define MAX_BACKLOG 4096u
#define MAX_CONNS 65536u

/* A multi-valued hash map from a 64-bit key to records (cm_index.c). */
struct cm_map_node {
	struct cm_map_node *next;
	uint64_t key;
	void *val;
};
struct cm_map {
	struct cm_map_node **b;
	unsigned nb, n;		/* buckets (a power of two), entries */
};

struct cm_listener {
	struct cm_listener *next;
	struct client *client;
	char instance[EFI_INSTANCE_MAX + 1];
	char ifname[EFI_IFNAME_MAX + 1];
	uint32_t service;
	unsigned backlog, pending;
	pid_t pid;                   /* the process listening */
	bool orphan;                 /* loaded after a restart, not taken up yet (no client) */
};

enum conn_state {
	CS_REQ_SENT,    /* active: REQ out, nothing back yet */
	CS_ACKED,       /* active: the remote efid gave it to a listener */
	CS_REP_RCVD,    /* active: REP handed to the application, waiting READY */
	CS_PENDING,     /* passive: with the listener, waiting accept or reject */
	CS_REP_SENT,    /* passive: accepted, REP out, waiting RTU */
	CS_ESTABLISHED,
	CS_CLOSING,     /* DREQ out, waiting DREP; no client any more */
	CS_DEAD,        /* answered for a while (duplicate REQs), then forgotten */
};

struct cm_conn {
	struct cm_conn *next, *prev;
	struct cm_conn *tnext, *tprev; /* on cm->timed (resending or with a deadline) */
	bool timed;
	uint64_t tid;
	uint64_t handle;             /* passive: what the listener names it by */
	bool active;
	enum conn_state state;
	struct client *client;       /* the connection's channel, NULL if none (yet) */
	struct cm_listener *listener; /* passive, CS_PENDING */
	char instance[EFI_INSTANCE_MAX + 1];
	char ifname[EFI_IFNAME_MAX + 1];
	struct sockaddr_in6 peer;    /* the other efid (port ignored) */
	struct cm_wire_msg out;      /* the message resent until answered */
	bool resending;
	uint64_t next_send, rto;
	uint64_t deadline;           /* 0: none */
	uint32_t timeout_ms;
	struct cm_wire_msg req;      /* passive: the request, for the REQUEST event */
	/* what efictl status shows (cm_status.c) */
	uint32_t local_qpn, peer_qpn; /* 0 until known */
	union efi_gid peer_gid;      /* the GID the peer's QP sends from (or was connected to) */
	pid_t pid;                   /* the process that made or accepted it */
	bool persisted;              /* in the store, or queued for it (cm_persist.c) */
	struct cm_persist_op *pending_op; /* its record, queued, not written yet */
	bool orphan;                 /* loaded after a restart, not taken up yet */
	bool peer_gone;              /* an orphan whose peer disconnected meanwhile */
};

struct cm {
	struct efid *d;
	struct cm_listener *listeners;
	struct cm_conn *conns;
	unsigned nlisteners, nconns;
	/* indexes (cm_index.c): connections by tid, by handle and by client,
	 * listeners by client; and the connections the tick must look at */
	struct cm_map by_tid, by_handle, by_client, listener_by_client;
	struct cm_conn *timed;
	/* cm_persist.c: records waiting to be written, the timer that writes
	 * them, the end of the time given to take records up after a restart */
	struct cm_persist_op *persist_head, *persist_tail;
	uint64_t persist_since;		/* when the oldest queued record came */
	sd_event_source *persist_timer, *grace_timer;
	bool no_persist;
	struct cm_sock *socks;
	sd_event_source *tick;       /* on while a connection waits for something */
	sd_event_source *sync_timer;
	bool shutting_down;          /* cm_shutdown ran: clients go without telling peers */
};


/* cm_index.c */
int cm_map_put(struct cm_map *m, uint64_t key, void *val);	/* 0 or -ENOMEM */
void cm_map_del(struct cm_map *m, uint64_t key, const void *val);
struct cm_map_node *cm_map_first(const struct cm_map *m, uint64_t key); /* NULL: none */
struct cm_map_node *cm_map_next(const struct cm_map_node *n);	/* same key, or NULL */
void cm_map_free(struct cm_map *m);
/* Changing a record's client or handle keeps its index right: use these,
 * never assign.  0 or -ENOMEM (nothing changed); NULL clients never fail. */
int cm_conn_set_client(struct cm *cm, struct cm_conn *c, struct client *cl);
int cm_conn_set_handle(struct cm *cm, struct cm_conn *c, uint64_t handle);
void cm_conn_unindex(struct cm *cm, struct cm_conn *c);
struct cm_conn *cm_conn_by_handle(struct cm *cm, uint64_t handle);
struct cm_conn *cm_conn_of_client(struct cm *cm, const struct client *cl);
int cm_listener_index(struct cm *cm, struct cm_listener *l);	/* by l->client */
void cm_listener_unindex(struct cm *cm, struct cm_listener *l);
struct cm_listener *cm_listener_of_client(struct cm *cm, const struct client *cl);
void cm_timed_add(struct cm *cm, struct cm_conn *c);
void cm_timed_del(struct cm *cm, struct cm_conn *c);

/* cm_persist.c */
/* Loads what a previous efid stored (as orphans) and sets up the writer.
 * 0 or -errno (a store that cannot be read is logged, not an error). */
int cm_persist_start(struct efid *d);
/* Writes what is queued; nothing is queued after (efid is stopping). */
void cm_persist_stop(struct efid *d);
void cm_persist_flush(struct efid *d);
/* Queues l (keep) or its removal.  Listeners: on listen and when they go. */
void cm_persist_listener(struct efid *d, const struct cm_listener *l, bool keep);
/* Queues c (keep: it is established) or its removal; no-op when already so. */
void cm_persist_conn(struct efid *d, struct cm_conn *c, bool keep);

/* cm.c */
/* A record, indexed by tid.  NULL when out of memory or at MAX_CONNS. */
struct cm_conn *cm_conn_new(struct efid *d, bool active, const char *instance, uint64_t tid);
void cm_conn_unlink(struct cm *cm, struct cm_conn *c);
void cm_conn_send(struct efid *d, struct cm_conn *c, const struct cm_wire_msg *m, bool resend);
void cm_conn_bury(struct efid *d, struct cm_conn *c, uint64_t linger_usec);
void cm_conn_release(struct efid *d, struct cm_conn *c);
void cm_set_deadline(struct efid *d, struct cm_conn *c, uint64_t usec);
uint64_t cm_tombstone_usec(const struct cm_conn *c);
uint64_t cm_random_u64(void);
struct cm_listener *cm_listener_find(struct efid *d, const char *instance, const char *ifname,
				     uint32_t service);
struct cm_listener *cm_listener_of(struct efid *d, const struct client *c);
struct cm_conn *cm_conn_of(struct efid *d, const struct client *c);

/* The interface of an instance that has a GID, with its path set. */
struct gid_lookup {
	struct efid *d;
	const union efi_gid *gid;
	char ifname[EFI_IFNAME_MAX + 1];
	unsigned ngids;
	union efi_gid gids[CM_WIRE_MAX_GIDS];
	bool found;
};
bool cm_local_gid(struct efid *d, const char *instance, const union efi_gid *gid,
		  struct gid_lookup *out);
/* An interface by name, with its path set (g.gid unset). */
bool cm_local_iface(struct efid *d, const char *instance, const char *ifname,
		    struct gid_lookup *out);

#endif
