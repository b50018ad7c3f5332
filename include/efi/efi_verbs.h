/* SPDX-License-Identifier: MIT */
/*
 * libefi-verbs' way back to libefi: the libefi objects inside the ibv_*
 * objects libefi-verbs hands out, for libraries layered on both.
 * libefi-rdmacm uses it: librdmacm's API gives programs ibv_* objects, and
 * libefi's connection manager (<efi/efi_cm.h>) wants the efi_* ones inside.
 *
 * Link with -lefi-verbs.  The objects must be libefi-verbs' own (every
 * ibv_* object a program gets under efi-run is); an object of another
 * libibverbs provider is not recognised, and the result is undefined.
 * The libefi object lives as long as the verbs object holding it: do not
 * destroy it with libefi's calls.
 */
#ifndef EFI_EFI_VERBS_H
#define EFI_EFI_VERBS_H

#include <infiniband/verbs.h>

#include <efi/efi.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The libefi context of a libefi-verbs context (ibv_open_device's).
 * Returns it, or NULL with errno EINVAL when context is NULL. */
struct efi_context *efi_verbs_get_context(struct ibv_context *context);

/* The libefi QP of a libefi-verbs QP (ibv_create_qp's).  Returns it, or
 * NULL with errno EINVAL when qp is NULL. */
struct efi_qp *efi_verbs_get_qp(struct ibv_qp *qp);

#ifdef __cplusplus
}
#endif
#endif
