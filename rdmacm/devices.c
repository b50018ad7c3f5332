/* SPDX-License-Identifier: MIT */
/* rdma_get_devices / rdma_free_devices: the verbs contexts of the EFI
 * devices, the ones every id of the process uses (bridge.c). */
#include "config.h"

#include <stdlib.h>

#include "rdmacm/rdmacm_int.h"

RCM_EXPORT struct ibv_context **rdma_get_devices(int *num_devices)
{
	struct ibv_context **list;
	struct rcm_dev *d;
	int n, i;

	n = rcm_devices(&d);
	if (n < 0) {
		/* librdmacm gives an empty list when there is no device */
		n = 0;
	}
	list = calloc((size_t)n + 1, sizeof(*list));
	if (!list)
		return NULL;
	for (i = 0; i < n; i++)
		list[i] = d[i].verbs;
	if (num_devices)
		*num_devices = n;
	return list;
}

/* The contexts stay open: they are shared by the process's ids. */
RCM_EXPORT void rdma_free_devices(struct ibv_context **list)
{
	free(list);
}
