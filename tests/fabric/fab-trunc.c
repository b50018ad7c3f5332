/* SPDX-License-Identifier: MIT */
/*
 * fab-trunc: a message longer than the receive that takes it (issue 21):
 * the receive completes in error with FI_ETRUNC, its buffer holds the
 * message's first bytes, len says how many and olen how many did not fit
 * (fi_cq_readerr), as the tcp provider reports it.  The sender's send fails
 * too (RC: the connection is in error after it, as with verbs).
 *
 *   fab-trunc server PORT
 *   fab-trunc client IP PORT
 *
 * Exit status 0 when the error completion says exactly that.
 */
#include <string.h>

#include "fabtest.h"

#define RECV_LEN	100
#define MSG_LEN		4000	/* several packets: the overflow starts in the first */

struct side {
	struct fab_side f;
	uint8_t buf[MSG_LEN];
	struct fi_context ctx;
};

static uint8_t pat(size_t i)
{
	return (uint8_t)(i * 7u + 3u + (i >> 8));
}

/* Waits for the error completion on cq; returns it. */
static struct fi_cq_err_entry wait_err(struct fid_cq *cq, const char *what)
{
	struct fi_cq_err_entry err;
	struct fi_cq_data_entry e;
	double until = fab_now_ms() + FAB_TIMEOUT_MS;
	ssize_t n;

	for (;;) {
		n = fi_cq_read(cq, &e, 1);
		if (n == -FI_EAVAIL)
			break;
		CHECK(n == -FI_EAGAIN, "%s: fi_cq_read gave %zd, expected an error completion", what, n);
		CHECK(fab_now_ms() < until, "%s: no completion within %d ms", what, FAB_TIMEOUT_MS);
	}
	memset(&err, 0, sizeof(err));
	n = fi_cq_readerr(cq, &err, 0);
	CHECK(n == 1, "%s: fi_cq_readerr: %zd", what, n);
	return err;
}

static int server(struct side *s)
{
	struct fi_cq_err_entry err;

	fab_open(&s->f, FI_CQ_FORMAT_DATA, 64);
	MUST(fi_mr_reg(s->f.domain, s->buf, sizeof(s->buf), FI_RECV, 0, 0, 0, &s->f.mr, NULL));
	fab_listen(&s->f);
	fab_take_connreq(&s->f);
	MUST(fi_recv(s->f.ep, s->buf, RECV_LEN, fi_mr_desc(s->f.mr), 0, &s->ctx));
	MUST(fi_accept(s->f.ep, NULL, 0));
	fab_wait_event(s->f.eq, FI_CONNECTED, NULL, "FI_CONNECTED");
	err = wait_err(s->f.cq, "the receive");
	CHECK(err.err == FI_ETRUNC, "the receive: err %d (%s), expected FI_ETRUNC", err.err,
	      fi_strerror(err.err));
	CHECK(err.op_context == &s->ctx, "the receive: context %p, expected %p", err.op_context,
	      (void *)&s->ctx);
	CHECK(err.flags & FI_RECV, "the receive: flags 0x%llx lack FI_RECV",
	      (unsigned long long)err.flags);
	CHECK(err.len == RECV_LEN, "the receive: len %zu, expected %d", err.len, RECV_LEN);
	CHECK(err.olen == MSG_LEN - RECV_LEN, "the receive: olen %zu, expected %d", err.olen,
	      MSG_LEN - RECV_LEN);
	for (size_t i = 0; i < RECV_LEN; i++)
		CHECK(s->buf[i] == pat(i), "byte %zu is 0x%02x, expected 0x%02x", i, s->buf[i], pat(i));
	for (size_t i = RECV_LEN; i < MSG_LEN; i++)
		CHECK(s->buf[i] == 0, "byte %zu past the receive was written", i);
	printf("truncated receive: FI_ETRUNC, len %zu, olen %zu, the first %d bytes in place\n",
	       err.len, err.olen, RECV_LEN);
	fab_close(&s->f);
	printf("server: ok\n");
	return 0;
}

static int client(struct side *s)
{
	struct fi_cq_err_entry err;

	fab_open(&s->f, FI_CQ_FORMAT_DATA, 64);
	for (size_t i = 0; i < MSG_LEN; i++)
		s->buf[i] = pat(i);
	MUST(fi_mr_reg(s->f.domain, s->buf, sizeof(s->buf), FI_SEND, 0, 0, 0, &s->f.mr, NULL));
	fab_open_ep(&s->f, s->f.info);
	MUST(fi_connect(s->f.ep, s->f.info->dest_addr, NULL, 0));
	fab_wait_event(s->f.eq, FI_CONNECTED, NULL, "FI_CONNECTED");
	MUST(fi_send(s->f.ep, s->buf, MSG_LEN, fi_mr_desc(s->f.mr), 0, &s->ctx));
	err = wait_err(s->f.cq, "the send");
	CHECK(err.op_context == &s->ctx, "the send: context %p, expected %p", err.op_context,
	      (void *)&s->ctx);
	CHECK(err.err != 0, "the send: err 0");
	printf("the send failed as RC says: %s\n", fi_strerror(err.err));
	fab_close(&s->f);
	printf("client: ok\n");
	return 0;
}

int main(int argc, char **argv)
{
	static struct side s;
	const char *ip, *port;
	bool is_server = fab_args(argc, argv, NULL, &ip, &port);
	struct fi_info *h = fab_hints(FI_MSG, FI_CONTEXT);

	fab_getinfo(&s.f, h, is_server, ip, port);
	fi_freeinfo(h);
	return is_server ? server(&s) : client(&s);
}
