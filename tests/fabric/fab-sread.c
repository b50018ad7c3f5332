/* SPDX-License-Identifier: MIT */
/*
 * fab-sread: a ping-pong over the efi provider's FI_EP_MSG endpoints whose
 * both sides wait in fi_cq_sread (the CQ's fd wait object, fi_trywait's
 * arming), the way ofi_rxm and blocking applications wait:
 *
 *   fab-sread server PORT ITERS
 *   fab-sread client IP PORT ITERS
 *
 * Every message carries its sequence number and is checked; the client
 * prints the mean microseconds per round trip (a figure, not a verdict).
 * Exit status 0 when every message came back right.
 */
#include <inttypes.h>
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
	uint64_t tx, rx;
	struct fi_context tx_ctx, rx_ctx;
	bool tx_done, rx_done;	/* completions seen, not yet waited for */
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
				      .size = 64 };

	MUST(fi_fabric(s->info->fabric_attr, &s->fabric, NULL));
	MUST(fi_eq_open(s->fabric, &eq_attr, &s->eq, NULL));
	MUST(fi_domain(s->fabric, s->info, &s->domain, NULL));
	MUST(fi_cq_open(s->domain, &cq_attr, &s->cq, NULL));
	/* tx and rx are adjacent members: one MR over both */
	MUST(fi_mr_reg(s->domain, &s->tx, 2 * sizeof(uint64_t), FI_SEND | FI_RECV, 0, 0, 0,
		       &s->mr, NULL));
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

/* Blocks in fi_cq_sread until the completion of ctx (the send's or the
 * receive's; the other one may come first and is remembered). */
static void wait_for(struct side *s, void *ctx)
{
	bool *mine = ctx == &s->tx_ctx ? &s->tx_done : &s->rx_done;

	while (!*mine) {
		struct fi_cq_entry e;
		ssize_t n = fi_cq_sread(s->cq, &e, 1, NULL, TIMEOUT_MS);

		if (n != 1) {
			printf("FAIL: fi_cq_sread: %zd (%s)\n", n, fi_strerror((int)-n));
			exit(1);
		}
		if (e.op_context == &s->tx_ctx)
			s->tx_done = true;
		else if (e.op_context == &s->rx_ctx)
			s->rx_done = true;
	}
	*mine = false;
}

static void post_recv(struct side *s)
{
	MUST(fi_recv(s->ep, &s->rx, sizeof(s->rx), fi_mr_desc(s->mr), 0, &s->rx_ctx));
}

/* Sends seq and waits for both its completion and the next message. */
static void send_seq(struct side *s, uint64_t seq)
{
	s->tx = seq;
	MUST(fi_send(s->ep, &s->tx, sizeof(s->tx), fi_mr_desc(s->mr), 0, &s->tx_ctx));
	wait_for(s, &s->tx_ctx);
}

static void check(struct side *s, uint64_t want)
{
	if (s->rx != want) {
		printf("FAIL: received %" PRIu64 ", expected %" PRIu64 "\n", s->rx, want);
		exit(1);
	}
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
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

int main(int argc, char **argv)
{
	struct side s = { 0 };
	struct fi_info *h = hints();
	bool server = argc == 4 && !strcmp(argv[1], "server");
	uint64_t iters;
	double start;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!server && !(argc == 5 && !strcmp(argv[1], "client"))) {
		fprintf(stderr, "usage: fab-sread server PORT ITERS | client IP PORT ITERS\n");
		return 2;
	}
	iters = strtoull(argv[argc - 1], NULL, 10);
	if (server) {
		MUST(fi_getinfo(FI_VERSION(1, 17), NULL, argv[2], FI_SOURCE, h, &s.info));
		open_common(&s);
		MUST(fi_passive_ep(s.fabric, s.info, &s.pep, NULL));
		MUST(fi_pep_bind(s.pep, &s.eq->fid, 0));
		MUST(fi_listen(s.pep));
		printf("listening\n");
		wait_event(&s, FI_CONNREQ);
		post_recv(&s);
		MUST(fi_accept(s.ep, NULL, 0));
		wait_event(&s, FI_CONNECTED);
		for (uint64_t i = 0; i < iters; i++) {
			wait_for(&s, &s.rx_ctx);
			check(&s, 2 * i);
			post_recv(&s);
			send_seq(&s, 2 * i + 1);
		}
		wait_event(&s, FI_SHUTDOWN);
		close_side(&s);
		fi_freeinfo(h);
		printf("server: ok\n");
		return 0;
	}
	MUST(fi_getinfo(FI_VERSION(1, 17), argv[2], argv[3], 0, h, &s.info));
	open_common(&s);
	open_ep(&s, s.info);
	post_recv(&s);
	MUST(fi_connect(s.ep, s.info->dest_addr, NULL, 0));
	wait_event(&s, FI_CONNECTED);
	start = now_us();
	for (uint64_t i = 0; i < iters; i++) {
		send_seq(&s, 2 * i);
		wait_for(&s, &s.rx_ctx);
		check(&s, 2 * i + 1);
		post_recv(&s);
	}
	printf("round trips: %" PRIu64 ", %.1f us each (both sides in fi_cq_sread)\n", iters,
	       (now_us() - start) / (double)(iters ? iters : 1));
	fi_shutdown(s.ep, 0);
	close_side(&s);
	fi_freeinfo(h);
	printf("client: ok\n");
	return 0;
}
