/* SPDX-License-Identifier: MIT */
/*
 * scale-test: N connected QPs between two processes (issue 18).
 *
 *   scale-test server --qps N [--port P] [--hold FILE]
 *   scale-test client --qps N --host ADDR [--port P] [--window W] [--hold FILE]
 *                     [--start-at T] [--sample K]
 *
 * Each side opens its instance's first EFI device and creates N QPs (one
 * CQ, one MR); the server posts a receive on each; the two exchange QPNs,
 * PSNs and GIDs over TCP (as perftest does: the QPs have no connection key,
 * so every packet passes the keyless source check of docs/wire-format.md)
 * and bring every QP to RTS; the client sends one message over each, whose
 * payload names the QP it was sent on, and the server checks that every
 * QP received exactly its own (at most W, default 256, in flight at once).  Then everything is torn down.
 *
 * Printed (one "key value..." line each, for the scripts):
 *   qps N blocks B            the QPNs span B blocks of 4,096 (efid slots)
 *   connect_us MEDIAN P99     per QP: create + INIT + RTR + RTS
 *   connects_per_s R          N over the wall time of that phase
 *   connect_window T0 T1      that phase in CLOCK_REALTIME seconds
 *   idle_poll_us T            one efi_poll_cq with every QP idle (a transport
 *                             run, unless the progress thread held the lock)
 *   messages N                each arrived on its own QP, intact
 *   counters ...              transport counters summed over the QPs
 *   rss_kb BEFORE AFTER       before the QPs, with all connected
 *   rss_per_qp_b B
 *   bad_source D              packets dropped as not from the peer (must be 0)
 *
 * With --sample K (both sides) a message goes over every K-th QP only
 * (benchmarks: a message over each of 65,536 QPs takes a while).  With --start-at T (CLOCK_REALTIME seconds) the client begins connecting
 * no earlier than T, so that several clients started together connect at
 * the same time.  With --hold FILE the process creates FILE once connected and waits until
 * it is removed before tearing down (the test reads efid's tables then);
 * with --hold-destroyed FILE the same once every QP is destroyed, before
 * the device is closed.
 * Exit 0 on success; 1 with a message on stderr otherwise.
 */
#define _GNU_SOURCE /* accept4 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <efi/efi.h>

#define MSG 16u		/* bytes per message: "qp <index>" */
#define TIMEOUT_S 120.0

static void show_counters(FILE *f);

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "scale-test: ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	show_counters(stderr);
	exit(1);
}

#define CHECK(c, ...) do { if (!(c)) die(__VA_ARGS__); } while (0)

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static long rss_kb(void)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

/* ------------------------------------------------------------ TCP */

static int tcp_server(uint16_t port)
{
	struct sockaddr_in6 sa = { .sin6_family = AF_INET6, .sin6_port = htons(port),
				   .sin6_addr = IN6ADDR_ANY_INIT };
	int one = 1, zero = 0, lfd, fd;

	lfd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(lfd >= 0, "socket: %s", strerror(errno));
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	setsockopt(lfd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	CHECK(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) == 0, "bind TCP %u: %s", port,
	      strerror(errno));
	CHECK(listen(lfd, 1) == 0, "listen: %s", strerror(errno));
	do
		fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	while (fd < 0 && errno == EINTR);
	CHECK(fd >= 0, "accept: %s", strerror(errno));
	close(lfd);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

static int tcp_client(const char *host, uint16_t port)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res;
	char service[8];
	double deadline = now_s() + 30;
	int fd, rc;

	snprintf(service, sizeof(service), "%u", port);
	rc = getaddrinfo(host, service, &hints, &res);
	CHECK(rc == 0, "cannot resolve %s: %s", host, gai_strerror(rc));
	for (;;) {
		fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		CHECK(fd >= 0, "socket: %s", strerror(errno));
		if (connect(fd, res->ai_addr, res->ai_addrlen) == 0)
			break;
		rc = errno;
		close(fd);
		CHECK(now_s() < deadline, "cannot reach %s port %u: %s", host, port, strerror(rc));
		usleep(20 * 1000);
	}
	freeaddrinfo(res);
	return fd;
}

static void xfer(int fd, void *buf, size_t len, bool out)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t k = out ? write(fd, p, len) : read(fd, p, len);
		if (k < 0 && errno == EINTR)
			continue;
		CHECK(k > 0, "the peer's TCP connection %s", k == 0 ? "closed" : strerror(errno));
		p += k;
		len -= (size_t)k;
	}
}

/* ------------------------------------------------------------ QPs */

struct side {
	struct efi_context *ctx;
	struct efi_pd *pd;
	struct efi_cq *cq;
	struct efi_mr *mr;
	uint8_t *buf;		/* MSG bytes per QP */
	union efi_gid gid;
	enum efi_mtu mtu;
	struct efi_qp **qp;
	uint32_t *psn;
	unsigned n;
};

/* What one side tells the other: its GID, then (qpn, psn) per QP. */
struct wire_qp {
	uint32_t qpn, psn;
};

static void open_side(struct side *s, unsigned n)
{
	struct efi_device **list = efi_get_device_list(NULL);
	struct efi_port_attr pa;

	CHECK(list && list[0], "no EFI device: %s", list ? "the list is empty" : strerror(errno));
	s->ctx = efi_open_device(list[0]);
	CHECK(s->ctx, "efi_open_device: %s", strerror(errno));
	efi_free_device_list(list);
	CHECK(efi_query_port(s->ctx, 1, &pa) == 0 && efi_query_gid(s->ctx, 1, 0, &s->gid) == 0,
	      "query port/GID");
	s->mtu = pa.active_mtu;
	s->pd = efi_alloc_pd(s->ctx);
	CHECK(s->pd, "efi_alloc_pd: %s", strerror(errno));
	s->cq = efi_create_cq(s->ctx, (int)n + 16, NULL, NULL, 0);
	CHECK(s->cq, "efi_create_cq: %s", strerror(errno));
	s->buf = calloc(n, MSG);
	s->qp = calloc(n, sizeof(*s->qp));
	s->psn = calloc(n, sizeof(*s->psn));
	CHECK(s->buf && s->qp && s->psn, "out of memory");
	s->mr = efi_reg_mr(s->pd, s->buf, (size_t)n * MSG, EFI_ACCESS_LOCAL_WRITE);
	CHECK(s->mr, "efi_reg_mr: %s", strerror(errno));
	s->n = n;
}

static struct efi_qp *create_qp(struct side *s, unsigned i)
{
	struct efi_qp_init_attr ia = { 0 };
	struct efi_qp_attr qa = { 0 };
	struct efi_qp *qp;

	ia.qp_type = EFI_QPT_RC;
	ia.send_cq = ia.recv_cq = s->cq;
	ia.cap.max_send_wr = 1;
	ia.cap.max_recv_wr = 1;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	qp = efi_create_qp(s->pd, &ia);
	CHECK(qp, "efi_create_qp #%u: %s", i, strerror(errno));
	qa.qp_state = EFI_QPS_INIT;
	qa.port_num = 1;
	CHECK(efi_modify_qp(qp, &qa, EFI_QP_STATE | EFI_QP_ACCESS_FLAGS | EFI_QP_PKEY_INDEX |
			    EFI_QP_PORT) == 0, "INIT #%u", i);
	s->psn[i] = (i * 2654435761u) & 0xffffff;
	return qp;
}

static void connect_qp(struct side *s, unsigned i, const union efi_gid *gid, const struct wire_qp *r)
{
	struct efi_qp_attr qa = { 0 };

	qa.qp_state = EFI_QPS_RTR;
	qa.path_mtu = s->mtu;
	qa.dest_qp_num = r->qpn;
	qa.rq_psn = r->psn;
	qa.max_dest_rd_atomic = 1;
	qa.min_rnr_timer = 1;
	qa.ah_attr.is_global = 1;
	qa.ah_attr.port_num = 1;
	qa.ah_attr.grh.dgid = *gid;
	qa.ah_attr.grh.hop_limit = 64;
	CHECK(efi_modify_qp(s->qp[i], &qa, EFI_QP_STATE | EFI_QP_AV | EFI_QP_PATH_MTU |
			    EFI_QP_DEST_QPN | EFI_QP_RQ_PSN | EFI_QP_MAX_DEST_RD_ATOMIC |
			    EFI_QP_MIN_RNR_TIMER) == 0, "RTR #%u", i);
	qa.qp_state = EFI_QPS_RTS;
	qa.timeout = 14;
	qa.retry_cnt = 7;
	qa.rnr_retry = 7;
	qa.sq_psn = s->psn[i];
	qa.max_rd_atomic = 1;
	CHECK(efi_modify_qp(s->qp[i], &qa, EFI_QP_STATE | EFI_QP_TIMEOUT | EFI_QP_RETRY_CNT |
			    EFI_QP_RNR_RETRY | EFI_QP_SQ_PSN | EFI_QP_MAX_QP_RD_ATOMIC) == 0,
	      "RTS #%u", i);
}

/* Creates path and waits (at most 300 s) until it is removed; NULL: no. */
static void hold_on(const char *path)
{
	FILE *f;
	double deadline;

	if (!path)
		return;
	f = fopen(path, "w");
	CHECK(f, "cannot create %s: %s", path, strerror(errno));
	fclose(f);
	deadline = now_s() + 300;
	while (access(path, F_OK) == 0 && now_s() < deadline)
		usleep(10 * 1000);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static struct side *the_side;	/* for show_counters, from die() too */
static int peer_fd = -1;	/* the TCP connection, once there */
static bool server_side;

/* The transport's counters over every QP and the context (destroyed QPs'
 * and drops of no QP), on stream f: what a failure's message needs. */
static void show_counters(FILE *f)
{
	struct efi_counters c, q;

	if (!the_side || !the_side->ctx || efi_query_context_counters(the_side->ctx, &c))
		return;
	for (unsigned i = 0; i < the_side->n; i++) {
		if (!the_side->qp[i] || efi_query_qp_counters(the_side->qp[i], &q))
			continue;
		c.tx_packets += q.tx_packets;
		c.rx_packets += q.rx_packets;
		c.retransmissions += q.retransmissions;
		c.timeouts += q.timeouts;
		c.duplicates += q.duplicates;
		c.drops += q.drops;
		for (int r = 0; r < EFI_DROP_REASON_COUNT; r++)
			c.drop_reasons[r] += q.drop_reasons[r];
	}
	fprintf(f, "counters tx %" PRIu64 " rx %" PRIu64 " retx %" PRIu64 " timeouts %" PRIu64
		" dups %" PRIu64 " drops %" PRIu64 " by reason", c.tx_packets, c.rx_packets,
		c.retransmissions, c.timeouts, c.duplicates, c.drops);
	for (int r = 0; r < EFI_DROP_REASON_COUNT; r++)
		fprintf(f, " %" PRIu64, c.drop_reasons[r]);
	fputc('\n', f);
}

/* Waits for n completions of kind op, each successful; calls fn on each. */
static void drain(struct side *s, unsigned n, enum efi_wc_opcode op,
		  void (*fn)(struct side *s, const struct efi_wc *wc))
{
	struct efi_wc wc[64];
	double deadline = now_s() + TIMEOUT_S, report = now_s() + 5;
	unsigned got = 0;

	while (got < n) {
		int k = efi_poll_cq(s->cq, n - got < 64 ? (int)(n - got) : 64, wc);
		CHECK(k >= 0, "efi_poll_cq: %d", k);
		for (int j = 0; j < k; j++) {
			CHECK(wc[j].status == EFI_WC_SUCCESS && wc[j].opcode == op,
			      "completion %u of QP %u: %s", got, wc[j].qp_num,
			      efi_wc_status_str(wc[j].status));
			if (fn)
				fn(s, &wc[j]);
		}
		got += (unsigned)k;
		if (got < n && now_s() >= report) {
			/* a slow run says how far it got, for the log */
			fprintf(stderr, "scale-test: %u of %u completions so far; ", got, n);
			show_counters(stderr);
			report += 5;
		}
		/* a peer that gave up closes the connection: say what we saw */
		struct pollfd pf = { .fd = peer_fd, .events = POLLIN };
		if (server_side && !k && peer_fd >= 0 && poll(&pf, 1, 0) > 0) {
			char c;
			CHECK(recv(peer_fd, &c, 1, MSG_PEEK) > 0, "the peer closed the connection after %u of %u completions", got, n);
		}
		CHECK(got >= n || now_s() < deadline, "%u of %u completions within %.0f s", got, n,
		      TIMEOUT_S);
	}
}

/* A receive: the message names the QP it was sent on, which must be this
 * one (wr_id is the local index). */
static void check_recv(struct side *s, const struct efi_wc *wc)
{
	unsigned i = (unsigned)wc->wr_id;
	char want[MSG] = { 0 };

	CHECK(i < s->n && s->qp[i]->qp_num == wc->qp_num && wc->byte_len == MSG,
	      "a receive on QP %u (wr_id %u, %u bytes) is not one posted", wc->qp_num, i,
	      wc->byte_len);
	snprintf(want, sizeof(want), "qp %u", i);
	CHECK(memcmp(s->buf + (size_t)i * MSG, want, MSG) == 0,
	      "QP #%u received '%.*s', not its own message", i, (int)MSG, s->buf + (size_t)i * MSG);
	memset(s->buf + (size_t)i * MSG, 0, MSG);
}

static void post(struct side *s, unsigned i, bool send)
{
	struct efi_sge sge = { .addr = (uintptr_t)(s->buf + (size_t)i * MSG), .length = MSG,
			       .lkey = s->mr->lkey };
	int r;

	if (send) {
		struct efi_send_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1,
					  .opcode = EFI_WR_SEND, .send_flags = EFI_SEND_SIGNALED };
		struct efi_send_wr *bad;
		memset(s->buf + (size_t)i * MSG, 0, MSG);
		snprintf((char *)s->buf + (size_t)i * MSG, MSG, "qp %u", i);
		r = efi_post_send(s->qp[i], &wr, &bad);
	} else {
		struct efi_recv_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1 };
		struct efi_recv_wr *bad;
		r = efi_post_recv(s->qp[i], &wr, &bad);
	}
	CHECK(r == 0, "post %s #%u: %s", send ? "send" : "recv", i, strerror(r));
}

int main(int argc, char **argv)
{
	const char *host = NULL, *hold = NULL, *hold_destroyed = NULL;
	double start_at = 0;
	unsigned n = 0, blocks = 0, window = 256, sample = 1, nmsg;
	uint16_t port = 7900;
	bool server;
	struct side s = { 0 };
	struct efi_counters cnt;
	union efi_gid peer_gid;
	struct wire_qp *mine, *theirs;
	double *t, t0, wall = 0;
	long rss0, rss1;
	int fd;

	CHECK(argc >= 2 && (!strcmp(argv[1], "server") || !strcmp(argv[1], "client")),
	      "usage: scale-test server|client --qps N [--host ADDR] [--port P] [--hold FILE]");
	server = server_side = !strcmp(argv[1], "server");
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int i = 2; i < argc; i++) {
		CHECK(i + 1 < argc, "%s needs a value", argv[i]);
		if (!strcmp(argv[i], "--qps"))
			n = (unsigned)strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--host"))
			host = argv[++i];
		else if (!strcmp(argv[i], "--port"))
			port = (uint16_t)strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--window"))
			window = (unsigned)strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--sample"))
			sample = (unsigned)strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--start-at"))
			start_at = strtod(argv[++i], NULL);
		else if (!strcmp(argv[i], "--hold-destroyed"))
			hold_destroyed = argv[++i];
		else if (!strcmp(argv[i], "--hold"))
			hold = argv[++i];
		else
			die("unknown option %s", argv[i]);
	}
	CHECK(n >= 1 && n <= 65536, "--qps 1..65536");
	CHECK(window >= 1, "--window 1 or more");
	CHECK(sample >= 1, "--sample 1 or more");
	nmsg = (n + sample - 1) / sample;	/* QPs 0, sample, 2 × sample, ... */
	CHECK(server || host, "the client needs --host");
	mine = calloc(n, sizeof(*mine));
	theirs = calloc(n, sizeof(*theirs));
	t = calloc(n, sizeof(*t));
	CHECK(mine && theirs && t, "out of memory");

	open_side(&s, n);
	the_side = &s;
	rss0 = rss_kb();
	/* the server's QPs exist before the client connects: then every QP
	 * of the client is created and connected in one go, which is what
	 * its times measure */
	if (server) {
		for (unsigned i = 0; i < n; i++) {
			s.qp[i] = create_qp(&s, i);
			post(&s, i, false);
		}
		fd = tcp_server(port);
	} else {
		fd = tcp_client(host, port);
	}
	peer_fd = fd;
	if (server) {
		for (unsigned i = 0; i < n; i++)
			mine[i] = (struct wire_qp){ htonl(s.qp[i]->qp_num), htonl(s.psn[i]) };
		xfer(fd, &s.gid, sizeof(s.gid), true);
		xfer(fd, mine, n * sizeof(*mine), true);
		xfer(fd, &peer_gid, sizeof(peer_gid), false);
		xfer(fd, theirs, n * sizeof(*theirs), false);
		for (unsigned i = 0; i < n; i++) {
			theirs[i].qpn = ntohl(theirs[i].qpn);
			theirs[i].psn = ntohl(theirs[i].psn);
			connect_qp(&s, i, &peer_gid, &theirs[i]);
		}
		/* every QP ready to receive: the client may send */
		char go = 'g';
		xfer(fd, &go, 1, true);
	} else {
		xfer(fd, &peer_gid, sizeof(peer_gid), false);
		xfer(fd, theirs, n * sizeof(*theirs), false);
		struct timespec rt0, rt1;
		/* processes started together connect together */
		for (;;) {
			clock_gettime(CLOCK_REALTIME, &rt0);
			double left = start_at - (rt0.tv_sec + rt0.tv_nsec * 1e-9);
			if (left <= 0)
				break;
			usleep(left > 0.01 ? 10000 : (useconds_t)(left * 1e6) + 1);
		}
		wall = now_s();
		for (unsigned i = 0; i < n; i++) {
			theirs[i].qpn = ntohl(theirs[i].qpn);
			theirs[i].psn = ntohl(theirs[i].psn);
			t0 = now_s();
			s.qp[i] = create_qp(&s, i);
			connect_qp(&s, i, &peer_gid, &theirs[i]);
			t[i] = (now_s() - t0) * 1e6;
		}
		wall = now_s() - wall;
		clock_gettime(CLOCK_REALTIME, &rt1);
		/* for a script summing over processes running at once */
		printf("connect_window %.6f %.6f\n", rt0.tv_sec + rt0.tv_nsec * 1e-9,
		       rt1.tv_sec + rt1.tv_nsec * 1e-9);
		for (unsigned i = 0; i < n; i++)
			mine[i] = (struct wire_qp){ htonl(s.qp[i]->qp_num), htonl(s.psn[i]) };
		xfer(fd, &s.gid, sizeof(s.gid), true);
		xfer(fd, mine, n * sizeof(*mine), true);
		char go;
		xfer(fd, &go, 1, false);
	}
	{
		/* the QPNs of the blocks efid gave: more than one past 4,096 */
		bool seen[4096] = { false };
		for (unsigned i = 0; i < n; i++)
			if (!seen[s.qp[i]->qp_num >> 12]) {
				seen[s.qp[i]->qp_num >> 12] = true;
				blocks++;
			}
	}
	printf("qps %u blocks %u\n", n, blocks);
	CHECK(blocks >= (n + 4095) / 4096, "%u QPs in %u blocks of 4,096", n, blocks);

	/* one message over each: the server answers a byte when all arrived */
	char ok = 'k';
	if (server) {
		drain(&s, nmsg, EFI_WC_RECV, check_recv);
		xfer(fd, &ok, 1, true);
	} else {
		/* what one transport run costs with every QP connected and
		 * idle (efi_poll_cq runs it): the transport walks its QPs */
		struct efi_wc wc;
		/* not timed: the first run visits each QP once after its last
		 * modify (libefi/active.c), the ones after only the active */
		CHECK(efi_poll_cq(s.cq, 1, &wc) == 0, "a completion before any send");
		double p0 = now_s();
		for (int k = 0; k < 200; k++)
			CHECK(efi_poll_cq(s.cq, 1, &wc) == 0, "a completion before any send");
		printf("idle_poll_us %.1f\n", (now_s() - p0) * 1e6 / 200);
		/* at most `window` messages in flight (--window N: a burst
		 * over every QP at once, which retransmitted while a run
		 * visited every QP and new QPs had no RTT estimate, issue 18) */
		unsigned posted = 0, done = 0;
		double m0 = now_s();
		while (done < nmsg) {
			while (posted < nmsg && posted - done < window)
				post(&s, (posted++) * sample, true);
			unsigned want = posted - done < 16 ? posted - done : 16;
			drain(&s, want, EFI_WC_SEND, NULL);
			done += want;
		}
		printf("messages_s %.2f\n", now_s() - m0);
		xfer(fd, &ok, 1, false);
		qsort(t, n, sizeof(*t), cmp_double);
		printf("connect_us %.1f %.1f\n", t[n / 2], t[(size_t)((n - 1) * 0.99)]);
		printf("connects_per_s %.0f\n", n / wall);
	}
	printf("messages %u\n", nmsg);
	rss1 = rss_kb();
	printf("rss_kb %ld %ld\n", rss0, rss1);
	printf("rss_per_qp_b %ld\n", (rss1 - rss0) * 1024 / (long)n);
	fflush(stdout);

	hold_on(hold);
	show_counters(stdout);
	/* both sides hold their QPs until the other is done with them */
	xfer(fd, &ok, 1, true);
	xfer(fd, &ok, 1, false);
	close(fd);

	for (unsigned i = 0; i < n; i++)
		CHECK(efi_destroy_qp(s.qp[i]) == 0, "efi_destroy_qp #%u", i);
	/* every QP gone, the context still open: its reservations go back
	 * (the test reads efid's table) */
	hold_on(hold_destroyed);
	CHECK(efi_query_context_counters(s.ctx, &cnt) == 0, "context counters");
	printf("bad_source %" PRIu64 "\n", cnt.drop_reasons[EFI_DROP_BAD_SOURCE]);
	CHECK(cnt.drop_reasons[EFI_DROP_BAD_SOURCE] == 0,
	      "%" PRIu64 " packets dropped as not from their QP's peer", cnt.drop_reasons[EFI_DROP_BAD_SOURCE]);
	CHECK(efi_dereg_mr(s.mr) == 0 && efi_destroy_cq(s.cq) == 0 && efi_dealloc_pd(s.pd) == 0,
	      "teardown");
	CHECK(efi_close_device(s.ctx) == 0, "efi_close_device");
	free(s.buf);
	free(s.qp);
	free(s.psn);
	free(mine);
	free(theirs);
	free(t);
	return 0;
}
