/* SPDX-License-Identifier: MIT */
/*
 * fab-inject: injects above libefi's 1024-byte inline limit (the efi
 * provider's bounce pool, fabric/bounce.c), up to the inject_size fi_info
 * gives (16 KiB + 64, so that ofi_rxm's eager messages are injects):
 *   - fi_getinfo answers inject_size 16448 and refuses hints above it;
 *   - fi_inject of 1025 B, 4 KiB and 16448 B, the buffer overwritten right
 *     after each call: the peer receives what it held at the call, and no
 *     completion of ours ever appears;
 *   - fi_inject of 16449 B is -FI_EINVAL;
 *   - BURST injects of 2 KiB back to back, more than the pool has slots
 *     (64 slots per CQ): -FI_EAGAIN when all are
 *     in flight, a fi_cq_read (which finds nothing to report) gives them
 *     back, every message arrives intact and in order;
 *   - fi_sendmsg(FI_INJECT) of 8 KiB and fi_writemsg(FI_INJECT) of 12 KiB
 *     complete once each, with their own contexts; fi_inject_write of
 *     4 KiB lands;
 *   - an endpoint without a transmit CQ (the server's, bound for FI_RECV
 *     only) injects BACK messages of 4 KiB to the client: its own pool,
 *     which it reaps from its own CQ, and every message arrives intact.
 *
 *   fab-inject server PORT
 *   fab-inject client IP PORT
 *
 * Exit status 0 when all of it held.
 */
#include <string.h>

#include "fabtest.h"

#define INJECT_MAX	(16384 + 64)
#define BURST		200
#define NRECV		(3 + BURST + 2)	/* three sizes, the burst, sendmsg, "done" */
#define SLOT		INJECT_MAX
#define WRITE_OFF	0		/* fi_inject_write: 4 KiB here */
#define WRITEMSG_OFF	8192		/* fi_writemsg FI_INJECT: 12 KiB here */
#define WIN		(WRITEMSG_OFF + 12288)
#define BACK		100		/* the server's injects, 4 KiB each */
#define BACK_LEN	4096

struct target {
	uint64_t addr, key;
};

struct side {
	struct fab_side f;
	uint8_t *buf;			/* NRECV slots, then the write window */
	struct fi_context ctx[NRECV + 2];
};

/* The byte i of message seq. */
static uint8_t pat(unsigned int seq, size_t i)
{
	return (uint8_t)(seq * 131u + i * 7u + (i >> 9));
}

static void fill(uint8_t *p, unsigned int seq, size_t len)
{
	for (size_t i = 0; i < len; i++)
		p[i] = pat(seq, i);
}

static void expect_pat(const uint8_t *p, unsigned int seq, size_t len, const char *what)
{
	for (size_t i = 0; i < len; i++)
		CHECK(p[i] == pat(seq, i), "%s: byte %zu is 0x%02x, expected 0x%02x", what, i,
		      p[i], pat(seq, i));
}

static void check_info(const char *ip, const char *port, bool server)
{
	struct fi_info *h = fab_hints(FI_MSG | FI_RMA, FI_CONTEXT), *fi = NULL;
	int ret;

	MUST(fi_getinfo(FI_VERSION(1, 17), ip, port, server ? FI_SOURCE : 0, h, &fi));
	CHECK(fi->tx_attr->inject_size == INJECT_MAX, "inject_size %zu, expected %d",
	      fi->tx_attr->inject_size, INJECT_MAX);
	fi_freeinfo(fi);
	fi = NULL;
	h->tx_attr->inject_size = INJECT_MAX + 1;
	ret = fi_getinfo(FI_VERSION(1, 17), ip, port, server ? FI_SOURCE : 0, h, &fi);
	CHECK(ret == -FI_ENODATA, "hints with inject_size %d: %d, expected -FI_ENODATA",
	      INJECT_MAX + 1, ret);
	fi_freeinfo(fi);
	fi_freeinfo(h);
	printf("fi_getinfo: inject_size %d, hints above it refused\n", INJECT_MAX);
}

static void open_side(struct side *s, size_t len)
{
	fab_open(&s->f, FI_CQ_FORMAT_DATA, 64);
	s->buf = calloc(1, len);
	CHECK(s->buf, "calloc");
	MUST(fi_mr_reg(s->f.domain, s->buf, len, FI_SEND | FI_RECV | FI_WRITE | FI_REMOTE_WRITE,
		       0, 0, 0, &s->f.mr, NULL));
}

/* ------------------------------------------------------------ server */

static size_t msg_len(unsigned int seq)
{
	static const size_t first[3] = { 1025, 4096, INJECT_MAX };

	if (seq < 3)
		return first[seq];
	if (seq < 3 + BURST)
		return 2048;
	return seq == 3 + BURST ? 8192 : 4;	/* sendmsg, then "done" */
}

static int server(struct side *s)
{
	struct target t;
	void *desc;

	open_side(s, (size_t)NRECV * SLOT + WIN);
	desc = fi_mr_desc(s->f.mr);
	t = (struct target){ (uint64_t)(uintptr_t)(s->buf + (size_t)NRECV * SLOT),
			     fi_mr_key(s->f.mr) };
	fab_listen(&s->f);
	{
		/* receives only: its injects have no CQ to complete on */
		struct fab_cm_event ev;

		fab_wait_event(s->f.eq, FI_CONNREQ, &ev, "FI_CONNREQ");
		MUST(fi_endpoint(s->f.domain, ev.e.info, &s->f.ep, NULL));
		fi_freeinfo(ev.e.info);
		MUST(fi_ep_bind(s->f.ep, &s->f.eq->fid, 0));
		MUST(fi_ep_bind(s->f.ep, &s->f.cq->fid, FI_RECV));
		MUST(fi_enable(s->f.ep));
	}
	for (unsigned int i = 0; i < NRECV; i++)
		MUST(fi_recv(s->f.ep, s->buf + (size_t)i * SLOT, SLOT, desc, 0, &s->ctx[i]));
	MUST(fi_accept(s->f.ep, &t, sizeof(t)));
	fab_wait_event(s->f.eq, FI_CONNECTED, NULL, "FI_CONNECTED");

	/* RC order: the receives complete in the order the messages left */
	for (unsigned int i = 0; i < NRECV; i++) {
		struct fi_cq_data_entry e = fab_wait_comp(s->f.cq, "a receive");
		char what[64];

		CHECK(e.op_context == &s->ctx[i], "receive %u: context %p, expected %p", i,
		      e.op_context, (void *)&s->ctx[i]);
		CHECK(e.len == msg_len(i), "message %u: %zu bytes, expected %zu", i, e.len,
		      msg_len(i));
		snprintf(what, sizeof(what), "message %u (%zu B)", i, e.len);
		expect_pat(s->buf + (size_t)i * SLOT, i, e.len, what);
	}
	printf("received %d messages of 1025 B to 16448 B intact, in order\n", NRECV);
	/* the writes came before "done" */
	expect_pat(s->buf + (size_t)NRECV * SLOT + WRITE_OFF, 1000, 4096, "fi_inject_write");
	expect_pat(s->buf + (size_t)NRECV * SLOT + WRITEMSG_OFF, 1001, 12288,
		   "fi_writemsg FI_INJECT");
	printf("fi_inject_write 4 KiB and fi_writemsg FI_INJECT 12 KiB landed\n");
	/* back to the client from an endpoint without a transmit CQ */
	for (unsigned int i = 0; i < BACK; i++) {
		uint8_t *p = s->buf;	/* slot 0: its message was checked */
		ssize_t ret;

		fill(p, 2000 + i, BACK_LEN);
		while ((ret = fi_inject(s->f.ep, p, BACK_LEN, 0)) == -FI_EAGAIN)
			;	/* the provider reaps the endpoint's own CQ */
		CHECK(ret == 0, "inject %u back: %zd (%s)", i, ret, fi_strerror((int)-ret));
		memset(p, 0xee, BACK_LEN);
	}
	printf("%d injects of 4 KiB sent back without a transmit CQ\n", BACK);
	fab_wait_event(s->f.eq, FI_SHUTDOWN, NULL, "the peer's fi_shutdown");
	fab_close(&s->f);
	free(s->buf);
	printf("server: ok\n");
	return 0;
}

/* ------------------------------------------------------------ client */

/* One fi_cq_read while the pool is full: it gives slots back and may
 * find one of the two FI_INJECT operations that complete (seen). */
static void reap(struct side *s, bool *seen)
{
	struct fi_cq_data_entry e;
	ssize_t n = fi_cq_read(s->f.cq, &e, 1);
	int k;

	if (n == -FI_EAGAIN)
		return;
	CHECK(n == 1, "fi_cq_read: %zd (%s)", n, fi_strerror((int)-n));
	k = (int)((struct fi_context *)e.op_context - s->ctx);
	CHECK(seen && k >= 0 && k < 2 && !seen[k], "a completion with context %p", e.op_context);
	seen[k] = true;
}

/* A post that may find every slot in flight. */
#define POST(s, seen, call) do { \
	ssize_t post_ret_; \
	while ((post_ret_ = (call)) == -FI_EAGAIN) \
		reap(s, seen); \
	CHECK(post_ret_ == 0, "%s: %zd (%s)", #call, post_ret_, fi_strerror((int)-post_ret_)); \
} while (0)

/* fi_inject of message seq from buf, overwritten on return. */
static void inject(struct side *s, uint8_t *buf, unsigned int seq, unsigned int *eagain)
{
	size_t len = msg_len(seq);
	ssize_t ret;

	fill(buf, seq, len);
	while ((ret = fi_inject(s->f.ep, buf, len, 0)) == -FI_EAGAIN) {
		reap(s, NULL);	/* no inject's completion may surface */
		(*eagain)++;
	}
	CHECK(ret == 0, "fi_inject %zu B: %zd (%s)", len, ret, fi_strerror((int)-ret));
	memset(buf, 0xee, len);	/* ours again */
}

static int client(struct side *s)
{
	struct fab_cm_event ev;
	struct target t;
	uint8_t *buf;
	unsigned int eagain = 0;
	struct iovec iov;
	struct fi_rma_iov rma;
	struct fi_msg msg = { .msg_iov = &iov, .iov_count = 1 };
	struct fi_msg_rma rmsg = { .msg_iov = &iov, .iov_count = 1, .rma_iov = &rma,
				   .rma_iov_count = 1 };
	bool seen[2] = { false, false };
	ssize_t ret;

	open_side(s, 2 * SLOT + (size_t)BACK * BACK_LEN);
	buf = s->buf;
	fab_open_ep(&s->f, s->f.info);
	for (unsigned int i = 0; i < BACK; i++)
		MUST(fi_recv(s->f.ep, buf + 2 * SLOT + (size_t)i * BACK_LEN, BACK_LEN,
			     fi_mr_desc(s->f.mr), 0, &s->ctx[2 + i]));
	MUST(fi_connect(s->f.ep, s->f.info->dest_addr, NULL, 0));
	fab_wait_event(s->f.eq, FI_CONNECTED, &ev, "FI_CONNECTED");
	memcpy(&t, ev.data, sizeof(t));

	for (unsigned int i = 0; i < 3; i++)
		inject(s, buf, i, &eagain);
	ret = fi_inject(s->f.ep, buf, INJECT_MAX + 1, 0);
	CHECK(ret == -FI_EINVAL, "fi_inject of %d B: %zd, expected -FI_EINVAL", INJECT_MAX + 1,
	      ret);
	printf("fi_inject of 1025, 4096 and %d B sent, %d B refused\n", INJECT_MAX,
	       INJECT_MAX + 1);
	for (unsigned int i = 3; i < 3 + BURST; i++)
		inject(s, buf, i, &eagain);
	CHECK(eagain > 0, "%d injects of 2 KiB never found the pool full", BURST);
	printf("burst of %d injects of 2 KiB: -FI_EAGAIN %u times, slots given back by "
	       "fi_cq_read\n", BURST, eagain);

	fill(buf, 1000, 4096);
	POST(s, NULL, fi_inject_write(s->f.ep, buf, 4096, 0, t.addr + WRITE_OFF, t.key));
	memset(buf, 0xee, 4096);
	fill(buf, 1001, 12288);
	iov = (struct iovec){ buf, 12288 };
	rma = (struct fi_rma_iov){ t.addr + WRITEMSG_OFF, 12288, t.key };
	rmsg.context = &s->ctx[0];
	POST(s, seen, fi_writemsg(s->f.ep, &rmsg, FI_INJECT));
	memset(buf, 0xee, 12288);
	fill(buf, 3 + BURST, 8192);
	iov = (struct iovec){ buf, 8192 };
	msg.context = &s->ctx[1];
	POST(s, seen, fi_sendmsg(s->f.ep, &msg, FI_INJECT));
	memset(buf, 0xee, 8192);
	while (!seen[0] || !seen[1]) {
		struct fi_cq_data_entry e = fab_wait_comp(s->f.cq, "FI_INJECT writemsg/sendmsg");
		int k = (int)((struct fi_context *)e.op_context - s->ctx);

		CHECK(k >= 0 && k < 2 && !seen[k], "a completion with context %p", e.op_context);
		seen[k] = true;
	}
	printf("fi_writemsg/fi_sendmsg FI_INJECT: one completion each, their contexts\n");
	/* nothing else may surface: no inject completes (and the server
	 * sends nothing back before our "done") */
	ret = fi_cq_read(s->f.cq, &ev, 1);
	CHECK(ret == -FI_EAGAIN, "a completion nobody asked for: %zd", ret);
	fill(buf, 4 + BURST, 4);
	POST(s, NULL, fi_inject(s->f.ep, buf, 4, 0));
	for (unsigned int i = 0; i < BACK; i++) {
		struct fi_cq_data_entry e = fab_wait_comp(s->f.cq, "a message back");
		char what[48];

		CHECK(e.op_context == &s->ctx[2 + i] && e.len == BACK_LEN,
		      "message back %u: context %p (expected %p), %zu bytes", i, e.op_context,
		      (void *)&s->ctx[2 + i], e.len);
		snprintf(what, sizeof(what), "message back %u", i);
		expect_pat(buf + 2 * SLOT + (size_t)i * BACK_LEN, 2000 + i, BACK_LEN, what);
	}
	printf("%d messages back from an endpoint without a transmit CQ: intact\n", BACK);

	MUST(fi_shutdown(s->f.ep, 0));
	fab_wait_event(s->f.eq, FI_SHUTDOWN, NULL, "our own fi_shutdown");
	fab_close(&s->f);
	free(s->buf);
	printf("client: ok\n");
	return 0;
}

int main(int argc, char **argv)
{
	struct side *s = calloc(1, sizeof(*s));
	const char *ip, *port;
	bool is_server = fab_args(argc, argv, "fab-inject server PORT | client IP PORT", &ip,
				  &port);
	struct fi_info *h = fab_hints(FI_MSG | FI_RMA, FI_CONTEXT | FI_RX_CQ_DATA);
	int ret;

	CHECK(s, "calloc");
	check_info(ip, port, is_server);
	fab_getinfo(&s->f, h, is_server, ip, port);
	fi_freeinfo(h);
	ret = is_server ? server(s) : client(s);
	free(s);
	return ret;
}
