/* SPDX-License-Identifier: MIT */
/*
 * Request handlers.  Each request's attributes are checked against a policy
 * before use; rights are checked before anything is looked up, so that a
 * caller without them learns nothing.
 */
#include "config.h"

#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cm.h"
#include "ctlproto.h"
#include "efid.h"
#include "handlers.h"
#include "iface.h"
#include "intents.h"
#include "lease.h"
#include "list_pages.h"
#include "log.h"
#include "netns.h"
#include "netns_path.h"
#include "store.h"
#include "uplinks.h"

#define POLICY_SIZE EFI_A_MAX

static const struct ctl_policy request_policy[POLICY_SIZE] = {
	[EFI_A_CLIENT] = { .kind = CTL_STR, .maxlen = 255 },
	[EFI_A_INSTANCE] = { .kind = CTL_STR, .minlen = 1, .maxlen = EFI_INSTANCE_MAX },
	[EFI_A_IFNAME] = { .kind = CTL_STR, .maxlen = EFI_IFNAME_MAX },
	[EFI_A_ADDRESS] = { .kind = CTL_STR, .multi = true, .minlen = 1, .maxlen = 64 },
	[EFI_A_UPLINK] = { .kind = CTL_STR, .maxlen = EFI_IFNAME_MAX },
	[EFI_A_MTU] = { .kind = CTL_U32 },
	[EFI_A_KIND] = { .kind = CTL_STR, .maxlen = 15 },
	[EFI_A_FLAGS] = { .kind = CTL_U32 },
	[EFI_A_QPN_BASE] = { .kind = CTL_U32 },
	[EFI_A_RES_QPS] = { .kind = CTL_U32 },
	[EFI_A_RES_MRS] = { .kind = CTL_U32 },
	[EFI_A_RES_BYTES] = { .kind = CTL_U64 },
	[EFI_A_PATH_TABLE] = { .kind = CTL_U32 },
	[EFI_A_LIST_CURSOR] = { .kind = CTL_U32 },
	[EFI_A_NETNS_PATH] = { .kind = CTL_STR, .minlen = 2, .maxlen = PATH_MAX - 1 },
};

/* OPEN_DEVICE, LEASE_RESUME: a client that reads the path table (it said
 * which version) gets a read-only descriptor of it after the lanes'.  A
 * failure costs the client the table, not the request. */
static void put_path_table(struct efid *d, struct ctl_attr *tb, struct ctl_buf *body,
			   struct ctl_fds *out)
{
	uint32_t version = 0;
	int fd;

	if (!ctl_has(tb, EFI_A_PATH_TABLE) || ctl_attr_u32(&tb[EFI_A_PATH_TABLE], &version) ||
	    version != EFI_PATHTABLE_VERSION || out->n >= EFI_CTL_MAX_FDS)
		return;
	fd = uplinks_table_fd(d);
	if (fd < 0) {
		if (fd != -ENOENT)
			log_warning("cannot hand out the path table: %s", strerror(-fd));
		return;
	}
	ctl_put_u32(body, EFI_A_PATH_TABLE, out->n);
	out->fd[out->n++] = fd;
}

/* Resolves efid.conf's [Control] Group each time: groups can be created
 * after efid started. */
static bool mutate_group(const struct efid *d, gid_t *gid)
{
	if (!d->config.group[0])
		return false;
	struct group *g = getgrnam(d->config.group);
	if (!g)
		return false;
	*gid = g->gr_gid;
	return true;
}

static int check_mutate(struct efid *d, const struct peer *p, char *err, size_t errlen)
{
	gid_t gid = 0;
	bool have = mutate_group(d, &gid);
	if (auth_can_mutate(p, have, gid))
		return 0;
	if (!p->host)
		snprintf(err, errlen,
			 "permission denied: processes inside an instance may not attach or detach interfaces; run efictl on the host");
	else if (d->config.group[0])
		snprintf(err, errlen,
			 "permission denied: attach and detach need root or membership in group '%s' (efid.conf [Control] Group=)",
			 d->config.group);
	else
		snprintf(err, errlen,
			 "permission denied: attach and detach need root (or set [Control] Group= in efid.conf and join that group)");
	return -EPERM;
}

/* An instance client may only name its own instance; returns the filter to
 * use (NULL: no filter, host clients) or sets *deny. */
static const char *visible_instance(const struct peer *p, const char *asked, bool *deny)
{
	*deny = false;
	if (p->host)
		return asked;
	if (!p->instance[0] || (asked && strcmp(asked, p->instance) != 0)) {
		*deny = true;
		return NULL;
	}
	return p->instance;
}

static void put_iface(struct efid *d, struct ctl_buf *b, const struct store_iface *it, bool paged)
{
	size_t nest = ctl_nest_begin(b, EFI_A_IFACE);
	char text[INET6_ADDRSTRLEN + 8];

	ctl_put_str(b, EFI_A_INSTANCE, it->spec.instance);
	ctl_put_str(b, EFI_A_IFNAME, it->spec.name);
	ctl_put_str(b, EFI_A_KIND, it->spec.kind);
	/* A detach that could not be recorded yet is one, not "missing". */
	ctl_put_str(b, EFI_A_STATE, intent_blocks_repair(d, it->spec.instance, it->spec.name) ?
					    "detaching" : it->state);
	ctl_put_str(b, EFI_A_LINK, it->link);
	ctl_put_u32(b, EFI_A_MTU, it->spec.mtu);
	ctl_put_str(b, EFI_A_UPLINK, it->spec.uplink);
	ctl_put_str(b, EFI_A_HOST_IFNAME, it->host_ifname);
	ctl_put_u32(b, EFI_A_IFINDEX, it->ifindex);
	for (size_t i = 0; i < it->spec.naddrs; i++)
		ctl_put_str(b, EFI_A_ADDRESS, efi_addr_format(&it->spec.addrs[i], text, sizeof(text)));

	struct store_gid gids[STORE_MAX_GIDS];
	size_t n = 0;
	if (store_gids_get(d->store, it->id, gids, STORE_MAX_GIDS, &n) == 0) {
		for (size_t i = 0; i < n; i++) {
			size_t g = ctl_nest_begin(b, EFI_A_GID);
			ctl_put_u32(b, EFI_A_GID_INDEX, gids[i].index);
			ctl_put(b, EFI_A_GID_VALUE, gids[i].gid.raw, 16);
			ctl_nest_end(b, g);
		}
	}
	lease_put_iface_usage(d, b, it->spec.instance, it->spec.name);
	list_put_detail(d, b, &nest, it->spec.instance, it->spec.name, paged);
	ctl_nest_end(b, nest);
}

static int handle_hello(struct efid *d, const struct peer *p, struct ctl_attr *tb,
			struct ctl_buf *body, char *err, size_t errlen)
{
	gid_t gid = 0;
	bool have = mutate_group(d, &gid);

	if (ctl_has(tb, EFI_A_CLIENT)) {
		const char *name;
		ctl_attr_str(&tb[EFI_A_CLIENT], &name);
		log_debug("hello from %s (pid %d)", name, (int)p->pid);
	}
	ctl_put_str(body, EFI_A_SERVER_VERSION, PACKAGE_VERSION);
	ctl_put_str(body, EFI_A_HOST_ID, store_host_id(d->store));
	if (p->instance[0])
		ctl_put_str(body, EFI_A_CALLER_INSTANCE, p->instance);
	ctl_put_u32(body, EFI_A_CAN_MUTATE, auth_can_mutate(p, have, gid) ? 1 : 0);
	return 0;
}

static int count_iface(const struct store_iface *iface, void *ud)
{
	(void)iface;
	(*(unsigned *)ud)++;
	return 0;
}

/* A path instance without interfaces is let go (its namespace with it):
 * after the last detach, and after an attach that created nothing. */
static void forget_unused_path_instance(struct efid *d, const char *instance)
{
	unsigned n = 0;

	if (store_iface_foreach(d->store, instance, count_iface, &n) == 0 && n == 0)
		netns_path_forget(instance);
}

/* ATTACH with NETNS_PATH: the namespace becomes an instance (netns_path.h),
 * whose name replaces the one asked for when it already had one. */
static int adopt_path(const struct peer *p, struct ctl_attr *tb, struct efi_iface_spec *spec,
		      char *err, size_t errlen)
{
	char name[EFI_INSTANCE_MAX + 1];
	const char *path;
	int r;

	/* efid opens the path with its own rights, so the caller must have
	 * them too: a group member may attach to instances, not reach into
	 * any namespace of the host. */
	if (p->uid != 0) {
		snprintf(err, errlen, "permission denied: attaching to a namespace by path needs "
			 "root (it is what a container runtime's CNI plugin does)");
		return -EPERM;
	}
	ctl_attr_str(&tb[EFI_A_NETNS_PATH], &path);
	r = netns_path_adopt(spec->instance, path, name, sizeof(name), err, errlen);
	if (r < 0)
		return r;
	snprintf(spec->instance, sizeof(spec->instance), "%s", name);
	return 0;
}

static int handle_attach(struct efid *d, const struct peer *p, struct ctl_attr *tb,
			 const uint8_t *payload, size_t len, struct ctl_buf *body, char *err,
			 size_t errlen)
{
	struct efi_iface_spec spec, effective;
	const char *s;
	int r;

	r = check_mutate(d, p, err, errlen);
	if (r < 0)
		return r;
	if (!ctl_has(tb, EFI_A_INSTANCE)) {
		snprintf(err, errlen, "attach needs an instance name");
		return -EINVAL;
	}
	memset(&spec, 0, sizeof(spec));
	ctl_attr_str(&tb[EFI_A_INSTANCE], &s);
	snprintf(spec.instance, sizeof(spec.instance), "%s", s);
	if (ctl_has(tb, EFI_A_IFNAME)) {
		ctl_attr_str(&tb[EFI_A_IFNAME], &s);
		snprintf(spec.name, sizeof(spec.name), "%s", s);
	}
	if (ctl_has(tb, EFI_A_UPLINK)) {
		ctl_attr_str(&tb[EFI_A_UPLINK], &s);
		snprintf(spec.uplink, sizeof(spec.uplink), "%s", s);
	}
	if (ctl_has(tb, EFI_A_KIND)) {
		ctl_attr_str(&tb[EFI_A_KIND], &s);
		snprintf(spec.kind, sizeof(spec.kind), "%s", s);
	}
	if (ctl_has(tb, EFI_A_MTU))
		ctl_attr_u32(&tb[EFI_A_MTU], &spec.mtu);

	/* Addresses repeat: walk the whole request for them. */
	struct ctl_iter it;
	struct ctl_attr a;
	ctl_iter_init(&it, payload, len);
	while (ctl_iter_next(&it, &a)) {
		if (a.type != EFI_A_ADDRESS)
			continue;
		if (spec.naddrs == EFI_MAX_ADDRS) {
			snprintf(err, errlen, "too many addresses: at most %d per interface",
				 EFI_MAX_ADDRS);
			return -EINVAL;
		}
		char why[128] = "";
		ctl_attr_str(&a, &s);
		if (efi_addr_parse(s, &spec.addrs[spec.naddrs], why, sizeof(why)) < 0) {
			snprintf(err, errlen, "invalid address '%s': %s", s, why);
			return -EINVAL;
		}
		spec.naddrs++;
	}

	if (ctl_has(tb, EFI_A_NETNS_PATH)) {
		r = adopt_path(p, tb, &spec, err, errlen);
		if (r < 0)
			return r;
	}
	enum efi_ctl_result result = 0;
	r = iface_attach(d, &spec, &effective, &result, err, errlen);
	if (r < 0) {
		if (ctl_has(tb, EFI_A_NETNS_PATH))
			forget_unused_path_instance(d, spec.instance);
		return r;
	}

	struct store_iface rec;
	r = store_iface_get(d->store, effective.instance, effective.name, &rec);
	if (r < 0) {
		snprintf(err, errlen, "attached, but reading it back failed: %s", store_errmsg(d->store));
		return r;
	}
	ctl_put_u32(body, EFI_A_RESULT, result);
	put_iface(d, body, &rec, false);
	log_info("attach %s/%s: %s", rec.spec.instance, rec.spec.name,
		 result == EFI_R_CREATED ? "created" :
		 result == EFI_R_REPAIRED ? "repaired" : "unchanged");
	return 0;
}

static int handle_detach(struct efid *d, const struct peer *p, struct ctl_attr *tb,
			 struct ctl_buf *body, char *err, size_t errlen)
{
	const char *instance, *name = NULL;
	uint32_t flags = 0;
	int r;

	r = check_mutate(d, p, err, errlen);
	if (r < 0)
		return r;
	if (!ctl_has(tb, EFI_A_INSTANCE)) {
		snprintf(err, errlen, "detach needs an instance name");
		return -EINVAL;
	}
	ctl_attr_str(&tb[EFI_A_INSTANCE], &instance);
	if (ctl_has(tb, EFI_A_FLAGS))
		ctl_attr_u32(&tb[EFI_A_FLAGS], &flags);
	if (ctl_has(tb, EFI_A_IFNAME))
		ctl_attr_str(&tb[EFI_A_IFNAME], &name);
	if (flags & ~EFI_F_ALL) {
		snprintf(err, errlen, "unknown detach flags 0x%x", flags & ~EFI_F_ALL);
		return -EINVAL;
	}
	if ((flags & EFI_F_ALL) && name && *name) {
		snprintf(err, errlen, "detach takes an interface name or --all, not both");
		return -EINVAL;
	}
	/* The processes using the interface learn first: their QPs go to ERR
	 * with flushed work (REVOKE), their CM peers are told (DREQ). */
	const char *only = (flags & EFI_F_ALL) ? NULL : name;
	if ((flags & EFI_F_ALL) || (name && *name)) {
		unsigned n = lease_revoke(d, instance, only);
		cm_iface_gone(d, instance, only);
		if (n)
			log_info("detach %s%s%s: %u context(s) revoked", instance, only ? "/" : "",
				 only ? only : "", n);
	}
	if (flags & EFI_F_ALL) {
		unsigned count = 0;
		r = iface_detach_all(d, instance, &count, err, errlen);
		forget_unused_path_instance(d, instance);
		if (r < 0)
			return r;
		ctl_put_u32(body, EFI_A_COUNT, count);
		log_info("detach %s --all: %u interface(s)", instance, count);
		return 0;
	}
	if (!name || !*name) {
		snprintf(err, errlen, "detach needs an interface name (or --all)");
		return -EINVAL;
	}
	r = iface_detach(d, instance, name, err, errlen);
	/* Also when the interface was already gone: a CNI DEL repeated, or
	 * after the pod's namespace went, still lets go of the namespace. */
	if (r == 0 || r == -ENOENT)
		forget_unused_path_instance(d, instance);
	if (r < 0)
		return r;
	ctl_put_u32(body, EFI_A_COUNT, 1);
	log_info("detach %s/%s", instance, name);
	return 0;
}

struct list_ctx {
	struct efid *d;
	struct ctl_buf *body;
	const char *ifname;
	unsigned matched;
	bool paged;
};

static int list_instance(const char *instance, void *ud)
{
	struct list_ctx *lc = ud;

	size_t nest = ctl_nest_begin(lc->body, EFI_A_INSTANCE_ENTRY);
	ctl_put_str(lc->body, EFI_A_INSTANCE, instance);
	/* /run/netns/NAME, or a CNI pod's namespace by its path */
	ctl_put_str(lc->body, EFI_A_NETNS, netns_exists(instance) ? "present" : "missing");
	ctl_nest_end(lc->body, nest);
	return 0;
}

static int list_iface(const struct store_iface *it, void *ud)
{
	struct list_ctx *lc = ud;
	if (lc->ifname && strcmp(lc->ifname, it->spec.name) != 0)
		return 0;
	lc->matched++;
	put_iface(lc->d, lc->body, it, lc->paged);
	return lc->body->err;
}

static int list_build(struct efid *d, const struct peer *p, struct ctl_attr *tb,
		      struct ctl_buf *body, bool paged, char *err, size_t errlen)
{
	const char *asked = NULL;
	bool deny;
	int r;

	if (ctl_has(tb, EFI_A_INSTANCE))
		ctl_attr_str(&tb[EFI_A_INSTANCE], &asked);
	if (asked && !efi_instance_name_valid(asked)) {
		/* It names a file under /run/netns: never let it walk elsewhere. */
		snprintf(err, errlen,
			 "invalid instance name '%.64s': use 1-63 of A-Z a-z 0-9 _ . -, not starting with . or -",
			 asked);
		return -EINVAL;
	}
	const char *instance = visible_instance(p, asked, &deny);
	struct list_ctx lc = { .d = d, .body = body, .paged = paged };
	if (ctl_has(tb, EFI_A_IFNAME))
		ctl_attr_str(&tb[EFI_A_IFNAME], &lc.ifname);

	ctl_put_str(body, EFI_A_HOST_ID, store_host_id(d->store));
	ctl_put_str(body, EFI_A_SERVER_VERSION, PACKAGE_VERSION);
	if (deny) {
		/* An instance (or unknown namespace) asking about another
		 * instance: it exists or not, the caller sees nothing. */
		if (asked) {
			snprintf(err, errlen, "instance '%s' not found", asked);
			return -ENOENT;
		}
		return 0;
	}
	if (instance) {
		unsigned count = 0;
		r = store_iface_foreach(d->store, instance, count_iface, &count);
		if (r < 0)
			goto store_fail;
		if (count == 0 && !netns_exists(instance)) {
			snprintf(err, errlen,
				 "instance '%s' not found: no interfaces on record and no network namespace "
				 NETNS_RUN_DIR "/%s", instance, instance);
			return -ENOENT;
		}
		list_instance(instance, &lc);
	} else {
		r = store_instance_foreach(d->store, list_instance, &lc);
		if (r < 0)
			goto store_fail;
	}
	r = store_iface_foreach(d->store, instance, list_iface, &lc);
	if (r < 0)
		goto store_fail;
	if (lc.ifname && lc.matched == 0) {
		snprintf(err, errlen, "interface '%s' not found%s%s", lc.ifname,
			 instance ? " in instance " : "", instance ? instance : "");
		return -ENOENT;
	}

	if (p->host && !instance) {
		const struct efid_stray *strays;
		uplinks_list(d, body);
		size_t n = iface_strays(d, &strays);
		for (size_t i = 0; i < n; i++) {
			size_t nest = ctl_nest_begin(body, EFI_A_STRAY);
			ctl_put_str(body, EFI_A_HOST_IFNAME, strays[i].host_ifname);
			ctl_put_str(body, EFI_A_INSTANCE, strays[i].instance);
			ctl_put_str(body, EFI_A_IFNAME, strays[i].ifname);
			ctl_nest_end(body, nest);
		}
	}
	return 0;
store_fail:
	if (r == -EMSGSIZE)
		snprintf(err, errlen, "the listing is too large for one reply; ask for one instance");
	else
		snprintf(err, errlen, "cannot read the state database: %s", store_errmsg(d->store));
	return r;
}

/* LIST.  A client that asks for pages (EFI_F_LIST_PAGED) gets the listing
 * built whole, then the page its cursor names; any other gets it in one
 * reply, as before paging existed. */
static int handle_list(struct efid *d, const struct peer *p, struct ctl_attr *tb,
		       struct ctl_buf *body, char *err, size_t errlen)
{
	uint32_t flags = 0, cursor = 0;
	struct ctl_buf full;
	int r;

	if (ctl_has(tb, EFI_A_FLAGS))
		ctl_attr_u32(&tb[EFI_A_FLAGS], &flags);
	if (ctl_has(tb, EFI_A_LIST_CURSOR))
		ctl_attr_u32(&tb[EFI_A_LIST_CURSOR], &cursor);
	if (!(flags & EFI_F_LIST_PAGED))
		return list_build(d, p, tb, body, false, err, errlen);
	ctl_buf_init(&full);
	full.limit = LIST_MAX_BYTES;
	ctl_msg_begin(&full, EFI_CTL_REPLY, 0);
	r = list_build(d, p, tb, &full, true, err, errlen);
	if (r >= 0 && full.err)
		r = full.err;
	if (r >= 0)
		r = list_page(&full, cursor, body);
	if (r == -EMSGSIZE && !*err)
		snprintf(err, errlen, "the listing passes efid's limit of %u MiB; ask for one instance",
			 LIST_MAX_BYTES >> 20);
	ctl_buf_free(&full);
	return r;
}

static int handle_open_device(struct efid *d, const struct peer *p, struct lease *lease,
			      struct ctl_attr *tb, struct ctl_buf *body, struct ctl_fds *out, char *err,
			      size_t errlen)
{
	const char *ifname;
	if (!ctl_has(tb, EFI_A_IFNAME)) {
		snprintf(err, errlen, "open-device needs an interface name");
		return -EINVAL;
	}
	ctl_attr_str(&tb[EFI_A_IFNAME], &ifname);
	return lease_open_device(d, lease, p, ifname, body, out, err, errlen);
}

static int dispatch(struct efid *d, const struct peer *peer, struct lease *lease, uint16_t type,
		    const uint8_t *payload, size_t len, struct ctl_buf *body, struct ctl_fds *in,
		    struct ctl_fds *out, char *err, size_t errlen)
{
	struct ctl_attr tb[POLICY_SIZE];
	uint16_t bad = 0;

	switch (type) {
	case EFI_CTL_HELLO:
	case EFI_CTL_ATTACH:
	case EFI_CTL_DETACH:
	case EFI_CTL_LIST:
	case EFI_CTL_OPEN_DEVICE:
	case EFI_CTL_PUBLISH_COUNTERS:
	case EFI_CTL_LEASE_RESUME:
	case EFI_CTL_RESERVE:
	case EFI_CTL_RELEASE:
		break;
	default:
		snprintf(err, errlen,
			 "unknown request type 0x%04x: this efid (%s) speaks control protocol %d; is the client newer than efid?",
			 type, PACKAGE_VERSION, EFI_CTL_VERSION);
		return -EOPNOTSUPP;
	}
	if (ctl_parse(payload, len, request_policy, POLICY_SIZE, tb, &bad) < 0) {
		if (bad)
			snprintf(err, errlen, "malformed request: attribute %u has a wrong type, length or is repeated", bad);
		else
			snprintf(err, errlen, "malformed request: the attribute stream is truncated or overruns the message");
		return -EBADMSG;
	}
	switch (type) {
	case EFI_CTL_HELLO:
		return handle_hello(d, peer, tb, body, err, errlen);
	case EFI_CTL_ATTACH: {
		int r = handle_attach(d, peer, tb, payload, len, body, err, errlen);
		/* A new instance can be connected to at once, not a second later. */
		if (r >= 0)
			cm_sync(d);
		return r;
	}
	case EFI_CTL_DETACH: {
		int r = handle_detach(d, peer, tb, body, err, errlen);
		if (r >= 0)
			cm_sync(d);
		return r;
	}
	case EFI_CTL_OPEN_DEVICE: {
		int r = handle_open_device(d, peer, lease, tb, body, out, err, errlen);
		if (r == 0)
			put_path_table(d, tb, body, out);
		return r;
	}
	case EFI_CTL_PUBLISH_COUNTERS:
		if (in->n != 1) {
			snprintf(err, errlen, "publish-counters needs one descriptor: the counters page");
			return -EINVAL;
		}
		in->n = 0;
		return lease_publish_counters(d, lease, peer, in->fd[0], err, errlen);
	case EFI_CTL_LEASE_RESUME: {
		int r = lease_resume(d, lease, peer, tb, in, body, err, errlen);
		if (r == 0)
			put_path_table(d, tb, body, out);
		return r;
	}
	case EFI_CTL_RESERVE:
		return lease_reserve(d, lease, tb, body, err, errlen);
	case EFI_CTL_RELEASE:
		return lease_release(d, lease, tb, err, errlen);
	default:
		return handle_list(d, peer, tb, body, err, errlen);
	}
}

int handle_request(struct efid *d, const struct peer *peer, struct lease *lease, uint16_t type,
		   const uint8_t *payload, size_t len, struct ctl_buf *body, struct ctl_fds *in,
		   struct ctl_fds *out, char *err, size_t errlen)
{
	int r = dispatch(d, peer, lease, type, payload, len, body, in, out, err, errlen);
	ctl_fds_close(in); /* descriptors nobody asked for */
	return r;
}
