/* SPDX-License-Identifier: MIT */
/*
 * A fault injector around any wire backend, for tests: it loses,
 * duplicates, reorders and delays datagrams in both directions, so that
 * the transport's retransmission, duplicate detection and reassembly can
 * be proven on a perfect loopback.  Configured by a spec such as
 * "loss=0.01,dup=0.001,reorder=0.01,delay_us=0,seed=42" (the transport
 * reads it from $EFI_FAULT).
 *
 * How a datagram travels, per direction:
 *
 *   admit ─ loss? ─ dup? ─ reorder? ─▶ held slot ─┐ (after the next one,
 *                               │                  │  or after REORDER_BOUND)
 *                               ▼                  ▼
 *                      pipe (FIFO, due = now + delay_us) ─▶ out
 *
 * Every admitted datagram is copied into the pipe (the caller's buffers are
 * the caller's again as soon as a call returns); "out" is the inner
 * backend's send_batch for the send direction, and the caller's pkts for
 * the receive direction.  The pipe is bounded: when the inner backend
 * cannot take packets (its socket buffer is full), the send pipe fills up
 * and send_batch returns a partial count, exactly as the bare backend does.
 *
 * Held, delayed and not-yet-sent datagrams need a wake-up even when
 * nothing else happens, or a transport asleep in poll() would never see
 * them: poll_fd is an epoll descriptor over the inner backend's descriptor
 * and a timerfd armed for the next due datagram (or, when the inner backend
 * was full, for a retry shortly after).  The transport calls recv_batch when
 * it polls readable, and every call (send or receive) first releases what
 * has come due in both directions.  The timer costs a system call only
 * when something is pending, and only in fault mode.
 *
 * Deterministic: which datagrams are lost, duplicated and held back
 * depends only on the seed and the sequence of calls (and, on receive, of
 * what the inner backend returned), as long as no held datagram outlives
 * its bound (the bound only applies to calls that bring nothing new in
 * that direction).  xorshift64* with all state in the wrapper, none global.
 *
 * Not thread-safe (like every backend, wire.h): the transport serialises
 * calls on one efi_wire.  Ownership: efi_wire_fault_wrap takes inner only
 * when it succeeds; after a failure (EINVAL for a bad spec) the caller
 * still owns inner.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "libefi/wire.h"

/* Datagrams each direction's pipe holds at most (copies, malloc'ed). */
#define FAULT_PIPE_CAP 1024
/* One datagram admitted can take up to three pipe slots: itself, its
 * duplicate, and a held datagram released after it. */
#define FAULT_SLOTS_PER_ADMIT 3
/* A held (reordered) datagram waits at most this long for a next one. */
#define FAULT_REORDER_BOUND_NS 1000000ull
/* When something is due but could not go out (the inner backend is full,
 * the caller's array was full), try again this much later. */
#define FAULT_RETRY_NS 200000ull
/* The longest delay_us accepted: 10 s; longer is a typo, not a test. */
#define FAULT_MAX_DELAY_US 10000000ull
/* Datagrams handed to the inner send_batch per call. */
#define FAULT_TX_BATCH 64
/* Datagrams one recv_batch reads from the inner backend at most. */
#define FAULT_MAX_RECV 64

struct fault_pkt {
	void *data;
	uint32_t len;
	struct sockaddr_in6 peer;
	uint8_t lane;
	uint64_t due_ns;
};

struct fault_pipe {
	struct fault_pkt q[FAULT_PIPE_CAP];
	unsigned head, count;
	bool has_held;
	struct fault_pkt held;
	uint64_t held_since_ns;
};

struct fault_cfg {
	double loss, dup, reorder;
	uint64_t delay_us, seed;
};

struct fault_wire {
	struct efi_wire base;
	struct efi_wire *inner;
	struct fault_cfg cfg;
	uint64_t rng;
	struct efi_wire_fault_stats stats;
	struct fault_pipe tx, rx;
	int timer_fd;		/* wakes the poller for due datagrams */
	int epoll_fd;		/* the inner fd + timer_fd: what poll_fd gives */
	uint64_t armed_ns;	/* the timer's deadline, 0 when not armed */
};

static const struct efi_wire_ops fault_ops;

static inline struct fault_wire *to_fault(struct efi_wire *w)
{
	return (struct fault_wire *)w;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);	/* vDSO: no system call */
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- the random source: xorshift64* seeded through splitmix64 ---- */

static uint64_t splitmix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static uint64_t fault_rand(struct fault_wire *f)
{
	uint64_t x = f->rng;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	f->rng = x;
	return x * 0x2545f4914f6cdd1dull;
}

/* True with probability p.  p == 0 draws nothing, so a fault that is off
 * does not shift the others' random sequence. */
static bool fault_chance(struct fault_wire *f, double p)
{
	if (p <= 0.0)
		return false;
	return (double)(fault_rand(f) >> 11) * 0x1.0p-53 < p;
}

/* ---- the spec ---- */

/* A probability: digits with an optional fraction ("0", "1", "0.25", ".5"),
 * in [0, 1].  Parsed by hand: strtod would follow the caller's locale and
 * accept "nan", "inf", "-0" and leading blanks. */
static bool parse_prob(const char *s, size_t len, double *out)
{
	double v = 0.0, scale = 1.0;
	bool digits = false, point = false;

	for (size_t i = 0; i < len; i++) {
		if (s[i] == '.' && !point) {
			point = true;
		} else if (s[i] >= '0' && s[i] <= '9') {
			digits = true;
			if (point) {
				scale /= 10.0;
				v += (s[i] - '0') * scale;
			} else {
				v = v * 10.0 + (s[i] - '0');
			}
		} else {
			return false;
		}
	}
	if (!digits || v > 1.0)
		return false;
	*out = v;
	return true;
}

/* A decimal unsigned integer without sign or blanks, at most max. */
static bool parse_uint(const char *s, size_t len, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;

	if (len == 0)
		return false;
	for (size_t i = 0; i < len; i++) {
		unsigned d;

		if (s[i] < '0' || s[i] > '9')
			return false;
		d = (unsigned)(s[i] - '0');
		if (v > (max - d) / 10)
			return false;
		v = v * 10 + d;
	}
	*out = v;
	return true;
}

/* Parses "key=value[,key=value...]" into cfg.  Every key at most once, no
 * empty items, no blanks; "" means no faults.  False on anything else. */
static bool parse_spec(const char *spec, struct fault_cfg *cfg)
{
	enum { K_LOSS = 1, K_DUP = 2, K_REORDER = 4, K_DELAY = 8, K_SEED = 16 };
	unsigned seen = 0;
	const char *p = spec;

	memset(cfg, 0, sizeof(*cfg));
	cfg->seed = 1;
	if (*p == '\0')
		return true;
	for (;;) {
		const char *end = strchr(p, ',');
		const char *eq;
		size_t len = end ? (size_t)(end - p) : strlen(p);
		size_t klen, vlen;
		const char *val;
		unsigned key;
		bool ok;

		eq = memchr(p, '=', len);
		if (!eq)
			return false;
		klen = (size_t)(eq - p);
		val = eq + 1;
		vlen = len - klen - 1;
#define KEY_IS(name) (klen == sizeof(name) - 1 && memcmp(p, name, klen) == 0)
		if (KEY_IS("loss")) {
			key = K_LOSS;
			ok = parse_prob(val, vlen, &cfg->loss);
		} else if (KEY_IS("dup")) {
			key = K_DUP;
			ok = parse_prob(val, vlen, &cfg->dup);
		} else if (KEY_IS("reorder")) {
			key = K_REORDER;
			ok = parse_prob(val, vlen, &cfg->reorder);
		} else if (KEY_IS("delay_us")) {
			key = K_DELAY;
			ok = parse_uint(val, vlen, FAULT_MAX_DELAY_US, &cfg->delay_us);
		} else if (KEY_IS("seed")) {
			key = K_SEED;
			ok = parse_uint(val, vlen, UINT64_MAX, &cfg->seed);
		} else {
			return false;
		}
#undef KEY_IS
		if (!ok || (seen & key))
			return false;
		seen |= key;
		if (!end)
			return true;
		p = end + 1;	/* a trailing ',' leaves "" : no '=', refused */
	}
}

/* ---- the pipes ---- */

static unsigned pipe_room(const struct fault_pipe *p)
{
	return FAULT_PIPE_CAP - p->count;
}

static struct fault_pkt *pipe_head(struct fault_pipe *p)
{
	return &p->q[p->head];
}

/* Callers check pipe_room first. */
static void pipe_push(struct fault_pipe *p, const struct fault_pkt *pkt)
{
	p->q[(p->head + p->count) % FAULT_PIPE_CAP] = *pkt;
	p->count++;
}

static void pipe_pop_free(struct fault_pipe *p)
{
	free(p->q[p->head].data);
	p->head = (p->head + 1) % FAULT_PIPE_CAP;
	p->count--;
}

static void pipe_clear(struct fault_pipe *p)
{
	while (p->count)
		pipe_pop_free(p);
	if (p->has_held)
		free(p->held.data);
	p->has_held = false;
}

/* Puts the held datagram into the pipe behind whatever was just queued. */
static void release_held(struct fault_wire *f, struct fault_pipe *p, uint64_t now)
{
	p->held.due_ns = now + f->cfg.delay_us * 1000;
	pipe_push(p, &p->held);
	p->has_held = false;
}

/* Decides one datagram's fate and queues what survives (room for
 * FAULT_SLOTS_PER_ADMIT checked by the caller). */
static void admit(struct fault_wire *f, struct fault_pipe *p, const struct efi_wire_pkt *pkt,
		  uint64_t now)
{
	unsigned copies = 1;

	f->stats.seen++;
	if (fault_chance(f, f->cfg.loss)) {
		f->stats.dropped++;
		return;
	}
	if (fault_chance(f, f->cfg.dup)) {
		f->stats.duplicated++;
		copies = 2;
	}
	for (unsigned c = 0; c < copies; c++) {
		struct fault_pkt q = { .len = efi_wire_pkt_size(pkt), .peer = pkt->peer, .lane = pkt->lane };

		q.data = malloc(q.len ? q.len : 1);
		if (!q.data) {
			f->stats.dropped++;	/* a lost datagram, as on a wire */
			continue;
		}
		efi_wire_pkt_copy(pkt, q.data);
		if (!p->has_held && fault_chance(f, f->cfg.reorder)) {
			f->stats.reordered++;
			p->held = q;
			p->has_held = true;
			p->held_since_ns = now;
			continue;
		}
		q.due_ns = now + f->cfg.delay_us * 1000;
		pipe_push(p, &q);
		if (p->has_held)
			release_held(f, p, now);	/* "after the next one" */
	}
}

/* Hands every due datagram of the send pipe to the inner backend, as far
 * as it takes them.  0, or the inner backend's -errno. */
static int flush_tx(struct fault_wire *f, uint64_t now)
{
	struct efi_wire_pkt batch[FAULT_TX_BATCH];

	while (f->tx.count && pipe_head(&f->tx)->due_ns <= now) {
		unsigned m = 0;
		int r;

		while (m < FAULT_TX_BATCH && m < f->tx.count) {
			const struct fault_pkt *q = &f->tx.q[(f->tx.head + m) % FAULT_PIPE_CAP];

			if (q->due_ns > now)
				break;
			batch[m].buf = q->data;
			batch[m].len = q->len;
			batch[m].cap = q->len;
			batch[m].payload = NULL;
			batch[m].payload_len = 0;
			batch[m].peer = q->peer;
			batch[m].lane = q->lane;
			m++;
		}
		r = efi_wire_send(f->inner, batch, m);
		if (r < 0)
			return r;
		for (int i = 0; i < r; i++)
			pipe_pop_free(&f->tx);
		if ((unsigned)r < m)
			break;	/* the inner backend is full: later */
	}
	return 0;
}

/* Moves due datagrams of the receive pipe into the caller's pkts. */
static unsigned emit_rx(struct fault_wire *f, struct efi_wire_pkt *pkts, unsigned n,
			uint64_t now)
{
	unsigned out = 0;

	while (out < n && f->rx.count && pipe_head(&f->rx)->due_ns <= now) {
		const struct fault_pkt *q = pipe_head(&f->rx);

		if (q->len > pkts[out].cap) {
			f->stats.dropped++;	/* cannot happen with equal caps */
		} else {
			memcpy(pkts[out].buf, q->data, q->len);
			pkts[out].len = q->len;
			pkts[out].peer = q->peer;
			pkts[out].lane = q->lane;
			out++;
		}
		pipe_pop_free(&f->rx);
	}
	return out;
}

/* ---- the wake-up timer ---- */

static void consider(uint64_t *deadline, uint64_t t, uint64_t now)
{
	if (t <= now)
		t = now + FAULT_RETRY_NS;
	if (*deadline == 0 || t < *deadline)
		*deadline = t;
}

/* Arms the timer for the earliest moment something held or queued comes
 * due, unless an earlier wake-up is already pending. */
static void rearm(struct fault_wire *f, uint64_t now)
{
	const struct fault_pipe *pipes[2] = { &f->tx, &f->rx };
	uint64_t deadline = 0;
	struct itimerspec its = { 0 };

	for (unsigned i = 0; i < 2; i++) {
		const struct fault_pipe *p = pipes[i];

		if (p->count)
			consider(&deadline, p->q[p->head].due_ns, now);
		if (p->has_held)
			consider(&deadline, p->held_since_ns + FAULT_REORDER_BOUND_NS, now);
	}
	if (deadline == 0)
		return;		/* a stale pending timer only costs one wake-up */
	if (f->armed_ns > now && f->armed_ns <= deadline)
		return;
	its.it_value.tv_sec = (time_t)(deadline / 1000000000ull);
	its.it_value.tv_nsec = (long)(deadline % 1000000000ull);
	if (timerfd_settime(f->timer_fd, TFD_TIMER_ABSTIME, &its, NULL) == 0)
		f->armed_ns = deadline;
}

/* Acknowledges an expired timer: only an actual read clears its
 * readability; if it has not fired yet (hrtimer latency), the next call
 * tries again. */
static void drain_timer(struct fault_wire *f, uint64_t now)
{
	uint64_t expirations;

	if (f->armed_ns && now >= f->armed_ns &&
	    read(f->timer_fd, &expirations, sizeof(expirations)) == sizeof(expirations))
		f->armed_ns = 0;
}

/*
 * Lets a held datagram go once it has waited REORDER_BOUND for a next one.
 * Called only when the call admits nothing new in that direction: while
 * datagrams flow, "after the next one" releases it, so which datagrams are
 * reordered depends on the seed and the calls, not on scheduling.
 */
static void release_overdue(struct fault_wire *f, struct fault_pipe *p, uint64_t now)
{
	if (p->has_held && now - p->held_since_ns >= FAULT_REORDER_BOUND_NS && pipe_room(p) > 0)
		release_held(f, p, now);
}

/* ---- the backend ---- */

static int fault_send_batch(struct efi_wire *w, struct efi_wire_pkt *pkts, unsigned n)
{
	struct fault_wire *f = to_fault(w);
	uint64_t now = now_ns();
	unsigned admitted = 0;
	int r;

	drain_timer(f, now);
	release_overdue(f, &f->rx, now);	/* emitted by the next recv */
	r = flush_tx(f, now);
	if (r < 0)
		return r;
	if (f->tx.count && pipe_head(&f->tx)->due_ns <= now) {
		/* The inner backend is full: say so now, as it would, rather
		 * than queue up to a whole pipe behind it. */
		rearm(f, now);
		return 0;
	}
	while (admitted < n && pipe_room(&f->tx) >= FAULT_SLOTS_PER_ADMIT)
		admit(f, &f->tx, &pkts[admitted++], now);
	if (admitted == 0)
		release_overdue(f, &f->tx, now);
	r = flush_tx(f, now);
	rearm(f, now);
	/* Admitted datagrams are queued; a socket error shows next call. */
	if (r < 0 && admitted == 0)
		return r;
	return (int)admitted;
}

static int fault_recv_batch(struct efi_wire *w, struct efi_wire_pkt *pkts, unsigned n)
{
	struct fault_wire *f = to_fault(w);
	uint64_t now = now_ns();
	unsigned room, want, out;
	int r = 0, err = 0;

	drain_timer(f, now);
	release_overdue(f, &f->tx, now);
	err = flush_tx(f, now);
	/* Read no more than the pipe can take even if every one is
	 * duplicated; while the pipe is full of delayed datagrams the inner
	 * descriptor stays readable, which costs spins, not datagrams. */
	room = pipe_room(&f->rx);
	want = room >= FAULT_SLOTS_PER_ADMIT ? (room - 1) / 2 : 0;
	if (want > n)
		want = n;
	if (want) {
		void *bufs[FAULT_MAX_RECV];

		/* the inner backend may point pkts at its own memory (wire.h):
		 * admit copies, and the caller's buffers come back for emit_rx */
		if (want > FAULT_MAX_RECV)
			want = FAULT_MAX_RECV;
		for (unsigned i = 0; i < want; i++)
			bufs[i] = pkts[i].buf;
		r = efi_wire_recv(f->inner, pkts, want);
		if (r < 0)
			err = r;
		for (int i = 0; i < r; i++)
			admit(f, &f->rx, &pkts[i], now);
		for (unsigned i = 0; i < want; i++)
			pkts[i].buf = bufs[i];
	}
	if (r <= 0)
		release_overdue(f, &f->rx, now);
	out = emit_rx(f, pkts, n, now);
	rearm(f, now);
	if (out == 0 && err < 0)
		return err;
	return (int)out;
}

static int fault_poll_fd(const struct efi_wire *w)
{
	return ((const struct fault_wire *)w)->epoll_fd;
}

static bool fault_pending(const struct efi_wire *w)
{
	return efi_wire_pending(((const struct fault_wire *)w)->inner);
}

static void fault_destroy(struct efi_wire *w)
{
	struct fault_wire *f;

	if (!w)
		return;
	f = to_fault(w);
	pipe_clear(&f->tx);
	pipe_clear(&f->rx);
	close(f->epoll_fd);
	close(f->timer_fd);
	efi_wire_destroy(f->inner);
	free(f);
}

static const struct efi_wire_ops fault_ops = {
	.send_batch = fault_send_batch,
	.recv_batch = fault_recv_batch,
	.pending = fault_pending,
	.poll_fd = fault_poll_fd,
	.destroy = fault_destroy,
};

/* The epoll descriptor that polls readable when the inner backend has
 * datagrams or the timer has fired. */
static int setup_wakeup(struct fault_wire *f)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int saved;

	f->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (f->timer_fd < 0)
		return -errno;
	f->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (f->epoll_fd < 0)
		goto fail;
	ev.data.fd = f->timer_fd;
	if (epoll_ctl(f->epoll_fd, EPOLL_CTL_ADD, f->timer_fd, &ev) < 0)
		goto fail;
	ev.data.fd = efi_wire_fd(f->inner);
	if (epoll_ctl(f->epoll_fd, EPOLL_CTL_ADD, ev.data.fd, &ev) < 0)
		goto fail;
	return 0;
fail:
	saved = errno;
	if (f->epoll_fd >= 0)
		close(f->epoll_fd);
	close(f->timer_fd);
	f->epoll_fd = f->timer_fd = -1;
	return -saved;
}

struct efi_wire *efi_wire_fault_wrap(struct efi_wire *inner, const char *spec)
{
	struct fault_wire *f;
	struct fault_cfg cfg;
	int r;

	if (!inner || !spec || !parse_spec(spec, &cfg)) {
		errno = EINVAL;
		return NULL;
	}
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->base.ops = &fault_ops;
	f->base.source_ports = inner->source_ports;	/* peers pass through */
	f->inner = inner;
	f->cfg = cfg;
	f->rng = splitmix64(cfg.seed);
	if (f->rng == 0)
		f->rng = 0x9e3779b97f4a7c15ull;	/* xorshift's one bad state */
	r = setup_wakeup(f);
	if (r < 0) {
		free(f);	/* inner stays the caller's */
		errno = -r;
		return NULL;
	}
	return &f->base;
}

void efi_wire_fault_stats(const struct efi_wire *w, struct efi_wire_fault_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (w && w->ops == &fault_ops)
		*out = ((const struct fault_wire *)w)->stats;
}
