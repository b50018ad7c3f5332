/* SPDX-License-Identifier: MIT */
/*
 * Log rate limiting: a hostile client can make the same complaint happen
 * a million times a second, and a log that grows by a million lines says
 * less than one line and a count.  At most `burst` messages per interval;
 * the first one let through afterwards says how many were left out.
 */
#ifndef EFID_RATELIMIT_H
#define EFID_RATELIMIT_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

struct ratelimit {
	uint64_t interval_usec;
	unsigned burst;
	uint64_t begin;      /* start of the current interval */
	unsigned n;          /* messages let through in it */
	unsigned suppressed; /* left out since the last one let through */
};

#define RATELIMIT_INIT(usec, b) { .interval_usec = (usec), .burst = (b) }

/* True when a message may be logged now; then *suppressed is how many were
 * left out before it (to be said in it), else it counts this one. */
static inline bool ratelimit_ok(struct ratelimit *rl, unsigned *suppressed)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	uint64_t now = (uint64_t)ts.tv_sec * 1000000ULL + (uint64_t)ts.tv_nsec / 1000;
	if (now - rl->begin >= rl->interval_usec) {
		rl->begin = now;
		rl->n = 0;
	}
	if (rl->n >= rl->burst) {
		rl->suppressed++;
		return false;
	}
	rl->n++;
	*suppressed = rl->suppressed;
	rl->suppressed = 0;
	return true;
}

#endif
