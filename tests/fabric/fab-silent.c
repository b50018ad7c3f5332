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
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#define TIMEOUT_MS 10000

#define MUST(call) do { \
	int must_ret_ = (int)(call); \
	if (must_ret_) { \
		printf("FAIL: %s: %d (%s)\n", #call, must_ret_, fi_strerror(-must_ret_)); \
		exit(1); \
	} \
} while (0)

struct side {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_eq *eq;
	struct fid_domain *domain;
	struct fid_cq *cq;
	struct fid_ep *ep;
	struct fid_pep *pep;
	struct fid_mr *mr;
	uint64_t buf[2];
	struct fi_context send_ctx, recv_ctx;
};

static struct fi_info *hints(void)
{
	struct fi_info *h = fi_allocinfo();

	if (!h)
		exit(1);
	h->ep_attr->type = FI_EP_MSG;
	h->caps = FI_MSG;
	h->mode = FI_CONTEXT;
	h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				  FI_MR_PROV_KEY;
	h->fabric_attr->prov_name = strdup("efi");
	return h;
}

static void open_common(struct side *s)
{
	struct fi_eq_attr eq_attr = { .wait_obj = FI_WAIT_FD };
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_CONTEXT, .wait_obj = FI_WAIT_FD,
				      .size = 256 };

	MUST(fi_fabric(s->info->fabric_attr, &s->fabric, NULL));
	MUST(fi_eq_open(s->fabric, &eq_attr, &s->eq, NULL));
	MUST(fi_domain(s->fabric, s->info, &s->domain, NULL));
	MUST(fi_cq_open(s->domain, &cq_attr, &s->cq, NULL));
	MUST(fi_mr_reg(s->domain, s->buf, sizeof(s->buf), FI_SEND | FI_RECV, 0, 0, 0, &s->mr,
		       NULL));
}

static void open_ep(struct side *s, struct fi_info *info)
{
	MUST(fi_endpoint(s->domain, info, &s->ep, NULL));
	MUST(fi_ep_bind(s->ep, &s->eq->fid, 0));
	MUST(fi_ep_bind(s->ep, &s->cq->fid, FI_TRANSMIT | FI_RECV));
	MUST(fi_enable(s->ep));
}

static void wait_event(struct side *s, uint32_t want)
{
	struct fi_eq_cm_entry entry;
	uint32_t event;
	ssize_t n = fi_eq_sread(s->eq, &event, &entry, sizeof(entry), TIMEOUT_MS, 0);

	if (n < 0 || event != want) {
		printf("FAIL: waiting for CM event %u: %zd / %u\n", want, n, event);
		exit(1);
	}
	if (want == FI_CONNREQ) {
		open_ep(s, entry.info);
		fi_freeinfo(entry.info);
	}
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void close_side(struct side *s)
{
	fi_close(&s->ep->fid);
	if (s->pep)
		fi_close(&s->pep->fid);
	fi_close(&s->mr->fid);
	fi_close(&s->cq->fid);
	fi_close(&s->domain->fid);
	fi_close(&s->eq->fid);
	fi_close(&s->fabric->fid);
	fi_freeinfo(s->info);
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

	open_ep(s, s->info);
	MUST(fi_recv(s->ep, &s->buf[1], sizeof(s->buf[1]), fi_mr_desc(s->mr), 0, &s->recv_ctx));
	MUST(fi_connect(s->ep, s->info->dest_addr, NULL, 0));
	wait_event(s, FI_CONNECTED);
	for (int i = 0; i < injects; i++) {
		ssize_t r;

		s->buf[0] = (uint64_t)i;
		r = fi_inject(s->ep, &s->buf[0], sizeof(s->buf[0]), 0);
		if (r == -FI_EAGAIN)
			break;	/* send queue full: enough are held back */
		MUST(r);
		posted++;
	}
	MUST(fi_send(s->ep, &s->buf[0], sizeof(s->buf[0]), fi_mr_desc(s->mr), 0, &s->send_ctx));
	/* let the first RNR NAK come back: the injects are held, not lost */
	for (end = now_ms() + 200; now_ms() < end;) {
		struct fi_cq_entry e;
		ssize_t n = fi_cq_read(s->cq, &e, 1);

		if (n == 1 || n == -FI_EAVAIL) {
			printf("FAIL: a completion (%zd) before the shutdown: the server posts no receive\n", n);
			return 1;
		}
	}
	MUST(fi_shutdown(s->ep, 0));
	for (end = now_ms() + TIMEOUT_MS; !(send_seen && recv_seen) && now_ms() < end;) {
		struct fi_cq_entry e;
		struct fi_cq_err_entry err = { 0 };
		ssize_t n = fi_cq_read(s->cq, &e, 1);

		if (n == 1) {
			*mark(s, e.op_context, &send_seen, &recv_seen, "a successful completion") = true;
		} else if (n == -FI_EAVAIL) {
			n = fi_cq_readerr(s->cq, &err, 0);
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
		       TIMEOUT_MS);
		return 1;
	}
	printf("%d injects held back and flushed, none reported\n", posted);
	printf("client: ok\n");
	return 0;
}

int main(int argc, char **argv)
{
	struct side s = { 0 };
	struct fi_info *h = hints();
	bool server = argc == 3 && !strcmp(argv[1], "server");
	int ret = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!server && !(argc == 5 && !strcmp(argv[1], "client"))) {
		fprintf(stderr, "usage: fab-silent server PORT | client IP PORT INJECTS\n");
		return 2;
	}
	if (server) {
		MUST(fi_getinfo(FI_VERSION(1, 17), NULL, argv[2], FI_SOURCE, h, &s.info));
		open_common(&s);
		MUST(fi_passive_ep(s.fabric, s.info, &s.pep, NULL));
		MUST(fi_pep_bind(s.pep, &s.eq->fid, 0));
		MUST(fi_listen(s.pep));
		printf("listening\n");
		wait_event(&s, FI_CONNREQ);
		MUST(fi_accept(s.ep, NULL, 0));	/* and no receive, ever */
		wait_event(&s, FI_CONNECTED);
		wait_event(&s, FI_SHUTDOWN);
		printf("server: ok\n");
	} else {
		MUST(fi_getinfo(FI_VERSION(1, 17), argv[2], argv[3], 0, h, &s.info));
		open_common(&s);
		ret = client(&s, atoi(argv[4]));
	}
	close_side(&s);
	fi_freeinfo(h);
	return ret;
}
