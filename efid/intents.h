/* SPDX-License-Identifier: MIT */
/* Attach and detach intents a crash left: finished or undone (intents.c). */
#ifndef EFID_INTENTS_H
#define EFID_INTENTS_H

#include <stdbool.h>

struct efid;

/* Completes every interrupted detach and undoes every interrupted attach.
 * Returns 0, or the first -errno (the others are still tried; what failed
 * stays recorded for the next start). */
int intents_reconcile(struct efid *d);
/* True while a detach of instance/name is pending: its record must not be
 * repaired (re-created) while it waits to be deleted. */
bool intent_blocks_repair(struct efid *d, const char *instance, const char *name);

#endif
