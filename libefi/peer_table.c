/* SPDX-License-Identifier: MIT */
/*
 * The peer table of the counters page: see peer_table.h for the rules.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "peer_table.h"

void efi_peer_table_init(struct efi_peer_table *t, size_t qp_hint)
{
	memset(t, 0, sizeof(*t));
	t->qp_hint = qp_hint;
}

void efi_peer_table_fini(struct efi_peer_table *t)
{
	free(t->omit_set);
	t->omit_set = NULL;
	t->omit_cap = t->omit_used = 0;
}

static size_t addr_hash(const uint8_t addr[16])
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */
	for (int i = 0; i < 16; i++)
		h = (h ^ addr[i]) * 1099511628211ull;
	return (size_t)h;
}

static bool addr_is_zero(const uint8_t a[16])
{
	static const uint8_t zero[16];
	return memcmp(a, zero, 16) == 0;
}

/* Counts addr once among the peers that did not fit.  The set has room
 * for twice qp_hint addresses, so it only fills up when the caller fed
 * more QPs than it said; then (or without memory for the set) each further
 * QP counts as a peer: the count errs high, never low. */
static void note_omitted(struct efi_peer_table *t, const uint8_t addr[16])
{
	if (!t->omit_set && t->omit_cap == 0) {
		size_t cap = 16;
		while (cap < 2 * t->qp_hint && cap < ((size_t)1 << 20))
			cap *= 2;
		t->omit_set = calloc(cap, 16);
		t->omit_cap = t->omit_set ? cap : 1; /* 1: tried and failed */
	}
	/* The empty slot is all zeros: the unspecified address, never a peer,
	 * but count it anyway if it ever comes. */
	if (!t->omit_set || addr_is_zero(addr) || t->omit_used + 1 >= t->omit_cap) {
		t->omitted += t->omitted < UINT32_MAX;
		return;
	}
	size_t mask = t->omit_cap - 1;
	for (size_t i = addr_hash(addr) & mask;; i = (i + 1) & mask) {
		if (addr_is_zero(t->omit_set[i])) {
			memcpy(t->omit_set[i], addr, 16);
			t->omit_used++;
			t->omitted += t->omitted < UINT32_MAX;
			return;
		}
		if (memcmp(t->omit_set[i], addr, 16) == 0)
			return;
	}
}

static struct efi_peer_acc *find_or_add(struct efi_peer_table *t, const uint8_t addr[16])
{
	for (unsigned i = 0; i < t->npeers; i++)
		if (memcmp(t->peer[i].addr, addr, 16) == 0)
			return &t->peer[i];
	if (t->npeers == EFI_CSHM_MAX_PEERS)
		return NULL;
	struct efi_peer_acc *p = &t->peer[t->npeers++];
	memset(p, 0, sizeof(*p));
	memcpy(p->addr, addr, 16);
	return p;
}

void efi_peer_table_add(struct efi_peer_table *t, const uint8_t addr[16],
			const struct efi_path *paths, unsigned npaths, bool busy)
{
	struct efi_peer_acc *p = find_or_add(t, addr);

	if (!p) {
		note_omitted(t, addr);
		return;
	}
	p->qps++;
	p->busy_qps += busy;
	if (npaths > EFI_CSHM_MAX_PATHS)
		npaths = EFI_CSHM_MAX_PATHS;
	if (npaths > p->npaths)
		p->npaths = npaths;
	for (unsigned i = 0; i < npaths; i++) {
		const struct efi_path *q = &paths[i];
		struct efi_peer_path_acc *a = &p->path[i];
		if (q->rtt.min_ns && (!a->rtt_min_ns || q->rtt.min_ns < a->rtt_min_ns))
			a->rtt_min_ns = q->rtt.min_ns;
		if (q->rtt.samples) {
			a->srtt_sum_ns += q->rtt.srtt_ns;
			a->srtt_n++;
		}
		if (q->cc.cwnd > 0)
			a->cwnd_milli += (uint64_t)(q->cc.cwnd * 1000.0);
		a->retransmissions += q->retransmissions;
		a->suspected += q->suspected;
		a->restored += q->restored;
		if (q->state == EFI_PATH_SUSPECT) {
			a->suspect_any = true;
			a->suspect_busy |= busy;
		}
	}
}

static uint32_t sat32(uint64_t v)
{
	return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

/* Whole µs, rounded up: a measured RTT is never shown as 0 ("none"). */
static uint32_t ns_to_us(uint64_t ns)
{
	return sat32(ns / 1000 + (ns % 1000 != 0));
}

void efi_peer_table_result(const struct efi_peer_table *t,
			   struct efi_countershm_peer out[EFI_CSHM_MAX_PEERS], uint32_t *npeers,
			   uint32_t *omitted)
{
	memset(out, 0, EFI_CSHM_MAX_PEERS * sizeof(out[0]));
	for (unsigned k = 0; k < t->npeers; k++) {
		const struct efi_peer_acc *p = &t->peer[k];
		struct efi_countershm_peer *o = &out[k];
		memcpy(o->addr, p->addr, 16);
		o->qps = p->qps;
		o->npaths = p->npaths;
		for (unsigned i = 0; i < p->npaths; i++) {
			const struct efi_peer_path_acc *a = &p->path[i];
			struct efi_countershm_path *op = &o->path[i];
			bool suspect = p->busy_qps ? a->suspect_busy : a->suspect_any;
			op->state = suspect ? EFI_CSHM_PATH_SUSPECT : EFI_CSHM_PATH_ACTIVE;
			op->rtt_min_us = ns_to_us(a->rtt_min_ns);
			op->srtt_us = a->srtt_n ? ns_to_us(a->srtt_sum_ns / a->srtt_n) : 0;
			op->cwnd_milli = sat32(a->cwnd_milli);
			op->retransmissions = a->retransmissions;
			op->suspected = sat32(a->suspected);
			op->restored = sat32(a->restored);
		}
	}
	*npeers = t->npeers;
	*omitted = t->omitted;
}
