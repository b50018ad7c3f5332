/* SPDX-License-Identifier: MIT */
/* Blocking client for the efid control socket. */
#include "config.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "ctlclient.h"

struct ctl_client {
	int fd;
	uint32_t next_seq;
};

const char *ctl_default_socket_path(void)
{
	const char *p = getenv("EFI_SOCKET");
	return (p && *p) ? p : EFI_CTL_DEFAULT_SOCKET;
}

int ctl_client_connect(const char *path, struct ctl_client **out)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	if (!path)
		path = ctl_default_socket_path();
	if (strlen(path) >= sizeof(sun.sun_path))
		return -ENAMETOOLONG;
	strcpy(sun.sun_path, path);

	struct ctl_client *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->next_seq = 1;
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0) {
		int e = -errno;
		free(c);
		return e;
	}
	if (connect(c->fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
		int e = -errno;
		close(c->fd);
		free(c);
		return e;
	}
	*out = c;
	return 0;
}

void ctl_client_close(struct ctl_client *c)
{
	if (!c)
		return;
	close(c->fd);
	free(c);
}

int ctl_send_frame(int fd, const void *buf, size_t len, const int *fds, int nfds)
{
	const uint8_t *p = buf;
	size_t sent = 0;
	if (nfds < 0 || nfds > EFI_CTL_MAX_FDS)
		return -EINVAL;
	while (sent < len) {
		struct iovec iov = { .iov_base = (void *)(p + sent), .iov_len = len - sent };
		union {
			char buf[CMSG_SPACE(sizeof(int) * EFI_CTL_MAX_FDS)];
			struct cmsghdr align;
		} u;
		struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
		if (sent == 0 && nfds > 0) {
			memset(&u, 0, sizeof(u));
			msg.msg_control = u.buf;
			msg.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
			struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
			cm->cmsg_level = SOL_SOCKET;
			cm->cmsg_type = SCM_RIGHTS;
			cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
			memcpy(CMSG_DATA(cm), fds, sizeof(int) * (size_t)nfds);
		}
		ssize_t n = sendmsg(fd, &msg, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		sent += (size_t)n;
	}
	return 0;
}

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits until fd is readable or the deadline passes.  Returns 0 or -errno. */
static int wait_readable(int fd, long long deadline)
{
	for (;;) {
		int timeout = -1;
		long long left = 0;
		if (deadline >= 0) {
			/* past the deadline: still look once at what is there */
			left = deadline - now_ms();
			timeout = left <= 0 ? 0 : left > 1000000 ? 1000000 : (int)left;
		}
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		int r = poll(&pfd, 1, timeout);
		if (r > 0)
			return 0;
		if (r == 0 && deadline >= 0 && left <= 0)
			return -ETIMEDOUT;
		if (r == 0)
			continue;
		if (errno != EINTR)
			return -errno;
	}
}

/* Reads exactly len bytes, collecting any descriptors that come along. */
static int read_exact(int fd, uint8_t *buf, size_t len, struct ctl_reply *rep, long long deadline)
{
	size_t got = 0;
	while (got < len) {
		int r = wait_readable(fd, deadline);
		if (r)
			return r;
		struct iovec iov = { .iov_base = buf + got, .iov_len = len - got };
		union {
			char buf[CMSG_SPACE(sizeof(int) * EFI_CTL_MAX_FDS)];
			struct cmsghdr align;
		} u;
		struct msghdr msg = {
			.msg_iov = &iov, .msg_iovlen = 1,
			.msg_control = u.buf, .msg_controllen = sizeof(u.buf),
		};
		ssize_t n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -errno;
		}
		for (struct cmsghdr *cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
			if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
				continue;
			size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			int *in = (int *)CMSG_DATA(cm);
			for (size_t i = 0; i < k; i++) {
				if (rep->nfds < EFI_CTL_MAX_FDS)
					rep->fds[rep->nfds++] = in[i];
				else
					close(in[i]);
			}
		}
		if (msg.msg_flags & MSG_CTRUNC)
			return -EPROTO;
		if (n == 0)
			return -ECONNRESET;
		got += (size_t)n;
	}
	return 0;
}

void ctl_reply_free(struct ctl_reply *rep)
{
	if (!rep)
		return;
	for (int i = 0; i < rep->nfds; i++)
		if (rep->fds[i] >= 0)
			close(rep->fds[i]);
	free(rep->buf);
	memset(rep, 0, sizeof(*rep));
}

int ctl_client_fd(const struct ctl_client *c)
{
	return c ? c->fd : -1;
}

/* Reads one whole frame (any type) into *rep.  A frame, once begun, is read
 * to its end even past the deadline (for up to a second more), so that a
 * short timeout can never leave the stream in the middle of a frame. */
static int read_frame(struct ctl_client *c, struct ctl_reply *rep, long long deadline)
{
	uint8_t hb[CTL_HDR_SIZE];
	struct ctl_hdr h;
	int r = wait_readable(c->fd, deadline);
	if (r)
		return r;
	long long finish = now_ms() + 1000;
	if (deadline >= 0 && deadline > finish)
		finish = deadline;
	if (deadline < 0)
		finish = -1;
	r = read_exact(c->fd, hb, sizeof(hb), rep, finish);
	if (r)
		return r == -ETIMEDOUT ? -EPROTO : r;
	if (ctl_hdr_parse(hb, sizeof(hb), EFI_CTL_MAX_PAYLOAD, &h))
		return -EPROTO;
	free(rep->buf);
	rep->buf = malloc(CTL_HDR_SIZE + h.length + 1);
	if (!rep->buf)
		return -ENOMEM;
	memcpy(rep->buf, hb, CTL_HDR_SIZE);
	r = read_exact(c->fd, rep->buf + CTL_HDR_SIZE, h.length, rep, finish);
	if (r)
		return r == -ETIMEDOUT ? -EPROTO : r;
	rep->hdr = h;
	rep->payload = rep->buf + CTL_HDR_SIZE;
	rep->payload_len = h.length;
	return 0;
}

int ctl_client_recv(struct ctl_client *c, struct ctl_reply *frame, int timeout_ms)
{
	long long deadline = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
	memset(frame, 0, sizeof(*frame));
	int r = read_frame(c, frame, deadline);
	if (r)
		ctl_reply_free(frame);
	return r;
}

int ctl_client_send(struct ctl_client *c, struct ctl_buf *req)
{
	if (!req->data || req->len < CTL_HDR_SIZE || req->err)
		return req->err ? req->err : -EINVAL;
	uint32_t le = htole32(c->next_seq++);
	memcpy(req->data + 12, &le, 4);
	int r = ctl_send_frame(c->fd, req->data, req->len, NULL, 0);
	return r == -EPIPE ? -ECONNRESET : r;
}

int ctl_client_call(struct ctl_client *c, struct ctl_buf *req, const int *fds, int nfds,
		    struct ctl_reply *rep, int timeout_ms)
{
	return ctl_client_call_ex(c, req, fds, nfds, rep, timeout_ms, NULL, NULL);
}

int ctl_client_call_ex(struct ctl_client *c, struct ctl_buf *req, const int *fds, int nfds,
		       struct ctl_reply *rep, int timeout_ms,
		       void (*other)(void *ud, struct ctl_reply *frame), void *ud)
{
	long long deadline = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
	memset(rep, 0, sizeof(*rep));
	if (!req->data || req->len < CTL_HDR_SIZE || req->err)
		return req->err ? req->err : -EINVAL;

	uint32_t seq = c->next_seq++;
	uint32_t le = htole32(seq);
	memcpy(req->data + 12, &le, 4);
	int r = ctl_send_frame(c->fd, req->data, req->len, fds, nfds);
	if (r)
		return r == -EPIPE ? -ECONNRESET : r;

	for (;;) {
		r = read_frame(c, rep, deadline);
		if (r)
			goto fail;
		if (rep->hdr.type != EFI_CTL_REPLY || rep->hdr.seq != seq) {
			/* not ours: an event, or a stale reply */
			if (other && rep->hdr.type != EFI_CTL_REPLY) {
				struct ctl_reply frame = *rep;
				memset(rep, 0, sizeof(*rep));
				other(ud, &frame);
			}
			continue;
		}

		static const struct ctl_policy pol[EFI_A_ERROR + 1] = {
			[EFI_A_STATUS] = { .kind = CTL_I32 },
			[EFI_A_ERROR] = { .kind = CTL_STR, .maxlen = 4096 },
		};
		struct ctl_attr tb[EFI_A_ERROR + 1];
		if (ctl_parse(rep->payload, rep->payload_len, pol, EFI_A_ERROR + 1, tb, NULL) ||
		    !ctl_has(tb, EFI_A_STATUS)) {
			r = -EPROTO;
			goto fail;
		}
		ctl_attr_i32(&tb[EFI_A_STATUS], &rep->status);
		if (rep->status > 0) {
			r = -EPROTO;
			goto fail;
		}
		if (ctl_has(tb, EFI_A_ERROR))
			ctl_attr_str(&tb[EFI_A_ERROR], &rep->error);
		return 0;
	}
fail:
	ctl_reply_free(rep);
	return r;
}
