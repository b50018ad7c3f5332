/* SPDX-License-Identifier: MIT */
/*
 * Both directions of one RC pair at once, as ofi_rxm drives them under
 * Open MPI (issue 20): each side is a requester and a responder at the same
 * time, with Sends into posted receives (rnr_retry 7, receives reposted as
 * they complete, so RNR happens), Writes with and without immediate, Reads
 * of the peer's memory and fetch-and-adds, several of them in flight, over
 * four lanes of an in-memory wire that loses, duplicates and reorders, and
 * with the application now and then not polling for a while (a rank
 * computing or descheduled: completions pile up, receives are not
 * reposted).  The lossy integrity suite drives one direction only.
 *
 * What must hold, or the test fails:
 *  - no hang: every work request completes, and every message arrives,
 *    within a bound (a stall prints both QPs' counters);
 *  - no error completion, nothing lost, duplicated or reordered: the
 *    visible messages (Sends and Writes with immediate) arrive in the order
 *    posted, each Send byte-exact, each Read byte-exact;
 *  - each fetch-and-add executes once: the values returned on one side are
 *    0 … n-1, each once, and the peer's word ends at n.
 */
#include <check.h>
#include <arpa/inet.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "efi_testutil.h"
#include "libefi/efi_int.h"

#define INFLIGHT	32u		/* send WRs in flight per side */
#define NRECV		64u		/* receive buffers per side (at most posted) */
#define SLOT		(64u * 1024)	/* one receive buffer / Read destination */
#define REGION		(1u << 20)	/* memory the peer Reads and Writes */

struct side {
	int id;
	struct efi_qp *qp;
	struct efi_cq *cq;
	uint8_t *src;		/* pattern: what the peer Reads, what we send from */
	uint8_t *scratch;	/* the peer Writes here */
	uint8_t *recvbuf;	/* NRECV slots */
	uint8_t *readbuf;	/* INFLIGHT slots */
	uint64_t *faa_word;	/* the peer adds here */
	uint64_t *faa_res;	/* INFLIGHT results */
	struct efi_mr *mr_src, *mr_scratch, *mr_recv, *mr_read, *mr_word, *mr_res;
	/* send side */
	uint64_t posted, completed, vis_posted, faas;
	uint8_t *faa_seen;	/* which fetch-and-add results came back */
	struct {
		enum efi_wr_opcode op;
		uint32_t len, roff;
	} fl[INFLIGHT];
	/* receive side */
	uint64_t vis_received;
	uint64_t last_progress_ms;
};

static uint64_t ms_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static uint32_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return (uint32_t)(*s >> 16);
}

/* The byte at offset i of visible message seq from side id. */
static uint8_t msg_byte(int id, uint64_t seq, uint32_t i)
{
	uint32_t x = (uint32_t)(seq * 2654435761u) ^ (uint32_t)id * 0x9e3779b9u ^ i * 40503u;
	return (uint8_t)(x ^ (x >> 11) ^ (x >> 23));
}

static uint32_t msg_len(uint64_t *rs)
{
	uint32_t r = rnd(rs) % 100;
	if (r < 60)
		return 8 + rnd(rs) % 1024;
	if (r < 90)
		return 8 + rnd(rs) % 16384;
	return 8 + rnd(rs) % (SLOT - 8);
}

static void side_init(struct side *s, struct tpair *t, int id, uint32_t nrecv)
{
	memset(s, 0, sizeof(*s));
	s->id = id;
	s->qp = t->qp[id];
	s->cq = t->cq[id];
	ck_assert_ptr_nonnull(s->src = malloc(REGION));
	ck_assert_ptr_nonnull(s->scratch = calloc(1, REGION));
	ck_assert_ptr_nonnull(s->recvbuf = calloc(NRECV, SLOT));
	ck_assert_ptr_nonnull(s->readbuf = calloc(INFLIGHT, SLOT));
	ck_assert_ptr_nonnull(s->faa_word = calloc(1, 8));
	ck_assert_ptr_nonnull(s->faa_res = calloc(INFLIGHT, 8));
	for (uint32_t i = 0; i < REGION; i++)
		s->src[i] = (uint8_t)(i * 131u + (unsigned)id * 7u);
	int rw = EFI_ACCESS_LOCAL_WRITE | EFI_ACCESS_REMOTE_WRITE | EFI_ACCESS_REMOTE_READ;
	s->mr_src = treg(t->pd[id], s->src, REGION, rw);
	s->mr_scratch = treg(t->pd[id], s->scratch, REGION, rw);
	s->mr_recv = treg(t->pd[id], s->recvbuf, (size_t)NRECV * SLOT, EFI_ACCESS_LOCAL_WRITE);
	s->mr_read = treg(t->pd[id], s->readbuf, (size_t)INFLIGHT * SLOT, EFI_ACCESS_LOCAL_WRITE);
	s->mr_word = treg(t->pd[id], s->faa_word, 8, EFI_ACCESS_LOCAL_WRITE | EFI_ACCESS_REMOTE_ATOMIC);
	s->mr_res = treg(t->pd[id], s->faa_res, (size_t)INFLIGHT * 8, EFI_ACCESS_LOCAL_WRITE);
	for (uint32_t k = 0; k < nrecv; k++)
		tpost_recv1(s->qp, k, s->recvbuf + (size_t)k * SLOT, SLOT, s->mr_recv);
}

static void side_free(struct side *s)
{
	efi_dereg_mr(s->mr_src);
	efi_dereg_mr(s->mr_scratch);
	efi_dereg_mr(s->mr_recv);
	efi_dereg_mr(s->mr_read);
	efi_dereg_mr(s->mr_word);
	efi_dereg_mr(s->mr_res);
	free(s->src);
	free(s->scratch);
	free(s->recvbuf);
	free(s->readbuf);
	free(s->faa_word);
	free(s->faa_res);
	free(s->faa_seen);
}

/* Posts the next work request of s (to peer p) into slot k: a random op. */
static void post_next(struct side *s, const struct side *p, uint64_t *rs)
{
	uint32_t k = (uint32_t)(s->posted % INFLIGHT);
	uint32_t r = rnd(rs) % 100, len = msg_len(rs);
	struct efi_sge sge;
	struct efi_send_wr wr, *bad;
	uint8_t *sendbuf = s->readbuf + (size_t)k * SLOT;	/* free: slot k's WR completed */

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = s->posted;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.send_flags = EFI_SEND_SIGNALED;
	if (r < 35) {			/* Send, byte-exact at the peer */
		wr.opcode = EFI_WR_SEND;
		for (uint32_t i = 0; i < len; i++)
			sendbuf[i] = msg_byte(s->id, s->vis_posted, i);
		memcpy(sendbuf, &s->vis_posted, 8);
		s->vis_posted++;
		sge = (struct efi_sge){ (uintptr_t)sendbuf, len, s->mr_read->lkey };
	} else if (r < 45) {		/* Write with immediate: its order */
		wr.opcode = EFI_WR_RDMA_WRITE_WITH_IMM;
		wr.imm_data = htonl((uint32_t)s->vis_posted++);
		sge = (struct efi_sge){ (uintptr_t)s->src, len, s->mr_src->lkey };
		wr.wr.rdma.remote_addr = (uintptr_t)p->scratch + rnd(rs) % (REGION - len);
		wr.wr.rdma.rkey = p->mr_scratch->rkey;
	} else if (r < 65) {		/* Write */
		wr.opcode = EFI_WR_RDMA_WRITE;
		sge = (struct efi_sge){ (uintptr_t)s->src + rnd(rs) % (REGION - len), len, s->mr_src->lkey };
		wr.wr.rdma.remote_addr = (uintptr_t)p->scratch + rnd(rs) % (REGION - len);
		wr.wr.rdma.rkey = p->mr_scratch->rkey;
	} else if (r < 92) {		/* Read of the peer's pattern */
		s->fl[k].roff = rnd(rs) % (REGION - len);
		wr.opcode = EFI_WR_RDMA_READ;
		memset(sendbuf, 0, len);
		sge = (struct efi_sge){ (uintptr_t)sendbuf, len, s->mr_read->lkey };
		wr.wr.rdma.remote_addr = (uintptr_t)p->src + s->fl[k].roff;
		wr.wr.rdma.rkey = p->mr_src->rkey;
	} else {			/* fetch-and-add 1 on the peer's word */
		len = 8;
		wr.opcode = EFI_WR_ATOMIC_FETCH_AND_ADD;
		s->faa_res[k] = UINT64_MAX;
		sge = (struct efi_sge){ (uintptr_t)&s->faa_res[k], 8, s->mr_res->lkey };
		wr.wr.atomic.remote_addr = (uintptr_t)p->faa_word;
		wr.wr.atomic.compare_add = 1;
		wr.wr.atomic.rkey = p->mr_word->rkey;
		s->faas++;
	}
	s->fl[k].op = wr.opcode;
	s->fl[k].len = len;
	ck_assert_int_eq(efi_post_send(s->qp, &wr, &bad), 0);
	s->posted++;
}

static void dump(const char *why, struct side *sd)
{
	for (int i = 0; i < 2; i++) {
		struct efi_counters c;
		efi_query_qp_counters(sd[i].qp, &c);
		fprintf(stderr,
			"%s: side %d posted %" PRIu64 " completed %" PRIu64 " visible sent %" PRIu64
			" received %" PRIu64 "; tx %llu rx %llu retx %llu timeouts %llu rnr naks sent %llu"
			" received %llu dups %llu\n",
			why, i, sd[i].posted, sd[i].completed, sd[i].vis_posted, sd[i].vis_received,
			(unsigned long long)c.tx_packets, (unsigned long long)c.rx_packets,
			(unsigned long long)c.retransmissions, (unsigned long long)c.timeouts,
			(unsigned long long)c.rnr_naks_sent, (unsigned long long)c.rnr_naks_received,
			(unsigned long long)c.duplicates);
		for (unsigned d = 0; d < EFI_DROP_REASON_COUNT; d++)
			if (c.drop_reasons[d])
				fprintf(stderr, "  side %d drop %s: %llu\n", i, efi_drop_reason_str(d),
					(unsigned long long)c.drop_reasons[d]);
	}
}

/* One completion of side s (peer p). */
static void handle(struct side *s, const struct side *p, const struct efi_wc *wc, struct side *sd)
{
	if (wc->status != EFI_WC_SUCCESS) {
		dump("error completion", sd);
		ck_abort_msg("side %d: wr_id %" PRIu64 " opcode %d completed with %s", s->id, wc->wr_id,
			     wc->opcode, efi_wc_status_str(wc->status));
	}
	if (wc->opcode & EFI_WC_RECV) {
		uint32_t k = (uint32_t)wc->wr_id;
		uint8_t *b = s->recvbuf + (size_t)k * SLOT;
		uint64_t seq;

		ck_assert_uint_lt(k, NRECV);
		if (wc->opcode == EFI_WC_RECV_RDMA_WITH_IMM) {
			ck_assert(wc->wc_flags & EFI_WC_WITH_IMM);
			seq = ntohl(wc->imm_data);
			ck_assert_msg(seq == (uint32_t)s->vis_received,
				      "side %d: Write+Imm %" PRIu64 " arrived, expected %" PRIu64, s->id, seq,
				      s->vis_received);
		} else {
			ck_assert_int_eq(wc->opcode, EFI_WC_RECV);
			ck_assert_uint_ge(wc->byte_len, 8);
			memcpy(&seq, b, 8);
			ck_assert_msg(seq == s->vis_received, "side %d: Send %" PRIu64 " arrived, expected %" PRIu64,
				      s->id, seq, s->vis_received);
			for (uint32_t i = 8; i < wc->byte_len; i++)
				if (b[i] != msg_byte(p->id, seq, i))
					ck_abort_msg("side %d: Send %" PRIu64 " byte %u of %u is %02x, not %02x", s->id,
						     seq, i, wc->byte_len, b[i], msg_byte(p->id, seq, i));
		}
		s->vis_received++;
		tpost_recv1(s->qp, k, b, SLOT, s->mr_recv);
		return;
	}
	/* send side: in posting order */
	ck_assert_msg(wc->wr_id == s->completed, "side %d: completion of WR %" PRIu64 ", expected %" PRIu64,
		      s->id, wc->wr_id, s->completed);
	uint32_t k = (uint32_t)(wc->wr_id % INFLIGHT);
	if (s->fl[k].op == EFI_WR_RDMA_READ) {
		const uint8_t *got = s->readbuf + (size_t)k * SLOT, *want = p->src + s->fl[k].roff;
		if (memcmp(got, want, s->fl[k].len)) {
			uint32_t i = 0;
			while (got[i] == want[i])
				i++;
			ck_abort_msg("side %d: Read %" PRIu64 " of %u bytes wrong from byte %u", s->id, wc->wr_id,
				     s->fl[k].len, i);
		}
	} else if (s->fl[k].op == EFI_WR_ATOMIC_FETCH_AND_ADD) {
		uint64_t v = s->faa_res[k];
		ck_assert_msg(v < s->faas, "side %d: fetch-and-add returned %" PRIu64 " after %" PRIu64, s->id, v,
			      s->faas);
		ck_assert_msg(!s->faa_seen[v], "side %d: fetch-and-add value %" PRIu64 " returned twice", s->id, v);
		s->faa_seen[v] = 1;
	}
	s->completed++;
}

/* nops WRs per side, nrecv receives posted per side (few: RNR NAKs);
 * every 200 rounds the application skips polling for up to stall_ms
 * (0: never). */
static void run_bidir(const struct tw_fault *fault, uint64_t nops, uint32_t nrecv, unsigned stall_ms, uint64_t seed)
{
	struct tpair t;
	struct side sd[2];
	struct efi_qp_cap cap = { .max_send_wr = 256, .max_recv_wr = NRECV, .max_send_sge = 1,
				  .max_recv_sge = 1, .max_inline_data = 64 };
	uint64_t rs = seed | 1, start = ms_now(), last = start;
	unsigned iter = 0;

	tpair_open_lanes(&t, 1500, fault, 4);
	/* rnr_retry 7 (for ever) and retry 7, timeout 14: what the CM gives
	 * the QPs under the libfabric provider */
	tpair_connect(&t, &cap, 0, 7, 1, 14, 7);
	for (int i = 0; i < 2; i++) {
		side_init(&sd[i], &t, i, nrecv);
		ck_assert_ptr_nonnull(sd[i].faa_seen = calloc(nops + 1, 1));
	}
	while (sd[0].completed < nops || sd[1].completed < nops || sd[0].vis_received < sd[1].vis_posted ||
	       sd[1].vis_received < sd[0].vis_posted) {
		bool progress = false;

		for (int i = 0; i < 2; i++) {
			struct side *s = &sd[i], *p = &sd[!i];
			struct efi_wc wc[16];
			int n = efi_poll_cq(s->cq, 16, wc);

			ck_assert_int_ge(n, 0);
			for (int j = 0; j < n; j++)
				handle(s, p, &wc[j], sd);
			progress |= n > 0;
			while (s->posted < nops && s->posted - s->completed < INFLIGHT)
				post_next(s, p, &rs);
		}
		if (progress)
			last = ms_now();
		else if (ms_now() - last > 30000) {
			dump("stalled", sd);
			ck_abort_msg("no completion for 30 s: a hang");
		}
		if (stall_ms && ++iter % 200 == 0)
			usleep(1000u * (1 + rnd(&rs) % stall_ms));
	}
	for (int i = 0; i < 2; i++) {
		ck_assert_uint_eq(*sd[!i].faa_word, sd[i].faas);
		for (uint64_t v = 0; v < sd[i].faas; v++)
			ck_assert_msg(sd[i].faa_seen[v], "side %d: fetch-and-add value %" PRIu64 " never returned", i,
				      v);
	}
	fprintf(stderr, "bidir loss %.3f dup %.3f reorder %.3f, %u receives, stalls %u ms: %" PRIu64
		" WRs a side in %.1f s\n", fault ? fault->loss : 0, fault ? fault->dup : 0,
		fault ? fault->reorder : 0, nrecv, stall_ms, nops,
		(double)(ms_now() - start) / 1000);
	dump("done", sd);
	for (int i = 0; i < 2; i++)
		side_free(&sd[i]);
	tpair_close(&t);
}

START_TEST(bidir_clean)
{
	run_bidir(NULL, 20000, NRECV, 0, 11);
}
END_TEST

START_TEST(bidir_faults)
{
	struct tw_fault f = { .loss = 0.01, .dup = 0.01, .reorder = 0.05, .seed = 5 };
	run_bidir(&f, 20000, NRECV, 0, 12);
}
END_TEST

/* The application stops polling for up to 20 ms now and then, with few
 * receives posted: they run out (RNR NAKs, retried for ever), completions
 * pile up. */
START_TEST(bidir_faults_app_stalls)
{
	struct tw_fault f = { .loss = 0.02, .dup = 0.01, .reorder = 0.05, .seed = 6 };
	run_bidir(&f, 10000, 4, 20, 13);
}
END_TEST

START_TEST(bidir_heavy_loss)
{
	struct tw_fault f = { .loss = 0.05, .dup = 0.02, .reorder = 0.1, .seed = 7 };
	run_bidir(&f, 5000, 8, 5, 14);
}
END_TEST

/* Causal order, what ofi_rxm's Write rendezvous relies on: side 1
 * answers each message of side 0 only once it has received it, so when
 * side 0 sees the answer, its own message's send completion must already
 * have been on its CQ (the answer's causal ACK completes it first).  Over
 * a wire that loses ACKs, and with none: the held ACK used to go behind
 * the answer, which put the answer's receive completion first. */
static void run_causal(const struct tw_fault *fault, unsigned rounds, bool piggyback)
{
	struct tpair t;
	struct efi_qp_cap cap = { .max_send_wr = 64, .max_recv_wr = 64, .max_send_sge = 1,
				  .max_recv_sge = 1, .max_inline_data = 64 };
	uint8_t buf[2][2][64];
	struct efi_mr *mr[2];

	tpair_open_lanes(&t, 1500, fault, 4);
	for (int i = 0; i < 2; i++)	/* as EFI_ACK_PIGGYBACK=1: held ACKs ride too */
		((struct efi_context_int *)t.ctx[i])->pack = piggyback;
	tpair_connect(&t, &cap, 0, 7, 1, 14, 7);
	for (int i = 0; i < 2; i++) {
		mr[i] = treg(t.pd[i], buf[i], sizeof(buf[i]), EFI_ACCESS_LOCAL_WRITE);
		tpost_recv1(t.qp[i], 0, buf[i][1], 64, mr[i]);
	}
	/* A QP learns from the peer's first ACK that the peer reads PACKs;
	 * until then its messages carry no causal ACK.  (Under ofi_rxm the
	 * wr_done that needs one follows Writes whose ACKs it waited for.)
	 * One message each way first, each completed. */
	for (int i = 0; i < 2; i++) {
		struct efi_wc wc;

		ck_assert_int_eq(tpost_send1(t.qp[i], EFI_WR_SEND, 1000000, buf[i][0], 16, mr[i], 0, 0), 0);
		for (int got = 0; got < 2;) {
			int k = got ? i : !i;	/* the peer's receive, then our send */
			ck_assert_msg(tpoll(t.cq[k], &wc, 1, 20000) == 1, "warm-up %d: nothing", i);
			ck_assert_int_eq(wc.status, EFI_WC_SUCCESS);
			ck_assert_int_eq(!!(wc.opcode & EFI_WC_RECV), k != i);
			if (k != i)
				tpost_recv1(t.qp[k], 0, buf[k][1], 64, mr[k]);
			got++;
		}
	}
	for (unsigned r = 0; r < rounds; r++) {
		struct efi_wc wc;
		bool sent = false, answered = false;
		uint64_t end = ms_now() + 20000;

		ck_assert_int_eq(tpost_send1(t.qp[0], EFI_WR_SEND, r, buf[0][0], 16, mr[0], 0, 0), 0);
		/* side 1: the message, then the answer */
		ck_assert_msg(tpoll(t.cq[1], &wc, 1, 20000) == 1, "round %u: side 1 got nothing", r);
		ck_assert_int_eq(wc.status, EFI_WC_SUCCESS);
		ck_assert_int_eq(wc.opcode, EFI_WC_RECV);
		tpost_recv1(t.qp[1], 0, buf[1][1], 64, mr[1]);
		ck_assert_int_eq(tpost_send1(t.qp[1], EFI_WR_SEND, r, buf[1][0], 16, mr[1], 0, 0), 0);
		/* side 0: the send completion first, then the answer */
		while (!(sent && answered)) {
			ck_assert_msg(ms_now() < end, "round %u: side 0 stuck (sent %d answered %d)", r, sent,
				      answered);
			if (efi_poll_cq(t.cq[0], 1, &wc) != 1)
				continue;
			ck_assert_int_eq(wc.status, EFI_WC_SUCCESS);
			if (wc.opcode & EFI_WC_RECV) {
				ck_assert_msg(sent, "round %u: the answer came before the send completion of "
						    "what it answers", r);
				answered = true;
				tpost_recv1(t.qp[0], 0, buf[0][1], 64, mr[0]);
			} else {
				sent = true;
			}
		}
		/* side 1's own send completion, whenever it comes */
		ck_assert_msg(tpoll(t.cq[1], &wc, 1, 20000) == 1, "round %u: side 1's send never completed", r);
		ck_assert_int_eq(wc.status, EFI_WC_SUCCESS);
	}
	for (int i = 0; i < 2; i++)
		efi_dereg_mr(mr[i]);
	tpair_close(&t);
}

START_TEST(causal_order_clean)
{
	run_causal(NULL, 300, false);
}
END_TEST

START_TEST(causal_order_lossy)
{
	struct tw_fault f = { .loss = 0.1, .dup = 0.02, .reorder = 0.1, .seed = 9 };
	run_causal(&f, 200, false);
}
END_TEST

START_TEST(causal_order_piggyback)
{
	run_causal(NULL, 300, true);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("bidir");
	TCase *tc = tcase_create("bidir");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, bidir_clean);
	tcase_add_test(tc, bidir_faults);
	tcase_add_test(tc, bidir_faults_app_stalls);
	tcase_add_test(tc, bidir_heavy_loss);
	tcase_add_test(tc, causal_order_clean);
	tcase_add_test(tc, causal_order_lossy);
	tcase_add_test(tc, causal_order_piggyback);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
