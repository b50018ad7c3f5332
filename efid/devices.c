/* SPDX-License-Identifier: MIT */
/*
 * Making and removing the devices of an interface through libnl-route: a
 * veth pair whose inner end is born in the instance's namespace, or a
 * macvlan on the uplink; their marks, addresses and state.  A failed
 * creation deletes whatever it made before it returns.
 */
#include "config.h"

#include <errno.h>
#include <linux/ip.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include <netlink/cache.h>
#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <netlink/route/link/inet.h>
#include <netlink/route/link/macvlan.h>
#include <netlink/route/link/veth.h>

#include "efid.h"
#include "kernel.h"
#include "log.h"
#include "netns.h"

/* ---- changing links ---------------------------------------------------- */

static int link_change(struct kernel *k, struct nl_sock *sk, struct rtnl_link *orig,
		       const char *alias, bool up)
{
	struct rtnl_link *changes = rtnl_link_alloc();
	int rc;

	if (!changes)
		return -ENOMEM;
	if (alias) {
		rtnl_link_set_ifalias(changes, alias);
		/* Several interfaces of one instance may share an L2 segment
		 * (and a subnet): with Linux's defaults every one of them
		 * answers ARP for the addresses of all, so peers resolve
		 * efi0's address to efi1's MAC and the wire sockets bound to
		 * efi0 never see their traffic.  Each answers only for its own
		 * addresses (arp_ignore=1) and asks from the address of the
		 * interface it sends on (arp_announce=2), as RDMA NICs do. */
		rtnl_link_inet_set_conf(changes, IPV4_DEVCONF_ARP_IGNORE, 1);
		rtnl_link_inet_set_conf(changes, IPV4_DEVCONF_ARP_ANNOUNCE, 2);
	}
	if (up)
		rtnl_link_set_flags(changes, IFF_UP);
	rc = kernel_result(k, rtnl_link_change(sk, orig, changes, 0));
	rtnl_link_put(changes);
	return rc;
}

void kernel_arp_own(struct kernel *k, struct nl_sock *sk, struct nl_cache *links, uint32_t ifindex)
{
	struct rtnl_link *l = rtnl_link_get(links, (int)ifindex), *changes = NULL;
	uint32_t ignore = 0, announce = 0;

	if (!l)
		return;
	if (rtnl_link_inet_get_conf(l, IPV4_DEVCONF_ARP_IGNORE, &ignore) == 0 && ignore == 1 &&
	    rtnl_link_inet_get_conf(l, IPV4_DEVCONF_ARP_ANNOUNCE, &announce) == 0 && announce == 2)
		goto out;
	changes = rtnl_link_alloc();
	if (!changes)
		goto out;
	rtnl_link_inet_set_conf(changes, IPV4_DEVCONF_ARP_IGNORE, 1);
	rtnl_link_inet_set_conf(changes, IPV4_DEVCONF_ARP_ANNOUNCE, 2);
	int rc = kernel_result(k, rtnl_link_change(sk, l, changes, 0));
	if (rc < 0)
		log_warning("cannot set arp_ignore/arp_announce on %s: %s",
			    rtnl_link_get_name(l), strerror(-rc));
	else
		log_info("%s now answers ARP only for its own addresses", rtnl_link_get_name(l));
out:
	rtnl_link_put(changes);
	rtnl_link_put(l);
}

/* Deletes the device called name in sk's namespace if it carries mark. */
static int delete_marked(struct kernel *k, struct nl_sock *sk, const char *name,
			 const char *mark)
{
	struct rtnl_link *link = NULL;
	int rc;

	rc = kernel_link_get(k, sk, name, &link);
	if (rc == -ENOENT)
		return 0;
	if (rc < 0)
		return rc;
	if (kernel_link_has_mark(link, mark))
		rc = kernel_result(k, rtnl_link_delete(sk, link));
	if (rc == -ENODEV || rc == -ENOENT)
		rc = 0;
	rtnl_link_put(link);
	return rc;
}

static int delete_by_name(struct kernel *k, struct nl_sock *sk, const char *name)
{
	struct rtnl_link *link = rtnl_link_alloc();
	int rc;

	if (!link)
		return -ENOMEM;
	rtnl_link_set_name(link, name);
	rc = kernel_result(k, rtnl_link_delete(sk, link));
	rtnl_link_put(link);
	return rc == -ENODEV || rc == -ENOENT ? 0 : rc;
}

int kernel_remove(struct kernel *k, const char *instance, const char *name,
		  const char *host_ifname, char *err, size_t errlen)
{
	char mark[KERNEL_MARK_MAX];
	struct nl_sock *sk;
	int nsfd, rc;

	kernel_mark(k, instance, name, mark, sizeof(mark));
	/* Deleting either end of a veth pair deletes both. */
	if (host_ifname && host_ifname[0]) {
		rc = delete_marked(k, k->host, host_ifname, mark);
		if (rc < 0)
			return kernel_fail(k, rc, err, errlen, "cannot delete %s", host_ifname);
	}
	nsfd = netns_open(instance);
	if (nsfd == -ENOENT)
		return 0; /* the namespace took its devices with it */
	if (nsfd < 0)
		return kernel_fail(k, nsfd, err, errlen, "cannot open the namespace of '%s'",
				   instance);
	sk = kernel_ns_socket(k, nsfd);
	close(nsfd);
	if (!sk)
		return kernel_fail(k, -errno, err, errlen,
				   "cannot open a netlink socket in '%s'", instance);
	rc = delete_marked(k, sk, name, mark);
	nl_socket_free(sk);
	if (rc < 0)
		return kernel_fail(k, rc, err, errlen, "cannot delete %s in '%s'", name, instance);
	return 0;
}

static int pick_host_ifname(struct kernel *k, char *out)
{
	for (int tries = 0; tries < 16; tries++) {
		uint8_t r[6];
		struct rtnl_link *link = NULL;
		int rc;

		if (getrandom(r, sizeof(r), 0) != sizeof(r))
			return -EIO;
		snprintf(out, EFI_IFNAME_MAX + 1, KERNEL_HOST_PREFIX "%02x%02x%02x%02x%02x%02x",
			 r[0], r[1], r[2], r[3], r[4], r[5]);
		rc = kernel_link_get(k, k->host, out, &link);
		if (rc == -ENOENT)
			return 0;
		if (rc < 0)
			return rc;
		rtnl_link_put(link);
	}
	return -EEXIST;
}

static int addr_add(struct kernel *k, struct nl_sock *sk, int ifindex, const struct efi_addr *a)
{
	struct rtnl_addr *ra = rtnl_addr_alloc();
	struct nl_addr *local;
	int rc;

	if (!ra)
		return -ENOMEM;
	local = nl_addr_build(a->family, &a->a, a->family == AF_INET ? 4 : 16);
	if (!local) {
		rtnl_addr_put(ra);
		return -ENOMEM;
	}
	nl_addr_set_prefixlen(local, a->prefixlen);
	rtnl_addr_set_ifindex(ra, ifindex);
	rtnl_addr_set_local(ra, local);
	rtnl_addr_set_prefixlen(ra, a->prefixlen);
	/* Usable at once: no duplicate address detection delay. */
	if (a->family == AF_INET6)
		rtnl_addr_set_flags(ra, IFA_F_NODAD);
	rc = kernel_result(k, rtnl_addr_add(sk, ra, NLM_F_EXCL));
	nl_addr_put(local);
	rtnl_addr_put(ra);
	return rc;
}

struct has_addr {
	int ifindex;
	const struct efi_addr *want;
	bool found;
};

static void match_addr(struct nl_object *obj, void *arg)
{
	struct rtnl_addr *a = (struct rtnl_addr *)obj;
	struct has_addr *h = arg;
	struct nl_addr *local = rtnl_addr_get_local(a);
	size_t len = h->want->family == AF_INET ? 4 : 16;

	if (rtnl_addr_get_ifindex(a) == h->ifindex && local &&
	    nl_addr_get_family(local) == h->want->family && nl_addr_get_len(local) == len &&
	    memcmp(nl_addr_get_binary_addr(local), &h->want->a, len) == 0)
		h->found = true;
}

int kernel_addrs_ensure(struct kernel *k, struct nl_sock *sk, uint32_t ifindex,
			const struct efi_iface_spec *spec, struct nl_cache *addrs,
			unsigned *added, char *err, size_t errlen)
{
	*added = 0;
	for (size_t i = 0; i < spec->naddrs; i++) {
		struct has_addr h = { .ifindex = (int)ifindex, .want = &spec->addrs[i] };
		char buf[INET6_ADDRSTRLEN + 8];
		int rc;

		if (addrs)
			nl_cache_foreach(addrs, match_addr, &h);
		if (h.found)
			continue;
		rc = addr_add(k, sk, (int)ifindex, &spec->addrs[i]);
		if (rc < 0)
			return kernel_fail(k, rc, err, errlen, "cannot add address %s to %s in '%s'",
					   efi_addr_format(&spec->addrs[i], buf, sizeof(buf)),
					   spec->name, spec->instance);
		(*added)++;
	}
	return 0;
}

static int create_veth(struct kernel *k, const struct efi_iface_spec *spec, int nsfd,
		       int uplink_ifindex, const char *host_ifname, char *err, size_t errlen)
{
	struct rtnl_link *link, *peer;
	int rc;

	link = rtnl_link_veth_alloc();
	if (!link)
		return kernel_fail(k, -ENOMEM, err, errlen, "cannot create a veth pair");
	peer = rtnl_link_veth_get_peer(link);
	rtnl_link_set_name(link, host_ifname);
	rtnl_link_set_name(peer, spec->name);
	/* Born inside the instance, so its name never has to be free on the
	 * host as well. */
	rtnl_link_set_ns_fd(peer, nsfd);
	if (spec->mtu) {
		rtnl_link_set_mtu(link, spec->mtu);
		rtnl_link_set_mtu(peer, spec->mtu);
	}
	if (uplink_ifindex > 0)
		rtnl_link_set_master(link, uplink_ifindex);
	/* The host end can come up at birth; the peer cannot (the kernel
	 * refuses flags on a peer created in another namespace). */
	rtnl_link_set_flags(link, IFF_UP);
	rc = kernel_result(k, rtnl_link_add(k->host, link, NLM_F_CREATE | NLM_F_EXCL));
	rtnl_link_put(peer);
	rtnl_link_veth_release(link);
	if (rc < 0)
		return kernel_fail(k, rc, err, errlen, "cannot create veth pair %s/%s%s", host_ifname,
				   spec->name,
				   rc == -EINVAL && spec->mtu ? " (is the MTU supported?)" : "");
	return 0;
}

static int create_macvlan(struct kernel *k, const struct efi_iface_spec *spec, int nsfd,
			  int uplink_ifindex, char *err, size_t errlen)
{
	struct rtnl_link *link;
	int rc;

	link = rtnl_link_macvlan_alloc();
	if (!link)
		return kernel_fail(k, -ENOMEM, err, errlen, "cannot create a macvlan");
	rtnl_link_set_name(link, spec->name);
	rtnl_link_set_link(link, uplink_ifindex);
	rtnl_link_set_ns_fd(link, nsfd);
	rtnl_link_macvlan_set_mode(link, rtnl_link_macvlan_str2mode("bridge"));
	if (spec->mtu)
		rtnl_link_set_mtu(link, spec->mtu);
	rc = kernel_result(k, rtnl_link_add(k->host, link, NLM_F_CREATE | NLM_F_EXCL));
	rtnl_link_put(link);
	if (rc < 0)
		return kernel_fail(k, rc, err, errlen, "cannot create macvlan %s on %s%s",
				   spec->name, spec->uplink,
				   rc == -EINVAL && spec->mtu ?
					   " (an MTU above the uplink's is not possible)" : "");
	return 0;
}

int kernel_create(struct kernel *k, const struct efi_iface_spec *spec, char *host_ifname,
		  uint32_t *mtu, char *err, size_t errlen)
{
	bool veth = strcmp(spec->kind, "macvlan") != 0;
	char mark[KERNEL_MARK_MAX];
	struct rtnl_link *inner = NULL, *host = NULL;
	struct nl_sock *sk = NULL;
	int nsfd, uplink_ifindex = 0, rc;
	bool created = false;
	unsigned added;

	kernel_mark(k, spec->instance, spec->name, mark, sizeof(mark));
	nsfd = netns_open(spec->instance);
	if (nsfd == -ENOENT) {
		snprintf(err, errlen,
			 "instance '%s' does not exist: create its network namespace with "
			 "`ip netns add %s`", spec->instance, spec->instance);
		return -ENOENT;
	}
	if (nsfd < 0)
		return kernel_fail(k, nsfd, err, errlen, "cannot open the namespace of '%s'",
				   spec->instance);
	sk = kernel_ns_socket(k, nsfd);
	if (!sk) {
		rc = kernel_fail(k, -errno, err, errlen, "cannot enter the namespace of '%s'",
				 spec->instance);
		goto out;
	}
	rc = kernel_link_get(k, sk, spec->name, &inner);
	if (rc == 0 && kernel_link_has_mark(inner, mark)) {
		/* A stray of this very interface (made by this efid, record
		 * lost): attaching it again is the operator's say-so to
		 * replace it.  Deleting a veth's inner end takes its host
		 * end along. */
		log_notice("replacing the stray %s in '%s' made earlier by this efid", spec->name,
			   spec->instance);
		rc = kernel_result(k, rtnl_link_delete(sk, inner));
		rtnl_link_put(inner);
		inner = NULL;
		if (rc < 0 && rc != -ENODEV) {
			rc = kernel_fail(k, rc, err, errlen, "cannot remove the stray %s in '%s'",
					 spec->name, spec->instance);
			goto out;
		}
		rc = -ENOENT;
	} else if (rc == 0) {
		snprintf(err, errlen,
			 "a device named %s already exists in instance '%s' (efid did not make it): "
			 "pick another name or remove it", spec->name, spec->instance);
		rc = -EEXIST;
		goto out;
	}
	if (rc != -ENOENT) {
		rc = kernel_fail(k, rc, err, errlen, "cannot look up %s in '%s'", spec->name,
				 spec->instance);
		goto out;
	}
	if (spec->uplink[0]) {
		rc = kernel_uplink_check(k, spec->kind, spec->uplink, &uplink_ifindex, err, errlen);
		if (rc < 0)
			goto out;
	} else if (!veth) {
		snprintf(err, errlen, "a macvlan interface needs an uplink device: name one with "
			 "--uplink or set DefaultUplink= in efid.conf");
		rc = -EINVAL;
		goto out;
	}

	if (veth) {
		if (!host_ifname[0]) {
			rc = pick_host_ifname(k, host_ifname);
			if (rc < 0) {
				rc = kernel_fail(k, rc, err, errlen, "cannot pick a host device name");
				goto out;
			}
		} else if (kernel_link_get(k, k->host, host_ifname, &host) == 0) {
			/* Re-creating with the recorded name: a leftover of ours
			 * may go, anyone else's device may not. */
			if (!kernel_link_has_mark(host, mark)) {
				snprintf(err, errlen, "the host device name %s is taken by a device "
					 "efid did not make: remove it or detach and attach again",
					 host_ifname);
				rc = -EEXIST;
				goto out;
			}
			rc = delete_marked(k, k->host, host_ifname, mark);
			if (rc < 0) {
				rc = kernel_fail(k, rc, err, errlen, "cannot remove the leftover %s",
						 host_ifname);
				goto out;
			}
		}
		rc = create_veth(k, spec, nsfd, uplink_ifindex, host_ifname, err, errlen);
		if (rc < 0)
			goto out;
		created = true;
		if (host)
			rtnl_link_put(host);
		host = NULL;
		rc = kernel_link_get(k, k->host, host_ifname, &host);
		if (rc == 0)
			rc = link_change(k, k->host, host, mark, false);
		if (rc < 0) {
			rc = kernel_fail(k, rc, err, errlen, "cannot mark %s", host_ifname);
			goto out;
		}
	} else {
		rc = create_macvlan(k, spec, nsfd, uplink_ifindex, err, errlen);
		if (rc < 0)
			goto out;
		created = true;
	}

	rc = kernel_link_get(k, sk, spec->name, &inner);
	if (rc < 0) {
		rc = kernel_fail(k, rc, err, errlen, "cannot find the new %s in '%s'", spec->name,
				 spec->instance);
		goto out;
	}
	rc = link_change(k, sk, inner, mark, false);
	if (rc < 0) {
		rc = kernel_fail(k, rc, err, errlen, "cannot mark %s in '%s'", spec->name,
				 spec->instance);
		goto out;
	}
	rc = kernel_addrs_ensure(k, sk, (uint32_t)rtnl_link_get_ifindex(inner), spec, NULL, &added,
				 err, errlen);
	if (rc < 0)
		goto out;
	rc = link_change(k, sk, inner, NULL, true);
	if (rc < 0) {
		rc = kernel_fail(k, rc, err, errlen, "cannot bring %s up in '%s'", spec->name,
				 spec->instance);
		goto out;
	}
	*mtu = rtnl_link_get_mtu(inner);
	rc = 0;

out:
	/* Undo by name, mark or not: the names were checked free before, so
	 * what carries them now is what this call made. */
	if (rc < 0 && created) {
		int undo = veth ? delete_by_name(k, k->host, host_ifname)
				: delete_by_name(k, sk, spec->name);

		if (undo < 0)
			log_warning("could not undo the half-made %s/%s: %s", spec->instance,
				    spec->name, strerror(-undo));
	}
	if (host)
		rtnl_link_put(host);
	if (inner)
		rtnl_link_put(inner);
	nl_socket_free(sk);
	close(nsfd);
	return rc;
}
