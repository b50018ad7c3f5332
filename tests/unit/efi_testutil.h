/* SPDX-License-Identifier: MIT */
/*
 * Test helpers for libefi: an in-memory wire (two ends joined by queues, with
 * optional loss/duplication/reordering of its own so the tests do not depend
 * on the fault injector), two contexts over it, and QP connection.
 */
#ifndef EFI_TESTUTIL_H
#define EFI_TESTUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <efi/efi.h>

#include "libefi/wire.h"

struct tw_fault {
	double loss, dup, reorder;
	uint64_t seed;
};

/* Two joined wire ends; a receives what b sends (as from addr_b) and vice
 * versa.  fault (may be NULL) applies to what both ends send. */
void tw_pair_create(struct efi_wire **a, struct efi_wire **b, const union efi_gid *addr_a,
		    const union efi_gid *addr_b, const struct tw_fault *fault);
/* Raw access for tests acting as a peer: push a datagram into an end's
 * receive queue as if sent by the other side, or take one the end sent. */
void tw_inject(struct efi_wire *to, const void *buf, uint32_t len);
int tw_take(struct efi_wire *from_peer_of, void *buf, uint32_t cap);

struct tpair {
	struct efi_context *ctx[2];
	struct efi_pd *pd[2];
	struct efi_cq *cq[2];
	struct efi_qp *qp[2];
};

/* Contexts 0 (GID ::ffff:10.0.0.1, QPNs 0x1000…) and 1 (::ffff:10.0.0.2,
 * QPNs 0x2000…) over an in-memory wire with link MTU link_mtu. */
void tpair_open(struct tpair *t, uint32_t link_mtu, const struct tw_fault *fault);
/* The same with nlanes lanes (QPs have that many paths; the in-memory wire
 * carries them all alike, responses echo the path of their request). */
void tpair_open_lanes(struct tpair *t, uint32_t link_mtu, const struct tw_fault *fault, unsigned nlanes);
/* The same with links of different MTUs: context 0's mtu0, context 1's mtu1. */
void tpair_open_mtus(struct tpair *t, uint32_t mtu0, uint32_t mtu1, const struct tw_fault *fault);
/* Both: links of mtu0 and mtu1, nlanes lanes (0: the default). */
void tpair_open_opts(struct tpair *t, uint32_t mtu0, uint32_t mtu1, const struct tw_fault *fault, unsigned nlanes);
/* Creates one QP per side (caps from cap, sq_sig_all) and connects them. */
void tpair_connect(struct tpair *t, const struct efi_qp_cap *cap, int sq_sig_all,
		   uint8_t rnr_retry, uint8_t min_rnr_timer, uint8_t timeout, uint8_t retry_cnt);
void tpair_close(struct tpair *t);

/* Brings a QP to RTS against remote QPN dest with the given GID. */
int tqp_to_rts(struct efi_qp *qp, uint32_t dest, const union efi_gid *dgid, uint32_t my_psn,
	       uint32_t peer_psn, uint8_t rnr_retry, uint8_t min_rnr_timer, uint8_t timeout,
	       uint8_t retry_cnt, enum efi_mtu mtu);

/* Polls cq until n completions arrived or ms passed; returns how many. */
int tpoll(struct efi_cq *cq, struct efi_wc *wc, int n, int ms);

void tgid_v4(union efi_gid *g, uint8_t a, uint8_t b, uint8_t c, uint8_t d);

/* Registers [buf, buf + len) with access (asserts it worked). */
struct efi_mr *treg(struct efi_pd *pd, void *buf, size_t len, int access);
/* One signaled send WR of op over one SGE (Write/Read: to raddr/rkey);
 * efi_post_send's result. */
int tpost_send1(struct efi_qp *qp, enum efi_wr_opcode op, uint64_t id, void *buf, uint32_t len,
		const struct efi_mr *mr, uint64_t raddr, uint32_t rkey);
/* The same with send_flags (SIGNALED is added) and an immediate (network
 * order, as efi_send_wr carries it); mr may be NULL (lkey 0). */
int tpost_send1_ex(struct efi_qp *qp, enum efi_wr_opcode op, uint64_t id, void *buf, uint32_t len,
		   const struct efi_mr *mr, uint64_t raddr, uint32_t rkey, unsigned flags, uint32_t imm);
/* 256 send and receive WRs, 16 SGEs each, 256 bytes inline. */
extern const struct efi_qp_cap tcap_default;
/* Registers [buf, buf + len) for local write and every remote access. */
struct efi_mr *treg_all(struct efi_pd *pd, void *buf, size_t len);
/* len bytes (at least one allocated) of a pseudo-random pattern of seed;
 * the caller frees them. */
uint8_t *tpattern(size_t len, unsigned seed);
/* Polls cq (30 s at most) for one completion, asserts its status st and
 * wr_id id, and copies it to out (may be NULL).  On a wrong status the
 * counters of texpect_qp and texpect_peer (when set) go to stderr first. */
extern struct efi_qp *texpect_qp, *texpect_peer;
void texpect_wc(struct efi_cq *cq, enum efi_wc_status st, uint64_t id, struct efi_wc *out);
/* Posts one receive of len bytes at buf (asserts it was taken). */
void tpost_recv1(struct efi_qp *qp, uint64_t id, void *buf, uint32_t len, const struct efi_mr *mr);

#endif
