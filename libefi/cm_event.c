/* SPDX-License-Identifier: MIT */
/*
 * Connection-manager events: turning efid's event frames into struct
 * efi_cm_event and doing what each stands for, and efi_cm_get_event, which
 * hands out the events the context's watcher (cm_watch.c) queued on an id.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cm_int.h"
#include "cmwire.h"
#include "efi_int.h"


static const struct ctl_policy event_policy[EFI_A_MAX] = {
	[EFI_A_CM_EVENT] = { .kind = CTL_U32 },
	[EFI_A_CM_ID] = { .kind = CTL_U64 },
	[EFI_A_CM_SERVICE] = { .kind = CTL_U32 },
	[EFI_A_CM_QPN] = { .kind = CTL_U32 },
	[EFI_A_CM_PSN] = { .kind = CTL_U32 },
	[EFI_A_CM_MTU] = { .kind = CTL_U32 },
	[EFI_A_CM_LINK_MTU] = { .kind = CTL_U32 },
	[EFI_A_CM_KEY] = { .kind = CTL_U32 },
	[EFI_A_CM_SGID] = { .kind = CTL_BIN, .minlen = 16, .maxlen = 16 },
	[EFI_A_CM_DEST] = { .kind = CTL_BIN, .minlen = 16, .maxlen = 16 },
	[EFI_A_CM_REASON] = { .kind = CTL_U32 },
	[EFI_A_CM_TIMEOUT] = { .kind = CTL_U32 },
	[EFI_A_CM_PEER_GID] = { .kind = CTL_BIN, .multi = true, .minlen = 16, .maxlen = 16 },
	[EFI_A_CM_PRIVATE] = { .kind = CTL_BIN, .minlen = 0, .maxlen = EFI_CM_PRIVATE_MAX },
};

static uint32_t u32_of(const struct ctl_attr *tb, uint16_t a)
{
	uint32_t v = 0;
	if (ctl_has(tb, a))
		ctl_attr_u32(&tb[a], &v);
	return v;
}

/* The peer's QP as an event names it (REQUEST and REPLY carry it). */
static int take_peer(struct efi_cm_id *id, const struct ctl_attr *tb)
{
	if (!ctl_has(tb, EFI_A_CM_QPN) || !ctl_has(tb, EFI_A_CM_PSN) ||
	    !ctl_has(tb, EFI_A_CM_MTU) || !ctl_has(tb, EFI_A_CM_SGID))
		return EPROTO;
	id->peer_qpn = u32_of(tb, EFI_A_CM_QPN);
	id->peer_psn = u32_of(tb, EFI_A_CM_PSN);
	id->peer_mtu = u32_of(tb, EFI_A_CM_MTU);
	/* 0 from an older peer (or efid): each side fills its own link */
	id->peer_link_mtu = u32_of(tb, EFI_A_CM_LINK_MTU);
	if (id->peer_qpn == 0 || id->peer_qpn > 0xffffffu || id->peer_psn > 0xffffffu ||
	    id->peer_mtu < EFI_MTU_256 || id->peer_mtu > EFI_MTU_4096 ||
	    (id->peer_link_mtu && (id->peer_link_mtu < CM_WIRE_MIN_LINK_MTU ||
				   id->peer_link_mtu > CM_WIRE_MAX_LINK_MTU)))
		return EPROTO;
	memcpy(id->peer_gid.raw, tb[EFI_A_CM_SGID].data, 16);
	return 0;
}

/* The active side's REPLY: the QP to RTS, then tell efid (the RTU). */
/* The client's QP to RTS, then READY (efid sends the RTU) without
 * waiting for efid's answer: ESTABLISHED goes to the application at once.
 * Waiting made every connect pay one more round trip through a busy efid
 * on its critical path, and the context's one watcher could serve no other
 * connection meanwhile (issue 18: the set-up median with parallel clients).
 * The answer comes later on the channel (ready_pending, in order: the only
 * other request on it, efi_disconnect's, is sent under id->lock and after
 * this one unless disconnected was set first, and then READY is not sent);
 * a refusal becomes DISCONNECTED (ready_refused). */
static int on_reply(struct efi_cm_id *id, const struct ctl_attr *tb)
{
	uint32_t key = u32_of(tb, EFI_A_CM_KEY);
	int r = take_peer(id, tb);
	if (r == 0 && key == 0)
		r = EPROTO;
	if (r == 0)
		r = efi_cm_qp_to_rts(id, key);
	if (r == 0) {
		struct ctl_buf b;
		efi_cm_begin(&b, EFI_CTL_CM_READY);
		r = -ctl_msg_end(&b);
		pthread_mutex_lock(&id->lock);
		if (r == 0 && !atomic_load(&id->disconnected)) {
			r = -ctl_client_send(id->ctl, &b);
			id->ready_pending = r == 0;
		}
		pthread_mutex_unlock(&id->lock);
		ctl_buf_free(&b);
	}
	return r;
}

/* A reply frame on a connection: READY's, when one is pending.  True when
 * efid refused it (the record was no longer waiting for READY: its deadline
 * passed, or the peer went and DISCONNECTED follows anyway). */
static bool ready_refused(struct efi_cm_id *id, const struct ctl_reply *f)
{
	static const struct ctl_policy pol[EFI_A_ERROR + 1] = {
		[EFI_A_STATUS] = { .kind = CTL_I32 },
		[EFI_A_ERROR] = { .kind = CTL_STR, .maxlen = 4096 },
	};
	struct ctl_attr tb[EFI_A_ERROR + 1];
	int32_t status = 0;
	if (f->hdr.type != EFI_CTL_REPLY || !id->ready_pending)
		return false;
	id->ready_pending = false;
	if (ctl_parse(f->payload, f->payload_len, pol, EFI_A_ERROR + 1, tb, NULL) ||
	    !ctl_has(tb, EFI_A_STATUS))
		return true; /* not an answer we can read: not a yes */
	ctl_attr_i32(&tb[EFI_A_STATUS], &status);
	return status != 0;
}

/* Gives up a connection from this side: the peer is told DISCONNECTED. */
static void give_up(struct efi_cm_id *id)
{
	id->closed = true;
	if (atomic_exchange(&id->disconnected, true))
		return;
	efi_cm_send_disconnect(id);
}

int efi_cm_take_event(struct efi_cm_id *id, const struct ctl_reply *f, struct efi_cm_event *ev)
{
	struct ctl_attr tb[EFI_A_MAX];
	if (f->hdr.type != EFI_CTL_CM_EVENT) {
		if (!ready_refused(id, f) || id->closed)
			return EAGAIN; /* an answer nobody waits for */
		/* ESTABLISHED went out already: the connection ends (the
		 * caller moves the QP to ERR) */
		give_up(id);
		memset(ev, 0, sizeof(*ev));
		ev->id = id;
		ev->event = EFI_CM_EVENT_DISCONNECTED;
		return 0;
	}
	if (ctl_parse(f->payload, f->payload_len, event_policy, EFI_A_MAX, tb, NULL) < 0 ||
	    !ctl_has(tb, EFI_A_CM_EVENT))
		return EPROTO;
	memset(ev, 0, sizeof(*ev));
	ev->id = id;
	if (ctl_has(tb, EFI_A_CM_PRIVATE)) {
		ev->private_data_len = (uint8_t)tb[EFI_A_CM_PRIVATE].len;
		memcpy(ev->private_data, tb[EFI_A_CM_PRIVATE].data, ev->private_data_len);
	}
	switch (u32_of(tb, EFI_A_CM_EVENT)) {
	case EFI_CM_EV_REQUEST: {
		if (id->kind != ID_LISTENER || !ctl_has(tb, EFI_A_CM_ID) || !ctl_has(tb, EFI_A_CM_DEST))
			return EPROTO;
		struct efi_cm_id *req = efi_cm_id_new(ID_REQUEST, id->context, false);
		if (!req)
			return ENOMEM;
		if (take_peer(req, tb)) {
			efi_cm_id_free(req);
			return EPROTO;
		}
		ctl_attr_u64(&tb[EFI_A_CM_ID], &req->handle);
		memcpy(req->local_gid.raw, tb[EFI_A_CM_DEST].data, 16);
		req->service = id->service;
		ev->event = EFI_CM_EVENT_CONNECT_REQUEST;
		ev->request = req;
		ev->service = req->service;
		ev->peer_gid = req->peer_gid;
		ev->peer_qp_num = req->peer_qpn;
		return 0;
	}
	case EFI_CM_EV_REPLY:
		if (id->kind != ID_CONNECTION || !id->active || id->connected || id->closed)
			return EPROTO;
		if (on_reply(id, tb) != 0) {
			/* could not follow: give the connection up (the peer
			 * is told DISCONNECTED) */
			efi_cm_qp_to_error(id);
			give_up(id);
			ev->event = EFI_CM_EVENT_REJECTED;
			ev->reject_reason = EFI_CM_REJECT_INVALID;
			return 0;
		}
		id->connected = true;
		__attribute__((fallthrough)); /* established */
	case EFI_CM_EV_ESTABLISHED:
		ev->event = EFI_CM_EVENT_ESTABLISHED;
		ev->peer_gid = id->peer_gid;
		ev->peer_qp_num = id->peer_qpn;
		return 0;
	case EFI_CM_EV_REJECTED:
		ev->event = EFI_CM_EVENT_REJECTED;
		ev->reject_reason = (int)u32_of(tb, EFI_A_CM_REASON);
		id->closed = true;
		return 0;
	case EFI_CM_EV_UNREACHABLE:
		ev->event = EFI_CM_EVENT_UNREACHABLE;
		id->closed = true;
		return 0;
	case EFI_CM_EV_TIMEOUT:
		ev->event = EFI_CM_EVENT_TIMEOUT;
		id->closed = true;
		return 0;
	case EFI_CM_EV_DISCONNECTED:
		ev->event = EFI_CM_EVENT_DISCONNECTED;
		ev->reject_reason = (int)u32_of(tb, EFI_A_CM_REASON); /* 0 or DETACHED */
		/* the QP to ERR: the caller's, before it delivers ev */
		id->closed = true;
		return 0;
	default:
		return EAGAIN; /* an event this libefi does not know */
	}
}

/* ---- efi_cm_get_event --------------------------------------------------- */

static int wait_ms_left(uint64_t deadline, int timeout_ms)
{
	if (timeout_ms < 0)
		return -1;
	uint64_t now = efi_now_ns();
	return now >= deadline ? 0 : (int)((deadline - now + 999999) / 1000000);
}

/* What the context's watcher queued for the id (cm_watch.c). */
static int connection_event(struct efi_cm_id *id, struct efi_cm_event *event, int timeout_ms)
{
	struct pollfd pfd = { .fd = id->ready_fd, .events = POLLIN };
	uint64_t deadline = efi_now_ns() + (uint64_t)(timeout_ms < 0 ? 0 : timeout_ms) * 1000000ull;
	uint64_t count;
	for (;;) {
		/* semaphore eventfd: one read takes one event's count */
		if (read(id->ready_fd, &count, sizeof(count)) == (ssize_t)sizeof(count))
			break;
		if (errno != EAGAIN && errno != EINTR)
			return errno;
		int n = poll(&pfd, 1, wait_ms_left(deadline, timeout_ms));
		if (n == 0)
			return EAGAIN;
		if (n < 0 && errno != EINTR)
			return errno;
	}
	pthread_mutex_lock(&id->lock);
	struct queued_event *q = id->events;
	if (q) {
		id->events = q->next;
		if (!id->events)
			id->events_tail = NULL;
	}
	pthread_mutex_unlock(&id->lock);
	if (!q)
		return EPROTO; /* cannot happen: one count per queued event */
	int r = q->err;
	if (!r)
		*event = q->ev;
	free(q);
	return r;
}

int efi_cm_get_event(struct efi_cm_id *id, struct efi_cm_event *event, int timeout_ms)
{
	if (!id || !event || id->kind == ID_REQUEST)
		return EINVAL;
	if (!id->watching)
		return ECONNRESET;
	return connection_event(id, event, timeout_ms);
}
