/* SPDX-License-Identifier: MIT */
/*
 * udp-limit: what plain UDP sockets get between two hosts, the ceiling for
 * a transport over UDP (bench/vs-tcp.sh prints EFI's numbers against it).
 *
 *   udp-limit recv ADDR PORT
 *       one socket bound to ADDR:PORT, UDP_GRO on, an 8 MiB receive buffer
 *       (SO_RCVBUFFORCE, else SO_RCVBUF as far as rmem_max lets it);
 *       recvmmsg into 64 KiB buffers, counting payload bytes and datagrams
 *       (a GRO super-datagram counts as its length over the segment size
 *       its UDP_GRO cmsg gives).  Ends 1 s after the last datagram, or
 *       60 s after it started, and prints
 *           bytes N datagrams D seconds S gbps G
 *       S: from the first datagram to the last; G: the bytes after the
 *       first batch over S (the first batch arrived before the clock ran).
 *   udp-limit send ADDR PORT SECONDS [SEG]
 *       UDP_SEGMENT (GSO) sends of 64 KB (as many whole SEG-byte datagrams
 *       as fit, at most 64) from one blocking socket, for SECONDS; SEG
 *       1..65507, default 1472 (a 1500-byte MTU's).  Prints
 *           sent bytes N gbps G
 *   udp-limit pong ADDR PORT [epoll]
 *       echoes every datagram to its sender, spinning on a non-blocking
 *       socket; ends on ping's end marker, 1 s after the last datagram, or
 *       after 60 s without any.  Prints "echoed N".
 *   udp-limit ping ADDR PORT SECONDS [epoll]
 *       8-byte ping-pong with pong for SECONDS, spinning on a non-blocking
 *       socket; a ping unanswered for 100 ms is sent again (counted lost);
 *       the first 10 exchanges warm up and are not counted.  Prints the
 *       half round trip's median and 99th percentile:
 *           p50_us X p99_us Y
 *   With "epoll" (on both sides), each waits in epoll_wait(2) until its
 *   socket is readable instead of spinning: the kernel's wake-up cost is in
 *   the figure, the baseline of an event-driven transport (EFI's completion
 *   channel).
 * SECONDS: 1..3600.  Exit: 0; 1 on a system error (or nothing arrived, or
 * no answer for 5 s); 2 on bad arguments.
 */
#include "config.h" /* _GNU_SOURCE: recvmmsg */

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#ifndef SOL_UDP
#define SOL_UDP 17
#endif

#define RCVBUF (8 << 20)
#define RECV_VLEN 8
#define RECV_BUF 65536
#define RECV_IDLE_NS 1000000000ull
#define RECV_MAX_NS 60000000000ull
#define GSO_MAX_BYTES 65507u	/* largest IPv4 UDP payload */
#define GSO_MAX_SEGS 64u	/* UDP_MAX_SEGMENTS of older kernels */
#define PING_RESEND_NS 100000000ull
#define PING_GIVEUP_NS 5000000000ull
#define PING_WARMUP 10
#define PING_END UINT64_MAX

static int usage(FILE *f, int rc)
{
	fprintf(f, "usage: udp-limit recv ADDR PORT\n"
		   "       udp-limit send ADDR PORT SECONDS [SEG]\n"
		   "       udp-limit pong ADDR PORT [epoll]\n"
		   "       udp-limit ping ADDR PORT SECONDS [epoll]\n"
		   "ADDR: IPv4 address; PORT: 1..65535; SECONDS: 1..3600; SEG: 1..65507 (default 1472)\n");
	return rc;
}

static int parse_ulong(const char *s, unsigned long min, unsigned long max, unsigned long *out)
{
	char *end;

	if (s[0] < '0' || s[0] > '9')
		return 0;
	errno = 0;
	*out = strtoul(s, &end, 10);
	return errno == 0 && *end == '\0' && *out >= min && *out <= max;
}

static int parse_addr(const char *addr, const char *port, struct sockaddr_in *sin)
{
	unsigned long p;

	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	if (inet_pton(AF_INET, addr, &sin->sin_addr) != 1 || !parse_ulong(port, 1, 65535, &p))
		return 0;
	sin->sin_port = htons((unsigned short)p);
	return 1;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int fail(const char *what, int fd)
{
	fprintf(stderr, "udp-limit: %s: %s\n", what, strerror(errno));
	if (fd >= 0)
		close(fd);
	return 1;
}

static int udp_socket(int nonblock)
{
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | (nonblock ? SOCK_NONBLOCK : 0), 0);

	if (fd < 0)
		perror("udp-limit: socket");
	return fd;
}

static int do_recv(const struct sockaddr_in *sin)
{
	static char bufs[RECV_VLEN][RECV_BUF];
	static char ctl[RECV_VLEN][CMSG_SPACE(sizeof(int))];
	struct mmsghdr msgs[RECV_VLEN];
	struct iovec iovs[RECV_VLEN];
	unsigned long long bytes = 0, first_bytes = 0, datagrams = 0;
	uint64_t start, first = 0, last = 0;
	int fd, one = 1, size = RCVBUF, i;
	double seconds, gbps;

	fd = udp_socket(0);
	if (fd < 0)
		return 1;
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)) < 0 &&
	    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size)) < 0)
		return fail("SO_RCVBUF", fd);
	/* counting stays right without GRO: then each datagram comes alone */
	if (setsockopt(fd, SOL_UDP, UDP_GRO, &one, sizeof(one)) < 0)
		fprintf(stderr, "udp-limit: UDP_GRO: %s (receiving without it)\n", strerror(errno));
	if (bind(fd, (const struct sockaddr *)sin, sizeof(*sin)) < 0)
		return fail("bind", fd);
	start = now_ns();
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		uint64_t t = now_ns(), end = start + RECV_MAX_NS;
		int n, r;

		if (first && last + RECV_IDLE_NS < end)
			end = last + RECV_IDLE_NS;
		if (t >= end)
			break;
		r = poll(&p, 1, (int)((end - t + 999999) / 1000000));
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return fail("poll", fd);
		}
		if (r == 0)
			continue;
		/* drain what is queued, then poll again */
		for (;;) {
			unsigned long long batch = 0;

			for (i = 0; i < RECV_VLEN; i++) {
				iovs[i].iov_base = bufs[i];
				iovs[i].iov_len = RECV_BUF;
				memset(&msgs[i], 0, sizeof(msgs[i]));
				msgs[i].msg_hdr.msg_iov = &iovs[i];
				msgs[i].msg_hdr.msg_iovlen = 1;
				msgs[i].msg_hdr.msg_control = ctl[i];
				msgs[i].msg_hdr.msg_controllen = sizeof(ctl[i]);
			}
			n = recvmmsg(fd, msgs, RECV_VLEN, MSG_DONTWAIT, NULL);
			if (n < 0) {
				if (errno == EAGAIN || errno == EWOULDBLOCK)
					break;
				if (errno == EINTR)
					continue;
				return fail("recvmmsg", fd);
			}
			for (i = 0; i < n; i++) {
				struct cmsghdr *c;
				unsigned len = msgs[i].msg_len;
				int seg = 0;

				for (c = CMSG_FIRSTHDR(&msgs[i].msg_hdr); c; c = CMSG_NXTHDR(&msgs[i].msg_hdr, c))
					if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO &&
					    c->cmsg_len >= CMSG_LEN(sizeof(int)))
						memcpy(&seg, CMSG_DATA(c), sizeof(seg));
				batch += len;
				datagrams += seg > 0 && len > 0 ? (len + (unsigned)seg - 1) / (unsigned)seg : 1;
			}
			bytes += batch;
			last = now_ns();
			if (!first) {
				first = last;
				first_bytes = batch;
			}
		}
	}
	close(fd);
	seconds = first ? (double)(last - first) / 1e9 : 0;
	gbps = seconds > 0 ? (double)(bytes - first_bytes) * 8 / seconds / 1e9 : 0;
	printf("bytes %llu datagrams %llu seconds %.6f gbps %.4f\n", bytes, datagrams, seconds, gbps);
	if (!first) {
		fprintf(stderr, "udp-limit: no datagram arrived in %llu s\n", RECV_MAX_NS / 1000000000ull);
		return 1;
	}
	return 0;
}

static int do_send(const struct sockaddr_in *sin, unsigned long seconds, unsigned long seg)
{
	static char buf[GSO_MAX_BYTES];
	unsigned long long bytes = 0, errors = 0;
	unsigned nseg = GSO_MAX_BYTES / (unsigned)seg, len;
	uint64_t start, end, t;
	int fd, gso = (int)seg;

	if (nseg > GSO_MAX_SEGS)
		nseg = GSO_MAX_SEGS;
	len = nseg * (unsigned)seg;
	fd = udp_socket(0);
	if (fd < 0)
		return 1;
	if (setsockopt(fd, SOL_UDP, UDP_SEGMENT, &gso, sizeof(gso)) < 0)
		return fail("UDP_SEGMENT", fd);
	if (connect(fd, (const struct sockaddr *)sin, sizeof(*sin)) < 0)
		return fail("connect", fd);
	memset(buf, 0xa5, sizeof(buf));
	start = now_ns();
	end = start + (uint64_t)seconds * 1000000000ull;
	for (t = start; t < end; t = now_ns()) {
		ssize_t n = send(fd, buf, len, 0);

		if (n >= 0) {
			bytes += (unsigned long long)n;
			continue;
		}
		/* a queue overflowing on the way, or the receiver not bound yet
		 * (ICMP port unreachable on a connected socket): go on */
		if (errno == ENOBUFS || errno == EAGAIN || errno == EINTR || errno == ECONNREFUSED) {
			errors++;
			continue;
		}
		return fail("send", fd);
	}
	close(fd);
	if (errors)
		fprintf(stderr, "udp-limit: %llu sends failed for a moment (ENOBUFS, ECONNREFUSED)\n", errors);
	printf("sent bytes %llu gbps %.4f\n", bytes, (double)bytes * 8 / ((double)(t - start) / 1e9) / 1e9);
	return 0;
}

/* An epoll set watching fd for input (epoll mode), or -1 on failure. */
static int epoll_on(int fd)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int ep = epoll_create1(EPOLL_CLOEXEC);

	if (ep < 0)
		return -1;
	if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
		close(ep);
		return -1;
	}
	return ep;
}

/* Waits until fd is readable (epoll mode: ep >= 0) for up to ms; with no
 * epoll set, returns at once (the caller spins). */
static void wait_input(int ep, int ms)
{
	struct epoll_event ev;

	if (ep >= 0)
		(void)epoll_wait(ep, &ev, 1, ms);
}

static int do_pong(const struct sockaddr_in *sin, int use_epoll)
{
	unsigned long long echoed = 0;
	uint64_t start, last = 0;
	unsigned spins = 0;
	int fd, ep = -1;

	fd = udp_socket(1);
	if (fd < 0)
		return 1;
	if (bind(fd, (const struct sockaddr *)sin, sizeof(*sin)) < 0)
		return fail("bind", fd);
	if (use_epoll && (ep = epoll_on(fd)) < 0)
		return fail("epoll", fd);
	start = now_ns();
	for (;;) {
		struct sockaddr_in from;
		socklen_t fromlen = sizeof(from);
		uint64_t msg;
		ssize_t n = recvfrom(fd, &msg, sizeof(msg), MSG_DONTWAIT, (struct sockaddr *)&from, &fromlen);

		if (n < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
				return fail("recvfrom", fd);
			wait_input(ep, 100);
			if (ep >= 0 || ++spins % 4096 == 0) {
				uint64_t t = now_ns();

				if (last ? t - last > RECV_IDLE_NS : t - start > RECV_MAX_NS)
					break;
			}
			continue;
		}
		if (n == (ssize_t)sizeof(msg) && msg == PING_END)
			break;
		last = now_ns();
		if (sendto(fd, &msg, (size_t)n, 0, (struct sockaddr *)&from, fromlen) < 0 &&
		    errno != ENOBUFS && errno != EAGAIN && errno != EINTR)
			return fail("sendto", fd);
		echoed++;
	}
	if (ep >= 0)
		close(ep);
	close(fd);
	printf("echoed %llu\n", echoed);
	return 0;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

/* the P-th percentile (0 < P <= 1) of n sorted samples, in microseconds */
static double pct_us(const uint32_t *v, size_t n, double p)
{
	size_t k = (size_t)(p * (double)n + 0.999999);

	if (k < 1)
		k = 1;
	if (k > n)
		k = n;
	return v[k - 1] / 1000.0;
}

static int do_ping(const struct sockaddr_in *sin, unsigned long seconds, int use_epoll)
{
	uint32_t *half = NULL;
	size_t n = 0, cap = 0;
	unsigned long long lost = 0;
	uint64_t seq = 0, end, t0, answered;
	int fd, i, ep = -1;

	fd = udp_socket(1);
	if (fd < 0)
		return 1;
	if (connect(fd, (const struct sockaddr *)sin, sizeof(*sin)) < 0)
		return fail("connect", fd);
	if (use_epoll && (ep = epoll_on(fd)) < 0)
		return fail("epoll", fd);
	answered = now_ns();
	end = answered + (uint64_t)seconds * 1000000000ull;
	for (;;) {
		uint64_t msg = ++seq, t1;

		t0 = now_ns();
		if (t0 >= end)
			break;
		if (send(fd, &msg, sizeof(msg), 0) < 0 && errno != ENOBUFS && errno != EAGAIN &&
		    errno != EINTR && errno != ECONNREFUSED) {
			free(half);
			return fail("send", fd);
		}
		for (;;) {
			uint64_t reply;
			ssize_t r = recv(fd, &reply, sizeof(reply), MSG_DONTWAIT);

			t1 = now_ns();
			if (r == (ssize_t)sizeof(reply) && reply == seq)
				break;
			/* ECONNREFUSED: pong not there (yet); a stale reply: ignored */
			if (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR &&
			    errno != ECONNREFUSED) {
				free(half);
				return fail("recv", fd);
			}
			if (t1 - t0 > PING_RESEND_NS)
				break;
			if (r < 0)
				wait_input(ep, (int)((PING_RESEND_NS - (t1 - t0)) / 1000000) + 1);
		}
		if (t1 - t0 > PING_RESEND_NS) {
			lost++;
			if (t1 - answered > PING_GIVEUP_NS) {
				fprintf(stderr, "udp-limit: no answer from pong for %llu s\n",
					PING_GIVEUP_NS / 1000000000ull);
				free(half);
				close(fd);
				return 1;
			}
			continue;
		}
		answered = t1;
		if (seq <= PING_WARMUP)
			continue;
		if (n == cap) {
			uint32_t *p;

			cap = cap ? cap * 2 : 65536;
			p = realloc(half, cap * sizeof(*half));
			if (!p) {
				free(half);
				return fail("realloc", fd);
			}
			half = p;
		}
		half[n++] = (uint32_t)((t1 - t0) / 2);
	}
	/* tell pong to stop (three times: one may be lost) */
	for (i = 0; i < 3; i++) {
		uint64_t msg = PING_END;

		(void)send(fd, &msg, sizeof(msg), 0);
	}
	if (ep >= 0)
		close(ep);
	close(fd);
	if (n == 0) {
		fprintf(stderr, "udp-limit: no exchange completed\n");
		free(half);
		return 1;
	}
	if (lost)
		fprintf(stderr, "udp-limit: %llu pings unanswered for 100 ms, sent again\n", lost);
	qsort(half, n, sizeof(*half), cmp_u32);
	printf("p50_us %.3f p99_us %.3f\n", pct_us(half, n, 0.50), pct_us(half, n, 0.99));
	free(half);
	return 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_in sin;
	unsigned long seconds, seg = 1472;
	const char *mode = argc > 1 ? argv[1] : "";

	if (argc == 2 && (strcmp(mode, "-h") == 0 || strcmp(mode, "--help") == 0))
		return usage(stdout, 0);
	if (argc < 4 || !parse_addr(argv[2], argv[3], &sin))
		return usage(stderr, 2);
	if (strcmp(mode, "recv") == 0 && argc == 4)
		return do_recv(&sin);
	int use_epoll = strcmp(argv[argc - 1], "epoll") == 0;
	if (strcmp(mode, "pong") == 0 && argc == 4 + use_epoll)
		return do_pong(&sin, use_epoll);
	if (strcmp(mode, "send") == 0 && (argc == 5 || argc == 6)) {
		if (!parse_ulong(argv[4], 1, 3600, &seconds) ||
		    (argc == 6 && !parse_ulong(argv[5], 1, GSO_MAX_BYTES, &seg)))
			return usage(stderr, 2);
		return do_send(&sin, seconds, seg);
	}
	if (strcmp(mode, "ping") == 0 && argc == 5 + use_epoll) {
		if (!parse_ulong(argv[4], 1, 3600, &seconds))
			return usage(stderr, 2);
		return do_ping(&sin, seconds, use_epoll);
	}
	return usage(stderr, 2);
}
