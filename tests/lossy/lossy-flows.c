/* SPDX-License-Identifier: MIT */
/*
 * lossy-test bulk, pingpong and retry: the flows the network-failure and
 * fairness tests run while a script breaks the network (see lossy.h).
 * Every completion is checked: any error status is a QP error and fails the
 * run at once, saying when and on which QP.  The server only serves (RDMA
 * Writes need nothing from it; ping-pong echoes) and fails on any error too.
 */
#include "config.h"

#include <arpa/inet.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lossy/lossy.h"

#define PINGPONG_END	0xffffffffu

/* The longest pauses between two completions, and when they began (the
 * longest is top[0]): scripts put them next to the moment they broke the
 * network, so that the pause the failure caused is told from noise. */
#define GAP_TOP 3
/* Every pause over GAP_NOTABLE s is kept too (up to GAP_KEEP of them), so
 * that a script can ask for the longest in any window of time: the one
 * around the moment it failed a path against the ones before it. */
#define GAP_NOTABLE 0.002
#define GAP_KEEP 512

struct gap {
	double last, max, at;
	double top[GAP_TOP], top_at[GAP_TOP];
	unsigned nkept;
	float kept[GAP_KEEP], kept_at[GAP_KEEP];
};

static void gap_add(struct gap *g, double len, double at)
{
	int i = GAP_TOP - 1;

	if (len > GAP_NOTABLE && g->nkept < GAP_KEEP) {
		g->kept[g->nkept] = (float)len;
		g->kept_at[g->nkept++] = (float)at;
	}
	if (len <= g->top[i])
		return;
	for (; i > 0 && g->top[i - 1] < len; i--) {
		g->top[i] = g->top[i - 1];
		g->top_at[i] = g->top_at[i - 1];
	}
	g->top[i] = len;
	g->top_at[i] = at;
	g->max = g->top[0];
	g->at = g->top_at[0];
}

static void gap_note(struct gap *g, double now, double t0)
{
	if (g->last > 0)
		gap_add(g, now - g->last, g->last - t0);
	g->last = now;
}

/* "LEN_MS@AT_S,…": the longest pauses */
static const char *gap_list(const struct gap *g, char *buf, size_t size)
{
	size_t n = 0;

	buf[0] = '\0';
	for (int i = 0; i < GAP_TOP && g->top[i] > 0 && n < size; i++)
		n += (size_t)snprintf(buf + n, size - n, "%s%.2f@%.2f", i ? "," : "", g->top[i] * 1e3,
				      g->top_at[i]);
	return buf[0] ? buf : "none";
}

/* "GAPS len_ms@at_s …": every pause over GAP_NOTABLE, in time order */
static void gap_print_kept(const struct gap *g)
{
	printf("GAPS");
	for (unsigned i = 0; i < g->nkept; i++)
		printf(" %.2f@%.3f", g->kept[i] * 1e3, g->kept_at[i]);
	printf("%s\n", g->nkept ? "" : " none");
}

static void check_gap_limit(const struct lossy_opts *o, const struct gap *g, const char *what)
{
	if (o->gap_limit_ms > 0)
		DP_CHECK(g->max * 1e3 <= o->gap_limit_ms, "%s: completions paused %.1f ms (at %.2f s), "
			 "the limit is %.1f ms", what, g->max * 1e3, g->at, o->gap_limit_ms);
}

/* ----------------------------------------------------------------- bulk */

struct flow {
	struct dp_conn c;
	uint64_t posted, completed, bytes_measured;
	struct gap gap;
};

static void flow_post(struct flow *f, const struct lossy_opts *o)
{
	int rc = dp_post(&f->c, EFI_WR_RDMA_WRITE, 0, o->size, 0, EFI_SEND_SIGNALED, f->posted);

	DP_CHECK(rc == 0, "QP %u: posting Write %" PRIu64 ": %s", f->c.qp->qp_num, f->posted,
		 strerror(rc));
	f->posted++;
}

static void bulk_client(struct dp_side *s, const struct lossy_opts *o, struct flow *fl, int n)
{
	double t0, now, end, m0, secs, sum = 0, sum2 = 0;
	struct gap all = { 0 };
	char list[128];
	struct efi_wc wc[16];
	bool draining = false;

	(void)s;
	lossy_started();
	t0 = now = dp_now();
	end = t0 + o->seconds;
	m0 = t0 + o->warmup;
	all.last = t0;
	for (;;) {
		uint64_t outstanding = 0;
		bool any = false;

		draining = draining || now >= end;
		for (int q = 0; q < n; q++) {
			struct flow *f = &fl[q];
			int k;

			while (!draining && f->posted - f->completed < o->window)
				flow_post(f, o);
			k = efi_poll_cq(f->c.scq, 16, wc);
			DP_CHECK(k >= 0, "efi_poll_cq: %d", k);
			now = dp_now();
			for (int i = 0; i < k; i++) {
				DP_CHECK(wc[i].status == EFI_WC_SUCCESS, "QP %d (%u): Write %" PRIu64
					 " completed with %s (QP error) at %.3f s, after %" PRIu64
					 " good ones", q, f->c.qp->qp_num, wc[i].wr_id,
					 efi_wc_status_str(wc[i].status), now - t0, f->completed);
				DP_CHECK(wc[i].wr_id == f->completed, "QP %d: completion of Write %" PRIu64
					 ", expected %" PRIu64 " (out of order)", q, wc[i].wr_id,
					 f->completed);
				f->completed++;
				if (now >= m0 && now < end)
					f->bytes_measured += o->size;
				gap_note(&f->gap, now, t0);
				gap_note(&all, now, t0);
			}
			any = any || k > 0;
			outstanding += f->posted - f->completed;
		}
		if (draining && !outstanding)
			break;
		DP_CHECK(now - all.last < o->dp.timeout, "no completion on any QP for %.0f s (at %.1f s)",
			 o->dp.timeout, now - t0);
		if (!any)
			sched_yield();
	}
	secs = end - m0;
	for (int q = 0; q < n; q++) {
		double x = (double)fl[q].bytes_measured * 8 / secs / 1e6;

		printf("FLOW qp=%d Mbps=%.1f writes=%" PRIu64 " max_gap_ms=%.2f max_gap_at_s=%.2f\n", q, x,
		       fl[q].completed, fl[q].gap.max * 1e3, fl[q].gap.at);
		sum += x;
		sum2 += x * x;
	}
	printf("RESULT mode=bulk qps=%d size=%u seconds=%.1f total_Mbps=%.1f jain=%.4f "
	       "max_gap_ms=%.2f max_gap_at_s=%.2f gaps_ms_at_s=%s\n", n, o->size, o->seconds, sum,
	       sum2 > 0 ? sum * sum / (n * sum2) : 0, all.max * 1e3, all.at,
	       gap_list(&all, list, sizeof(list)));
	fflush(stdout);
	for (int q = 0; q < n; q++)
		lossy_print_counters("requester", fl[q].c.qp);
	gap_print_kept(&all);
	check_gap_limit(o, &all, "bulk");
}

static void no_completions(struct dp_conn *c, const char *what)
{
	struct efi_wc wc;
	int k = efi_poll_cq(c->scq, 1, &wc);

	if (!k)
		k = efi_poll_cq(c->rcq, 1, &wc);
	DP_CHECK(k == 0, "%s: unexpected completion on the server (status %s, wr_id %" PRIu64 ")",
		 what, efi_wc_status_str(wc.status), wc.wr_id);
}

/* On a failure of either side: how each QP's transport stood, and the
 * context's drops no QP owns (what the other side's failure looked like
 * from here matters as much as its own message). */
static struct flow *fail_fl;
static int fail_n;

static void bulk_fail_hook(void)
{
	for (int q = 0; q < fail_n; q++)
		lossy_print_counters("at-failure", fail_fl[q].c.qp);
	if (fail_n)
		lossy_print_context_counters("at-failure", fail_fl[0].c.qp->context);
}

void lossy_bulk(struct dp_side *s, const struct lossy_opts *o)
{
	struct dp_qp_cfg cfg = lossy_qp_cfg(o, o->window, o->size > 64 ? o->size : 64);
	struct flow *fl = calloc((size_t)o->qps, sizeof(*fl));
	struct dp_conn *conns = calloc((size_t)o->qps, sizeof(*conns));

	DP_CHECK(fl && conns, "out of memory");
	dp_setup(s, conns, o->qps, &cfg);
	for (int q = 0; q < o->qps; q++)
		fl[q].c = conns[q];
	fail_fl = fl;
	fail_n = o->qps;
	dp_fail_hook = bulk_fail_hook;
	if (s->opts->server) {
		dp_sync(s, "bulk done");
		for (int q = 0; q < o->qps; q++) {
			no_completions(&fl[q].c, "bulk");
			lossy_print_counters("responder", fl[q].c.qp);
		}
	} else {
		bulk_client(s, o, fl, o->qps);
		dp_sync(s, "bulk done");
	}
	dp_fail_hook = NULL;
	fail_n = 0;
	for (int q = 0; q < o->qps; q++)
		dp_conn_destroy(&fl[q].c);
	free(fl);
	free(conns);
}

/* ------------------------------------------------------------- pingpong */

/* Buffer: 8 receive slots of size bytes, then the send area. */
#define PP_RECVS 8

static void pp_post_recv(struct dp_conn *c, uint32_t size, uint64_t slot)
{
	dp_post_recv(c, slot * size, size, slot);
}

static int pp_send(struct dp_conn *c, uint32_t size, uint32_t imm)
{
	struct efi_sge sge = { .addr = (uintptr_t)(c->buf + PP_RECVS * (size_t)size), .length = size,
			       .lkey = c->mr->lkey };
	struct efi_send_wr wr = { .wr_id = imm, .sg_list = &sge, .num_sge = size ? 1 : 0,
				  .opcode = EFI_WR_SEND_WITH_IMM, .send_flags = EFI_SEND_SIGNALED,
				  .imm_data = htonl(imm) }, *bad = NULL;

	return efi_post_send(c->qp, &wr, &bad);
}

/* Takes the send completions there are; fails on an error. */
static uint64_t pp_reap_sends(struct dp_conn *c)
{
	struct efi_wc wc[16];
	int k = efi_poll_cq(c->scq, 16, wc);

	DP_CHECK(k >= 0, "efi_poll_cq: %d", k);
	for (int i = 0; i < k; i++)
		DP_CHECK(wc[i].status == EFI_WC_SUCCESS, "Send %" PRIu64 " completed with %s (QP error)",
			 wc[i].wr_id, efi_wc_status_str(wc[i].status));
	return (uint64_t)k;
}

static void pp_check_recv(const struct efi_wc *wc, uint32_t size, uint32_t want)
{
	DP_CHECK(wc->status == EFI_WC_SUCCESS, "receive %u completed with %s (QP error)", want,
		 efi_wc_status_str(wc->status));
	DP_CHECK(wc->opcode == EFI_WC_RECV && (wc->wc_flags & EFI_WC_WITH_IMM) &&
		 wc->byte_len == size, "receive %u: opcode %d, flags %#x, %u bytes", want, wc->opcode,
		 wc->wc_flags, wc->byte_len);
	DP_CHECK(ntohl(wc->imm_data) == want, "received message %u, expected %u (lost, duplicated or "
		 "out of order)", ntohl(wc->imm_data), want);
}

/* The QP failed (a receive was flushed): say why, from the send side's
 * first error, and how its paths stood. */
static void pp_explain(struct dp_conn *c)
{
	struct efi_wc wc[16];
	int k;

	while ((k = efi_poll_cq(c->scq, 16, wc)) > 0)
		for (int i = 0; i < k; i++)
			if (wc[i].status != EFI_WC_SUCCESS) {
				printf("FIRST-ERROR send %" PRIu64 ": %s\n", wc[i].wr_id,
				       efi_wc_status_str(wc[i].status));
				k = -1;
				break;
			}
	lossy_print_counters("failed", c->qp);
}

static void pingpong_server(const struct lossy_opts *o, struct dp_conn *c)
{
	uint64_t sent = 0, done = 0;
	struct efi_wc wc;

	for (uint32_t iter = 0;; iter++) {
		dp_wait_wc(c->rcq, &wc, "a ping");
		if (wc.status == EFI_WC_SUCCESS && ntohl(wc.imm_data) == PINGPONG_END) {
			DP_CHECK(wc.opcode == EFI_WC_RECV, "end of ping-pong: opcode %d", wc.opcode);
			break;
		}
		pp_check_recv(&wc, o->size, iter);
		pp_post_recv(c, o->size, wc.wr_id);
		while (sent - done >= 8)
			done += pp_reap_sends(c);
		DP_CHECK_RC(pp_send(c, o->size, iter));
		sent++;
		done += pp_reap_sends(c);
	}
	while (done < sent) {
		dp_wait_wc(c->scq, &wc, "the last pong's completion");
		DP_CHECK(wc.status == EFI_WC_SUCCESS, "Send %" PRIu64 " completed with %s (QP error)",
			 wc.wr_id, efi_wc_status_str(wc.status));
		done++;
	}
}

static void pingpong_client(const struct lossy_opts *o, struct dp_conn *c)
{
	size_t cap = 1 << 16, n = 0;
	double *rtt = malloc(cap * sizeof(*rtt)), t0, end, t, p50, p99, p999;
	uint64_t sent = 0, done = 0;
	struct gap g = { 0 };
	struct efi_wc wc;
	char list[128];
	uint32_t iter;

	DP_CHECK(rtt, "out of memory");
	lossy_started();
	t0 = dp_now();
	end = t0 + o->seconds;
	for (iter = 0; dp_now() < end; iter++) {
		while (sent - done >= 8)
			done += pp_reap_sends(c);
		t = dp_now();
		DP_CHECK_RC(pp_send(c, o->size, iter));
		sent++;
		dp_wait_wc(c->rcq, &wc, "a pong");
		if (wc.status != EFI_WC_SUCCESS)
			pp_explain(c);
		pp_check_recv(&wc, o->size, iter);
		pp_post_recv(c, o->size, wc.wr_id);
		t = dp_now() - t;
		gap_add(&g, t, dp_now() - t - t0);
		if (n == cap) {
			cap *= 2;
			rtt = realloc(rtt, cap * sizeof(*rtt));
			DP_CHECK(rtt, "out of memory");
		}
		rtt[n++] = t * 1e6;
		done += pp_reap_sends(c);
	}
	while (sent - done >= 8)
		done += pp_reap_sends(c);
	DP_CHECK_RC(pp_send(c, 0, PINGPONG_END));
	sent++;
	while (done < sent) {
		dp_wait_wc(c->scq, &wc, "the last ping's completion");
		DP_CHECK(wc.status == EFI_WC_SUCCESS, "Send %" PRIu64 " completed with %s (QP error)",
			 wc.wr_id, efi_wc_status_str(wc.status));
		done++;
	}
	p50 = lossy_quantile(rtt, n, 0.5);
	p99 = lossy_quantile(rtt, n, 0.99);
	p999 = lossy_quantile(rtt, n, 0.999);
	printf("RESULT mode=pingpong size=%u iterations=%zu p50_us=%.1f p99_us=%.1f p999_us=%.1f "
	       "max_ms=%.2f max_at_s=%.2f rtts_ms_at_s=%s\n", o->size, n, p50, p99, p999, g.max * 1e3,
	       g.at, gap_list(&g, list, sizeof(list)));
	fflush(stdout);
	free(rtt);
	gap_print_kept(&g);
	check_gap_limit(o, &g, "ping-pong");
}

void lossy_pingpong(struct dp_side *s, const struct lossy_opts *o)
{
	struct dp_qp_cfg cfg = lossy_qp_cfg(o, 16, (PP_RECVS + 1) * (size_t)o->size + 64);
	struct dp_conn c;

	dp_setup(s, &c, 1, &cfg);
	for (uint64_t i = 0; i < PP_RECVS; i++)
		pp_post_recv(&c, o->size, i);
	dp_sync(s, "receives posted");
	if (s->opts->server)
		pingpong_server(o, &c);
	else
		pingpong_client(o, &c);
	lossy_print_counters(s->opts->server ? "server" : "client", c.qp);
	dp_sync(s, "pingpong done");
	dp_conn_destroy(&c);
}

/* ---------------------------------------------------------------- retry */

static void retry_client(const struct lossy_opts *o, struct flow *f)
{
	double t0, now, last_ok = 0, nominal_ms;
	struct efi_qp_attr qa;
	struct efi_qp_init_attr qia;
	struct efi_wc wc;
	bool started = false;
	uint64_t flushed = 0;
	int rc;

	t0 = dp_now();
	for (;;) {
		while (f->posted - f->completed < o->window)
			flow_post(f, o);
		rc = efi_poll_cq(f->c.scq, 1, &wc);
		DP_CHECK(rc >= 0, "efi_poll_cq: %d", rc);
		now = dp_now();
		DP_CHECK(now - t0 < o->seconds, "no RETRY_EXC_ERR within %.0f s (last success %.2f s "
			 "ago): the QP hangs", o->seconds, last_ok > 0 ? now - last_ok : now - t0);
		if (!rc) {
			sched_yield();
			continue;
		}
		DP_CHECK(wc.wr_id == f->completed, "completion of Write %" PRIu64 ", expected %" PRIu64,
			 wc.wr_id, f->completed);
		f->completed++;
		if (wc.status != EFI_WC_SUCCESS)
			break;
		last_ok = now;
		if (!started && f->completed >= 2 * o->window) {
			started = true;
			lossy_started();
		}
	}
	DP_CHECK(started, "the QP failed (%s) before traffic was running",
		 efi_wc_status_str(wc.status));
	DP_CHECK(wc.status == EFI_WC_RETRY_EXC_ERR, "the first error is %s (%d), expected %s",
		 efi_wc_status_str(wc.status), wc.status, efi_wc_status_str(EFI_WC_RETRY_EXC_ERR));
	nominal_ms = 4.096e-3 * (double)(1u << o->qp_timeout) * (o->retry_cnt + 1);
	printf("RESULT mode=retry error_after_last_success_ms=%.1f nominal_ms=%.1f at_s=%.2f\n",
	       (now - last_ok) * 1e3, nominal_ms, now - t0);
	fflush(stdout);
	/* the rest of the send queue is flushed, in order */
	while (f->completed < f->posted) {
		dp_wait_wc(f->c.scq, &wc, "the flush of the send queue");
		DP_CHECK(wc.wr_id == f->completed, "flushed Write %" PRIu64 ", expected %" PRIu64,
			 wc.wr_id, f->completed);
		DP_CHECK(wc.status == EFI_WC_WR_FLUSH_ERR, "Write %" PRIu64 " after the error: %s, "
			 "expected %s", wc.wr_id, efi_wc_status_str(wc.status),
			 efi_wc_status_str(EFI_WC_WR_FLUSH_ERR));
		f->completed++;
		flushed++;
	}
	DP_CHECK_RC(efi_query_qp(f->c.qp, &qa, EFI_QP_STATE, &qia));
	DP_CHECK(qa.qp_state == EFI_QPS_ERR, "QP state %d after RETRY_EXC_ERR, expected ERR",
		 qa.qp_state);
	/* in ERR, new work is accepted and flushed */
	flow_post(f, o);
	dp_wait_wc(f->c.scq, &wc, "a Write posted in ERR");
	DP_CHECK(wc.status == EFI_WC_WR_FLUSH_ERR, "a Write posted in ERR: %s, expected %s",
		 efi_wc_status_str(wc.status), efi_wc_status_str(EFI_WC_WR_FLUSH_ERR));
	dp_log("RETRY_EXC_ERR, then %" PRIu64 " flushed, QP in ERR, new work flushed", flushed);
	lossy_print_counters("requester", f->c.qp);
}

void lossy_retry(struct dp_side *s, const struct lossy_opts *o)
{
	struct dp_qp_cfg cfg = lossy_qp_cfg(o, o->window, o->size > 64 ? o->size : 64);
	struct flow f = { 0 };

	dp_setup(s, &f.c, 1, &cfg);
	if (s->opts->server) {
		/* the peer's QP dies; this one just waits (a verbs responder
		 * has no timer: it stays in RTS) */
		dp_sync(s, "retry done");
		no_completions(&f.c, "retry");
	} else {
		retry_client(o, &f);
		dp_sync(s, "retry done");
	}
	dp_conn_destroy(&f.c);
}
