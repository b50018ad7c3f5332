/* SPDX-License-Identifier: MIT */
/*
 * Verbs EFI has no counterpart for: multicast,
 * re-registration, imported objects, ECE, dma-buf MRs.
 * They exist so that every ibv_* a program binds to is ours (never the real
 * libibverbs'), and fail the way libibverbs fails for a provider that lacks
 * them: EOPNOTSUPP (in errno for the calls that return pointers).  perftest
 * and friends then print their own "not supported" message.
 */
#include "config.h"

#include <errno.h>
#include <stddef.h>

#include "verbs_int.h"

#define UNSUPPORTED_PTR do { errno = EOPNOTSUPP; return NULL; } while (0)

EFIV_EXPORT int ibv_resolve_eth_l2_from_gid(struct ibv_context *context, struct ibv_ah_attr *attr,
					    uint8_t eth_mac[6], uint16_t *vid)
{
	(void)context; (void)attr; (void)eth_mac; (void)vid;
	return EOPNOTSUPP;
}

EFIV_EXPORT int ibv_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	(void)qp; (void)gid; (void)lid;
	return EOPNOTSUPP;
}

EFIV_EXPORT int ibv_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	(void)qp; (void)gid; (void)lid;
	return EOPNOTSUPP;
}

/* libibverbs returns IBV_REREG_MR_ERR_INPUT (-1) with errno for a provider
 * without rereg. */
EFIV_EXPORT int ibv_rereg_mr(struct ibv_mr *mr, int flags, struct ibv_pd *pd, void *addr,
			     size_t length, int access)
{
	(void)mr; (void)flags; (void)pd; (void)addr; (void)length; (void)access;
	errno = EOPNOTSUPP;
	return IBV_REREG_MR_ERR_INPUT;
}

EFIV_EXPORT struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length,
					     uint64_t iova, int fd, int access)
{
	(void)pd; (void)offset; (void)length; (void)iova; (void)fd; (void)access;
	UNSUPPORTED_PTR;
}

EFIV_EXPORT struct ibv_context *ibv_import_device(int cmd_fd)
{
	(void)cmd_fd;
	UNSUPPORTED_PTR;
}

EFIV_EXPORT struct ibv_pd *ibv_import_pd(struct ibv_context *context, uint32_t pd_handle)
{
	(void)context; (void)pd_handle;
	UNSUPPORTED_PTR;
}

EFIV_EXPORT void ibv_unimport_pd(struct ibv_pd *pd)
{
	(void)pd;
}

EFIV_EXPORT struct ibv_mr *ibv_import_mr(struct ibv_pd *pd, uint32_t mr_handle)
{
	(void)pd; (void)mr_handle;
	UNSUPPORTED_PTR;
}

EFIV_EXPORT void ibv_unimport_mr(struct ibv_mr *mr)
{
	(void)mr;
}

EFIV_EXPORT struct ibv_dm *ibv_import_dm(struct ibv_context *context, uint32_t dm_handle)
{
	(void)context; (void)dm_handle;
	UNSUPPORTED_PTR;
}

EFIV_EXPORT void ibv_unimport_dm(struct ibv_dm *dm)
{
	(void)dm;
}

EFIV_EXPORT int ibv_set_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	(void)qp; (void)ece;
	return EOPNOTSUPP;
}

EFIV_EXPORT int ibv_query_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	(void)qp; (void)ece;
	return EOPNOTSUPP;
}
