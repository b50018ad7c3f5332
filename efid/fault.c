/* SPDX-License-Identifier: MIT */
/* EFID_FAULT crash points (fault.h). */
#include "config.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fault.h"
#include "log.h"

bool fault_fails(const char *what)
{
	const char *v = getenv("EFID_FAULT");
	return v && strcmp(v, what) == 0;
}

void fault_point(const char *op, int step)
{
	static int parsed;
	static char want_op[16];
	static int want_step;

	if (!parsed) {
		const char *v = getenv("EFID_FAULT");
		parsed = 1;
		if (v && sscanf(v, "%15[a-z]:%d", want_op, &want_step) != 2)
			want_op[0] = '\0';
	}
	if (!want_op[0] || want_step != step || strcmp(want_op, op) != 0)
		return;
	log_warning("EFID_FAULT=%s:%d: killing efid here", op, step);
	raise(SIGKILL);
}
