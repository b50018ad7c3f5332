/* SPDX-License-Identifier: MIT */
/*
 * The progress thread: runs the transport while the application does not,
 * so a Write or Read aimed at a process blocked elsewhere still completes,
 * retransmission timers fire, and completion channels get their events.
 * While an application thread is polling (it ran the transport within the
 * last millisecond), the thread stays out of its way and only ticks.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <time.h>
#include <signal.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "efi_int.h"

/* An application thread that ran the transport this recently is polling:
 * the progress thread then only ticks, at this period. */
#define APP_ACTIVE_NS	(200ull * 1000)
#define BUSY_TICK_NS	(1000ull * 1000)
#define IDLE_TICK_NS	(50ull * 1000 * 1000)

static void *progress_main(void *arg)
{
	struct efi_context_int *ctx = arg;

	while (!atomic_load(&ctx->stopping)) {
		uint64_t now = efi_now_ns();
		uint64_t app = atomic_load_explicit(&ctx->app_active_ns, memory_order_relaxed);
		struct pollfd pfd[2] = {
			{ .fd = ctx->stop_fd, .events = POLLIN },
			{ .fd = efi_wire_fd(ctx->wire), .events = POLLIN },
		};
		bool app_polling = now - app < APP_ACTIVE_NS;
		/* ctx->busy is read racily on purpose: a stale value only
		 * changes how long this sleep lasts. */
		uint64_t tick = app_polling ? APP_ACTIVE_NS
			      : __atomic_load_n(&ctx->busy, __ATOMIC_RELAXED) ? BUSY_TICK_NS : IDLE_TICK_NS;
		struct timespec ts = { .tv_sec = (time_t)(tick / 1000000000ull),
				       .tv_nsec = (long)(tick % 1000000000ull) };

		if (ppoll(pfd, app_polling ? 1 : 2, &ts, NULL) < 0 && errno != EINTR)
			break;
		if (atomic_load(&ctx->stopping))
			break;
		if (pfd[0].revents & POLLIN) {
			uint64_t v;
			if (read(ctx->stop_fd, &v, sizeof(v)) < 0) {
				/* a kick: already cleared by another read */
			}
		}
		now = efi_now_ns();
		app = atomic_load_explicit(&ctx->app_active_ns, memory_order_relaxed);
		if (now - app < APP_ACTIVE_NS && !(pfd[1].revents & POLLIN) &&
		    !__atomic_load_n(&ctx->busy, __ATOMIC_RELAXED))
			continue;
		pthread_mutex_lock(&ctx->lock);
		efi_xport_run(ctx);
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
