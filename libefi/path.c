/* SPDX-License-Identifier: MIT */
/* Per-path state and health (path.h). */
#include <string.h>

#include "path.h"

void efi_path_init(struct efi_path *p, const struct efi_cc_params *cp, uint64_t now)
{
	memset(p, 0, sizeof(*p));
	efi_cc_init(&p->cc, cp);
	p->state = EFI_PATH_ACTIVE;
	p->last_ack_ns = p->quiet_since_ns = now;
}

uint64_t efi_path_suspect_after_ns(const struct efi_path *p, const struct efi_cc_params *cp)
{
	uint64_t t = cp->suspect_rtts * efi_rtt_srtt(&p->rtt, cp->suspect_min_ns);

	if (t < cp->suspect_min_ns)
		t = cp->suspect_min_ns;
	if (t > cp->suspect_max_ns)
		t = cp->suspect_max_ns;
	return t;
}

void efi_path_on_send(struct efi_path *p, uint32_t weight, uint64_t now)
{
	if (!p->inflight && !p->loss_unanswered)
		p->quiet_since_ns = now;
	p->inflight += weight;
}

void efi_path_on_loss(struct efi_path *p)
{
	p->loss_unanswered = true;
}

void efi_path_on_leave(struct efi_path *p, uint32_t weight)
{
	p->inflight = p->inflight > weight ? p->inflight - weight : 0;
}

bool efi_path_on_answer(struct efi_path *p, const struct efi_cc_params *cp, uint64_t rtt_ns, uint64_t now)
{
	efi_rtt_sample(&p->rtt, rtt_ns);
	p->last_ack_ns = p->quiet_since_ns = now;
	p->loss_unanswered = false;
	(void)cp;
	/* While its uplink is down, answers are to what left before (or
	 * went round by another uplink): the table says when it is back. */
	if (p->state != EFI_PATH_SUSPECT || p->local_down)
		return false;
	/* Re-admitted with the window it had: silence is not congestion
	 * (a stalled peer answers for every path at once, and the only path
	 * of a QP is suspected whenever the peer stalls); if the path is
	 * congested, its delay says so within an RTT. */
	p->state = EFI_PATH_ACTIVE;
	p->restored++;
	return true;
}

bool efi_path_check(struct efi_path *p, const struct efi_cc_params *cp, uint64_t now)
{
	if (p->state != EFI_PATH_ACTIVE || !p->inflight)
		return false;
	if (now - p->quiet_since_ns < efi_path_suspect_after_ns(p, cp))
		return false;
	p->state = EFI_PATH_SUSPECT;
	p->suspected++;
	p->next_probe_ns = now;
	return true;
}

bool efi_path_on_local_down(struct efi_path *p, uint64_t now)
{
	p->local_down = true;
	if (p->state != EFI_PATH_ACTIVE)
		return false;
	p->state = EFI_PATH_SUSPECT;
	p->suspected++;
	p->next_probe_ns = now;
	return true;
}

void efi_path_on_local_up(struct efi_path *p, uint64_t now)
{
	p->local_down = false;
	if (p->state == EFI_PATH_SUSPECT)
		p->next_probe_ns = now;
}

bool efi_path_probe_due(const struct efi_path *p, uint64_t now)
{
	return p->state == EFI_PATH_SUSPECT && !p->local_down && now >= p->next_probe_ns;
}

void efi_path_on_probe(struct efi_path *p, const struct efi_cc_params *cp, uint64_t now)
{
	p->next_probe_ns = now + cp->probe_interval_ns;
}

double efi_paths_window(const struct efi_path *paths, unsigned n)
{
	double sum = 0, max = 0;

	for (unsigned i = 0; i < n; i++) {
		if (paths[i].state == EFI_PATH_ACTIVE)
			sum += paths[i].cc.cwnd;
		if (paths[i].cc.cwnd > max)
			max = paths[i].cc.cwnd;
	}
	return sum > 0 ? sum : max;
}

int efi_paths_pick(const struct efi_path *paths, unsigned n, uint64_t now)
{
	int best = -1, quiet = -1;
	double room = 0;

	for (unsigned i = 0; i < n; i++) {
		const struct efi_path *p = &paths[i];
		double r = efi_path_room(p);
		if (now < p->next_send_ns || r <= 0)
			continue;
		if (p->state != EFI_PATH_ACTIVE) {
			if (quiet < 0 || p->last_ack_ns > paths[quiet].last_ack_ns)
				quiet = (int)i;
			continue;
		}
		if (best < 0 || r > room) {
			best = (int)i;
			room = r;
		}
	}
	if (best >= 0)
		return best;
	for (unsigned i = 0; i < n; i++)
		if (paths[i].state == EFI_PATH_ACTIVE)
			return -1;	/* active paths exist, all full or paced */
	return quiet;
}

int efi_paths_pick_retx(const struct efi_path *paths, unsigned n, uint64_t now, int avoid)
{
	int best = -1;

	for (unsigned i = 0; i < n; i++) {
		const struct efi_path *p = &paths[i];
		if ((int)i == avoid || !efi_path_usable(p, now))
			continue;
		if (best < 0 || p->last_ack_ns > paths[best].last_ack_ns)
			best = (int)i;
	}
	return best;
}
