/* SPDX-License-Identifier: MIT */
/*
 * The blocks wire of libefi/qpn_blocks.c over loopback UDP wires (one
 * socket per block): a datagram on lane 8b + L leaves from block b's socket
 * (the source port a peer's keyless check wants), datagrams arriving at any
 * block come out of one receive with their block's lanes, the poll
 * descriptor wakes for a block added after it was first polled, a lane of a
 * block that does not exist is dropped without reaching any socket, and a
 * seventeenth block is refused with nothing changed.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libefi/efi_int.h"
#include "tests/unit/wire_testutil.h"

enum { NB = 3 };

struct rig {
	struct efi_wire *blocks;
	uint16_t port[NB];	/* block b's (only) lane */
	struct efi_wire *peer;	/* a plain wire on the other end */
	uint16_t peer_port;
};

static void rig_init(struct rig *r)
{
	r->blocks = efi_wire_blocks_create(udp_wire("::1", &r->port[0]));
	ck_assert_ptr_nonnull(r->blocks);
	for (unsigned b = 1; b < NB; b++)
		ck_assert_int_eq(efi_wire_blocks_add(r->blocks, udp_wire("::1", &r->port[b])), 0);
	r->peer = udp_wire("::1", &r->peer_port);
}

static void rig_free(struct rig *r)
{
	efi_wire_destroy(r->blocks);
	efi_wire_destroy(r->peer);
}

START_TEST(send_leaves_from_the_lanes_block)
{
	struct rig r;
	struct efi_wire_pkt *tx = alloc_pkts(6, 64), *rx = alloc_pkts(6, 64);
	unsigned got, from[NB] = { 0 };

	rig_init(&r);
	/* two per block, the blocks interleaved: runs of one block each */
	for (unsigned i = 0; i < 6; i++) {
		tx[i].len = 16;
		fill(tx[i].buf, 16, i);
		tx[i].peer = addr6("::1", r.peer_port);
		tx[i].lane = (uint8_t)((i % NB) * EFI_WIRE_MAX_LANES);
	}
	ck_assert_int_eq(efi_wire_send(r.blocks, tx, 6), 6);
	for (unsigned i = 0; i < 6; i++)	/* the caller's lanes are left as they were */
		ck_assert_uint_eq(tx[i].lane, (i % NB) * EFI_WIRE_MAX_LANES);
	got = recv_all(r.peer, rx, 6);
	ck_assert_uint_eq(got, 6);
	for (unsigned i = 0; i < got; i++) {
		uint32_t seq;
		ck_assert(check_fill(rx[i].buf, rx[i].len, &seq));
		ck_assert_uint_eq(ntohs(rx[i].peer.sin6_port), r.port[seq % NB]);
		from[seq % NB]++;
	}
	for (unsigned b = 0; b < NB; b++)
		ck_assert_uint_eq(from[b], 2);
	free_pkts(tx, 6);
	free_pkts(rx, 6);
	rig_free(&r);
}
END_TEST

START_TEST(recv_gathers_every_block)
{
	struct rig r;
	struct efi_wire_pkt *tx = alloc_pkts(1, 64), *rx = alloc_pkts(3 * NB, 64);
	struct pollfd pf;
	unsigned got, seen[NB] = { 0 };

	rig_init(&r);
	/* nothing yet: the poll descriptor is quiet */
	pf = (struct pollfd){ .fd = efi_wire_fd(r.blocks), .events = POLLIN };
	ck_assert_int_eq(poll(&pf, 1, 0), 0);
	for (unsigned i = 0; i < 3 * NB; i++) {
		tx[0].len = 16;
		fill(tx[0].buf, 16, i);
		tx[0].peer = addr6("::1", r.port[i % NB]);
		tx[0].lane = 0;
		ck_assert_int_eq(efi_wire_send(r.peer, tx, 1), 1);
	}
	ck_assert(wait_readable(r.blocks, 1000));
	got = recv_all(r.blocks, rx, 3 * NB);
	ck_assert_uint_eq(got, 3 * NB);
	for (unsigned i = 0; i < got; i++) {
		uint32_t seq;
		ck_assert(check_fill(rx[i].buf, rx[i].len, &seq));
		/* arrived at block seq % NB: its lane 0 */
		ck_assert_uint_eq(rx[i].lane, (seq % NB) * EFI_WIRE_MAX_LANES);
		ck_assert_uint_eq(ntohs(rx[i].peer.sin6_port), r.peer_port);
		seen[seq % NB]++;
	}
	for (unsigned b = 0; b < NB; b++)
		ck_assert_uint_eq(seen[b], 3);
	ck_assert_int_eq(poll(&pf, 1, 0), 0);	/* all taken */
	free_pkts(tx, 1);
	free_pkts(rx, 3 * NB);
	rig_free(&r);
}
END_TEST

START_TEST(a_block_added_later_wakes_the_poller)
{
	uint16_t p0, p1, pp;
	struct efi_wire *blocks = efi_wire_blocks_create(udp_wire("::1", &p0));
	struct efi_wire *peer = udp_wire("::1", &pp);
	struct efi_wire_pkt *tx = alloc_pkts(1, 64), *rx = alloc_pkts(1, 64);
	int fd = efi_wire_fd(blocks);

	ck_assert_ptr_nonnull(blocks);
	/* one block: the same descriptor as the context will keep */
	ck_assert_int_eq(efi_wire_blocks_add(blocks, udp_wire("::1", &p1)), 0);
	ck_assert_int_eq(efi_wire_fd(blocks), fd);
	tx[0].len = 8;
	fill(tx[0].buf, 8, 7);
	tx[0].peer = addr6("::1", p1);
	ck_assert_int_eq(efi_wire_send(peer, tx, 1), 1);
	ck_assert(wait_readable(blocks, 1000));
	ck_assert_uint_eq(recv_all(blocks, rx, 1), 1);
	ck_assert_uint_eq(rx[0].lane, EFI_WIRE_MAX_LANES);
	free_pkts(tx, 1);
	free_pkts(rx, 1);
	efi_wire_destroy(blocks);
	efi_wire_destroy(peer);
}
END_TEST

START_TEST(no_such_block)
{
	struct rig r;
	struct efi_wire_pkt *tx = alloc_pkts(2, 64);
	struct pollfd pf;

	rig_init(&r);
	/* a lane of block NB (absent): consumed and dropped; then block 0's */
	for (unsigned i = 0; i < 2; i++) {
		tx[i].len = 8;
		fill(tx[i].buf, 8, i);
		tx[i].peer = addr6("::1", r.peer_port);
	}
	tx[0].lane = NB * EFI_WIRE_MAX_LANES;
	tx[1].lane = 0;
	ck_assert_int_eq(efi_wire_send(r.blocks, tx, 2), 2);
	ck_assert(wait_readable(r.peer, 1000));
	struct efi_wire_pkt *rx = alloc_pkts(2, 64);
	ck_assert_int_eq(wire_recv_copy(r.peer, rx, 2), 1);
	uint32_t seq;
	ck_assert(check_fill(rx[0].buf, rx[0].len, &seq));
	ck_assert_uint_eq(seq, 1);
	pf = (struct pollfd){ .fd = efi_wire_fd(r.peer), .events = POLLIN };
	ck_assert_int_eq(poll(&pf, 1, 50), 0);
	free_pkts(tx, 2);
	free_pkts(rx, 2);
	rig_free(&r);
}
END_TEST

START_TEST(seventeenth_block_refused)
{
	uint16_t port;
	struct efi_wire *blocks = efi_wire_blocks_create(udp_wire("::1", &port)), *extra;

	for (unsigned b = 1; b < EFI_MAX_BLOCKS; b++)
		ck_assert_int_eq(efi_wire_blocks_add(blocks, udp_wire("::1", &port)), 0);
	extra = udp_wire("::1", &port);
	ck_assert_int_eq(efi_wire_blocks_add(blocks, extra), ENOSPC);
	efi_wire_destroy(extra);	/* still ours */
	efi_wire_destroy(blocks);
	ck_assert_ptr_null(efi_wire_blocks_create(NULL));
	ck_assert_int_eq(errno, EINVAL);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("qpn_blocks");
	TCase *tc = tcase_create("blocks wire");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, send_leaves_from_the_lanes_block);
	tcase_add_test(tc, recv_gathers_every_block);
	tcase_add_test(tc, a_block_added_later_wakes_the_poller);
	tcase_add_test(tc, no_such_block);
	tcase_add_test(tc, seventeenth_block_refused);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
