/* SPDX-License-Identifier: MIT */
/* The connection manager's client side, internals shared by cm.c (the calls),
 * cm_event.c (events) and cm_watch.c (the context's watcher thread).  Not
 * exported. */
#ifndef EFI_LIBEFI_CM_INT_H
#define EFI_LIBEFI_CM_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <efi/efi_cm.h>

#include "ctlclient.h"

enum cm_id_kind { ID_LISTENER, ID_REQUEST, ID_CONNECTION };

struct queued_frame {
	struct queued_frame *next;
	struct ctl_reply frame;
};

struct queued_event {
	struct queued_event *next;
	int err;			/* the channel failed (efid went away): no event */
	struct efi_cm_event ev;
};

struct efi_cm_id {
	enum cm_id_kind kind;
	bool active;
	bool connected;			/* RTS reached (watcher only) */
	bool closed;			/* the peer is gone (watcher only) */
	_Atomic bool disconnected;	/* efi_disconnect ran */
	bool answered;			/* a request: accepted or rejected */
	bool ready_pending;		/* READY sent, its answer not read (watcher) */
	struct efi_context *context;
	struct efi_qp *qp;
	struct ctl_client *ctl;		/* NULL for a request not yet accepted */
	struct queued_frame *queue, *queue_tail; /* events that came with a reply */
	/* the peer, and what this side offered */
	uint64_t handle;		/* a request's id at efid; an active connection's tid */
	uint32_t service;
	uint32_t backlog;		/* a listener's */
	uint32_t peer_qpn, peer_psn, peer_mtu;
	uint32_t peer_link_mtu;		/* its interface's MTU; 0: not said (older) */
	union efi_gid peer_gid;		/* the peer QP's GID */
	union efi_gid local_gid;	/* this side's */
	uint32_t psn;
	/* Connections: the context's watcher (cm_watch.c) reads the control
	 * connection, does what each event stands for (QP to RTS, QP to ERR)
	 * the moment it arrives, and queues the event for the application,
	 * whose channel is ready_fd.  Without it a peer's death would reach the
	 * QP only when the application looked at its channel. */
	bool watching;			/* registered with the context's watcher */
	bool dead;			/* the channel failed (watcher only) */
	uint64_t token;			/* the watcher's slot and generation */
	bool in_batch;			/* its DISCONNECTED waits for the batch's QP
					 * work (under the watcher's lock) */
	int ready_fd;			/* eventfd (semaphore): one count per queued event */
	pthread_mutex_t lock;		/* the event queue, and sending on ctl */
	struct queued_event *events, *events_tail;
};

/* cm.c */
int efi_cm_call(struct efi_cm_id *id, struct ctl_buf *req, struct ctl_reply *rep);
void efi_cm_begin(struct ctl_buf *b, uint16_t type);
/* ctl_client_call_ex's handler for frames that arrive during a call: kept
 * on id's queue, in order, for the watcher (ud is the id). */
void efi_cm_queue_frame(void *ud, struct ctl_reply *frame);
/* Tells efid, without waiting for its answer, that id disconnects (the
 * watcher reads and drops the reply); takes id->lock. */
void efi_cm_send_disconnect(struct efi_cm_id *id);
struct efi_cm_id *efi_cm_id_new(enum cm_id_kind kind, struct efi_context *ctx, bool connect);
void efi_cm_id_free(struct efi_cm_id *id);
int efi_cm_qp_to_rts(struct efi_cm_id *id, uint32_t key);
void efi_cm_qp_to_error(struct efi_cm_id *id);
/* How long DISCONNECTEDs wait for the ACKs of sends their peers may have
 * taken (cm.c says why): one window of this length is shared by every
 * DISCONNECTED that comes within DISC_ACK_WINDOW_NS of its start
 * (cm_watch.c), so a peer with 1,000 connections that dies costs the
 * application 10 ms once, not per batch of DISCONNECTEDs. */
#define DISC_ACK_GRACE_NS (10ull * 1000000)
#define DISC_ACK_WINDOW_NS (1000ull * 1000000)
/* The QPs of n ids of ONE context to ERR with one transport run; while one
 * of them has a send without its ACK, until ack_deadline_ns at most. */
void efi_cm_qps_to_error(struct efi_cm_id *const *ids, size_t n, uint64_t ack_deadline_ns);
void efi_cm_bind_qp(struct efi_cm_id *id, struct efi_qp *qp);
void efi_cm_unbind_id(struct efi_cm_id *id);

/* cm_event.c */
/* Turns one frame into *ev, doing the QP work it stands for, except for
 * DISCONNECTED: its QP to ERR is the caller's (the watcher moves all QPs of
 * a batch of DISCONNECTEDs at once, efi_cm_qps_to_error).  Returns 0
 * (deliver ev), EAGAIN (nothing for the application), or an errno. */
int efi_cm_take_event(struct efi_cm_id *id, const struct ctl_reply *f, struct efi_cm_event *ev);

/* cm_watch.c */
/* Hands a connection to its context's watcher (started on first use) and
 * makes its channel (ready_fd).  Returns 0 or an errno. */
int efi_cm_watch(struct efi_cm_id *id);
/* Takes it back; the watcher no longer touches id when this returns (no-op
 * when not watched). */
void efi_cm_unwatch(struct efi_cm_id *id);

/* cm_resume.c (the watcher's thread) */
/* Whether efid keeps id across its restarts: a listener, an established
 * connection not ended from this side. */
bool efi_cm_resumable(const struct efi_cm_id *id);
/* One attempt to take id up again at a restarted efid; on success id->ctl
 * is the new control connection.  Returns 0, EAGAIN (no efid yet: try
 * again later), ENOTCONN (the peer disconnected meanwhile), or another
 * errno (efid does not know it: give up). */
int efi_cm_resume_try(struct efi_cm_id *id);

#endif
