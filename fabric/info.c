/* SPDX-License-Identifier: MIT */
/*
 * fi_getinfo for the efi provider: one fi_info per (EFI interface of the
 * caller's instance, address of that interface), the attributes read from
 * libefi (efi_query_device/port/gid), the addresses the interface's GIDs
 * (its IP addresses) as sockaddr_in/in6.  Hints the provider cannot honour
 * give no entry (-FI_ENODATA), never a weakened one.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>

#include "efi_fi.h"

size_t efi_fi_sockaddr_len(const struct sockaddr *sa)
{
	if (!sa)
		return 0;
	return sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

int efi_fi_sockaddr_str(const struct sockaddr *sa, char *host, size_t hostlen, char *port,
			size_t portlen)
{
	if (!sa || (sa->sa_family != AF_INET && sa->sa_family != AF_INET6))
		return -FI_EINVAL;
	if (getnameinfo(sa, (socklen_t)efi_fi_sockaddr_len(sa), host, (socklen_t)hostlen, port,
			(socklen_t)portlen, NI_NUMERICHOST | NI_NUMERICSERV))
		return -FI_EINVAL;
	return 0;
}

/* A GID as a socket address (IPv4-mapped GIDs as AF_INET). */
void efi_fi_gid_sockaddr(const union efi_gid *gid, uint16_t port_be, struct sockaddr_storage *ss)
{
	static const uint8_t v4mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	memset(ss, 0, sizeof(*ss));
	if (!memcmp(gid->raw, v4mapped, sizeof(v4mapped))) {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;

		sin->sin_family = AF_INET;
		sin->sin_port = port_be;
		memcpy(&sin->sin_addr, gid->raw + 12, 4);
	} else {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = port_be;
		memcpy(&sin6->sin6_addr, gid->raw, 16);
	}
}

static bool same_ip(const struct sockaddr *a, const struct sockaddr *b)
{
	if (a->sa_family != b->sa_family)
		return false;
	if (a->sa_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
		       &((const struct sockaddr_in6 *)b)->sin6_addr, 16);
}

static bool is_any(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ((const struct sockaddr_in *)sa)->sin_addr.s_addr == htonl(INADDR_ANY);
	return !memcmp(&((const struct sockaddr_in6 *)sa)->sin6_addr, &in6addr_any, 16);
}

static uint16_t port_of(const struct sockaddr *sa)
{
	return sa->sa_family == AF_INET ? ((const struct sockaddr_in *)sa)->sin_port
					: ((const struct sockaddr_in6 *)sa)->sin6_port;
}

static int resolve(const char *node, const char *service, bool passive, int family,
		   struct sockaddr_storage *out)
{
	struct addrinfo hints = { .ai_family = family, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res;

	hints.ai_flags = passive ? AI_PASSIVE : 0;
	if (getaddrinfo(node, service, &hints, &res))
		return -FI_ENODATA;
	if (res->ai_family != AF_INET && res->ai_family != AF_INET6) {
		freeaddrinfo(res);
		return -FI_ENODATA;
	}
	memset(out, 0, sizeof(*out));
	memcpy(out, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
	return 0;
}

/* Every capability some device may offer. */
#define ALL_CAPS (EFI_FI_CAPS | EFI_FI_ATOMIC_CAPS)
/* What hints may ask: FI_REMOTE_CQ_DATA was a capability before libfabric
 * 1.5; in 1.17 it is not (cq_data_size says it), so it is read in hints as
 * "I want remote CQ data" and never returned among the caps (fabtests'
 * getinfo_test fails an rx_attr->caps holding it, -FI_EIO). */
#define HINT_CAPS (ALL_CAPS | FI_REMOTE_CQ_DATA)

/* What the hints ask that this provider cannot give on any device. */
static bool hints_unsupported(uint32_t version, const struct fi_info *hints)
{
	if (FI_VERSION_LT(version, FI_VERSION(1, 5)))
		return true;	/* FI_LOCAL_MR-era API: not offered */
	if (!hints)
		return false;
	if (hints->caps & ~HINT_CAPS)
		return true;
	if (hints->addr_format != FI_FORMAT_UNSPEC && hints->addr_format != FI_SOCKADDR &&
	    hints->addr_format != FI_SOCKADDR_IN && hints->addr_format != FI_SOCKADDR_IN6)
		return true;
	if (hints->ep_attr) {
		const struct fi_ep_attr *e = hints->ep_attr;

		if (e->type != FI_EP_UNSPEC && e->type != FI_EP_MSG)
			return true;
		if (e->tx_ctx_cnt > 1 || e->rx_ctx_cnt > 1)
			return true;	/* shared/scalable contexts: none */
		if (e->auth_key_size)
			return true;
	}
	if (hints->domain_attr) {
		const struct fi_domain_attr *d = hints->domain_attr;

		/* mr_mode: negotiate() */
		if (d->cq_data_size > 4 || d->mr_key_size > 4)
			return true;
		if (d->caps & ~ALL_CAPS)
			return true;
	}
	if (hints->fabric_attr && hints->fabric_attr->name &&
	    strcmp(hints->fabric_attr->name, EFI_FI_FABRIC_NAME))
		return true;
	if (hints->tx_attr && (hints->tx_attr->caps & ~HINT_CAPS))
		return true;
	if (hints->rx_attr && (hints->rx_attr->caps & ~HINT_CAPS))
		return true;
	return false;
}

/* The capabilities of a device (before hints narrow them). */
static uint64_t device_caps(const struct efi_device_attr *da)
{
	return EFI_FI_CAPS | (efi_fi_atomics_offered(da) ? EFI_FI_ATOMIC_CAPS : 0);
}

/* What the hints ask beyond this device's limits: such a request gets no
 * entry (a smaller one than asked would be a lie), never a weakened one.
 * Zero in a hint means "anything", as in libfabric. */
static bool hints_exceed(const struct fi_info *hints, const struct efi_device_attr *da,
			 const struct efi_port_attr *pa)
{
	uint64_t caps = device_caps(da) | FI_REMOTE_CQ_DATA;
	size_t max_msg = pa->max_msg_sz ? pa->max_msg_sz : da->max_msg_sz;
	size_t qp_wr = (size_t)da->max_qp_wr, sge = (size_t)da->max_sge;

	if (!hints)
		return false;
	if (hints->caps & ~caps)
		return true;
	if (hints->ep_attr) {
		const struct fi_ep_attr *e = hints->ep_attr;

		if (e->max_msg_size > max_msg || e->msg_prefix_size ||
		    e->max_order_raw_size > max_msg || e->max_order_war_size > max_msg ||
		    e->max_order_waw_size > max_msg)
			return true;
	}
	if (hints->tx_attr) {
		const struct fi_tx_attr *t = hints->tx_attr;

		if ((t->caps & ~caps) || t->size > qp_wr || t->iov_limit > sge ||
		    t->rma_iov_limit > 1 || t->inject_size > EFI_FI_INJECT_MAX ||
		    (t->msg_order & ~EFI_FI_MSG_ORDER) || (t->comp_order & ~FI_ORDER_NONE))
			return true;
	}
	if (hints->rx_attr) {
		const struct fi_rx_attr *r = hints->rx_attr;

		if ((r->caps & ~caps) || r->size > qp_wr || r->iov_limit > sge ||
		    (r->msg_order & ~EFI_FI_MSG_ORDER) || (r->comp_order & ~FI_ORDER_NONE))
			return true;
	}
	if (hints->domain_attr) {
		const struct fi_domain_attr *d = hints->domain_attr;

		/* mr_key_size, cq_data_size: hints_unsupported */
		if ((d->caps & ~caps) || d->cq_cnt > (size_t)da->max_cq ||
		    d->ep_cnt > (size_t)da->max_qp || d->tx_ctx_cnt > (size_t)da->max_qp || d->rx_ctx_cnt > (size_t)da->max_qp ||
		    d->max_ep_tx_ctx > 1 || d->max_ep_rx_ctx > 1 || d->max_ep_stx_ctx ||
		    d->max_ep_srx_ctx || d->cntr_cnt || d->mr_iov_limit > 1 ||
		    d->mr_cnt > (size_t)da->max_mr)
			return true;
	}
	return false;
}

/* What an entry promises beyond its limits: caps, mode, mr_mode and
 * remote CQ data, from what the hints accept. */
struct terms {
	uint64_t caps;
	uint64_t mode;		/* info->mode; FI_RX_CQ_DATA also in rx_attr->mode */
	int mr_mode;
	size_t cq_data_size;
};

/* Whether caps let peers reach this endpoint's memory (libfabric's
 * ofi_rma_target_allowed: FI_RMA/FI_ATOMIC without a modifier means all
 * of them). */
static bool rma_target(uint64_t caps)
{
	if (!(caps & (FI_RMA | FI_ATOMIC)))
		return false;
	if (caps & (FI_REMOTE_READ | FI_REMOTE_WRITE))
		return true;
	return !(caps & (FI_READ | FI_WRITE | FI_SEND | FI_RECV));
}

/* Whether peers may RDMA-write here, so a write with data lands here. */
static bool write_target(uint64_t caps)
{
	if (!(caps & FI_RMA))
		return false;
	if (caps & FI_REMOTE_WRITE)
		return true;
	return !(caps & (FI_READ | FI_WRITE | FI_REMOTE_READ | FI_SEND | FI_RECV));
}

/* The terms of an entry for a device with dev_caps; false when the hints
 * accept none that this provider can keep (then no entry: -FI_ENODATA,
 * never a weakened or unasked-for one). */
static bool negotiate(const struct fi_info *hints, uint64_t dev_caps, struct terms *t)
{
	uint64_t caps = dev_caps;
	int need;

	if (hints && (hints->caps & caps))
		caps &= hints->caps;
	t->caps = caps;
	t->mode = 0;

	/* Memory registration: local descriptors always (libefi checks
	 * every lkey), allocated memory; virtual addresses and provider keys
	 * only matter to an RMA/atomic target, and libfabric does not ask
	 * them of other applications (ofi_cap_mr_mode). */
	need = FI_MR_LOCAL | FI_MR_ALLOCATED |
	       (rma_target(caps) ? FI_MR_VIRT_ADDR | FI_MR_PROV_KEY : 0);
	if (!hints || !hints->domain_attr) {
		t->mr_mode = need;
	} else {
		int user = hints->domain_attr->mr_mode;

		/* the pre-1.5 way to accept local MRs is the FI_LOCAL_MR mode */
		if (!(user & FI_MR_LOCAL) && !(hints->mode & FI_LOCAL_MR))
			return false;
		if (user == FI_MR_BASIC) {
			/* BASIC = VIRT_ADDR | ALLOCATED | PROV_KEY: ours, with
			 * local MRs through FI_LOCAL_MR */
			t->mr_mode = FI_MR_BASIC;
			t->mode |= FI_LOCAL_MR;
		} else if (user & (FI_MR_BASIC | FI_MR_SCALABLE)) {
			return false;	/* SCALABLE, or BASIC mixed with bits */
		} else {
			if (!(user & FI_MR_LOCAL)) {
				need &= ~FI_MR_LOCAL;
				t->mode |= FI_LOCAL_MR;
			}
			if ((user & need) != need)
				return false;
			t->mr_mode = need;
		}
	}

	/* Remote CQ data travels as the 32-bit immediate.  A send carrying it
	 * consumes the receive any send consumes; an RDMA write carrying it
	 * consumes a posted receive too (as in verbs): offered to an RMA
	 * write target only if it accepts FI_RX_CQ_DATA, which it must read
	 * in rx_attr->mode and post receives for. */
	if (!write_target(caps)) {
		t->cq_data_size = 4;
	} else if (!hints || (hints->mode & FI_RX_CQ_DATA)) {
		t->cq_data_size = 4;
		t->mode |= FI_RX_CQ_DATA;
	} else if ((hints->caps & FI_REMOTE_CQ_DATA) ||
		   (hints->domain_attr && hints->domain_attr->cq_data_size)) {
		return false;
	} else {
		t->cq_data_size = 0;
	}
	return true;
}

/* Lowers *have to want when want is set and smaller. */
static void shrink(size_t *have, size_t want)
{
	if (want && want < *have)
		*have = want;
}

static struct fi_info *make_info(const struct fi_info *hints, const struct terms *t,
				 const char *devname, const struct efi_device_attr *da,
				 const struct efi_port_attr *pa, const struct sockaddr_storage *src,
				 const struct sockaddr_storage *dst)
{
	struct fi_info *fi = fi_allocinfo();
	uint64_t caps = t->caps;

	if (!fi)
		return NULL;
	fi->caps = caps;
	fi->mode = t->mode;
	if (hints && efi_fi_is_pep(hints->handle))
		fi->handle = hints->handle;	/* fi_endpoint takes its address */
	fi->addr_format = src->ss_family == AF_INET6 ? FI_SOCKADDR_IN6 : FI_SOCKADDR_IN;
	fi->src_addrlen = efi_fi_sockaddr_len((const struct sockaddr *)src);
	fi->src_addr = malloc(fi->src_addrlen);
	if (!fi->src_addr)
		goto fail;
	memcpy(fi->src_addr, src, fi->src_addrlen);
	if (dst) {
		fi->dest_addrlen = efi_fi_sockaddr_len((const struct sockaddr *)dst);
		fi->dest_addr = malloc(fi->dest_addrlen);
		if (!fi->dest_addr)
			goto fail;
		memcpy(fi->dest_addr, dst, fi->dest_addrlen);
	}

	fi->tx_attr->caps = caps & (FI_MSG | FI_RMA | FI_ATOMIC | FI_SEND | FI_READ | FI_WRITE);
	fi->tx_attr->msg_order = EFI_FI_MSG_ORDER;
	fi->tx_attr->comp_order = FI_ORDER_NONE;
	fi->tx_attr->inject_size = EFI_FI_INJECT_MAX;	/* bounce.c above max_inline_data */
	fi->tx_attr->size = (size_t)da->max_qp_wr;
	fi->tx_attr->iov_limit = (size_t)da->max_sge;
	fi->tx_attr->rma_iov_limit = 1;

	fi->rx_attr->caps = caps & (FI_MSG | FI_RMA | FI_ATOMIC | FI_RECV | FI_REMOTE_READ |
				    FI_REMOTE_WRITE);
	/* where applications look to learn that a write with data needs a
	 * posted receive */
	fi->rx_attr->mode = t->mode & FI_RX_CQ_DATA;
	fi->rx_attr->msg_order = EFI_FI_MSG_ORDER;
	fi->rx_attr->comp_order = FI_ORDER_NONE;
	fi->rx_attr->size = (size_t)da->max_qp_wr;
	fi->rx_attr->iov_limit = (size_t)da->max_sge;

	/* sizes the application asked for, when the device has them: what
	 * fi_enable then allocates (ofi_rxm preposts a buffer per receive) */
	if (hints && hints->tx_attr) {
		shrink(&fi->tx_attr->size, hints->tx_attr->size);
		shrink(&fi->tx_attr->iov_limit, hints->tx_attr->iov_limit);
		shrink(&fi->tx_attr->inject_size, hints->tx_attr->inject_size);
	}
	if (hints && hints->rx_attr) {
		shrink(&fi->rx_attr->size, hints->rx_attr->size);
		shrink(&fi->rx_attr->iov_limit, hints->rx_attr->iov_limit);
	}

	fi->ep_attr->type = FI_EP_MSG;
	fi->ep_attr->protocol = FI_PROTO_UNSPEC;
	fi->ep_attr->protocol_version = 1;
	fi->ep_attr->max_msg_size = pa->max_msg_sz ? pa->max_msg_sz : da->max_msg_sz;
	fi->ep_attr->max_order_raw_size = fi->ep_attr->max_msg_size;
	fi->ep_attr->max_order_war_size = fi->ep_attr->max_msg_size;
	fi->ep_attr->max_order_waw_size = fi->ep_attr->max_msg_size;
	fi->ep_attr->tx_ctx_cnt = 1;
	fi->ep_attr->rx_ctx_cnt = 1;

	fi->domain_attr->name = strdup(devname);
	fi->domain_attr->threading = FI_THREAD_SAFE;
	/* libefi runs the transport in its progress threads and the CM in its
	 * watcher threads: both progress without the application. */
	fi->domain_attr->control_progress = FI_PROGRESS_AUTO;
	fi->domain_attr->data_progress = FI_PROGRESS_AUTO;
	if (hints && hints->domain_attr) {
		if (hints->domain_attr->control_progress == FI_PROGRESS_MANUAL)
			fi->domain_attr->control_progress = FI_PROGRESS_MANUAL;
		if (hints->domain_attr->data_progress == FI_PROGRESS_MANUAL)
			fi->domain_attr->data_progress = FI_PROGRESS_MANUAL;
	}
	fi->domain_attr->resource_mgmt = FI_RM_ENABLED;
	fi->domain_attr->av_type = FI_AV_UNSPEC;
	fi->domain_attr->mr_mode = t->mr_mode;
	fi->domain_attr->mr_key_size = 4;
	fi->domain_attr->cq_data_size = t->cq_data_size;
	fi->domain_attr->cq_cnt = (size_t)da->max_cq;
	fi->domain_attr->ep_cnt = (size_t)da->max_qp;
	fi->domain_attr->tx_ctx_cnt = (size_t)da->max_qp;
	fi->domain_attr->rx_ctx_cnt = (size_t)da->max_qp;
	fi->domain_attr->max_ep_tx_ctx = 1;
	fi->domain_attr->max_ep_rx_ctx = 1;
	fi->domain_attr->max_ep_stx_ctx = 0;
	fi->domain_attr->max_ep_srx_ctx = 0;
	fi->domain_attr->mr_iov_limit = 1;
	fi->domain_attr->caps = FI_LOCAL_COMM | FI_REMOTE_COMM;
	fi->domain_attr->mr_cnt = (size_t)da->max_mr;

	fi->fabric_attr->name = strdup(EFI_FI_FABRIC_NAME);
	/* prov_name stays NULL: libfabric fills it in (and would treat a
	 * name set here as a core provider under a layered one) */
	fi->fabric_attr->prov_version = EFI_FI_VERSION;
	fi->fabric_attr->api_version = EFI_FI_API_VERSION;
	if (!fi->domain_attr->name || !fi->fabric_attr->name)
		goto fail;
	return fi;
fail:
	fi_freeinfo(fi);
	return NULL;
}

bool efi_fi_gid_usable(const union efi_gid *gid)
{
	/* link-local IPv6 needs a scope efi_connect's host string cannot carry */
	return !(gid->raw[0] == 0xfe && (gid->raw[1] & 0xc0) == 0x80) &&
	       (gid->u64[0] || gid->u64[1]);
}

/* Appends the entries of one device; -FI_ENOMEM or 0. */
static int device_infos(struct efi_device *dev, const struct fi_info *hints,
			const struct sockaddr_storage *src, bool src_ip, uint16_t src_port,
			const struct sockaddr_storage *dst, struct fi_info ***tail)
{
	struct efi_context *ctx = efi_open_device(dev);
	struct efi_device_attr da;
	struct efi_port_attr pa;
	struct terms t;
	int ret = 0;

	if (!ctx)
		return 0;	/* gone or not ours: not offered */
	if (efi_query_device(ctx, &da) || efi_query_port(ctx, 1, &pa) ||
	    pa.state != EFI_PORT_ACTIVE || hints_exceed(hints, &da, &pa) ||
	    !negotiate(hints, device_caps(&da), &t))
		goto out;
	for (int i = 0; i < pa.gid_tbl_len; i++) {
		union efi_gid gid;
		struct sockaddr_storage me;
		struct fi_info *fi;

		if (efi_query_gid(ctx, 1, i, &gid) || !efi_fi_gid_usable(&gid))
			continue;
		efi_fi_gid_sockaddr(&gid, src_port, &me);
		if (dst && dst->ss_family != me.ss_family)
			continue;
		if (src_ip && !same_ip((const struct sockaddr *)src, (const struct sockaddr *)&me))
			continue;
		if (hints && ((hints->addr_format == FI_SOCKADDR_IN && me.ss_family != AF_INET) ||
			      (hints->addr_format == FI_SOCKADDR_IN6 && me.ss_family != AF_INET6)))
			continue;
		fi = make_info(hints, &t, dev->name, &da, &pa, &me, dst);
		if (!fi) {
			ret = -FI_ENOMEM;
			break;
		}
		**tail = fi;
		*tail = &fi->next;
	}
out:
	efi_close_device(ctx);
	return ret;
}

int efi_fi_getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
		   const struct fi_info *hints, struct fi_info **info)
{
	struct sockaddr_storage src = { 0 }, dst = { 0 };
	const char *pep_dev = NULL;
	bool have_dst = false, src_ip = false;
	uint16_t src_port = 0;
	struct efi_device **list;
	struct fi_info *head = NULL, **tail = &head;
	int n, ret = 0, family = AF_UNSPEC;

	*info = NULL;
	if (hints_unsupported(version, hints))
		return -FI_ENODATA;
	if (hints && hints->addr_format == FI_SOCKADDR_IN)
		family = AF_INET;
	else if (hints && hints->addr_format == FI_SOCKADDR_IN6)
		family = AF_INET6;

	if (flags & FI_SOURCE) {
		if (node || service) {
			if (resolve(node, service, true, family, &src))
				return -FI_ENODATA;
			src_ip = node != NULL;
			src_port = port_of((struct sockaddr *)&src);
		}
	} else if (node) {
		if (resolve(node, service, false, family, &dst))
			return -FI_ENODATA;
		have_dst = true;
	} else if (service) {
		if (resolve(NULL, service, true, family, &src))
			return -FI_ENODATA;
		src_port = port_of((struct sockaddr *)&src);
	}
	if (hints && hints->src_addr) {
		const struct sockaddr *sa = hints->src_addr;

		if ((sa->sa_family != AF_INET && sa->sa_family != AF_INET6) ||
		    hints->src_addrlen < efi_fi_sockaddr_len(sa))
			return -FI_ENODATA;
		memcpy(&src, sa, efi_fi_sockaddr_len(sa));
		src_ip = !is_any(sa);
		src_port = port_of(sa);
	}
	if (hints && efi_fi_is_pep(hints->handle)) {
		/* an active endpoint to open on this passive endpoint's bound
		 * address (fi_endpoint takes it over): its source is that */
		const struct efi_fi_pep *pep = (const struct efi_fi_pep *)hints->handle;

		memcpy(&src, &pep->addr, efi_fi_sockaddr_len((const struct sockaddr *)&pep->addr));
		src_ip = true;
		src_port = port_of((struct sockaddr *)&src);
		pep_dev = pep->info->domain_attr->name;
	}
	if (hints && hints->dest_addr) {
		const struct sockaddr *sa = hints->dest_addr;

		if ((sa->sa_family != AF_INET && sa->sa_family != AF_INET6) ||
		    hints->dest_addrlen < efi_fi_sockaddr_len(sa))
			return -FI_ENODATA;
		memcpy(&dst, sa, efi_fi_sockaddr_len(sa));
		have_dst = true;
	}

	list = efi_get_device_list(&n);
	if (!list)
		return -FI_ENODATA;	/* no efid here: nothing to offer */
	for (int i = 0; i < n && !ret; i++) {
		const char *want = hints && hints->domain_attr ? hints->domain_attr->name : NULL;

		if ((want && strcmp(want, list[i]->name)) || (pep_dev && strcmp(pep_dev, list[i]->name)))
			continue;
		ret = device_infos(list[i], hints, &src, src_ip, src_port,
				   have_dst ? &dst : NULL, &tail);
	}
	efi_free_device_list(list);
	if (ret) {
		fi_freeinfo(head);
		return ret;
	}
	if (!head)
		return -FI_ENODATA;
	*info = head;
	return 0;
}
