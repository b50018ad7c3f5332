/* SPDX-License-Identifier: MIT */
/*
 * Address handles: the destinations of UD sends (libefi's efi_ah), and the
 * UD send path, which hands libefi its own AH in place of the program's.
 * ibv_init_ah_from_wc and ibv_create_ah_from_wc answer a received datagram
 * from its GRH, as RoCE providers do.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "verbs_int.h"

_Static_assert(sizeof(struct ibv_ah_attr) == sizeof(struct efi_ah_attr) &&
	       offsetof(struct ibv_ah_attr, grh.dgid) == offsetof(struct efi_ah_attr, grh.dgid) &&
	       offsetof(struct ibv_ah_attr, grh.sgid_index) == offsetof(struct efi_ah_attr, grh.sgid_index) &&
	       offsetof(struct ibv_ah_attr, is_global) == offsetof(struct efi_ah_attr, is_global),
	       "ibv_ah_attr layout");
_Static_assert(offsetof(struct ibv_send_wr, wr.ud.ah) == offsetof(struct efi_send_wr, wr.ud.ah) &&
	       offsetof(struct ibv_send_wr, wr.ud.remote_qpn) == offsetof(struct efi_send_wr, wr.ud.remote_qpn) &&
	       offsetof(struct ibv_send_wr, wr.ud.remote_qkey) == offsetof(struct efi_send_wr, wr.ud.remote_qkey) &&
	       IBV_QPT_UD == (int)EFI_QPT_UD && IBV_WC_GRH == (int)EFI_WC_GRH && EFI_GRH_LEN == sizeof(struct ibv_grh),
	       "UD layout");

EFIV_EXPORT struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	struct efi_ah_attr e;
	struct efiv_ah *ah;
	int err;

	if (!pd || !attr) {
		errno = EINVAL;
		return NULL;
	}
	ah = calloc(1, sizeof(*ah));
	if (!ah)
		return NULL;
	memcpy(&e, attr, sizeof(e));
	ah->eah = efi_create_ah(efiv_pd(pd)->epd, &e);
	if (!ah->eah) {
		err = errno;
		free(ah);
		errno = err;
		return NULL;
	}
	ah->ibah.context = pd->context;
	ah->ibah.pd = pd;
	ah->ibah.handle = ah->eah->handle;
	efiv_track(efiv_ctx(pd->context), EFIV_AH, &ah->link);
	return &ah->ibah;
}

void efiv_destroy_ah_now(struct efiv_ah *ah)
{
	efiv_untrack(efiv_ctx(ah->ibah.context), &ah->link);
	efi_destroy_ah(ah->eah);
	free(ah);
}

EFIV_EXPORT int ibv_destroy_ah(struct ibv_ah *ah)
{
	if (!ah)
		return EINVAL;
	efiv_destroy_ah_now(efiv_ah(ah));
	return 0;
}

/* The AH attributes that answer a received datagram: its sender's GID from
 * the GRH (libefi's is the InfiniBand layout, efi.h EFI_GRH_LEN), sent
 * from our GID of the same family. */
EFIV_EXPORT int ibv_init_ah_from_wc(struct ibv_context *context, uint8_t port_num, struct ibv_wc *wc,
				    struct ibv_grh *grh, struct ibv_ah_attr *ah_attr)
{
	static const uint8_t pfx[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	union ibv_gid sgid;
	int v4;

	if (!context || !wc || !grh || !ah_attr || port_num != 1 || !(wc->wc_flags & IBV_WC_GRH)) {
		errno = EINVAL;
		return -1;
	}
	memset(ah_attr, 0, sizeof(*ah_attr));
	ah_attr->is_global = 1;
	ah_attr->port_num = 1;
	memcpy(ah_attr->grh.dgid.raw, grh->sgid.raw, 16);
	v4 = memcmp(grh->sgid.raw, pfx, 12) == 0;
	ah_attr->grh.hop_limit = 64;
	for (int i = 0; ibv_query_gid(context, 1, i, &sgid) == 0; i++) {
		if ((memcmp(sgid.raw, pfx, 12) == 0) == v4) {
			ah_attr->grh.sgid_index = (uint8_t)i;
			return 0;
		}
	}
	errno = ENOENT;
	return -1;
}

EFIV_EXPORT struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *pd, struct ibv_wc *wc, struct ibv_grh *grh,
						 uint8_t port_num)
{
	struct ibv_ah_attr attr;

	if (!pd) {
		errno = EINVAL;
		return NULL;
	}
	if (ibv_init_ah_from_wc(pd->context, port_num, wc, grh, &attr))
		return NULL;
	return ibv_create_ah(pd, &attr);
}

/* A UD QP's send: the program's WRs name our AH wrappers, libefi wants its
 * own AHs: each WR goes through a copy that names them (datagrams are
 * small and leave at post time; RC QPs never come here). */
int efiv_post_send_ud(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr)
{
	for (; wr; wr = wr->next) {
		struct efi_send_wr e, *ebad;
		int err;

		memcpy(&e, wr, sizeof(e));
		e.next = NULL;
		e.wr.ud.ah = wr->wr.ud.ah ? efiv_ah(wr->wr.ud.ah)->eah : NULL;
		err = efi_post_send(efiv_qp(qp)->eqp, &e, &ebad);
		if (err) {
			*bad_wr = wr;
			return err;
		}
	}
	return 0;
}
