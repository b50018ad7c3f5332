/* SPDX-License-Identifier: MIT */
/*
 * The peer table of the counters page (libefi/peer_table.c): QPs grouped by
 * peer address, each path index aggregated over the peer's QPs (sums, the
 * smallest minimum RTT, the mean smoothed RTT, the summed window), the
 * suspect rule (busy QPs decide, idle ones only when no QP is busy), the
 * bounds (paths past 8, peers past the page's room counted once each).
 */
#include "config.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "libefi/peer_table.h"

static void addr_v4(uint8_t a[16], uint8_t last)
{
	static const uint8_t prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	memcpy(a, prefix, 12);
	a[12] = 10;
	a[13] = 77;
	a[14] = 0;
	a[15] = last;
}

static void addr_n(uint8_t a[16], unsigned n)
{
	memset(a, 0, 16);
	a[0] = 0xfd;
	a[14] = (uint8_t)(n >> 8);
	a[15] = (uint8_t)n;
}

/* A path with an RTT sample (0: none), a window, counters and a state. */
static struct efi_path path(uint64_t min_ns, uint64_t srtt_ns, double cwnd, uint64_t retx,
			    uint64_t suspected, uint64_t restored, enum efi_path_state st)
{
	struct efi_path p;
	memset(&p, 0, sizeof(p));
	p.rtt.min_ns = min_ns;
	p.rtt.srtt_ns = srtt_ns;
	p.rtt.samples = srtt_ns ? 5 : 0;
	p.cc.cwnd = cwnd;
	p.retransmissions = retx;
	p.suspected = suspected;
	p.restored = restored;
	p.state = st;
	return p;
}

START_TEST(groups_and_aggregates)
{
	struct efi_peer_table t;
	struct efi_countershm_peer out[EFI_CSHM_MAX_PEERS];
	uint32_t n, omitted;
	uint8_t a[16], b[16];
	struct efi_path q1[2], q2[4], q3[1];

	addr_v4(a, 1);
	addr_v4(b, 2);
	q1[0] = path(40000, 60000, 10.5, 3, 1, 1, EFI_PATH_ACTIVE);
	q1[1] = path(0, 0, 16, 0, 0, 0, EFI_PATH_ACTIVE);		/* no sample yet */
	q2[0] = path(30500, 80000, 2.25, 4, 2, 1, EFI_PATH_ACTIVE);
	q2[1] = path(50000, 50000, 1, 7, 0, 0, EFI_PATH_ACTIVE);
	q2[2] = path(1500, 1500, 1, 0, 0, 0, EFI_PATH_ACTIVE);
	q2[3] = path(0, 0, 0.5, 0, 0, 0, EFI_PATH_ACTIVE);
	q3[0] = path(100000, 100000, 4, 9, 0, 0, EFI_PATH_ACTIVE);

	efi_peer_table_init(&t, 3);
	efi_peer_table_add(&t, a, q1, 2, true);
	efi_peer_table_add(&t, b, q3, 1, false);
	efi_peer_table_add(&t, a, q2, 4, false);
	efi_peer_table_result(&t, out, &n, &omitted);
	efi_peer_table_fini(&t);

	ck_assert_uint_eq(n, 2);
	ck_assert_uint_eq(omitted, 0);
	/* first met, first listed */
	ck_assert_int_eq(memcmp(out[0].addr, a, 16), 0);
	ck_assert_int_eq(memcmp(out[1].addr, b, 16), 0);
	ck_assert_uint_eq(out[0].qps, 2);
	ck_assert_uint_eq(out[0].npaths, 4);	/* the most any QP has */
	ck_assert_uint_eq(out[1].qps, 1);
	ck_assert_uint_eq(out[1].npaths, 1);

	const struct efi_countershm_path *p0 = &out[0].path[0];
	ck_assert_uint_eq(p0->rtt_min_us, 31);		/* min(40, 30.5) rounded up */
	ck_assert_uint_eq(p0->srtt_us, 70);		/* mean of 60 and 80 */
	ck_assert_uint_eq(p0->cwnd_milli, 12750);	/* 10.5 + 2.25 packets */
	ck_assert_uint_eq(p0->retransmissions, 7);
	ck_assert_uint_eq(p0->suspected, 3);
	ck_assert_uint_eq(p0->restored, 2);
	ck_assert_uint_eq(p0->state, EFI_CSHM_PATH_ACTIVE);
	/* path 1: only q2's sample counts, q1 has none */
	ck_assert_uint_eq(out[0].path[1].rtt_min_us, 50);
	ck_assert_uint_eq(out[0].path[1].srtt_us, 50);
	ck_assert_uint_eq(out[0].path[1].cwnd_milli, 17000);
	/* path 2: one QP only; 1.5 µs shows as 2, never as 0 */
	ck_assert_uint_eq(out[0].path[2].rtt_min_us, 2);
	ck_assert_uint_eq(out[0].path[2].srtt_us, 2);
	/* path 3: no sample anywhere: 0 means none */
	ck_assert_uint_eq(out[0].path[3].rtt_min_us, 0);
	ck_assert_uint_eq(out[0].path[3].srtt_us, 0);
	ck_assert_uint_eq(out[0].path[3].cwnd_milli, 500);
	/* peer b */
	ck_assert_uint_eq(out[1].path[0].rtt_min_us, 100);
	ck_assert_uint_eq(out[1].path[0].retransmissions, 9);
	/* unused entries are zero */
	ck_assert_uint_eq(out[1].path[1].cwnd_milli, 0);
	ck_assert_uint_eq(out[2].qps, 0);
	ck_assert_uint_eq(out[2].npaths, 0);
}
END_TEST

/* Which QPs decide a path's state. */
static uint32_t state_of(bool busy1, enum efi_path_state s1, bool busy2, enum efi_path_state s2)
{
	struct efi_peer_table t;
	struct efi_countershm_peer out[EFI_CSHM_MAX_PEERS];
	uint32_t n, omitted;
	uint8_t a[16];
	struct efi_path p1 = path(1000, 1000, 1, 0, 0, 0, s1);
	struct efi_path p2 = path(1000, 1000, 1, 0, 0, 0, s2);

	addr_v4(a, 1);
	efi_peer_table_init(&t, 2);
	efi_peer_table_add(&t, a, &p1, 1, busy1);
	efi_peer_table_add(&t, a, &p2, 1, busy2);
	efi_peer_table_result(&t, out, &n, &omitted);
	efi_peer_table_fini(&t);
	ck_assert_uint_eq(n, 1);
	return out[0].path[0].state;
}

START_TEST(suspect_rule)
{
	const uint32_t A = EFI_CSHM_PATH_ACTIVE, S = EFI_CSHM_PATH_SUSPECT;
	/* a busy QP suspects it: suspect, whatever the others say */
	ck_assert_uint_eq(state_of(true, EFI_PATH_SUSPECT, true, EFI_PATH_ACTIVE), S);
	ck_assert_uint_eq(state_of(true, EFI_PATH_SUSPECT, false, EFI_PATH_ACTIVE), S);
	/* an idle QP's stale verdict is overruled by a busy QP's fresh one */
	ck_assert_uint_eq(state_of(false, EFI_PATH_SUSPECT, true, EFI_PATH_ACTIVE), A);
	/* nothing busy: the last verdict of any QP */
	ck_assert_uint_eq(state_of(false, EFI_PATH_SUSPECT, false, EFI_PATH_ACTIVE), S);
	ck_assert_uint_eq(state_of(false, EFI_PATH_ACTIVE, false, EFI_PATH_ACTIVE), A);
	ck_assert_uint_eq(state_of(true, EFI_PATH_ACTIVE, true, EFI_PATH_ACTIVE), A);
}
END_TEST

START_TEST(bounds_and_saturation)
{
	struct efi_peer_table t;
	struct efi_countershm_peer out[EFI_CSHM_MAX_PEERS];
	uint32_t n, omitted;
	uint8_t a[16];
	struct efi_path many[EFI_MAX_PATHS + 4];

	for (unsigned i = 0; i < EFI_MAX_PATHS + 4; i++)
		many[i] = path(1000, 1000, 3e6, 1, 0, 0, EFI_PATH_ACTIVE);
	addr_v4(a, 9);
	efi_peer_table_init(&t, 2);
	efi_peer_table_add(&t, a, many, EFI_MAX_PATHS + 4, true);
	efi_peer_table_add(&t, a, many, EFI_MAX_PATHS + 4, true);
	efi_peer_table_result(&t, out, &n, &omitted);
	efi_peer_table_fini(&t);
	ck_assert_uint_eq(out[0].npaths, EFI_CSHM_MAX_PATHS);
	ck_assert_uint_eq(out[0].path[0].cwnd_milli, UINT32_MAX);	/* 6e9 saturates */
	ck_assert_uint_eq(out[0].path[EFI_CSHM_MAX_PATHS - 1].retransmissions, 2);
}
END_TEST

/* Peers past the page's room: listed ones keep their place (and still
 * aggregate), the others are counted once per distinct address. */
START_TEST(overflow_counts_distinct_peers)
{
	struct efi_peer_table t;
	struct efi_countershm_peer out[EFI_CSHM_MAX_PEERS];
	uint32_t n, omitted;
	uint8_t a[16];
	struct efi_path p = path(1000, 1000, 1, 1, 0, 0, EFI_PATH_ACTIVE);
	const unsigned extra = 40;

	efi_peer_table_init(&t, 3 * (EFI_CSHM_MAX_PEERS + extra));
	for (int round = 0; round < 3; round++)	/* three QPs per peer */
		for (unsigned k = 0; k < EFI_CSHM_MAX_PEERS + extra; k++) {
			addr_n(a, k + 1);
			efi_peer_table_add(&t, a, &p, 1, false);
		}
	efi_peer_table_result(&t, out, &n, &omitted);
	efi_peer_table_fini(&t);
	ck_assert_uint_eq(n, EFI_CSHM_MAX_PEERS);
	ck_assert_uint_eq(omitted, extra);
	for (unsigned k = 0; k < EFI_CSHM_MAX_PEERS; k++) {
		addr_n(a, k + 1);
		ck_assert_int_eq(memcmp(out[k].addr, a, 16), 0);
		ck_assert_uint_eq(out[k].qps, 3);
		ck_assert_uint_eq(out[k].path[0].retransmissions, 3);
	}

	/* More QPs than the caller announced: the count may err high, never low. */
	efi_peer_table_init(&t, 0);
	for (int round = 0; round < 2; round++)
		for (unsigned k = 0; k < EFI_CSHM_MAX_PEERS + extra; k++) {
			addr_n(a, k + 1);
			efi_peer_table_add(&t, a, &p, 1, false);
		}
	efi_peer_table_result(&t, out, &n, &omitted);
	efi_peer_table_fini(&t);
	ck_assert_uint_eq(n, EFI_CSHM_MAX_PEERS);
	ck_assert_uint_ge(omitted, extra);
	ck_assert_uint_le(omitted, 2 * extra);
}
END_TEST

START_TEST(empty)
{
	struct efi_peer_table t;
	struct efi_countershm_peer out[EFI_CSHM_MAX_PEERS];
	uint32_t n = 99, omitted = 99;

	efi_peer_table_init(&t, 0);
	efi_peer_table_result(&t, out, &n, &omitted);
	efi_peer_table_fini(&t);
	ck_assert_uint_eq(n, 0);
	ck_assert_uint_eq(omitted, 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("peer_table");
	TCase *t = tcase_create("peer_table");
	SRunner *sr;
	int failed;

	tcase_add_test(t, groups_and_aggregates);
	tcase_add_test(t, suspect_rule);
	tcase_add_test(t, bounds_and_saturation);
	tcase_add_test(t, overflow_counts_distinct_peers);
	tcase_add_test(t, empty);
	suite_add_tcase(s, t);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
