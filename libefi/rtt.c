/* SPDX-License-Identifier: MIT */
/* RTT estimation (rtt.h). */
#include "rtt.h"

#include <stdlib.h>
#include <string.h>

void efi_rtt_sample(struct efi_rtt *r, uint64_t s)
{
	if (s == 0)
		return;
	r->last_ns = s;
	if (r->samples++ == 0) {
		r->min_ns = r->srtt_ns = s;
		r->rttvar_ns = s / 2;
		return;
	}
	if (s < r->min_ns)
		r->min_ns = s;
	uint64_t dev = s > r->srtt_ns ? s - r->srtt_ns : r->srtt_ns - s;
	/* rttvar += (dev − rttvar) / 4; srtt += (s − srtt) / 8, in unsigned
	 * arithmetic without underflow. */
	r->rttvar_ns = r->rttvar_ns - r->rttvar_ns / 4 + dev / 4;
	r->srtt_ns = r->srtt_ns - r->srtt_ns / 8 + s / 8;
}

uint64_t efi_rtt_rto(const struct efi_rtt *r, uint64_t floor_ns, uint64_t cap_ns, uint64_t initial_ns)
{
	uint64_t rto = r->samples ? r->srtt_ns + 4 * r->rttvar_ns : initial_ns;

	if (rto < floor_ns)
		rto = floor_ns;
	if (cap_ns && rto > cap_ns)
		rto = cap_ns;
	return rto;
}

static size_t addr_hash(const uint8_t addr[16])
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */
	for (int i = 0; i < 16; i++)
		h = (h ^ addr[i]) * 1099511628211ull;
	return (size_t)(h ^ (h >> 29));
}

struct efi_rtt_peer *efi_rtt_peer_find(struct efi_rtt_peers *t, const uint8_t addr[16], bool create)
{
	size_t i = addr_hash(addr);

	if (!t->slot)
		return NULL;
	for (unsigned k = 0; k < EFI_RTT_PEER_PROBES; k++, i++) {
		struct efi_rtt_peer *p = &t->slot[i & (EFI_RTT_PEER_SLOTS - 1)];
		if (!p->used) {
			if (!create)
				return NULL;
			p->used = true;
			memcpy(p->addr, addr, 16);
			return p;
		}
		if (memcmp(p->addr, addr, 16) == 0)
			return p;
	}
	return NULL;
}

void efi_rtt_peers_alloc(struct efi_rtt_peers *t)
{
	if (!t->slot)
		t->slot = calloc(EFI_RTT_PEER_SLOTS, sizeof(*t->slot));
}

void efi_rtt_peers_free(struct efi_rtt_peers *t)
{
	free(t->slot);
	t->slot = NULL;
}
