/* SPDX-License-Identifier: MIT */
/*
 * The fault injector of the wire layer (libefi/wire_fault.c), mostly over
 * the in-memory backend of wire_testutil so that its statistics are exact
 * and deterministic for a fixed seed: loss in both directions, duplication,
 * reordering (every datagram still delivered), delay and the wake-up of a
 * sleeping poller, back-pressure, end to end over loopback UDP, and the
 * spec parser's refusals.
 */
#include "config.h"

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/unit/wire_testutil.h"

/* ---- fault injector ---- */

START_TEST(fault_loss_send_and_recv)
{
	enum { N = 10000 };
	struct mem_wire *m = mem_create(MEM_MAX);
	struct efi_wire *w = efi_wire_fault_wrap(&m->base, "loss=0.1,seed=42");
	struct efi_wire_fault_stats st;
	struct efi_wire_pkt *p = alloc_pkts(64, 2048);
	static uint32_t seqs[MEM_MAX];
	unsigned n, got = 0;
	int r;

	ck_assert_ptr_nonnull(w);
	send_seq(w, 0, N);
	n = drain_mem(m, seqs);
	efi_wire_fault_stats(w, &st);
	ck_assert_uint_eq(st.seen, N);
	ck_assert_uint_eq(st.dropped, N - n);
	/* binomial(10000, 0.1): sd 30, so ±300 is ten sd (and the seed is
	 * fixed, so this is deterministic anyway) */
	ck_assert_uint_ge(n, 8700);
	ck_assert_uint_le(n, 9300);
	for (unsigned i = 1; i < n; i++)
		ck_assert_uint_lt(seqs[i - 1], seqs[i]);	/* order kept */

	/* the receive direction: straight into the inner backend, out
	 * through the wrapper */
	for (unsigned i = 0; i < N; i += 50) {
		for (unsigned k = 0; k < 50; k++) {
			p[k].len = 64;
			fill(p[k].buf, 64, i + k);
		}
		ck_assert_int_eq(mem_send(&m->base, p, 50), 50);
	}
	while ((r = wire_recv_copy(w, p, 64)) > 0) {
		for (int k = 0; k < r; k++)
			ck_assert(check_fill(p[k].buf, p[k].len, &seqs[0]));
		got += (unsigned)r;
	}
	ck_assert_int_eq(r, 0);
	efi_wire_fault_stats(w, &st);
	ck_assert_uint_eq(st.seen, 2 * N);
	ck_assert_uint_eq(st.dropped, 2 * N - n - got);
	ck_assert_uint_ge(got, 8700);
	ck_assert_uint_le(got, 9300);
	free_pkts(p, 64);
	efi_wire_destroy(w);
}
END_TEST

/* The delivered sequence for a spec, over a fresh mem backend. */
static unsigned run_spec(const char *spec, uint32_t *seqs, struct efi_wire_fault_stats *st)
{
	struct mem_wire *m = mem_create(MEM_MAX);
	struct efi_wire *w = efi_wire_fault_wrap(&m->base, spec);
	unsigned n;

	ck_assert_ptr_nonnull(w);
	send_seq(w, 0, 5000);
	/* a datagram held for reordering leaves after the bound (1 ms),
	 * at the next call: */
	usleep(2000);
	ck_assert_int_eq(efi_wire_send(w, NULL, 0), 0);
	n = drain_mem(m, seqs);
	efi_wire_fault_stats(w, st);
	efi_wire_destroy(w);
	return n;
}

START_TEST(fault_deterministic_by_seed)
{
	static uint32_t s1[MEM_MAX], s2[MEM_MAX], s3[MEM_MAX];
	struct efi_wire_fault_stats st1, st2, st3;
	const char *spec = "loss=0.05,dup=0.05,reorder=0.05,seed=7";
	unsigned n1 = run_spec(spec, s1, &st1), n2 = run_spec(spec, s2, &st2);
	unsigned n3 = run_spec("seed=8,loss=0.05,dup=0.05,reorder=0.05", s3, &st3);

	ck_assert_uint_eq(n1, n2);
	ck_assert_mem_eq(s1, s2, n1 * sizeof(s1[0]));
	ck_assert_mem_eq(&st1, &st2, sizeof(st1));
	ck_assert(n1 != n3 || memcmp(s1, s3, n1 * sizeof(s1[0])) != 0);
}
END_TEST

START_TEST(fault_dup)
{
	static uint32_t seqs[MEM_MAX];
	static unsigned count[5000];
	struct efi_wire_fault_stats st;
	unsigned n = run_spec("dup=0.2,seed=3", seqs, &st), twice = 0;

	ck_assert_uint_eq(st.seen, 5000);
	ck_assert_uint_eq(st.dropped, 0);
	ck_assert_uint_eq(n, 5000 + st.duplicated);
	ck_assert_uint_ge(st.duplicated, 850);	/* 1000 ± 5 sd */
	ck_assert_uint_le(st.duplicated, 1150);
	for (unsigned i = 0; i < n; i++)
		count[seqs[i]]++;
	for (unsigned i = 0; i < 5000; i++) {
		ck_assert_uint_ge(count[i], 1);
		ck_assert_uint_le(count[i], 2);
		twice += count[i] == 2;
	}
	ck_assert_uint_eq(twice, st.duplicated);
}
END_TEST

START_TEST(fault_reorder_delivers_all)
{
	static uint32_t seqs[MEM_MAX];
	static bool seen[5000];
	struct efi_wire_fault_stats st;
	unsigned n = run_spec("reorder=0.2,seed=11", seqs, &st), inversions = 0;

	ck_assert_uint_eq(n, 5000);
	ck_assert_uint_eq(st.dropped, 0);
	/* one held at a time, the next never held: about 0.2/1.2 of them */
	ck_assert_uint_ge(st.reordered, 650);
	ck_assert_uint_le(st.reordered, 1000);
	for (unsigned i = 0; i < n; i++) {
		ck_assert(!seen[seqs[i]]);
		seen[seqs[i]] = true;
		/* held back by exactly one: an adjacent swap */
		ck_assert_uint_le(seqs[i] > i ? seqs[i] - i : i - seqs[i], 1);
		if (i && seqs[i] < seqs[i - 1])
			inversions++;
	}
	/* each hold is one swap, except a last one released by the bound */
	ck_assert_uint_le(inversions, st.reordered);
	ck_assert_uint_ge(inversions + 1, st.reordered);
}
END_TEST

/* A datagram held on receive with nothing after it: the wrapper's
 * descriptor wakes a sleeping poller when the bound has passed. */
START_TEST(fault_reorder_recv_wakes_poller)
{
	struct mem_wire *m = mem_create(MEM_MAX);
	struct efi_wire *w = efi_wire_fault_wrap(&m->base, "reorder=1");
	struct efi_wire_pkt *p = alloc_pkts(4, 2048);
	uint32_t seq;
	int r;

	ck_assert_ptr_nonnull(w);
	ck_assert_int_ne(efi_wire_fd(w), m->efd);
	for (unsigned i = 0; i < 2; i++) {
		p[i].len = 64;
		fill(p[i].buf, 64, i);
	}
	ck_assert_int_eq(mem_send(&m->base, p, 2), 2);
	/* 0 held, 1 passes, 0 follows it */
	ck_assert_int_eq(wire_recv_copy(w, p, 4), 2);
	ck_assert(check_fill(p[0].buf, p[0].len, &seq));
	ck_assert_uint_eq(seq, 1);
	ck_assert(check_fill(p[1].buf, p[1].len, &seq));
	ck_assert_uint_eq(seq, 0);
	/* a lone datagram: held, then released by the timer */
	fill(p[0].buf, 64, 7);
	ck_assert_int_eq(mem_send(&m->base, p, 1), 1);
	ck_assert_int_eq(wire_recv_copy(w, p, 4), 0);
	ck_assert(wait_readable(w, 1000));
	r = 0;
	for (int tries = 0; r == 0 && tries < 100; tries++) {
		r = wire_recv_copy(w, p, 4);
		if (r == 0)
			ck_assert(wait_readable(w, 100));
	}
	ck_assert_int_eq(r, 1);
	ck_assert(check_fill(p[0].buf, p[0].len, &seq));
	ck_assert_uint_eq(seq, 7);
	/* the timer was acknowledged: no spurious wake-ups (a busy poller) */
	ck_assert(!wait_readable(w, 30));
	free_pkts(p, 4);
	efi_wire_destroy(w);
}
END_TEST

/* delay_us over real sockets: on send (the sender's timer wakes it to
 * flush) and on receive (held in the receiver's wrapper). */
START_TEST(fault_delay_udp)
{
	uint16_t pa, pb;
	struct efi_wire *a = efi_wire_fault_wrap(udp_wire("::1", &pa), "delay_us=20000");
	struct efi_wire *b = udp_wire("::1", &pb);
	struct efi_wire_pkt *p = alloc_pkts(2, 2048);
	uint64_t t0;

	ck_assert_ptr_nonnull(a);
	p[0].len = 80;
	fill(p[0].buf, 80, 5);
	p[0].peer = addr6("::1", pb);
	t0 = mono_ns();
	ck_assert_int_eq(efi_wire_send(a, p, 1), 1);
	ck_assert(!wait_readable(b, 5));
	ck_assert(wait_readable(a, 1000));	/* the sender's timer */
	while (wire_recv_copy(a, p + 1, 1) == 0 && mono_ns() - t0 < 20000000ull)
		wait_readable(a, 50);
	ck_assert_uint_eq(recv_all(b, p + 1, 1), 1);
	ck_assert_uint_ge(mono_ns() - t0, 20000000ull);
	ck_assert_mem_eq(p[1].buf, p[0].buf, 80);

	b = efi_wire_fault_wrap(b, "delay_us=20000");
	ck_assert_ptr_nonnull(b);
	a = efi_wire_fault_wrap(a, "");		/* wrappers nest */
	ck_assert_ptr_nonnull(a);
	t0 = mono_ns();
	p[0].peer = addr6("::1", pb);
	ck_assert_int_eq(efi_wire_send(a, p, 1), 1);
	while (wire_recv_copy(a, p + 1, 1) == 0 && mono_ns() - t0 < 25000000ull)
		wait_readable(a, 50);	/* flush a's delayed datagram */
	ck_assert_uint_eq(recv_all(b, p + 1, 1), 1);
	ck_assert_uint_ge(mono_ns() - t0, 40000000ull);
	ck_assert(!wait_readable(b, 30));
	free_pkts(p, 2);
	efi_wire_destroy(a);
	efi_wire_destroy(b);
}
END_TEST

/* With a full inner backend the wrapper passes back-pressure on: partial
 * counts, then 0, never an error or a lost datagram. */
START_TEST(fault_backpressure)
{
	enum { N = 3000 };
	struct mem_wire *m = mem_create(10);
	struct efi_wire *w = efi_wire_fault_wrap(&m->base, "");
	struct efi_wire_pkt *p = alloc_pkts(N, 256);
	static uint32_t seqs[MEM_MAX];
	unsigned sent = 0, got = 0, n;
	int r;

	ck_assert_ptr_nonnull(w);
	for (unsigned i = 0; i < N; i++) {
		p[i].len = 100;
		fill(p[i].buf, 100, i);
	}
	/* the wrapper's own pipe fills first, then the calls take nothing */
	for (int calls = 0; calls < 10; calls++) {
		r = efi_wire_send(w, p + sent, N - sent);
		ck_assert_int_ge(r, 0);
		if (r == 0)
			break;
		sent += (unsigned)r;
	}
	ck_assert_int_eq(r, 0);
	ck_assert_uint_gt(sent, 0);
	ck_assert_uint_lt(sent, N);
	while (sent < N) {
		n = drain_mem(m, seqs + got);
		got += n;
		r = efi_wire_send(w, p + sent, N - sent);
		ck_assert_int_ge(r, 0);
		sent += (unsigned)r;
	}
	while (got < N) {
		ck_assert_int_eq(efi_wire_send(w, NULL, 0), 0);
		n = drain_mem(m, seqs + got);
		ck_assert_uint_gt(n, 0);
		got += n;
	}
	for (unsigned i = 0; i < N; i++)
		ck_assert_uint_eq(seqs[i], i);
	free_pkts(p, N);
	efi_wire_destroy(w);
}
END_TEST

/* End to end over loopback: what the injector did not drop arrives. */
START_TEST(fault_loss_udp)
{
	enum { N = 1000 };
	uint16_t pa, pb;
	struct efi_wire *a = efi_wire_fault_wrap(udp_wire("::1", &pa), "loss=0.1,seed=99");
	struct efi_wire *b = udp_wire("::1", &pb);
	struct efi_wire_pkt *p = alloc_pkts(N, 1500);
	struct efi_wire_fault_stats st;
	unsigned got;

	ck_assert_ptr_nonnull(a);
	for (unsigned i = 0; i < N; i++) {
		p[i].len = 1200;
		fill(p[i].buf, 1200, i);
		p[i].peer = addr6("::1", pb);
	}
	ck_assert_int_eq(efi_wire_send(a, p, N), N);
	efi_wire_fault_stats(a, &st);
	ck_assert_uint_eq(st.seen, N);
	ck_assert_uint_ge(st.dropped, 60);
	ck_assert_uint_le(st.dropped, 140);
	got = recv_all(b, p, N - (unsigned)st.dropped);
	ck_assert_uint_eq(got, N - st.dropped);
	ck_assert_int_eq(wire_recv_copy(b, p, 1), 0);
	free_pkts(p, N);
	efi_wire_destroy(a);
	efi_wire_destroy(b);
}
END_TEST

START_TEST(fault_bad_specs)
{
	static const char *const bad[] = {
		"loss=-0.1", "loss=1.5", "loss=1.0001", "dup=2", "reorder=-1",
		"foo=1", "garbage", "loss", "loss=", "=0.1", "loss=0.1,",
		",loss=0.1", "loss=0.1,,dup=0.1", "loss=abc", "loss=0.1x",
		"loss=nan", "loss=inf", "loss=1e-3", "loss= 0.1", " loss=0.1",
		"loss=0.1,loss=0.2", "seed=-1", "seed=18446744073709551616",
		"delay_us=1x", "delay_us=99999999999", "LOSS=0.1", "loss=.",
	};
	struct mem_wire *m = mem_create(MEM_MAX);
	struct efi_wire *w;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		errno = 0;
		ck_assert_msg(efi_wire_fault_wrap(&m->base, bad[i]) == NULL, "accepted \"%s\"", bad[i]);
		ck_assert_int_eq(errno, EINVAL);
	}
	errno = 0;
	ck_assert_ptr_null(efi_wire_fault_wrap(&m->base, NULL));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_ptr_null(efi_wire_fault_wrap(NULL, "loss=0.1"));
	ck_assert_int_eq(errno, EINVAL);
	/* good ones, including the edges; inner survived the failures */
	static const char *const good[] = {
		"", "loss=0", "loss=1", "loss=1.", "loss=.5,dup=0.001", "seed=18446744073709551615",
		"delay_us=0,reorder=0.01,dup=0,loss=0.01,seed=0",
	};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		struct mem_wire *inner = mem_create(MEM_MAX);

		w = efi_wire_fault_wrap(&inner->base, good[i]);
		ck_assert_msg(w != NULL, "refused \"%s\"", good[i]);
		efi_wire_destroy(w);	/* and inner with it */
	}
	/* loss=1 drops everything */
	w = efi_wire_fault_wrap(&m->base, "loss=1");
	ck_assert_ptr_nonnull(w);
	send_seq(w, 0, 100);
	ck_assert_uint_eq(m->count, 0);
	efi_wire_destroy(w);
}
END_TEST

START_TEST(destroy_null_and_stats_elsewhere)
{
	uint16_t port;
	struct efi_wire *u = udp_wire("::1", &port);
	struct efi_wire *f;
	struct efi_wire_fault_stats st;

	efi_wire_destroy(NULL);
	u->ops->destroy(NULL);
	memset(&st, 0xff, sizeof(st));
	efi_wire_fault_stats(u, &st);
	ck_assert_uint_eq(st.seen + st.dropped + st.duplicated + st.reordered, 0);
	memset(&st, 0xff, sizeof(st));
	efi_wire_fault_stats(NULL, &st);
	ck_assert_uint_eq(st.seen + st.dropped + st.duplicated + st.reordered, 0);
	ck_assert_int_ge(efi_wire_fd(u), 0);
	f = efi_wire_fault_wrap(u, "loss=0.5");
	ck_assert_ptr_nonnull(f);
	f->ops->destroy(NULL);
	/* its own descriptor, quiet while nothing is pending */
	ck_assert_int_ge(efi_wire_fd(f), 0);
	ck_assert_int_ne(efi_wire_fd(f), efi_wire_fd(u));
	ck_assert(!wait_readable(f, 0));
	efi_wire_destroy(f);
}
END_TEST

static Suite *wire_suite(void)
{
	Suite *s = suite_create("wire_fault");
	TCase *fault = tcase_create("fault");

	tcase_set_timeout(fault, 30);
	tcase_add_test(fault, fault_loss_send_and_recv);
	tcase_add_test(fault, fault_deterministic_by_seed);
	tcase_add_test(fault, fault_dup);
	tcase_add_test(fault, fault_reorder_delivers_all);
	tcase_add_test(fault, fault_reorder_recv_wakes_poller);
	tcase_add_test(fault, fault_delay_udp);
	tcase_add_test(fault, fault_backpressure);
	tcase_add_test(fault, fault_loss_udp);
	tcase_add_test(fault, fault_bad_specs);
	tcase_add_test(fault, destroy_null_and_stats_elsewhere);
	suite_add_tcase(s, fault);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(wire_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
