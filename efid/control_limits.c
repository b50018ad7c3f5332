/* SPDX-License-Identifier: MIT */
/* Per-user and per-instance accounting of control clients (control_limits.h). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "control_limits.h"
#include "efid_config.h"

struct ctl_account {
	struct ctl_account *next;
	bool per_user;  /* else the whole instance */
	bool host;
	uid_t uid;      /* per_user only */
	char instance[EFI_INSTANCE_MAX + 1];
	uint32_t conns, fds;
	uint64_t queued;
};

struct ctl_limits {
	struct ctl_account *accounts;
};

struct ctl_limits *ctl_limits_new(void)
{
	return calloc(1, sizeof(struct ctl_limits));
}

void ctl_limits_free(struct ctl_limits *L)
{
	if (!L)
		return;
	while (L->accounts) {
		struct ctl_account *a = L->accounts;
		L->accounts = a->next;
		free(a);
	}
	free(L);
}

bool ctl_limits_exempt(const struct peer *p)
{
	return p->host && p->uid == 0;
}

/* Whose account this is, for log lines. */
static void describe(const struct ctl_account *a, char *buf, size_t len)
{
	const char *where = a->host ? "the host" : a->instance[0] ? a->instance : "an unknown namespace";
	if (a->per_user)
		snprintf(buf, len, "uid %u of %s%s", (unsigned)a->uid,
			 !a->host && a->instance[0] ? "instance " : "", where);
	else
		snprintf(buf, len, "instance %s", where);
}

static struct ctl_account *find_or_add(struct ctl_limits *L, bool per_user, const struct peer *p)
{
	for (struct ctl_account *a = L->accounts; a; a = a->next)
		if (a->per_user == per_user && a->host == p->host &&
		    (!per_user || a->uid == p->uid) && strcmp(a->instance, p->instance) == 0)
			return a;
	struct ctl_account *a = calloc(1, sizeof(*a));
	if (!a)
		return NULL;
	a->per_user = per_user;
	a->host = p->host;
	a->uid = p->uid;
	snprintf(a->instance, sizeof(a->instance), "%s", p->instance);
	a->next = L->accounts;
	L->accounts = a;
	return a;
}

/* Frees an account nothing is counted in any more. */
static void drop_if_unused(struct ctl_limits *L, struct ctl_account *a)
{
	if (!a || a->conns || a->fds || a->queued)
		return;
	for (struct ctl_account **pp = &L->accounts; *pp; pp = &(*pp)->next)
		if (*pp == a) {
			*pp = a->next;
			free(a);
			return;
		}
}

int ctl_quota_admit(struct ctl_limits *L, const struct efid_config *cfg, const struct peer *p,
		    struct ctl_quota *q, char *why, size_t whylen)
{
	char who[128];

	q->user = q->inst = NULL;
	if (ctl_limits_exempt(p))
		return 0;
	struct ctl_account *u = find_or_add(L, true, p);
	/* The host is not an instance: its users are limited one by one. */
	struct ctl_account *i = p->host ? NULL : find_or_add(L, false, p);
	if (!u || (!p->host && !i)) {
		snprintf(why, whylen, "efid is out of memory");
		goto refuse;
	}
	if (cfg->max_conns_per_user && u->conns >= cfg->max_conns_per_user) {
		describe(u, who, sizeof(who));
		snprintf(why, whylen, "%s holds %u control connections, the per-user limit "
			 "([Control] MaxConnectionsPerUser)", who, u->conns);
		goto refuse;
	}
	if (i && cfg->max_conns_per_instance && i->conns >= cfg->max_conns_per_instance) {
		describe(i, who, sizeof(who));
		snprintf(why, whylen, "%s holds %u control connections, the per-instance limit "
			 "([Control] MaxConnectionsPerInstance)", who, i->conns);
		goto refuse;
	}
	u->conns++;
	if (i)
		i->conns++;
	q->user = u;
	q->inst = i;
	return 0;
refuse:
	drop_if_unused(L, u);
	drop_if_unused(L, i);
	return -EUSERS;
}

void ctl_quota_release(struct ctl_limits *L, struct ctl_quota *q)
{
	if (q->user) {
		q->user->conns--;
		drop_if_unused(L, q->user);
	}
	if (q->inst) {
		q->inst->conns--;
		drop_if_unused(L, q->inst);
	}
	q->user = q->inst = NULL;
}

int ctl_quota_fds(const struct efid_config *cfg, struct ctl_quota *q, int n, char *why,
		  size_t whylen)
{
	char who[128];
	struct ctl_account *u = q->user, *i = q->inst;

	if (n < 0) {
		uint32_t back = (uint32_t)-n;
		if (u)
			u->fds -= back <= u->fds ? back : u->fds;
		if (i)
			i->fds -= back <= i->fds ? back : i->fds;
		return 0;
	}
	if (u && cfg->max_fds_per_user && u->fds + (uint32_t)n > cfg->max_fds_per_user) {
		describe(u, who, sizeof(who));
		snprintf(why, whylen, "%s holds %u descriptors passed to efid and not claimed by a "
			 "request, the per-user limit ([Control] MaxDescriptorsPerUser)", who, u->fds);
		return -EMFILE;
	}
	if (i && cfg->max_fds_per_instance && i->fds + (uint32_t)n > cfg->max_fds_per_instance) {
		describe(i, who, sizeof(who));
		snprintf(why, whylen, "%s holds %u descriptors passed to efid and not claimed by a "
			 "request, the per-instance limit ([Control] MaxDescriptorsPerInstance)", who,
			 i->fds);
		return -EMFILE;
	}
	if (u)
		u->fds += (uint32_t)n;
	if (i)
		i->fds += (uint32_t)n;
	return 0;
}

int ctl_quota_queued(const struct efid_config *cfg, struct ctl_quota *q, int64_t n, char *why,
		     size_t whylen)
{
	char who[128];
	struct ctl_account *u = q->user, *i = q->inst;

	if (n < 0) {
		uint64_t back = (uint64_t)-n;
		if (u)
			u->queued -= back <= u->queued ? back : u->queued;
		if (i)
			i->queued -= back <= i->queued ? back : i->queued;
		return 0;
	}
	if (u && cfg->max_queued_per_user && u->queued + (uint64_t)n > cfg->max_queued_per_user) {
		describe(u, who, sizeof(who));
		snprintf(why, whylen, "%s has %llu reply bytes queued and unread, the per-user limit "
			 "([Control] MaxQueuedRepliesPerUser)", who, (unsigned long long)u->queued);
		return -ENOBUFS;
	}
	if (i && cfg->max_queued_per_instance &&
	    i->queued + (uint64_t)n > cfg->max_queued_per_instance) {
		describe(i, who, sizeof(who));
		snprintf(why, whylen, "%s has %llu reply bytes queued and unread, the per-instance "
			 "limit ([Control] MaxQueuedRepliesPerInstance)", who,
			 (unsigned long long)i->queued);
		return -ENOBUFS;
	}
	if (u)
		u->queued += (uint64_t)n;
	if (i)
		i->queued += (uint64_t)n;
	return 0;
}
