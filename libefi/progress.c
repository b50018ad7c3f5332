/* SPDX-License-Identifier: MIT */
/*
 * The progress thread: runs the transport while the application does not,
 * so a Write or Read aimed at a process blocked elsewhere still completes,
 * retransmission timers fire, and completion channels get their events.
 * While an application thread is polling its CQ (it ran the transport in
 * the last APP_ACTIVE_NS) the thread stays out of its way entirely: it does
 * not watch the socket and does not touch ctx->lock, so the poller neither
 * loses datagrams to it nor pays a futex wake for a lock hand-off, and on a
 * machine with few cores the poller is not preempted by a wake-up per
 * datagram.  It only sleeps in short bounded naps (APP_BACKOFF_NS, never a
 * spin) and takes over once the application has been quiet for
 * APP_ACTIVE_NS, or at once when a caller about to sleep kicks it.
 *
 * One pattern defeats "recently polled": a thread that polls its CQ for a
 * Write's completion and then spins on memory for the peer's Write (perftest's
 * ib_write_lat, eager-RDMA protocols).  It is out of libefi while the peer's
 * datagram arrives, and a nap that ignored the wire left that datagram
 * unread for up to APP_BACKOFF_NS.  So the naps do watch the wire, and a
 * datagram that nobody takes within APP_GRACE_NS is taken here.  Once the
 * application has taken them itself (APP_TAKES_STREAK wakes in a row) the
 * naps leave the wire alone, each ending with one look at it, until that
 * look finds a datagram the application leaves for longer than
 * APP_GRACE_NS: a genuine poller then pays one wake-up per APP_BACKOFF_NS,
 * and the other pattern at most one nap's delay before the wire is watched
 * again.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <sys/prctl.h>
#include <time.h>
#include <signal.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "efi_int.h"

/* An application thread that ran the transport from efi_poll_cq this
 * recently drives it itself (it receives, runs the timers and transmits). */
#define APP_ACTIVE_NS	(200ull * 1000)
/* While it does, the progress thread naps this long between looks: bounds
 * the hand-over delay when the application stops polling without a kick
 * (APP_ACTIVE_NS + APP_BACKOFF_NS, below the 0.5 ms RTO floor). */
#define APP_BACKOFF_NS	(250ull * 1000)
/* How long a datagram may wait for a polling application before the
 * progress thread takes it, and after how many wake-ups in a row that the
 * application served itself one nap ignores the wire. */
#define APP_GRACE_NS	(15ull * 1000)
#define APP_TAKES_STREAK 4
/* The shortest nap before a held ACK's deadline: no spinning on it. */
#define ACK_NAP_MIN_NS	(2ull * 1000)
#define BUSY_TICK_NS	(1000ull * 1000)
/* After a run that handled datagrams the thread looks at the wire again
 * for this long before it sleeps: in a stream the next datagrams come
 * within microseconds, and a sleep and wake-up per burst (a context switch
 * each, 12% of a receiver's CPU in a profile) cost more than the look. */
#define SPIN_NS		(30ull * 1000)
#define IDLE_TICK_NS	(50ull * 1000 * 1000)

static bool app_polling(struct efi_context_int *ctx)
{
	uint64_t app = atomic_load_explicit(&ctx->app_active_ns, memory_order_relaxed);

	/* app may be a little ahead of our clock read: unsigned wrap-around
	 * then reads as "long ago", which only means we run the transport. */
	return efi_now_ns() - app < APP_ACTIVE_NS;
}

/* Sleeps in ppoll on the kick/stop eventfd and, if watch_wire, the wire's
 * descriptor, for at most tick_ns; drains a kick.  Returns false on an
 * error that ends the thread. */
static bool nap(struct efi_context_int *ctx, bool watch_wire, uint64_t tick_ns, bool *wire_ready)
{
	struct pollfd pfd[2] = {
		{ .fd = ctx->stop_fd, .events = POLLIN },
		{ .fd = efi_wire_fd(ctx->wire), .events = POLLIN },
	};
	struct timespec ts = { .tv_sec = (time_t)(tick_ns / 1000000000ull),
			       .tv_nsec = (long)(tick_ns % 1000000000ull) };

	if (ppoll(pfd, watch_wire ? 2 : 1, &ts, NULL) < 0 && errno != EINTR)
		return false;
	if (pfd[0].revents & POLLIN) {
		uint64_t v;
		if (read(ctx->stop_fd, &v, sizeof(v)) < 0) {
			/* a kick: already cleared by another read */
		}
	}
	*wire_ready = watch_wire && (pfd[1].revents & POLLIN);
	return true;
}

/* Woken by a datagram while the application counts as polling: gives it
 * APP_GRACE_NS to take the datagram.  True if it did (or is in the middle of
 * doing so), false if the datagram was left to us. */
static bool app_takes_datagram(struct efi_context_int *ctx)
{
	uint64_t woke = efi_now_ns();
	struct timespec grace = { .tv_sec = 0, .tv_nsec = (long)APP_GRACE_NS };
	struct pollfd pfd = { .fd = efi_wire_fd(ctx->wire), .events = POLLIN };

	nanosleep(&grace, NULL);
	if (poll(&pfd, 1, 0) <= 0 || !(pfd.revents & POLLIN))
		return true; /* already read */
	return atomic_load_explicit(&ctx->app_active_ns, memory_order_relaxed) >= woke;
}

/* How long a nap of at most tick may last with an ACK held until held
 * (0: none held): until then, never below ACK_NAP_MIN_NS. */
static uint64_t until_held_ack(uint64_t held, uint64_t tick)
{
	uint64_t now;

	if (!held)
		return tick;
	now = efi_now_ns();
	if (held >= now + tick)
		return tick;
	return held > now + ACK_NAP_MIN_NS ? held - now : ACK_NAP_MIN_NS;
}

static void *progress_main(void *arg)
{
	struct efi_context_int *ctx = arg;
	unsigned app_took = 0; /* wake-ups in a row the application served */
	uint64_t spin_until = 0; /* look without sleeping until then */

	/* the grace period is 15 µs: the default 50 µs timer slack would
	 * triple it (affects this thread only) */
	prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
	while (!atomic_load(&ctx->stopping)) {
		bool wire_ready;
		uint64_t tick;

		efi_counters_publish(ctx); /* rate-limited to ~10 per second */

		if (app_polling(ctx)) {
			bool watch = app_took < APP_TAKES_STREAK;
			uint64_t held = atomic_load_explicit(&ctx->ack_deadline_ns, memory_order_relaxed);

			/* An ACK held for the application's answer
			 * (xport.c) leaves by its deadline even if the
			 * application stopped polling right after taking
			 * the completion. */
			if (!nap(ctx, watch, until_held_ack(held, APP_BACKOFF_NS), &wire_ready))
				break;
			if (!watch) {
				/* The wire unwatched for a nap: a datagram
				 * there now is either one the application is
				 * about to take (a poller reads within a
				 * microsecond or so) or one it left (it spins
				 * elsewhere): the grace period tells.  Only
				 * the latter ends the streak.  Watching again
				 * after every unwatched nap cost a genuine
				 * poller two more wake-ups (the datagram, the
				 * grace) per nap on its own CPU. */
				struct pollfd pfd = { .fd = efi_wire_fd(ctx->wire), .events = POLLIN };

				wire_ready = poll(&pfd, 1, 0) > 0 && (pfd.revents & POLLIN) &&
					     !app_takes_datagram(ctx);
				if (wire_ready)
					app_took = 0;	/* left to us: run it now */
			}
			if (held && !wire_ready && !atomic_load(&ctx->stopping) &&
			    atomic_load_explicit(&ctx->ack_deadline_ns, memory_order_relaxed) == held &&
			    efi_now_ns() >= held && pthread_mutex_trylock(&ctx->lock) == 0) {
				efi_xport_run(ctx);
				pthread_mutex_unlock(&ctx->lock);
				continue;
			}
			if (!wire_ready || atomic_load(&ctx->stopping))
				continue;
			if (watch && app_takes_datagram(ctx)) {
				app_took++;
				continue;
			}
			app_took = 0;
			pthread_mutex_lock(&ctx->lock);
			efi_xport_run(ctx);
			pthread_mutex_unlock(&ctx->lock);
			continue;
		}
		app_took = 0;
		/* ctx->busy is read racily on purpose: a stale value only
		 * changes how long this sleep lasts.  Datagrams the wire holds
		 * beyond the last batch do not wake a sleeper: no sleep then. */
		tick = __atomic_load_n(&ctx->busy, __ATOMIC_RELAXED) ? BUSY_TICK_NS : IDLE_TICK_NS;
		/* a held ACK leaves by its deadline (xport.c) */
		tick = until_held_ack(atomic_load_explicit(&ctx->ack_deadline_ns, memory_order_relaxed), tick);
		if (efi_now_ns() < spin_until && !efi_wire_pending(ctx->wire)) {
			struct pollfd pfd = { .fd = efi_wire_fd(ctx->wire), .events = POLLIN };
			if (poll(&pfd, 1, 0) <= 0)
				continue;	/* nothing yet: look again */
		} else if (!efi_wire_pending(ctx->wire) && !nap(ctx, true, tick, &wire_ready)) {
			break;
		}
		if (atomic_load(&ctx->stopping))
			break;
		/* The application started polling while we slept: it
		 * receives what woke us, without a lock hand-off. */
		if (app_polling(ctx))
			continue;
		pthread_mutex_lock(&ctx->lock);
		if (efi_xport_run(ctx) > 0)
			spin_until = efi_now_ns() + SPIN_NS;
		pthread_mutex_unlock(&ctx->lock);
	}
	return NULL;
}

void efi_progress_kick(struct efi_context_int *ctx)
{
	uint64_t one = 1;

	/* The caller is about to sleep: the progress thread takes over now
	 * rather than at the end of the application's polling window. */
	atomic_store_explicit(&ctx->app_active_ns, 0, memory_order_relaxed);
	if (ctx->stop_fd >= 0 && write(ctx->stop_fd, &one, sizeof(one)) < 0) {
		/* the counter is saturated: the thread is awake anyway */
	}
}

int efi_progress_start(struct efi_context_int *ctx)
{
	sigset_t all, old;
	int err;

	ctx->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (ctx->stop_fd < 0)
		return -errno;
	/* The thread takes no signals: they belong to the application. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&ctx->progress, NULL, progress_main, ctx);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		close(ctx->stop_fd);
		ctx->stop_fd = -1;
		return -err;
	}
	ctx->progress_running = true;
	return 0;
}

void efi_progress_stop(struct efi_context_int *ctx)
{
	uint64_t one = 1;

	if (!ctx->progress_running)
		return;
	atomic_store(&ctx->stopping, true);
	if (write(ctx->stop_fd, &one, sizeof(one)) < 0) {
		/* the thread also wakes on its tick */
	}
	pthread_join(ctx->progress, NULL);
	close(ctx->stop_fd);
	ctx->progress_running = false;
}
