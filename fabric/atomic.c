/* SPDX-License-Identifier: MIT */
/*
 * Atomics (fi_atomic) where libefi's map: its two 8-byte atomics, fetch-add
 * and compare-swap, on FI_UINT64 / FI_INT64 with a count of one element.
 *
 *   fi_fetch_atomic   FI_SUM          fetch-add
 *                     FI_ATOMIC_READ  fetch-add of 0 (reads without a race)
 *   fi_compare_atomic FI_CSWAP        compare-swap
 *   fi_atomic         FI_SUM          fetch-add whose original value lands in
 *                                     the endpoint's scratch word (libefi
 *                                     always returns it; nobody reads it)
 *
 * Everything else answers -FI_EOPNOTSUPP, and the valid queries
 * (fi_atomicvalid and friends, fi_query_atomic) say exactly this.  Two's
 * complement makes one fetch-add serve signed and unsigned integers.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "efi_fi.h"

#define EP(fep) ((struct efi_fi_ep *)(fep))

static bool int64_type(enum fi_datatype t)
{
	return t == FI_UINT64 || t == FI_INT64;
}

/* Which libefi operation, if any, implements (kind, datatype, op):
 * -FI_EOPNOTSUPP when none does. */
enum atomic_kind { KIND_WRITE, KIND_FETCH, KIND_COMPARE };

static int atomic_opcode(enum atomic_kind kind, enum fi_datatype datatype, enum fi_op op,
			 enum efi_wr_opcode *out)
{
	if (!int64_type(datatype))
		return -FI_EOPNOTSUPP;
	switch (kind) {
	case KIND_WRITE:
		if (op != FI_SUM)
			return -FI_EOPNOTSUPP;
		*out = EFI_WR_ATOMIC_FETCH_AND_ADD;
		return 0;
	case KIND_FETCH:
		if (op != FI_SUM && op != FI_ATOMIC_READ)
			return -FI_EOPNOTSUPP;
		*out = EFI_WR_ATOMIC_FETCH_AND_ADD;
		return 0;
	case KIND_COMPARE:
		if (op != FI_CSWAP)
			return -FI_EOPNOTSUPP;
		*out = EFI_WR_ATOMIC_CMP_AND_SWP;
		return 0;
	}
	return -FI_EOPNOTSUPP;
}

bool efi_fi_atomics_offered(const struct efi_device_attr *da)
{
	return da->atomic_cap != EFI_ATOMIC_NONE;
}

/* The endpoint's scratch word's MR, registered by the first fi_atomic write
 * (ofi_rxm's endpoints, which never use ours, do not pay an MR each); NULL
 * with errno when it cannot be. */
static struct efi_mr *scratch_mr(struct efi_fi_ep *ep)
{
	struct efi_mr *mr = __atomic_load_n(&ep->scratch_mr, __ATOMIC_ACQUIRE);

	if (mr)
		return mr;
	pthread_mutex_lock(&ep->dom->lock);
	mr = ep->scratch_mr;
	if (!mr) {
		mr = efi_reg_mr(ep->dom->pd, &ep->atomic_scratch, sizeof(ep->atomic_scratch),
				EFI_ACCESS_LOCAL_WRITE);
		__atomic_store_n(&ep->scratch_mr, mr, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&ep->dom->lock);
	return mr;
}

/* One atomic work request.  operand: the value to add or swap in (NULL for
 * FI_ATOMIC_READ); compare: CSWAP's; result/result_desc: where the original
 * value goes (NULL for a write: the scratch word). */
static ssize_t post_atomic(struct efi_fi_ep *ep, enum atomic_kind kind, const void *operand,
			   size_t count, const void *compare, void *result, void *result_desc,
			   uint64_t addr, uint64_t key, enum fi_datatype datatype, enum fi_op op,
			   uint64_t flags, void *context)
{
	struct efi_send_wr wr = { 0 }, *bad;
	struct efi_sge sge;
	enum efi_wr_opcode opcode;
	uint64_t value = 0;
	bool silent;
	int ret;

	if (!ep->enabled)
		return -FI_EOPBADSTATE;
	ret = atomic_opcode(kind, datatype, op, &opcode);
	if (ret)
		return ret;
	if (count != 1)
		return -FI_EINVAL;	/* fi_atomicvalid's count: 1 */
	if (op != FI_ATOMIC_READ) {
		if (!operand)
			return -FI_EINVAL;
		memcpy(&value, operand, sizeof(value));
	}
	if (kind == KIND_COMPARE && !compare)
		return -FI_EINVAL;
	if (kind != KIND_WRITE && (!result || !result_desc))
		return -FI_EINVAL;	/* FI_MR_LOCAL: the result needs its MR */
	if (addr & 7)
		return -FI_EINVAL;	/* libefi: 8-byte aligned targets */
	if (flags & FI_REMOTE_CQ_DATA)
		return -FI_EBADFLAGS;	/* atomics carry no immediate */
	if ((uintptr_t)context & EFI_FI_WR_BITS)
		return -FI_EINVAL;	/* see EFI_FI_WR_SILENT */

	silent = efi_fi_tx_silent(ep, flags);
	flags &= ~EFI_FI_NO_COMPLETION;
	if (kind == KIND_WRITE) {
		struct efi_mr *mr = scratch_mr(ep);

		if (!mr)
			return efi_fi_errno(errno);
		sge.addr = (uint64_t)(uintptr_t)&ep->atomic_scratch;
		sge.lkey = mr->lkey;
	} else {
		sge.addr = (uint64_t)(uintptr_t)result;
		sge.lkey = efi_fi_desc_lkey(result_desc);
	}
	sge.length = 8;
	wr.wr_id = (uint64_t)(uintptr_t)context | (silent ? EFI_FI_WR_SILENT : 0) |
		   (kind == KIND_WRITE ? EFI_FI_WR_AWRITE : 0);
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = opcode;
	wr.send_flags = (silent ? 0 : EFI_SEND_SIGNALED) | ((flags & FI_FENCE) ? EFI_SEND_FENCE : 0);
	wr.wr.atomic.remote_addr = addr;
	wr.wr.atomic.rkey = (uint32_t)key;
	if (opcode == EFI_WR_ATOMIC_CMP_AND_SWP) {
		memcpy(&wr.wr.atomic.compare_add, compare, sizeof(uint64_t));
		wr.wr.atomic.swap = value;
	} else {
		wr.wr.atomic.compare_add = value;	/* FI_ATOMIC_READ: adds 0 */
	}
	ret = efi_post_send(ep->qp, &wr, &bad);
	if (ret == ENOMEM)
		return -FI_EAGAIN;
	return efi_fi_errno(ret);
}

static uint64_t tx_op_flags(const struct efi_fi_ep *ep)
{
	return ep->info->tx_attr ? ep->info->tx_attr->op_flags : 0;
}

/* The one element of an ioc array of one entry; NULL when it is not that. */
static const void *single(const struct fi_ioc *iov, size_t count)
{
	if (!iov || count != 1 || iov[0].count != 1)
		return NULL;
	return iov[0].addr;
}

/* ------------------------------------------------------------ writes */

static ssize_t a_write(struct fid_ep *fep, const void *buf, size_t count, void *desc,
		       fi_addr_t dest, uint64_t addr, uint64_t key, enum fi_datatype datatype,
		       enum fi_op op, void *context)
{
	(void)desc, (void)dest;	/* the operand travels in the request */
	return post_atomic(EP(fep), KIND_WRITE, buf, count, NULL, NULL, NULL, addr, key, datatype,
			   op, tx_op_flags(EP(fep)), context);
}

static ssize_t a_writev(struct fid_ep *fep, const struct fi_ioc *iov, void **desc, size_t count,
			fi_addr_t dest, uint64_t addr, uint64_t key, enum fi_datatype datatype,
			enum fi_op op, void *context)
{
	const void *operand = single(iov, count);

	(void)desc, (void)dest;
	if (!operand)
		return -FI_EINVAL;
	return post_atomic(EP(fep), KIND_WRITE, operand, 1, NULL, NULL, NULL, addr, key,
			   datatype, op, tx_op_flags(EP(fep)), context);
}

static ssize_t a_writemsg(struct fid_ep *fep, const struct fi_msg_atomic *msg, uint64_t flags)
{
	const void *operand;

	if (!msg || msg->rma_iov_count != 1 || msg->rma_iov[0].count != 1)
		return -FI_EINVAL;
	operand = single(msg->msg_iov, msg->iov_count);
	if (!operand)
		return -FI_EINVAL;
	return post_atomic(EP(fep), KIND_WRITE, operand, 1, NULL, NULL, NULL, msg->rma_iov[0].addr,
			   msg->rma_iov[0].key, msg->datatype, msg->op, flags & ~EFI_FI_NO_COMPLETION,
			   msg->context);
}

static ssize_t a_inject(struct fid_ep *fep, const void *buf, size_t count, fi_addr_t dest,
			uint64_t addr, uint64_t key, enum fi_datatype datatype, enum fi_op op)
{
	(void)dest;
	/* the operand is copied into the request: buf is free on return */
	return post_atomic(EP(fep), KIND_WRITE, buf, count, NULL, NULL, NULL, addr, key, datatype,
			   op, FI_INJECT | EFI_FI_NO_COMPLETION, NULL);
}

/* ------------------------------------------------------------ fetches */

static ssize_t a_readwrite(struct fid_ep *fep, const void *buf, size_t count, void *desc,
			   void *result, void *result_desc, fi_addr_t dest, uint64_t addr,
			   uint64_t key, enum fi_datatype datatype, enum fi_op op, void *context)
{
	(void)desc, (void)dest;
	return post_atomic(EP(fep), KIND_FETCH, buf, count, NULL, result, result_desc, addr, key,
			   datatype, op, tx_op_flags(EP(fep)), context);
}

static ssize_t a_readwritev(struct fid_ep *fep, const struct fi_ioc *iov, void **desc,
			    size_t count, struct fi_ioc *resultv, void **result_desc,
			    size_t result_count, fi_addr_t dest, uint64_t addr, uint64_t key,
			    enum fi_datatype datatype, enum fi_op op, void *context)
{
	const void *operand = op == FI_ATOMIC_READ ? NULL : single(iov, count);
	void *result = (void *)single(resultv, result_count);

	(void)desc, (void)dest;
	if ((op != FI_ATOMIC_READ && !operand) || !result || !result_desc)
		return -FI_EINVAL;
	return post_atomic(EP(fep), KIND_FETCH, operand, 1, NULL, result, result_desc[0], addr,
			   key, datatype, op, tx_op_flags(EP(fep)), context);
}

static ssize_t a_readwritemsg(struct fid_ep *fep, const struct fi_msg_atomic *msg,
			      struct fi_ioc *resultv, void **result_desc, size_t result_count,
			      uint64_t flags)
{
	const void *operand;
	void *result = (void *)single(resultv, result_count);

	if (!msg || msg->rma_iov_count != 1 || msg->rma_iov[0].count != 1 || !result ||
	    !result_desc)
		return -FI_EINVAL;
	operand = msg->op == FI_ATOMIC_READ ? NULL : single(msg->msg_iov, msg->iov_count);
	if (msg->op != FI_ATOMIC_READ && !operand)
		return -FI_EINVAL;
	return post_atomic(EP(fep), KIND_FETCH, operand, 1, NULL, result, result_desc[0],
			   msg->rma_iov[0].addr, msg->rma_iov[0].key, msg->datatype, msg->op,
			   flags & ~EFI_FI_NO_COMPLETION, msg->context);
}

/* ------------------------------------------------------------ compare */

static ssize_t a_compwrite(struct fid_ep *fep, const void *buf, size_t count, void *desc,
			   const void *compare, void *compare_desc, void *result,
			   void *result_desc, fi_addr_t dest, uint64_t addr, uint64_t key,
			   enum fi_datatype datatype, enum fi_op op, void *context)
{
	(void)desc, (void)compare_desc, (void)dest;
	return post_atomic(EP(fep), KIND_COMPARE, buf, count, compare, result, result_desc, addr,
			   key, datatype, op, tx_op_flags(EP(fep)), context);
}

static ssize_t a_compwritev(struct fid_ep *fep, const struct fi_ioc *iov, void **desc,
			    size_t count, const struct fi_ioc *comparev, void **compare_desc,
			    size_t compare_count, struct fi_ioc *resultv, void **result_desc,
			    size_t result_count, fi_addr_t dest, uint64_t addr, uint64_t key,
			    enum fi_datatype datatype, enum fi_op op, void *context)
{
	const void *operand = single(iov, count);
	const void *compare = single(comparev, compare_count);
	void *result = (void *)single(resultv, result_count);

	(void)desc, (void)compare_desc, (void)dest;
	if (!operand || !compare || !result || !result_desc)
		return -FI_EINVAL;
	return post_atomic(EP(fep), KIND_COMPARE, operand, 1, compare, result, result_desc[0],
			   addr, key, datatype, op, tx_op_flags(EP(fep)), context);
}

static ssize_t a_compwritemsg(struct fid_ep *fep, const struct fi_msg_atomic *msg,
			      const struct fi_ioc *comparev, void **compare_desc,
			      size_t compare_count, struct fi_ioc *resultv, void **result_desc,
			      size_t result_count, uint64_t flags)
{
	const void *operand, *compare = single(comparev, compare_count);
	void *result = (void *)single(resultv, result_count);

	(void)compare_desc;
	if (!msg || msg->rma_iov_count != 1 || msg->rma_iov[0].count != 1 || !compare ||
	    !result || !result_desc)
		return -FI_EINVAL;
	operand = single(msg->msg_iov, msg->iov_count);
	if (!operand)
		return -FI_EINVAL;
	return post_atomic(EP(fep), KIND_COMPARE, operand, 1, compare, result, result_desc[0],
			   msg->rma_iov[0].addr, msg->rma_iov[0].key, msg->datatype, msg->op,
			   flags & ~EFI_FI_NO_COMPLETION, msg->context);
}

/* ------------------------------------------------------------ queries */

static int valid(enum atomic_kind kind, enum fi_datatype datatype, enum fi_op op, size_t *count)
{
	enum efi_wr_opcode opcode;
	int ret = atomic_opcode(kind, datatype, op, &opcode);

	if (ret)
		return ret;
	if (count)
		*count = 1;
	return 0;
}

static int a_writevalid(struct fid_ep *fep, enum fi_datatype datatype, enum fi_op op,
			size_t *count)
{
	(void)fep;
	return valid(KIND_WRITE, datatype, op, count);
}

static int a_readwritevalid(struct fid_ep *fep, enum fi_datatype datatype, enum fi_op op,
			    size_t *count)
{
	(void)fep;
	return valid(KIND_FETCH, datatype, op, count);
}

static int a_compwritevalid(struct fid_ep *fep, enum fi_datatype datatype, enum fi_op op,
			    size_t *count)
{
	(void)fep;
	return valid(KIND_COMPARE, datatype, op, count);
}

int efi_fi_query_atomic(struct fid_domain *domain, enum fi_datatype datatype, enum fi_op op,
			struct fi_atomic_attr *attr, uint64_t flags)
{
	struct efi_fi_domain *dom = (struct efi_fi_domain *)domain;
	enum atomic_kind kind;
	size_t count;
	int ret;

	if (!efi_fi_atomics_offered(&dom->attr))
		return -FI_EOPNOTSUPP;
	if (!attr || (flags & ~(FI_FETCH_ATOMIC | FI_COMPARE_ATOMIC)) ||
	    (flags & FI_FETCH_ATOMIC && flags & FI_COMPARE_ATOMIC))
		return -FI_EINVAL;
	kind = (flags & FI_COMPARE_ATOMIC) ? KIND_COMPARE :
	       (flags & FI_FETCH_ATOMIC) ? KIND_FETCH : KIND_WRITE;
	ret = valid(kind, datatype, op, &count);
	if (ret)
		return ret;
	attr->count = count;
	attr->size = sizeof(uint64_t);
	return 0;
}

struct fi_ops_atomic efi_fi_atomic_ops = {
	.size = sizeof(struct fi_ops_atomic),
	.write = a_write,
	.writev = a_writev,
	.writemsg = a_writemsg,
	.inject = a_inject,
	.readwrite = a_readwrite,
	.readwritev = a_readwritev,
	.readwritemsg = a_readwritemsg,
	.compwrite = a_compwrite,
	.compwritev = a_compwritev,
	.compwritemsg = a_compwritemsg,
	.writevalid = a_writevalid,
	.readwritevalid = a_readwritevalid,
	.compwritevalid = a_compwritevalid,
};
