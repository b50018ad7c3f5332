/* SPDX-License-Identifier: MIT */
/*
 * Event queues: the connection manager's events as libfabric CM events.
 * Every passive endpoint and endpoint bound to an EQ is an "owner" whose
 * efi_cm id the EQ polls (efi_cm_get_event without waiting) whenever it is
 * read; the entries found are queued in order with those fi_eq_write adds.
 * The wait object is an epoll descriptor over the ids' event channels plus
 * an eventfd that is readable while entries are queued.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "efi_fi.h"

struct efi_fi_eq_entry {
	struct efi_fi_eq_entry *next;
	uint32_t event;
	bool is_err;
	bool ours;		/* made here (CM events, errors), not by fi_eq_write */
	/* an FI_CONNREQ's info: ours until the application reads the entry */
	struct fi_info *info;
	struct fi_eq_err_entry err;
	size_t len;		/* bytes of data[] (the entry, or err_data) */
	uint8_t data[];
};

static void eq_sync_evfd(struct efi_fi_eq *eq)
{
	uint64_t v;

	/* non-blocking eventfd: drain it, then make it readable again if
	 * anything is queued */
	while (read(eq->evfd, &v, sizeof(v)) == (ssize_t)sizeof(v))
		;
	if (eq->head) {
		v = 1;
		if (write(eq->evfd, &v, sizeof(v)) != (ssize_t)sizeof(v))
			return;	/* cannot overflow with one count */
	}
}

static struct efi_fi_eq_entry *entry_new(size_t len)
{
	return calloc(1, sizeof(struct efi_fi_eq_entry) + len);
}

static void eq_push(struct efi_fi_eq *eq, struct efi_fi_eq_entry *e)
{
	if (eq->tail)
		eq->tail->next = e;
	else
		eq->head = e;
	eq->tail = e;
}

/* A CM entry (struct fi_eq_cm_entry + cm data); NULL on ENOMEM. */
static struct efi_fi_eq_entry *cm_entry(uint32_t event, fid_t fid, struct fi_info *info,
					const void *data, size_t len)
{
	struct efi_fi_eq_entry *e = entry_new(sizeof(struct fi_eq_cm_entry) + len);
	struct fi_eq_cm_entry *cm;

	if (!e)
		return NULL;
	e->event = event;
	e->ours = true;
	e->len = sizeof(struct fi_eq_cm_entry) + len;
	cm = (struct fi_eq_cm_entry *)e->data;
	cm->fid = fid;
	cm->info = info;
	if (len)
		memcpy(cm->data, data, len);
	return e;
}

int efi_fi_eq_push_err(struct efi_fi_eq *eq, fid_t fid, void *context, int err, int prov_errno,
		       const void *data, size_t len)
{
	struct efi_fi_eq_entry *e = entry_new(len);

	if (!e)
		return -FI_ENOMEM;
	e->is_err = true;
	e->ours = true;
	e->len = len;
	if (len)
		memcpy(e->data, data, len);
	e->err.fid = fid;
	e->err.context = context;
	e->err.err = err;
	e->err.prov_errno = prov_errno;
	eq_push(eq, e);
	eq_sync_evfd(eq);
	return 0;
}

int efi_fi_eq_push_event(struct efi_fi_eq *eq, uint32_t event, fid_t fid)
{
	struct efi_fi_eq_entry *e = cm_entry(event, fid, NULL, NULL, 0);

	if (!e)
		return -FI_ENOMEM;
	eq_push(eq, e);
	eq_sync_evfd(eq);
	return 0;
}

/* A socket address of a GID (port 0). */
static void gid_sockaddr(const union efi_gid *gid, struct sockaddr_storage *ss, size_t *len)
{
	static const uint8_t v4mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	memset(ss, 0, sizeof(*ss));
	if (!memcmp(gid->raw, v4mapped, sizeof(v4mapped))) {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;

		sin->sin_family = AF_INET;
		memcpy(&sin->sin_addr, gid->raw + 12, 4);
		*len = sizeof(*sin);
	} else {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

		sin6->sin6_family = AF_INET6;
		memcpy(&sin6->sin6_addr, gid->raw, 16);
		*len = sizeof(*sin6);
	}
}

static struct efi_fi_eq_entry *connreq_entry(struct efi_fi_cm_owner *o,
					     const struct efi_cm_event *ev)
{
	struct efi_fi_pep *pep = container_of(o, struct efi_fi_pep, owner);
	struct fi_info *info = fi_dupinfo(pep->info);
	struct efi_fi_connreq *cr = NULL;
	struct efi_fi_eq_entry *e = NULL;
	struct sockaddr_storage peer;
	size_t plen;

	if (!info)
		goto fail;
	gid_sockaddr(&ev->peer_gid, &peer, &plen);
	free(info->dest_addr);
	info->dest_addr = malloc(plen);
	if (!info->dest_addr)
		goto fail;
	memcpy(info->dest_addr, &peer, plen);
	info->dest_addrlen = plen;
	/* the source is the listener's address as it is now */
	if (info->src_addr && info->src_addrlen >= efi_fi_sockaddr_len((void *)&pep->addr))
		memcpy(info->src_addr, &pep->addr, efi_fi_sockaddr_len((void *)&pep->addr));
	info->handle = NULL;
	e = cm_entry(FI_CONNREQ, &pep->pep.fid, info, ev->private_data, ev->private_data_len);
	if (!e)
		goto fail;
	cr = efi_fi_connreq_new(pep, ev->request);
	if (!cr)
		goto fail;
	info->handle = &cr->fid;
	e->info = info;
	return e;
fail:
	free(e);
	fi_freeinfo(info);
	efi_cm_destroy_id(ev->request);	/* refused: the client hears of it */
	return NULL;
}

/* Turns one efi_cm event of an owner into a queued entry. */
static void translate(struct efi_fi_eq *eq, struct efi_fi_cm_owner *o,
		      const struct efi_cm_event *ev)
{
	struct efi_fi_eq_entry *e = NULL;
	struct efi_fi_ep *ep = o->is_pep ? NULL : container_of(o, struct efi_fi_ep, owner);

	switch (ev->event) {
	case EFI_CM_EVENT_CONNECT_REQUEST:
		if (o->is_pep)
			e = connreq_entry(o, ev);
		else
			efi_cm_destroy_id(ev->request);
		break;
	case EFI_CM_EVENT_ESTABLISHED:
		if (ep)
			ep->connected = true;
		e = cm_entry(FI_CONNECTED, o->fid, NULL, ev->private_data, ev->private_data_len);
		break;
	case EFI_CM_EVENT_DISCONNECTED:
		if (ep && ep->shut)
			break;	/* its own fi_shutdown reported it */
		if (ep)
			ep->shut = true;
		e = cm_entry(FI_SHUTDOWN, o->fid, NULL, NULL, 0);
		break;
	case EFI_CM_EVENT_REJECTED:
		efi_fi_eq_push_err(eq, o->fid, o->fid->context, FI_ECONNREFUSED,
				   ev->reject_reason, ev->private_data, ev->private_data_len);
		return;
	case EFI_CM_EVENT_UNREACHABLE:
		efi_fi_eq_push_err(eq, o->fid, o->fid->context, FI_EHOSTUNREACH,
				   -(int)ev->event, NULL, 0);
		return;
	case EFI_CM_EVENT_TIMEOUT:
		efi_fi_eq_push_err(eq, o->fid, o->fid->context, FI_ETIMEDOUT,
				   -(int)ev->event, NULL, 0);
		return;
	}
	if (e)
		eq_push(eq, e);
}

static void unwatch(struct efi_fi_eq *eq, struct efi_fi_cm_owner *o)
{
	if (o->watched && o->id && efi_cm_get_fd(o->id) >= 0)
		epoll_ctl(eq->epfd, EPOLL_CTL_DEL, efi_cm_get_fd(o->id), NULL);
	o->watched = false;
}

/* Whether an owner's channel (or the eventfd) is readable: one epoll_wait
 * that does not wait.  ofi_rxm reads its EQ from inside every fi_cq_read
 * (several times per message); asking every owner (a read and a poll per
 * connection, the listener's socket) each time cost ~5 system calls per
 * read.  An error answers "maybe", so the owners are asked. */
static bool eq_owner_readable(struct efi_fi_eq *eq)
{
	struct epoll_event ev;

	return epoll_wait(eq->epfd, &ev, 1, 0) != 0;
}

/* Collects the owners' pending events; eq->lock held. */
static void eq_poll_owners(struct efi_fi_eq *eq)
{
	for (struct efi_fi_cm_owner *o = eq->owners; o; o = o->next) {
		struct efi_cm_event ev;
		int err;

		if (!o->id || !o->watched)
			continue;
		while (!(err = efi_cm_get_event(o->id, &ev, 0)))
			translate(eq, o, &ev);
		if (err != EAGAIN) {
			/* efid went away (ECONNRESET) or worse: report once */
			unwatch(eq, o);
			efi_fi_eq_push_err(eq, o->fid, o->fid->context, FI_ECONNRESET, err,
					   NULL, 0);
		}
	}
	eq_sync_evfd(eq);
}

void efi_fi_eq_attach(struct efi_fi_eq *eq, struct efi_fi_cm_owner *o)
{
	pthread_mutex_lock(&eq->lock);
	o->next = eq->owners;
	eq->owners = o;
	__atomic_fetch_add(&eq->refs, 1, __ATOMIC_SEQ_CST);
	pthread_mutex_unlock(&eq->lock);
}

static void entry_free(struct efi_fi_eq_entry *e)
{
	/* an FI_CONNREQ never read: its request is the passive endpoint's to
	 * refuse (connreq.c), fi_freeinfo leaves info->handle alone */
	fi_freeinfo(e->info);
	free(e);
}

/* Takes the queued entries of fid out (as the verbs provider does): read
 * later they would name a closed object; eq->lock held.  Entries of
 * fi_eq_write are the application's and stay. */
static void eq_purge(struct efi_fi_eq *eq, fid_t fid)
{
	struct efi_fi_eq_entry **pp = &eq->head, *last = NULL;

	while (*pp) {
		struct efi_fi_eq_entry *e = *pp;
		fid_t of = !e->ours ? NULL
			   : e->is_err ? e->err.fid : ((struct fi_eq_cm_entry *)e->data)->fid;

		if (of == fid) {
			*pp = e->next;
			entry_free(e);
		} else {
			last = e;
			pp = &e->next;
		}
	}
	eq->tail = last;
	eq_sync_evfd(eq);
}

void efi_fi_eq_detach(struct efi_fi_eq *eq, struct efi_fi_cm_owner *o)
{
	pthread_mutex_lock(&eq->lock);
	unwatch(eq, o);
	for (struct efi_fi_cm_owner **pp = &eq->owners; *pp; pp = &(*pp)->next) {
		if (*pp == o) {
			*pp = o->next;
			break;
		}
	}
	eq_purge(eq, o->fid);
	__atomic_fetch_sub(&eq->refs, 1, __ATOMIC_SEQ_CST);
	pthread_mutex_unlock(&eq->lock);
}

/* eq->lock held by the caller. */
void efi_fi_eq_watch(struct efi_fi_eq *eq, struct efi_fi_cm_owner *o)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int fd = o->id ? efi_cm_get_fd(o->id) : -1;

	if (o->watched || fd < 0)
		return;
	if (!epoll_ctl(eq->epfd, EPOLL_CTL_ADD, fd, &ev))
		o->watched = true;
}

int efi_fi_eq_trywait(struct efi_fi_eq *eq)
{
	int ret;

	pthread_mutex_lock(&eq->lock);
	eq_poll_owners(eq);
	ret = eq->head ? -FI_EAGAIN : 0;
	pthread_mutex_unlock(&eq->lock);
	return ret;
}

static ssize_t eq_read(struct fid_eq *feq, uint32_t *event, void *buf, size_t len,
		       uint64_t flags)
{
	struct efi_fi_eq *eq = (struct efi_fi_eq *)feq;
	struct efi_fi_eq_entry *e;
	ssize_t ret;

	pthread_mutex_lock(&eq->lock);
	if (eq_owner_readable(eq))
		eq_poll_owners(eq);
	e = eq->head;
	if (!e) {
		ret = -FI_EAGAIN;
	} else if (e->is_err) {
		ret = -FI_EAVAIL;
	} else if (len < e->len) {
		ret = -FI_ETOOSMALL;
	} else {
		if (event)
			*event = e->event;
		memcpy(buf, e->data, e->len);
		ret = (ssize_t)e->len;
		if (!(flags & FI_PEEK)) {
			/* the application has its handle from now on */
			if (e->info)
				efi_fi_connreq_handed_out((struct efi_fi_connreq *)e->info->handle);
			eq->head = e->next;
			if (!eq->head)
				eq->tail = NULL;
			free(e);
			eq_sync_evfd(eq);
		}
	}
	pthread_mutex_unlock(&eq->lock);
	return ret;
}

static ssize_t eq_readerr(struct fid_eq *feq, struct fi_eq_err_entry *buf, uint64_t flags)
{
	struct efi_fi_eq *eq = (struct efi_fi_eq *)feq;
	struct efi_fi_eq_entry *e;
	void *user_data = buf->err_data;
	size_t user_size = buf->err_data_size;

	pthread_mutex_lock(&eq->lock);
	if (eq_owner_readable(eq))
		eq_poll_owners(eq);
	e = eq->head;
	if (!e || !e->is_err) {
		pthread_mutex_unlock(&eq->lock);
		return -FI_EAGAIN;
	}
	*buf = e->err;
	if (user_size && user_data) {
		/* the application's buffer (1.5+): copy what fits */
		buf->err_data = user_data;
		buf->err_data_size = e->len < user_size ? e->len : user_size;
		memcpy(user_data, e->data, buf->err_data_size);
	} else {
		/* ours, valid until the next readerr */
		free(eq->err_data);
		eq->err_data = e->len ? malloc(e->len) : NULL;
		if (eq->err_data)
			memcpy(eq->err_data, e->data, e->len);
		buf->err_data = eq->err_data;
		buf->err_data_size = eq->err_data ? e->len : 0;
	}
	if (!(flags & FI_PEEK)) {
		eq->head = e->next;
		if (!eq->head)
			eq->tail = NULL;
		free(e);
		eq_sync_evfd(eq);
	}
	pthread_mutex_unlock(&eq->lock);
	return sizeof(*buf);
}

static ssize_t eq_write(struct fid_eq *feq, uint32_t event, const void *buf, size_t len,
			uint64_t flags)
{
	struct efi_fi_eq *eq = (struct efi_fi_eq *)feq;
	struct efi_fi_eq_entry *e;

	if (!buf || flags & ~FI_WRITE)
		return -FI_EINVAL;
	e = entry_new(len);
	if (!e)
		return -FI_ENOMEM;
	e->event = event;
	e->len = len;
	memcpy(e->data, buf, len);
	pthread_mutex_lock(&eq->lock);
	eq_push(eq, e);
	eq_sync_evfd(eq);
	pthread_mutex_unlock(&eq->lock);
	return (ssize_t)len;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static ssize_t eq_sread(struct fid_eq *feq, uint32_t *event, void *buf, size_t len, int timeout,
			uint64_t flags)
{
	struct efi_fi_eq *eq = (struct efi_fi_eq *)feq;
	int64_t end = timeout >= 0 ? now_ms() + timeout : 0;

	for (;;) {
		struct epoll_event ev;
		ssize_t ret = eq_read(feq, event, buf, len, flags);
		int wait = -1;

		if (ret != -FI_EAGAIN)
			return ret;
		if (timeout >= 0) {
			wait = (int)(end - now_ms());
			if (wait <= 0)
				return -FI_EAGAIN;
		}
		if (epoll_wait(eq->epfd, &ev, 1, wait) < 0 && errno != EINTR)
			return -FI_EOTHER;
	}
}

static const char *eq_strerror(struct fid_eq *feq, int prov_errno, const void *err_data,
			       char *buf, size_t len)
{
	const char *s;

	(void)feq, (void)err_data;
	switch (prov_errno) {
	case EFI_CM_REJECT_CONSUMER:
		s = "rejected by the peer";
		break;
	case EFI_CM_REJECT_NO_LISTENER:
		s = "nobody listens on that service";
		break;
	case EFI_CM_REJECT_BACKLOG:
		s = "the listener's backlog is full";
		break;
	case EFI_CM_REJECT_INVALID:
		s = "the address is not an EFI interface";
		break;
	case EFI_CM_REJECT_EXPIRED:
		s = "answered too late";
		break;
	case -(int)EFI_CM_EVENT_UNREACHABLE:
		s = "no efid answered at that address";
		break;
	case -(int)EFI_CM_EVENT_TIMEOUT:
		s = "the server did not accept in time (FI_EFI_CONNECT_TIMEOUT)";
		break;
	default:
		s = prov_errno > 0 ? strerror(prov_errno) : "unknown";
	}
	if (buf && len) {
		snprintf(buf, len, "%s", s);
		return buf;
	}
	return s;
}

static int eq_control(struct fid *fid, int command, void *arg)
{
	struct efi_fi_eq *eq = (struct efi_fi_eq *)fid;

	switch (command) {
	case FI_GETWAIT:
		if (!arg)
			return -FI_EINVAL;
		*(int *)arg = eq->epfd;
		return 0;
	case FI_GETWAITOBJ:
		if (!arg)
			return -FI_EINVAL;
		*(enum fi_wait_obj *)arg = FI_WAIT_FD;
		return 0;
	default:
		return -FI_ENOSYS;
	}
}

static int eq_close(struct fid *fid)
{
	struct efi_fi_eq *eq = (struct efi_fi_eq *)fid;

	if (__atomic_load_n(&eq->refs, __ATOMIC_SEQ_CST))
		return -FI_EBUSY;
	while (eq->head) {
		struct efi_fi_eq_entry *e = eq->head;

		eq->head = e->next;
		entry_free(e);
	}
	close(eq->epfd);
	close(eq->evfd);
	free(eq->err_data);
	__atomic_fetch_sub(&eq->fab->refs, 1, __ATOMIC_SEQ_CST);
	pthread_mutex_destroy(&eq->lock);
	free(eq);
	return 0;
}

static struct fi_ops eq_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = eq_close,
	.bind = efi_fi_no_bind,
	.control = eq_control,
	.ops_open = efi_fi_no_ops_open,
	.tostr = efi_fi_no_tostr,
	.ops_set = efi_fi_no_ops_set,
};

static struct fi_ops_eq eq_ops = {
	.size = sizeof(struct fi_ops_eq),
	.read = eq_read,
	.readerr = eq_readerr,
	.write = eq_write,
	.sread = eq_sread,
	.strerror = eq_strerror,
};

int efi_fi_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr, struct fid_eq **out,
		   void *context)
{
	struct efi_fi_fabric *fab = (struct efi_fi_fabric *)fabric;
	struct epoll_event ev = { .events = EPOLLIN };
	struct efi_fi_eq *eq;

	if (!attr || (attr->flags & ~FI_WRITE))
		return -FI_EINVAL;
	if (attr->wait_obj != FI_WAIT_NONE && attr->wait_obj != FI_WAIT_UNSPEC &&
	    attr->wait_obj != FI_WAIT_FD)
		return -FI_ENOSYS;
	if (attr->wait_set)
		return -FI_ENOSYS;
	eq = calloc(1, sizeof(*eq));
	if (!eq)
		return -FI_ENOMEM;
	eq->epfd = epoll_create1(EPOLL_CLOEXEC);
	eq->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (eq->epfd < 0 || eq->evfd < 0 ||
	    epoll_ctl(eq->epfd, EPOLL_CTL_ADD, eq->evfd, &ev)) {
		int ret = efi_fi_errno(errno);

		if (eq->epfd >= 0)
			close(eq->epfd);
		if (eq->evfd >= 0)
			close(eq->evfd);
		free(eq);
		return ret;
	}
	pthread_mutex_init(&eq->lock, NULL);
	eq->fab = fab;
	eq->eq.fid.fclass = FI_CLASS_EQ;
	eq->eq.fid.context = context;
	eq->eq.fid.ops = &eq_fi_ops;
	eq->eq.ops = &eq_ops;
	__atomic_fetch_add(&fab->refs, 1, __ATOMIC_SEQ_CST);
	*out = &eq->eq;
	return 0;
}
