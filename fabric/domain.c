/* SPDX-License-Identifier: MIT */
/*
 * Domains (an EFI device's context and one PD) and memory registration
 * (efi_reg_mr: desc is the MR, its key the rkey, FI_MR_PROV_KEY).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "efi_fi.h"

static int domain_close(struct fid *fid)
{
	struct efi_fi_domain *dom = (struct efi_fi_domain *)fid;
	int err;

	if (__atomic_load_n(&dom->refs, __ATOMIC_SEQ_CST))
		return -FI_EBUSY;
	err = efi_dealloc_pd(dom->pd);
	if (err)
		return efi_fi_errno(err);
	efi_fi_ctx_put(dom->fab, dom->ctx);
	__atomic_fetch_sub(&dom->fab->refs, 1, __ATOMIC_SEQ_CST);
	fi_freeinfo(dom->info);
	pthread_mutex_destroy(&dom->lock);
	free(dom);
	return 0;
}

static int no_av_open(struct fid_domain *d, struct fi_av_attr *a, struct fid_av **av, void *c)
{
	(void)d, (void)a, (void)av, (void)c;
	return -FI_ENOSYS;	/* MSG endpoints have no address vectors */
}

static int no_scalable_ep(struct fid_domain *d, struct fi_info *i, struct fid_ep **ep, void *c)
{
	(void)d, (void)i, (void)ep, (void)c;
	return -FI_ENOSYS;
}

static int no_cntr_open(struct fid_domain *d, struct fi_cntr_attr *a, struct fid_cntr **cntr,
			void *c)
{
	(void)d, (void)a, (void)cntr, (void)c;
	return -FI_ENOSYS;
}

static int no_poll_open(struct fid_domain *d, struct fi_poll_attr *a, struct fid_poll **p)
{
	(void)d, (void)a, (void)p;
	return -FI_ENOSYS;
}

static int no_stx_ctx(struct fid_domain *d, struct fi_tx_attr *a, struct fid_stx **s, void *c)
{
	(void)d, (void)a, (void)s, (void)c;
	return -FI_ENOSYS;
}

static int no_srx_ctx(struct fid_domain *d, struct fi_rx_attr *a, struct fid_ep **e, void *c)
{
	(void)d, (void)a, (void)e, (void)c;
	return -FI_ENOSYS;	/* libefi has no shared receive queues */
}

static int no_query_collective(struct fid_domain *d, enum fi_collective_op coll,
			       struct fi_collective_attr *a, uint64_t flags)
{
	(void)d, (void)coll, (void)a, (void)flags;
	return -FI_ENOSYS;
}

static int endpoint2(struct fid_domain *d, struct fi_info *info, struct fid_ep **ep,
		     uint64_t flags, void *context)
{
	if (flags)
		return -FI_EINVAL;
	return efi_fi_ep_open(d, info, ep, context);
}

static struct fi_ops domain_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = domain_close,
	.bind = efi_fi_no_bind,
	.control = efi_fi_no_control,
	.ops_open = efi_fi_no_ops_open,
	.tostr = efi_fi_no_tostr,
	.ops_set = efi_fi_no_ops_set,
};

static struct fi_ops_domain domain_ops = {
	.size = sizeof(struct fi_ops_domain),
	.av_open = no_av_open,
	.cq_open = efi_fi_cq_open,
	.endpoint = efi_fi_ep_open,
	.scalable_ep = no_scalable_ep,
	.cntr_open = no_cntr_open,
	.poll_open = no_poll_open,
	.stx_ctx = no_stx_ctx,
	.srx_ctx = no_srx_ctx,
	.query_atomic = efi_fi_query_atomic,
	.query_collective = no_query_collective,
	.endpoint2 = endpoint2,
};

int efi_fi_domain_open(struct fid_fabric *fabric, struct fi_info *info, struct fid_domain **out,
		       void *context)
{
	struct efi_fi_fabric *fab = (struct efi_fi_fabric *)fabric;
	struct efi_fi_domain *dom;
	int ret;

	if (!info || !info->domain_attr || !info->domain_attr->name)
		return -FI_EINVAL;
	dom = calloc(1, sizeof(*dom));
	if (!dom)
		return -FI_ENOMEM;
	dom->fab = fab;
	dom->ctx = efi_fi_ctx_get(fab, info->domain_attr->name);
	if (!dom->ctx) {
		ret = efi_fi_errno(errno);
		free(dom);
		return ret;
	}
	dom->pd = efi_alloc_pd(dom->ctx);
	if (!dom->pd || efi_query_device(dom->ctx, &dom->attr) || !(dom->info = fi_dupinfo(info))) {
		ret = -FI_ENOMEM;
		efi_dealloc_pd(dom->pd);
		efi_fi_ctx_put(fab, dom->ctx);
		free(dom);
		return ret;
	}
	pthread_mutex_init(&dom->lock, NULL);
	__atomic_fetch_add(&fab->refs, 1, __ATOMIC_SEQ_CST);
	dom->domain.fid.fclass = FI_CLASS_DOMAIN;
	dom->domain.fid.context = context;
	dom->domain.fid.ops = &domain_fi_ops;
	dom->domain.ops = &domain_ops;
	dom->domain.mr = &efi_fi_mr_ops;
	*out = &dom->domain;
	return 0;
}

/* ------------------------------------------------------------ MRs */

uint32_t efi_fi_desc_lkey(void *desc)
{
	return desc ? ((struct efi_fi_mr *)desc)->emr->lkey : 0;
}

static int mr_close(struct fid *fid)
{
	struct efi_fi_mr *mr = (struct efi_fi_mr *)fid;
	int err = efi_dereg_mr(mr->emr);

	if (err)
		return efi_fi_errno(err);
	__atomic_fetch_sub(&mr->dom->refs, 1, __ATOMIC_SEQ_CST);
	free(mr);
	return 0;
}

static struct fi_ops mr_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = mr_close,
	.bind = efi_fi_no_bind,
	.control = efi_fi_no_control,
	.ops_open = efi_fi_no_ops_open,
	.tostr = efi_fi_no_tostr,
	.ops_set = efi_fi_no_ops_set,
};

static int access_to_efi(uint64_t access)
{
	/* LOCAL_WRITE always: receives and Read targets need it, and libefi
	 * (as verbs) requires it for remote write */
	int a = EFI_ACCESS_LOCAL_WRITE;

	if (!access)
		access = FI_REMOTE_READ | FI_REMOTE_WRITE;
	if (access & FI_REMOTE_READ)
		a |= EFI_ACCESS_REMOTE_READ;
	if (access & FI_REMOTE_WRITE)
		a |= EFI_ACCESS_REMOTE_WRITE | EFI_ACCESS_REMOTE_ATOMIC;
	return a;
}

static int mr_regattr(struct fid *fid, const struct fi_mr_attr *attr, uint64_t flags,
		      struct fid_mr **out)
{
	struct efi_fi_domain *dom = container_of(fid, struct efi_fi_domain, domain.fid);
	const uint64_t known = FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ |
			       FI_REMOTE_WRITE;
	struct efi_fi_mr *mr;

	/* flags: ofi_rxm passes internal ones (1 << 60); none change what we do */
	(void)flags;
	if (fid->fclass != FI_CLASS_DOMAIN || !attr || !out)
		return -FI_EINVAL;
	if (attr->iov_count != 1 || !attr->mr_iov || (attr->access & ~known) || attr->offset)
		return -FI_EINVAL;	/* one contiguous region per MR (mr_iov_limit 1) */
	if (attr->iface != FI_HMEM_SYSTEM)
		return -FI_ENOSYS;
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return -FI_ENOMEM;
	mr->emr = efi_reg_mr(dom->pd, attr->mr_iov[0].iov_base, attr->mr_iov[0].iov_len,
			     access_to_efi(attr->access));
	if (!mr->emr) {
		int ret = efi_fi_errno(errno);

		free(mr);
		return ret;
	}
	mr->dom = dom;
	mr->mr.fid.fclass = FI_CLASS_MR;
	mr->mr.fid.context = attr->context;
	mr->mr.fid.ops = &mr_fi_ops;
	mr->mr.mem_desc = mr;
	mr->mr.key = mr->emr->rkey;
	__atomic_fetch_add(&dom->refs, 1, __ATOMIC_SEQ_CST);
	*out = &mr->mr;
	return 0;
}

static int mr_regv(struct fid *fid, const struct iovec *iov, size_t count, uint64_t access,
		   uint64_t offset, uint64_t requested_key, uint64_t flags, struct fid_mr **mr,
		   void *context)
{
	struct fi_mr_attr attr = {
		.mr_iov = iov,
		.iov_count = count,
		.access = access,
		.offset = offset,
		.requested_key = requested_key,	/* ignored: FI_MR_PROV_KEY */
		.context = context,
		.iface = FI_HMEM_SYSTEM,
	};

	return mr_regattr(fid, &attr, flags, mr);
}

static int mr_reg(struct fid *fid, const void *buf, size_t len, uint64_t access, uint64_t offset,
		  uint64_t requested_key, uint64_t flags, struct fid_mr **mr, void *context)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return mr_regv(fid, &iov, 1, access, offset, requested_key, flags, mr, context);
}

struct fi_ops_mr efi_fi_mr_ops = {
	.size = sizeof(struct fi_ops_mr),
	.reg = mr_reg,
	.regv = mr_regv,
	.regattr = mr_regattr,
};
