/* SPDX-License-Identifier: MIT */
/*
 * <efi/efi_verbs.h>: the libefi objects inside libefi-verbs' ones, exported
 * at their own version node (EFI_VERBS_1.0 in libefi-verbs.map), so that
 * libraries built on both (libefi-rdmacm) need not know this library's
 * object layout.
 */
#include "config.h"

#include <errno.h>

#include <efi/efi_verbs.h>

#include "verbs_int.h"

EFIV_EXPORT struct efi_context *efi_verbs_get_context(struct ibv_context *context)
{
	if (!context) {
		errno = EINVAL;
		return NULL;
	}
	return efiv_ctx(context)->ectx;
}

EFIV_EXPORT struct efi_qp *efi_verbs_get_qp(struct ibv_qp *qp)
{
	if (!qp) {
		errno = EINVAL;
		return NULL;
	}
	return efiv_qp(qp)->eqp;
}
