/* SPDX-License-Identifier: MIT */
/*
 * librdmacm calls EFI does not serve (yet, or ever): each fails with errno
 * ENOSYS (not built yet) or EOPNOTSUPP (EFI cannot offer it), never
 * pretending.  docs/rdmacm.md lists them with the reasons.
 */
#include "config.h"

#include <poll.h>
#include <sys/select.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <rdma/rdma_verbs.h>
#include <rdma/rsocket.h>

#include "rdmacm/rdmacm_int.h"

RCM_EXPORT int rdma_create_qp_ex(struct rdma_cm_id *id, struct ibv_qp_init_attr_ex *attr)
{
	(void)id, (void)attr;
	return rcm_err(ENOSYS);
}

RCM_EXPORT int rdma_create_srq(struct rdma_cm_id *id, struct ibv_pd *pd,
			       struct ibv_srq_init_attr *attr)
{
	(void)id, (void)pd, (void)attr;
	return rcm_err(ENOSYS);
}

RCM_EXPORT int rdma_create_srq_ex(struct rdma_cm_id *id, struct ibv_srq_init_attr_ex *attr)
{
	(void)id, (void)attr;
	return rcm_err(ENOSYS);
}

/* Nothing rdma_create_srq could have made. */
RCM_EXPORT void rdma_destroy_srq(struct rdma_cm_id *id)
{
	(void)id;
}

RCM_EXPORT int rdma_migrate_id(struct rdma_cm_id *id, struct rdma_event_channel *channel)
{
	(void)id, (void)channel;
	return rcm_err(ENOSYS);
}

RCM_EXPORT int rdma_notify(struct rdma_cm_id *id, enum ibv_event_type event)
{
	(void)id, (void)event;
	return rcm_err(ENOSYS);
}

RCM_EXPORT int rdma_set_option(struct rdma_cm_id *id, int level, int optname,
			       void *optval, size_t optlen)
{
	(void)id, (void)level, (void)optname, (void)optval, (void)optlen;
	return rcm_err(ENOSYS);
}

RCM_EXPORT int rdma_init_qp_attr(struct rdma_cm_id *id, struct ibv_qp_attr *qp_attr,
				 int *qp_attr_mask)
{
	(void)id, (void)qp_attr, (void)qp_attr_mask;
	return rcm_err(ENOSYS);
}

RCM_EXPORT int rdma_establish(struct rdma_cm_id *id)
{
	(void)id;
	return rcm_err(ENOSYS);
}

/* Multicast needs UD QPs: EFI has RC only. */
RCM_EXPORT int rdma_join_multicast(struct rdma_cm_id *id, struct sockaddr *addr, void *context)
{
	(void)id, (void)addr, (void)context;
	return rcm_err(EOPNOTSUPP);
}

RCM_EXPORT int rdma_join_multicast_ex(struct rdma_cm_id *id,
				      struct rdma_cm_join_mc_attr_ex *attr, void *context)
{
	(void)id, (void)attr, (void)context;
	return rcm_err(EOPNOTSUPP);
}

RCM_EXPORT int rdma_leave_multicast(struct rdma_cm_id *id, struct sockaddr *addr)
{
	(void)id, (void)addr;
	return rcm_err(EOPNOTSUPP);
}

/* Enhanced connection establishment is a Mellanox-specific option exchange. */
RCM_EXPORT int rdma_set_local_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	(void)id, (void)ece;
	return rcm_err(EOPNOTSUPP);
}

RCM_EXPORT int rdma_get_remote_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	(void)id, (void)ece;
	return rcm_err(EOPNOTSUPP);
}

RCM_EXPORT int rdma_reject_ece(struct rdma_cm_id *id, const void *private_data,
			       uint8_t private_data_len)
{
	(void)id, (void)private_data, (void)private_data_len;
	return rcm_err(EOPNOTSUPP);
}

/* rsockets: sockets over RDMA inside librdmacm.  Not built (docs/rdmacm.md). */
#define RS_NOSYS(ret, name, args, uses) \
	RCM_EXPORT ret name args \
	{ \
		uses; \
		errno = ENOSYS; \
		return (ret)-1; \
	}

RS_NOSYS(int, rsocket, (int d, int t, int p), (void)d; (void)t; (void)p)
RS_NOSYS(int, rbind, (int s, const struct sockaddr *a, socklen_t l), (void)s; (void)a; (void)l)
RS_NOSYS(int, rlisten, (int s, int b), (void)s; (void)b)
RS_NOSYS(int, raccept, (int s, struct sockaddr *a, socklen_t *l), (void)s; (void)a; (void)l)
RS_NOSYS(int, rconnect, (int s, const struct sockaddr *a, socklen_t l), (void)s; (void)a; (void)l)
RS_NOSYS(int, rshutdown, (int s, int h), (void)s; (void)h)
RS_NOSYS(int, rclose, (int s), (void)s)
RS_NOSYS(ssize_t, rrecv, (int s, void *b, size_t l, int f), (void)s; (void)b; (void)l; (void)f)
RS_NOSYS(ssize_t, rrecvfrom, (int s, void *b, size_t l, int f, struct sockaddr *a, socklen_t *al),
	 (void)s; (void)b; (void)l; (void)f; (void)a; (void)al)
RS_NOSYS(ssize_t, rrecvmsg, (int s, struct msghdr *m, int f), (void)s; (void)m; (void)f)
RS_NOSYS(ssize_t, rsend, (int s, const void *b, size_t l, int f), (void)s; (void)b; (void)l; (void)f)
RS_NOSYS(ssize_t, rsendto, (int s, const void *b, size_t l, int f, const struct sockaddr *a, socklen_t al),
	 (void)s; (void)b; (void)l; (void)f; (void)a; (void)al)
RS_NOSYS(ssize_t, rsendmsg, (int s, const struct msghdr *m, int f), (void)s; (void)m; (void)f)
RS_NOSYS(ssize_t, rread, (int s, void *b, size_t c), (void)s; (void)b; (void)c)
RS_NOSYS(ssize_t, rreadv, (int s, const struct iovec *v, int c), (void)s; (void)v; (void)c)
RS_NOSYS(ssize_t, rwrite, (int s, const void *b, size_t c), (void)s; (void)b; (void)c)
RS_NOSYS(ssize_t, rwritev, (int s, const struct iovec *v, int c), (void)s; (void)v; (void)c)
RS_NOSYS(int, rpoll, (struct pollfd *f, nfds_t n, int t), (void)f; (void)n; (void)t)
RS_NOSYS(int, rselect, (int n, fd_set *r, fd_set *w, fd_set *e, struct timeval *t),
	 (void)n; (void)r; (void)w; (void)e; (void)t)
RS_NOSYS(int, rgetpeername, (int s, struct sockaddr *a, socklen_t *l), (void)s; (void)a; (void)l)
RS_NOSYS(int, rgetsockname, (int s, struct sockaddr *a, socklen_t *l), (void)s; (void)a; (void)l)
RS_NOSYS(int, rsetsockopt, (int s, int lv, int o, const void *v, socklen_t l),
	 (void)s; (void)lv; (void)o; (void)v; (void)l)
RS_NOSYS(int, rgetsockopt, (int s, int lv, int o, void *v, socklen_t *l),
	 (void)s; (void)lv; (void)o; (void)v; (void)l)
RS_NOSYS(int, rfcntl, (int s, int c, ...), (void)s; (void)c)
RS_NOSYS(off_t, riomap, (int s, void *b, size_t l, int p, int f, off_t o),
	 (void)s; (void)b; (void)l; (void)p; (void)f; (void)o)
RS_NOSYS(int, riounmap, (int s, void *b, size_t l), (void)s; (void)b; (void)l)
RS_NOSYS(size_t, riowrite, (int s, const void *b, size_t c, off_t o, int f),
	 (void)s; (void)b; (void)c; (void)o; (void)f)
