/* SPDX-License-Identifier: MIT */
/*
 * Connection management over libefi's connection manager: passive
 * endpoints are efi_cm listeners on the interface whose address they carry
 * (the port is the efi_cm service), fi_connect/fi_accept/fi_reject/
 * fi_shutdown are efi_connect/efi_accept/efi_reject/efi_disconnect.  The
 * events reach the EQ the endpoint is bound to (eq.c).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "efi_fi.h"

extern struct fi_ops_ep efi_fi_ep_ops;

static int copy_name(const struct sockaddr_storage *ss, void *addr, size_t *addrlen)
{
	size_t len = efi_fi_sockaddr_len((const struct sockaddr *)ss);

	if (!ss->ss_family)
		return -FI_EADDRNOTAVAIL;
	if (!addrlen)
		return -FI_EINVAL;
	if (*addrlen < len || !addr) {
		*addrlen = len;
		return -FI_ETOOSMALL;
	}
	memcpy(addr, ss, len);
	*addrlen = len;
	return 0;
}

static int ep_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct efi_fi_ep *ep = container_of(fid, struct efi_fi_ep, ep.fid);
	struct sockaddr_storage ss = { 0 };

	if (ep->info->src_addr && ep->info->src_addrlen <= sizeof(ss))
		memcpy(&ss, ep->info->src_addr, ep->info->src_addrlen);
	return copy_name(&ss, addr, addrlen);
}

static int ep_getpeer(struct fid_ep *fep, void *addr, size_t *addrlen)
{
	struct efi_fi_ep *ep = (struct efi_fi_ep *)fep;

	return copy_name(&ep->peer, addr, addrlen);
}

static int no_setname(fid_t fid, void *addr, size_t addrlen)
{
	(void)fid, (void)addr, (void)addrlen;
	return -FI_ENOSYS;	/* an active endpoint's address is its interface's */
}

static int ep_connect(struct fid_ep *fep, const void *addr, const void *param, size_t paramlen)
{
	struct efi_fi_ep *ep = (struct efi_fi_ep *)fep;
	char host[INET6_ADDRSTRLEN + 8], port[16];
	struct efi_cm_id *id;
	int ret;

	if (!ep->eq)
		return -FI_ENOEQ;
	if (!ep->enabled || ep->owner.id || ep->connreq)
		return -FI_EOPBADSTATE;
	if (paramlen > EFI_FI_CM_DATA_MAX || (paramlen && !param))
		return -FI_EINVAL;
	if (!addr)
		addr = ep->info->dest_addr;
	ret = efi_fi_sockaddr_str(addr, host, sizeof(host), port, sizeof(port));
	if (ret)
		return ret;
	pthread_mutex_lock(&ep->eq->lock);
	id = efi_connect(ep->qp, host, port, param, paramlen, efi_fi_connect_timeout_ms());
	if (id) {
		ep->owner.id = id;
		memcpy(&ep->peer, addr, efi_fi_sockaddr_len(addr));
		efi_fi_eq_watch(ep->eq, &ep->owner);
	}
	pthread_mutex_unlock(&ep->eq->lock);
	return id ? 0 : efi_fi_errno(errno);
}

static int ep_accept(struct fid_ep *fep, const void *param, size_t paramlen)
{
	struct efi_fi_ep *ep = (struct efi_fi_ep *)fep;
	struct efi_cm_id *req;
	int err;

	if (!ep->eq)
		return -FI_ENOEQ;
	if (!ep->enabled || !ep->connreq || ep->owner.id)
		return -FI_EOPBADSTATE;
	if (paramlen > EFI_FI_CM_DATA_MAX || (paramlen && !param))
		return -FI_EINVAL;
	req = efi_fi_connreq_take(ep);
	if (!req)
		return -FI_EOPBADSTATE;	/* rejected, or accepted already */
	pthread_mutex_lock(&ep->eq->lock);
	err = efi_accept(req, ep->qp, param, paramlen);
	if (!err) {
		ep->owner.id = req;	/* the request is the connection now */
		efi_fi_eq_watch(ep->eq, &ep->owner);
	}
	pthread_mutex_unlock(&ep->eq->lock);
	efi_fi_connreq_settle(ep, req, !err);
	/* ENOENT: efid withdrew the request, the client gave up (its connect
	 * timed out, or it closed its endpoint) */
	return err == ENOENT ? -FI_ECONNABORTED : efi_fi_errno(err);
}

static int ep_shutdown(struct fid_ep *fep, uint64_t flags)
{
	struct efi_fi_ep *ep = (struct efi_fi_ep *)fep;
	int err;

	if (flags)
		return -FI_EINVAL;
	if (!ep->owner.id || !ep->eq)
		return -FI_EOPBADSTATE;
	pthread_mutex_lock(&ep->eq->lock);
	err = efi_disconnect(ep->owner.id);
	/* the caller's EQ hears of it too, as with tcp and verbs (rdma_cm
	 * reports DISCONNECTED on both ends): once per endpoint, whichever
	 * side ends it first (eq.c drops the peer's later DISCONNECTED) */
	if (!err && !ep->shut) {
		ep->shut = true;
		err = efi_fi_eq_push_event(ep->eq, FI_SHUTDOWN, &ep->ep.fid) ? ENOMEM : 0;
	}
	pthread_mutex_unlock(&ep->eq->lock);
	return efi_fi_errno(err);
}

static int no_listen(struct fid_pep *pep)
{
	(void)pep;
	return -FI_ENOSYS;
}

static int no_reject(struct fid_pep *pep, fid_t handle, const void *param, size_t paramlen)
{
	(void)pep, (void)handle, (void)param, (void)paramlen;
	return -FI_ENOSYS;
}

static int no_connect(struct fid_ep *ep, const void *addr, const void *param, size_t paramlen)
{
	(void)ep, (void)addr, (void)param, (void)paramlen;
	return -FI_ENOSYS;
}

static int no_accept(struct fid_ep *ep, const void *param, size_t paramlen)
{
	(void)ep, (void)param, (void)paramlen;
	return -FI_ENOSYS;
}

static int no_shutdown(struct fid_ep *ep, uint64_t flags)
{
	(void)ep, (void)flags;
	return -FI_ENOSYS;
}

static int no_join(struct fid_ep *ep, const void *addr, uint64_t flags, struct fid_mc **mc,
		   void *context)
{
	(void)ep, (void)addr, (void)flags, (void)mc, (void)context;
	return -FI_ENOSYS;	/* no multicast on RC */
}

static int no_getpeer(struct fid_ep *ep, void *addr, size_t *addrlen)
{
	(void)ep, (void)addr, (void)addrlen;
	return -FI_ENOSYS;
}

struct fi_ops_cm efi_fi_ep_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = no_setname,
	.getname = ep_getname,
	.getpeer = ep_getpeer,
	.connect = ep_connect,
	.listen = no_listen,
	.accept = ep_accept,
	.reject = no_reject,
	.shutdown = ep_shutdown,
	.join = no_join,
};

/* ------------------------------------------------------------ passive */

static int pep_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct efi_fi_pep *pep = container_of(fid, struct efi_fi_pep, pep.fid);

	return copy_name(&pep->addr, addr, addrlen);
}

/* Binds the passive endpoint to an address of its interface (an IP the
 * interface has, or any: its first of that family), port included, as
 * bind(2) would; sockets-style servers open it without an address and name
 * it here (fabtests' msg_sockets). */
static int pep_setname(fid_t fid, void *addr, size_t addrlen)
{
	struct efi_fi_pep *pep = container_of(fid, struct efi_fi_pep, pep.fid);
	const struct sockaddr *sa = addr;
	struct sockaddr_storage ss;
	int ret;

	if (pep->owner.id)
		return -FI_EOPBADSTATE;	/* already listening */
	if (!sa || (sa->sa_family != AF_INET && sa->sa_family != AF_INET6) ||
	    addrlen < efi_fi_sockaddr_len(sa))
		return -FI_EINVAL;
	ret = efi_fi_local_addr(pep->ctx, sa, &ss);
	if (ret)
		return ret;
	pep->addr = ss;
	return 0;
}

static uint16_t *pep_port(struct efi_fi_pep *pep)
{
	return pep->addr.ss_family == AF_INET ? &((struct sockaddr_in *)&pep->addr)->sin_port
					      : &((struct sockaddr_in6 *)&pep->addr)->sin6_port;
}

static int pep_listen(struct fid_pep *fpep)
{
	struct efi_fi_pep *pep = (struct efi_fi_pep *)fpep;
	uint16_t *port = pep_port(pep);
	struct efi_cm_id *id = NULL;
	char service[8];
	int err = 0;

	if (!pep->eq)
		return -FI_ENOEQ;
	if (pep->owner.id)
		return -FI_EOPBADSTATE;
	if (*port) {
		snprintf(service, sizeof(service), "%u", ntohs(*port));
		id = efi_listen(pep->ctx, service, 0);
		err = errno;
	} else {
		/* port 0: a free service picked at random, as bind(2) would */
		for (int tries = 0; tries < 64 && !id; tries++) {
			uint16_t r;

			if (getrandom(&r, sizeof(r), 0) != sizeof(r))
				r = (uint16_t)(tries * 7919);
			r = (uint16_t)(20000 + r % 40000);
			snprintf(service, sizeof(service), "%u", r);
			id = efi_listen(pep->ctx, service, 0);
			err = errno;
			if (id)
				*port = htons(r);
			else if (err != EADDRINUSE)
				break;
		}
	}
	if (!id)
		return efi_fi_errno(err);
	pthread_mutex_lock(&pep->eq->lock);
	pep->owner.id = id;
	efi_fi_eq_watch(pep->eq, &pep->owner);
	pthread_mutex_unlock(&pep->eq->lock);
	return 0;
}

static int pep_reject(struct fid_pep *fpep, fid_t handle, const void *param, size_t paramlen)
{
	struct efi_fi_pep *pep = (struct efi_fi_pep *)fpep;

	if (!handle || paramlen > EFI_FI_CM_DATA_MAX || (paramlen && !param))
		return -FI_EINVAL;
	return efi_fi_connreq_reject(pep, handle, param, paramlen);
}

static struct fi_ops_cm pep_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = pep_setname,
	.getname = pep_getname,
	.getpeer = no_getpeer,
	.connect = no_connect,
	.listen = pep_listen,
	.accept = no_accept,
	.reject = pep_reject,
	.shutdown = no_shutdown,
	.join = no_join,
};

static int pep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct efi_fi_pep *pep = (struct efi_fi_pep *)fid;

	(void)flags;
	if (!bfid || bfid->fclass != FI_CLASS_EQ || pep->eq)
		return -FI_EINVAL;
	pep->eq = (struct efi_fi_eq *)bfid;
	efi_fi_eq_attach(pep->eq, &pep->owner);
	return 0;
}

static int pep_close(struct fid *fid)
{
	struct efi_fi_pep *pep = (struct efi_fi_pep *)fid;

	if (pep->eq) {
		/* also drops its queued events: their requests go next */
		efi_fi_eq_detach(pep->eq, &pep->owner);
		pthread_mutex_lock(&pep->eq->lock);
		efi_cm_destroy_id(pep->owner.id);
		pthread_mutex_unlock(&pep->eq->lock);
	}
	efi_fi_connreq_pep_close(pep);
	efi_fi_ctx_put(pep->fab, pep->ctx);
	__atomic_fetch_sub(&pep->fab->refs, 1, __ATOMIC_SEQ_CST);
	fi_freeinfo(pep->info);
	free(pep);
	return 0;
}

static struct fi_ops pep_fi_ops;

bool efi_fi_is_pep(const struct fid *fid)
{
	return fid && fid->fclass == FI_CLASS_PEP && fid->ops == &pep_fi_ops;
}

static struct fi_ops pep_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = pep_close,
	.bind = pep_bind,
	.control = efi_fi_no_control,
	.ops_open = efi_fi_no_ops_open,
	.tostr = efi_fi_no_tostr,
	.ops_set = efi_fi_no_ops_set,
};

int efi_fi_pep_open(struct fid_fabric *fabric, struct fi_info *info, struct fid_pep **out,
		    void *context)
{
	struct efi_fi_fabric *fab = (struct efi_fi_fabric *)fabric;
	struct efi_fi_pep *pep;
	int ret;

	if (!info || !info->domain_attr || !info->domain_attr->name ||
	    info->src_addrlen > sizeof(struct sockaddr_storage) ||
	    (info->src_addr && info->src_addrlen < efi_fi_sockaddr_len(info->src_addr)))
		return -FI_EINVAL;
	pep = calloc(1, sizeof(*pep));
	if (!pep)
		return -FI_ENOMEM;
	pep->info = fi_dupinfo(info);
	if (!pep->info) {
		free(pep);
		return -FI_ENOMEM;
	}
	pep->ctx = efi_fi_ctx_get(fab, info->domain_attr->name);
	if (!pep->ctx) {
		ret = efi_fi_errno(errno);
		fi_freeinfo(pep->info);
		free(pep);
		return ret;
	}
	/* no source address (fi_setname will say it): the interface's first
	 * address, port 0 until fi_listen picks one */
	ret = efi_fi_local_addr(pep->ctx, info->src_addr, &pep->addr);
	if (ret) {
		efi_fi_ctx_put(fab, pep->ctx);
		fi_freeinfo(pep->info);
		free(pep);
		return ret;
	}
	pep->fab = fab;
	pep->owner.fid = &pep->pep.fid;
	pep->owner.is_pep = true;
	pep->pep.fid.fclass = FI_CLASS_PEP;
	pep->pep.fid.context = context;
	pep->pep.fid.ops = &pep_fi_ops;
	pep->pep.ops = &efi_fi_ep_ops;
	pep->pep.cm = &pep_cm_ops;
	__atomic_fetch_add(&fab->refs, 1, __ATOMIC_SEQ_CST);
	*out = &pep->pep;
	return 0;
}
