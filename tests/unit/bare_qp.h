/* SPDX-License-Identifier: MIT */
/*
 * A bare QP for the requester's scoreboard (libefi/retx.c) without a wire:
 * a context and a QP with send records and retx state only, packets "sent"
 * by hand and responses (ACKs with SACK blocks) fed in directly.  Shared
 * by test_sack.c and test_wide_window.c; header-only, so each test takes
 * what it uses.
 */
#ifndef EFI_TEST_BARE_QP_H
#define EFI_TEST_BARE_QP_H

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "libefi/efi_int.h"

struct bare {
	struct efi_context_int ctx;
	struct efi_qp_int qp;
};

static inline struct bare *bare_new(uint64_t now)
{
	struct bare *b = calloc(1, sizeof(*b));
	ck_assert_ptr_nonnull(b);
	efi_cc_params_default(&b->ctx.ccp);
	b->ctx.ccp.init_cwnd = 64;
	b->qp.ctx = &b->ctx;
	b->qp.txrec = calloc(EFI_TXREC_SLOTS, sizeof(*b->qp.txrec));
	ck_assert_ptr_nonnull(b->qp.txrec);
	b->qp.snd_una = b->qp.snd_nxt = b->qp.snd_max = 1000;
	efi_retx_init(&b->qp, now);
	return b;
}

static inline void bare_free(struct bare *b)
{
	free(b->qp.txrec);
	free(b);
}

/* Sends PSN psn (one packet) at time t on the QP's current path. */
static inline void send_one(struct efi_qp_int *qp, uint32_t psn, uint64_t t)
{
	struct efi_txrec *r = &qp->txrec[psn & (EFI_TXREC_SLOTS - 1)];
	if (r->psn != psn || !r->tx_ns) {
		memset(r, 0, sizeof(*r));
		r->psn = psn;
	}
	r->tx_ns = t;
	r->npsn = 1;
	efi_retx_on_send(qp, r, t);
	if (psn == qp->snd_nxt)
		qp->snd_nxt = efi_psn_add(psn, 1);
	if (efi_psn_after(qp->snd_nxt, qp->snd_max))
		qp->snd_max = qp->snd_nxt;
}

/* A response on path: everything before una acknowledged, the PSNs in
 * sacked[] SACKed, echoing the send time echo, arriving at now. */
static inline void answer_sack_on(struct efi_qp_int *qp, unsigned path, uint32_t una, const uint32_t *sacked, unsigned n,
			   uint64_t echo, uint64_t now)
{
	struct efi_pkt p;
	uint32_t old = qp->snd_una;

	memset(&p, 0, sizeof(p));
	p.opcode = EFI_OP_ACK;
	p.hdrs = EFI_HDR_AETH;
	p.path = (uint8_t)path;
	p.psn = efi_psn_add(una, EFI_PSN_MASK);
	p.ts_echo = echo;
	if (n) {
		p.hdrs |= EFI_HDR_SACK;
		p.sack.base_psn = una;
		for (unsigned i = 0; i < n; i++) {
			unsigned k = (unsigned)efi_psn_diff(sacked[i], una);
			p.sack.bitmap[k / 8] |= (uint8_t)(1u << (k % 8));
			if (k + 1 > p.sack.nbits)
				p.sack.nbits = (uint16_t)(k + 1);
		}
	}
	qp->snd_una = una;
	if (efi_psn_after(una, old))
		efi_retx_acked(qp, old, una);
	efi_retx_sack(qp, &p);
	efi_retx_after_response(qp, &p, now);
}

/* The same on path 0. */
static inline void ack(struct efi_qp_int *qp, uint32_t una, const uint32_t *sacked, unsigned n, uint64_t echo,
		uint64_t now)
{
	answer_sack_on(qp, 0, una, sacked, n, echo, now);
}

static inline uint8_t state(struct efi_qp_int *qp, uint32_t psn)
{
	return qp->txrec[psn & (EFI_TXREC_SLOTS - 1)].state;
}

#endif
