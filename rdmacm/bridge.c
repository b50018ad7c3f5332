/* SPDX-License-Identifier: MIT */
/*
 * From libibverbs objects to libefi ones.
 *
 * librdmacm hands programs libibverbs objects (id->verbs, id->qp), and
 * programs use them with ibv_* calls, which efi-run binds to libefi-verbs;
 * efi_cm wants the libefi objects inside them, which libefi-verbs gives
 * through its public accessors (<efi/efi_verbs.h>).
 *
 * The device table is opened once per process, as librdmacm opens every
 * RDMA device once: ids share the contexts, so a PD a program allocates on
 * id->verbs is usable with every id of that device.
 */
#include "config.h"

#include <string.h>

#include <efi/efi_verbs.h>

#include "rdmacm/rdmacm_int.h"

static pthread_once_t devs_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t devs_lock = PTHREAD_MUTEX_INITIALIZER;	/* the lazy PDs */
static struct rcm_dev devs[RCM_MAX_DEVS];
static int ndevs;
static int devs_errno;

static void devs_open(void)
{
	struct ibv_device **list;
	int n, i;

	list = ibv_get_device_list(&n);
	if (!list) {
		devs_errno = errno ? errno : ENODEV;
		return;
	}
	for (i = 0; i < n && ndevs < RCM_MAX_DEVS; i++) {
		struct ibv_context *c = ibv_open_device(list[i]);

		if (!c)
			continue;
		devs[ndevs].ectx = efi_verbs_get_context(c);
		if (!devs[ndevs].ectx) {
			ibv_close_device(c);
			continue;
		}
		devs[ndevs].verbs = c;
		ndevs++;
	}
	/* the opened contexts keep their devices: the list may go */
	ibv_free_device_list(list);
	if (ndevs == 0)
		devs_errno = ENODEV;
}

int rcm_devices(struct rcm_dev **out)
{
	pthread_once(&devs_once, devs_open);
	if (ndevs == 0)
		return rcm_err(devs_errno);
	*out = devs;
	return ndevs;
}

static void addr_gid(const struct sockaddr *a, union efi_gid *g)
{
	memset(g, 0, sizeof(*g));
	if (a->sa_family == AF_INET) {
		g->raw[10] = 0xff;
		g->raw[11] = 0xff;
		memcpy(&g->raw[12], &((const struct sockaddr_in *)a)->sin_addr, 4);
	} else {
		memcpy(g->raw, &((const struct sockaddr_in6 *)a)->sin6_addr, 16);
	}
}

int rcm_dev_of_addr(const struct sockaddr *addr)
{
	struct rcm_dev *d;
	union efi_gid want, g;
	int n, i, j;

	n = rcm_devices(&d);
	if (n < 0)
		return -1;
	addr_gid(addr, &want);
	for (i = 0; i < n; i++) {
		struct efi_port_attr pa;

		/* asked each time: an interface's addresses change */
		if (efi_query_port(d[i].ectx, 1, &pa) != 0)
			continue;
		for (j = 0; j < pa.gid_tbl_len; j++)
			if (efi_query_gid(d[i].ectx, 1, j, &g) == 0 &&
			    memcmp(g.raw, want.raw, sizeof(g.raw)) == 0)
				return i;
	}
	return -1;
}

struct efi_qp *rcm_efi_qp(struct ibv_qp *qp)
{
	return efi_verbs_get_qp(qp);
}

struct ibv_pd *rcm_dev_pd(int dev)
{
	struct ibv_pd *pd;

	pthread_mutex_lock(&devs_lock);
	if (!devs[dev].pd)
		devs[dev].pd = ibv_alloc_pd(devs[dev].verbs);
	pd = devs[dev].pd;
	pthread_mutex_unlock(&devs_lock);
	return pd;
}
