/* SPDX-License-Identifier: MIT */
/* The responder's reorder buffer (reorder.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "reorder.h"

static unsigned slot(uint32_t psn)
{
	return psn % EFI_REORDER_SLOTS;
}

static bool slot_used(const struct efi_reorder *r, unsigned s)
{
	return r->bits[s / 64] >> (s % 64) & 1;
}

bool efi_reorder_has(const struct efi_reorder *r, uint32_t psn)
{
	unsigned s = slot(psn);
	return r->count && slot_used(r, s) && r->psn[s] == psn;
}

int efi_reorder_store(struct efi_reorder *r, uint32_t base, uint32_t psn, const void *data, size_t len)
{
	int32_t d = efi_psn_diff(psn, base);
	unsigned s = slot(psn);

	if (d <= 0 || d >= (int32_t)EFI_REORDER_SLOTS)
		return ERANGE;
	if (len > EFI_REORDER_PKT_MAX)
		return EMSGSIZE;
	if (efi_reorder_has(r, psn))
		return EEXIST;
	if (!r->buf && !(r->buf = malloc((size_t)EFI_REORDER_SLOTS * EFI_REORDER_PKT_MAX)))
		return ENOMEM;
	memcpy(r->buf + (size_t)s * EFI_REORDER_PKT_MAX, data, len);
	r->len[s] = (uint16_t)len;
	r->psn[s] = psn;
	/* A slot still holding an older PSN (a copy of a packet that was
	 * taken in order from another arrival) is simply overwritten. */
	if (!slot_used(r, s)) {
		r->bits[s / 64] |= UINT64_C(1) << (s % 64);
		r->count++;
	}
	return 0;
}

const uint8_t *efi_reorder_get(const struct efi_reorder *r, uint32_t psn, size_t *len)
{
	unsigned s = slot(psn);

	if (!efi_reorder_has(r, psn))
		return NULL;
	*len = r->len[s];
	return r->buf + (size_t)s * EFI_REORDER_PKT_MAX;
}

void efi_reorder_remove(struct efi_reorder *r, uint32_t psn)
{
	unsigned s = slot(psn);

	if (!r->count || !slot_used(r, s))
		return;
	/* psn's copy, or one of an older PSN nobody will ask for again */
	if (r->psn[s] != psn && efi_psn_diff(r->psn[s], psn) > 0)
		return;	/* a later PSN's: keep it */
	r->bits[s / 64] &= ~(UINT64_C(1) << (s % 64));
	r->count--;
}

void efi_reorder_remove_range(struct efi_reorder *r, uint32_t from, uint32_t to)
{
	int32_t n = efi_psn_diff(to, from);

	if (n > (int32_t)EFI_REORDER_SLOTS)
		n = EFI_REORDER_SLOTS;
	for (int32_t i = 0; i < n && r->count; i++)
		efi_reorder_remove(r, efi_psn_add(from, (uint32_t)i));
}

void efi_reorder_clear(struct efi_reorder *r)
{
	memset(r->bits, 0, sizeof(r->bits));
	r->count = 0;
}

void efi_reorder_free(struct efi_reorder *r)
{
	free(r->buf);
	r->buf = NULL;
	efi_reorder_clear(r);
}

bool efi_reorder_sack(const struct efi_reorder *r, uint32_t base, struct efi_pkt *ack)
{
	unsigned top = 0;

	if (!r->count)
		return false;
	memset(ack->sack.bitmap, 0, sizeof(ack->sack.bitmap));
	for (unsigned k = 1; k < EFI_REORDER_SLOTS; k++) {
		if (efi_reorder_has(r, efi_psn_add(base, k))) {
			ack->sack.bitmap[k / 8] |= (uint8_t)(1u << (k % 8));
			top = k;
		}
	}
	if (!top)
		return false;
	ack->sack.base_psn = base;
	ack->sack.nbits = (uint16_t)(top + 1);
	ack->hdrs |= EFI_HDR_SACK;
	return true;
}
