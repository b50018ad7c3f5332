/* SPDX-License-Identifier: MIT */
/*
 * The listening side of the control socket: creating it (or taking the one
 * systemd passed), accepting clients and admitting them within their limits
 * (control_limits.h), and surviving a full descriptor table.  accept()
 * failing with EMFILE/ENFILE leaves the connection in the backlog and the
 * socket readable, so a loop that only logs and returns spins at full CPU
 * (and writes a line per spin).  Instead one descriptor is kept in reserve:
 * given up for a moment it lets the next pending connection be taken, host
 * root's served and anyone else's closed at once; when even that fails the
 * listener is turned off for a pause that doubles up to a second.  Every
 * complaint is rate-limited.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>

#include "control.h"
#include "control_int.h"
#include "efid.h"
#include "log.h"

#define BACKOFF_MIN_USEC 10000ULL
#define BACKOFF_MAX_USEC 1000000ULL
/* Host root may go past CONTROL_MAX_CLIENTS by this much: the operator's
 * `efictl status` works while everybody else is at the global limit. */
#define ROOT_EXTRA_CLIENTS 64

static void open_reserve(struct control *ctl)
{
	if (ctl->reserve_fd < 0)
		ctl->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
}

static int on_backoff(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct control *ctl = userdata;
	(void)s;
	(void)usec;
	open_reserve(ctl);
	sd_event_source_set_enabled(ctl->listen_src, SD_EVENT_ON);
	return 0;
}

/* Out of descriptors with no reserve: stop listening for a while (the
 * pending connections wait in the backlog, nothing spins). */
static void listen_pause(struct control *ctl, int err)
{
	unsigned skipped;
	uint64_t now;

	ctl->backoff_usec = ctl->backoff_usec ? ctl->backoff_usec * 2 : BACKOFF_MIN_USEC;
	if (ctl->backoff_usec > BACKOFF_MAX_USEC)
		ctl->backoff_usec = BACKOFF_MAX_USEC;
	if (ratelimit_ok(&ctl->accept_rl, &skipped))
		log_warning("cannot accept control clients: %s (%u control clients connected); "
			    "pausing %llu ms%s", strerror(err), ctl->nclients,
			    (unsigned long long)(ctl->backoff_usec / 1000),
			    skipped ? " (similar messages suppressed)" : "");
	sd_event_now(ctl->d->event, CLOCK_MONOTONIC, &now);
	if (!ctl->backoff) {
		if (sd_event_add_time(ctl->d->event, &ctl->backoff, CLOCK_MONOTONIC,
				      now + ctl->backoff_usec, 1000, on_backoff, ctl) < 0)
			return; /* without a timer, keep listening: better busy than deaf */
	} else {
		sd_event_source_set_time(ctl->backoff, now + ctl->backoff_usec);
	}
	sd_event_source_set_enabled(ctl->backoff, SD_EVENT_ONESHOT);
	sd_event_source_set_enabled(ctl->listen_src, SD_EVENT_OFF);
}

static void refuse(struct control *ctl, int cfd, const struct peer *p, const char *why)
{
	unsigned skipped;
	if (ratelimit_ok(&ctl->refuse_rl, &skipped))
		log_warning("refusing a control client (pid %d uid %u%s%s): %s%s", (int)p->pid,
			    (unsigned)p->uid, p->host ? " host" : " instance ", p->instance, why,
			    skipped ? " (similar messages suppressed)" : "");
	close(cfd);
}

/* Identifies and admits cfd.  fd_starved: it was taken with the reserve
 * descriptor, and only host root may stay.  Returns 0 when it became a
 * client, else 1 (refused, cfd closed). */
static int admit(struct control *ctl, int cfd, bool fd_starved)
{
	struct peer peer;
	struct ctl_quota q;
	char why[256];

	int r = auth_identify(cfd, &peer);
	if (r < 0) {
		memset(&peer, 0, sizeof(peer));
		snprintf(why, sizeof(why), "its credentials cannot be read: %s", strerror(-r));
		refuse(ctl, cfd, &peer, why);
		return 1;
	}
	bool root = ctl_limits_exempt(&peer);
	if (fd_starved && !root) {
		refuse(ctl, cfd, &peer, "efid is out of descriptors");
		return 1;
	}
	if (ctl->nclients >= CONTROL_MAX_CLIENTS + (root ? ROOT_EXTRA_CLIENTS : 0)) {
		snprintf(why, sizeof(why), "%u clients connected already", ctl->nclients);
		refuse(ctl, cfd, &peer, why);
		return 1;
	}
	if (ctl_quota_admit(ctl->limits, &ctl->d->config, &peer, &q, why, sizeof(why)) < 0) {
		refuse(ctl, cfd, &peer, why);
		return 1;
	}
	return control_client_add(ctl, cfd, &peer, &q) < 0 ? 1 : 0;
}

static int on_listen(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct control *ctl = userdata;
	(void)s;
	(void)revents;

	/* A bounded burst: other clients get their turn between bursts. */
	for (int burst = 0; burst < 64; burst++) {
		bool starved = false;
		int cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (cfd < 0 && (errno == EMFILE || errno == ENFILE)) {
			int e = errno;
			if (ctl->reserve_fd >= 0) {
				close(ctl->reserve_fd);
				ctl->reserve_fd = -1;
				cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
				starved = true;
			}
			if (cfd < 0 && (errno == EMFILE || errno == ENFILE || !starved)) {
				listen_pause(ctl, e);
				return 0;
			}
		}
		if (cfd < 0) {
			unsigned skipped;
			if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED &&
			    ratelimit_ok(&ctl->accept_rl, &skipped))
				log_warning("accept on the control socket failed: %m");
			open_reserve(ctl);
			return 0;
		}
		ctl->backoff_usec = 0;
		admit(ctl, cfd, starved);
		/* Taken back unless host root's connection holds it now. */
		open_reserve(ctl);
	}
	return 0;
}

/* Creates, binds and listens on path, replacing a stale socket file but
 * never one a live efid answers on. */
static int listen_on_path(const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof(sun.sun_path)) {
		log_error("socket path %s is too long (at most %zu bytes)", path,
			  sizeof(sun.sun_path) - 1);
		return -ENAMETOOLONG;
	}
	strcpy(sun.sun_path, path);

	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
		if (errno != EADDRINUSE)
			goto fail;
		int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (probe >= 0 && connect(probe, (struct sockaddr *)&sun, sizeof(sun)) == 0) {
			close(probe);
			close(fd);
			log_error("another efid already listens on %s: stop it, or give this one its own --runtime-dir",
				  path);
			return -EADDRINUSE;
		}
		if (probe >= 0)
			close(probe);
		unlink(path);
		if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0)
			goto fail;
	}
	/* Anyone may connect: every request is checked against the caller's
	 * credentials and namespace (instances need to reach efid too). */
	if (chmod(path, 0666) < 0)
		goto fail;
	if (listen(fd, 128) < 0)
		goto fail;
	return fd;
fail:;
	int e = -errno;
	log_error("cannot listen on %s: %s", path, strerror(-e));
	close(fd);
	return e;
}

/* One descriptor per client: make room for CONTROL_MAX_CLIENTS of them
 * (the soft limit is often 1024; the hard one is what the admin allows). */
static void raise_fd_limit(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return;
	rlim_t want = CONTROL_MAX_CLIENTS + 1024;
	if (rl.rlim_cur >= want)
		return;
	rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > want ? want : rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
		log_warning("cannot raise the descriptor limit: %m");
}

int control_listen_start(struct efid *d, struct control *ctl)
{
	int r;

	raise_fd_limit();
	ctl->refuse_rl = (struct ratelimit)RATELIMIT_INIT(10000000ULL, 10);
	ctl->accept_rl = (struct ratelimit)RATELIMIT_INIT(10000000ULL, 5);
	ctl->limits = ctl_limits_new();
	if (!ctl->limits)
		return -ENOMEM;
	open_reserve(ctl);
	int n = sd_listen_fds(1);
	if (n > 1) {
		log_error("systemd passed %d sockets; efid takes exactly one (efid.socket)", n);
		return -EINVAL;
	}
	if (n == 1) {
		if (sd_is_socket_unix(SD_LISTEN_FDS_START, SOCK_STREAM, 1, NULL, 0) <= 0) {
			log_error("the socket systemd passed is not a listening Unix stream socket");
			return -EINVAL;
		}
		ctl->listen_fd = SD_LISTEN_FDS_START;
		int fl = fcntl(ctl->listen_fd, F_GETFL);
		if (fl >= 0)
			fcntl(ctl->listen_fd, F_SETFL, fl | O_NONBLOCK);
		fcntl(ctl->listen_fd, F_SETFD, FD_CLOEXEC);
		struct sockaddr_un sun;
		socklen_t sl = sizeof(sun);
		if (getsockname(ctl->listen_fd, (struct sockaddr *)&sun, &sl) == 0 &&
		    sl > offsetof(struct sockaddr_un, sun_path) && sun.sun_path[0])
			snprintf(d->socket_path, sizeof(d->socket_path), "%s", sun.sun_path);
		log_info("using the control socket passed by systemd (%s)", d->socket_path);
	} else {
		r = listen_on_path(d->socket_path);
		if (r < 0)
			return r;
		ctl->listen_fd = r;
		ctl->owns_path = true;
	}
	return sd_event_add_io(d->event, &ctl->listen_src, ctl->listen_fd, EPOLLIN, on_listen, ctl);
}

/* Undoes control_listen_start, also a partial one (clients gone already). */
void control_listen_stop(struct efid *d, struct control *ctl)
{
	ctl->backoff = sd_event_source_disable_unref(ctl->backoff);
	ctl->listen_src = sd_event_source_disable_unref(ctl->listen_src);
	if (ctl->listen_fd >= 0)
		close(ctl->listen_fd);
	ctl->listen_fd = -1;
	if (ctl->owns_path)
		unlink(d->socket_path);
	if (ctl->reserve_fd >= 0)
		close(ctl->reserve_fd);
	ctl->reserve_fd = -1;
	ctl_limits_free(ctl->limits);
	ctl->limits = NULL;
}
