/* SPDX-License-Identifier: MIT */
/*
 * The provider entry point (fi_prov_ini), the fabric object, the shared
 * per-device contexts and fi_trywait.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "efi_fi.h"

static void efi_fi_cleanup(void)
{
}

struct fi_provider efi_fi_prov = {
	.version = EFI_FI_VERSION,
	.fi_version = EFI_FI_API_VERSION,
	.name = EFI_FI_PROV_NAME,
	.getinfo = efi_fi_getinfo,
	.fabric = efi_fi_fabric_open,
	.cleanup = efi_fi_cleanup,
};

FI_EXT_INI
{
	/* `fi_info -e` lists it; read again at every fi_connect */
	fi_param_define(&efi_fi_prov, "connect_timeout", FI_PARAM_INT,
			"Milliseconds fi_connect waits for the server's fi_accept before "
			"FI_ETIMEDOUT, 1..%d (default: %d, as long as rdma_cm waits)",
			EFI_FI_CONNECT_TIMEOUT_MAX_MS, EFI_FI_CONNECT_TIMEOUT_MS);
	return &efi_fi_prov;
}

int efi_fi_connect_timeout_ms(void)
{
	int ms = EFI_FI_CONNECT_TIMEOUT_MS;

	if (fi_param_get_int(&efi_fi_prov, "connect_timeout", &ms) || ms <= 0 ||
	    ms > EFI_FI_CONNECT_TIMEOUT_MAX_MS)
		ms = EFI_FI_CONNECT_TIMEOUT_MS;
	return ms;
}

int efi_fi_errno(int err)
{
	switch (err) {
	case 0:
		return 0;
	case ENOMEM:
		return -FI_ENOMEM;
	case EAGAIN:
		return -FI_EAGAIN;
	case EINVAL:
		return -FI_EINVAL;
	case EBUSY:
		return -FI_EBUSY;
	case ENODEV:
		return -FI_ENODEV;
	case ENOENT:
		return -FI_ENOENT;
	case EADDRINUSE:
		return -FI_EADDRINUSE;
	case ECONNREFUSED:
		return -FI_ECONNREFUSED;
	case EHOSTUNREACH:
		return -FI_EHOSTUNREACH;
	case EACCES:
	case EPERM:
		return -FI_EACCES;
	case ENOSPC:
		return -FI_ENOSPC;
	case ETIMEDOUT:
		return -FI_ETIMEDOUT;
	default:
		return -FI_EOTHER;
	}
}

int efi_fi_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	(void)fid, (void)bfid, (void)flags;
	return -FI_ENOSYS;
}

int efi_fi_no_control(struct fid *fid, int command, void *arg)
{
	(void)fid, (void)command, (void)arg;
	return -FI_ENOSYS;
}

int efi_fi_no_ops_open(struct fid *fid, const char *name, uint64_t flags, void **ops,
		       void *context)
{
	(void)fid, (void)name, (void)flags, (void)ops, (void)context;
	return -FI_ENOSYS;
}

int efi_fi_no_tostr(const struct fid *fid, char *buf, size_t len)
{
	(void)fid, (void)buf, (void)len;
	return -FI_ENOSYS;
}

int efi_fi_no_ops_set(struct fid *fid, const char *name, uint64_t flags, void *ops,
		      void *context)
{
	(void)fid, (void)name, (void)flags, (void)ops, (void)context;
	return -FI_ENOSYS;
}

struct efi_context *efi_fi_ctx_get(struct efi_fi_fabric *fab, const char *devname)
{
	struct efi_fi_devctx *d;
	struct efi_device **list;
	struct efi_context *ctx = NULL;
	int n, err = ENODEV;

	pthread_mutex_lock(&fab->lock);
	for (d = fab->devs; d; d = d->next) {
		if (!strcmp(d->name, devname)) {
			d->refs++;
			pthread_mutex_unlock(&fab->lock);
			return d->ctx;
		}
	}
	list = efi_get_device_list(&n);
	if (!list) {
		err = errno;
		goto out;
	}
	for (int i = 0; i < n; i++) {
		if (strcmp(list[i]->name, devname))
			continue;
		ctx = efi_open_device(list[i]);
		err = errno;
		break;
	}
	efi_free_device_list(list);
	if (ctx) {
		d = calloc(1, sizeof(*d));
		if (!d) {
			efi_close_device(ctx);
			ctx = NULL;
			err = ENOMEM;
			goto out;
		}
		snprintf(d->name, sizeof(d->name), "%s", devname);
		d->ctx = ctx;
		d->refs = 1;
		d->next = fab->devs;
		fab->devs = d;
	}
out:
	pthread_mutex_unlock(&fab->lock);
	if (!ctx)
		errno = err;
	return ctx;
}

void efi_fi_ctx_put(struct efi_fi_fabric *fab, struct efi_context *ctx)
{
	struct efi_fi_devctx **pp, *d;

	pthread_mutex_lock(&fab->lock);
	for (pp = &fab->devs; (d = *pp); pp = &d->next) {
		if (d->ctx != ctx)
			continue;
		if (--d->refs == 0) {
			*pp = d->next;
			efi_close_device(d->ctx);
			free(d);
		}
		break;
	}
	pthread_mutex_unlock(&fab->lock);
}

static int fabric_close(struct fid *fid)
{
	struct efi_fi_fabric *fab = (struct efi_fi_fabric *)fid;

	if (fab->refs)
		return -FI_EBUSY;
	efi_fi_connreq_fabric_close(fab);
	pthread_mutex_destroy(&fab->cr_lock);
	pthread_mutex_destroy(&fab->lock);
	free(fab);
	return 0;
}

static int fabric_trywait(struct fid_fabric *fabric, struct fid **fids, int count)
{
	(void)fabric;
	for (int i = 0; i < count; i++) {
		int ret;

		switch (fids[i]->fclass) {
		case FI_CLASS_CQ:
			ret = efi_fi_cq_trywait((struct efi_fi_cq *)fids[i]);
			break;
		case FI_CLASS_EQ:
			ret = efi_fi_eq_trywait((struct efi_fi_eq *)fids[i]);
			break;
		default:
			ret = -FI_EINVAL;
		}
		if (ret)
			return ret;
	}
	return 0;
}

static int no_wait_open(struct fid_fabric *fabric, struct fi_wait_attr *attr,
			struct fid_wait **waitset)
{
	(void)fabric, (void)attr, (void)waitset;
	return -FI_ENOSYS;
}

static int domain2(struct fid_fabric *fabric, struct fi_info *info, struct fid_domain **dom,
		   uint64_t flags, void *context)
{
	if (flags)
		return -FI_EINVAL;
	return efi_fi_domain_open(fabric, info, dom, context);
}

static struct fi_ops fabric_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = fabric_close,
	.bind = efi_fi_no_bind,
	.control = efi_fi_no_control,
	.ops_open = efi_fi_no_ops_open,
	.tostr = efi_fi_no_tostr,
	.ops_set = efi_fi_no_ops_set,
};

static struct fi_ops_fabric fabric_ops = {
	.size = sizeof(struct fi_ops_fabric),
	.domain = efi_fi_domain_open,
	.passive_ep = efi_fi_pep_open,
	.eq_open = efi_fi_eq_open,
	.wait_open = no_wait_open,
	.trywait = fabric_trywait,
	.domain2 = domain2,
};

int efi_fi_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context)
{
	struct efi_fi_fabric *fab;

	if (!attr || !attr->name || strcmp(attr->name, EFI_FI_FABRIC_NAME))
		return -FI_EINVAL;
	fab = calloc(1, sizeof(*fab));
	if (!fab)
		return -FI_ENOMEM;
	pthread_mutex_init(&fab->lock, NULL);
	pthread_mutex_init(&fab->cr_lock, NULL);
	fab->fabric.fid.fclass = FI_CLASS_FABRIC;
	fab->fabric.fid.context = context;
	fab->fabric.fid.ops = &fabric_fi_ops;
	fab->fabric.ops = &fabric_ops;
	*fabric = &fab->fabric;
	return 0;
}
