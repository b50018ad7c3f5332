/* SPDX-License-Identifier: MIT */
/*
 * The out-of-band exchange over TCP, as perftest does it: the client sends
 * the test and its parameters, the server checks the test matches its own and
 * adopts the parameters, then each side sends one line per QP (QPN, PSN,
 * GID, rkey, buffer address and size).  Text lines, so that a mismatch or a
 * stray client is easy to diagnose.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tools/efi-perf/perf.h"

#define OOB_MAGIC	"EFIPERF/1"
#define OOB_LINE_MAX	512

/* One connection per process: a single receive buffer is enough. */
static char rx_buf[4096];
static size_t rx_len;

static void set_nodelay(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

int oob_listen_accept(uint16_t port)
{
	struct sockaddr_in6 sa = { .sin6_family = AF_INET6, .sin6_port = htons(port),
				   .sin6_addr = IN6ADDR_ANY_INIT };
	int one = 1, zero = 0, lfd, fd;

	lfd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0)
		perf_die("cannot create the TCP socket for the exchange: %s", strerror(errno));
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	setsockopt(lfd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	if (bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		perf_die("cannot listen on TCP port %u: %s (another efi-perf server? use -p)", port,
			 strerror(errno));
	if (listen(lfd, 1) < 0)
		perf_die("listen on TCP port %u: %s", port, strerror(errno));
	fprintf(stderr, "efi-perf: waiting for a client on TCP port %u\n", port);
	do
		fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	while (fd < 0 && errno == EINTR);
	if (fd < 0)
		perf_die("accept on TCP port %u: %s", port, strerror(errno));
	close(lfd);
	set_nodelay(fd);
	return fd;
}

int oob_connect(const char *host, uint16_t port)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res, *ai;
	char service[8];
	int fd = -1, err = 0, rc;
	double deadline;

	snprintf(service, sizeof(service), "%u", port);
	rc = getaddrinfo(host, service, &hints, &res);
	if (rc)
		perf_die("cannot resolve '%s': %s", host, gai_strerror(rc));
	/* The server may still be starting: retry refused connections for a
	 * few seconds before calling the peer unreachable. */
	deadline = perf_now() + 5.0;
	for (;;) {
		for (ai = res; ai; ai = ai->ai_next) {
			fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
			if (fd < 0) {
				err = errno;
				continue;
			}
			if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
				break;
			err = errno;
			close(fd);
			fd = -1;
		}
		if (fd >= 0 || err != ECONNREFUSED || perf_now() > deadline)
			break;
		usleep(100 * 1000);
	}
	freeaddrinfo(res);
	if (fd < 0)
		perf_die("peer unreachable: cannot connect to %s TCP port %u: %s (is an efi-perf server "
			 "running there, in the peer's instance, with the same -p?)", host, port,
			 strerror(err));
	set_nodelay(fd);
	return fd;
}

void oob_send_line(int fd, const char *fmt, ...)
{
	char line[OOB_LINE_MAX];
	va_list ap;
	int n;
	size_t off = 0;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0 || n >= (int)sizeof(line) - 1)
		perf_die("internal error: exchange line too long");
	line[n++] = '\n';
	while (off < (size_t)n) {
		ssize_t w = send(fd, line + off, (size_t)n - off, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			perf_die("lost the connection to the peer: %s", w < 0 ? strerror(errno) : "closed");
		off += (size_t)w;
	}
}

/* Takes one complete line out of rx_buf, if there is one. */
static bool take_line(char *buf, size_t size)
{
	char *nl = memchr(rx_buf, '\n', rx_len);
	size_t len;

	if (!nl)
		return false;
	len = (size_t)(nl - rx_buf);
	if (len >= size)
		perf_die("the peer sent a line too long for the exchange (is it efi-perf?)");
	memcpy(buf, rx_buf, len);
	buf[len] = '\0';
	rx_len -= len + 1;
	memmove(rx_buf, nl + 1, rx_len);
	return true;
}

void (*oob_peer_closed_hook)(void);

static bool fill(int fd, int flags)
{
	ssize_t r;

	if (rx_len == sizeof(rx_buf))
		perf_die("the peer sent garbage on the exchange connection (is it efi-perf?)");
	do
		r = recv(fd, rx_buf + rx_len, sizeof(rx_buf) - rx_len, flags);
	while (r < 0 && errno == EINTR);
	if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return false;
	if (r < 0)
		perf_die("lost the connection to the peer: %s", strerror(errno));
	if (r == 0) {
		if (oob_peer_closed_hook)
			oob_peer_closed_hook();
		perf_die("the peer closed the connection (see its output for why)");
	}
	rx_len += (size_t)r;
	return true;
}

void oob_recv_line(int fd, char *buf, size_t size)
{
	while (!take_line(buf, size))
		fill(fd, 0);
}

bool oob_try_recv_line(int fd, char *buf, size_t size)
{
	if (take_line(buf, size))
		return true;
	return fill(fd, MSG_DONTWAIT) && take_line(buf, size);
}

void oob_handshake(struct perf_ctx *pc, struct perf_opts *opts)
{
	char line[OOB_LINE_MAX], test[32];
	unsigned size, all, qps, srq = 0;
	int n;
	unsigned long long iters;
	double duration;

	if (opts->host) {
		oob_send_line(pc->oob_fd,
			      OOB_MAGIC " test=%s size=%u all=%d iters=%llu duration=%.6f qps=%d srq=%d",
			      opts->test_name, opts->size, opts->all_sizes, (unsigned long long)opts->iters,
			      opts->duration, opts->num_qps, opts->use_srq);
		oob_recv_line(pc->oob_fd, line, sizeof(line));
		if (!strncmp(line, "ERR ", 4))
			perf_die("the server refused: %s", line + 4);
		if (strcmp(line, "OK"))
			perf_die("unexpected answer from the server: '%.80s' (is it efi-perf?)", line);
		return;
	}
	oob_recv_line(pc->oob_fd, line, sizeof(line));
	/* srq= came later: a client without it asks for no SRQ */
	n = sscanf(line, OOB_MAGIC " test=%31s size=%u all=%u iters=%llu duration=%lf qps=%u srq=%u", test,
		   &size, &all, &iters, &duration, &qps, &srq);
	if (n != 6 && n != 7) {
		oob_send_line(pc->oob_fd, "ERR not an efi-perf client of this version");
		perf_die("a client connected that is not efi-perf (or another version): '%.80s'", line);
	}
	if (strcmp(test, opts->test_name)) {
		oob_send_line(pc->oob_fd, "ERR mismatched test: the server runs %s, the client asked for %s",
			      opts->test_name, test);
		perf_die("mismatched test: this server runs %s, the client asked for %s", opts->test_name,
			 test);
	}
	if (qps < 1 || qps > PERF_MAX_QPS || size > (1u << 31) || srq > 1) {
		oob_send_line(pc->oob_fd, "ERR parameters out of range");
		perf_die("the client sent parameters out of range: '%.80s'", line);
	}
	/* The client decides sizes, iterations and QPs; the server follows. */
	opts->size = size;
	opts->all_sizes = all;
	opts->iters = iters;
	opts->duration = duration;
	opts->num_qps = (int)qps;
	/* either side's --use-srq gives both an SRQ: the receives that
	 * matter (send_bw) are the server's */
	opts->use_srq = opts->use_srq || srq;
	oob_send_line(pc->oob_fd, "OK");
}

static void gid_to_hex(const union efi_gid *gid, char *out)
{
	for (int i = 0; i < 16; i++)
		sprintf(out + 2 * i, "%02x", gid->raw[i]);
}

static bool hex_to_gid(const char *hex, union efi_gid *gid)
{
	for (int i = 0; i < 16; i++) {
		unsigned v;

		if (sscanf(hex + 2 * i, "%2x", &v) != 1)
			return false;
		gid->raw[i] = (uint8_t)v;
	}
	return hex[32] == '\0';
}

void oob_exchange_qps(struct perf_ctx *pc)
{
	char line[OOB_LINE_MAX], gidhex[33], rhex[64];

	for (int i = 0; i < pc->num_qps; i++) {
		struct perf_qp *pq = &pc->qps[i];

		gid_to_hex(&pc->gid, gidhex);
		oob_send_line(pc->oob_fd, "qp %d qpn=%u psn=%u gid=%s rkey=%u addr=%" PRIu64 " size=%zu", i,
			      pq->qp->qp_num, pq->psn, gidhex, pq->mr->rkey, (uint64_t)(uintptr_t)pq->buf,
			      pq->half);
	}
	for (int i = 0; i < pc->num_qps; i++) {
		struct perf_qp_info *ri = &pc->qps[i].remote;
		int idx;
		unsigned long long addr, size;

		oob_recv_line(pc->oob_fd, line, sizeof(line));
		if (sscanf(line, "qp %d qpn=%u psn=%u gid=%63s rkey=%u addr=%llu size=%llu", &idx,
			   &ri->qpn, &ri->psn, rhex, &ri->rkey, &addr, &size) != 7 || idx != i ||
		    !hex_to_gid(rhex, &ri->gid))
			perf_die("the peer sent a bad QP description: '%.100s'", line);
		ri->addr = addr;
		ri->size = size;
	}
}

void oob_sync(struct perf_ctx *pc, const char *tag)
{
	char line[OOB_LINE_MAX];

	oob_send_line(pc->oob_fd, "sync %s", tag);
	oob_recv_line(pc->oob_fd, line, sizeof(line));
	if (strncmp(line, "sync ", 5) || strcmp(line + 5, tag))
		perf_die("out of step with the peer: expected 'sync %s', got '%.80s'", tag, line);
}
