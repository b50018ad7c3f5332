/* SPDX-License-Identifier: MIT */
/* Helpers of the wire layer's unit tests (test_wire, test_wire_fault). */
#include "config.h"

#include <arpa/inet.h>
#include <check.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tests/unit/wire_testutil.h"

uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

struct sockaddr_in6 addr6(const char *ip, uint16_t port)
{
	struct sockaddr_in6 a = { .sin6_family = AF_INET6, .sin6_port = htons(port) };

	ck_assert_int_eq(inet_pton(AF_INET6, ip, &a.sin6_addr), 1);
	return a;
}

/* A non-blocking dual-stack UDP socket bound to ip, port 0, with large
 * buffers as efid gives them; its port in *port. */
int udp6_socket(const char *ip, uint16_t *port)
{
	struct sockaddr_in6 a = addr6(ip, 0);
	socklen_t len = sizeof(a);
	int fd, off = 0, big = 16 << 20;

	fd = socket(AF_INET6, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off)), 0);
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof(big)) < 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	*port = ntohs(a.sin6_port);
	return fd;
}

struct efi_wire *udp_wire(const char *ip, uint16_t *port)
{
	struct efi_wire *w = efi_wire_udp_create(udp6_socket(ip, port));

	ck_assert_ptr_nonnull(w);
	return w;
}

/* Datagram contents: the sequence number, then bytes derived from it. */
void fill(uint8_t *buf, uint32_t len, uint32_t seq)
{
	for (uint32_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(seq * 131u + i * 7u + (i >> 8));
	if (len >= 4)
		memcpy(buf, &seq, 4);
}

bool check_fill(const uint8_t *buf, uint32_t len, uint32_t *seq)
{
	static uint8_t want[BIG_CAP];

	if (len < 4)
		return false;
	memcpy(seq, buf, 4);
	fill(want, len, *seq);
	return memcmp(want, buf, len) == 0;
}

struct efi_wire_pkt *alloc_pkts(unsigned n, uint32_t cap)
{
	struct efi_wire_pkt *p = calloc(n, sizeof(*p));

	ck_assert_ptr_nonnull(p);
	for (unsigned i = 0; i < n; i++) {
		p[i].buf = malloc(cap);
		ck_assert_ptr_nonnull(p[i].buf);
		p[i].cap = cap;
	}
	return p;
}

void free_pkts(struct efi_wire_pkt *p, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		free(p[i].buf);
	free(p);
}

bool wait_readable(struct efi_wire *w, int timeout_ms)
{
	struct pollfd pfd = { .fd = efi_wire_fd(w), .events = POLLIN };

	return poll(&pfd, 1, timeout_ms) == 1;
}

int wire_recv_copy(struct efi_wire *w, struct efi_wire_pkt *p, unsigned n)
{
	void **own = calloc(n ? n : 1, sizeof(*own));
	int r;

	ck_assert_ptr_nonnull(own);
	for (unsigned i = 0; i < n; i++)
		own[i] = p[i].buf;
	r = efi_wire_recv(w, p, n);
	for (unsigned i = 0; i < n; i++) {
		if (i < (unsigned)(r > 0 ? r : 0) && p[i].buf != own[i]) {
			ck_assert_uint_le(p[i].len, p[i].cap);
			memcpy(own[i], p[i].buf, p[i].len);
		}
		p[i].buf = own[i];
	}
	free(own);
	return r;
}

/* Receives until want datagrams came or a second passed without any. */
unsigned recv_all(struct efi_wire *w, struct efi_wire_pkt *p, unsigned want)
{
	unsigned got = 0;

	while (got < want) {
		int r = wire_recv_copy(w, p + got, want - got);

		ck_assert_int_ge(r, 0);
		got += (unsigned)r;
		if (r == 0 && !wait_readable(w, 1000))
			break;
	}
	return got;
}

bool same_peer(const struct sockaddr_in6 *a, const struct sockaddr_in6 *b)
{
	return a->sin6_family == AF_INET6 && a->sin6_port == b->sin6_port &&
	       memcmp(&a->sin6_addr, &b->sin6_addr, 16) == 0;
}

/* ---- an in-memory backend, to watch the fault injector exactly ---- */

int mem_send(struct efi_wire *w, struct efi_wire_pkt *p, unsigned n)
{
	struct mem_wire *m = (struct mem_wire *)w;
	unsigned i;

	for (i = 0; i < n && m->count < m->limit; i++) {
		unsigned at = (m->head + m->count++) % MEM_MAX;

		m->q[at].len = efi_wire_pkt_size(&p[i]);
		m->q[at].data = malloc(m->q[at].len ? m->q[at].len : 1);
		efi_wire_pkt_copy(&p[i], m->q[at].data);
		m->q[at].peer = p[i].peer;
	}
	if (i)
		ck_assert_int_eq(eventfd_write(m->efd, 1), 0);
	return (int)i;
}

int mem_recv(struct efi_wire *w, struct efi_wire_pkt *p, unsigned n)
{
	struct mem_wire *m = (struct mem_wire *)w;
	unsigned i;
	eventfd_t v;

	for (i = 0; i < n && m->count; i++) {
		ck_assert_uint_le(m->q[m->head].len, p[i].cap);
		memcpy(p[i].buf, m->q[m->head].data, m->q[m->head].len);
		p[i].len = m->q[m->head].len;
		p[i].peer = m->q[m->head].peer;
		free(m->q[m->head].data);
		m->head = (m->head + 1) % MEM_MAX;
		m->count--;
	}
	if (!m->count)
		eventfd_read(m->efd, &v);
	return (int)i;
}

static int mem_fd(const struct efi_wire *w)
{
	return ((const struct mem_wire *)w)->efd;
}

static void mem_destroy(struct efi_wire *w)
{
	struct mem_wire *m = (struct mem_wire *)w;
	struct efi_wire_pkt *p;

	if (!m)
		return;
	p = alloc_pkts(1, BIG_CAP);
	while (mem_recv(w, p, 1))
		;
	free_pkts(p, 1);
	close(m->efd);
	free(m);
}

static const struct efi_wire_ops mem_ops = {
	.send_batch = mem_send, .recv_batch = mem_recv,
	.poll_fd = mem_fd, .destroy = mem_destroy,
};

struct mem_wire *mem_create(unsigned limit)
{
	struct mem_wire *m = calloc(1, sizeof(*m));

	ck_assert_ptr_nonnull(m);
	m->base.ops = &mem_ops;
	m->limit = limit;
	m->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	ck_assert_int_ge(m->efd, 0);
	return m;
}

/* Sends datagrams seq first..first+n-1 (len 64 + seq % 1000) through w,
 * all of them, in batches of 50. */
void send_seq(struct efi_wire *w, uint32_t first, unsigned n)
{
	struct efi_wire_pkt *p = alloc_pkts(50, 2048);
	unsigned sent = 0;

	while (sent < n) {
		unsigned k = n - sent < 50 ? n - sent : 50;

		for (unsigned i = 0; i < k; i++) {
			p[i].len = 64 + (first + sent + i) % 1000;
			fill(p[i].buf, p[i].len, first + sent + i);
			p[i].peer = addr6("::1", 9);
		}
		int r = efi_wire_send(w, p, k);
		ck_assert_int_eq(r, (int)k);
		sent += k;
	}
	free_pkts(p, 50);
}

/* Takes every datagram out of the mem backend (bypassing any wrapper):
 * their sequence numbers in arrival order, checked byte for byte. */
unsigned drain_mem(struct mem_wire *m, uint32_t *seqs)
{
	struct efi_wire_pkt *p = alloc_pkts(1, 2048);
	unsigned n = 0;

	while (mem_recv(&m->base, p, 1) == 1) {
		ck_assert_msg(check_fill(p->buf, p->len, &seqs[n]), "datagram %u corrupted", n);
		n++;
	}
	free_pkts(p, 1);
	return n;
}
