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
 * A slot per PSN of the window [base + 1, base + EFI_REORDER_SLOTS); the
 * memory is allocated at the first early packet.  A packet once stored is
 * never discarded while the QP is connected (a SACK is never reneged), so
 * the requester never has to send a SACKed packet again.
 */
#ifndef EFI_LIBEFI_REORDER_H
#define EFI_LIBEFI_REORDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "packet.h"

/* PSNs the buffer spans from the expected one (= the SACK block's bits). */
#define EFI_REORDER_SLOTS	EFI_SACK_MAX_BITS
/* The largest datagram it keeps (a data packet of path MTU 4096). */
#define EFI_REORDER_PKT_MAX	(4096u + 256u)

struct efi_reorder {
	uint8_t *buf;			/* EFI_REORDER_SLOTS × EFI_REORDER_PKT_MAX, or NULL */
	uint16_t len[EFI_REORDER_SLOTS];
	uint32_t psn[EFI_REORDER_SLOTS];	/* which PSN a slot holds: a slot is reused
						 * every EFI_REORDER_SLOTS PSNs, and a copy
						 * left behind must never pass for a later one */
	uint64_t bits[EFI_REORDER_SLOTS / 64];	/* by psn % EFI_REORDER_SLOTS */
	uint32_t count;
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

/* Empties the buffer (keeps the memory); efi_reorder_free releases it. */
void efi_reorder_clear(struct efi_reorder *r);
void efi_reorder_free(struct efi_reorder *r);

/* Fills a SACK block for expected PSN base: base_psn = base, bit k = PSN
 * base + k held.  Returns false (nothing filled) when nothing is held. */
bool efi_reorder_sack(const struct efi_reorder *r, uint32_t base, struct efi_pkt *ack);

#endif
