/* SPDX-License-Identifier: MIT */
/*
 * fab-silent: silent operations that fail stay out of the CQ.  The server
 * accepts a connection and never posts a receive; the client posts a
 * receive (context R), injects INJECTS messages (fi_inject: no context, no
 * completion asked for; the server's missing receives hold them back with
 * RNR NAKs), sends one message with a context (S), then shuts the
 * connection down, which puts its QP into the error state: everything
 * still posted completes with an error.
 *
 * The client must then read exactly the errors of R and S, each with its
 * context, and nothing else: an entry or error without a context (an
 * inject's) fails the run.  ofi_rxm reads op_context behind every error of
 * its MSG endpoints (rxm_handle_comp_error) and crashed on the NULL one
 * (tests/mpi, fabric/cq.c).
 *
 *   fab-silent server PORT
 *   fab-silent client IP PORT INJECTS
 *
 * Exit status 0 when the CQ held what it should.
 */
#include <string.h>

#include "fabtest.h"

#define USAGE "fab-silent server PORT | client IP PORT INJECTS"

struct side {
	struct fab_side f;
	uint64_t buf[2];
	struct fi_context send_ctx, recv_ctx;
};

static void open_common(struct side *s)
{
	fab_open(&s->f, FI_CQ_FORMAT_CONTEXT, 256);
	MUST(fi_mr_reg(s->f.domain, s->buf, sizeof(s->buf), FI_SEND | FI_RECV, 0, 0, 0, &s->f.mr,
		       NULL));
}

/* Which of our two contexts ctx is; fails on any other (NULL: an inject's). */
static bool *mark(struct side *s, void *ctx, bool *send_seen, bool *recv_seen, const char *what)
{
	if (ctx == &s->send_ctx)
		return send_seen;
	if (ctx == &s->recv_ctx)
		return recv_seen;
	printf("FAIL: %s with context %p: neither the send's nor the receive's (an inject's?)\n",
	       what, ctx);
	exit(1);
}

static int client(struct side *s, int injects)
{
	bool send_seen = false, recv_seen = false;
	int posted = 0;
	double end;

	fab_open_ep(&s->f, s->f.info);
	MUST(fi_recv(s->f.ep, &s->buf[1], sizeof(s->buf[1]), fi_mr_desc(s->f.mr), 0,
		     &s->recv_ctx));
	MUST(fi_connect(s->f.ep, s->f.info->dest_addr, NULL, 0));
	fab_wait_event(s->f.eq, FI_CONNECTED, NULL, "FI_CONNECTED");
	for (int i = 0; i < injects; i++) {
		ssize_t r;

		s->buf[0] = (uint64_t)i;
		r = fi_inject(s->f.ep, &s->buf[0], sizeof(s->buf[0]), 0);
		if (r == -FI_EAGAIN)
			break;	/* send queue full: enough are held back */
		MUST(r);
		posted++;
	}
	MUST(fi_send(s->f.ep, &s->buf[0], sizeof(s->buf[0]), fi_mr_desc(s->f.mr), 0,
		     &s->send_ctx));
	/* let the first RNR NAK come back: the injects are held, not lost */
	for (end = fab_now_ms() + 200; fab_now_ms() < end;) {
		struct fi_cq_entry e;
		ssize_t n = fi_cq_read(s->f.cq, &e, 1);

		if (n == 1 || n == -FI_EAVAIL) {
			printf("FAIL: a completion (%zd) before the shutdown: the server posts no receive\n", n);
			return 1;
		}
	}
	MUST(fi_shutdown(s->f.ep, 0));
	for (end = fab_now_ms() + FAB_TIMEOUT_MS; !(send_seen && recv_seen) && fab_now_ms() < end;) {
		struct fi_cq_entry e;
		struct fi_cq_err_entry err = { 0 };
		ssize_t n = fi_cq_read(s->f.cq, &e, 1);

		if (n == 1) {
			*mark(s, e.op_context, &send_seen, &recv_seen, "a successful completion") = true;
		} else if (n == -FI_EAVAIL) {
			n = fi_cq_readerr(s->f.cq, &err, 0);
			if (n != 1) {
				printf("FAIL: fi_cq_readerr: %zd\n", n);
				return 1;
			}
			*mark(s, err.op_context, &send_seen, &recv_seen, "an error completion") = true;
			printf("error completion of the %s: %s\n",
			       err.op_context == &s->send_ctx ? "send" : "receive", fi_strerror(err.err));
		} else if (n != -FI_EAGAIN) {
			printf("FAIL: fi_cq_read: %zd (%s)\n", n, fi_strerror((int)-n));
			return 1;
		}
	}
	if (!send_seen || !recv_seen) {
		printf("FAIL: no completion of the %s within %d ms\n", send_seen ? "receive" : "send",
		       FAB_TIMEOUT_MS);
		return 1;
	}
	printf("%d injects held back and flushed, none reported\n", posted);
	printf("client: ok\n");
	return 0;
}

int main(int argc, char **argv)
{
	struct side s = { 0 };
	struct fi_info *h = fab_hints(FI_MSG, FI_CONTEXT);
	const char *ip, *port;
	bool server = fab_args(argc, argv, USAGE, &ip, &port);
	int ret = 0;

	if (!server && argc != 5) {
		fprintf(stderr, "usage: %s\n", USAGE);
		return 2;
	}
	fab_getinfo(&s.f, h, server, ip, port);
	open_common(&s);
	if (server) {
		fab_listen(&s.f);
		fab_take_connreq(&s.f);
		MUST(fi_accept(s.f.ep, NULL, 0));	/* and no receive, ever */
		fab_wait_event(s.f.eq, FI_CONNECTED, NULL, "FI_CONNECTED");
		fab_wait_event(s.f.eq, FI_SHUTDOWN, NULL, "the peer's fi_shutdown");
		printf("server: ok\n");
	} else {
		ret = client(&s, atoi(argv[4]));
	}
	fab_close(&s.f);
	fi_freeinfo(h);
	return ret;
}
