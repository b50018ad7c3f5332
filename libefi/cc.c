/* SPDX-License-Identifier: MIT */
/* Delay-based congestion control (cc.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cc.h"

void efi_cc_params_default(struct efi_cc_params *p)
{
	*p = (struct efi_cc_params){
		.target_delay_ns = 2000 * 1000,
		.ai = 2.0,
		.beta = 0.8,
		.max_mdf = 0.5,
		.loss_mdf = 0.3,
		.loss_thresh = 0.1,
		.min_cwnd = 1,
		.max_cwnd = 256,
		.init_cwnd = 64,
		.min_rto_ns = 10 * 1000 * 1000,
		.tlp_min_ns = 100 * 1000,
		.reo_min_ns = 20 * 1000,
		.suspect_rtts = 3,
		.suspect_min_ns = 500 * 1000,
		.suspect_max_ns = 4000 * 1000,
		.probe_interval_ns = 1000 * 1000,
	};
}

static int set_field(struct efi_cc_params *p, const char *key, size_t klen, const char *val)
{
	char *end;
	double d;

#define KEY(k) (klen == sizeof(k) - 1 && memcmp(key, k, klen) == 0)
	errno = 0;
	d = strtod(val, &end);
	if (end == val || (*end && *end != ',') || errno || !(d >= 0) || d > 1e12)
		return EINVAL;
	if (KEY("target_us"))
		p->target_delay_ns = (uint64_t)(d * 1000);
	else if (KEY("ai"))
		p->ai = d;
	else if (KEY("beta"))
		p->beta = d;
	else if (KEY("max_mdf"))
		p->max_mdf = d;
	else if (KEY("loss_mdf"))
		p->loss_mdf = d;
	else if (KEY("loss_thresh"))
		p->loss_thresh = d;
	else if (KEY("min_cwnd"))
		p->min_cwnd = d;
	else if (KEY("max_cwnd"))
		p->max_cwnd = d;
	else if (KEY("init_cwnd"))
		p->init_cwnd = d;
	else if (KEY("min_rto_us"))
		p->min_rto_ns = (uint64_t)(d * 1000);
	else if (KEY("tlp_min_us"))
		p->tlp_min_ns = (uint64_t)(d * 1000);
	else if (KEY("reo_min_us"))
		p->reo_min_ns = (uint64_t)(d * 1000);
	else if (KEY("suspect_rtts"))
		p->suspect_rtts = (unsigned)d;
	else if (KEY("suspect_min_us"))
		p->suspect_min_ns = (uint64_t)(d * 1000);
	else if (KEY("suspect_max_us"))
		p->suspect_max_ns = (uint64_t)(d * 1000);
	else if (KEY("probe_interval_us"))
		p->probe_interval_ns = (uint64_t)(d * 1000);
	else
		return EINVAL;
#undef KEY
	return 0;
}

int efi_cc_param_set(struct efi_cc_params *p, const char *key, const char *value)
{
	if (strchr(value, ','))
		return EINVAL;
	return set_field(p, key, strlen(key), value);
}

int efi_cc_params_parse(struct efi_cc_params *out, const char *spec)
{
	struct efi_cc_params p = *out;
	const char *s = spec;

	while (s && *s) {
		const char *eq = strchr(s, '='), *comma;
		if (!eq || eq == s)
			return EINVAL;
		comma = strchr(s, ',');
		if (comma && comma < eq)
			return EINVAL;
		if (set_field(&p, s, (size_t)(eq - s), eq + 1))
			return EINVAL;
		s = strchr(eq, ',');
		if (s)
			s++;
	}
	if (p.min_cwnd <= 0 || p.min_cwnd > p.max_cwnd || p.init_cwnd < p.min_cwnd ||
	    p.init_cwnd > p.max_cwnd || p.max_mdf >= 1 || p.loss_mdf >= 1 || p.beta > 1 ||
	    p.loss_thresh > 1 || p.suspect_rtts == 0 || p.suspect_min_ns > p.suspect_max_ns ||
	    p.target_delay_ns == 0)
		return EINVAL;
	*out = p;
	return 0;
}

static void clamp(struct efi_cc *cc, const struct efi_cc_params *p)
{
	if (cc->cwnd < p->min_cwnd)
		cc->cwnd = p->min_cwnd;
	if (cc->cwnd > p->max_cwnd)
		cc->cwnd = p->max_cwnd;
}

void efi_cc_init(struct efi_cc *cc, const struct efi_cc_params *p)
{
	memset(cc, 0, sizeof(*cc));
	cc->cwnd = p->init_cwnd;
	clamp(cc, p);
}

/* Multiplies the window by (1 − f), once per RTT at most. */
static void decrease(struct efi_cc *cc, const struct efi_cc_params *p, double f, uint64_t srtt_ns,
		     uint64_t now)
{
	if (cc->decreases && now - cc->last_decrease_ns < srtt_ns)
		return;
	cc->cwnd *= 1.0 - f;
	cc->last_decrease_ns = now;
	cc->decreases++;
	clamp(cc, p);
}

/* Ends the loss epoch when it has lasted an RTT: a decrease if too much of
 * it was lost. */
static void epoch(struct efi_cc *cc, const struct efi_cc_params *p, uint64_t srtt_ns, uint64_t now)
{
	uint32_t total = cc->epoch_acked + cc->epoch_lost;

	if (now - cc->epoch_start_ns < srtt_ns)
		return;
	if (total && cc->epoch_lost > p->loss_thresh * total)
		decrease(cc, p, p->loss_mdf, srtt_ns, now);
	cc->epoch_start_ns = now;
	cc->epoch_acked = cc->epoch_lost = 0;
}

void efi_cc_on_ack(struct efi_cc *cc, const struct efi_cc_params *p, uint64_t delay_ns, uint32_t acked,
		   uint64_t srtt_ns, uint64_t now)
{
	cc->epoch_acked += acked;
	epoch(cc, p, srtt_ns, now);
	if (delay_ns && (!cc->win_min_ns || delay_ns < cc->win_min_ns))
		cc->win_min_ns = delay_ns;
	if (delay_ns && acked && delay_ns <= p->target_delay_ns) {
		/* ai per RTT: each acknowledged packet adds ai / cwnd (below
		 * one packet, ai per packet: the window is paced anyway). */
		cc->cwnd += cc->cwnd >= 1.0 ? p->ai * acked / cc->cwnd : p->ai * acked;
		clamp(cc, p);
	}
	/* The decision to decrease is taken once per RTT on the smallest
	 * delay of that RTT: a queue that persists for a whole RTT raises
	 * every sample, while a lone spike (a descheduled receiver, an
	 * interrupt) does not, and must not halve the window. */
	if (now - cc->win_start_ns < srtt_ns)
		return;
	uint64_t d = cc->win_min_ns;
	cc->win_start_ns = now;
	cc->win_min_ns = 0;
	if (d > p->target_delay_ns) {
		double f = p->beta * (double)(d - p->target_delay_ns) / (double)d;
		decrease(cc, p, f < p->max_mdf ? f : p->max_mdf, srtt_ns, now);
	}
}

void efi_cc_on_loss(struct efi_cc *cc, const struct efi_cc_params *p, uint32_t lost, uint64_t srtt_ns,
		    uint64_t now)
{
	cc->epoch_lost += lost;
	epoch(cc, p, srtt_ns, now);
}

void efi_cc_on_timeout(struct efi_cc *cc, const struct efi_cc_params *p, uint64_t now)
{
	cc->cwnd *= 1.0 - p->max_mdf;
	cc->last_decrease_ns = now;
	cc->decreases++;
	clamp(cc, p);
}

uint64_t efi_cc_pacing_gap_ns(const struct efi_cc *cc, uint64_t srtt_ns)
{
	if (cc->cwnd >= 1.0)
		return 0;
	return (uint64_t)((double)srtt_ns / cc->cwnd);
}
