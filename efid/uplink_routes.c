/* SPDX-License-Identifier: MIT */
/*
 * The policy routing of [Transport] Uplinks (uplinks.h): per-lane fib
 * rules and one table per uplink, through libnl-route.  Everything made
 * here is recognised by three marks together (priority range, table
 * range, protocol EFID_UPLINK_RTPROT), so a purge never touches a rule or
 * route of anyone else.
 */
#include "config.h"

#include <errno.h>
#include <linux/fib_rules.h>
#include <linux/rtnetlink.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <netlink/addr.h>
#include <netlink/cache.h>
#include <netlink/netlink.h>
#include <netlink/route/route.h>
#include <netlink/route/rule.h>

#include "log.h"
#include "uplinks.h"

#define TABLE_END (EFID_UPLINK_TABLE_BASE + EFI_PATHTABLE_MAX_LANES)
#define PRIO_END (EFID_UPLINK_PRIO_BASE + EFI_PATHTABLE_MAX_LANES)
#define KEY_MAX 512

static int nl_to_errno(int nlrc)
{
	switch (-nlrc) {
	case NLE_EXIST: return -EEXIST;
	case NLE_OBJ_NOTFOUND: return -ENOENT;
	case NLE_NOMEM: return -ENOMEM;
	case NLE_PERM: return -EPERM;
	case NLE_NOACCESS: return -EACCES;
	case NLE_AF_NOSUPPORT: return -EAFNOSUPPORT;
	case NLE_OPNOTSUPP: return -EOPNOTSUPP;
	case NLE_INVAL: return -EINVAL;
	case NLE_NODEV: return -ENODEV;
	default: return -EIO;
	}
}

static bool ours_table(uint32_t t)
{
	return t >= EFID_UPLINK_TABLE_BASE && t < TABLE_END;
}

static bool rule_ours(struct rtnl_rule *rule)
{
	uint8_t proto = 0;
	uint32_t prio = rtnl_rule_get_prio(rule);

	return prio >= EFID_UPLINK_PRIO_BASE && prio < PRIO_END &&
	       ours_table(rtnl_rule_get_table(rule)) && rtnl_rule_get_protocol(rule, &proto) == 0 &&
	       proto == EFID_UPLINK_RTPROT;
}

static bool route_ours(struct rtnl_route *rt)
{
	return ours_table(rtnl_route_get_table(rt)) &&
	       rtnl_route_get_protocol(rt) == EFID_UPLINK_RTPROT;
}

struct purge {
	struct nl_sock *sk;
	int n;
};

static void purge_rule(struct nl_object *obj, void *arg)
{
	struct purge *p = arg;
	struct rtnl_rule *rule = (struct rtnl_rule *)obj;

	if (rule_ours(rule) && rtnl_rule_delete(p->sk, rule, 0) >= 0)
		p->n++;
}

static void purge_route(struct nl_object *obj, void *arg)
{
	struct purge *p = arg;
	struct rtnl_route *rt = (struct rtnl_route *)obj;

	if (route_ours(rt) && rtnl_route_delete(p->sk, rt, 0) >= 0)
		p->n++;
}

int uplink_routes_purge(struct nl_sock *sk)
{
	struct nl_cache *rules = NULL, *routes = NULL;
	struct purge p = { .sk = sk };

	if (rtnl_rule_alloc_cache(sk, AF_UNSPEC, &rules) >= 0) {
		nl_cache_foreach(rules, purge_rule, &p);
		nl_cache_free(rules);
	}
	if (rtnl_route_alloc_cache(sk, AF_UNSPEC, 0, &routes) >= 0) {
		nl_cache_foreach(routes, purge_route, &p);
		nl_cache_free(routes);
	}
	return p.n;
}

static int add_rule(struct nl_sock *sk, int family, unsigned lane, const struct uplink_routing *r)
{
	struct rtnl_rule *rule = rtnl_rule_alloc();
	uint16_t lo = (uint16_t)(r->port_base + lane * 4096u);
	int rc;

	if (!rule)
		return -ENOMEM;
	rtnl_rule_set_family(rule, family);
	rtnl_rule_set_prio(rule, EFID_UPLINK_PRIO_BASE + lane);
	rtnl_rule_set_action(rule, FR_ACT_TO_TBL);
	rtnl_rule_set_table(rule, EFID_UPLINK_TABLE_BASE + lane % r->nuplinks);
	rtnl_rule_set_ipproto(rule, IPPROTO_UDP);
	rtnl_rule_set_sport_range(rule, lo, (uint16_t)(lo + 4095u));
	rtnl_rule_set_protocol(rule, EFID_UPLINK_RTPROT);
	rc = rtnl_rule_add(sk, rule, NLM_F_CREATE | NLM_F_EXCL);
	rtnl_rule_put(rule);
	return rc < 0 ? nl_to_errno(rc) : 0;
}

int uplink_routes_rules(struct nl_sock *sk, struct uplink_routing *r, char *err, size_t errlen)
{
	int rc;

	for (unsigned lane = 0; lane < r->lanes; lane++) {
		rc = add_rule(sk, AF_INET, lane, r);
		if (rc < 0) {
			snprintf(err, errlen, "cannot add the IPv4 rule of lane %u (priority %u): %s",
				 lane, EFID_UPLINK_PRIO_BASE + lane, strerror(-rc));
			return rc;
		}
		if (!r->v6)
			continue;
		rc = add_rule(sk, AF_INET6, lane, r);
		if (rc == -EAFNOSUPPORT || rc == -EOPNOTSUPP) {
			log_notice("uplinks: no IPv6 policy routing here (%s): IPv6 lanes follow the main table",
				   strerror(-rc));
			r->v6 = false;
		} else if (rc < 0) {
			snprintf(err, errlen, "cannot add the IPv6 rule of lane %u (priority %u): %s",
				 lane, EFID_UPLINK_PRIO_BASE + lane, strerror(-rc));
			return rc;
		}
	}
	return 0;
}

/* ---- tables ---------------------------------------------------------------- */

/* Whether prefix a (alen bits) contains b (blen bits), strictly. */
static bool prefix_contains(struct nl_addr *a, struct nl_addr *b)
{
	unsigned alen = a ? nl_addr_get_prefixlen(a) : 0, blen = b ? nl_addr_get_prefixlen(b) : 0;
	const uint8_t *x, *y;

	if (blen <= alen)
		return false;
	if (alen == 0)
		return true;
	if (nl_addr_get_len(a) < (alen + 7) / 8 || nl_addr_get_len(b) < (alen + 7) / 8)
		return false;
	x = nl_addr_get_binary_addr(a);
	y = nl_addr_get_binary_addr(b);
	for (unsigned bit = 0; bit < alen; bit++) {
		uint8_t m = (uint8_t)(0x80u >> (bit % 8));
		if ((x[bit / 8] & m) != (y[bit / 8] & m))
			return false;
	}
	return true;
}

static void key_addr(char *buf, size_t len, struct nl_addr *a)
{
	size_t n = 0;
	const uint8_t *b = a ? nl_addr_get_binary_addr(a) : NULL;
	unsigned l = a ? nl_addr_get_len(a) : 0;

	buf[0] = '\0';
	for (unsigned i = 0; b && i < l && n + 3 < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%02x", b[i]);
	if (n + 6 < len)
		snprintf(buf + n, len - n, "/%u", a ? nl_addr_get_prefixlen(a) : 0);
}

/* A route's identity for comparing the wanted with the installed:
 * table, family, destination, type, metric and its live nexthops (only
 * those over ifindex when ifindex > 0). */
static void route_key(struct rtnl_route *rt, uint32_t table, int ifindex, char *key, size_t len)
{
	char a[80];
	size_t n;

	key_addr(a, sizeof(a), rtnl_route_get_dst(rt));
	n = (size_t)snprintf(key, len, "%u %d %s %u %u|", table, rtnl_route_get_family(rt), a,
			     rtnl_route_get_type(rt), rtnl_route_get_priority(rt));
	for (int i = 0; i < rtnl_route_get_nnexthops(rt) && n < len; i++) {
		struct rtnl_nexthop *nh = rtnl_route_nexthop_n(rt, i);
		if ((rtnl_route_nh_get_flags(nh) & RTNH_F_DEAD) ||
		    (ifindex > 0 && rtnl_route_nh_get_ifindex(nh) != ifindex))
			continue;
		key_addr(a, sizeof(a), rtnl_route_nh_get_gateway(nh));
		n += (size_t)snprintf(key + n, len - n, "%d %s;", rtnl_route_nh_get_ifindex(nh), a);
	}
}

struct want {
	struct rtnl_route *main; /* the route of main it copies (referenced) */
	uint32_t table;
	int ifindex;             /* restrict to this uplink (0: copy every nexthop) */
	char key[KEY_MAX];
	bool present;
};

struct sync {
	const struct uplink_routing *r;
	struct nl_sock *sk;
	struct want *want;
	size_t nwant, cap;
	int err;
	unsigned added, removed, failed;
};

static bool main_candidate(struct rtnl_route *rt)
{
	int fam = rtnl_route_get_family(rt);

	return rtnl_route_get_table(rt) == RT_TABLE_MAIN && (fam == AF_INET || fam == AF_INET6) &&
	       !(rtnl_route_get_flags(rt) & RTM_F_CLONED);
}

static bool over(struct rtnl_route *rt, int ifindex)
{
	if (ifindex <= 0 || rtnl_route_get_type(rt) != RTN_UNICAST)
		return false;
	for (int i = 0; i < rtnl_route_get_nnexthops(rt); i++) {
		struct rtnl_nexthop *nh = rtnl_route_nexthop_n(rt, i);
		if (rtnl_route_nh_get_ifindex(nh) == ifindex &&
		    !(rtnl_route_nh_get_flags(nh) & RTNH_F_DEAD))
			return true;
	}
	return false;
}

static void want_add(struct sync *s, struct rtnl_route *rt, uint32_t table, int ifindex)
{
	struct want *w;

	if (s->nwant == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 32;
		void *p = realloc(s->want, cap * sizeof(*s->want));
		if (!p) {
			s->err = -ENOMEM;
			return;
		}
		s->want = p;
		s->cap = cap;
	}
	w = &s->want[s->nwant++];
	memset(w, 0, sizeof(*w));
	nl_object_get((struct nl_object *)rt);
	w->main = rt;
	w->table = table;
	w->ifindex = ifindex;
	route_key(rt, table, ifindex, w->key, sizeof(w->key));
}

struct collect {
	struct sync *s;
	unsigned k;        /* the uplink */
	struct nl_cache *routes;
};

static void covered_cb(struct nl_object *obj, void *arg);

/* Main's routes over uplink k, restricted to it. */
static void k_route_cb(struct nl_object *obj, void *arg)
{
	struct collect *c = arg;
	struct rtnl_route *rt = (struct rtnl_route *)obj;
	int ifindex = c->s->r->ifindex[c->k];

	if (!main_candidate(rt) || !over(rt, ifindex))
		return;
	if (rtnl_route_get_family(rt) == AF_INET6 && !c->s->r->v6)
		return;
	want_add(c->s, rt, EFID_UPLINK_TABLE_BASE + c->k, ifindex);
}

struct covered {
	struct collect *c;
	struct rtnl_route *k_route;
};

/* Main's routes not over k that a route over k would shadow in k's table
 * (more specific ones): copied as they are, so that lane traffic to them
 * goes where main sends it. */
static void covered_inner(struct nl_object *obj, void *arg)
{
	struct covered *cv = arg;
	struct rtnl_route *rt = (struct rtnl_route *)obj;
	struct sync *s = cv->c->s;
	uint32_t table = EFID_UPLINK_TABLE_BASE + cv->c->k;
	char key[KEY_MAX];

	if (!main_candidate(rt) || over(rt, s->r->ifindex[cv->c->k]) ||
	    rtnl_route_get_family(rt) != rtnl_route_get_family(cv->k_route))
		return;
	if (!prefix_contains(rtnl_route_get_dst(cv->k_route), rtnl_route_get_dst(rt)))
		return;
	route_key(rt, table, 0, key, sizeof(key));
	for (size_t i = 0; i < s->nwant; i++)
		if (strcmp(s->want[i].key, key) == 0)
			return; /* under two routes over k: once */
	want_add(s, rt, table, 0);
}

static void covered_cb(struct nl_object *obj, void *arg)
{
	struct collect *c = arg;
	struct covered cv = { .c = c, .k_route = (struct rtnl_route *)obj };

	if (!main_candidate(cv.k_route) || !over(cv.k_route, c->s->r->ifindex[c->k]))
		return;
	if (rtnl_route_get_family(cv.k_route) == AF_INET6 && !c->s->r->v6)
		return;
	nl_cache_foreach(c->routes, covered_inner, &cv);
}

/* Installed routes: kept when wanted, removed otherwise. */
static void installed_cb(struct nl_object *obj, void *arg)
{
	struct sync *s = arg;
	struct rtnl_route *rt = (struct rtnl_route *)obj;
	char key[KEY_MAX];
	int rc;

	if (!route_ours(rt))
		return;
	route_key(rt, rtnl_route_get_table(rt), 0, key, sizeof(key));
	for (size_t i = 0; i < s->nwant; i++)
		if (!s->want[i].present && strcmp(s->want[i].key, key) == 0) {
			s->want[i].present = true;
			return;
		}
	rc = rtnl_route_delete(s->sk, rt, 0);
	if (rc < 0 && rc != -NLE_OBJ_NOTFOUND)
		log_debug("uplinks: cannot remove a stale route of table %u: %s",
			  rtnl_route_get_table(rt), nl_geterror(rc));
	else
		s->removed++;
}

static int install(struct sync *s, const struct want *w)
{
	struct rtnl_route *rt = rtnl_route_alloc();
	struct nl_addr *dst = rtnl_route_get_dst(w->main);
	int rc = 0, nnh = 0;

	if (!rt)
		return -ENOMEM;
	rtnl_route_set_family(rt, (uint8_t)rtnl_route_get_family(w->main));
	rtnl_route_set_table(rt, w->table);
	rtnl_route_set_protocol(rt, EFID_UPLINK_RTPROT);
	rtnl_route_set_type(rt, rtnl_route_get_type(w->main));
	rtnl_route_set_scope(rt, rtnl_route_get_scope(w->main));
	rtnl_route_set_priority(rt, rtnl_route_get_priority(w->main));
	if (dst)
		rc = rtnl_route_set_dst(rt, dst);
	for (int i = 0; rc >= 0 && i < rtnl_route_get_nnexthops(w->main); i++) {
		struct rtnl_nexthop *from = rtnl_route_nexthop_n(w->main, i), *nh;
		if ((rtnl_route_nh_get_flags(from) & RTNH_F_DEAD) ||
		    (w->ifindex > 0 && rtnl_route_nh_get_ifindex(from) != w->ifindex))
			continue;
		nh = rtnl_route_nh_alloc();
		if (!nh) {
			rc = -NLE_NOMEM;
			break;
		}
		rtnl_route_nh_set_ifindex(nh, rtnl_route_nh_get_ifindex(from));
		if (rtnl_route_nh_get_gateway(from))
			rtnl_route_nh_set_gateway(nh, rtnl_route_nh_get_gateway(from));
		if (w->ifindex <= 0 && rtnl_route_get_nnexthops(w->main) > 1)
			rtnl_route_nh_set_weight(nh, rtnl_route_nh_get_weight(from));
		rtnl_route_add_nexthop(rt, nh);
		nnh++;
	}
	if (rc >= 0)
		rc = rtnl_route_add(s->sk, rt, NLM_F_CREATE | NLM_F_EXCL);
	rtnl_route_put(rt);
	return rc < 0 ? nl_to_errno(rc) : 0;
}

int uplink_routes_sync(struct nl_sock *sk, const struct uplink_routing *r, char *err,
		       size_t errlen)
{
	struct sync s = { .r = r, .sk = sk };
	struct nl_cache *routes = NULL;
	int rc;

	rc = rtnl_route_alloc_cache(sk, AF_UNSPEC, 0, &routes);
	if (rc < 0) {
		snprintf(err, errlen, "cannot read the routes: %s", nl_geterror(rc));
		return nl_to_errno(rc);
	}
	for (unsigned k = 0; k < r->nuplinks; k++) {
		struct collect c = { .s = &s, .k = k, .routes = routes };
		if (r->ifindex[k] <= 0)
			continue; /* gone: its table empties, lanes fall through to main */
		nl_cache_foreach(routes, k_route_cb, &c);
		nl_cache_foreach(routes, covered_cb, &c);
	}
	if (s.err) {
		rc = s.err;
		snprintf(err, errlen, "cannot compute the uplink tables: %s", strerror(-rc));
		goto out;
	}
	nl_cache_foreach(routes, installed_cb, &s);
	for (size_t i = 0; i < s.nwant; i++) {
		if (s.want[i].present)
			continue;
		rc = install(&s, &s.want[i]);
		if (rc < 0) {
			/* A route the kernel refuses (its device went away
			 * meanwhile): the next event resynchronises. */
			log_debug("uplinks: cannot install %s: %s", s.want[i].key, strerror(-rc));
			s.failed++;
		} else {
			s.added++;
		}
	}
	rc = 0;
	if (s.added || s.removed || s.failed)
		log_debug("uplinks: tables synchronised: %u routes added, %u removed, %u refused",
			  s.added, s.removed, s.failed);
out:
	for (size_t i = 0; i < s.nwant; i++)
		rtnl_route_put(s.want[i].main);
	free(s.want);
	nl_cache_free(routes);
	return rc;
}
