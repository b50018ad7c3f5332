/* SPDX-License-Identifier: MIT */
/*
 * Netlink through libnl-route: efid's sockets, the kernel's errors, the
 * marks on efid's devices, and reading back what the kernel shows of an
 * interface.  Making and removing devices is in devices.c.
 */
#include "config.h"

#include <errno.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/netlink.h>
#include <netlink/attr.h>
#include <netlink/cache.h>
#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>

#include "efid.h"
#include "kernel.h"
#include "log.h"
#include "netns.h"

#ifndef IFF_LOWER_UP
#define IFF_LOWER_UP 0x10000 /* linux/if.h; glibc's net/if.h lacks it */
#endif
#ifndef SOL_NETLINK
#define SOL_NETLINK 270
#endif
#ifndef NETLINK_EXT_ACK
#define NETLINK_EXT_ACK 11
#endif

/* ---- errors ------------------------------------------------------------ */

/*
 * libnl folds the kernel's errno into a coarse NLE_* code (ENOTCONN and many
 * others become "Unspecific failure").  This callback keeps the real errno
 * and the kernel's extended-ack text, so that error replies say what the
 * kernel actually objected to.
 */
static int record_kernel_error(struct sockaddr_nl *nla, struct nlmsgerr *e, void *arg)
{
	struct kernel *k = arg;
	const struct nlmsghdr *hdr = (const struct nlmsghdr *)((const char *)e - NLMSG_HDRLEN);
	size_t ack_len = sizeof(*e);

	k->last_errno = -e->error;
	k->last_extack[0] = '\0';
	if (hdr->nlmsg_flags & NLM_F_ACK_TLVS) {
		if (!(hdr->nlmsg_flags & NLM_F_CAPPED))
			ack_len += e->msg.nlmsg_len - NLMSG_HDRLEN;
		ack_len = NLMSG_ALIGN(ack_len); /* the attributes start aligned */
		if (hdr->nlmsg_len >= NLMSG_HDRLEN + ack_len) {
			struct nlattr *tb[NLMSGERR_ATTR_MAX + 1];
			struct nlattr *attrs = (struct nlattr *)((char *)e + ack_len);
			int len = (int)(hdr->nlmsg_len - NLMSG_HDRLEN - ack_len);

			if (nla_parse(tb, NLMSGERR_ATTR_MAX, attrs, len, NULL) == 0 &&
			    tb[NLMSGERR_ATTR_MSG])
				snprintf(k->last_extack, sizeof(k->last_extack), "%s",
					 (const char *)nla_data(tb[NLMSGERR_ATTR_MSG]));
		}
	}
	return NL_STOP;
}

int kernel_errno(int nlerr)
{
	switch (nlerr < 0 ? -nlerr : nlerr) {
	case 0:
		return 0;
	case NLE_INTR:
		return -EINTR;
	case NLE_AGAIN:
		return -EAGAIN;
	case NLE_NOMEM:
		return -ENOMEM;
	case NLE_EXIST:
		return -EEXIST;
	case NLE_INVAL:
		return -EINVAL;
	case NLE_RANGE:
		return -ERANGE;
	case NLE_MSGSIZE:
		return -EMSGSIZE;
	case NLE_OPNOTSUPP:
		return -EOPNOTSUPP;
	case NLE_AF_NOSUPPORT:
		return -EAFNOSUPPORT;
	case NLE_OBJ_NOTFOUND:
	case NLE_NODEV:
		return -ENOENT;
	case NLE_BUSY:
		return -EBUSY;
	case NLE_NOACCESS:
		return -EACCES;
	case NLE_PERM:
		return -EPERM;
	default:
		return -EIO;
	}
}

int kernel_result(struct kernel *k, int nlrc)
{
	int rc;

	if (nlrc >= 0) {
		k->last_errno = 0;
		k->last_extack[0] = '\0';
		return 0;
	}
	rc = k->last_errno > 0 ? -k->last_errno : kernel_errno(nlrc);
	/* The kernel's text explains this error only, not a later one. */
	k->extack_rc = k->last_errno > 0 ? rc : 0;
	k->last_errno = 0;
	return rc;
}

int kernel_fail(struct kernel *k, int rc, char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	size_t n;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	n = strlen(err);
	if (n < errlen) {
		bool why = k->last_extack[0] && k->extack_rc == rc;

		snprintf(err + n, errlen - n, ": %s%s%s%s", strerror(-rc), why ? " (" : "",
			 why ? k->last_extack : "", why ? ")" : "");
	}
	k->last_extack[0] = '\0';
	k->extack_rc = 0;
	/* The caller's permission was checked before; a refusal here is
	 * efid's own (missing capability, IPv6 disabled, ...), so it must not
	 * reach the client as "permission denied". */
	return rc == -EPERM || rc == -EACCES ? -EIO : rc;
}

/* ---- sockets ----------------------------------------------------------- */

static void socket_track_errors(struct kernel *k, struct nl_sock *sk)
{
	int one = 1;

	nl_socket_modify_err_cb(sk, NL_CB_CUSTOM, record_kernel_error, k);
	/* Best effort: without it errors simply come without the text. */
	(void)setsockopt(nl_socket_get_fd(sk), SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
}

struct nl_sock *kernel_ns_socket(struct kernel *k, int ns_fd)
{
	struct nl_sock *sk = netns_rtnl_socket(k->self_netns_fd, ns_fd);

	if (sk)
		socket_track_errors(k, sk);
	return sk;
}

int kernel_open(struct efid *d)
{
	struct kernel *k;
	int rc;

	k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	k->d = d;
	k->self_netns_fd = netns_self_open();
	if (k->self_netns_fd < 0) {
		rc = k->self_netns_fd;
		log_error("cannot open efid's own network namespace: %s", strerror(-rc));
		goto err_free;
	}
	k->host = kernel_ns_socket(k, -1);
	if (!k->host) {
		rc = -errno;
		log_error("cannot open a netlink socket: %s", strerror(-rc));
		goto err_close;
	}
	d->kernel = k;
	return 0;

err_close:
	close(k->self_netns_fd);
err_free:
	free(k);
	return rc;
}

void kernel_close(struct efid *d)
{
	struct kernel *k = d ? d->kernel : NULL;

	if (!k)
		return;
	watch_stop(k);
	kernel_strays_free(k);
	free(k->repair_failed);
	nl_socket_free(k->host);
	close(k->self_netns_fd);
	free(k);
	d->kernel = NULL;
}

/* ---- marks ------------------------------------------------------------- */

void kernel_mark_prefix(struct kernel *k, char *buf, size_t len)
{
	snprintf(buf, len, "efi:%s:", store_host_id(k->d->store));
}

void kernel_mark(struct kernel *k, const char *instance, const char *name, char *buf,
		 size_t len)
{
	snprintf(buf, len, "efi:%s:%s/%s", store_host_id(k->d->store), instance, name);
}

bool kernel_mark_parse(struct kernel *k, const char *alias, char *instance, size_t ilen,
		       char *name, size_t nlen)
{
	char prefix[KERNEL_MARK_MAX];
	const char *rest, *slash;
	size_t plen;

	if (!alias)
		return false;
	kernel_mark_prefix(k, prefix, sizeof(prefix));
	plen = strlen(prefix);
	if (strncmp(alias, prefix, plen) != 0)
		return false;
	rest = alias + plen;
	slash = strchr(rest, '/');
	if (!slash || (size_t)(slash - rest) >= ilen || strlen(slash + 1) >= nlen)
		return false;
	memcpy(instance, rest, (size_t)(slash - rest));
	instance[slash - rest] = '\0';
	strcpy(name, slash + 1);
	return true;
}

bool kernel_link_has_mark(struct rtnl_link *link, const char *mark)
{
	const char *alias = rtnl_link_get_ifalias(link);

	return alias && strcmp(alias, mark) == 0;
}

/* ---- looking at links -------------------------------------------------- */

int kernel_link_get(struct kernel *k, struct nl_sock *sk, const char *name,
		    struct rtnl_link **out)
{
	int rc = kernel_result(k, rtnl_link_get_kernel(sk, 0, name, out));

	if (rc == -ENODEV)
		rc = -ENOENT;
	k->last_extack[0] = '\0';
	return rc;
}

const char *kernel_link_state(unsigned flags)
{
	if (!(flags & IFF_UP))
		return "down";
	return (flags & IFF_LOWER_UP) ? "up" : "no-carrier";
}

int kernel_uplink_check(struct kernel *k, const char *kind, const char *uplink, int *ifindex,
			char *err, size_t errlen)
{
	struct rtnl_link *link = NULL;
	const char *type;
	int rc;

	rc = kernel_link_get(k, k->host, uplink, &link);
	if (rc == -ENOENT && strcmp(kind, "veth") == 0) {
		snprintf(err, errlen,
			 "uplink '%s' does not exist: create the bridge (`ip link add %s type "
			 "bridge`) or name another with --uplink", uplink, uplink);
		return -ENOENT;
	}
	if (rc == -ENOENT) {
		snprintf(err, errlen, "uplink '%s' does not exist: name the device the %s sits "
			 "on with --uplink", uplink, kind);
		return -ENOENT;
	}
	if (rc < 0)
		return kernel_fail(k, rc, err, errlen, "cannot look up uplink '%s'", uplink);
	type = rtnl_link_get_type(link);
	if (strcmp(kind, "veth") == 0 && (!type || strcmp(type, "bridge") != 0)) {
		snprintf(err, errlen,
			 "uplink '%s' is not a bridge (it is a %s device): a veth interface joins "
			 "a bridge; use kind macvlan to attach to a physical device", uplink,
			 type ? type : "physical");
		rtnl_link_put(link);
		return -EINVAL;
	}
	*ifindex = rtnl_link_get_ifindex(link);
	rtnl_link_put(link);
	return 0;
}

int kernel_dump(struct kernel *k, struct nl_sock *sk, struct nl_cache **links,
		struct nl_cache **addrs)
{
	int rc;

	*links = NULL;
	if (addrs)
		*addrs = NULL;
	rc = kernel_result(k, rtnl_link_alloc_cache(sk, AF_UNSPEC, links));
	if (rc < 0)
		return rc;
	if (addrs) {
		rc = kernel_result(k, rtnl_addr_alloc_cache(sk, addrs));
		if (rc < 0) {
			nl_cache_free(*links);
			*links = NULL;
		}
	}
	return rc;
}

static bool gid_listed(const union efi_gid *gids, size_t n, const union efi_gid *g)
{
	for (size_t i = 0; i < n; i++)
		if (memcmp(gids[i].raw, g->raw, sizeof(g->raw)) == 0)
			return true;
	return false;
}

struct collect_gids {
	int ifindex;
	size_t n;
	union efi_gid gids[STORE_MAX_GIDS];
};

static void collect_gid(struct nl_object *obj, void *arg)
{
	struct rtnl_addr *a = (struct rtnl_addr *)obj;
	struct collect_gids *c = arg;
	struct nl_addr *local;
	union efi_gid g;

	if (rtnl_addr_get_ifindex(a) != c->ifindex || c->n >= STORE_MAX_GIDS)
		return;
	local = rtnl_addr_get_local(a);
	if (!local)
		return;
	if (efi_gid_from_addr(nl_addr_get_family(local), nl_addr_get_binary_addr(local), &g) < 0)
		return;
	if (!gid_listed(c->gids, c->n, &g))
		c->gids[c->n++] = g;
}

/*
 * GIDs in a stable order: the configured addresses first, in the order they
 * were asked for, then whatever else the interface has (link-local, addresses
 * added by hand) in the kernel's order.  New GIDs take the lowest free index,
 * so this makes GID 0 the first configured address.
 */
static void order_gids(const struct efi_iface_spec *spec, struct collect_gids *c,
		       struct kernel_obs *obs)
{
	obs->ngids = 0;
	for (size_t i = 0; i < spec->naddrs; i++) {
		union efi_gid g;

		if (efi_gid_from_addr(spec->addrs[i].family, &spec->addrs[i].a, &g) == 0 &&
		    gid_listed(c->gids, c->n, &g) && !gid_listed(obs->gids, obs->ngids, &g))
			obs->gids[obs->ngids++] = g;
	}
	for (size_t i = 0; i < c->n; i++)
		if (!gid_listed(obs->gids, obs->ngids, &c->gids[i]))
			obs->gids[obs->ngids++] = c->gids[i];
}

void kernel_observe(struct kernel *k, const struct store_iface *rec, struct nl_cache *links,
		    struct nl_cache *addrs, struct kernel_obs *obs)
{
	char mark[KERNEL_MARK_MAX];
	struct rtnl_link *inner = NULL, *host = NULL;
	struct collect_gids *c;

	memset(obs, 0, sizeof(*obs));
	snprintf(obs->link, sizeof(obs->link), "missing");
	if (!links)
		return;
	kernel_mark(k, rec->spec.instance, rec->spec.name, mark, sizeof(mark));
	inner = rtnl_link_get_by_name(links, rec->spec.name);
	if (!inner || !kernel_link_has_mark(inner, mark))
		goto out;
	if (rec->host_ifname[0]) {
		if (kernel_link_get(k, k->host, rec->host_ifname, &host) < 0 ||
		    !kernel_link_has_mark(host, mark))
			goto out;
	}
	obs->present = true;
	obs->ifindex = (uint32_t)rtnl_link_get_ifindex(inner);
	obs->mtu = rtnl_link_get_mtu(inner);
	snprintf(obs->link, sizeof(obs->link), "%s",
		 kernel_link_state(rtnl_link_get_flags(inner)));
	c = calloc(1, sizeof(*c));
	if (c) {
		c->ifindex = (int)obs->ifindex;
		if (addrs)
			nl_cache_foreach(addrs, collect_gid, c);
		order_gids(&rec->spec, c, obs);
		free(c);
	}
out:
	if (host)
		rtnl_link_put(host);
	if (inner)
		rtnl_link_put(inner);
}
