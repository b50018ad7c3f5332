/* SPDX-License-Identifier: MIT */
/*
 * LEASE_RESUME: efid restarted (stopped, crashed, upgraded) while processes
 * kept their wire sockets and went on moving data.  The new efid knows none
 * of their leases; each libefi context reconnects on its own and hands back
 * the socket it holds.  The socket itself is the proof: efid accepts the
 * lease only when the descriptor is a UDP socket of the caller's instance
 * namespace, bound to the named interface on PortBase + slot, and the slot
 * is not leased to anyone else.  Until then the slot is simply in use (its
 * port is bound), so OPEN_DEVICE cannot hand it out twice.
 */
#include "config.h"

#include <errno.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "efid.h"
#include "lease_int.h"
#include "log.h"
#include "netns.h"
#include "store.h"

/* Same namespace: the socket's (SIOCGSKNS) and the instance's. */
static int same_netns(int sock, const char *instance)
{
	struct stat a, b;
	int ns = ioctl(sock, SIOCGSKNS);
	if (ns < 0)
		return -errno;
	int inst = netns_open(instance);
	int r = inst < 0 ? inst : 0;
	if (r == 0 && (fstat(ns, &a) < 0 || fstat(inst, &b) < 0))
		r = -errno;
	if (r == 0 && (a.st_dev != b.st_dev || a.st_ino != b.st_ino))
		r = -EXDEV;
	close(ns);
	if (inst >= 0)
		close(inst);
	return r;
}

/* The socket is lane `lane` of slot's on ifname: UDP, bound there, on
 * PortBase + lane × 4096 + slot. */
static int check_socket(struct efid *d, int fd, const char *ifname, unsigned slot, unsigned lane,
			char *err, size_t errlen)
{
	struct sockaddr_in6 sin6;
	socklen_t len = sizeof(sin6);
	char dev[IFNAMSIZ + 1] = "";
	socklen_t devlen = sizeof(dev) - 1;
	int type = 0;
	socklen_t tlen = sizeof(type);

	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tlen) < 0 || type != SOCK_DGRAM ||
	    getsockname(fd, (struct sockaddr *)&sin6, &len) < 0 || sin6.sin6_family != AF_INET6) {
		snprintf(err, errlen, "the descriptor is not an EFI wire socket (a UDP IPv6 socket)");
		return -EINVAL;
	}
	if (ntohs(sin6.sin6_port) != lease_lane_port(d, slot, lane)) {
		snprintf(err, errlen, "socket %u is bound to port %u, lane %u of slot %u is %u",
			 lane, ntohs(sin6.sin6_port), lane, slot, lease_lane_port(d, slot, lane));
		return -EINVAL;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, dev, &devlen) < 0 ||
	    strcmp(dev, ifname) != 0) {
		snprintf(err, errlen, "the socket is not bound to interface '%s'", ifname);
		return -EINVAL;
	}
	return 0;
}

int lease_resume(struct efid *d, struct lease *l, const struct peer *p, const struct ctl_attr *tb,
		 struct ctl_fds *fds, struct ctl_buf *body, char *err, size_t errlen)
{
	struct lease_registry *reg = lease_registry(d);
	struct store_iface it;
	const char *ifname = NULL;
	uint32_t qpn_base = 0;
	int r;

	if (!reg || !l) {
		r = -ENOMEM;
		goto out;
	}
	if (!p->instance[0]) {
		snprintf(err, errlen, "permission denied: leases are resumed from inside their instance");
		r = -EPERM;
		goto out;
	}
	if (fds->n < 1 || fds->n > EFID_LANES_MAX || !ctl_has(tb, EFI_A_IFNAME) ||
	    !ctl_has(tb, EFI_A_QPN_BASE) || ctl_attr_str(&tb[EFI_A_IFNAME], &ifname) ||
	    ctl_attr_u32(&tb[EFI_A_QPN_BASE], &qpn_base)) {
		snprintf(err, errlen,
			 "lease-resume needs IFNAME, QPN_BASE and 1..%u descriptors: the wire sockets, in lane order",
			 EFID_LANES_MAX);
		r = -EINVAL;
		goto out;
	}
	unsigned slot = qpn_base >> LEASE_SLOT_BITS;
	if ((qpn_base & (LEASE_QPNS_PER_SLOT - 1)) || slot == 0 || slot > LEASE_MAX_SLOTS) {
		snprintf(err, errlen, "QPN base 0x%x is not the start of a slot", qpn_base);
		r = -EINVAL;
		goto out;
	}
	if (l->nslots >= LEASE_MAX_PER_CLIENT) {
		snprintf(err, errlen, "this connection already holds %u endpoints", l->nslots);
		r = -EMFILE;
		goto out;
	}
	r = store_iface_get(d->store, p->instance, ifname, &it);
	if (r == -ENOENT || (r == 0 && strcmp(it.state, "attached") != 0)) {
		snprintf(err, errlen, "no attached EFI interface '%s' in instance '%s': it was detached",
			 ifname, p->instance);
		r = -ENODEV;
		goto out;
	}
	if (r < 0) {
		snprintf(err, errlen, "cannot read the state database: %s", store_errmsg(d->store));
		goto out;
	}
	/* Every lane the process holds must be the slot's (a process keeps
	 * the lanes it was given even if efid's Lanes changed meanwhile). */
	for (unsigned lane = 0; lane < fds->n; lane++) {
		r = check_socket(d, fds->fd[lane], it.spec.name, slot, lane, err, errlen);
		if (r)
			goto out;
		r = same_netns(fds->fd[lane], p->instance);
		if (r) {
			snprintf(err, errlen, "socket %u does not live in instance '%s'", lane, p->instance);
			r = r == -EXDEV ? -EPERM : r;
			goto out;
		}
	}
	if (lease_slot_taken(reg, p->instance, slot)) {
		snprintf(err, errlen, "slot %u of instance '%s' is leased already", slot, p->instance);
		r = -EEXIST;
		goto out;
	}
	r = lease_add_slot(d, l, p, it.spec.name, slot);
	if (r)
		goto out;
	/* What the process holds already counts, even past a limit lowered
	 * meanwhile: it exists; only new reservations are refused. */
	uint32_t qps = 0, mrs = 0;
	uint64_t bytes = 0;
	if (ctl_has(tb, EFI_A_RES_QPS))
		ctl_attr_u32(&tb[EFI_A_RES_QPS], &qps);
	if (ctl_has(tb, EFI_A_RES_MRS))
		ctl_attr_u32(&tb[EFI_A_RES_MRS], &mrs);
	if (ctl_has(tb, EFI_A_RES_BYTES))
		ctl_attr_u64(&tb[EFI_A_RES_BYTES], &bytes);
	lease_quota_resume(d, l, qps, mrs, bytes);
	ctl_put_u32(body, EFI_A_PORT, lease_lane_port(d, slot, 0));
	ctl_put_u32(body, EFI_A_QPN_BASE, qpn_base);
	ctl_put_u32(body, EFI_A_LANES, fds->n);
	log_info("lease: slot %u of %s/%s resumed by pid %d", slot, p->instance, it.spec.name,
		 (int)p->pid);
out:
	ctl_fds_close(fds);
	return r;
}
