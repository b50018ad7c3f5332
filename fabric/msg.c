/* SPDX-License-Identifier: MIT */
/*
 * Data transfer: message and RMA operations as efi_post_send /
 * efi_post_recv work requests.  The wr_id is the operation's context (see
 * EFI_FI_WR_SILENT); remote CQ data travels as the 32-bit immediate.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include "efi_fi.h"

/* SGEs on the stack per work request (tx/rx iov_limit is libefi's
 * max_sge, which is below this). */
#define EFI_FI_MAX_SGE 32

static int fill_sges(struct efi_sge *sge, const struct iovec *iov, void **desc, size_t count,
		     size_t *total)
{
	if (count > EFI_FI_MAX_SGE)
		return -FI_EINVAL;
	*total = 0;
	for (size_t i = 0; i < count; i++) {
		if (iov[i].iov_len > UINT32_MAX)
			return -FI_EMSGSIZE;
		sge[i].addr = (uint64_t)(uintptr_t)iov[i].iov_base;
		sge[i].length = (uint32_t)iov[i].iov_len;
		sge[i].lkey = efi_fi_desc_lkey(desc ? desc[i] : NULL);
		*total += iov[i].iov_len;
	}
	return 0;
}

static uint64_t wr_id(void *context, bool silent)
{
	return (uint64_t)(uintptr_t)context | (silent ? EFI_FI_WR_SILENT : 0);
}

bool efi_fi_tx_silent(const struct efi_fi_ep *ep, uint64_t flags)
{
	return !ep->tx_cq || (flags & EFI_FI_NO_COMPLETION) ||
	       ((ep->tx_flags & FI_SELECTIVE_COMPLETION) && !(flags & FI_COMPLETION));
}

/* A slot of the pool for an inject above libefi's inline limit: the
 * transmit CQ's, else the endpoint's own, whose completions only we read
 * (reaped here when every slot is in flight). */
static int bounce(struct efi_fi_ep *ep, const struct iovec *iov, size_t count, uint64_t *wr_id,
		  struct efi_sge *sge)
{
	struct efi_fi_bounce *b = ep->tx_cq ? &ep->tx_cq->bounce : &ep->bounce;
	int ret = efi_fi_bounce_get(b, ep->dom->pd, *wr_id, iov, count, sge, wr_id);

	if (ret == -FI_EAGAIN && !ep->tx_cq) {
		struct efi_wc wc[16];
		int n = efi_poll_cq(ep->own_cq, 16, wc);

		for (int i = 0; i < n; i++)
			efi_fi_bounce_put(b, &wc[i].wr_id);
		ret = efi_fi_bounce_get(b, ep->dom->pd, *wr_id, iov, count, sge, wr_id);
	}
	return ret;
}

ssize_t efi_fi_post(struct efi_fi_ep *ep, enum efi_wr_opcode op, const struct iovec *iov,
		    void **desc, size_t count, uint64_t raddr, uint64_t rkey, uint64_t data,
		    uint64_t flags, void *context)
{
	struct efi_sge sge[EFI_FI_MAX_SGE];
	struct efi_send_wr wr = { 0 }, *bad;
	size_t total;
	bool silent, bounced = false;
	int ret;

	if (!ep->enabled)
		return -FI_EOPBADSTATE;
	if ((uintptr_t)context & EFI_FI_WR_BITS)
		return -FI_EINVAL;	/* see EFI_FI_WR_SILENT */
	ret = fill_sges(sge, iov, desc, count, &total);
	if (ret)
		return ret;
	silent = efi_fi_tx_silent(ep, flags);
	if (!silent)
		wr.send_flags |= EFI_SEND_SIGNALED;
	wr.wr_id = wr_id(context, silent);
	if (flags & FI_INJECT) {
		if (total > ep->inject_size || op == EFI_WR_RDMA_READ)
			return -FI_EINVAL;
		if (total > ep->max_inline) {
			/* from a bounce slot, signaled so that its completion
			 * frees the slot (bounce.c) */
			ret = bounce(ep, iov, count, &wr.wr_id, sge);
			if (ret)
				return ret;
			count = 1;
			bounced = true;
			wr.send_flags |= EFI_SEND_SIGNALED;
		} else {
			wr.send_flags |= EFI_SEND_INLINE;
		}
	}
	if (flags & FI_FENCE)
		wr.send_flags |= EFI_SEND_FENCE;
	if (flags & FI_REMOTE_CQ_DATA) {
		if (op == EFI_WR_SEND)
			op = EFI_WR_SEND_WITH_IMM;
		else if (op == EFI_WR_RDMA_WRITE)
			op = EFI_WR_RDMA_WRITE_WITH_IMM;
		wr.imm_data = htonl((uint32_t)data);
	}
	wr.sg_list = sge;
	wr.num_sge = (int)count;
	wr.opcode = op;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = (uint32_t)rkey;
	ret = efi_post_send(ep->qp, &wr, &bad);
	if (ret && bounced)
		efi_fi_bounce_put(ep->tx_cq ? &ep->tx_cq->bounce : &ep->bounce, &wr.wr_id);
	if (ret == ENOMEM)
		return -FI_EAGAIN;	/* send queue full: reap completions first */
	return efi_fi_errno(ret);
}

static ssize_t post_recv(struct efi_fi_ep *ep, const struct iovec *iov, void **desc, size_t count,
			 void *context)
{
	struct efi_sge sge[EFI_FI_MAX_SGE];
	struct efi_recv_wr wr = { 0 }, *bad;
	size_t total;
	int ret;

	if (!ep->enabled)
		return -FI_EOPBADSTATE;
	if ((uintptr_t)context & EFI_FI_WR_BITS)
		return -FI_EINVAL;	/* see EFI_FI_WR_SILENT */
	ret = fill_sges(sge, iov, desc, count, &total);
	if (ret)
		return ret;
	wr.wr_id = wr_id(context, !ep->rx_cq);
	wr.sg_list = sge;
	wr.num_sge = (int)count;
	ret = efi_post_recv(ep->qp, &wr, &bad);
	if (ret == ENOMEM)
		return -FI_EAGAIN;
	return efi_fi_errno(ret);
}

static uint64_t tx_op_flags(const struct efi_fi_ep *ep)
{
	return ep->info->tx_attr ? ep->info->tx_attr->op_flags : 0;
}

#define EP(fep) ((struct efi_fi_ep *)(fep))

/* ------------------------------------------------------------ messages */

static ssize_t m_recv(struct fid_ep *fep, void *buf, size_t len, void *desc, fi_addr_t src,
		      void *context)
{
	struct iovec iov = { buf, len };

	(void)src;
	return post_recv(EP(fep), &iov, &desc, 1, context);
}

static ssize_t m_recvv(struct fid_ep *fep, const struct iovec *iov, void **desc, size_t count,
		       fi_addr_t src, void *context)
{
	(void)src;
	return post_recv(EP(fep), iov, desc, count, context);
}

static ssize_t m_recvmsg(struct fid_ep *fep, const struct fi_msg *msg, uint64_t flags)
{
	if (flags & ~(FI_COMPLETION | FI_MSG | FI_RECV))
		return -FI_EBADFLAGS;
	return post_recv(EP(fep), msg->msg_iov, msg->desc, msg->iov_count, msg->context);
}

static ssize_t m_send(struct fid_ep *fep, const void *buf, size_t len, void *desc, fi_addr_t dst,
		      void *context)
{
	struct iovec iov = { (void *)buf, len };

	(void)dst;
	return efi_fi_post(EP(fep), EFI_WR_SEND, &iov, &desc, 1, 0, 0, 0, tx_op_flags(EP(fep)),
			   context);
}

static ssize_t m_sendv(struct fid_ep *fep, const struct iovec *iov, void **desc, size_t count,
		       fi_addr_t dst, void *context)
{
	(void)dst;
	return efi_fi_post(EP(fep), EFI_WR_SEND, iov, desc, count, 0, 0, 0, tx_op_flags(EP(fep)),
			   context);
}

static ssize_t m_sendmsg(struct fid_ep *fep, const struct fi_msg *msg, uint64_t flags)
{
	return efi_fi_post(EP(fep), EFI_WR_SEND, msg->msg_iov, msg->desc, msg->iov_count, 0, 0,
			   msg->data, flags & ~EFI_FI_NO_COMPLETION, msg->context);
}

static ssize_t m_inject(struct fid_ep *fep, const void *buf, size_t len, fi_addr_t dst)
{
	struct iovec iov = { (void *)buf, len };

	(void)dst;
	return efi_fi_post(EP(fep), EFI_WR_SEND, &iov, NULL, 1, 0, 0, 0,
			   FI_INJECT | EFI_FI_NO_COMPLETION, NULL);
}

static ssize_t m_senddata(struct fid_ep *fep, const void *buf, size_t len, void *desc,
			  uint64_t data, fi_addr_t dst, void *context)
{
	struct iovec iov = { (void *)buf, len };

	(void)dst;
	return efi_fi_post(EP(fep), EFI_WR_SEND, &iov, &desc, 1, 0, 0, data,
			   tx_op_flags(EP(fep)) | FI_REMOTE_CQ_DATA, context);
}

static ssize_t m_injectdata(struct fid_ep *fep, const void *buf, size_t len, uint64_t data,
			    fi_addr_t dst)
{
	struct iovec iov = { (void *)buf, len };

	(void)dst;
	return efi_fi_post(EP(fep), EFI_WR_SEND, &iov, NULL, 1, 0, 0, data,
			   FI_INJECT | EFI_FI_NO_COMPLETION | FI_REMOTE_CQ_DATA, NULL);
}

struct fi_ops_msg efi_fi_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	.recv = m_recv,
	.recvv = m_recvv,
	.recvmsg = m_recvmsg,
	.send = m_send,
	.sendv = m_sendv,
	.sendmsg = m_sendmsg,
	.inject = m_inject,
	.senddata = m_senddata,
	.injectdata = m_injectdata,
};

/* ------------------------------------------------------------ RMA */

static ssize_t r_read(struct fid_ep *fep, void *buf, size_t len, void *desc, fi_addr_t src,
		      uint64_t addr, uint64_t key, void *context)
{
	struct iovec iov = { buf, len };

	(void)src;
	return efi_fi_post(EP(fep), EFI_WR_RDMA_READ, &iov, &desc, 1, addr, key, 0,
			   tx_op_flags(EP(fep)), context);
}

static ssize_t r_readv(struct fid_ep *fep, const struct iovec *iov, void **desc, size_t count,
		       fi_addr_t src, uint64_t addr, uint64_t key, void *context)
{
	(void)src;
	return efi_fi_post(EP(fep), EFI_WR_RDMA_READ, iov, desc, count, addr, key, 0,
			   tx_op_flags(EP(fep)), context);
}

static ssize_t r_readmsg(struct fid_ep *fep, const struct fi_msg_rma *msg, uint64_t flags)
{
	if (msg->rma_iov_count != 1)
		return -FI_EINVAL;	/* rma_iov_limit 1 */
	return efi_fi_post(EP(fep), EFI_WR_RDMA_READ, msg->msg_iov, msg->desc, msg->iov_count,
			   msg->rma_iov[0].addr, msg->rma_iov[0].key, 0,
			   flags & ~(FI_REMOTE_CQ_DATA | EFI_FI_NO_COMPLETION), msg->context);
}

static ssize_t r_write(struct fid_ep *fep, const void *buf, size_t len, void *desc,
		       fi_addr_t dst, uint64_t addr, uint64_t key, void *context)
{
	struct iovec iov = { (void *)buf, len };

	(void)dst;
	return efi_fi_post(EP(fep), EFI_WR_RDMA_WRITE, &iov, &desc, 1, addr, key, 0,
			   tx_op_flags(EP(fep)), context);
}

static ssize_t r_writev(struct fid_ep *fep, const struct iovec *iov, void **desc, size_t count,
			fi_addr_t dst, uint64_t addr, uint64_t key, void *context)
{
	(void)dst;
	return efi_fi_post(EP(fep), EFI_WR_RDMA_WRITE, iov, desc, count, addr, key, 0,
			   tx_op_flags(EP(fep)), context);
}

static ssize_t r_writemsg(struct fid_ep *fep, const struct fi_msg_rma *msg, uint64_t flags)
{
	if (msg->rma_iov_count != 1)
		return -FI_EINVAL;
	return efi_fi_post(EP(fep), EFI_WR_RDMA_WRITE, msg->msg_iov, msg->desc, msg->iov_count,
			   msg->rma_iov[0].addr, msg->rma_iov[0].key, msg->data,
			   flags & ~EFI_FI_NO_COMPLETION, msg->context);
}

static ssize_t r_inject(struct fid_ep *fep, const void *buf, size_t len, fi_addr_t dst,
			uint64_t addr, uint64_t key)
{
	struct iovec iov = { (void *)buf, len };

	(void)dst;
	return efi_fi_post(EP(fep), EFI_WR_RDMA_WRITE, &iov, NULL, 1, addr, key, 0,
			   FI_INJECT | EFI_FI_NO_COMPLETION, NULL);
}

static ssize_t r_writedata(struct fid_ep *fep, const void *buf, size_t len, void *desc,
			   uint64_t data, fi_addr_t dst, uint64_t addr, uint64_t key,
			   void *context)
{
	struct iovec iov = { (void *)buf, len };

	(void)dst;
	return efi_fi_post(EP(fep), EFI_WR_RDMA_WRITE, &iov, &desc, 1, addr, key, data,
			   tx_op_flags(EP(fep)) | FI_REMOTE_CQ_DATA, context);
}

static ssize_t r_injectdata(struct fid_ep *fep, const void *buf, size_t len, uint64_t data,
			    fi_addr_t dst, uint64_t addr, uint64_t key)
{
	struct iovec iov = { (void *)buf, len };

	(void)dst;
	return efi_fi_post(EP(fep), EFI_WR_RDMA_WRITE, &iov, NULL, 1, addr, key, data,
			   FI_INJECT | EFI_FI_NO_COMPLETION | FI_REMOTE_CQ_DATA, NULL);
}

struct fi_ops_rma efi_fi_rma_ops = {
	.size = sizeof(struct fi_ops_rma),
	.read = r_read,
	.readv = r_readv,
	.readmsg = r_readmsg,
	.write = r_write,
	.writev = r_writev,
	.writemsg = r_writemsg,
	.inject = r_inject,
	.writedata = r_writedata,
	.injectdata = r_injectdata,
};
