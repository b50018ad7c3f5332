/* SPDX-License-Identifier: MIT */
/*
 * Replies as structs, and the two ways efictl prints them: the JSON schema
 * (docs/efictl.md) and the human view.  Parsing is strict: every attribute
 * efictl knows is checked against a policy, strings must be printable, and
 * anything else makes the whole reply malformed (-EBADMSG) rather than half
 * shown.
 */
#include "config.h"

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "efictl.h"

static const struct ctl_policy iface_policy[EFI_A_MAX] = {
	[EFI_A_INSTANCE] = { .kind = CTL_STR, .minlen = 1, .maxlen = 255 },
	[EFI_A_IFNAME] = { .kind = CTL_STR, .minlen = 1, .maxlen = 63 },
	[EFI_A_KIND] = { .kind = CTL_STR, .maxlen = 31 },
	[EFI_A_STATE] = { .kind = CTL_STR, .maxlen = 31 },
	[EFI_A_LINK] = { .kind = CTL_STR, .maxlen = 31 },
	[EFI_A_MTU] = { .kind = CTL_U32 },
	[EFI_A_UPLINK] = { .kind = CTL_STR, .maxlen = 63 },
	[EFI_A_HOST_IFNAME] = { .kind = CTL_STR, .maxlen = 63 },
	[EFI_A_IFINDEX] = { .kind = CTL_U32 },
	[EFI_A_ADDRESS] = { .kind = CTL_STR, .multi = true, .minlen = 1, .maxlen = 63 },
	[EFI_A_GID] = { .kind = CTL_NEST, .multi = true },
	[EFI_A_CONTEXT] = { .kind = CTL_NEST, .multi = true },
	[EFI_A_CM_LISTENER] = { .kind = CTL_NEST, .multi = true },
	[EFI_A_CM_CONNECTION] = { .kind = CTL_NEST, .multi = true },
	[EFI_A_LEASES] = { .kind = CTL_U32 },
	[EFI_A_RES_QPS] = { .kind = CTL_U32 },
	[EFI_A_LIST_CONTINUED] = { .kind = CTL_U32 },
	[EFI_A_DETAIL_OMITTED] = { .kind = CTL_U32 },
};

static const struct ctl_policy context_policy[EFI_A_MAX] = {
	[EFI_A_PID] = { .kind = CTL_U32 },
	[EFI_A_COUNTERS] = { .kind = CTL_BIN, .minlen = 8 * EFI_CSHM_COUNT, .maxlen = 8 * EFI_CSHM_COUNT },
	[EFI_A_PEERS_OMITTED] = { .kind = CTL_U32 },
	[EFI_A_PEER] = { .kind = CTL_NEST, .multi = true }, /* path_view.c */
	[EFI_A_QP] = { .kind = CTL_NEST, .multi = true },   /* qp_view.c */
	[EFI_A_QPS_OMITTED] = { .kind = CTL_U32 },
	[EFI_A_QPS_STALLED] = { .kind = CTL_U32 },
	[EFI_A_DROP_REASONS] = { .kind = CTL_BIN, .minlen = 8 * EFI_CSHM_DROP_REASONS,
				 .maxlen = 8 * EFI_CSHM_DROP_REASONS },
};

static const struct ctl_policy gid_policy[EFI_A_MAX] = {
	[EFI_A_GID_INDEX] = { .kind = CTL_U32 },
	[EFI_A_GID_VALUE] = { .kind = CTL_BIN, .minlen = 16, .maxlen = 16 },
};

static const struct ctl_policy list_policy[EFI_A_MAX] = {
	[EFI_A_STATUS] = { .kind = CTL_I32 },
	[EFI_A_ERROR] = { .kind = CTL_STR, .maxlen = 4096 },
	[EFI_A_HOST_ID] = { .kind = CTL_STR, .maxlen = 255 },
	[EFI_A_SERVER_VERSION] = { .kind = CTL_STR, .maxlen = 255 },
	[EFI_A_INSTANCE_ENTRY] = { .kind = CTL_NEST, .multi = true },
	[EFI_A_IFACE] = { .kind = CTL_NEST, .multi = true },
	[EFI_A_STRAY] = { .kind = CTL_NEST, .multi = true },
	[EFI_A_UPLINK_ENTRY] = { .kind = CTL_NEST, .multi = true },
};

static const struct ctl_policy uplink_policy[EFI_A_MAX] = {
	[EFI_A_UPLINK] = { .kind = CTL_STR, .minlen = 1, .maxlen = 15 },
	[EFI_A_IFINDEX] = { .kind = CTL_U32 },
	[EFI_A_LINK] = { .kind = CTL_STR, .maxlen = 31 },
	[EFI_A_UPLINK_LANES] = { .kind = CTL_U32 },
	[EFI_A_UPLINK_CHANGES] = { .kind = CTL_U32 },
};

static const struct ctl_policy instance_policy[EFI_A_MAX] = {
	[EFI_A_INSTANCE] = { .kind = CTL_STR, .minlen = 1, .maxlen = 255 },
	[EFI_A_NETNS] = { .kind = CTL_STR, .maxlen = 31 },
};

/* A stray found inside an instance namespace has no host end: efid sends
 * an empty HOST_IFNAME then (efid/reconcile.c), and requiring one made
 * `efictl status` answer "malformed reply" for a genuine stray (issue 18).
 * A stray is still named somehow: a host end, or a name in its instance. */
static const struct ctl_policy stray_policy[EFI_A_MAX] = {
	[EFI_A_HOST_IFNAME] = { .kind = CTL_STR, .maxlen = 63 },
	[EFI_A_INSTANCE] = { .kind = CTL_STR, .maxlen = 255 },
	[EFI_A_IFNAME] = { .kind = CTL_STR, .maxlen = 63 },
};

/* Strings end up on terminals: printable ASCII only. */
static bool printable(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e)
			return false;
	return true;
}

/* Fetches an optional string attribute already validated by ctl_parse. */
static int get_str(const struct ctl_attr *tb, uint16_t type, const char **out)
{
	*out = NULL;
	if (!ctl_has(tb, type))
		return 0;
	if (ctl_attr_str(&tb[type], out) || !printable(*out))
		return -EBADMSG;
	return 0;
}

/* Grows *arr by one element of size sz; returns the new slot or NULL. */
static void *grow(void *arr_ptr, size_t *n, size_t sz)
{
	void **arr = arr_ptr;
	void *p = realloc(*arr, (*n + 1) * sz);
	if (!p)
		return NULL;
	*arr = p;
	memset((char *)p + *n * sz, 0, sz);
	return (char *)p + (*n)++ * sz;
}

void ec_iface_free(struct ec_iface *i)
{
	if (!i)
		return;
	free(i->addrs);
	free(i->gids);
	for (size_t k = 0; k < i->ncontexts; k++) {
		ec_peers_free(&i->contexts[k]);
		ec_qps_free(&i->contexts[k]);
	}
	free(i->contexts);
	ec_cm_free(i);
	i->contexts = NULL;
	i->ncontexts = 0;
	i->addrs = NULL;
	i->gids = NULL;
	i->naddrs = i->ngids = 0;
}

void *ec_grow_one(void *arr_ptr, size_t *n, size_t sz)
{
	void **arr = arr_ptr;
	void *p = realloc(*arr, (*n + 1) * sz);
	if (!p)
		return NULL;
	*arr = p;
	memset((char *)p + *n * sz, 0, sz);
	return (char *)p + (*n)++ * sz;
}

int ec_iface_parse(const struct ctl_attr *nest, struct ec_iface *out)
{
	struct ctl_attr tb[EFI_A_MAX];
	struct ctl_iter it;
	struct ctl_attr a;
	int r;

	memset(out, 0, sizeof(*out));
	r = ctl_parse(nest->data, nest->len, iface_policy, EFI_A_MAX, tb, NULL);
	if (r)
		return r;
	if (!ctl_has(tb, EFI_A_INSTANCE) || !ctl_has(tb, EFI_A_IFNAME))
		return -EBADMSG;
	if (get_str(tb, EFI_A_INSTANCE, &out->instance) || get_str(tb, EFI_A_IFNAME, &out->name) ||
	    get_str(tb, EFI_A_KIND, &out->kind) || get_str(tb, EFI_A_STATE, &out->state) ||
	    get_str(tb, EFI_A_LINK, &out->link) || get_str(tb, EFI_A_UPLINK, &out->uplink) ||
	    get_str(tb, EFI_A_HOST_IFNAME, &out->host_ifname))
		return -EBADMSG;
	out->has_mtu = ctl_attr_u32(&tb[EFI_A_MTU], &out->mtu) == 0;
	out->has_ifindex = ctl_attr_u32(&tb[EFI_A_IFINDEX], &out->ifindex) == 0;
	out->has_leases = ctl_attr_u32(&tb[EFI_A_LEASES], &out->leases) == 0;
	ctl_attr_u32(&tb[EFI_A_RES_QPS], &out->qps);

	ctl_iter_nest(&it, nest);
	while (ctl_iter_next(&it, &a)) {
		if (a.type == EFI_A_ADDRESS) {
			const char *s;
			const char **slot;
			if (ctl_attr_str(&a, &s) || !printable(s))
				goto bad;
			slot = grow(&out->addrs, &out->naddrs, sizeof(*out->addrs));
			if (!slot)
				goto nomem;
			*slot = s;
		} else if (a.type == EFI_A_GID) {
			struct ctl_attr gtb[EFI_A_MAX];
			struct ec_gid *g;
			if (ctl_parse(a.data, a.len, gid_policy, EFI_A_MAX, gtb, NULL) ||
			    !ctl_has(gtb, EFI_A_GID_INDEX) || !ctl_has(gtb, EFI_A_GID_VALUE))
				goto bad;
			g = grow(&out->gids, &out->ngids, sizeof(*out->gids));
			if (!g)
				goto nomem;
			ctl_attr_u32(&gtb[EFI_A_GID_INDEX], &g->index);
			memcpy(g->gid.raw, gtb[EFI_A_GID_VALUE].data, 16);
		} else if (a.type == EFI_A_CONTEXT) {
			struct ctl_attr ctb[EFI_A_MAX];
			struct ec_context *x;
			if (ctl_parse(a.data, a.len, context_policy, EFI_A_MAX, ctb, NULL) ||
			    !ctl_has(ctb, EFI_A_PID) || !ctl_has(ctb, EFI_A_COUNTERS))
				goto bad;
			x = grow(&out->contexts, &out->ncontexts, sizeof(*out->contexts));
			if (!x)
				goto nomem;
			ctl_attr_u32(&ctb[EFI_A_PID], &x->pid);
			for (int k = 0; k < EFI_CSHM_COUNT; k++) {
				uint64_t le;
				memcpy(&le, ctb[EFI_A_COUNTERS].data + 8 * k, 8);
				x->counters[k] = le64toh(le);
			}
			struct ctl_iter cit;
			struct ctl_attr ca;
			ctl_iter_nest(&cit, &a);
			while (ctl_iter_next(&cit, &ca)) {
				r = ec_peer_parse_attr(&ca, x);
				if (r == 0)
					r = ec_qp_parse_attr(&ca, x);
				if (r == -ENOMEM)
					goto nomem;
				if (r < 0)
					goto bad;
			}
			if (cit.err)
				goto bad;
		} else {
			r = ec_cm_parse_attr(&a, out);
			if (r == -ENOMEM)
				goto nomem;
			if (r < 0)
				goto bad;
		}
	}
	if (it.err)
		goto bad;
	return 0;
bad:
	ec_iface_free(out);
	return -EBADMSG;
nomem:
	ec_iface_free(out);
	return -ENOMEM;
}

void ec_listing_free(struct ec_listing *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->nifaces; i++)
		ec_iface_free(&l->ifaces[i]);
	free(l->ifaces);
	free(l->instances);
	free(l->strays);
	free(l->uplinks);
	memset(l, 0, sizeof(*l));
}

static struct ec_instance *find_instance(struct ec_listing *l, const char *name)
{
	for (size_t i = 0; i < l->ninstances; i++)
		if (strcmp(l->instances[i].name, name) == 0)
			return &l->instances[i];
	return NULL;
}

static int parse_entry(struct ec_listing *l, const struct ctl_attr *a)
{
	struct ctl_attr tb[EFI_A_MAX];
	const char *name, *netns;
	if (ctl_parse(a->data, a->len, instance_policy, EFI_A_MAX, tb, NULL) ||
	    !ctl_has(tb, EFI_A_INSTANCE) || get_str(tb, EFI_A_INSTANCE, &name) ||
	    get_str(tb, EFI_A_NETNS, &netns))
		return -EBADMSG;
	if (find_instance(l, name))
		return -EBADMSG; /* listed twice: something is wrong */
	struct ec_instance *in = grow(&l->instances, &l->ninstances, sizeof(*in));
	if (!in)
		return -ENOMEM;
	in->name = name;
	in->netns = netns;
	return 0;
}

static int parse_stray(struct ec_listing *l, const struct ctl_attr *a)
{
	struct ctl_attr tb[EFI_A_MAX];
	struct ec_stray s;
	if (ctl_parse(a->data, a->len, stray_policy, EFI_A_MAX, tb, NULL) ||
	    !ctl_has(tb, EFI_A_HOST_IFNAME) || get_str(tb, EFI_A_HOST_IFNAME, &s.host_ifname) ||
	    get_str(tb, EFI_A_INSTANCE, &s.instance) || get_str(tb, EFI_A_IFNAME, &s.ifname))
		return -EBADMSG;
	if (!*s.host_ifname && (!s.ifname || !*s.ifname || !s.instance || !*s.instance))
		return -EBADMSG; /* neither a host end nor a device in an instance */
	struct ec_stray *slot = grow(&l->strays, &l->nstrays, sizeof(*slot));
	if (!slot)
		return -ENOMEM;
	*slot = s;
	return 0;
}

static int parse_uplink(struct ec_listing *l, const struct ctl_attr *a)
{
	struct ctl_attr tb[EFI_A_MAX];
	struct ec_uplink u = { 0 };
	if (ctl_parse(a->data, a->len, uplink_policy, EFI_A_MAX, tb, NULL) ||
	    !ctl_has(tb, EFI_A_UPLINK) || get_str(tb, EFI_A_UPLINK, &u.name) ||
	    get_str(tb, EFI_A_LINK, &u.link))
		return -EBADMSG;
	if (ctl_has(tb, EFI_A_IFINDEX))
		ctl_attr_u32(&tb[EFI_A_IFINDEX], &u.ifindex);
	if (ctl_has(tb, EFI_A_UPLINK_LANES))
		ctl_attr_u32(&tb[EFI_A_UPLINK_LANES], &u.lanes);
	if (ctl_has(tb, EFI_A_UPLINK_CHANGES))
		ctl_attr_u32(&tb[EFI_A_UPLINK_CHANGES], &u.changes);
	struct ec_uplink *slot = grow(&l->uplinks, &l->nuplinks, sizeof(*slot));
	if (!slot)
		return -ENOMEM;
	*slot = u;
	return 0;
}

/* Moves the n elements of size sz at *from to the end of *to (of *nto). */
static int append_all(void *to_ptr, size_t *nto, void *from_ptr, size_t *nfrom, size_t sz)
{
	void **to = to_ptr, **from = from_ptr;
	if (!*nfrom)
		return 0;
	void *p = realloc(*to, (*nto + *nfrom) * sz);
	if (!p)
		return -ENOMEM;
	memcpy((char *)p + *nto * sz, *from, *nfrom * sz);
	*to = p;
	*nto += *nfrom;
	free(*from);
	*from = NULL;
	*nfrom = 0;
	return 0;
}

/* An IFACE nest continuing an interface whose contexts and CM objects did
 * not fit one nest (EFI_A_LIST_CONTINUED): they join the interface's. */
static int merge_continued(struct ec_iface *to, struct ec_iface *more)
{
	int r = append_all(&to->contexts, &to->ncontexts, &more->contexts, &more->ncontexts,
			   sizeof(*to->contexts));
	if (!r)
		r = append_all(&to->listeners, &to->nlisteners, &more->listeners,
			       &more->nlisteners, sizeof(*to->listeners));
	if (!r)
		r = append_all(&to->conns, &to->nconns, &more->conns, &more->nconns,
			       sizeof(*to->conns));
	ec_iface_free(more);
	return r;
}

int ec_listing_parse(const struct ctl_reply *rep, struct ec_listing *out)
{
	struct ctl_attr tb[EFI_A_MAX];
	struct ctl_iter it;
	struct ctl_attr a;
	int r;

	memset(out, 0, sizeof(*out));
	r = ctl_parse(rep->payload, rep->payload_len, list_policy, EFI_A_MAX, tb, NULL);
	if (r)
		return r;
	if (get_str(tb, EFI_A_HOST_ID, &out->host_id) ||
	    get_str(tb, EFI_A_SERVER_VERSION, &out->server_version))
		return -EBADMSG;

	/* Instances first, whatever order they came in, so that interfaces
	 * can be matched to them. */
	ctl_iter_init(&it, rep->payload, rep->payload_len);
	while (ctl_iter_next(&it, &a)) {
		if (a.type == EFI_A_INSTANCE_ENTRY && (r = parse_entry(out, &a)))
			goto fail;
		if (a.type == EFI_A_STRAY && (r = parse_stray(out, &a)))
			goto fail;
		if (a.type == EFI_A_UPLINK_ENTRY && (r = parse_uplink(out, &a)))
			goto fail;
	}
	ctl_iter_init(&it, rep->payload, rep->payload_len);
	while (ctl_iter_next(&it, &a)) {
		if (a.type != EFI_A_IFACE)
			continue;
		struct ctl_attr ttb[EFI_A_MAX];
		uint32_t continued = 0;
		if (ctl_parse(a.data, a.len, iface_policy, EFI_A_MAX, ttb, NULL) == 0 &&
		    ctl_has(ttb, EFI_A_LIST_CONTINUED))
			ctl_attr_u32(&ttb[EFI_A_LIST_CONTINUED], &continued);
		if (continued) {
			/* Only ever right after the interface it continues. */
			struct ec_iface more, *prev = out->nifaces ? &out->ifaces[out->nifaces - 1] : NULL;
			r = ec_iface_parse(&a, &more);
			if (r)
				goto fail;
			if (!prev || strcmp(prev->instance, more.instance) ||
			    strcmp(prev->name, more.name)) {
				ec_iface_free(&more);
				r = -EBADMSG;
				goto fail;
			}
			r = merge_continued(prev, &more);
			if (r)
				goto fail;
			continue;
		}
		struct ec_iface *i = grow(&out->ifaces, &out->nifaces, sizeof(*i));
		if (!i) {
			r = -ENOMEM;
			goto fail;
		}
		r = ec_iface_parse(&a, i);
		if (r) {
			out->nifaces--;
			goto fail;
		}
		if (!find_instance(out, i->instance)) {
			struct ec_instance *in = grow(&out->instances, &out->ninstances,
						      sizeof(*in));
			if (!in) {
				r = -ENOMEM;
				goto fail;
			}
			in->name = i->instance;
		}
	}
	return 0;
fail:
	ec_listing_free(out);
	return r;
}

/* ---- JSON --------------------------------------------------------------- */

static void json_opt_u32(struct json *j, bool has, uint32_t v)
{
	if (has)
		json_u64(j, v);
	else
		json_null(j);
}

void ec_iface_json(struct json *j, const struct ec_iface *i)
{
	char buf[INET6_ADDRSTRLEN];
	json_obj_begin(j);
	json_member_str(j, "name", i->name);
	json_member_str(j, "kind", i->kind);
	json_member_str(j, "state", i->state);
	json_member_str(j, "link", i->link);
	json_key(j, "mtu");
	json_opt_u32(j, i->has_mtu, i->mtu);
	json_member_str(j, "uplink", i->uplink && *i->uplink ? i->uplink : NULL);
	json_member_str(j, "host_ifname", i->host_ifname && *i->host_ifname ? i->host_ifname : NULL);
	json_key(j, "ifindex");
	json_opt_u32(j, i->has_ifindex, i->ifindex);
	json_key(j, "addresses");
	json_arr_begin(j);
	for (size_t k = 0; k < i->naddrs; k++)
		json_str(j, i->addrs[k]);
	json_arr_end(j);
	json_key(j, "gids");
	json_arr_begin(j);
	for (size_t k = 0; k < i->ngids; k++) {
		json_obj_begin(j);
		json_member_u64(j, "index", i->gids[k].index);
		json_member_str(j, "gid", efi_gid_format(&i->gids[k].gid, buf, sizeof(buf)));
		json_obj_end(j);
	}
	json_arr_end(j);
	static const char *const names[EFI_CSHM_COUNT] = EFI_COUNTERSHM_NAMES;
	json_key(j, "contexts");
	json_arr_begin(j);
	for (size_t k = 0; k < i->ncontexts; k++) {
		json_obj_begin(j);
		json_member_u64(j, "pid", i->contexts[k].pid);
		for (int c = 0; c < EFI_CSHM_COUNT; c++) {
			json_member_u64(j, names[c], i->contexts[k].counters[c]);
		}
		ec_peers_json(j, &i->contexts[k]);
		ec_stalls_json(j, &i->contexts[k]);
		json_obj_end(j);
	}
	json_arr_end(j);
	json_key(j, "leases");
	json_opt_u32(j, i->has_leases, i->leases);
	json_key(j, "qps");
	json_opt_u32(j, i->has_leases, i->qps);
	ec_cm_json(j, i);
	json_obj_end(j);
}

int ec_listing_print_json(FILE *f, const struct ec_listing *l)
{
	struct json j;
	json_init(&j, f);
	json_obj_begin(&j);
	ec_listing_json(&j, l);
	json_obj_end(&j);
	return json_finish(&j);
}

void ec_listing_json(struct json *j, const struct ec_listing *l)
{
	json_member_str(j, "host_id", l->host_id);
	json_member_str(j, "efid_version", l->server_version);
	json_key(j, "instances");
	json_arr_begin(j);
	for (size_t n = 0; n < l->ninstances; n++) {
		const struct ec_instance *in = &l->instances[n];
		json_obj_begin(j);
		json_member_str(j, "name", in->name);
		json_member_str(j, "netns", in->netns);
		json_key(j, "interfaces");
		json_arr_begin(j);
		for (size_t k = 0; k < l->nifaces; k++)
			if (strcmp(l->ifaces[k].instance, in->name) == 0)
				ec_iface_json(j, &l->ifaces[k]);
		json_arr_end(j);
		json_obj_end(j);
	}
	json_arr_end(j);
	json_key(j, "strays");
	json_arr_begin(j);
	for (size_t n = 0; n < l->nstrays; n++) {
		json_obj_begin(j);
		/* null: the stray is inside its instance's namespace */
		json_member_str(j, "host_ifname", *l->strays[n].host_ifname ? l->strays[n].host_ifname
									   : NULL);
		json_member_str(j, "instance", l->strays[n].instance && *l->strays[n].instance
				    ? l->strays[n].instance
				    : NULL);
		json_member_str(j, "name", l->strays[n].ifname && *l->strays[n].ifname ? l->strays[n].ifname
									 : NULL);
		json_obj_end(j);
	}
	json_arr_end(j);
	if (!l->nuplinks)
		return; /* [Transport] Uplinks= off, or an instance's view */
	json_key(j, "uplinks");
	json_arr_begin(j);
	for (size_t n = 0; n < l->nuplinks; n++) {
		const struct ec_uplink *u = &l->uplinks[n];
		json_obj_begin(j);
		json_member_str(j, "name", u->name);
		json_member_u64(j, "ifindex", u->ifindex);
		json_member_str(j, "link", u->link && *u->link ? u->link : "unknown");
		json_key(j, "lanes");
		json_arr_begin(j);
		for (unsigned lane = 0; lane < 32; lane++)
			if (u->lanes & (1u << lane))
				json_u64(j, lane);
		json_arr_end(j);
		json_member_u64(j, "changes", u->changes);
		json_obj_end(j);
	}
	json_arr_end(j);
}

/* ---- human -------------------------------------------------------------- */

static const char *or_dash(const char *s)
{
	return s && *s ? s : "-";
}

void ec_iface_print(FILE *f, const struct ec_iface *i, int indent)
{
	char buf[INET6_ADDRSTRLEN];
	int in2 = indent + 4;

	fprintf(f, "%*s%s: %s, %s, link %s", indent, "", i->name, or_dash(i->kind),
		or_dash(i->state), or_dash(i->link));
	if (i->has_mtu && i->mtu)
		fprintf(f, ", mtu %u", i->mtu);
	fputc('\n', f);
	fprintf(f, "%*s%-12s %s\n", in2, "", "uplink", or_dash(i->uplink));
	fprintf(f, "%*s%-12s %s\n", in2, "", "host device", or_dash(i->host_ifname));
	if (i->has_ifindex && i->ifindex)
		fprintf(f, "%*s%-12s %u\n", in2, "", "ifindex", i->ifindex);
	if (i->naddrs == 0)
		fprintf(f, "%*s%-12s %s\n", in2, "", "addresses", "-");
	for (size_t k = 0; k < i->naddrs; k++)
		fprintf(f, "%*s%-12s %s\n", in2, "", k == 0 ? "addresses" : "", i->addrs[k]);
	if (i->ngids == 0)
		fprintf(f, "%*s%-12s %s\n", in2, "", "GIDs", "none");
	for (size_t k = 0; k < i->ngids; k++)
		fprintf(f, "%*s%-12s %3u  %s\n", in2, "", k == 0 ? "GIDs" : "", i->gids[k].index,
			efi_gid_format(&i->gids[k].gid, buf, sizeof(buf)));
	for (size_t k = 0; k < i->ncontexts; k++) {
		const uint64_t *c = i->contexts[k].counters;
		fprintf(f, "%*s%-12s pid %u: tx %" PRIu64 " pkts %" PRIu64 " B, rx %" PRIu64
			   " pkts %" PRIu64 " B, retrans %" PRIu64 ", timeouts %" PRIu64
			   ", dups %" PRIu64 ", RNR NAKs %" PRIu64 "/%" PRIu64 ", drops %" PRIu64 "\n",
			in2, "", k == 0 ? "contexts" : "", i->contexts[k].pid, c[EFI_CSHM_TX_PACKETS],
			c[EFI_CSHM_TX_BYTES], c[EFI_CSHM_RX_PACKETS], c[EFI_CSHM_RX_BYTES],
			c[EFI_CSHM_RETRANSMISSIONS], c[EFI_CSHM_TIMEOUTS], c[EFI_CSHM_DUPLICATES],
			c[EFI_CSHM_RNR_NAKS_SENT], c[EFI_CSHM_RNR_NAKS_RECEIVED], c[EFI_CSHM_DROPS]);
		ec_peers_print(f, &i->contexts[k], in2 + 13);
		ec_stalls_print(f, &i->contexts[k], in2 + 13);
	}
	if (i->has_leases && i->leases)
		fprintf(f, "%*s%-12s %u context(s), %u QP(s)\n", in2, "", "leases", i->leases, i->qps);
	ec_cm_print(f, i, in2);
}
