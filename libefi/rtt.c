/* SPDX-License-Identifier: MIT */
/* RTT estimation (rtt.h). */
#include "rtt.h"

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
