/* SPDX-License-Identifier: MIT */
/*
 * Control socket server.  Every client has its own input and output buffer;
 * sockets are non-blocking, so a client that sends half a request or never
 * reads its replies only ever delays itself.  Framing errors get an error
 * reply and the connection is closed (there is no way to resynchronise a
 * stream after a bad length); a well-framed request always gets exactly one
 * reply.  What a client may hold (connections, descriptors, unread
 * replies) is counted per user and per instance (control_limits.h); a
 * client that does not read its replies is not read from either, so what
 * it can make efid buffer is bounded by MaxQueuedRepliesPerConnection plus
 * one reply.
 */
#include "config.h"

#include <endian.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <systemd/sd-event.h>

#include "auth.h"
#include "cm.h"
#include "control.h"
#include "control_int.h"
#include "ctlmsg.h"
#include "efid.h"
#include "handlers.h"
#include "lease.h"
#include "log.h"

/* Gives back what c counts against its user and instance. */
static void client_unaccount(struct client *c)
{
	struct control *ctl = c->ctl;
	/* Descriptors efid passes out are bounded per connection (fds[]) and
	 * by its queued bytes; only those clients pass in are counted. */
	ctl_quota_fds(&ctl->d->config, &c->quota, -(int)c->nin_fds, NULL, 0);
	ctl_quota_queued(&ctl->d->config, &c->quota, -(int64_t)c->queued, NULL, 0);
	c->queued = 0;
	ctl_quota_release(ctl->limits, &c->quota);
}

/* Logs why a client over one of its limits is disconnected (rate-limited:
 * a tenant can make this happen as fast as it connects). */
static void client_over_limit(struct client *c, const char *why)
{
	unsigned skipped;
	if (ratelimit_ok(&c->ctl->limit_rl, &skipped))
		log_warning("disconnecting control client %u (pid %d): %s%s", c->id,
			    (int)c->peer.pid, why, skipped ? " (similar messages suppressed)" : "");
}

void control_client_free(struct client *c)
{
	struct control *ctl = c->ctl;
	client_unaccount(c);
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
	epoll_ctl(ctl->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	for (unsigned i = 0; i < c->nfds; i++)
		close(c->fds[i].fd);
	for (unsigned i = 0; i < c->nin_fds; i++)
		close(c->in_fds[i]);
	lease_free(ctl->d, c->lease);
	free(c->in);
	free(c->out);
	log_debug("client %u (pid %d) disconnected", c->id, (int)c->peer.pid);
	if (ctl->in_batch) {
		/* Later events of this batch may name it: freed after it. */
		c->dead = true;
		c->next = ctl->dead;
		ctl->dead = c;
		return;
	}
	free(c);
}

/* True while c has as many unread reply bytes as one connection may. */
static bool client_out_full(const struct client *c)
{
	uint64_t max = c->ctl->d->config.max_queued_per_conn;
	if (!max || ctl_limits_exempt(&c->peer))
		max = CONTROL_MAX_PENDING_OUT;
	return c->out_len - c->out_off >= max;
}

/* Brings c->queued (and c's accounts) to what is queued now.  Returns 0,
 * or -ENOBUFS (logged) when c's user or instance has too much queued. */
static int client_account_out(struct client *c)
{
	uint64_t now = c->out_len - c->out_off;
	char why[256];
	if (now < c->queued) {
		ctl_quota_queued(&c->ctl->d->config, &c->quota, -(int64_t)(c->queued - now), NULL, 0);
	} else if (now > c->queued) {
		int r = ctl_quota_queued(&c->ctl->d->config, &c->quota, (int64_t)(now - c->queued),
					 why, sizeof(why));
		if (r < 0) {
			client_over_limit(c, why);
			return r;
		}
	}
	c->queued = now;
	return 0;
}

static int client_update_events(struct client *c)
{
	uint32_t ev = 0;
	/* Stop reading while a client does not read its replies (backpressure),
	 * while its input buffer is full of requests waiting for that, and once
	 * it is being closed. */
	if (!c->close_after_flush && !client_out_full(c) && !c->in_full)
		ev |= EPOLLIN;
	if (c->out_len > c->out_off)
		ev |= EPOLLOUT;
	if (ev == c->events)
		return 0;
	struct epoll_event e = { .events = ev, .data.ptr = c };
	if (epoll_ctl(c->ctl->epfd, EPOLL_CTL_MOD, c->fd, &e) < 0)
		return -errno;
	c->events = ev;
	return 0;
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
	client_account_out(c); /* only gives back */
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
	int r = client_account_out(c);
	if (r < 0)
		c->out_len -= len; /* not queued after all: the client is closed */
	return r;
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

	/* Pipelined requests wait while the replies of earlier ones are not
	 * read: the output buffer, not the input, is what would grow. */
	while (c->in_len - off >= CTL_HDR_SIZE && !client_out_full(c)) {
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
			ctl_quota_fds(&c->ctl->d->config, &c->quota, -(int)in.n, NULL, 0);
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
		c->in_full = false;
		c->partial_since = 0; /* progress: restart the clock for the rest */
	}
	if (c->in_len == 0) {
		c->partial_since = 0;
		/* Nothing in flight: descriptors no request claimed are dropped. */
		ctl_quota_fds(&c->ctl->d->config, &c->quota, -(int)c->nin_fds, NULL, 0);
		while (c->nin_fds)
			close(c->in_fds[--c->nin_fds]);
	} else if (client_out_full(c)) {
		/* Waiting for the client to read, not for it to send. */
		c->partial_since = 0;
	} else if (c->partial_since == 0)
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
			if (cap <= c->in_cap) {
				/* full: a complete frame must be processed first */
				c->in_full = true;
				break;
			}
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
		 * (PUBLISH_COUNTERS); close the rest so they cannot pile up.
		 * Those kept count against the sender's limits: a tenant that
		 * parks descriptors on many connections is disconnected before
		 * it fills efid's descriptor table. */
		int over = 0;
		char why[256];
		for (struct cmsghdr *cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
			if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
				size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
				int fds[EFI_CTL_MAX_FDS];
				if (k > EFI_CTL_MAX_FDS)
					k = EFI_CTL_MAX_FDS;
				memcpy(fds, CMSG_DATA(cm), k * sizeof(int));
				for (size_t i = 0; i < k; i++) {
					if (!over && c->nin_fds < sizeof(c->in_fds) / sizeof(c->in_fds[0]))
						over = ctl_quota_fds(&c->ctl->d->config, &c->quota, 1,
								     why, sizeof(why));
					else if (!over)
						over = 1; /* more than one request takes: dropped */
					if (over)
						close(fds[i]);
					else
						c->in_fds[c->nin_fds++] = fds[i];
				}
			}
		}
		if (over < 0) {
			client_over_limit(c, why);
			return over;
		}
		if (n == 0)
			return -ECONNRESET;
		c->in_len += (size_t)n;
		if (c->in_len == c->in_cap)
			break;
	}
	return 0;
}

static void on_client_io(struct client *c, uint32_t revents)
{
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
	/* The client read some replies: requests that waited for that go on
	 * (this is the only event that tells of it, none is read for them). */
	if (r == 0 && !c->close_after_flush && c->in_len >= CTL_HDR_SIZE && !client_out_full(c)) {
		client_process(c);
		r = client_flush(c);
	}
	if (r < 0 || (c->close_after_flush && c->out_len == c->out_off)) {
		control_client_free(c);
		return;
	}
	client_update_events(c);
}

/*
 * Every client is in efid's own epoll set, which sd-event watches as one
 * source.  Given each client as a source of its own, sd-event's loop asks
 * the kernel for every ready descriptor and then dispatches one: 16,000
 * clients closing at once cost 16,000² and efid answered nothing for 11 s
 * (4,000 for 5 s here).  Here one wakeup takes a bounded batch, so the cost
 * is per event, whatever the number of connections, and other sources
 * (the listener, a well-behaved client) get their turn between batches.
 */
#define CLIENT_BATCH 128

static int on_clients(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct control *ctl = userdata;
	struct epoll_event ev[CLIENT_BATCH];
	(void)s;
	(void)revents;

	int n = epoll_wait(fd, ev, CLIENT_BATCH, 0);
	ctl->in_batch = true;
	for (int i = 0; i < n; i++) {
		struct client *c = ev[i].data.ptr;
		if (!c->dead)
			on_client_io(c, ev[i].events);
	}
	ctl->in_batch = false;
	while (ctl->dead) {
		struct client *c = ctl->dead;
		ctl->dead = c->next;
		free(c);
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
			unsigned skipped;
			if (ratelimit_ok(&ctl->limit_rl, &skipped))
				log_info("closing client %u (pid %d): request incomplete for %llu s%s",
					 c->id, (int)c->peer.pid,
					 CONTROL_PARTIAL_TIMEOUT_USEC / 1000000ULL,
					 skipped ? " (similar messages suppressed)" : "");
			control_client_free(c);
		}
	}
	sd_event_source_set_time(s, now + 1000000ULL);
	return 0;
}

int control_client_add(struct control *ctl, int cfd, const struct peer *peer,
		       struct ctl_quota *quota)
{
	struct client *c = calloc(1, sizeof(*c));
	int r = -ENOMEM;

	if (!c)
		goto fail;
	c->ctl = ctl;
	c->fd = cfd;
	c->peer = *peer;
	c->id = ++ctl->next_id;
	c->lease = lease_new(c);
	if (!c->lease)
		goto fail;
	c->events = EPOLLIN;
	struct epoll_event e = { .events = EPOLLIN, .data.ptr = c };
	if (epoll_ctl(ctl->epfd, EPOLL_CTL_ADD, cfd, &e) < 0) {
		r = -errno;
		goto fail;
	}
	c->quota = *quota;
	c->next = ctl->clients;
	if (ctl->clients)
		ctl->clients->prev = c;
	ctl->clients = c;
	ctl->nclients++;
	log_debug("client %u connected: pid %d uid %u %s%s", c->id, (int)c->peer.pid,
		  (unsigned)c->peer.uid, c->peer.host ? "host" : "instance ", c->peer.instance);
	return 0;
fail:
	if (c)
		free(c->lease);
	free(c);
	close(cfd);
	ctl_quota_release(ctl->limits, quota);
	return r;
}

int control_start(struct efid *d)
{
	struct control *ctl = calloc(1, sizeof(*ctl));
	int r;

	if (!ctl)
		return -ENOMEM;
	ctl->d = d;
	ctl->listen_fd = -1;
	ctl->reserve_fd = -1;
	ctl->epfd = -1;
	ctl->limit_rl = (struct ratelimit)RATELIMIT_INIT(10000000ULL, 10);
	ctl->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (ctl->epfd < 0) {
		r = -errno;
		goto fail;
	}
	r = sd_event_add_io(d->event, &ctl->clients_src, ctl->epfd, EPOLLIN, on_clients, ctl);
	if (r < 0)
		goto fail;
	r = control_listen_start(d, ctl);
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
	control_listen_stop(d, ctl);
	sd_event_source_disable_unref(ctl->clients_src);
	if (ctl->epfd >= 0)
		close(ctl->epfd);
	free(ctl);
	return r;
}

void control_stop(struct efid *d)
{
	struct control *ctl = d->control;
	if (!ctl)
		return;
	while (ctl->clients)
		control_client_free(ctl->clients);
	sd_event_source_disable_unref(ctl->sweep);
	control_listen_stop(d, ctl);
	sd_event_source_disable_unref(ctl->clients_src);
	close(ctl->epfd);
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
