/* SPDX-License-Identifier: MIT */
/*
 * Cases: atomics from 8 threads on one counter, byte-exact data under
 * injected loss, 8 threads × 8 QPs, and the post/poll loop whose system
 * calls t-dp-syscalls.sh counts.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/data/dp.h"

#define NTHREADS	8
#define FAA_PER_THREAD	500
#define CAS_PER_THREAD	100
#define FAA_WINDOW	8

struct atomic_worker {
	struct dp_conn *c;
	uint64_t *originals;	/* FAA_PER_THREAD + CAS_PER_THREAD */
	size_t n;
	uint64_t cas_misses;
};

static void *atomic_worker(void *arg)
{
	struct atomic_worker *w = arg;
	struct dp_conn *c = w->c;
	uint64_t *slots = (uint64_t *)c->buf;
	uint64_t posted = 0, done = 0, guess = 0;
	struct efi_wc wc;

	/* FAA +1, FAA_WINDOW in flight, each into its own result slot */
	while (done < FAA_PER_THREAD) {
		while (posted < FAA_PER_THREAD && posted - done < FAA_WINDOW) {
			DP_CHECK_RC(dp_post_atomic(c, EFI_WR_ATOMIC_FETCH_AND_ADD, posted * 8, 0, 1, 0,
						   EFI_SEND_SIGNALED, posted));
			posted++;
		}
		dp_wait_ok(c->scq, &wc, EFI_WC_FETCH_ADD, "FAA");
		DP_CHECK(wc.wr_id == done, "FAA completions out of order: %" PRIu64 " before %" PRIu64,
			 wc.wr_id, done);
		w->originals[w->n++] = slots[wc.wr_id];
		done++;
	}
	/* CAS increments: guess, learn the real value from a miss, retry */
	for (int i = 0; i < CAS_PER_THREAD;) {
		uint64_t *res = &slots[FAA_PER_THREAD];

		DP_CHECK_RC(dp_post_atomic(c, EFI_WR_ATOMIC_CMP_AND_SWP, FAA_PER_THREAD * 8, 0, guess, guess + 1,
					   EFI_SEND_SIGNALED, 1000));
		dp_wait_ok(c->scq, &wc, EFI_WC_COMP_SWAP, "CAS");
		if (*res == guess) {
			w->originals[w->n++] = guess;
			i++;
			guess++;
		} else {
			w->cas_misses++;
			guess = *res;
		}
	}
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

void dp_case_atomics8(struct dp_side *s)
{
	struct dp_qp_cfg cfg = { .buf_size = 65536 };
	struct dp_conn c[NTHREADS];
	const uint64_t total = NTHREADS * (FAA_PER_THREAD + CAS_PER_THREAD);

	dp_setup(s, c, NTHREADS, &cfg);
	if (s->opts->server) {
		volatile uint64_t *counter = (uint64_t *)(c[0].buf + 64);

		*counter = 0;
		dp_sync(s, "go");
		dp_sync(s, "done");
		DP_CHECK(*counter == total, "the counter is %" PRIu64 " after %" PRIu64 " increments",
			 *counter, total);
	} else {
		struct atomic_worker w[NTHREADS];
		pthread_t th[NTHREADS];
		uint64_t *all = calloc(total, sizeof(*all)), misses = 0;
		size_t n = 0;

		const uint64_t counter_addr = c[0].remote.addr + 64;
		const uint32_t counter_rkey = c[0].remote.rkey;

		DP_CHECK(all, "out of memory");
		for (int i = 0; i < NTHREADS; i++) {
			/* every thread's QP targets the one counter in QP 0's MR */
			c[i].remote.addr = counter_addr;
			c[i].remote.rkey = counter_rkey;
			w[i] = (struct atomic_worker){ .c = &c[i], .originals = all + n };
			n += FAA_PER_THREAD + CAS_PER_THREAD;
		}
		dp_sync(s, "go");
		for (int i = 0; i < NTHREADS; i++)
			DP_CHECK(pthread_create(&th[i], NULL, atomic_worker, &w[i]) == 0, "pthread_create");
		for (int i = 0; i < NTHREADS; i++) {
			pthread_join(th[i], NULL);
			misses += w[i].cas_misses;
		}
		/* one QP's operations execute in order: its originals rise */
		for (int t = 0; t < NTHREADS; t++)
			for (size_t i = 1; i < w[t].n; i++)
				DP_CHECK(w[t].originals[i] > w[t].originals[i - 1], "thread %d: operation %zu "
					 "returned %" PRIu64 " after %" PRIu64 " (not atomic, or a result not "
					 "written back before its completion)", t, i, w[t].originals[i],
					 w[t].originals[i - 1]);
		/* each increment saw a distinct value: 0 … total − 1, once each,
		 * so none was lost and none executed twice */
		qsort(all, total, sizeof(*all), cmp_u64);
		for (uint64_t i = 0; i < total; i++) {
			uint64_t dups = 0, first_dup = 0;

			if (all[i] == i)
				continue;
			for (uint64_t j = 1; j < total; j++)
				if (all[j] == all[j - 1] && !dups++)
					first_dup = all[j];
			DP_FAIL("the atomics saw value %" PRIu64 " where %" PRIu64 " was due (%" PRIu64
				" values seen twice, the first %" PRIu64 "; largest %" PRIu64 " of %" PRIu64 ")",
				all[i], i, dups, first_dup, all[total - 1], total - 1);
		}
		dp_log("%" PRIu64 " increments from %d threads exact (%" PRIu64 " CAS misses)", total, NTHREADS,
		       misses);
		free(all);
		dp_sync(s, "done");
	}
	dp_sync(s, "atomics8 done");
	for (int i = NTHREADS - 1; i >= 0; i--)
		dp_conn_destroy(&c[i]);
}

#define LOSS_MB		1u
#define LOSS_WRITES	8
#define LOSS_READS	4
#define LOSS_SENDS	200
#define LOSS_FAAS	100

void dp_case_loss(struct dp_side *s)
{
	struct dp_qp_cfg cfg = { .buf_size = 8u << 20, .max_recv_wr = 256, .timeout = 12 };
	struct dp_conn c;
	struct efi_wc wc;
	struct efi_counters qc, cc;
	const uint32_t len = LOSS_MB << 20;
	const char *fault = getenv("EFI_FAULT");
	bool srv = s->opts->server;

	dp_setup(s, &c, 1, &cfg);
	for (int i = 0; i < LOSS_WRITES; i++) {
		if (srv) {
			dp_sync(s, "write");
			dp_sync(s, "written");
			DP_CHECK_DATA(c.buf, len, 200 + (uint64_t)i, "RDMA_WRITE under loss");
		} else {
			dp_fill(c.buf + (4u << 20), len, 200 + (uint64_t)i);
			dp_sync(s, "write");
			dp_post_ok(&c, EFI_WR_RDMA_WRITE, 4u << 20, len, 0, EFI_SEND_SIGNALED, (uint64_t)i);
			dp_wait_ok(c.scq, &wc, EFI_WC_RDMA_WRITE, "RDMA_WRITE under loss");
			dp_sync(s, "written");
		}
	}
	for (int i = 0; i < LOSS_READS; i++) {
		if (srv) {
			dp_fill(c.buf, len, 300 + (uint64_t)i);
			dp_sync(s, "read");
		} else {
			dp_sync(s, "read");
			dp_post_ok(&c, EFI_WR_RDMA_READ, 4u << 20, len, 0, EFI_SEND_SIGNALED, (uint64_t)i);
			dp_wait_ok(c.scq, &wc, EFI_WC_RDMA_READ, "RDMA_READ under loss");
			DP_CHECK_DATA(c.buf + (4u << 20), len, 300 + (uint64_t)i, "RDMA_READ under loss");
		}
		dp_sync(s, "read done");
	}
	/* Sends of 4 KiB, many in flight, each with its own content */
	if (srv) {
		for (uint64_t i = 0; i < LOSS_SENDS; i++)
			dp_post_recv(&c, i * 8192, 8192, i);
		dp_sync(s, "send");
		for (uint64_t i = 0; i < LOSS_SENDS; i++) {
			dp_wait_ok(c.rcq, &wc, EFI_WC_RECV, "SEND under loss");
			DP_CHECK(wc.wr_id == i && wc.byte_len == 4096, "receive %" PRIu64 ": wr_id %" PRIu64
				 " byte_len %u", i, wc.wr_id, wc.byte_len);
			DP_CHECK_DATA(c.buf + i * 8192, 4096, 400 + i, "SEND under loss");
		}
	} else {
		dp_sync(s, "send");
		for (uint64_t i = 0; i < LOSS_SENDS; i++) {
			dp_fill(c.buf + (4u << 20) + i * 4096, 4096, 400 + i);
			dp_post_ok(&c, EFI_WR_SEND, (4u << 20) + i * 4096, 4096, 0, EFI_SEND_SIGNALED, i);
			if (i >= 32)
				dp_wait_ok(c.scq, &wc, EFI_WC_SEND, "SEND under loss");
		}
		for (int i = 0; i < 32; i++)
			dp_wait_ok(c.scq, &wc, EFI_WC_SEND, "SEND under loss");
	}
	dp_sync(s, "sends done");
	/* atomics: replayed, never executed twice */
	if (srv) {
		*(volatile uint64_t *)(c.buf + 4096) = 0;
		dp_sync(s, "faa");
		dp_sync(s, "faa done");
		DP_CHECK(*(volatile uint64_t *)(c.buf + 4096) == LOSS_FAAS, "counter %" PRIu64 " after %d FAAs "
			 "under loss", *(volatile uint64_t *)(c.buf + 4096), LOSS_FAAS);
	} else {
		dp_sync(s, "faa");
		for (uint64_t i = 0; i < LOSS_FAAS; i++) {
			DP_CHECK_RC(dp_post_atomic(&c, EFI_WR_ATOMIC_FETCH_AND_ADD, 0, 4096, 1, 0,
						   EFI_SEND_SIGNALED, i));
			dp_wait_ok(c.scq, &wc, EFI_WC_FETCH_ADD, "FAA under loss");
			DP_CHECK(*(uint64_t *)c.buf == i, "FAA %" PRIu64 " returned %" PRIu64, i, *(uint64_t *)c.buf);
		}
		dp_sync(s, "faa done");
	}
	DP_CHECK_RC(efi_query_qp_counters(c.qp, &qc));
	DP_CHECK_RC(efi_query_context_counters(s->ctx, &cc));
	dp_log("EFI_FAULT=%s: QP tx %" PRIu64 " rx %" PRIu64 " retransmissions %" PRIu64 " timeouts %" PRIu64
	       " duplicates %" PRIu64 " seq NAKs sent %" PRIu64 "; context drops injected %" PRIu64,
	       fault ? fault : "(none)", qc.tx_packets, qc.rx_packets, qc.retransmissions, qc.timeouts,
	       qc.duplicates, qc.seq_naks_sent, cc.drop_reasons[EFI_DROP_INJECTED]);
	if (fault && strstr(fault, "loss=")) {
		DP_CHECK(qc.retransmissions + qc.duplicates + qc.seq_naks_sent > 0,
			 "EFI_FAULT=%s yet no retransmission, duplicate or sequence NAK on this side", fault);
		/* Selective retransmission: only what is lost goes again.  A
		 * loose bound (a timeout under a loaded CI machine may resend a
		 * window), far under go-back-N's 2–3 retransmissions per
		 * original at 1 % loss. */
		DP_CHECK(qc.retransmissions <= qc.tx_packets / 5,
			 "EFI_FAULT=%s: %" PRIu64 " retransmissions for %" PRIu64 " packets sent", fault,
			 qc.retransmissions, qc.tx_packets);
	}
	dp_sync(s, "loss done");
	dp_conn_destroy(&c);
}

#define TQ		8	/* QPs per thread */
#define T_ITERS		50
#define T_SEND		256
#define T_RECVS		32

struct t_worker {
	struct dp_side *s;
	struct dp_conn *c;	/* TQ of them */
	int first;		/* index of c[0] among all QPs */
};

static void *client_worker(void *arg)
{
	struct t_worker *w = arg;
	struct efi_wc wc;

	for (int it = 0; it < T_ITERS; it++) {
		for (int q = 0; q < TQ; q++) {
			struct dp_conn *c = &w->c[q];
			uint64_t seed = ((uint64_t)(w->first + q) << 32) | (uint64_t)it;
			size_t roff = (size_t)(it % 4) * 4096;

			/* Write 4 KiB, Read it back elsewhere, compare */
			dp_fill(c->buf, 4096, seed);
			memset(c->buf + 8192, 0, 4096);
			dp_post_ok(c, EFI_WR_RDMA_WRITE, 0, 4096, roff, EFI_SEND_SIGNALED, 1);
			dp_post_ok(c, EFI_WR_RDMA_READ, 8192, 4096, roff, EFI_SEND_SIGNALED, 2);
			dp_wait_ok(c->scq, &wc, EFI_WC_RDMA_WRITE, "threads: Write");
			dp_wait_ok(c->scq, &wc, EFI_WC_RDMA_READ, "threads: Read");
			DP_CHECK_DATA(c->buf + 8192, 4096, seed, "threads: Read after Write");
			/* and a Send the server checks */
			dp_fill(c->buf + 16384, T_SEND, seed ^ 0x5555);
			dp_post_ok(c, EFI_WR_SEND, 16384, T_SEND, 0, EFI_SEND_SIGNALED, 3);
			dp_wait_ok(c->scq, &wc, EFI_WC_SEND, "threads: Send");
		}
	}
	return NULL;
}

static void *server_worker(void *arg)
{
	struct t_worker *w = arg;
	int next[TQ] = { 0 };
	int left = TQ * T_ITERS;
	double deadline = dp_now() + 120;
	struct efi_wc wc;

	while (left) {
		bool got = false;

		for (int q = 0; q < TQ; q++) {
			struct dp_conn *c = &w->c[q];
			int k = efi_poll_cq(c->rcq, 1, &wc);
			uint64_t seed = ((uint64_t)(w->first + q) << 32) | (uint64_t)next[q];

			DP_CHECK(k >= 0, "efi_poll_cq: %d", k);
			if (!k)
				continue;
			DP_CHECK(wc.status == EFI_WC_SUCCESS, "threads: receive on QP %d: %s", w->first + q,
				 efi_wc_status_str(wc.status));
			DP_CHECK(wc.byte_len == T_SEND, "threads: receive of %u bytes", wc.byte_len);
			DP_CHECK_DATA(c->buf + 32768 + wc.wr_id * T_SEND, T_SEND, seed ^ 0x5555,
				      "threads: Send (in order per QP)");
			dp_post_recv(c, 32768 + wc.wr_id * T_SEND, T_SEND, wc.wr_id);
			next[q]++;
			left--;
			got = true;
		}
		if (!got)
			sched_yield();
		DP_CHECK(dp_now() < deadline, "threads: %d receives still missing after 120 s", left);
	}
	return NULL;
}

void dp_case_threads(struct dp_side *s)
{
	struct dp_qp_cfg cfg = { .buf_size = 65536, .max_recv_wr = T_RECVS };
	struct dp_conn *c = calloc(NTHREADS * TQ, sizeof(*c));
	struct t_worker w[NTHREADS];
	pthread_t th[NTHREADS];

	DP_CHECK(c, "out of memory");
	dp_setup(s, c, NTHREADS * TQ, &cfg);
	if (s->opts->server)
		for (int i = 0; i < NTHREADS * TQ; i++)
			for (uint64_t r = 0; r < T_RECVS; r++)
				dp_post_recv(&c[i], 32768 + r * T_SEND, T_SEND, r);
	dp_sync(s, "go");
	for (int t = 0; t < NTHREADS; t++) {
		w[t] = (struct t_worker){ .s = s, .c = &c[t * TQ], .first = t * TQ };
		DP_CHECK(pthread_create(&th[t], NULL, s->opts->server ? server_worker : client_worker, &w[t]) == 0,
			 "pthread_create");
	}
	for (int t = 0; t < NTHREADS; t++)
		pthread_join(th[t], NULL);
	dp_log("%d threads x %d QPs: %d Writes, Reads and Sends each, byte-exact", NTHREADS, TQ,
	       NTHREADS * TQ * T_ITERS);
	dp_sync(s, "threads done");
	for (int i = NTHREADS * TQ - 1; i >= 0; i--)
		dp_conn_destroy(&c[i]);
	free(c);
}

#define SC_ITERS	2000

/* The client's loop runs between two marker system calls (a write to fd -1,
 * which fails harmlessly) so that t-dp-syscalls.sh can cut the strace of
 * this thread down to the posts and polls. */
static void marker(const char *m)
{
	ssize_t r = write(-1, m, strlen(m));

	(void)r;
}

void dp_case_syscalls(struct dp_side *s)
{
	struct dp_qp_cfg cfg = { .buf_size = 65536, .max_inline_data = 64 };
	struct dp_conn c;
	struct efi_wc wc;

	dp_setup(s, &c, 1, &cfg);
	for (uint64_t r = 0; r < 16; r++)
		dp_post_recv(&c, 4096 + r * 64, 64, r);
	dp_sync(s, "go");
	if (s->opts->server) {
		for (int i = 0; i < SC_ITERS; i++) {
			dp_wait_ok(c.rcq, &wc, EFI_WC_RECV, "echo receive");
			dp_post_recv(&c, 4096 + wc.wr_id * 64, 64, wc.wr_id);
			dp_post_ok(&c, EFI_WR_SEND, 0, 64, 0, EFI_SEND_SIGNALED | EFI_SEND_INLINE, (uint64_t)i);
			dp_wait_ok(c.scq, &wc, EFI_WC_SEND, "echo send");
		}
	} else {
		double t0 = dp_now(), deadline = t0 + 60;
		int i;

		marker("DP-LOOP-BEGIN");
		for (i = 0; i < SC_ITERS; i++) {
			bool got_send = false, got_recv = false;
			struct efi_send_wr *bad;
			struct efi_sge sge = { .addr = (uintptr_t)c.buf, .length = 64, .lkey = c.mr->lkey };
			struct efi_send_wr wr = { .wr_id = (uint64_t)i, .sg_list = &sge, .num_sge = 1,
						  .opcode = EFI_WR_SEND,
						  .send_flags = EFI_SEND_SIGNALED | EFI_SEND_INLINE };

			/* no DP_CHECK inside: its message would be a write */
			if (efi_post_send(c.qp, &wr, &bad))
				break;
			while (!(got_send && got_recv)) {
				if (efi_poll_cq(c.scq, 1, &wc) == 1)
					got_send = wc.status == EFI_WC_SUCCESS;
				if (efi_poll_cq(c.rcq, 1, &wc) == 1) {
					struct efi_sge rsge = { .addr = (uintptr_t)(c.buf + 4096 + wc.wr_id * 64),
								.length = 64, .lkey = c.mr->lkey };
					struct efi_recv_wr rwr = { .wr_id = wc.wr_id, .sg_list = &rsge, .num_sge = 1 },
							   *rbad;

					got_recv = wc.status == EFI_WC_SUCCESS && !efi_post_recv(c.qp, &rwr, &rbad);
					if (!got_recv)
						break;
				}
				if ((i & 63) == 0 && dp_now() > deadline)
					break;
			}
			if (!(got_send && got_recv))
				break;
		}
		marker("DP-LOOP-END");
		DP_CHECK(i == SC_ITERS, "the ping-pong loop stopped at %d of %d (a failed post or poll, or "
			 "over 60 s)", i, SC_ITERS);
		dp_log("%d ping-pongs of 64 B in %.3f s", SC_ITERS, dp_now() - t0);
	}
	dp_sync(s, "syscalls done");
	dp_conn_destroy(&c);
}
