/* SPDX-License-Identifier: MIT */
/*
 * Control socket server.  Every client has its own input and output buffer;
 * sockets are non-blocking, so a client that sends half a request or never
 * reads its replies only ever delays itself.  Framing errors get an error
 * reply and the connection is closed (there is no way to resynchronise a
 * stream after a bad length); a well-framed request always gets exactly one
 * reply.
 */
#include "config.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>

#include "auth.h"
#include "cm.h"
#include "control.h"
#include "ctlmsg.h"
#include "efid.h"
#include "handlers.h"
#include "lease.h"
#include "log.h"

struct client {
	struct control *ctl;
	struct client *next, *prev;
	int fd;
	sd_event_source *io;
	struct peer peer;
	uint8_t *in;
	size_t in_len, in_cap;
	uint8_t *out;
	size_t out_len, out_off, out_cap;
	uint64_t partial_since; /* CLOCK_MONOTONIC usec when a request began arriving, 0 if none */
	bool close_after_flush;
	unsigned id;
	struct lease *lease;   /* wire endpoints this connection holds */
	/* Descriptors to pass, each with the first byte of its reply frame
	 * (offset into out); in offset order. */
	struct pending_fd {
		size_t offset;
		int fd;
	} fds[2 * EFI_CTL_MAX_FDS];
	unsigned nfds;
	/* Descriptors received and not yet claimed by a request (the next
	 * request takes them all: PUBLISH_COUNTERS one, LEASE_RESUME one per
	 * lane); dropped once no request is in flight. */
	int in_fds[EFI_CTL_MAX_FDS];
	unsigned nin_fds;
};

struct control {
	struct efid *d;
	int listen_fd;
	bool owns_path;        /* efid created the socket file (not socket activation) */
	sd_event_source *listen_src;
	sd_event_source *sweep;
	struct client *clients;
	unsigned nclients;
	unsigned next_id;
};

static void client_free(struct client *c)
{
	struct control *ctl = c->ctl;
	if (c->prev)
		c->prev->next = c->next;
	else
		ctl->clients = c->next;
	if (c->next)
		c->next->prev = c->prev;
	ctl->nclients--;
	/* Listeners and connections of this client end with it (a process
	 * that died included): the peers learn it now, not at a timeout. */
	cm_client_gone(ctl->d, c);
	sd_event_source_disable_unref(c->io);
	close(c->fd);
	for (unsigned i = 0; i < c->nfds; i++)
		close(c->fds[i].fd);
	for (unsigned i = 0; i < c->nin_fds; i++)
		close(c->in_fds[i]);
	lease_free(ctl->d, c->lease);
	free(c->in);
	free(c->out);
	log_debug("client %u (pid %d) disconnected", c->id, (int)c->peer.pid);
	free(c);
}

static int client_update_events(struct client *c)
{
	uint32_t ev = 0;
	/* Stop reading while a client does not read its replies (backpressure),
	 * and once it is being closed. */
	if (!c->close_after_flush && c->out_len - c->out_off < CONTROL_MAX_PENDING_OUT)
		ev |= EPOLLIN;
	if (c->out_len > c->out_off)
		ev |= EPOLLOUT;
	return sd_event_source_set_io_events(c->io, ev);
}

/* Writes what the socket takes now.  A descriptor goes out with the first
 * byte of its frame, so a send never runs past the next such byte.
 * Returns 0, or -errno when the client is gone. */
static int client_flush(struct client *c)
{
	while (c->out_off < c->out_len) {
		size_t end = c->out_len;
		/* The descriptors of the frame starting here go in one message. */
		unsigned k = 0;
		while (k < c->nfds && k < EFI_CTL_MAX_FDS && c->fds[k].offset == c->out_off)
			k++;
		bool with_fd = k > 0;
		if (!with_fd && c->nfds)
			end = c->fds[0].offset;
		struct iovec iov = { .iov_base = c->out + c->out_off, .iov_len = end - c->out_off };
		union {
			char buf[CMSG_SPACE(sizeof(int) * EFI_CTL_MAX_FDS)];
			struct cmsghdr align;
		} u;
		struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
		if (with_fd) {
			memset(&u, 0, sizeof(u));
			msg.msg_control = u.buf;
			msg.msg_controllen = CMSG_SPACE(sizeof(int) * k);
			struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
			cm->cmsg_level = SOL_SOCKET;
			cm->cmsg_type = SCM_RIGHTS;
			cm->cmsg_len = CMSG_LEN(sizeof(int) * k);
			for (unsigned i = 0; i < k; i++)
				memcpy(CMSG_DATA(cm) + i * sizeof(int), &c->fds[i].fd, sizeof(int));
		}
		ssize_t n = sendmsg(c->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				break;
			return -errno;
		}
		if (with_fd && n > 0) {
			/* The client has its own references now. */
			for (unsigned i = 0; i < k; i++)
				close(c->fds[i].fd);
			memmove(&c->fds[0], &c->fds[k], (c->nfds - k) * sizeof(c->fds[0]));
			c->nfds -= k;
		}
		c->out_off += (size_t)n;
	}
	if (c->out_off == c->out_len)
		c->out_off = c->out_len = 0;
	return 0;
}

static int client_queue(struct client *c, const uint8_t *data, size_t len)
{
	if (c->out_off > 0 && c->out_off == c->out_len)
		c->out_off = c->out_len = 0;
	if (c->out_len + len > c->out_cap) {
		size_t cap = c->out_cap ? c->out_cap : 4096;
		while (cap < c->out_len + len)
			cap *= 2;
		uint8_t *o = realloc(c->out, cap);
		if (!o)
			return -ENOMEM;
		c->out = o;
		c->out_cap = cap;
	}
	memcpy(c->out + c->out_len, data, len);
	c->out_len += len;
	return 0;
}

/* Queues a reply: STATUS, then ERROR when failing, then the body's
 * attributes; the descriptors of pass (or NULL) travel with it and are owned
 * by the client state from here on (closed if they cannot be queued). */
static int client_reply(struct client *c, uint32_t seq, int status, const char *err,
			const struct ctl_buf *body, struct ctl_fds *pass)
{
	struct ctl_buf b;
	int r;

	ctl_buf_init(&b);
	ctl_msg_begin(&b, EFI_CTL_REPLY, seq);
	ctl_put_i32(&b, EFI_A_STATUS, status);
	if (status < 0) {
		ctl_put_str(&b, EFI_A_ERROR, err && *err ? err : strerror(-status));
	} else if (body && body->len > CTL_HDR_SIZE) {
		/* The body was built as a message of its own: copy its attributes. */
		size_t n = body->len - CTL_HDR_SIZE;
		if (!b.err && b.len + n <= CTL_HDR_SIZE + b.limit) {
			uint8_t *tmp = realloc(b.data, b.len + n);
			if (!tmp) {
				b.err = -ENOMEM;
			} else {
				b.data = tmp;
				b.cap = b.len + n;
				memcpy(b.data + b.len, body->data + CTL_HDR_SIZE, n);
				b.len += n;
			}
		} else if (!b.err) {
			b.err = -EMSGSIZE;
		}
	}
	r = ctl_msg_end(&b);
	if (r < 0) {
		/* The answer did not fit or memory ran out: say so instead. */
		ctl_buf_free(&b);
		ctl_buf_init(&b);
		ctl_msg_begin(&b, EFI_CTL_REPLY, seq);
		ctl_put_i32(&b, EFI_A_STATUS, r);
		ctl_put_str(&b, EFI_A_ERROR, r == -EMSGSIZE ? "the reply is too large; narrow the request (e.g. name one instance)" : "efid is out of memory");
		r = ctl_msg_end(&b);
	}
	if (r == 0 && pass && pass->n && status == 0 &&
	    c->nfds + pass->n <= sizeof(c->fds) / sizeof(c->fds[0])) {
		size_t offset = c->out_len;
		if (c->out_off > 0 && c->out_off == c->out_len)
			offset = 0; /* client_queue restarts an empty buffer */
		r = client_queue(c, b.data, b.len);
		for (unsigned i = 0; r == 0 && i < pass->n; i++) {
			c->fds[c->nfds].offset = offset;
			c->fds[c->nfds].fd = pass->fd[i];
			c->nfds++;
		}
		if (r == 0)
			pass->n = 0;
	} else if (r == 0) {
		r = client_queue(c, b.data, b.len);
	}
	if (pass)
		ctl_fds_close(pass);
	ctl_buf_free(&b);
	return r;
}

static const char *framing_error(int r)
{
	switch (r) {
	case -EPROTO:
		return "not an efid control message (bad magic): is this client speaking the efid protocol?";
	case -EPROTONOSUPPORT:
		return "unsupported control protocol version: efid speaks version 1; upgrade or downgrade the client to match efid";
	case -EMSGSIZE:
		return "request too large: efid accepts requests of at most 64 KiB";
	default:
		return "malformed request";
	}
}

/* Dispatches every complete frame in the input buffer.  Returns 0, or a
 * negative errno when the connection must be closed (after flushing). */
static int client_process(struct client *c)
{
	size_t off = 0;
	int r = 0;

	while (c->in_len - off >= CTL_HDR_SIZE) {
		struct ctl_hdr h;
		r = ctl_hdr_parse(c->in + off, c->in_len - off, EFI_CTL_MAX_REQUEST, &h);
		if (r < 0) {
			uint32_t seq = 0;
			if (r != -EPROTO)
				memcpy(&seq, c->in + off + 12, 4), seq = le32toh(seq);
			log_debug("client %u: framing error: %s", c->id, strerror(-r));
			client_reply(c, seq, r, framing_error(r), NULL, NULL);
			c->close_after_flush = true;
			off = c->in_len;
			break;
		}
		if (c->in_len - off < CTL_HDR_SIZE + h.length)
			break;
		const uint8_t *payload = c->in + off + CTL_HDR_SIZE;
		char err[512] = "";
		struct ctl_buf body;
		ctl_buf_init(&body);
		ctl_msg_begin(&body, EFI_CTL_REPLY, h.seq);
		int status;
		struct ctl_fds in = { .n = 0 }, pass = { .n = 0 };
		if (h.type == EFI_CTL_REPLY) {
			status = -EBADMSG;
			snprintf(err, sizeof(err), "a reply is not a request");
		} else {
			/* The request takes every descriptor that came before it. */
			memcpy(in.fd, c->in_fds, c->nin_fds * sizeof(int));
			in.n = c->nin_fds;
			c->nin_fds = 0;
			if (cm_is_request(h.type)) {
				ctl_fds_close(&in);
				status = cm_handle_request(c->ctl->d, c, h.type, payload, h.length,
							   &body, err, sizeof(err));
			} else {
				status = handle_request(c->ctl->d, &c->peer, c->lease, h.type,
							payload, h.length, &body, &in, &pass,
							err, sizeof(err));
			}
		}
		if (status > 0)
			status = 0;
		if (client_reply(c, h.seq, status, err, &body, &pass) < 0)
			c->close_after_flush = true;
		ctl_buf_free(&body);
		off += CTL_HDR_SIZE + h.length;
		if (c->close_after_flush)
			break;
	}
	if (off > 0) {
		memmove(c->in, c->in + off, c->in_len - off);
		c->in_len -= off;
		c->partial_since = 0; /* progress: restart the clock for the rest */
	}
	if (c->in_len == 0) {
		c->partial_since = 0;
		/* Nothing in flight: descriptors no request claimed are dropped. */
		while (c->nin_fds)
			close(c->in_fds[--c->nin_fds]);
	}
	else if (c->partial_since == 0)
		sd_event_now(c->ctl->d->event, CLOCK_MONOTONIC, &c->partial_since);
	return 0;
}

static int client_read(struct client *c)
{
	for (;;) {
		if (c->in_cap - c->in_len < 4096) {
			size_t cap = c->in_cap ? c->in_cap * 2 : 8192;
			/* Never buffer more than one maximal request plus one read. */
			if (cap > CTL_HDR_SIZE + EFI_CTL_MAX_REQUEST + 8192)
				cap = CTL_HDR_SIZE + EFI_CTL_MAX_REQUEST + 8192;
			if (cap <= c->in_cap)
				break; /* full: a complete frame must be processed first */
			uint8_t *n = realloc(c->in, cap);
			if (!n)
				return -ENOMEM;
			c->in = n;
			c->in_cap = cap;
		}
		struct iovec iov = { .iov_base = c->in + c->in_len, .iov_len = c->in_cap - c->in_len };
		union {
			char buf[CMSG_SPACE(sizeof(int) * EFI_CTL_MAX_FDS)];
			struct cmsghdr align;
		} u;
		struct msghdr msg = {
			.msg_iov = &iov, .msg_iovlen = 1,
			.msg_control = u.buf, .msg_controllen = sizeof(u.buf),
		};
		ssize_t n = recvmsg(c->fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return 0;
			return -errno;
		}
		/* Keep a few descriptors for a request that takes one
		 * (PUBLISH_COUNTERS); close the rest so they cannot pile up. */
		for (struct cmsghdr *cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
			if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
				size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
				int fds[EFI_CTL_MAX_FDS];
				if (k > EFI_CTL_MAX_FDS)
					k = EFI_CTL_MAX_FDS;
				memcpy(fds, CMSG_DATA(cm), k * sizeof(int));
				for (size_t i = 0; i < k; i++) {
					if (c->nin_fds < sizeof(c->in_fds) / sizeof(c->in_fds[0]))
						c->in_fds[c->nin_fds++] = fds[i];
					else
						close(fds[i]);
				}
			}
		}
		if (n == 0)
			return -ECONNRESET;
		c->in_len += (size_t)n;
		if (c->in_len == c->in_cap)
			break;
	}
	return 0;
}

static int on_client_io(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct client *c = userdata;
	int r = 0;

	if (revents & EPOLLIN) {
		r = client_read(c);
		if (r == 0 || r == -ECONNRESET)
			client_process(c);
		if (r == -ECONNRESET) {
			/* Half-closed: still deliver what we owe, then go. */
			c->close_after_flush = true;
			r = 0;
		}
	}
	if (r == 0 && (revents & (EPOLLHUP | EPOLLERR)) && !(revents & EPOLLIN))
		r = -ECONNRESET;
	if (r == 0)
		r = client_flush(c);
	if (r < 0 || (c->close_after_flush && c->out_len == c->out_off)) {
		client_free(c);
		return 0;
	}
	client_update_events(c);
	return 0;
}

static int on_listen(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct control *ctl = userdata;

	for (int burst = 0; burst < 64; burst++) {
		int cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (cfd < 0) {
			if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
				log_warning("accept on the control socket failed: %m");
			return 0;
		}
		if (ctl->nclients >= CONTROL_MAX_CLIENTS) {
			log_warning("refusing a control client: %u clients connected already", ctl->nclients);
			close(cfd);
			continue;
		}
		struct client *c = calloc(1, sizeof(*c));
		if (!c) {
			close(cfd);
			continue;
		}
		c->ctl = ctl;
		c->fd = cfd;
		c->id = ++ctl->next_id;
		c->lease = lease_new(c);
		if (!c->lease) {
			close(cfd);
			free(c);
			continue;
		}
		int r = auth_identify(cfd, &c->peer);
		if (r < 0) {
			log_warning("refusing a control client whose credentials cannot be read: %s",
				    strerror(-r));
			close(cfd);
			free(c->lease);
			free(c);
			continue;
		}
		r = sd_event_add_io(ctl->d->event, &c->io, cfd, EPOLLIN, on_client_io, c);
		if (r < 0) {
			close(cfd);
			free(c->lease);
			free(c);
			continue;
		}
		c->next = ctl->clients;
		if (ctl->clients)
			ctl->clients->prev = c;
		ctl->clients = c;
		ctl->nclients++;
		log_debug("client %u connected: pid %d uid %u %s%s", c->id, (int)c->peer.pid,
			  (unsigned)c->peer.uid, c->peer.host ? "host" : "instance ",
			  c->peer.instance);
	}
	return 0;
}

/* Closes clients that have been sending one request for too long, so a
 * stalled writer cannot hold buffers forever. */
static int on_sweep(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct control *ctl = userdata;
	uint64_t now = usec;

	for (struct client *c = ctl->clients, *next; c; c = next) {
		next = c->next;
		if (c->partial_since && now > c->partial_since &&
		    now - c->partial_since > CONTROL_PARTIAL_TIMEOUT_USEC) {
			log_info("closing client %u (pid %d): request incomplete for %llu s", c->id,
				 (int)c->peer.pid, CONTROL_PARTIAL_TIMEOUT_USEC / 1000000ULL);
			client_free(c);
		}
	}
	sd_event_source_set_time(s, now + 1000000ULL);
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

int control_start(struct efid *d)
{
	struct control *ctl = calloc(1, sizeof(*ctl));
	int r;

	raise_fd_limit();
	if (!ctl)
		return -ENOMEM;
	ctl->d = d;
	ctl->listen_fd = -1;

	int n = sd_listen_fds(1);
	if (n > 1) {
		log_error("systemd passed %d sockets; efid takes exactly one (efid.socket)", n);
		r = -EINVAL;
		goto fail;
	}
	if (n == 1) {
		if (sd_is_socket_unix(SD_LISTEN_FDS_START, SOCK_STREAM, 1, NULL, 0) <= 0) {
			log_error("the socket systemd passed is not a listening Unix stream socket");
			r = -EINVAL;
			goto fail;
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
			goto fail;
		ctl->listen_fd = r;
		ctl->owns_path = true;
	}
	r = sd_event_add_io(d->event, &ctl->listen_src, ctl->listen_fd, EPOLLIN, on_listen, ctl);
	if (r < 0)
		goto fail;
	uint64_t now;
	sd_event_now(d->event, CLOCK_MONOTONIC, &now);
	r = sd_event_add_time(d->event, &ctl->sweep, CLOCK_MONOTONIC, now + 1000000ULL, 100000ULL,
			      on_sweep, ctl);
	if (r < 0)
		goto fail;
	sd_event_source_set_enabled(ctl->sweep, SD_EVENT_ON);
	d->control = ctl;
	return 0;
fail:
	sd_event_source_disable_unref(ctl->sweep);
	sd_event_source_disable_unref(ctl->listen_src);
	if (ctl->listen_fd >= 0)
		close(ctl->listen_fd);
	free(ctl);
	return r;
}

void control_stop(struct efid *d)
{
	struct control *ctl = d->control;
	if (!ctl)
		return;
	while (ctl->clients)
		client_free(ctl->clients);
	sd_event_source_disable_unref(ctl->sweep);
	sd_event_source_disable_unref(ctl->listen_src);
	if (ctl->listen_fd >= 0)
		close(ctl->listen_fd);
	if (ctl->owns_path)
		unlink(d->socket_path);
	free(ctl);
	d->control = NULL;
	lease_registry_free(d);
}

int control_push(struct client *c, const struct ctl_buf *frame)
{
	if (c->close_after_flush)
		return 0; /* going away: it will not read this */
	int r = frame->err ? frame->err : client_queue(c, frame->data, frame->len);
	if (r == 0)
		r = client_flush(c);
	if (r < 0) {
		/* Missing an event would leave the client waiting forever:
		 * close it instead, the hang-up tells it something is wrong. */
		c->out_off = c->out_len = 0;
		c->close_after_flush = true;
		shutdown(c->fd, SHUT_RDWR);
	}
	client_update_events(c);
	return r < 0 ? r : 0;
}

const struct peer *control_peer(const struct client *c)
{
	return &c->peer;
}

unsigned control_client_count(const struct efid *d)
{
	return d->control ? d->control->nclients : 0;
}
