/* SPDX-License-Identifier: MIT */
/*
 * The connection manager's client side (<efi/efi_cm.h>): each listener and
 * connection is a control connection of its own to efid, which pushes event
 * frames on it (docs/connection-manager.md).  The QP transitions are here
 * too, done with the public efi_modify_qp, so a connection ends up exactly
 * where a hand-made one would.
 */
#include "config.h"

#include <errno.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <efi/efi_cm.h>

#include "cm_int.h"
#include "ctlclient.h"
#include "efi_int.h"
#include "gid.h"

#define CM_CALL_TIMEOUT_MS 10000
#define CM_DEFAULT_TIMEOUT_MS 5000
/* QP attributes the connection manager chooses (efi-perf's defaults). */
#define CM_QP_TIMEOUT 14	/* 4.096 µs × 2^14 = 67 ms */
#define CM_QP_RETRY 7
#define CM_QP_RNR_RETRY 7
#define CM_QP_MIN_RNR_TIMER 12
#define CM_QP_ACCESS (EFI_ACCESS_LOCAL_WRITE | EFI_ACCESS_REMOTE_WRITE | \
		      EFI_ACCESS_REMOTE_READ | EFI_ACCESS_REMOTE_ATOMIC)

static int map_status(int32_t status)
{
	int e = -status;
	return e > 0 ? e : EPROTO;
}

static uint32_t random_psn(void)
{
	uint32_t v = 0;
	if (getrandom(&v, sizeof(v), 0) != sizeof(v))
		v = (uint32_t)efi_now_ns();
	return v & 0xffffffu;
}

/* ---- control connection ----------------------------------------------- */

void efi_cm_queue_frame(void *ud, struct ctl_reply *frame)
{
	struct efi_cm_id *id = ud;
	struct queued_frame *q = calloc(1, sizeof(*q));
	if (!q) {
		ctl_reply_free(frame);
		return;
	}
	q->frame = *frame;
	if (id->queue_tail)
		id->queue_tail->next = q;
	else
		id->queue = q;
	id->queue_tail = q;
}

/* One request on id's connection; events arriving meanwhile are queued.
 * Returns 0 (rep filled, status 0), or an errno. */
int efi_cm_call(struct efi_cm_id *id, struct ctl_buf *req, struct ctl_reply *rep)
{
	int r = ctl_msg_end(req);
	/* the lock: efi_disconnect may send from another thread meanwhile */
	pthread_mutex_lock(&id->lock);
	if (r == 0)
		r = ctl_client_call_ex(id->ctl, req, NULL, 0, rep, CM_CALL_TIMEOUT_MS, efi_cm_queue_frame, id);
	pthread_mutex_unlock(&id->lock);
	ctl_buf_free(req);
	if (r < 0)
		return r == -ENOENT ? ECONNREFUSED : -r;
	if (rep->status < 0) {
		r = map_status(rep->status);
		ctl_reply_free(rep);
		return r;
	}
	return 0;
}

void efi_cm_begin(struct ctl_buf *b, uint16_t type)
{
	ctl_buf_init(b);
	ctl_msg_begin(b, type, 0);
	ctl_put_str(b, EFI_A_CLIENT, "libefi-cm");
}

struct efi_cm_id * efi_cm_id_new(enum cm_id_kind kind, struct efi_context *ctx, bool connect)
{
	struct efi_cm_id *id = calloc(1, sizeof(*id));
	if (!id)
		return NULL;
	id->kind = kind;
	id->context = ctx;
	id->ready_fd = -1;
	pthread_mutex_init(&id->lock, NULL);
	if (connect) {
		int r = ctl_client_connect(NULL, &id->ctl);
		if (r < 0) {
			pthread_mutex_destroy(&id->lock);
			free(id);
			errno = r == -ENOENT ? ECONNREFUSED : -r;
			return NULL;
		}
	}
	return id;
}

void efi_cm_id_free(struct efi_cm_id *id)
{
	efi_cm_unwatch(id);
	efi_cm_unbind_id(id);
	while (id->events) {
		struct queued_event *q = id->events;
		id->events = q->next;
		/* a listener's request nobody took: rejected, as efid would
		 * once the listener is gone */
		if (!q->err && q->ev.event == EFI_CM_EVENT_CONNECT_REQUEST && q->ev.request)
			efi_cm_destroy_id(q->ev.request);
		free(q);
	}
	if (id->ready_fd >= 0)
		close(id->ready_fd);
	pthread_mutex_destroy(&id->lock);
	while (id->queue) {
		struct queued_frame *q = id->queue;
		id->queue = q->next;
		ctl_reply_free(&q->frame);
		free(q);
	}
	ctl_client_close(id->ctl);
	free(id);
}

/* ---- names ------------------------------------------------------------- */

static int parse_service(const char *service, uint32_t *out)
{
	if (!service || !*service)
		return EINVAL;
	char *end;
	unsigned long v = strtoul(service, &end, 10);
	if (!*end) {
		if (v == 0 || v > 65535)
			return EINVAL;
		*out = (uint32_t)v;
		return 0;
	}
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res = NULL;
	if (getaddrinfo("127.0.0.1", service, &hints, &res) != 0 || !res)
		return EINVAL;
	*out = ntohs(((struct sockaddr_in *)res->ai_addr)->sin_port);
	freeaddrinfo(res);
	return *out ? 0 : EINVAL;
}

static bool link_local(const union efi_gid *g)
{
	return g->raw[0] == 0xfe && (g->raw[1] & 0xc0) == 0x80;
}

/* The index of the GID to send to `like` from: the first of the same family
 * (IPv4-mapped or not), preferring one of the same scope (a link-local
 * source only for a link-local destination); or the index of exactly
 * `exact` when given.  -1 if none. */
static int gid_index(struct efi_context *ctx, const union efi_gid *like, const union efi_gid *exact)
{
	struct efi_port_attr pa;
	int fallback = -1;
	if (efi_query_port(ctx, 1, &pa) != 0)
		return -1;
	for (int i = 0; i < pa.gid_tbl_len; i++) {
		union efi_gid g;
		if (efi_query_gid(ctx, 1, i, &g) != 0)
			continue;
		if (exact) {
			if (memcmp(g.raw, exact->raw, 16) == 0)
				return i;
			continue;
		}
		if (efi_gid_is_v4mapped(&g) != efi_gid_is_v4mapped(like))
			continue;
		if (link_local(&g) == link_local(like))
			return i;
		if (fallback < 0)
			fallback = i;
	}
	return fallback;
}

/* Resolves host to a GID of a family the device has. */
static int resolve_host(struct efi_context *ctx, const char *host, union efi_gid *out)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_DGRAM };
	struct addrinfo *res = NULL;
	if (getaddrinfo(host, NULL, &hints, &res) != 0 || !res)
		return EHOSTUNREACH;
	int r = EHOSTUNREACH;
	for (struct addrinfo *a = res; a; a = a->ai_next) {
		union efi_gid g;
		int ok = a->ai_family == AF_INET
				 ? efi_gid_from_addr(AF_INET, &((struct sockaddr_in *)a->ai_addr)->sin_addr, &g)
				 : efi_gid_from_addr(AF_INET6, &((struct sockaddr_in6 *)a->ai_addr)->sin6_addr, &g);
		if (ok == 0 && gid_index(ctx, &g, NULL) >= 0) {
			*out = g;
			r = 0;
			break;
		}
	}
	freeaddrinfo(res);
	return r;
}

/* ---- QP transitions ---------------------------------------------------- */

static int qp_to_init(struct efi_qp *qp)
{
	if (qp->state == EFI_QPS_INIT)
		return 0;
	if (qp->state != EFI_QPS_RESET)
		return EINVAL;
	struct efi_qp_attr a = { .qp_state = EFI_QPS_INIT, .qp_access_flags = CM_QP_ACCESS,
				 .port_num = 1 };
	return efi_modify_qp(qp, &a, EFI_QP_STATE | EFI_QP_ACCESS_FLAGS | EFI_QP_PORT);
}

static enum efi_mtu port_mtu(struct efi_context *ctx)
{
	struct efi_port_attr pa;
	return efi_query_port(ctx, 1, &pa) == 0 ? pa.active_mtu : EFI_MTU_1024;
}

/* ---- the QP an id is bound to -------------------------------------------
 *
 * An application may destroy a connection's QP before its id (verbs
 * programs do: ibv_destroy_qp, then rdma_destroy_id) while the id's watcher
 * thread is about to move that QP to RTS or ERR.  id->qp and qp->cm_id are
 * therefore only read or written under bind_lock, and whoever is destroyed
 * first unbinds the pair.  Never taken while holding a ctx->lock
 * (efi_modify_qp takes ctx->lock under it).  CM events are rare: one lock for
 * all ids is enough. */
static pthread_mutex_t bind_lock = PTHREAD_MUTEX_INITIALIZER;

/* Takes bind_lock. */
void efi_cm_bind_qp(struct efi_cm_id *id, struct efi_qp *qp)
{
	pthread_mutex_lock(&bind_lock);
	id->qp = qp;
	if (qp)
		((struct efi_qp_int *)qp)->cm_id = id;
	pthread_mutex_unlock(&bind_lock);
}

/* Takes bind_lock. */
void efi_cm_unbind_id(struct efi_cm_id *id)
{
	pthread_mutex_lock(&bind_lock);
	if (id->qp && ((struct efi_qp_int *)id->qp)->cm_id == id)
		((struct efi_qp_int *)id->qp)->cm_id = NULL;
	id->qp = NULL;
	pthread_mutex_unlock(&bind_lock);
}

/* Takes bind_lock. */
void efi_cm_unbind_qp(struct efi_qp_int *qp)
{
	pthread_mutex_lock(&bind_lock);
	if (qp->cm_id && qp->cm_id->qp == &qp->pub)
		qp->cm_id->qp = NULL;
	qp->cm_id = NULL;
	pthread_mutex_unlock(&bind_lock);
}

static int qp_to_rts_locked(struct efi_cm_id *id, uint32_t key);

/* INIT → RTR → RTS toward id's peer, with the negotiated secret.  Takes
 * bind_lock; ENODEV when the QP was destroyed meanwhile. */
int efi_cm_qp_to_rts(struct efi_cm_id *id, uint32_t key)
{
	pthread_mutex_lock(&bind_lock);
	int r = id->qp ? qp_to_rts_locked(id, key) : ENODEV;
	pthread_mutex_unlock(&bind_lock);
	return r;
}

/* Caller holds bind_lock and id->qp is set. */
static int qp_to_rts_locked(struct efi_cm_id *id, uint32_t key)
{
	struct efi_qp *qp = id->qp;
	struct efi_device_attr da;
	int sgid = gid_index(id->context, NULL, &id->local_gid);
	if (sgid < 0 || efi_query_device(id->context, &da) != 0)
		return ENODEV;
	enum efi_mtu mtu = port_mtu(id->context);
	if ((uint32_t)mtu > id->peer_mtu)
		mtu = (enum efi_mtu)id->peer_mtu;

	efi_qp_set_conn_key(qp, key);
	/* segments of the smaller link's size on both sides (the enum MTU
	 * cannot tell a 1500-byte link from a 2000-byte one) */
	efi_qp_set_peer_link_mtu(qp, id->peer_link_mtu);
	struct efi_qp_attr a = {
		.qp_state = EFI_QPS_RTR,
		.path_mtu = mtu,
		.dest_qp_num = id->peer_qpn,
		.rq_psn = id->peer_psn,
		.max_dest_rd_atomic = (uint8_t)da.max_qp_init_rd_atom,
		.min_rnr_timer = CM_QP_MIN_RNR_TIMER,
		.ah_attr = { .is_global = 1, .port_num = 1,
			     .grh = { .dgid = id->peer_gid, .sgid_index = (uint8_t)sgid,
				      .hop_limit = 64 } },
	};
	int r = efi_modify_qp(qp, &a, EFI_QP_STATE | EFI_QP_AV | EFI_QP_PATH_MTU |
					      EFI_QP_DEST_QPN | EFI_QP_RQ_PSN |
					      EFI_QP_MAX_DEST_RD_ATOMIC | EFI_QP_MIN_RNR_TIMER);
	if (r)
		return r;
	memset(&a, 0, sizeof(a));
	a.qp_state = EFI_QPS_RTS;
	a.timeout = CM_QP_TIMEOUT;
	a.retry_cnt = CM_QP_RETRY;
	a.rnr_retry = CM_QP_RNR_RETRY;
	a.sq_psn = id->psn;
	a.max_rd_atomic = (uint8_t)da.max_qp_rd_atom;
	return efi_modify_qp(qp, &a, EFI_QP_STATE | EFI_QP_TIMEOUT | EFI_QP_RETRY_CNT |
					     EFI_QP_RNR_RETRY | EFI_QP_SQ_PSN |
					     EFI_QP_MAX_QP_RD_ATOMIC);
}

/* The connection is over: its QP (if it still has one) to ERR.  Takes
 * bind_lock. */
void efi_cm_qp_to_error(struct efi_cm_id *id)
{
	struct efi_qp_attr a = { .qp_state = EFI_QPS_ERR };
	pthread_mutex_lock(&bind_lock);
	struct efi_qp *qp = id->qp;
	if (qp && qp->state != EFI_QPS_RESET && qp->state != EFI_QPS_ERR)
		efi_modify_qp(qp, &a, EFI_QP_STATE);
	pthread_mutex_unlock(&bind_lock);
}

/* Why a DISCONNECTED waits for the ACKs of sends the peer may have taken
 * (cm_int.h, DISC_ACK_GRACE_NS, the window; cm_watch.c, who shares it): a
 * peer that disconnects cleanly acknowledged what arrived before it told
 * its efid (efi_disconnect, efi_destroy_qp and every way into ERR send a
 * held ACK first), but that ACK and the DISCONNECTED travel apart, the ACK
 * through the data path's sockets and the DISCONNECTED through two efids,
 * and on a loaded host the ACK can come second (its delivery is a softirq
 * that may be deferred to ksoftirqd).  Failing the QP the moment
 * DISCONNECTED came flushed a send the peer had taken: fi_pingpong -e rdm's
 * last "fin" in CI's sanitizer stage.  A peer that died answers nothing, so
 * the wait is bounded, and it only runs while a send is unacknowledged. */
#define DISC_ACK_LOOK_NS (100ull * 1000)

/* Whether one of the n connections' QPs has a request out without its
 * ACK.  bind_lock and the context's lock held. */
static bool batch_awaits_ack(struct efi_cm_id *const *ids, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct efi_qp_int *qp = (const struct efi_qp_int *)ids[i]->qp;
		if (qp && (qp->attr.qp_state == EFI_QPS_RTS || qp->attr.qp_state == EFI_QPS_SQD) &&
		    qp->snd_una != qp->snd_max)
			return true;
	}
	return false;
}

/* The QPs of n connections of one context to ERR at once, as n
 * efi_cm_qp_to_error would, but with one transport run for all: moving an
 * RTS QP to ERR first reads what already arrived (efi_modify_qp runs the
 * context's transport over ALL its QPs), and 1,000 connections of a killed
 * peer ended one by one cost 1,000 runs over 1,000 QPs, most of the
 * 130-340 ms their DISCONNECTED took to reach the application (issue 18).
 * The run here comes after every frame of the batch was read, so what
 * arrived before any of them still counts first, and while a send waits
 * for its ACK the transport runs again every DISC_ACK_LOOK_NS, until
 * ack_deadline_ns at most (above).  The ids stay valid (the watcher holds them
 * in_batch); their QPs are read anew under bind_lock after every wait, as
 * efi_destroy_qp may unbind one meanwhile.  Takes bind_lock, then the
 * context's lock (the order efi_modify_qp under bind_lock has). */
void efi_cm_qps_to_error(struct efi_cm_id *const *ids, size_t n, uint64_t ack_deadline_ns)
{
	if (!n)
		return;
	struct efi_context_int *ctx = ctx_of(ids[0]->context);
	pthread_mutex_lock(&bind_lock);
	pthread_mutex_lock(&ctx->lock);
	efi_xport_run(ctx);
	while (batch_awaits_ack(ids, n) && efi_now_ns() < ack_deadline_ns) {
		pthread_mutex_unlock(&ctx->lock);
		pthread_mutex_unlock(&bind_lock);
		struct timespec ts = { 0, (long)DISC_ACK_LOOK_NS };
		nanosleep(&ts, NULL);
		pthread_mutex_lock(&bind_lock);
		pthread_mutex_lock(&ctx->lock);
		efi_xport_run(ctx);
	}
	for (size_t i = 0; i < n; i++) {
		struct efi_qp_int *qp = (struct efi_qp_int *)ids[i]->qp;
		if (!qp || ctx_of(ids[i]->context) != ctx)
			continue; /* one context per watcher: cannot happen */
		enum efi_qp_state cur = qp->attr.qp_state;
		if (cur == EFI_QPS_RESET || cur == EFI_QPS_ERR)
			continue;
		efi_qp_to_error(qp);
	}
	pthread_mutex_unlock(&ctx->lock);
	pthread_mutex_unlock(&bind_lock);
}

/* ---- the API ------------------------------------------------------------ */

struct efi_cm_id *efi_listen(struct efi_context *context, const char *service, int backlog)
{
	uint32_t port = 0;
	if (!context || backlog < 0 || backlog > 4096 || parse_service(service, &port)) {
		errno = EINVAL;
		return NULL;
	}
	struct efi_cm_id *id = efi_cm_id_new(ID_LISTENER, context, true);
	if (!id)
		return NULL;
	struct ctl_buf b;
	struct ctl_reply rep;
	efi_cm_begin(&b, EFI_CTL_CM_LISTEN);
	ctl_put_str(&b, EFI_A_IFNAME, context->device->name);
	ctl_put_u32(&b, EFI_A_CM_SERVICE, port);
	ctl_put_u32(&b, EFI_A_CM_BACKLOG, backlog ? (uint32_t)backlog : 128u);
	int r = efi_cm_call(id, &b, &rep);
	if (r) {
		efi_cm_id_free(id);
		errno = r;
		return NULL;
	}
	ctl_reply_free(&rep);
	id->service = port;
	id->backlog = backlog ? (uint32_t)backlog : 128u;
	/* the watcher reads its events too, and listens again after an efid
	 * restart; its channel is then an eventfd like a connection's */
	r = efi_cm_watch(id);
	if (r) {
		efi_cm_id_free(id);
		errno = r;
		return NULL;
	}
	return id;
}

struct efi_cm_id *efi_connect(struct efi_qp *qp, const char *host, const char *service,
			      const void *private_data, size_t len, int timeout_ms)
{
	uint32_t port = 0;
	if (!qp || !host || len > EFI_CM_PRIVATE_DATA_MAX || (len && !private_data) ||
	    timeout_ms < 0 || parse_service(service, &port) ||
	    (qp->state != EFI_QPS_RESET && qp->state != EFI_QPS_INIT)) {
		errno = EINVAL;
		return NULL;
	}
	struct efi_context *ctx = qp->context;
	union efi_gid dest;
	int r = resolve_host(ctx, host, &dest);
	if (r) {
		errno = r;
		return NULL;
	}
	struct efi_cm_id *id = efi_cm_id_new(ID_CONNECTION, ctx, true);
	if (!id)
		return NULL;
	id->active = true;
	efi_cm_bind_qp(id, qp);
	id->service = port;
	id->psn = random_psn();
	int sgid = gid_index(ctx, &dest, NULL);
	if (sgid < 0 || efi_query_gid(ctx, 1, sgid, &id->local_gid) != 0 || (r = qp_to_init(qp))) {
		efi_cm_id_free(id);
		errno = r ? r : EHOSTUNREACH;
		return NULL;
	}
	struct ctl_buf b;
	struct ctl_reply rep;
	efi_cm_begin(&b, EFI_CTL_CM_CONNECT);
	ctl_put_str(&b, EFI_A_IFNAME, ctx->device->name);
	ctl_put(&b, EFI_A_CM_DEST, dest.raw, 16);
	ctl_put(&b, EFI_A_CM_SGID, id->local_gid.raw, 16);
	ctl_put_u32(&b, EFI_A_CM_SERVICE, port);
	ctl_put_u32(&b, EFI_A_CM_QPN, qp->qp_num);
	ctl_put_u32(&b, EFI_A_CM_PSN, id->psn);
	ctl_put_u32(&b, EFI_A_CM_MTU, (uint32_t)port_mtu(ctx));
	ctl_put_u32(&b, EFI_A_CM_LINK_MTU, ctx_of(ctx)->p.link_mtu);
	ctl_put_u32(&b, EFI_A_CM_TIMEOUT, timeout_ms ? (uint32_t)timeout_ms : CM_DEFAULT_TIMEOUT_MS);
	if (len)
		ctl_put(&b, EFI_A_CM_PRIVATE, private_data, len);
	r = efi_cm_call(id, &b, &rep);
	if (r == 0) {
		/* the tid: what this side names the connection by when it takes
		 * it up again after an efid restart (CM_RESUME) */
		static const struct ctl_policy pol[EFI_A_MAX] = { [EFI_A_CM_ID] = { .kind = CTL_U64 } };
		struct ctl_attr tb[EFI_A_MAX];
		if (ctl_parse(rep.payload, rep.payload_len, pol, EFI_A_MAX, tb, NULL) == 0 &&
		    ctl_has(tb, EFI_A_CM_ID))
			ctl_attr_u64(&tb[EFI_A_CM_ID], &id->handle);
		ctl_reply_free(&rep);
		r = efi_cm_watch(id);
	}
	if (r) {
		efi_cm_id_free(id);
		errno = r;
		return NULL;
	}
	return id;
}

int efi_accept(struct efi_cm_id *req, struct efi_qp *qp, const void *private_data, size_t len)
{
	if (!req || req->kind != ID_REQUEST || !qp || qp->context != req->context ||
	    len > EFI_CM_PRIVATE_DATA_MAX || (len && !private_data) ||
	    (qp->state != EFI_QPS_RESET && qp->state != EFI_QPS_INIT))
		return EINVAL;
	int r = ctl_client_connect(NULL, &req->ctl);
	if (r < 0) {
		req->ctl = NULL;
		return r == -ENOENT ? ECONNREFUSED : -r;
	}
	req->answered = true;
	r = qp_to_init(qp);
	if (r)
		goto fail;
	efi_cm_bind_qp(req, qp);
	req->psn = random_psn();
	enum efi_mtu mtu = port_mtu(req->context);
	if ((uint32_t)mtu > req->peer_mtu)
		mtu = (enum efi_mtu)req->peer_mtu;
	struct ctl_buf b;
	struct ctl_reply rep;
	efi_cm_begin(&b, EFI_CTL_CM_ACCEPT);
	ctl_put_u64(&b, EFI_A_CM_ID, req->handle);
	ctl_put_u32(&b, EFI_A_CM_QPN, qp->qp_num);
	ctl_put_u32(&b, EFI_A_CM_PSN, req->psn);
	ctl_put_u32(&b, EFI_A_CM_MTU, (uint32_t)mtu);
	ctl_put_u32(&b, EFI_A_CM_LINK_MTU, ctx_of(req->context)->p.link_mtu);
	if (len)
		ctl_put(&b, EFI_A_CM_PRIVATE, private_data, len);
	r = efi_cm_call(req, &b, &rep);
	if (r)
		goto fail;
	static const struct ctl_policy pol[EFI_A_MAX] = { [EFI_A_CM_KEY] = { .kind = CTL_U32 } };
	struct ctl_attr tb[EFI_A_MAX];
	uint32_t key = 0;
	if (ctl_parse(rep.payload, rep.payload_len, pol, EFI_A_MAX, tb, NULL) < 0 ||
	    !ctl_has(tb, EFI_A_CM_KEY) || ctl_attr_u32(&tb[EFI_A_CM_KEY], &key) < 0 || key == 0) {
		ctl_reply_free(&rep);
		r = EPROTO;
		goto fail;
	}
	ctl_reply_free(&rep);
	r = efi_cm_qp_to_rts(req, key);
	if (r)
		goto fail;
	req->kind = ID_CONNECTION;
	req->connected = true;
	r = efi_cm_watch(req);
	if (r) {
		req->kind = ID_REQUEST;
		efi_cm_qp_to_error(req);
		goto fail;
	}
	return 0;
fail:
	/* closing the connection tells efid (and so the client) it is over */
	ctl_client_close(req->ctl);
	req->ctl = NULL;
	efi_cm_unbind_id(req);
	return r;
}

int efi_reject(struct efi_cm_id *req, const void *private_data, size_t len)
{
	if (!req || req->kind != ID_REQUEST || len > EFI_CM_PRIVATE_DATA_MAX ||
	    (len && !private_data))
		return EINVAL;
	req->answered = true;
	struct efi_cm_id *tmp = efi_cm_id_new(ID_REQUEST, req->context, true);
	if (!tmp)
		return errno;
	struct ctl_buf b;
	struct ctl_reply rep;
	efi_cm_begin(&b, EFI_CTL_CM_REJECT);
	ctl_put_u64(&b, EFI_A_CM_ID, req->handle);
	if (len)
		ctl_put(&b, EFI_A_CM_PRIVATE, private_data, len);
	int r = efi_cm_call(tmp, &b, &rep);
	if (r == 0)
		ctl_reply_free(&rep);
	efi_cm_id_free(tmp);
	return r;
}

int efi_disconnect(struct efi_cm_id *id)
{
	if (!id || id->kind != ID_CONNECTION)
		return EINVAL;
	efi_cm_qp_to_error(id);
	if (atomic_exchange(&id->disconnected, true))
		return 0;
	/* Sent without waiting: the watcher reads (and drops) the reply.  If
	 * efid is gone the peer learns it from its efid or its transport. */
	efi_cm_send_disconnect(id);
	return 0;
}

void efi_cm_send_disconnect(struct efi_cm_id *id)
{
	struct ctl_buf b;

	efi_cm_begin(&b, EFI_CTL_CM_DISCONNECT);
	if (ctl_msg_end(&b) == 0) {
		pthread_mutex_lock(&id->lock);
		ctl_client_send(id->ctl, &b);
		pthread_mutex_unlock(&id->lock);
	}
	ctl_buf_free(&b);
}

int efi_cm_get_fd(const struct efi_cm_id *id)
{
	if (!id)
		return -1;
	return id->watching ? id->ready_fd : ctl_client_fd(id->ctl);
}

/* Takes bind_lock. */
struct efi_qp *efi_cm_get_qp(const struct efi_cm_id *id)
{
	if (!id || id->kind != ID_CONNECTION)
		return NULL;
	pthread_mutex_lock(&bind_lock);
	struct efi_qp *qp = id->qp;
	pthread_mutex_unlock(&bind_lock);
	return qp;
}

int efi_cm_destroy_id(struct efi_cm_id *id)
{
	if (!id)
		return 0;
	/* A request nobody answered is rejected, so the client need not wait
	 * for its timeout. */
	if (id->kind == ID_REQUEST && !id->answered)
		efi_reject(id, NULL, 0);
	/* Closing the control connection is the disconnect (efid sends the
	 * DREQ); the QP is the application's to destroy.  The watcher stops
	 * first, so it never touches the QP after this returns. */
	efi_cm_id_free(id);
	return 0;
}

const char *efi_cm_event_str(enum efi_cm_event_type event)
{
	switch (event) {
	case EFI_CM_EVENT_CONNECT_REQUEST: return "connect request";
	case EFI_CM_EVENT_ESTABLISHED: return "established";
	case EFI_CM_EVENT_REJECTED: return "rejected";
	case EFI_CM_EVENT_UNREACHABLE: return "unreachable";
	case EFI_CM_EVENT_TIMEOUT: return "timed out";
	case EFI_CM_EVENT_DISCONNECTED: return "disconnected";
	}
	return "unknown";
}

