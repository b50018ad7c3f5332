/* SPDX-License-Identifier: MIT */
/*
 * The context's CM watcher: ONE thread per context (started with its first
 * connection, stopped by efi_close_device) reads the control connections of
 * all the context's CM connections through one epoll set, does what each
 * event stands for the moment it arrives (the client's QP to RTS on REPLY,
 * a QP to ERR on DISCONNECTED, whether or not the application is looking at
 * its channel), and queues the event on the id, whose channel (ready_fd, a
 * semaphore eventfd) counts the queued events.  It replaced a thread per
 * connection, which made 10,000 connections 10,000 threads (issue 18).
 *
 * Lifetimes: an id is registered in a slot table under the watcher's lock;
 * epoll carries the slot's index and generation, never a pointer, so an
 * event of an id unwatched meanwhile finds a newer generation and is
 * dropped.  The watcher marks the id it is serving (busy) and unwatching
 * waits until it is done with it, so after efi_cm_unwatch the watcher never
 * touches the id or its QP again.
 *
 * A batch of DISCONNECTEDs: a process with 1,000 connections to one that
 * dies hears 1,000 of them at once, and each QP moved to ERR by itself ran
 * the context's transport over all its QPs first (efi_modify_qp reads what
 * arrived before): 1,000,000 QP visits.  So the watcher sets the
 * DISCONNECTEDs of one round of epoll aside (the id marked in_batch, which
 * unwatching waits for as for busy), moves all their QPs to ERR with one
 * transport run (efi_cm_qps_to_error), and only then queues the events:
 * the application still never sees DISCONNECTED before its QP is in ERR.
 *
 * efid restarts: when an id's control connection breaks and efid keeps the
 * id across restarts (a listener, an established connection), the watcher
 * takes it up again at the new efid (cm_resume.c), retrying every 20 ms,
 * doubling to 250 ms, for up to RESUME_GIVE_UP_MS; the application's
 * channel stays the same.  Only then, or for what cannot be resumed, does
 * the application hear ECONNRESET.
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "cm_int.h"
#include "efi_int.h"

#define WATCHER_STACK (256u * 1024u)
#define KICK_TOKEN UINT64_MAX
/* Frames served per id per turn, so one chatty id cannot starve the rest. */
#define FRAMES_PER_TURN 16
#define RESUME_FIRST_MS 20u
#define RESUME_MAX_MS 250u
#define RESUME_GIVE_UP_MS 20000u

/* An id waiting for efid to come back (the watcher thread's own list). */
struct resume_wait {
	uint64_t token;
	uint64_t next_ns, give_up_ns;
	unsigned backoff_ms;
};

struct wslot {
	struct efi_cm_id *id;	/* NULL: free */
	uint32_t gen;
};

struct efi_cm_watcher {
	pthread_t thread;
	int epfd;
	int kick_fd;		/* eventfd: pending ids, or stop */
	pthread_mutex_t lock;	/* everything below */
	pthread_cond_t idle;	/* busy changed */
	struct efi_cm_id *busy;	/* the id being served (outside the lock) */
	bool stop;
	struct wslot *slots;
	uint32_t nslots, cap;
	uint32_t *free_idx;	/* free slot indices (cap entries) */
	uint32_t nfree;
	uint64_t *pending;	/* tokens with frames set aside before watching */
	size_t npending, cap_pending;
	/* watcher thread only */
	struct resume_wait *resume;
	size_t nresume, cap_resume;
	struct efi_cm_id **batch;	/* DISCONNECTED, QP not yet in ERR */
	struct efi_cm_event *batch_ev;
	size_t nbatch, cap_batch;
	/* the current window in which DISCONNECTEDs wait for ACKs (cm_int.h):
	 * it began at ack_window_ns and its waits end at ack_deadline_ns */
	uint64_t ack_window_ns, ack_deadline_ns;
};

static uint64_t token_of(uint32_t idx, uint32_t gen)
{
	return (uint64_t)gen << 32 | idx;
}

/* Caller holds w->lock.  NULL when the token's id was unwatched. */
static struct efi_cm_id *lookup(struct efi_cm_watcher *w, uint64_t token)
{
	uint32_t idx = (uint32_t)token;
	if (idx >= w->nslots || w->slots[idx].gen != (uint32_t)(token >> 32))
		return NULL;
	return w->slots[idx].id;
}

static void push_event(struct efi_cm_id *id, int err, const struct efi_cm_event *ev)
{
	struct queued_event *q = calloc(1, sizeof(*q));
	if (!q)
		return; /* the application then waits in vain: only without memory */
	q->err = err;
	if (ev)
		q->ev = *ev;
	pthread_mutex_lock(&id->lock);
	if (id->events_tail)
		id->events_tail->next = q;
	else
		id->events = q;
	id->events_tail = q;
	pthread_mutex_unlock(&id->lock);
	uint64_t one = 1;
	ssize_t wr = write(id->ready_fd, &one, sizeof(one));
	(void)wr; /* an eventfd counter cannot overflow from this */
}

/* The next frame: one a call set aside, else one efid already sent.
 * Returns 0, EAGAIN (nothing now), or an errno (the channel failed). */
static int next_frame(struct efi_cm_id *id, struct ctl_reply *f)
{
	if (id->queue) {
		struct queued_frame *q = id->queue;
		id->queue = q->next;
		if (!id->queue)
			id->queue_tail = NULL;
		*f = q->frame;
		free(q);
		return 0;
	}
	int r = ctl_client_recv(id->ctl, f, 0);
	if (r == -ETIMEDOUT)
		return EAGAIN;
	return r < 0 ? -r : 0;
}

/* Watcher thread.  False without memory. */
static bool resume_later(struct efi_cm_watcher *w, struct efi_cm_id *id)
{
	if (w->nresume == w->cap_resume) {
		size_t cap = w->cap_resume ? w->cap_resume * 2 : 16;
		struct resume_wait *p = realloc(w->resume, cap * sizeof(*p));
		if (!p)
			return false;
		w->resume = p;
		w->cap_resume = cap;
	}
	uint64_t now = efi_now_ns();
	w->resume[w->nresume++] = (struct resume_wait){
		.token = id->token, .next_ns = now + RESUME_FIRST_MS * 1000000ull,
		.give_up_ns = now + RESUME_GIVE_UP_MS * 1000000ull, .backoff_ms = RESUME_FIRST_MS,
	};
	return true;
}

static void serve(struct efi_cm_watcher *w, struct efi_cm_id *id);

/* Watcher thread, id marked busy: sets id's DISCONNECTED aside for the
 * round's batch.  False without memory (the caller does it alone). */
static bool batch_add(struct efi_cm_watcher *w, struct efi_cm_id *id, const struct efi_cm_event *ev)
{
	if (w->nbatch == w->cap_batch) {
		size_t cap = w->cap_batch ? w->cap_batch * 2 : 64;
		struct efi_cm_id **b = realloc(w->batch, cap * sizeof(*b));
		if (!b)
			return false;
		w->batch = b;
		struct efi_cm_event *e = realloc(w->batch_ev, cap * sizeof(*e));
		if (!e)
			return false;
		w->batch_ev = e;
		w->cap_batch = cap;
	}
	w->batch[w->nbatch] = id;
	w->batch_ev[w->nbatch++] = *ev;
	pthread_mutex_lock(&w->lock);
	id->in_batch = true;
	pthread_mutex_unlock(&w->lock);
	return true;
}

/* Watcher thread: the batch's QPs to ERR, then its events. */
static void batch_flush(struct efi_cm_watcher *w)
{
	if (!w->nbatch)
		return;
	uint64_t now = efi_now_ns();
	if (!w->ack_window_ns || now - w->ack_window_ns >= DISC_ACK_WINDOW_NS) {
		w->ack_window_ns = now;
		w->ack_deadline_ns = now + DISC_ACK_GRACE_NS;
	}
	efi_cm_qps_to_error(w->batch, w->nbatch, w->ack_deadline_ns);
	for (size_t i = 0; i < w->nbatch; i++)
		push_event(w->batch[i], 0, &w->batch_ev[i]);
	pthread_mutex_lock(&w->lock);
	for (size_t i = 0; i < w->nbatch; i++)
		w->batch[i]->in_batch = false;
	pthread_cond_broadcast(&w->idle);
	pthread_mutex_unlock(&w->lock);
	w->nbatch = 0;
}

/* Watcher thread, id marked busy: one attempt.  True when rw is done. */
static bool resume_one(struct efi_cm_watcher *w, struct efi_cm_id *id, struct resume_wait *rw)
{
	int r = efi_cm_resume_try(id);
	if (r == EAGAIN) {
		uint64_t now = efi_now_ns();
		if (now < rw->give_up_ns) {
			rw->next_ns = now + rw->backoff_ms * 1000000ull;
			rw->backoff_ms = rw->backoff_ms * 2 > RESUME_MAX_MS ? RESUME_MAX_MS : rw->backoff_ms * 2;
			return false;
		}
		r = ECONNRESET;
	}
	if (r == 0) {
		struct epoll_event ev = { .events = EPOLLIN, .data.u64 = id->token };
		if (epoll_ctl(w->epfd, EPOLL_CTL_ADD, ctl_client_fd(id->ctl), &ev) == 0) {
			id->dead = false;
			id->ready_pending = false; /* its answer went with the old channel */
			if (atomic_load(&id->disconnected)) {
				/* efi_disconnect ran while efid was away */
				efi_cm_send_disconnect(id);
			}
			serve(w, id); /* frames that came with the reply */
			return true;
		}
		r = ECONNRESET;
	}
	if (r == ENOTCONN && id->kind == ID_CONNECTION) {
		/* the peer disconnected while efid was away */
		struct efi_cm_event ev = { .event = EFI_CM_EVENT_DISCONNECTED, .id = id };
		efi_cm_qp_to_error(id);
		id->closed = true;
		push_event(id, 0, &ev);
		return true;
	}
	push_event(id, ECONNRESET, NULL);
	return true;
}

/* Watcher thread: the attempts that are due; returns the epoll timeout
 * until the next (-1: none waits). */
static int resume_due(struct efi_cm_watcher *w)
{
	uint64_t now = efi_now_ns(), next = UINT64_MAX;
	for (size_t i = 0; i < w->nresume;) {
		struct resume_wait *rw = &w->resume[i];
		bool done = false;
		if (rw->next_ns <= now) {
			pthread_mutex_lock(&w->lock);
			struct efi_cm_id *id = lookup(w, rw->token);
			w->busy = id;
			pthread_mutex_unlock(&w->lock);
			done = !id || resume_one(w, id, rw);
			pthread_mutex_lock(&w->lock);
			w->busy = NULL;
			pthread_cond_broadcast(&w->idle);
			pthread_mutex_unlock(&w->lock);
		}
		if (done) {
			w->resume[i] = w->resume[--w->nresume];
			continue;
		}
		if (rw->next_ns < next)
			next = rw->next_ns;
		i++;
	}
	if (next == UINT64_MAX)
		return -1;
	now = efi_now_ns();
	return next <= now ? 0 : (int)((next - now + 999999) / 1000000);
}

/* Watcher thread, outside w->lock, id marked busy. */
static void serve(struct efi_cm_watcher *w, struct efi_cm_id *id)
{
	for (int n = 0; n < FRAMES_PER_TURN && !id->dead; n++) {
		struct ctl_reply f;
		struct efi_cm_event ev;
		int r = next_frame(id, &f);
		if (r == EAGAIN)
			return;
		if (r) {
			/* efid went away: a hung-up descriptor leaves the set
			 * (it would stay readable forever); the id is taken up
			 * again at the next efid, or the application hears it
			 * once */
			id->dead = true;
			epoll_ctl(w->epfd, EPOLL_CTL_DEL, ctl_client_fd(id->ctl), NULL);
			if (r == EPROTO || !efi_cm_resumable(id) || !resume_later(w, id))
				push_event(id, r == EPROTO ? EPROTO : ECONNRESET, NULL);
			return;
		}
		r = efi_cm_take_event(id, &f, &ev);
		ctl_reply_free(&f);
		if (r == 0 && ev.event == EFI_CM_EVENT_DISCONNECTED) {
			/* nothing of id is served after it until the batch
			 * is done (frames set aside would not be announced
			 * again: then it goes alone) */
			if (!id->queue && batch_add(w, id, &ev))
				return;
			efi_cm_qp_to_error(id);
		}
		if (r == 0)
			push_event(id, 0, &ev);
		else if (r != EAGAIN)
			push_event(id, r, NULL);
	}
}

static void serve_token(struct efi_cm_watcher *w, uint64_t token)
{
	pthread_mutex_lock(&w->lock);
	struct efi_cm_id *id = lookup(w, token);
	w->busy = id;
	pthread_mutex_unlock(&w->lock);
	if (!id)
		return;
	serve(w, id);
	pthread_mutex_lock(&w->lock);
	w->busy = NULL;
	pthread_cond_broadcast(&w->idle);
	pthread_mutex_unlock(&w->lock);
}

static void *watch(void *arg)
{
	struct efi_cm_watcher *w = arg;
	struct epoll_event evs[64];
	for (;;) {
		int timeout = resume_due(w);
		batch_flush(w); /* what this round of epoll (and resumes) set aside */
		int n = epoll_wait(w->epfd, evs, 64, timeout);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return NULL;
		}
		for (int i = 0; i < n; i++) {
			if (evs[i].data.u64 != KICK_TOKEN) {
				serve_token(w, evs[i].data.u64);
				continue;
			}
			uint64_t c;
			ssize_t rd = read(w->kick_fd, &c, sizeof(c));
			(void)rd;
			pthread_mutex_lock(&w->lock);
			if (w->stop) {
				pthread_mutex_unlock(&w->lock);
				batch_flush(w);
				return NULL;
			}
			uint64_t *todo = w->pending;
			size_t ntodo = w->npending;
			w->pending = NULL;
			w->npending = w->cap_pending = 0;
			pthread_mutex_unlock(&w->lock);
			for (size_t k = 0; k < ntodo; k++)
				serve_token(w, todo[k]);
			free(todo);
		}
	}
}

static void watcher_free(struct efi_cm_watcher *w)
{
	if (w->epfd >= 0)
		close(w->epfd);
	if (w->kick_fd >= 0)
		close(w->kick_fd);
	pthread_mutex_destroy(&w->lock);
	pthread_cond_destroy(&w->idle);
	free(w->slots);
	free(w->free_idx);
	free(w->pending);
	free(w->resume);
	free(w->batch);
	free(w->batch_ev);
	free(w);
}

static struct efi_cm_watcher *watcher_new(void)
{
	struct efi_cm_watcher *w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->idle, NULL);
	w->epfd = epoll_create1(EPOLL_CLOEXEC);
	w->kick_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = KICK_TOKEN };
	if (w->epfd < 0 || w->kick_fd < 0 || epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->kick_fd, &ev))
		goto fail;
	pthread_attr_t attr;
	sigset_t all, old;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, WATCHER_STACK);
	/* the application's signals go to the application's threads */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int r = pthread_create(&w->thread, &attr, watch, w);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (r) {
		errno = r;
		goto fail;
	}
	return w;
fail:;
	int e = errno;
	watcher_free(w);
	errno = e;
	return NULL;
}

static void watcher_stop(struct efi_cm_watcher *w)
{
	pthread_mutex_lock(&w->lock);
	w->stop = true;
	pthread_mutex_unlock(&w->lock);
	uint64_t one = 1;
	ssize_t wr = write(w->kick_fd, &one, sizeof(one));
	(void)wr;
	pthread_join(w->thread, NULL);
	watcher_free(w);
}

/* The context's watcher, started on first use.  NULL with errno. */
static struct efi_cm_watcher *context_watcher(struct efi_context_int *ctx)
{
	struct efi_cm_watcher *w = atomic_load(&ctx->cm_watcher);
	if (w)
		return w;
	w = watcher_new();
	if (!w)
		return NULL;
	struct efi_cm_watcher *expected = NULL;
	if (!atomic_compare_exchange_strong(&ctx->cm_watcher, &expected, w)) {
		watcher_stop(w); /* another thread started one first */
		return expected;
	}
	return w;
}

/* Caller holds w->lock.  Returns a slot index, or -1 without memory. */
static int64_t slot_take(struct efi_cm_watcher *w)
{
	if (w->nfree)
		return w->free_idx[--w->nfree];
	if (w->nslots == w->cap) {
		uint32_t cap = w->cap ? w->cap * 2 : 64;
		struct wslot *s = realloc(w->slots, cap * sizeof(*s));
		if (!s)
			return -1;
		w->slots = s;
		uint32_t *f = realloc(w->free_idx, cap * sizeof(*f));
		if (!f)
			return -1;
		w->free_idx = f;
		w->cap = cap;
	}
	w->slots[w->nslots] = (struct wslot){ 0 };
	return w->nslots++;
}

int efi_cm_watch(struct efi_cm_id *id)
{
	struct efi_cm_watcher *w = context_watcher(ctx_of(id->context));
	if (!w)
		return errno;
	id->ready_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK | EFD_SEMAPHORE);
	if (id->ready_fd < 0)
		return errno;
	int r = 0;
	pthread_mutex_lock(&w->lock);
	int64_t idx = slot_take(w);
	if (idx < 0) {
		r = ENOMEM;
		goto out;
	}
	struct wslot *s = &w->slots[idx];
	s->id = id;
	s->gen++;
	id->token = token_of((uint32_t)idx, s->gen);
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = id->token };
	if (epoll_ctl(w->epfd, EPOLL_CTL_ADD, ctl_client_fd(id->ctl), &ev)) {
		r = errno;
		s->id = NULL;
		w->free_idx[w->nfree++] = (uint32_t)idx;
		goto out;
	}
	/* frames that came with the call that made the connection were set
	 * aside: the descriptor will not announce them */
	if (id->queue) {
		if (w->npending == w->cap_pending) {
			size_t cap = w->cap_pending ? w->cap_pending * 2 : 16;
			uint64_t *p = realloc(w->pending, cap * sizeof(*p));
			if (!p) {
				r = ENOMEM;
				epoll_ctl(w->epfd, EPOLL_CTL_DEL, ctl_client_fd(id->ctl), NULL);
				s->id = NULL;
				w->free_idx[w->nfree++] = (uint32_t)idx;
				goto out;
			}
			w->pending = p;
			w->cap_pending = cap;
		}
		w->pending[w->npending++] = id->token;
		uint64_t one = 1;
		ssize_t wr = write(w->kick_fd, &one, sizeof(one));
		(void)wr;
	}
	id->watching = true;
out:
	pthread_mutex_unlock(&w->lock);
	if (r) {
		close(id->ready_fd);
		id->ready_fd = -1;
	}
	return r;
}

void efi_cm_unwatch(struct efi_cm_id *id)
{
	if (!id->watching)
		return;
	struct efi_cm_watcher *w = atomic_load(&ctx_of(id->context)->cm_watcher);
	pthread_mutex_lock(&w->lock);
	uint32_t idx = (uint32_t)id->token;
	if (lookup(w, id->token) == id) {
		w->slots[idx].id = NULL;
		w->free_idx[w->nfree++] = idx;
	}
	while (w->busy == id || id->in_batch)
		pthread_cond_wait(&w->idle, &w->lock);
	/* ENOENT when the watcher took a hung-up descriptor out already */
	epoll_ctl(w->epfd, EPOLL_CTL_DEL, ctl_client_fd(id->ctl), NULL);
	pthread_mutex_unlock(&w->lock);
	id->watching = false;
}

void efi_cm_context_close(struct efi_context_int *ctx)
{
	struct efi_cm_watcher *w = atomic_exchange(&ctx->cm_watcher, NULL);
	if (w)
		watcher_stop(w);
}
