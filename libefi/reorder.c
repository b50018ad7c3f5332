/* SPDX-License-Identifier: MIT */
/* The responder's reorder buffer (reorder.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "reorder.h"

/* A packet buffer: its capacity, then the datagram. */
struct rbuf {
	uint32_t cap;
	uint8_t data[];
};

/* Allocated at the first early packet, freed when calm (reorder.h). */
struct efi_reorder_mem {
	struct rbuf *pkt[EFI_REORDER_SLOTS];	/* a buffer, or NULL */
	uint16_t len[EFI_REORDER_SLOTS];
	uint32_t psn[EFI_REORDER_SLOTS];	/* which PSN a slot holds: a slot is reused
						 * every EFI_REORDER_SLOTS PSNs, and a copy
						 * left behind must never pass for a later one */
	uint64_t bits[EFI_REORDER_SLOTS / 64];	/* by psn % EFI_REORDER_SLOTS */
	struct rbuf *spare[EFI_REORDER_SLOTS];	/* buffers given back, to be taken again */
	unsigned nspare;
	uint32_t want;				/* the largest datagram held since allocated */
};

/* The bytes a buffer of capacity cap takes (what the budget counts). */
static size_t rbuf_size(uint32_t cap)
{
	return sizeof(struct rbuf) + cap;
}

static unsigned slot(uint32_t psn)
{
	return psn % EFI_REORDER_SLOTS;
}

static bool slot_used(const struct efi_reorder_mem *m, unsigned s)
{
	return m->bits[s / 64] >> (s % 64) & 1;
}

/* Charges (or, n negative, credits) the QP and its context. */
static bool charge(struct efi_reorder *r, size_t n)
{
	if (r->ctx_bytes && *r->ctx_bytes + n > EFI_REORDER_CTX_MAX)
		return false;
	r->bytes += n;
	if (r->ctx_bytes)
		*r->ctx_bytes += n;
	return true;
}

static void credit(struct efi_reorder *r, size_t n)
{
	r->bytes -= n;
	if (r->ctx_bytes)
		*r->ctx_bytes -= n;
}

/* Slot s gives its buffer to the spare list. */
static void slot_release(struct efi_reorder_mem *m, unsigned s)
{
	struct rbuf *b = m->pkt[s];

	m->bits[s / 64] &= ~(UINT64_C(1) << (s % 64));
	if (!b)
		return;
	m->spare[m->nspare++] = b;	/* one buffer per slot: never more than fit */
	m->pkt[s] = NULL;
}

bool efi_reorder_has(const struct efi_reorder *r, uint32_t psn)
{
	unsigned s = slot(psn);
	return r->count && r->m && slot_used(r->m, s) && r->m->psn[s] == psn;
}

int efi_reorder_store(struct efi_reorder *r, uint32_t base, uint32_t psn, const void *data, size_t len)
{
	int32_t d = efi_psn_diff(psn, base);
	unsigned s = slot(psn);
	struct efi_reorder_mem *m;

	if (d <= 0 || d >= (int32_t)EFI_REORDER_SLOTS)
		return ERANGE;
	if (len > EFI_REORDER_PKT_MAX)
		return EMSGSIZE;
	if (efi_reorder_has(r, psn))
		return EEXIST;
	r->calm = false;
	if (!r->m) {
		if (!charge(r, sizeof(*r->m)))
			return ENOMEM;
		if (!(r->m = calloc(1, sizeof(*r->m)))) {
			credit(r, sizeof(*r->m));
			return ENOMEM;
		}
	}
	m = r->m;
	if (!m->pkt[s] && m->nspare)
		m->pkt[s] = m->spare[--m->nspare];
	/* A slot still holding an older PSN (a copy of a packet that was
	 * taken in order from another arrival) is simply overwritten, if its
	 * buffer is large enough. */
	if (m->pkt[s] && m->pkt[s]->cap < len) {
		credit(r, rbuf_size(m->pkt[s]->cap));
		free(m->pkt[s]);
		m->pkt[s] = NULL;
	}
	if (!m->pkt[s]) {
		/* as large as the largest held lately, so that a short LAST
		 * packet's buffer does not have to be replaced for the next
		 * full one; rounded to the allocator's granule */
		uint32_t cap;

		if (m->want < len)
			m->want = (uint32_t)len;
		cap = (m->want + 63u) & ~63u;
		if (!charge(r, rbuf_size(cap)))
			return ENOMEM;
		if (!(m->pkt[s] = malloc(rbuf_size(cap)))) {
			credit(r, rbuf_size(cap));
			return ENOMEM;
		}
		m->pkt[s]->cap = cap;
	}
	memcpy(m->pkt[s]->data, data, len);
	m->len[s] = (uint16_t)len;
	m->psn[s] = psn;
	if (!slot_used(m, s)) {
		m->bits[s / 64] |= UINT64_C(1) << (s % 64);
		r->count++;
	}
	return 0;
}

const uint8_t *efi_reorder_get(const struct efi_reorder *r, uint32_t psn, size_t *len)
{
	unsigned s = slot(psn);

	if (!efi_reorder_has(r, psn))
		return NULL;
	*len = r->m->len[s];
	return r->m->pkt[s]->data;
}

void efi_reorder_remove(struct efi_reorder *r, uint32_t psn)
{
	unsigned s = slot(psn);

	if (!r->count || !r->m || !slot_used(r->m, s))
		return;
	/* psn's copy, or one of an older PSN nobody will ask for again */
	if (r->m->psn[s] != psn && efi_psn_diff(r->m->psn[s], psn) > 0)
		return;	/* a later PSN's: keep it */
	slot_release(r->m, s);
	if (--r->count)
		return;
	/* The hole is filled.  An episode long after the last one (or the
	 * first) gives the memory back at once; one soon after it keeps it
	 * (a lossy stream: holes come and go), until efi_reorder_sack sees
	 * the buffer empty for EFI_REORDER_CALM PSNs. */
	int32_t since = efi_psn_diff(psn, r->empty_psn);
	bool keep = r->emptied && since >= 0 && since < (int32_t)EFI_REORDER_CALM;

	r->emptied = true;
	r->empty_psn = psn;
	if (!keep)
		efi_reorder_free(r);
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
	if (r->m)
		for (unsigned s = 0; s < EFI_REORDER_SLOTS; s++)
			if (slot_used(r->m, s))
				slot_release(r->m, s);
	r->count = 0;
}

void efi_reorder_free(struct efi_reorder *r)
{
	struct efi_reorder_mem *m = r->m;

	if (m) {
		efi_reorder_clear(r);
		while (m->nspare) {
			struct rbuf *b = m->spare[--m->nspare];

			credit(r, rbuf_size(b->cap));
			free(b);
		}
		free(m);
		credit(r, sizeof(*m));
		r->m = NULL;
	}
	r->count = 0;
	r->calm = false;
}

size_t efi_reorder_bytes(const struct efi_reorder *r)
{
	return r->bytes;
}

/* Nothing held for base: the memory goes back once the buffer has been
 * empty for EFI_REORDER_CALM PSNs (or the PSNs went back: a reset). */
static void calm(struct efi_reorder *r, uint32_t base)
{
	int32_t d;

	if (r->count)	/* only copies of PSNs already taken: nobody asks for them */
		efi_reorder_clear(r);
	if (!r->m)
		return;
	if (!r->calm) {
		r->calm = true;
		r->calm_base = base;
		return;
	}
	d = efi_psn_diff(base, r->calm_base);
	if (d < 0 || d >= (int32_t)EFI_REORDER_CALM)
		efi_reorder_free(r);
}

bool efi_reorder_sack(struct efi_reorder *r, uint32_t base, struct efi_pkt *ack)
{
	unsigned top = 0;

	if (!r->count) {
		calm(r, base);
		return false;
	}
	memset(ack->sack.bitmap, 0, sizeof(ack->sack.bitmap));
	for (unsigned k = 1; k < EFI_SACK_MAX_BITS; k++) {
		if (efi_reorder_has(r, efi_psn_add(base, k))) {
			ack->sack.bitmap[k / 8] |= (uint8_t)(1u << (k % 8));
			top = k;
		}
	}
	if (!top) {
		/* Held further ahead than a SACK block reaches (a wide
		 * window): kept, never dropped (no reneging), only not
		 * reported yet. */
		for (unsigned k = EFI_SACK_MAX_BITS; k < EFI_REORDER_SLOTS; k++)
			if (efi_reorder_has(r, efi_psn_add(base, k)))
				return false;
		calm(r, base);
		return false;
	}
	ack->sack.base_psn = base;
	ack->sack.nbits = (uint16_t)(top + 1);
	ack->hdrs |= EFI_HDR_SACK;
	return true;
}
