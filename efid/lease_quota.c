/* SPDX-License-Identifier: MIT */
/*
 * [Limits]: what one instance's processes may hold together (QPs, MRs,
 * registered bytes).  libefi reserves before it creates a QP or registers
 * memory and releases after it destroys one (EFI_CTL_RESERVE / RELEASE on
 * its lease connection); a lease that closes gives everything back.  Also
 * the revocation of leases when their interface is detached, and what LIST
 * shows of them.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control.h"
#include "efid.h"
#include "lease_int.h"
#include "log.h"

static struct usage *usage_of(struct efid *d, const char *instance, bool create)
{
	struct lease_registry *reg = lease_registry(d);
	if (!reg)
		return NULL;
	for (struct usage *u = reg->usage; u; u = u->next)
		if (strcmp(u->instance, instance) == 0)
			return u;
	if (!create)
		return NULL;
	struct usage *u = calloc(1, sizeof(*u));
	if (!u)
		return NULL;
	snprintf(u->instance, sizeof(u->instance), "%s", instance);
	u->next = reg->usage;
	reg->usage = u;
	return u;
}

void lease_quota_gone(struct efid *d, struct lease *l)
{
	struct usage *u = l->instance[0] ? usage_of(d, l->instance, false) : NULL;
	if (!u)
		return;
	u->qps -= l->qps < u->qps ? l->qps : u->qps;
	u->mrs -= l->mrs < u->mrs ? l->mrs : u->mrs;
	u->bytes -= l->bytes < u->bytes ? l->bytes : u->bytes;
	l->qps = l->mrs = 0;
	l->bytes = 0;
}

struct amounts {
	uint32_t qps, mrs;
	uint64_t bytes;
};

static int get_amounts(const struct ctl_attr *tb, struct amounts *a, char *err, size_t errlen)
{
	memset(a, 0, sizeof(*a));
	if ((ctl_has(tb, EFI_A_RES_QPS) && ctl_attr_u32(&tb[EFI_A_RES_QPS], &a->qps)) ||
	    (ctl_has(tb, EFI_A_RES_MRS) && ctl_attr_u32(&tb[EFI_A_RES_MRS], &a->mrs)) ||
	    (ctl_has(tb, EFI_A_RES_BYTES) && ctl_attr_u64(&tb[EFI_A_RES_BYTES], &a->bytes))) {
		snprintf(err, errlen, "malformed amounts");
		return -EBADMSG;
	}
	return 0;
}

/* Adds a to the lease and its instance; false (nothing changed) when a sum
 * would overflow. */
static bool add(struct usage *u, struct lease *l, const struct amounts *a)
{
	if (u->qps > UINT32_MAX - a->qps || u->mrs > UINT32_MAX - a->mrs ||
	    u->bytes > UINT64_MAX - a->bytes || l->qps > UINT32_MAX - a->qps ||
	    l->mrs > UINT32_MAX - a->mrs || l->bytes > UINT64_MAX - a->bytes)
		return false;
	u->qps += a->qps;
	u->mrs += a->mrs;
	u->bytes += a->bytes;
	l->qps += a->qps;
	l->mrs += a->mrs;
	l->bytes += a->bytes;
	return true;
}

void lease_quota_resume(struct efid *d, struct lease *l, uint32_t qps, uint32_t mrs,
			uint64_t bytes)
{
	struct amounts a = { qps, mrs, bytes };
	struct usage *u = usage_of(d, l->instance, true);
	if (u)
		add(u, l, &a);
}

/* The first limit a would pass, as a message; 0 when it fits. */
static int over_limit(const struct efid *d, const struct usage *u, const struct amounts *a,
		      char *err, size_t errlen)
{
	const struct efid_config *c = &d->config;
	if (c->max_qps && a->qps && (uint64_t)u->qps + a->qps > c->max_qps) {
		snprintf(err, errlen,
			 "instance '%s' holds %u of its %u QPs ([Limits] MaxQPs in efid.conf): destroy QPs or raise the limit",
			 u->instance, u->qps, c->max_qps);
		return -EDQUOT;
	}
	if (c->max_mrs && a->mrs && (uint64_t)u->mrs + a->mrs > c->max_mrs) {
		snprintf(err, errlen,
			 "instance '%s' holds %u of its %u memory regions ([Limits] MaxMRs in efid.conf)",
			 u->instance, u->mrs, c->max_mrs);
		return -EDQUOT;
	}
	if (c->max_registered_bytes && a->bytes &&
	    (u->bytes > c->max_registered_bytes || a->bytes > c->max_registered_bytes - u->bytes)) {
		snprintf(err, errlen,
			 "instance '%s' has %" PRIu64 " of its %" PRIu64
			 " bytes registered ([Limits] MaxRegisteredBytes in efid.conf); %" PRIu64
			 " more do not fit",
			 u->instance, u->bytes, c->max_registered_bytes, a->bytes);
		return -EDQUOT;
	}
	return 0;
}

/* A lease that may reserve: it holds an endpoint that was not revoked. */
static int usable(const struct lease *l, char *err, size_t errlen)
{
	if (!l || l->nslots == 0) {
		snprintf(err, errlen, "reserve and release come after open-device on the same connection");
		return -EINVAL;
	}
	if (l->revoked) {
		snprintf(err, errlen, "the interface was detached: the context can make nothing more");
		return -ENODEV;
	}
	return 0;
}

int lease_reserve(struct efid *d, struct lease *l, const struct ctl_attr *tb,
		  struct ctl_buf *body, char *err, size_t errlen)
{
	struct amounts a;
	int r = usable(l, err, errlen);
	if (r)
		return r;
	r = get_amounts(tb, &a, err, errlen);
	if (r)
		return r;
	struct usage *u = usage_of(d, l->instance, true);
	if (!u)
		return -ENOMEM;
	r = over_limit(d, u, &a, err, errlen);
	if (r) {
		log_info("pid %d refused: %s", (int)l->pid, err);
		return r;
	}
	if (!add(u, l, &a)) {
		snprintf(err, errlen, "amounts overflow");
		return -EOVERFLOW;
	}
	log_debug("lease: pid %d reserves %u QP(s), %u MR(s), %" PRIu64 " byte(s)", (int)l->pid,
		  a.qps, a.mrs, a.bytes);
	ctl_put_u32(body, EFI_A_RES_QPS, d->config.max_qps);
	ctl_put_u32(body, EFI_A_RES_MRS, d->config.max_mrs);
	ctl_put_u64(body, EFI_A_RES_BYTES, d->config.max_registered_bytes);
	return 0;
}

int lease_release(struct efid *d, struct lease *l, const struct ctl_attr *tb, char *err,
		  size_t errlen)
{
	struct amounts a;
	if (!l || l->nslots == 0) {
		snprintf(err, errlen, "reserve and release come after open-device on the same connection");
		return -EINVAL;
	}
	int r = get_amounts(tb, &a, err, errlen);
	if (r)
		return r;
	/* at most what the lease holds: a confused client cannot lower its
	 * neighbours' usage */
	struct lease give = { .instance = "", .qps = a.qps < l->qps ? a.qps : l->qps,
			      .mrs = a.mrs < l->mrs ? a.mrs : l->mrs,
			      .bytes = a.bytes < l->bytes ? a.bytes : l->bytes };
	struct usage *u = usage_of(d, l->instance, false);
	l->qps -= give.qps;
	l->mrs -= give.mrs;
	l->bytes -= give.bytes;
	if (u) {
		u->qps -= give.qps < u->qps ? give.qps : u->qps;
		u->mrs -= give.mrs < u->mrs ? give.mrs : u->mrs;
		u->bytes -= give.bytes < u->bytes ? give.bytes : u->bytes;
	}
	return 0;
}

/* Calls fn once per distinct lease with a slot on instance/ifname (any
 * interface when ifname is NULL). */
static void each_lease(struct efid *d, const char *instance, const char *ifname,
		       void (*fn)(struct efid *d, struct lease *l, void *ud), void *ud)
{
	if (!d->leases)
		return;
	for (struct slot *s = d->leases->slots; s; s = s->next) {
		if (strcmp(s->instance, instance) || (ifname && strcmp(s->ifname, ifname)))
			continue;
		bool seen = false;
		for (struct slot *t = d->leases->slots; t != s && !seen; t = t->next)
			seen = t->owner == s->owner && !strcmp(t->instance, instance) &&
			       (!ifname || !strcmp(t->ifname, ifname));
		if (!seen)
			fn(d, s->owner, ud);
	}
}

struct revoke {
	const char *ifname;
	unsigned n;
};

static void revoke_one(struct efid *d, struct lease *l, void *ud)
{
	struct revoke *rv = ud;
	struct ctl_buf b;
	(void)d;
	if (l->revoked || !l->client)
		return;
	l->revoked = true;
	ctl_buf_init(&b);
	ctl_msg_begin(&b, EFI_CTL_REVOKE, 0);
	ctl_put_str(&b, EFI_A_INSTANCE, l->instance);
	if (rv->ifname)
		ctl_put_str(&b, EFI_A_IFNAME, rv->ifname);
	if (ctl_msg_end(&b) == 0)
		control_push(l->client, &b);
	ctl_buf_free(&b);
	rv->n++;
	log_info("lease of pid %d in %s revoked", (int)l->pid, l->instance);
}

unsigned lease_revoke(struct efid *d, const char *instance, const char *ifname)
{
	struct revoke rv = { ifname, 0 };
	each_lease(d, instance, ifname, revoke_one, &rv);
	return rv.n;
}

struct iface_usage {
	uint32_t leases, qps;
};

static void count_one(struct efid *d, struct lease *l, void *ud)
{
	struct iface_usage *u = ud;
	(void)d;
	u->leases++;
	u->qps += l->qps;
}

void lease_put_iface_usage(struct efid *d, struct ctl_buf *b, const char *instance,
			   const char *ifname)
{
	struct iface_usage u = { 0, 0 };
	each_lease(d, instance, ifname, count_one, &u);
	ctl_put_u32(b, EFI_A_LEASES, u.leases);
	ctl_put_u32(b, EFI_A_RES_QPS, u.qps);
}
