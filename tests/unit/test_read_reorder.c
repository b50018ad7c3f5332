/* SPDX-License-Identifier: MIT */
/*
 * Read responses out of order with several Reads outstanding (issue 15/20:
 * libfabric rxm's Read rendezvous issues several at once, and a QP's lanes
 * reorder).  Over the in-memory wire, the test stands between requester
 * and responder: qp[0] posts Reads, qp[1] answers them while qp[0]'s
 * context is held, and the test hands qp[0] the responses in an order of
 * its choosing — interleaved across Reads, reversed within blocks, one
 * lost, duplicated with garbage, or overtaken by a later chunk on another
 * path.  Every Read must complete with every byte right; responses merely
 * reordered must be neither dropped nor asked for again, and a lost one is
 * asked for alone.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "efi_testutil.h"
#include "libefi/efi_int.h"

#define MAXRESP 1024

static const struct efi_qp_cap cap = {
	.max_send_wr = 64, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1,
};

struct resp {
	uint8_t buf[EFI_RXBUF_SIZE];
	uint32_t len;
	uint32_t k;		/* PSN − the first Read's first PSN */
};

struct rig {
	struct tpair t;
	struct efi_context_int *c0, *c1;
	struct efi_qp_int *q0;
	uint8_t *src, *dst;
	struct efi_mr *ms, *md;
	uint32_t nreads, len, npk;	/* Reads, bytes and response packets each */
	uint32_t base;			/* the first Read's first PSN */
	struct resp *r;			/* the responses, by k */
	uint32_t nresp;
	bool c1_held;
};

/* Two contexts (nlanes lanes), qp[0] reading nreads × len bytes from qp[1];
 * qp[1]'s transport held from now on. */
static void rig_open(struct rig *g, unsigned nlanes, uint32_t nreads, uint32_t len)
{
	memset(g, 0, sizeof(*g));
	tpair_open_lanes(&g->t, 1500, NULL, nlanes);
	g->c0 = (struct efi_context_int *)g->t.ctx[0];
	g->c1 = (struct efi_context_int *)g->t.ctx[1];
	/* every response leaves before the requester hears of any: no
	 * congestion window may hold them back (the QPs take it at creation) */
	g->c0->ccp.init_cwnd = g->c1->ccp.init_cwnd = MAXRESP;
	tpair_connect(&g->t, &cap, 1, 7, 1, 14, 7);
	g->q0 = qp_of(g->t.qp[0]);
	g->nreads = nreads;
	g->len = len;
	g->npk = efi_pkt_count(len, g->q0->seg);
	ck_assert_uint_le(nreads * g->npk, MAXRESP);
	g->src = malloc((size_t)nreads * len);
	g->dst = calloc(nreads, len);
	g->r = calloc(MAXRESP, sizeof(*g->r));
	ck_assert(g->src && g->dst && g->r);
	for (size_t i = 0; i < (size_t)nreads * len; i++)
		g->src[i] = (uint8_t)(i * 131 + (i >> 9) * 7 + 1);
	g->ms = treg(g->t.pd[1], g->src, (size_t)nreads * len, EFI_ACCESS_LOCAL_WRITE | EFI_ACCESS_REMOTE_READ);
	g->md = treg(g->t.pd[0], g->dst, (size_t)nreads * len, EFI_ACCESS_LOCAL_WRITE);
	pthread_mutex_lock(&g->c1->lock);
	g->c1_held = true;
}

/* Posts the Reads, lets qp[0] send their requests, then holds qp[0] and
 * lets qp[1] answer: every response ends up in g->r[k], none reaches
 * qp[0].  Both transports held afterwards. */
static void rig_collect(struct rig *g)
{
	uint64_t give_up = efi_now_ns() + 10ull * 1000000000;
	uint32_t total = 0;
	bool sent = false;

	pthread_mutex_lock(&g->c0->lock);
	g->base = g->q0->snd_max;
	pthread_mutex_unlock(&g->c0->lock);
	for (uint32_t i = 0; i < g->nreads; i++)
		ck_assert_int_eq(tpost_send1(g->t.qp[0], EFI_WR_RDMA_READ, i, g->dst + (size_t)i * g->len, g->len,
					     g->md, (uintptr_t)g->src + (uint64_t)i * g->len, g->ms->rkey), 0);
	while (!sent && efi_now_ns() < give_up) {
		efi_poll_cq(g->t.cq[0], 0, NULL);
		pthread_mutex_lock(&g->c0->lock);
		sent = g->q0->snd_nxt == g->q0->snd_max && g->q0->sq_started == g->q0->sq_tail;
		if (!sent) {
			pthread_mutex_unlock(&g->c0->lock);
			usleep(100);
		}
	}
	ck_assert_msg(sent, "the Read requests did not leave");
	/* qp[0] is held (its lock kept): qp[1] answers into the wire */
	pthread_mutex_unlock(&g->c1->lock);
	g->c1_held = false;
	while (total < g->nreads * g->npk && efi_now_ns() < give_up) {
		uint8_t buf[EFI_RXBUF_SIZE];
		struct efi_pkt p;
		int got;

		efi_poll_cq(g->t.cq[1], 0, NULL);
		while ((got = tw_take(g->c1->wire, buf, sizeof(buf))) >= 0) {
			uint32_t k;
			if (efi_pkt_parse(buf, (size_t)got, &p) != 0 || p.opcode < EFI_OP_READ_RESP_FIRST ||
			    p.opcode > EFI_OP_READ_RESP_ONLY)
				continue;	/* nothing but responses is expected; an ACK is not needed */
			k = (uint32_t)efi_psn_diff(p.psn, g->base);
			ck_assert_uint_lt(k, g->nreads * g->npk);
			ck_assert_uint_eq(g->r[k].len, 0);	/* each response sent once */
			memcpy(g->r[k].buf, buf, (size_t)got);
			g->r[k].len = (uint32_t)got;
			g->r[k].k = k;
			total++;
		}
	}
	ck_assert_uint_eq(total, g->nreads * g->npk);
	g->nresp = total;
	pthread_mutex_lock(&g->c1->lock);
	g->c1_held = true;
}

/* Hands response k to qp[0] (its transport held). */
static void give(struct rig *g, uint32_t k)
{
	ck_assert_uint_lt(k, g->nresp);
	tw_inject(g->c0->wire, g->r[k].buf, g->r[k].len);
}

/* A copy of response k with its payload garbled, as a stale or corrupt
 * duplicate (the transport has no checksum of its own: a copy of a response
 * already taken must simply never land). */
static void give_garbled_copy(struct rig *g, uint32_t k)
{
	uint8_t buf[EFI_RXBUF_SIZE];
	struct efi_pkt p;

	memcpy(buf, g->r[k].buf, g->r[k].len);
	ck_assert_int_eq(efi_pkt_parse(buf, g->r[k].len, &p), 0);
	memset(buf + (p.payload - buf), 0xee, p.payload_len);
	tw_inject(g->c0->wire, buf, g->r[k].len);
}

/* Response k as if it came back on path (rebuilt with that path byte). */
static void give_on_path(struct rig *g, uint32_t k, uint8_t path)
{
	uint8_t buf[EFI_RXBUF_SIZE];
	struct efi_pkt p, chk;
	size_t hl;

	ck_assert_int_eq(efi_pkt_parse(g->r[k].buf, g->r[k].len, &p), 0);
	p.path = path;
	hl = efi_pkt_build_hdr(buf, sizeof(buf), &p);
	ck_assert_uint_gt(hl, 0);
	memcpy(buf + hl, p.payload, p.payload_len);
	ck_assert_int_eq(efi_pkt_parse(buf, hl + p.payload_len, &chk), 0);
	ck_assert_uint_eq(chk.path, path);
	ck_assert_uint_eq(chk.psn, p.psn);
	tw_inject(g->c0->wire, buf, (uint32_t)(hl + p.payload_len));
}

/* Lets qp[0] run (and qp[1] too when answer): every Read completes
 * successfully with its bytes, and the QP holds no early bitmap after. */
static void rig_finish(struct rig *g, bool answer)
{
	struct efi_wc wc[64];
	struct efi_qp_mem m;
	int n;

	pthread_mutex_unlock(&g->c0->lock);
	if (answer) {
		pthread_mutex_unlock(&g->c1->lock);
		g->c1_held = false;
	}
	n = tpoll(g->t.cq[0], wc, (int)g->nreads, 10000);
	if (n != (int)g->nreads || wc[0].status != EFI_WC_SUCCESS) {
		/* a Read that failed (RETRY_EXC: a response it dropped was
		 * never sent again): what the QP dropped, and why */
		struct efi_counters c;
		ck_assert_int_eq(efi_query_qp_counters(g->t.qp[0], &c), 0);
		for (unsigned i = 0; i < EFI_DROP_REASON_COUNT; i++)
			if (c.drop_reasons[i])
				fprintf(stderr, "drop %s: %llu\n", efi_drop_reason_str(i),
					(unsigned long long)c.drop_reasons[i]);
		fprintf(stderr, "retx %llu timeouts %llu\n", (unsigned long long)c.retransmissions, (unsigned long long)c.timeouts);
	}
	ck_assert_int_eq(n, (int)g->nreads);
	for (int i = 0; i < n; i++) {
		ck_assert_msg(wc[i].status == EFI_WC_SUCCESS, "Read %llu: status %d",
			      (unsigned long long)wc[i].wr_id, wc[i].status);
		ck_assert_uint_eq(wc[i].opcode, EFI_WC_RDMA_READ);
		ck_assert_uint_eq(wc[i].byte_len, g->len);
	}
	for (size_t i = 0; i < (size_t)g->nreads * g->len; i++)
		ck_assert_msg(g->dst[i] == g->src[i], "byte %zu of Read %zu: %02x, not %02x", i % g->len,
			      i / g->len, g->dst[i], g->src[i]);
	efi_qp_mem(g->t.qp[0], &m);
	ck_assert_uint_eq(m.read_early, 0);
}

static void counters(struct rig *g, struct efi_counters *c)
{
	ck_assert_int_eq(efi_query_qp_counters(g->t.qp[0], c), 0);
}

/* Lets qp[0] run alone (qp[1] held) until it sent a request again, at most
 * 2 s; holds it again after.  Its counters then in *c (they cannot be
 * queried while it is held). */
static void run_until_resent(struct rig *g, struct efi_counters *c)
{
	uint64_t give_up = efi_now_ns() + 2ull * 1000000000;

	pthread_mutex_unlock(&g->c0->lock);
	do {
		efi_poll_cq(g->t.cq[0], 0, NULL);
		counters(g, c);
	} while (!c->retransmissions && efi_now_ns() < give_up);
	pthread_mutex_lock(&g->c0->lock);
}

/* Whether a timer fired in a run (a timeout or a tail-loss probe): on a
 * loaded machine the real responder's thread may not run for the RTO's
 * 10 ms floor, and such a run says nothing of a rule that asks for a gap
 * without waiting for a timer.  The cases that count what was sent again
 * run up to RUNS_FOR_ONE_QUIET times and need one run without a timer;
 * with their rule broken, every run waits for one. */
#define RUNS_FOR_ONE_QUIET 5

static bool timer_fired(const char *name, const struct efi_counters *c)
{
	if (!c->timeouts && !c->tail_probes)
		return false;
	fprintf(stderr, "%s: %llu timeouts, %llu tail-loss probes (a loaded machine?), again\n", name,
		(unsigned long long)c->timeouts, (unsigned long long)c->tail_probes);
	return true;
}

/* Takes what qp[0] sent since the responses were collected off the wire
 * (qp[1] is held: nobody else reads it), in the order it was sent, and
 * returns how many Read requests went again.  The first must ask for
 * responses in [lo, hi) (PSNs after the first Read's), and for one
 * response alone when alone is set.  Those after it are not checked: this
 * thread may not have run for a while (a loaded machine), and meanwhile
 * the QP asks again for what its held responder never answers (RACK, by
 * send time), which is not the rule under test. */
static int take_resent(struct rig *g, uint32_t lo, uint32_t hi, bool alone)
{
	uint8_t buf[EFI_RXBUF_SIZE];
	struct efi_pkt p;
	int got, reqs = 0;

	while ((got = tw_take(g->c0->wire, buf, sizeof(buf))) >= 0) {
		ck_assert_int_eq(efi_pkt_parse(buf, (size_t)got, &p), 0);
		if (p.opcode != EFI_OP_READ_REQUEST || reqs++)
			continue;
		int32_t off = efi_psn_diff(p.psn, g->base);
		ck_assert_msg(off >= 0 && (uint32_t)off >= lo && (uint32_t)off < hi,
			      "first request sent again is for response %d, expected one in [%u, %u)", off, lo, hi);
		if (alone)
			ck_assert_uint_eq(p.reth.dma_len, g->q0->seg);
	}
	return reqs;
}

static void rig_close(struct rig *g)
{
	if (g->c1_held)
		pthread_mutex_unlock(&g->c1->lock);
	efi_dereg_mr(g->ms);
	efi_dereg_mr(g->md);
	tpair_close(&g->t);
	free(g->src);
	free(g->dst);
	free(g->r);
}

/* Four Reads, their responses interleaved (one of each in turn) and
 * reversed within blocks of 8: less than EFI_RD_GAP_RESEND apart, so no
 * response is due to be asked for, but every Read has responses ahead of
 * the one it expects at the same time. */
START_TEST(interleaved_reads_reordered)
{
	struct rig g;
	struct efi_counters c;

	rig_open(&g, 1, 4, 40000);
	rig_collect(&g);
	for (uint32_t blk = 0; blk * 8 < g.npk; blk++)
		for (uint32_t j = 8; j-- > 0;)
			for (uint32_t i = 0; i < g.nreads; i++)
				if (blk * 8 + j < g.npk)
					give(&g, i * g.npk + blk * 8 + j);
	rig_finish(&g, false);
	counters(&g, &c);
	ck_assert_msg(c.drop_reasons[EFI_DROP_OUT_OF_WINDOW] == 0, "%llu responses dropped out of window",
		      (unsigned long long)c.drop_reasons[EFI_DROP_OUT_OF_WINDOW]);
	ck_assert_msg(c.retransmissions == c.tail_probes, "%llu requests sent again (%llu tail-loss probes)",
		      (unsigned long long)c.retransmissions, (unsigned long long)c.tail_probes);
	rig_close(&g);
}
END_TEST

/* Three Reads; one response of the middle one is lost with more than
 * EFI_RD_GAP_RESEND of its own behind it, all the others arrive in
 * reverse Read order.  It is asked for once, and only it: the responder
 * sends exactly one more response. */
static bool lost_response_once(void)
{
	struct rig g;
	struct efi_counters c;
	uint32_t lost;

	rig_open(&g, 1, 3, 40000);
	rig_collect(&g);
	lost = g.npk + 5;
	for (uint32_t i = g.nreads; i-- > 0;)
		for (uint32_t k = 0; k < g.npk; k++)
			if (i * g.npk + k != lost)
				give(&g, i * g.npk + k);
	/* qp[0] runs alone first: what it asks for is seen on the wire */
	run_until_resent(&g, &c);
	if (timer_fired("lost_response_asked_for_alone", &c)) {
		give(&g, lost);
		rig_finish(&g, false);
		rig_close(&g);
		return false;
	}
	ck_assert_uint_eq(c.drop_reasons[EFI_DROP_OUT_OF_WINDOW], 0);
	/* what it sent again asks for the lost response alone */
	ck_assert_int_ge(take_resent(&g, lost, lost + 1, true), 1);
	give(&g, lost);
	rig_finish(&g, false);
	counters(&g, &c);
	ck_assert_uint_eq(c.drop_reasons[EFI_DROP_OUT_OF_WINDOW], 0);
	rig_close(&g);
	return true;
}

START_TEST(lost_response_asked_for_alone)
{
	int runs = 0;

	while (!lost_response_once())
		ck_assert_msg(++runs < RUNS_FOR_ONE_QUIET, "a timer in each of %d runs", RUNS_FOR_ONE_QUIET);
}
END_TEST

/* Two losses in one Read of three: the second is asked for as soon as the
 * answer to the first ends at it (responses beyond it came a round trip
 * before), not after a timeout; the real responder answers.  A run in
 * which a timeout fired anyway (the responder's thread not scheduled for
 * the 10 ms floor of the RTO: CI12 at load 12) says nothing of the rule,
 * so up to five runs are made and one must be clean; with the rule
 * broken, every run waits for a timeout. */
static bool second_gap_once(void)
{
	struct rig g;
	struct efi_counters c;

	rig_open(&g, 1, 3, 40000);
	rig_collect(&g);
	for (uint32_t i = 0; i < g.nreads; i++)
		for (uint32_t k = 0; k < g.npk; k++)
			if (!(i == 1 && (k == 3 || k == 9)))
				give(&g, i * g.npk + k);
	rig_finish(&g, true);
	counters(&g, &c);
	rig_close(&g);
	if (c.timeouts) {
		fprintf(stderr, "second_gap_asked_after_first_filled: %llu timeouts (a loaded machine?), again\n",
			(unsigned long long)c.timeouts);
		return false;
	}
	/* the two gaps, and nothing else but tail-loss probes (the responder
	 * may not have run for a while on a loaded machine) */
	ck_assert_msg(c.retransmissions - c.tail_probes == 2, "%llu sent again, %llu of them probes",
		      (unsigned long long)c.retransmissions, (unsigned long long)c.tail_probes);
	return true;
}

START_TEST(second_gap_asked_after_first_filled)
{
	int tries = 0;

	while (!second_gap_once())
		ck_assert_msg(++tries < RUNS_FOR_ONE_QUIET, "a timeout in each of %d runs: the second gap waits for one",
			      RUNS_FOR_ONE_QUIET);
}
END_TEST

/* Every response twice, the second copy garbled, in an order that makes
 * copies arrive while their original waits placed ahead of its turn, after
 * it was taken in order, and after its Read completed: no byte of a copy
 * lands, and no response counts twice (each Read completes with its
 * length, and only once all of it is there). */
START_TEST(duplicates_never_land)
{
	struct rig g;

	rig_open(&g, 1, 3, 40000);
	rig_collect(&g);
	for (uint32_t blk = 0; blk * 8 < g.npk; blk++)
		for (uint32_t j = 8; j-- > 0;)
			for (uint32_t i = 0; i < g.nreads; i++) {
				uint32_t k = blk * 8 + j;
				if (k >= g.npk)
					continue;
				give(&g, i * g.npk + k);
				give_garbled_copy(&g, i * g.npk + k);
				/* given before: waiting placed, or taken */
				if (j + 4 < 8 && k + 4 < g.npk)
					give_garbled_copy(&g, i * g.npk + k + 4);
				if (k >= 8)
					give_garbled_copy(&g, i * g.npk + k - 8);
			}
	/* and stale copies after everything was taken */
	for (uint32_t k = 0; k < g.nreads * g.npk; k += 7)
		give_garbled_copy(&g, k);
	rig_finish(&g, false);
	rig_close(&g);
}
END_TEST

/* A response that fails the checks an in-order one gets (short payload
 * for a middle packet) is not placed ahead of its turn either: the good
 * copy lands after it. */
START_TEST(malformed_early_not_placed)
{
	struct rig g;
	uint8_t buf[EFI_RXBUF_SIZE];
	struct efi_pkt p;
	uint32_t k = 10;

	rig_open(&g, 1, 2, 40000);
	rig_collect(&g);
	/* Read 1's response 10, cut short, before anything of Read 1 */
	memcpy(buf, g.r[g.npk + k].buf, g.r[g.npk + k].len);
	ck_assert_int_eq(efi_pkt_parse(buf, g.r[g.npk + k].len, &p), 0);
	memset(buf + (p.payload - buf), 0xee, p.payload_len);
	tw_inject(g.c0->wire, buf, g.r[g.npk + k].len - 100);
	for (uint32_t i = g.nreads; i-- > 0;)
		for (uint32_t j = 0; j < g.npk; j++)
			give(&g, i * g.npk + j);
	rig_finish(&g, false);
	rig_close(&g);
}
END_TEST

/* Two lanes: a Read's second and third chunks come back on the other path
 * before its first (lanes are read one after the other).  That is no
 * evidence of loss: nothing is asked for again. */
START_TEST(chunk_overtaken_on_another_path)
{
	struct rig g;
	struct efi_counters c;
	int path0;

	rig_open(&g, 2, 1, 200000);
	ck_assert_uint_eq(g.q0->npaths, 2);
	rig_collect(&g);
	ck_assert_uint_gt(g.npk, 2 * EFI_READ_CHUNK);
	path0 = efi_retx_path_of(g.q0, g.base);
	ck_assert_int_ge(path0, 0);
	for (uint32_t k = EFI_READ_CHUNK; k < g.npk; k++)
		give_on_path(&g, k, (uint8_t)!path0);
	for (uint32_t k = 0; k < EFI_READ_CHUNK; k++)
		give_on_path(&g, k, (uint8_t)path0);
	rig_finish(&g, false);
	counters(&g, &c);
	ck_assert_uint_eq(c.drops, 0);
	ck_assert_uint_eq(c.retransmissions, c.tail_probes);
	rig_close(&g);
}
END_TEST

/* The same on the first chunk's own path: the responses ahead came after
 * the missing ones on one lane, so those were lost and are asked for. */
static bool own_path_once(void)
{
	struct rig g;
	struct efi_counters c;
	int path0;

	rig_open(&g, 2, 1, 200000);
	rig_collect(&g);
	path0 = efi_retx_path_of(g.q0, g.base);
	ck_assert_int_ge(path0, 0);
	for (uint32_t k = EFI_READ_CHUNK; k < g.npk; k++)
		give_on_path(&g, k, (uint8_t)path0);
	run_until_resent(&g, &c);
	bool quiet = !timer_fired("chunk_overtaken_on_its_own_path_is_a_loss", &c);
	/* the first chunk is asked for, and nothing else */
	if (quiet)
		ck_assert_int_ge(take_resent(&g, 0, EFI_READ_CHUNK, false), 1);
	for (uint32_t k = 0; k < EFI_READ_CHUNK; k++)
		give_on_path(&g, k, (uint8_t)path0);
	rig_finish(&g, false);
	rig_close(&g);
	return quiet;
}

START_TEST(chunk_overtaken_on_its_own_path_is_a_loss)
{
	int runs = 0;

	while (!own_path_once())
		ck_assert_msg(++runs < RUNS_FOR_ONE_QUIET, "a timer in each of %d runs", RUNS_FOR_ONE_QUIET);
}
END_TEST

/* A QP that fails with responses placed early gives the bitmap back (ASan
 * sees a leak otherwise), and so does one destroyed while Reads wait. */
START_TEST(placed_then_destroyed)
{
	struct rig g;
	struct efi_qp_mem m;

	rig_open(&g, 1, 2, 40000);
	rig_collect(&g);
	for (uint32_t k = 1; k < g.npk; k++)
		give(&g, g.npk + k);
	pthread_mutex_unlock(&g.c0->lock);
	for (int i = 0; i < 50; i++)
		efi_poll_cq(g.t.cq[0], 0, NULL);
	efi_qp_mem(g.t.qp[0], &m);
	ck_assert_uint_gt(m.read_early, 0);
	pthread_mutex_lock(&g.c0->lock);
	efi_qp_to_error(g.q0);
	pthread_mutex_unlock(&g.c0->lock);
	efi_qp_mem(g.t.qp[0], &m);
	ck_assert_uint_eq(m.read_early, 0);
	rig_close(&g);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("read_reorder");
	TCase *tc = tcase_create("read_reorder");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, interleaved_reads_reordered);
	tcase_add_test(tc, lost_response_asked_for_alone);
	tcase_add_test(tc, second_gap_asked_after_first_filled);
	tcase_add_test(tc, duplicates_never_land);
	tcase_add_test(tc, malformed_early_not_placed);
	tcase_add_test(tc, chunk_overtaken_on_another_path);
	tcase_add_test(tc, chunk_overtaken_on_its_own_path_is_a_loss);
	tcase_add_test(tc, placed_then_destroyed);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	int failed;
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
