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
#include <string.h>

#include "fabtest.h"

#define USAGE "fab-sread server PORT ITERS | client IP PORT ITERS"

struct side {
	struct fab_side f;
	uint64_t tx, rx;
	struct fi_context tx_ctx, rx_ctx;
	bool tx_done, rx_done;	/* completions seen, not yet waited for */
};

static void open_common(struct side *s)
{
	fab_open(&s->f, FI_CQ_FORMAT_CONTEXT, 64);
	/* tx and rx are adjacent members: one MR over both */
	MUST(fi_mr_reg(s->f.domain, &s->tx, 2 * sizeof(uint64_t), FI_SEND | FI_RECV, 0, 0, 0,
		       &s->f.mr, NULL));
}

/* Blocks in fi_cq_sread until the completion of ctx (the send's or the
 * receive's; the other one may come first and is remembered). */
static void wait_for(struct side *s, void *ctx)
{
	bool *mine = ctx == &s->tx_ctx ? &s->tx_done : &s->rx_done;

	while (!*mine) {
		struct fi_cq_entry e;
		ssize_t n = fi_cq_sread(s->f.cq, &e, 1, NULL, FAB_TIMEOUT_MS);

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
	MUST(fi_recv(s->f.ep, &s->rx, sizeof(s->rx), fi_mr_desc(s->f.mr), 0, &s->rx_ctx));
}

/* Sends seq and waits for both its completion and the next message. */
static void send_seq(struct side *s, uint64_t seq)
{
	s->tx = seq;
	MUST(fi_send(s->f.ep, &s->tx, sizeof(s->tx), fi_mr_desc(s->f.mr), 0, &s->tx_ctx));
	wait_for(s, &s->tx_ctx);
}

static void check(struct side *s, uint64_t want)
{
	if (s->rx != want) {
		printf("FAIL: received %" PRIu64 ", expected %" PRIu64 "\n", s->rx, want);
		exit(1);
	}
}

int main(int argc, char **argv)
{
	struct side s = { 0 };
	struct fi_info *h = fab_hints(FI_MSG, FI_CONTEXT);
	const char *ip, *port;
	bool server = fab_args(argc, argv, USAGE, &ip, &port);
	uint64_t iters;
	double start;

	if (argc != (server ? 4 : 5)) {
		fprintf(stderr, "usage: %s\n", USAGE);
		return 2;
	}
	iters = strtoull(argv[argc - 1], NULL, 10);
	fab_getinfo(&s.f, h, server, ip, port);
	open_common(&s);
	if (server) {
		fab_listen(&s.f);
		fab_take_connreq(&s.f);
		post_recv(&s);
		MUST(fi_accept(s.f.ep, NULL, 0));
		fab_wait_event(s.f.eq, FI_CONNECTED, NULL, "FI_CONNECTED");
		for (uint64_t i = 0; i < iters; i++) {
			wait_for(&s, &s.rx_ctx);
			check(&s, 2 * i);
			post_recv(&s);
			send_seq(&s, 2 * i + 1);
		}
		fab_wait_event(s.f.eq, FI_SHUTDOWN, NULL, "the peer's fi_shutdown");
		fab_close(&s.f);
		fi_freeinfo(h);
		printf("server: ok\n");
		return 0;
	}
	fab_open_ep(&s.f, s.f.info);
	post_recv(&s);
	MUST(fi_connect(s.f.ep, s.f.info->dest_addr, NULL, 0));
	fab_wait_event(s.f.eq, FI_CONNECTED, NULL, "FI_CONNECTED");
	start = fab_now_ms();
	for (uint64_t i = 0; i < iters; i++) {
		send_seq(&s, 2 * i);
		wait_for(&s, &s.rx_ctx);
		check(&s, 2 * i + 1);
		post_recv(&s);
	}
	printf("round trips: %" PRIu64 ", %.1f us each (both sides in fi_cq_sread)\n", iters,
	       (fab_now_ms() - start) * 1e3 / (double)(iters ? iters : 1));
	fi_shutdown(s.f.ep, 0);
	fab_close(&s.f);
	fi_freeinfo(h);
	printf("client: ok\n");
	return 0;
}
