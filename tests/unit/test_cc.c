/* SPDX-License-Identifier: MIT */
/*
 * RTT estimation (libefi/rtt.c) and the delay-based congestion control
 * rule (libefi/cc.c), as pure functions on a simulated clock: the
 * estimator's convergence and its retransmission timeout, and the window's
 * step responses — additive increase below the target delay, a decrease
 * proportional to the excess above it (bounded, at most once per RTT), a
 * window below one packet that turns into pacing, loss as a backstop only,
 * and the parameter parser ($EFI_CC) refusing what makes no sense.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdlib.h>

#include "libefi/cc.h"
#include "libefi/rtt.h"

#define US 1000ull

START_TEST(rtt_first_sample_and_convergence)
{
	struct efi_rtt r = { 0 };

	ck_assert_uint_eq(efi_rtt_srtt(&r, 77), 77);	/* no sample yet: the fallback */
	efi_rtt_sample(&r, 0);				/* no measurement: ignored */
	ck_assert_uint_eq(r.samples, 0);
	efi_rtt_sample(&r, 100 * US);
	ck_assert_uint_eq(r.min_ns, 100 * US);
	ck_assert_uint_eq(r.srtt_ns, 100 * US);
	ck_assert_uint_eq(r.rttvar_ns, 50 * US);
	/* A step to 200 µs: srtt moves 1/8 of the way each sample and
	 * converges; the minimum stays. */
	efi_rtt_sample(&r, 200 * US);
	ck_assert_uint_eq(r.srtt_ns, 100 * US - 100 * US / 8 + 200 * US / 8);
	for (int i = 0; i < 100; i++)
		efi_rtt_sample(&r, 200 * US);
	ck_assert_uint_ge(r.srtt_ns, 199 * US);
	ck_assert_uint_le(r.srtt_ns, 200 * US);
	ck_assert_uint_eq(r.min_ns, 100 * US);
	ck_assert_uint_lt(r.rttvar_ns, 1 * US);	/* steady: the variation decays */
	efi_rtt_sample(&r, 50 * US);
	ck_assert_uint_eq(r.min_ns, 50 * US);
	ck_assert_uint_eq(r.last_ns, 50 * US);
}
END_TEST

START_TEST(rtt_rto_floor_cap_initial)
{
	struct efi_rtt r = { 0 };

	/* Before any sample: the initial value, floored and capped. */
	ck_assert_uint_eq(efi_rtt_rto(&r, 1000, 0, 5000), 5000);
	ck_assert_uint_eq(efi_rtt_rto(&r, 1000, 3000, 5000), 3000);
	ck_assert_uint_eq(efi_rtt_rto(&r, 9000, 0, 5000), 9000);
	efi_rtt_sample(&r, 100 * US);	/* srtt 100, rttvar 50: rto 300 */
	ck_assert_uint_eq(efi_rtt_rto(&r, 0, 0, 0), 300 * US);
	ck_assert_uint_eq(efi_rtt_rto(&r, 1000 * US, 0, 0), 1000 * US);
	ck_assert_uint_eq(efi_rtt_rto(&r, 0, 200 * US, 0), 200 * US);
	/* Jitter widens it: alternating 50/150 µs keeps rttvar near 50. */
	for (int i = 0; i < 200; i++)
		efi_rtt_sample(&r, (i & 1 ? 150 : 50) * US);
	ck_assert_uint_gt(efi_rtt_rto(&r, 0, 0, 0), 250 * US);
}
END_TEST

static struct efi_cc_params params(void)
{
	struct efi_cc_params p;
	efi_cc_params_default(&p);
	p.target_delay_ns = 100 * US;
	p.ai = 1;
	p.beta = 0.8;
	p.max_mdf = 0.5;
	p.min_cwnd = 0.01;
	p.max_cwnd = 256;
	p.init_cwnd = 10;
	return p;
}

START_TEST(cc_additive_increase_below_target)
{
	struct efi_cc_params p = params();
	struct efi_cc cc;
	uint64_t now = 1000 * US;

	efi_cc_init(&cc, &p);
	ck_assert(cc.cwnd == 10);
	/* One window of ACKs at a delay under the target: about ai more. */
	for (int i = 0; i < 10; i++)
		efi_cc_on_ack(&cc, &p, 50 * US, 1, 50 * US, now += 5 * US);
	ck_assert_double_ge(cc.cwnd, 10.9);
	ck_assert_double_le(cc.cwnd, 11.0);
	/* Many RTTs: linear growth up to max_cwnd, never past it. */
	for (int i = 0; i < 100000; i++)
		efi_cc_on_ack(&cc, &p, 50 * US, 1, 50 * US, now += 5 * US);
	ck_assert(cc.cwnd == 256);
	ck_assert_uint_eq(cc.decreases, 0);
}
END_TEST

START_TEST(cc_decrease_proportional_to_excess)
{
	struct efi_cc_params p = params();
	struct efi_cc cc;
	uint64_t now = 1000 * US;

	/* 200 µs against a target of 100: f = 0.8 × 100/200 = 0.4. */
	efi_cc_init(&cc, &p);
	efi_cc_on_ack(&cc, &p, 200 * US, 1, 200 * US, now);
	ck_assert_double_eq_tol(cc.cwnd, 6.0, 1e-9);
	/* 125 µs: f = 0.8 × 25/125 = 0.16, a smaller step for a smaller
	 * excess — once the RTT has passed since the last decrease. */
	efi_cc_on_ack(&cc, &p, 125 * US, 1, 200 * US, now += 100 * US);
	ck_assert_double_eq_tol(cc.cwnd, 6.0, 1e-9);	/* within the RTT: no second decrease */
	efi_cc_on_ack(&cc, &p, 125 * US, 1, 200 * US, now += 100 * US);
	ck_assert_double_eq_tol(cc.cwnd, 6.0 * 0.84, 1e-9);
	/* A huge excess is bounded by max_mdf. */
	efi_cc_on_ack(&cc, &p, 100000 * US, 1, 200 * US, now += 200 * US);
	ck_assert_double_eq_tol(cc.cwnd, 6.0 * 0.84 * 0.5, 1e-9);
	ck_assert_uint_eq(cc.decreases, 3);
}
END_TEST

START_TEST(cc_lone_spike_is_not_a_queue)
{
	struct efi_cc_params p = params();
	struct efi_cc cc;
	uint64_t now = 1000 * US;

	efi_cc_init(&cc, &p);
	efi_cc_on_ack(&cc, &p, 50 * US, 1, 100 * US, now);	/* opens a window */
	/* One sample far above the target among normal ones: no decrease. */
	for (int i = 0; i < 100; i++)
		efi_cc_on_ack(&cc, &p, i == 50 ? 5000 * US : 50 * US, 1, 100 * US, now += 10 * US);
	ck_assert_uint_eq(cc.decreases, 0);
	/* A whole RTT above it: a decrease. */
	for (int i = 0; i < 11; i++)
		efi_cc_on_ack(&cc, &p, 300 * US, 1, 100 * US, now += 10 * US);
	ck_assert_uint_eq(cc.decreases, 1);
}
END_TEST

START_TEST(cc_step_response_settles_at_target)
{
	/* A toy bottleneck: the delay grows with the window (queueing), base
	 * RTT 20 µs + 10 µs per packet beyond 4 in flight.  The window must
	 * settle where the delay sits around the target (100 µs → about 12
	 * packets), not run to max_cwnd or collapse. */
	struct efi_cc_params p = params();
	struct efi_cc cc;
	uint64_t now = 0;
	double lo = 1e9, hi = 0;

	efi_cc_init(&cc, &p);
	cc.cwnd = 100;	/* a step: start far above the equilibrium */
	for (int i = 0; i < 200000; i++) {
		double q = cc.cwnd > 4 ? (cc.cwnd - 4) * 10 : 0;
		uint64_t delay = 20 * US + (uint64_t)(q * US);
		efi_cc_on_ack(&cc, &p, delay, 1, delay, now += delay / (cc.cwnd > 1 ? (uint64_t)cc.cwnd : 1));
		if (i > 100000) {
			lo = cc.cwnd < lo ? cc.cwnd : lo;
			hi = cc.cwnd > hi ? cc.cwnd : hi;
		}
	}
	ck_assert_double_ge(lo, 6);
	ck_assert_double_le(hi, 16);
}
END_TEST

START_TEST(cc_below_one_packet_paces)
{
	struct efi_cc_params p = params();
	struct efi_cc cc;
	uint64_t now = 1000 * US;

	efi_cc_init(&cc, &p);
	ck_assert_uint_eq(efi_cc_pacing_gap_ns(&cc, 100 * US), 0);	/* ≥ 1: the window limits */
	for (int i = 0; i < 40; i++)
		efi_cc_on_ack(&cc, &p, 10000 * US, 1, 100 * US, now += 200 * US);
	ck_assert_double_eq_tol(cc.cwnd, p.min_cwnd, 1e-12);	/* clamped, not zero */
	ck_assert_uint_eq(efi_cc_pacing_gap_ns(&cc, 100 * US), 10000 * US);	/* rtt / 0.01 */
	/* Below one packet the increase is ai per ACK: recovery is not
	 * stuck at 1/cwnd steps of a tiny window. */
	efi_cc_on_ack(&cc, &p, 50 * US, 1, 100 * US, now += 200 * US);
	ck_assert_double_eq_tol(cc.cwnd, p.min_cwnd + p.ai, 1e-12);
}
END_TEST

START_TEST(cc_random_loss_is_not_congestion)
{
	struct efi_cc_params p = params();
	struct efi_cc cc;
	uint64_t now = 1000 * US;

	/* 1 % loss, spread evenly, at a delay under the target: no decrease. */
	efi_cc_init(&cc, &p);
	for (int i = 0; i < 10000; i++) {
		efi_cc_on_ack(&cc, &p, 50 * US, 1, 50 * US, now += 2 * US);
		if (i % 100 == 0)
			efi_cc_on_loss(&cc, &p, 1, 50 * US, now);
	}
	ck_assert_uint_eq(cc.decreases, 0);
	ck_assert_double_gt(cc.cwnd, 10);
	/* Half of an RTT's packets lost: the backstop decreases by loss_mdf. */
	double before = cc.cwnd;
	efi_cc_on_loss(&cc, &p, 50, 50 * US, now += 1 * US);
	efi_cc_on_ack(&cc, &p, 0, 50, 50 * US, now += 60 * US);
	ck_assert_uint_eq(cc.decreases, 1);
	ck_assert_double_eq_tol(cc.cwnd, before * (1 - p.loss_mdf) + 0, 1e-9);
	/* A timeout: the largest decrease, at once. */
	before = cc.cwnd;
	efi_cc_on_timeout(&cc, &p, now += 1 * US);
	ck_assert_double_eq_tol(cc.cwnd, before * (1 - p.max_mdf), 1e-9);
}
END_TEST

START_TEST(cc_params_parse)
{
	struct efi_cc_params p, q;

	efi_cc_params_default(&p);
	q = p;
	ck_assert_int_eq(efi_cc_params_parse(&p, ""), 0);
	ck_assert_int_eq(efi_cc_params_parse(&p, "target_us=50,ai=0.5,max_cwnd=128,min_rto_us=2000"), 0);
	ck_assert_uint_eq(p.target_delay_ns, 50 * US);
	ck_assert_double_eq(p.ai, 0.5);
	ck_assert_double_eq(p.max_cwnd, 128);
	ck_assert_uint_eq(p.min_rto_ns, 2000 * US);
	ck_assert_double_eq(p.beta, q.beta);	/* untouched */
	q = p;
	static const char *const bad[] = {
		"nokey=1", "target_us", "target_us=", "target_us=abc", "ai=-1", "=3", "ai=1,,beta=0.5",
		"max_mdf=1", "min_cwnd=0", "min_cwnd=300", "init_cwnd=1000", "target_us=0",
		"suspect_rtts=0", "suspect_min_us=9000,suspect_max_us=10", "beta=2", "ai=1x",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(efi_cc_params_parse(&p, bad[i]) == EINVAL, "accepted %s", bad[i]);
		ck_assert_msg(p.target_delay_ns == q.target_delay_ns && p.ai == q.ai && p.max_cwnd == q.max_cwnd,
			      "%s changed the parameters", bad[i]);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cc");
	TCase *t = tcase_create("rtt");
	SRunner *sr;
	int failed;

	tcase_add_test(t, rtt_first_sample_and_convergence);
	tcase_add_test(t, rtt_rto_floor_cap_initial);
	suite_add_tcase(s, t);
	t = tcase_create("cc");
	tcase_add_test(t, cc_additive_increase_below_target);
	tcase_add_test(t, cc_decrease_proportional_to_excess);
	tcase_add_test(t, cc_lone_spike_is_not_a_queue);
	tcase_add_test(t, cc_step_response_settles_at_target);
	tcase_add_test(t, cc_below_one_packet_paces);
	tcase_add_test(t, cc_random_loss_is_not_congestion);
	tcase_add_test(t, cc_params_parse);
	suite_add_tcase(s, t);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
