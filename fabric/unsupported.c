/* SPDX-License-Identifier: MIT */
/*
 * The operation tables of what the provider does not offer: tagged messages
 * (ofi_rxm layers them on top), collectives, and atomics on a device
 * without libefi's atomics (atomic.c has the real ones).  Every entry
 * returns -FI_ENOSYS, so an application that calls them anyway learns it
 * instead of crashing on a NULL table.
 */
#include "config.h"

#include "efi_fi.h"

static ssize_t no_tagged_recv(struct fid_ep *ep, void *buf, size_t len, void *desc, fi_addr_t src_addr, uint64_t tag, uint64_t ignore, void *context)
{
	(void)ep, (void)buf, (void)len, (void)desc, (void)src_addr, (void)tag, (void)ignore, (void)context;
	return -FI_ENOSYS;
}

static ssize_t no_tagged_recvv(struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count, fi_addr_t src_addr, uint64_t tag, uint64_t ignore, void *context)
{
	(void)ep, (void)iov, (void)desc, (void)count, (void)src_addr, (void)tag, (void)ignore, (void)context;
	return -FI_ENOSYS;
}

static ssize_t no_tagged_recvmsg(struct fid_ep *ep, const struct fi_msg_tagged *msg, uint64_t flags)
{
	(void)ep, (void)msg, (void)flags;
	return -FI_ENOSYS;
}

static ssize_t no_tagged_send(struct fid_ep *ep, const void *buf, size_t len, void *desc, fi_addr_t dest_addr, uint64_t tag, void *context)
{
	(void)ep, (void)buf, (void)len, (void)desc, (void)dest_addr, (void)tag, (void)context;
	return -FI_ENOSYS;
}

static ssize_t no_tagged_sendv(struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count, fi_addr_t dest_addr, uint64_t tag, void *context)
{
	(void)ep, (void)iov, (void)desc, (void)count, (void)dest_addr, (void)tag, (void)context;
	return -FI_ENOSYS;
}

static ssize_t no_tagged_sendmsg(struct fid_ep *ep, const struct fi_msg_tagged *msg, uint64_t flags)
{
	(void)ep, (void)msg, (void)flags;
	return -FI_ENOSYS;
}

static ssize_t no_tagged_inject(struct fid_ep *ep, const void *buf, size_t len, fi_addr_t dest_addr, uint64_t tag)
{
	(void)ep, (void)buf, (void)len, (void)dest_addr, (void)tag;
	return -FI_ENOSYS;
}

static ssize_t no_tagged_senddata(struct fid_ep *ep, const void *buf, size_t len, void *desc, uint64_t data, fi_addr_t dest_addr, uint64_t tag, void *context)
{
	(void)ep, (void)buf, (void)len, (void)desc, (void)data, (void)dest_addr, (void)tag, (void)context;
	return -FI_ENOSYS;
}

static ssize_t no_tagged_injectdata(struct fid_ep *ep, const void *buf, size_t len, uint64_t data, fi_addr_t dest_addr, uint64_t tag)
{
	(void)ep, (void)buf, (void)len, (void)data, (void)dest_addr, (void)tag;
	return -FI_ENOSYS;
}

struct fi_ops_tagged efi_fi_no_tagged_ops = {
	.size = sizeof(struct fi_ops_tagged),
	.recv = no_tagged_recv,
	.recvv = no_tagged_recvv,
	.recvmsg = no_tagged_recvmsg,
	.send = no_tagged_send,
	.sendv = no_tagged_sendv,
	.sendmsg = no_tagged_sendmsg,
	.inject = no_tagged_inject,
	.senddata = no_tagged_senddata,
	.injectdata = no_tagged_injectdata,
};

static ssize_t no_atomic_write(struct fid_ep *ep, const void *buf, size_t count, void *desc, fi_addr_t dest_addr, uint64_t addr, uint64_t key, enum fi_datatype datatype, enum fi_op op, void *context)
{
	(void)ep, (void)buf, (void)count, (void)desc, (void)dest_addr, (void)addr, (void)key, (void)datatype, (void)op, (void)context;
	return -FI_ENOSYS;
}

static ssize_t no_atomic_writev(struct fid_ep *ep, const struct fi_ioc *iov, void **desc, size_t count, fi_addr_t dest_addr, uint64_t addr, uint64_t key, enum fi_datatype datatype, enum fi_op op, void *context)
{
	(void)ep, (void)iov, (void)desc, (void)count, (void)dest_addr, (void)addr, (void)key, (void)datatype, (void)op, (void)context;
	return -FI_ENOSYS;
}

static ssize_t no_atomic_writemsg(struct fid_ep *ep, const struct fi_msg_atomic *msg, uint64_t flags)
{
	(void)ep, (void)msg, (void)flags;
	return -FI_ENOSYS;
}

static ssize_t no_atomic_inject(struct fid_ep *ep, const void *buf, size_t count, fi_addr_t dest_addr, uint64_t addr, uint64_t key, enum fi_datatype datatype, enum fi_op op)
{
	(void)ep, (void)buf, (void)count, (void)dest_addr, (void)addr, (void)key, (void)datatype, (void)op;
	return -FI_ENOSYS;
}

static ssize_t no_atomic_readwrite(struct fid_ep *ep, const void *buf, size_t count, void *desc, void *result, void *result_desc, fi_addr_t dest_addr, uint64_t addr, uint64_t key, enum fi_datatype datatype, enum fi_op op, void *context)
{
	(void)ep, (void)buf, (void)count, (void)desc, (void)result, (void)result_desc, (void)dest_addr, (void)addr, (void)key, (void)datatype, (void)op, (void)context;
	return -FI_ENOSYS;
}

static ssize_t no_atomic_readwritev(struct fid_ep *ep, const struct fi_ioc *iov, void **desc, size_t count, struct fi_ioc *resultv, void **result_desc, size_t result_count, fi_addr_t dest_addr, uint64_t addr, uint64_t key, enum fi_datatype datatype, enum fi_op op, void *context)
{
	(void)ep, (void)iov, (void)desc, (void)count, (void)resultv, (void)result_desc, (void)result_count, (void)dest_addr, (void)addr, (void)key, (void)datatype, (void)op, (void)context;
	return -FI_ENOSYS;
}

static ssize_t no_atomic_readwritemsg(struct fid_ep *ep, const struct fi_msg_atomic *msg, struct fi_ioc *resultv, void **result_desc, size_t result_count, uint64_t flags)
{
	(void)ep, (void)msg, (void)resultv, (void)result_desc, (void)result_count, (void)flags;
	return -FI_ENOSYS;
}

static ssize_t no_atomic_compwrite(struct fid_ep *ep, const void *buf, size_t count, void *desc, const void *compare, void *compare_desc, void *result, void *result_desc, fi_addr_t dest_addr, uint64_t addr, uint64_t key, enum fi_datatype datatype, enum fi_op op, void *context)
{
	(void)ep, (void)buf, (void)count, (void)desc, (void)compare, (void)compare_desc, (void)result, (void)result_desc, (void)dest_addr, (void)addr, (void)key, (void)datatype, (void)op, (void)context;
	return -FI_ENOSYS;
}

static ssize_t no_atomic_compwritev(struct fid_ep *ep, const struct fi_ioc *iov, void **desc, size_t count, const struct fi_ioc *comparev, void **compare_desc, size_t compare_count, struct fi_ioc *resultv, void **result_desc, size_t result_count, fi_addr_t dest_addr, uint64_t addr, uint64_t key, enum fi_datatype datatype, enum fi_op op, void *context)
{
	(void)ep, (void)iov, (void)desc, (void)count, (void)comparev, (void)compare_desc, (void)compare_count, (void)resultv, (void)result_desc, (void)result_count, (void)dest_addr, (void)addr, (void)key, (void)datatype, (void)op, (void)context;
	return -FI_ENOSYS;
}

static ssize_t no_atomic_compwritemsg(struct fid_ep *ep, const struct fi_msg_atomic *msg, const struct fi_ioc *comparev, void **compare_desc, size_t compare_count, struct fi_ioc *resultv, void **result_desc, size_t result_count, uint64_t flags)
{
	(void)ep, (void)msg, (void)comparev, (void)compare_desc, (void)compare_count, (void)resultv, (void)result_desc, (void)result_count, (void)flags;
	return -FI_ENOSYS;
}

static int no_atomic_writevalid(struct fid_ep *ep, enum fi_datatype datatype, enum fi_op op, size_t *count)
{
	(void)ep, (void)datatype, (void)op, (void)count;
	return -FI_ENOSYS;
}

static int no_atomic_readwritevalid(struct fid_ep *ep, enum fi_datatype datatype, enum fi_op op, size_t *count)
{
	(void)ep, (void)datatype, (void)op, (void)count;
	return -FI_ENOSYS;
}

static int no_atomic_compwritevalid(struct fid_ep *ep, enum fi_datatype datatype, enum fi_op op, size_t *count)
{
	(void)ep, (void)datatype, (void)op, (void)count;
	return -FI_ENOSYS;
}

struct fi_ops_atomic efi_fi_no_atomic_ops = {
	.size = sizeof(struct fi_ops_atomic),
	.write = no_atomic_write,
	.writev = no_atomic_writev,
	.writemsg = no_atomic_writemsg,
	.inject = no_atomic_inject,
	.readwrite = no_atomic_readwrite,
	.readwritev = no_atomic_readwritev,
	.readwritemsg = no_atomic_readwritemsg,
	.compwrite = no_atomic_compwrite,
	.compwritev = no_atomic_compwritev,
	.compwritemsg = no_atomic_compwritemsg,
	.writevalid = no_atomic_writevalid,
	.readwritevalid = no_atomic_readwritevalid,
	.compwritevalid = no_atomic_compwritevalid,
};

static ssize_t no_coll_barrier(struct fid_ep *ep, fi_addr_t coll_addr, void *context)
{
	(void)ep, (void)coll_addr, (void)context;
	return -FI_ENOSYS;
}

static ssize_t no_coll_broadcast(struct fid_ep *ep, void *buf, size_t count, void *desc, fi_addr_t coll_addr, fi_addr_t root_addr, enum fi_datatype datatype, uint64_t flags, void *context)
{
	(void)ep, (void)buf, (void)count, (void)desc, (void)coll_addr, (void)root_addr, (void)datatype, (void)flags, (void)context;
	return -FI_ENOSYS;
}

static ssize_t no_coll_alltoall(struct fid_ep *ep, const void *buf, size_t count, void *desc, void *result, void *result_desc, fi_addr_t coll_addr, enum fi_datatype datatype, uint64_t flags, void *context)
{
	(void)ep, (void)buf, (void)count, (void)desc, (void)result, (void)result_desc, (void)coll_addr, (void)datatype, (void)flags, (void)context;
	return -FI_ENOSYS;
}

static ssize_t no_coll_allreduce(struct fid_ep *ep, const void *buf, size_t count, void *desc, void *result, void *result_desc, fi_addr_t coll_addr, enum fi_datatype datatype, enum fi_op op, uint64_t flags, void *context)
{
	(void)ep, (void)buf, (void)count, (void)desc, (void)result, (void)result_desc, (void)coll_addr, (void)datatype, (void)op, (void)flags, (void)context;
	return -FI_ENOSYS;
}

static ssize_t no_coll_allgather(struct fid_ep *ep, const void *buf, size_t count, void *desc, void *result, void *result_desc, fi_addr_t coll_addr, enum fi_datatype datatype, uint64_t flags, void *context)
{
	(void)ep, (void)buf, (void)count, (void)desc, (void)result, (void)result_desc, (void)coll_addr, (void)datatype, (void)flags, (void)context;
	return -FI_ENOSYS;
}

static ssize_t no_coll_reduce_scatter(struct fid_ep *ep, const void *buf, size_t count, void *desc, void *result, void *result_desc, fi_addr_t coll_addr, enum fi_datatype datatype, enum fi_op op, uint64_t flags, void *context)
{
	(void)ep, (void)buf, (void)count, (void)desc, (void)result, (void)result_desc, (void)coll_addr, (void)datatype, (void)op, (void)flags, (void)context;
	return -FI_ENOSYS;
}

static ssize_t no_coll_reduce(struct fid_ep *ep, const void *buf, size_t count, void *desc, void *result, void *result_desc, fi_addr_t coll_addr, fi_addr_t root_addr, enum fi_datatype datatype, enum fi_op op, uint64_t flags, void *context)
{
	(void)ep, (void)buf, (void)count, (void)desc, (void)result, (void)result_desc, (void)coll_addr, (void)root_addr, (void)datatype, (void)op, (void)flags, (void)context;
	return -FI_ENOSYS;
}

static ssize_t no_coll_scatter(struct fid_ep *ep, const void *buf, size_t count, void *desc, void *result, void *result_desc, fi_addr_t coll_addr, fi_addr_t root_addr, enum fi_datatype datatype, uint64_t flags, void *context)
{
	(void)ep, (void)buf, (void)count, (void)desc, (void)result, (void)result_desc, (void)coll_addr, (void)root_addr, (void)datatype, (void)flags, (void)context;
	return -FI_ENOSYS;
}

static ssize_t no_coll_gather(struct fid_ep *ep, const void *buf, size_t count, void *desc, void *result, void *result_desc, fi_addr_t coll_addr, fi_addr_t root_addr, enum fi_datatype datatype, uint64_t flags, void *context)
{
	(void)ep, (void)buf, (void)count, (void)desc, (void)result, (void)result_desc, (void)coll_addr, (void)root_addr, (void)datatype, (void)flags, (void)context;
	return -FI_ENOSYS;
}

static ssize_t no_coll_msg(struct fid_ep *ep, const struct fi_msg_collective *msg, struct fi_ioc *resultv, void **result_desc, size_t result_count, uint64_t flags)
{
	(void)ep, (void)msg, (void)resultv, (void)result_desc, (void)result_count, (void)flags;
	return -FI_ENOSYS;
}

static ssize_t no_coll_barrier2(struct fid_ep *ep, fi_addr_t coll_addr, uint64_t flags, void *context)
{
	(void)ep, (void)coll_addr, (void)flags, (void)context;
	return -FI_ENOSYS;
}

struct fi_ops_collective efi_fi_no_collective_ops = {
	.size = sizeof(struct fi_ops_collective),
	.barrier = no_coll_barrier,
	.broadcast = no_coll_broadcast,
	.alltoall = no_coll_alltoall,
	.allreduce = no_coll_allreduce,
	.allgather = no_coll_allgather,
	.reduce_scatter = no_coll_reduce_scatter,
	.reduce = no_coll_reduce,
	.scatter = no_coll_scatter,
	.gather = no_coll_gather,
	.msg = no_coll_msg,
	.barrier2 = no_coll_barrier2,
};
