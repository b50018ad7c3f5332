/* SPDX-License-Identifier: MIT */
/* Lease internals shared by lease.c (slots), lease_resume.c (a restarted
 * efid taking back the leases of running processes) and lease_quota.c
 * ([Limits]). */
#ifndef EFID_LEASE_INT_H
#define EFID_LEASE_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "ifacespec.h"
#include "lease.h"

/* One leased slot.  All of them sit in one list on the daemon context, so a
 * slot is unique per instance namespace (ports are per namespace). */
struct slot {
	struct slot *next;
	struct lease *owner;
	char instance[EFI_INSTANCE_MAX + 1];
	char ifname[EFI_IFNAME_MAX + 1];
	unsigned slot;
};

struct lease {
	struct client *client;  /* the control connection holding it (REVOKE goes there) */
	unsigned nslots;
	pid_t pid;
	char instance[EFI_INSTANCE_MAX + 1]; /* set with the first slot */
	const struct efi_countershm *counters; /* read-only mapping, or NULL */
	size_t counters_size;                  /* its length: one page, or a version 3 page */
	/* what RESERVE granted and RELEASE has not given back */
	uint32_t qps, mrs;
	uint64_t bytes;
	bool revoked;           /* its interface is being detached */
};

/* What one instance's leases hold together, against [Limits]. */
struct usage {
	struct usage *next;
	char instance[EFI_INSTANCE_MAX + 1];
	uint32_t qps, mrs;
	uint64_t bytes;
};

struct lease_registry {
	struct slot *slots;
	size_t count;
	unsigned cursor; /* next slot to try: rotate, so a freed port is not reused at once */
	struct usage *usage;
};

/* NULL on ENOMEM. */
struct lease_registry *lease_registry(struct efid *d);
bool lease_slot_taken(const struct lease_registry *reg, const char *instance, unsigned slot);
/* Records slot of p's instance, interface ifname, as l's.  0 or -ENOMEM. */
int lease_add_slot(struct efid *d, struct lease *l, const struct peer *p, const char *ifname,
		   unsigned slot);
/* l resumed (lease_resume.c): what it reports holding counts again. */
void lease_quota_resume(struct efid *d, struct lease *l, uint32_t qps, uint32_t mrs,
			uint64_t bytes);
/* l is going: its reservations leave its instance's usage (lease_quota.c). */
void lease_quota_gone(struct efid *d, struct lease *l);

#endif
