/* SPDX-License-Identifier: MIT */
/*
 * The responder's reorder buffer: request packets that arrive ahead of the
 * expected PSN (after a loss, or reordered by the fabric) are kept here
 * instead of being dropped, and acknowledged selectively (the SACK block of
 * docs/wire-format.md); when the missing packet arrives they are processed
 * in PSN order exactly as if they had arrived in order.  Buffering (a copy
 * of each early datagram) rather than placing early packets directly keeps
 * every ordering rule of verbs in one place, the in-order responder:
 * completions in posting order, a Send after a Write sees the Write, Reads
 * and atomics execute in order.  Only packets behind a hole pay the copy.
 *
 * A slot per PSN of the window [base + 1, base + EFI_REORDER_SLOTS).  A QP
 * whose requests arrive in order holds nothing but struct efi_reorder (a few
 * words): the slot table and the packet buffers are allocated when a packet
 * first arrives early, one buffer per packet held (a free list keeps those
 * a hole has given back), and all of it goes back when the buffer has been
 * empty while EFI_REORDER_CALM PSNs went by in order (issue 18: memory per
 * idle QP).  The hysteresis keeps a lossy stream, whose holes come and go,
 * from allocating and freeing per packet.  The bytes held count against a
 * budget the context shares among its QPs (EFI_REORDER_CTX_MAX); beyond it a
 * packet is not kept (ENOMEM: the responder drops it, as without a buffer).
 * A packet once stored is never discarded while the QP is connected (a SACK
 * is never reneged), so the requester never has to send a SACKed packet
 * again.
 */
#ifndef EFI_LIBEFI_REORDER_H
#define EFI_LIBEFI_REORDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "packet.h"

/* PSNs the buffer spans from the expected one.  More than a SACK block
 * describes (EFI_SACK_MAX_BITS): a requester that knows it (the responder's
 * ACKs say EFI_AETH_CREDITS_WIDE) keeps that many PSNs outstanding, a
 * bandwidth-delay product of 1.4 MiB at 1424-byte segments; what is held
 * beyond the SACK block's reach is reported once the expected PSN moves. */
#define EFI_REORDER_SLOTS	EFI_REORDER_WIDE
/* The largest datagram it keeps (a data packet of segment EFI_MAX_SEG and
 * its headers).  Each packet held takes a buffer of its own size (rounded
 * up, at least the largest it held lately), not of this one: a 1500-byte
 * link's packets do not take 9 KiB each. */
#define EFI_REORDER_PKT_MAX	(EFI_MAX_SEG + 256u)

/* Empty-buffer PSNs in order before the memory goes back (the hysteresis). */
#define EFI_REORDER_CALM	(4u * EFI_REORDER_SLOTS)
/* What the reorder buffers of one context may hold together, in bytes
 * allocated (packet buffers as large as they are, and slot tables). */
#define EFI_REORDER_CTX_MAX	((size_t)64 << 20)

struct efi_reorder_mem;			/* slot table and packet buffers (reorder.c) */

struct efi_reorder {
	struct efi_reorder_mem *m;	/* NULL: nothing arrived early lately */
	size_t *ctx_bytes;		/* the context's total (NULL: no budget) */
	size_t bytes;			/* what m and its buffers take */
	uint32_t count;			/* slots in use */
	uint32_t calm_base;		/* expected PSN when it was last seen empty */
	bool calm;			/* calm_base is valid */
	uint32_t empty_psn;		/* where a hole was last filled */
	bool emptied;			/* empty_psn is valid */
};

/* Keeps a copy of the datagram of PSN psn, base being the expected PSN.
 * Returns 0, EEXIST (already held: a duplicate), ERANGE (psn not in
 * (base, base + EFI_REORDER_SLOTS)), EMSGSIZE (datagram too long) or ENOMEM. */
int efi_reorder_store(struct efi_reorder *r, uint32_t base, uint32_t psn, const void *data, size_t len);

bool efi_reorder_has(const struct efi_reorder *r, uint32_t psn);

/* The stored datagram of psn (NULL if none). */
const uint8_t *efi_reorder_get(const struct efi_reorder *r, uint32_t psn, size_t *len);

/* Forgets psn's copy, and whatever older PSN's copy shares its slot. */
void efi_reorder_remove(struct efi_reorder *r, uint32_t psn);

/* Forgets the PSNs in [from, to) (the expected PSN jumped over them: a Read
 * takes several PSNs). */
void efi_reorder_remove_range(struct efi_reorder *r, uint32_t from, uint32_t to);

/* Empties the buffer (keeps the memory until calm); efi_reorder_free
 * releases it at once. */
void efi_reorder_clear(struct efi_reorder *r);
void efi_reorder_free(struct efi_reorder *r);

/* Fills a SACK block for expected PSN base: base_psn = base, bit k = PSN
 * base + k held, for k below EFI_SACK_MAX_BITS.  Returns false (nothing filled) when nothing is held.
 * Called with every ACK the responder sends, it is also where the memory of
 * a buffer that stayed empty for EFI_REORDER_CALM PSNs goes back. */
bool efi_reorder_sack(struct efi_reorder *r, uint32_t base, struct efi_pkt *ack);

/* Bytes the buffer holds now (0 when it holds no memory). */
size_t efi_reorder_bytes(const struct efi_reorder *r);

#endif
