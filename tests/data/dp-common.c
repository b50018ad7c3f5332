/* SPDX-License-Identifier: MIT */
/*
 * dp-test's plumbing: failing loudly, opening the device, making and
 * connecting QPs, the TCP side channel, posting and waiting with deadlines,
 * and data patterns that tell where a copy went wrong.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <efi/efi_cm.h>

#include "tests/data/dp.h"

const char *dp_case = "?";

void (*dp_fail_hook)(void);

void dp_fail_at(const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	char msg[1024];
	void (*hook)(void) = dp_fail_hook;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fflush(stdout);
	fprintf(stderr, "FAIL %s (%s:%d): %s\n", dp_case, file, line, msg);
	fflush(stderr);
	dp_fail_hook = NULL;	/* a failure inside the hook ends here */
	if (hook)
		hook();
	fflush(stdout);
	/* other threads may be inside libefi: no atexit handlers */
	_exit(1);
}

void dp_skip(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "SKIP %s: ", dp_case);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	_exit(77);
}

void dp_log(const char *fmt, ...)
{
	va_list ap;

	printf("[%s] ", dp_case);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

double dp_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ------------------------------------------------------------- TCP side */

static char rx_buf[4096];
static size_t rx_len;

static int oob_server(uint16_t port)
{
	struct sockaddr_in6 sa = { .sin6_family = AF_INET6, .sin6_port = htons(port),
				   .sin6_addr = IN6ADDR_ANY_INIT };
	int one = 1, zero = 0, lfd, fd;

	lfd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	DP_CHECK(lfd >= 0, "socket: %s", strerror(errno));
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	setsockopt(lfd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	DP_CHECK(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) == 0, "bind TCP port %u: %s", port,
		 strerror(errno));
	DP_CHECK(listen(lfd, 1) == 0, "listen: %s", strerror(errno));
	do
		fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	while (fd < 0 && errno == EINTR);
	DP_CHECK(fd >= 0, "accept: %s", strerror(errno));
	close(lfd);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

static int oob_client(const char *host, uint16_t port, double timeout)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res;
	char service[8];
	double deadline = dp_now() + timeout;
	int fd, one = 1, rc;

	snprintf(service, sizeof(service), "%u", port);
	rc = getaddrinfo(host, service, &hints, &res);
	DP_CHECK(rc == 0, "cannot resolve %s: %s", host, gai_strerror(rc));
	for (;;) {
		fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		DP_CHECK(fd >= 0, "socket: %s", strerror(errno));
		if (connect(fd, res->ai_addr, res->ai_addrlen) == 0)
			break;
		rc = errno;
		close(fd);
		DP_CHECK(dp_now() < deadline, "cannot reach the server at %s port %u: %s", host, port,
			 strerror(rc));
		usleep(50 * 1000);
	}
	freeaddrinfo(res);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

void dp_send_line(struct dp_side *s, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	DP_CHECK(n > 0 && n < (int)sizeof(line) - 1, "side-channel line too long");
	line[n++] = '\n';
	for (int off = 0; off < n;) {
		ssize_t w = send(s->oob_fd, line + off, (size_t)(n - off), MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		DP_CHECK(w > 0, "the peer is gone (send: %s)", w < 0 ? strerror(errno) : "closed");
		off += (int)w;
	}
}

void dp_recv_line(struct dp_side *s, char *buf, size_t size)
{
	for (;;) {
		char *nl = memchr(rx_buf, '\n', rx_len);
		ssize_t r;

		if (nl) {
			size_t len = (size_t)(nl - rx_buf);

			DP_CHECK(len < size, "side-channel line too long");
			memcpy(buf, rx_buf, len);
			buf[len] = '\0';
			rx_len -= len + 1;
			memmove(rx_buf, nl + 1, rx_len);
			return;
		}
		DP_CHECK(rx_len < sizeof(rx_buf), "garbage on the side channel");
		r = recv(s->oob_fd, rx_buf + rx_len, sizeof(rx_buf) - rx_len, 0);
		if (r < 0 && errno == EINTR)
			continue;
		DP_CHECK(r > 0, "the peer is gone (it failed? see its output): %s",
			 r < 0 ? strerror(errno) : "connection closed");
		rx_len += (size_t)r;
	}
}

void dp_sync(struct dp_side *s, const char *tag)
{
	char line[256];

	dp_send_line(s, "sync %s", tag);
	dp_recv_line(s, line, sizeof(line));
	DP_CHECK(!strncmp(line, "sync ", 5) && !strcmp(line + 5, tag),
		 "out of step with the peer: at 'sync %s' it sent '%s'", tag, line);
}

void dp_send_u64(struct dp_side *s, const char *tag, uint64_t v)
{
	dp_send_line(s, "val %s %" PRIu64, tag, v);
}

uint64_t dp_recv_u64(struct dp_side *s, const char *tag)
{
	char line[256], got[128];
	unsigned long long v;

	dp_recv_line(s, line, sizeof(line));
	DP_CHECK(sscanf(line, "val %127s %llu", got, &v) == 2 && !strcmp(got, tag),
		 "out of step with the peer: expected value '%s', got '%s'", tag, line);
	return v;
}

/* ----------------------------------------------------------- the device */

static bool gid_is_v4_mapped(const union efi_gid *g)
{
	static const uint8_t prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	return !memcmp(g->raw, prefix, sizeof(prefix));
}

void dp_side_open(struct dp_side *s, const struct dp_opts *opts)
{
	struct efi_device **list, *dev = NULL;
	int n = 0;

	memset(s, 0, sizeof(*s));
	s->opts = opts;
	s->oob_fd = -1;
	list = efi_get_device_list(&n);
	DP_CHECK(list, "efi_get_device_list: %s", strerror(errno));
	DP_CHECK(n > 0, "no EFI device visible (is this process inside an instance?)");
	for (int i = 0; i < n; i++)
		if (!opts->dev_name || !strcmp(efi_get_device_name(list[i]), opts->dev_name))
			dev = dev ? dev : list[i];
	DP_CHECK(dev, "no device named %s", opts->dev_name);
	s->ctx = efi_open_device(dev);
	DP_CHECK(s->ctx, "efi_open_device(%s): %s", efi_get_device_name(dev), strerror(errno));
	efi_free_device_list(list);
	DP_CHECK_RC(efi_query_device(s->ctx, &s->dev_attr));
	DP_CHECK_RC(efi_query_port(s->ctx, 1, &s->port_attr));
	DP_CHECK(s->port_attr.state == EFI_PORT_ACTIVE, "port state %s, not active",
		 efi_port_state_str(s->port_attr.state));
	s->gid_index = -1;
	for (int i = 0; i < s->port_attr.gid_tbl_len; i++) {
		union efi_gid g;

		if (efi_query_gid(s->ctx, 1, i, &g) == 0 && gid_is_v4_mapped(&g)) {
			s->gid_index = i;
			s->gid = g;
			break;
		}
	}
	DP_CHECK(s->gid_index >= 0, "no IPv4-mapped GID among %d", s->port_attr.gid_tbl_len);
	s->pd = efi_alloc_pd(s->ctx);
	DP_CHECK(s->pd, "efi_alloc_pd: %s", strerror(errno));
	s->oob_fd = opts->server ? oob_server(opts->port) : oob_client(opts->host, opts->port, opts->timeout);
	dp_sync(s, opts->case_name);
}

void dp_side_close(struct dp_side *s)
{
	efi_cm_destroy_id(s->listener);
	DP_CHECK_RC(efi_dealloc_pd(s->pd));
	DP_CHECK_RC(efi_close_device(s->ctx));
	if (s->oob_fd >= 0)
		close(s->oob_fd);
}

/* ---------------------------------------------------------------- QPs */

#define DEF(v, d) ((v) ? (v) : (d))

void dp_conn_create(struct dp_side *s, struct dp_conn *c, const struct dp_qp_cfg *cfg)
{
	struct efi_qp_init_attr ia = { 0 };
	struct efi_qp_attr qa = { 0 };
	int access;

	memset(c, 0, sizeof(*c));
	c->side = s;
	c->cfg = *cfg;
	c->size = DEF(cfg->buf_size, 65536);
	c->buf = aligned_alloc(4096, (c->size + 4095) & ~(size_t)4095);
	DP_CHECK(c->buf, "cannot allocate %zu bytes", c->size);
	memset(c->buf, 0, c->size);
	access = DEF(cfg->mr_access, EFI_ACCESS_LOCAL_WRITE | EFI_ACCESS_REMOTE_WRITE |
		     EFI_ACCESS_REMOTE_READ | EFI_ACCESS_REMOTE_ATOMIC);
	c->mr = efi_reg_mr(s->pd, c->buf, c->size, access);
	DP_CHECK(c->mr, "efi_reg_mr(%zu): %s", c->size, strerror(errno));
	c->scq = cfg->send_cq;
	c->rcq = cfg->recv_cq;
	if (!c->scq || !c->rcq) {
		c->own_cqs = true;
		c->scq = efi_create_cq(s->ctx, 1024, c, cfg->channel, 0);
		c->rcq = efi_create_cq(s->ctx, 1024, c, cfg->channel, 0);
		DP_CHECK(c->scq && c->rcq, "efi_create_cq: %s", strerror(errno));
	}
	ia.qp_context = c;
	ia.send_cq = c->scq;
	ia.recv_cq = c->rcq;
	ia.qp_type = EFI_QPT_RC;
	ia.sq_sig_all = cfg->sq_sig_all;
	ia.cap.max_send_wr = DEF(cfg->max_send_wr, 64);
	ia.cap.max_recv_wr = DEF(cfg->max_recv_wr, 64);
	ia.cap.max_send_sge = DEF(cfg->max_send_sge, 1);
	ia.cap.max_recv_sge = DEF(cfg->max_recv_sge, 1);
	ia.cap.max_inline_data = cfg->max_inline_data;
	c->qp = efi_create_qp(s->pd, &ia);
	DP_CHECK(c->qp, "efi_create_qp: %s", strerror(errno));
	DP_CHECK(c->qp->qp_num && c->qp->qp_num < (1u << 24), "qp_num %u out of range", c->qp->qp_num);
	if (getrandom(&c->psn, sizeof(c->psn), 0) != sizeof(c->psn))
		c->psn = 0x123456;
	c->psn &= 0xffffff;
	qa.qp_state = EFI_QPS_INIT;
	qa.port_num = 1;
	qa.qp_access_flags = EFI_ACCESS_REMOTE_WRITE | EFI_ACCESS_REMOTE_READ | EFI_ACCESS_REMOTE_ATOMIC;
	DP_CHECK_RC(efi_modify_qp(c->qp, &qa, EFI_QP_STATE | EFI_QP_ACCESS_FLAGS | EFI_QP_PKEY_INDEX |
				  EFI_QP_PORT));
}

void dp_exchange(struct dp_side *s, struct dp_conn *conns, int n)
{
	char line[512], hex[64];

	for (int i = 0; i < n; i++) {
		struct dp_conn *c = &conns[i];
		char gid[33];

		for (int j = 0; j < 16; j++)
			sprintf(gid + 2 * j, "%02x", s->gid.raw[j]);
		dp_send_line(s, "qp %d %u %u %s %u %" PRIu64 " %zu", i, c->qp->qp_num, c->psn, gid,
			     c->mr->rkey, (uint64_t)(uintptr_t)c->buf, c->size);
	}
	for (int i = 0; i < n; i++) {
		struct dp_remote *r = &conns[i].remote;
		unsigned long long addr, size;
		int idx;

		dp_recv_line(s, line, sizeof(line));
		DP_CHECK(sscanf(line, "qp %d %u %u %63s %u %llu %llu", &idx, &r->qpn, &r->psn, hex, &r->rkey,
				&addr, &size) == 7 && idx == i && strlen(hex) == 32,
			 "bad QP description from the peer: '%s'", line);
		for (int j = 0; j < 16; j++) {
			unsigned v;

			DP_CHECK(sscanf(hex + 2 * j, "%2x", &v) == 1, "bad GID '%s'", hex);
			r->gid.raw[j] = (uint8_t)v;
		}
		r->addr = addr;
		r->size = size;
	}
}

void dp_conn_connect(struct dp_conn *c)
{
	struct dp_side *s = c->side;
	struct efi_qp_attr qa = { 0 };

	qa.qp_state = EFI_QPS_RTR;
	qa.path_mtu = s->port_attr.active_mtu;
	qa.dest_qp_num = c->remote.qpn;
	qa.rq_psn = c->remote.psn;
	qa.max_dest_rd_atomic = 16;
	qa.min_rnr_timer = DEF(c->cfg.min_rnr_timer, 1);
	qa.ah_attr.is_global = 1;
	qa.ah_attr.port_num = 1;
	qa.ah_attr.grh.dgid = c->remote.gid;
	qa.ah_attr.grh.sgid_index = (uint8_t)s->gid_index;
	qa.ah_attr.grh.hop_limit = 64;
	DP_CHECK_RC(efi_modify_qp(c->qp, &qa, EFI_QP_STATE | EFI_QP_AV | EFI_QP_PATH_MTU |
				  EFI_QP_DEST_QPN | EFI_QP_RQ_PSN | EFI_QP_MAX_DEST_RD_ATOMIC |
				  EFI_QP_MIN_RNR_TIMER));
	qa.qp_state = EFI_QPS_RTS;
	qa.timeout = DEF(c->cfg.timeout, 14);
	qa.retry_cnt = DEF(c->cfg.retry_cnt, 7);
	qa.rnr_retry = c->cfg.rnr_retry_set ? c->cfg.rnr_retry : 7;
	qa.sq_psn = c->psn;
	qa.max_rd_atomic = 16;
	DP_CHECK_RC(efi_modify_qp(c->qp, &qa, EFI_QP_STATE | EFI_QP_TIMEOUT | EFI_QP_RETRY_CNT |
				  EFI_QP_RNR_RETRY | EFI_QP_SQ_PSN | EFI_QP_MAX_QP_RD_ATOMIC));
}

void dp_conn_destroy(struct dp_conn *c)
{
	DP_CHECK_RC(efi_destroy_qp(c->qp));
	efi_cm_destroy_id(c->cm_id);	/* after the QP, as verbs programs do */
	if (c->own_cqs) {
		DP_CHECK_RC(efi_destroy_cq(c->scq));
		DP_CHECK_RC(efi_destroy_cq(c->rcq));
	}
	DP_CHECK_RC(efi_dereg_mr(c->mr));
	free(c->buf);
}

/* What --cm's private data says of a QP's buffer, both ways. */
struct dp_cm_priv {
	uint32_t index, rkey;
	uint64_t addr, size;
};

static void cm_priv_take(struct dp_conn *c, const struct efi_cm_event *ev, int i)
{
	struct dp_cm_priv p;

	DP_CHECK(ev->private_data_len == sizeof(p), "private data of %u bytes, not %zu",
		 ev->private_data_len, sizeof(p));
	memcpy(&p, ev->private_data, sizeof(p));
	DP_CHECK(p.index == (uint32_t)i, "the peer's QP %u came as the %d-th", p.index, i);
	c->remote.qpn = ev->peer_qp_num;
	c->remote.gid = ev->peer_gid;
	c->remote.rkey = p.rkey;
	c->remote.addr = p.addr;
	c->remote.size = p.size;
}

/* dp_setup's exchange and connect with --cm: the client connects its QPs
 * in order, the server accepts them in that order. */
static void cm_connect_all(struct dp_side *s, struct dp_conn *conns, int n)
{
	char service[8];
	int ms = (int)(s->opts->timeout * 1000);

	snprintf(service, sizeof(service), "%u", s->opts->port);
	if (s->opts->server && !s->listener) {
		s->listener = efi_listen(s->ctx, service, 64);
		DP_CHECK(s->listener, "efi_listen %s: %s", service, strerror(errno));
	}
	dp_sync(s, "listening");
	for (int i = 0; i < n; i++) {
		struct dp_conn *c = &conns[i];
		struct dp_cm_priv mine = { (uint32_t)i, c->mr->rkey, (uint64_t)(uintptr_t)c->buf, c->size };
		struct efi_cm_event ev;

		if (s->opts->server) {
			DP_CHECK_RC(efi_cm_get_event(s->listener, &ev, ms));
			DP_CHECK(ev.event == EFI_CM_EVENT_CONNECT_REQUEST, "listener: %s",
				 efi_cm_event_str(ev.event));
			cm_priv_take(c, &ev, i);
			c->cm_id = ev.request;
			DP_CHECK_RC(efi_accept(ev.request, c->qp, &mine, sizeof(mine)));
		} else {
			c->cm_id = efi_connect(c->qp, s->opts->host, service, &mine, sizeof(mine), ms);
			DP_CHECK(c->cm_id, "efi_connect %s: %s", s->opts->host, strerror(errno));
			DP_CHECK_RC(efi_cm_get_event(c->cm_id, &ev, ms + 5000));
			DP_CHECK(ev.event == EFI_CM_EVENT_ESTABLISHED, "connect %d: %s", i,
				 efi_cm_event_str(ev.event));
			cm_priv_take(c, &ev, i);
		}
	}
}

void dp_setup(struct dp_side *s, struct dp_conn *conns, int n, const struct dp_qp_cfg *cfg)
{
	for (int i = 0; i < n; i++)
		dp_conn_create(s, &conns[i], cfg);
	if (s->opts->cm) {
		cm_connect_all(s, conns, n);
	} else {
		dp_exchange(s, conns, n);
		for (int i = 0; i < n; i++)
			dp_conn_connect(&conns[i]);
	}
	dp_sync(s, "connected");
}

/* --------------------------------------------------- posting, waiting */

static double wait_timeout = 20;

void dp_wait_wc(struct efi_cq *cq, struct efi_wc *wc, const char *what)
{
	double deadline = dp_now() + wait_timeout;

	for (;;) {
		int k = efi_poll_cq(cq, 1, wc);

		DP_CHECK(k >= 0, "efi_poll_cq: %d", k);
		if (k == 1)
			return;
		DP_CHECK(dp_now() < deadline, "%s: no completion within %.0f s", what, wait_timeout);
		/* several spinning threads on few cores must leave the progress
		 * threads (ours and the peer's) room to run */
		sched_yield();
	}
}

void dp_wait_ok(struct efi_cq *cq, struct efi_wc *wc, enum efi_wc_opcode opcode, const char *what)
{
	dp_wait_wc(cq, wc, what);
	DP_CHECK(wc->status == EFI_WC_SUCCESS, "%s: completion status %s (%d), wr_id %" PRIu64, what,
		 efi_wc_status_str(wc->status), wc->status, wc->wr_id);
	DP_CHECK(wc->opcode == opcode, "%s: completion opcode %d, expected %d", what, wc->opcode, opcode);
}

bool dp_no_wc_for(struct efi_cq *cq, int ms)
{
	double end = dp_now() + ms / 1000.0;
	struct efi_wc wc;

	while (dp_now() < end) {
		int k = efi_poll_cq(cq, 1, &wc);

		DP_CHECK(k >= 0, "efi_poll_cq: %d", k);
		if (k)
			return false;
		usleep(1000);
	}
	return true;
}

void dp_post_recv(struct dp_conn *c, size_t off, uint32_t len, uint64_t wr_id)
{
	struct efi_sge sge = { .addr = (uintptr_t)(c->buf + off), .length = len, .lkey = c->mr->lkey };
	struct efi_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad = NULL;

	DP_CHECK_RC(efi_post_recv(c->qp, &wr, &bad));
}

int dp_post(struct dp_conn *c, enum efi_wr_opcode op, size_t off, uint32_t len, uint64_t roff,
	    unsigned flags, uint64_t wr_id)
{
	struct efi_sge sge = { .addr = (uintptr_t)(c->buf + off), .length = len, .lkey = c->mr->lkey };
	struct efi_send_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = len ? 1 : 0, .opcode = op,
				  .send_flags = flags, .imm_data = htonl((uint32_t)wr_id) }, *bad = NULL;

	wr.wr.rdma.remote_addr = c->remote.addr + roff;
	wr.wr.rdma.rkey = c->remote.rkey;
	return efi_post_send(c->qp, &wr, &bad);
}

void dp_post_ok(struct dp_conn *c, enum efi_wr_opcode op, size_t off, uint32_t len, uint64_t roff,
		unsigned flags, uint64_t wr_id)
{
	int rc = dp_post(c, op, off, len, roff, flags, wr_id);

	DP_CHECK(rc == 0, "efi_post_send(opcode %d, %u bytes): %s", op, len, strerror(rc));
}

int dp_post_atomic(struct dp_conn *c, enum efi_wr_opcode op, size_t off, uint64_t roff,
		   uint64_t compare_add, uint64_t swap, unsigned flags, uint64_t wr_id)
{
	struct efi_sge sge = { .addr = (uintptr_t)(c->buf + off), .length = 8, .lkey = c->mr->lkey };
	struct efi_send_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1, .opcode = op,
				  .send_flags = flags }, *bad = NULL;

	wr.wr.atomic.remote_addr = c->remote.addr + roff;
	wr.wr.atomic.rkey = c->remote.rkey;
	wr.wr.atomic.compare_add = compare_add;
	wr.wr.atomic.swap = swap;
	return efi_post_send(c->qp, &wr, &bad);
}

/* ------------------------------------------------------------- patterns */

/* splitmix64 of (seed, 8-byte block): any byte can be computed alone, so a
 * check can say exactly where data went wrong. */
static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

void dp_fill(void *buf, size_t len, uint64_t seed)
{
	uint8_t *p = buf;
	size_t i = 0;

	for (uint64_t blk = 0; i < len; blk++) {
		uint64_t v = mix(seed * 0x100000001b3ull ^ blk);

		for (int b = 0; b < 8 && i < len; b++, i++)
			p[i] = (uint8_t)(v >> (8 * b));
	}
}

size_t dp_verify(const void *buf, size_t len, uint64_t seed)
{
	const uint8_t *p = buf;
	size_t i = 0;

	for (uint64_t blk = 0; i < len; blk++) {
		uint64_t v = mix(seed * 0x100000001b3ull ^ blk);

		for (int b = 0; b < 8 && i < len; b++, i++)
			if (p[i] != (uint8_t)(v >> (8 * b)))
				return i + 1;
	}
	return 0;
}

void dp_set_timeout(double seconds)
{
	wait_timeout = seconds;
}
