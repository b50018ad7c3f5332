/* SPDX-License-Identifier: MIT */
/*
 * Devices: the EFI interfaces of the caller's instance as ibv_devices, open
 * and close, and the device/port/GID/P_Key queries.
 */
#include "config.h"

#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "verbs_int.h"

/* Where the device's (virtual) sysfs directory would be: ibv_devinfo reads
 * files below it with ibv_read_sysfs_file, which serves them (misc.c). */
#define EFIV_SYSFS_PREFIX "/sys/class/infiniband/"

/* dev_name: the node below /dev/infiniband/ that programs which look for
 * one before they use a device (UCX: stat, S_ISCHR, access R_OK|W_OK; it
 * never opens it) find for every EFI device.  EFI has no kernel uverbs, so
 * libefi-verbs' tmpfiles.d line (systemd/efi-verbs.conf) makes it an alias
 * of /dev/null; its own name cannot collide with a kernel's uverbsN node on
 * a host that also has RDMA hardware.  docs/verbs.md, "Device node". */
#define EFIV_DEV_NODE "efi"

static pthread_mutex_t list_lock = PTHREAD_MUTEX_INITIALIZER;

/* A stable node GUID: FNV-1a over "instance/interface", so the same
 * interface of the same instance has the same GUID in every process and
 * across restarts, and two interfaces differ.  The top byte is EFI's own
 * (0x02: locally administered, as a made-up EUI-64 should be). */
static uint64_t device_guid(const struct efi_device *d)
{
	uint64_t h = UINT64_C(0xcbf29ce484222325);
	const char *parts[2] = { d->instance, d->name };

	for (int p = 0; p < 2; p++) {
		for (const unsigned char *s = (const unsigned char *)parts[p]; *s; s++) {
			h ^= *s;
			h *= UINT64_C(0x100000001b3);
		}
		h ^= '/';
		h *= UINT64_C(0x100000001b3);
	}
	h = (h & UINT64_C(0x00ffffffffffffff)) | (UINT64_C(0x02) << 56);
	return htobe64(h);
}

void efiv_device_list_put(struct efiv_device_list *l)
{
	int last;

	pthread_mutex_lock(&list_lock);
	last = --l->refs == 0;
	pthread_mutex_unlock(&list_lock);
	if (!last)
		return;
	efi_free_device_list(l->elist);
	free(l->devs);
	free(l->slots);
	free(l);
}

static struct efiv_device_list *list_owner(struct ibv_device **list)
{
	return (struct efiv_device_list *)(void *)list[-1];
}

EFIV_EXPORT struct ibv_device **ibv_get_device_list(int *num_devices)
{
	struct efiv_device_list *l;
	int n = 0, saved;

	if (num_devices)
		*num_devices = 0;
	l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
	l->elist = efi_get_device_list(&n);
	if (!l->elist)
		goto fail;
	l->devs = calloc((size_t)n + 1, sizeof(*l->devs));
	l->slots = calloc((size_t)n + 2, sizeof(*l->slots));
	if (!l->devs || !l->slots)
		goto fail;
	/* slot 0, before the array the caller sees, leads back to us even
	 * when the list is empty */
	l->slots[0] = (struct ibv_device *)(void *)l;
	l->list = l->slots + 1;
	for (int i = 0; i < n; i++) {
		struct efiv_device *d = &l->devs[i];
		struct efi_device *e = l->elist[i];

		d->edev = e;
		d->owner = l;
		d->index = i;
		d->guid = device_guid(e);
		d->ibdev.node_type = IBV_NODE_CA;
		/* RoCE devices say IB transport; the port says Ethernet. */
		d->ibdev.transport_type = IBV_TRANSPORT_IB;
		snprintf(d->ibdev.name, sizeof(d->ibdev.name), "%s", e->name);
		snprintf(d->ibdev.dev_name, sizeof(d->ibdev.dev_name), "%s", EFIV_DEV_NODE);
		snprintf(d->ibdev.dev_path, sizeof(d->ibdev.dev_path),
			 "/sys/class/infiniband_verbs/uverbs%d", i);
		snprintf(d->ibdev.ibdev_path, sizeof(d->ibdev.ibdev_path), "%s%s",
			 EFIV_SYSFS_PREFIX, e->name);
		l->list[i] = &d->ibdev;
	}
	l->count = n;
	l->refs = 1;
	if (num_devices)
		*num_devices = n;
	return l->list;
fail:
	saved = errno;
	efi_free_device_list(l->elist);
	free(l->devs);
	free(l->slots);
	free(l);
	errno = saved;
	return NULL;
}

EFIV_EXPORT void ibv_free_device_list(struct ibv_device **list)
{
	if (list)
		efiv_device_list_put(list_owner(list));
}

EFIV_EXPORT const char *ibv_get_device_name(struct ibv_device *device)
{
	return device ? device->name : NULL;
}

EFIV_EXPORT __be64 ibv_get_device_guid(struct ibv_device *device)
{
	return device ? ((struct efiv_device *)device)->guid : 0;
}

EFIV_EXPORT int ibv_get_device_index(struct ibv_device *device)
{
	return device ? ((struct efiv_device *)device)->index : -1;
}

EFIV_EXPORT struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	struct efiv_device *d = (struct efiv_device *)device;
	struct efiv_context *c;
	int err;

	if (!d) {
		errno = EINVAL;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->ectx = efi_open_device(d->edev);
	if (!c->ectx) {
		err = errno;
		free(c);
		errno = err;
		return NULL;
	}
	err = efiv_async_init(c);
	if (err) {
		efi_close_device(c->ectx);
		free(c);
		errno = err;
		return NULL;
	}
	c->dev = d;
	efiv_objs_init(c);
	c->vctx.context.device = device;
	/* no kernel uverbs file behind an EFI device */
	c->vctx.context.cmd_fd = -1;
	c->vctx.context.num_comp_vectors = c->ectx->num_comp_vectors;
	pthread_mutex_init(&c->vctx.context.mutex, NULL);
	efiv_fill_ops(c);
	pthread_mutex_lock(&list_lock);
	d->owner->refs++;
	pthread_mutex_unlock(&list_lock);
	return &c->vctx.context;
}

EFIV_EXPORT int ibv_close_device(struct ibv_context *context)
{
	struct efiv_context *c;
	int err;

	if (!context)
		return EINVAL;
	c = efiv_ctx(context);
	/* what the program left behind goes with the context, as with the
	 * kernel's uverbs */
	efiv_release_all(c);
	err = efi_close_device(c->ectx);
	if (err)
		return err;
	efiv_async_fini(c);
	pthread_mutex_destroy(&c->obj_lock);
	pthread_mutex_destroy(&context->mutex);
	efiv_device_list_put(c->dev->owner);
	free(c);
	return 0;
}

/* The vendor id verbs programs see (docs/verbs.md): "EFI" in ASCII, as siw
 * reports "bmt".  As an IEEE OUI it has the group bit set (0x45), so no NIC
 * vendor can own it: programs that key quirks on vendor_id (perftest, UCX)
 * treat EFI as the generic device it is. */
#define EFIV_VENDOR_ID EFI_VENDOR_ID

EFIV_EXPORT int ibv_query_device(struct ibv_context *context, struct ibv_device_attr *attr)
{
	struct efiv_context *c;
	struct efi_device_attr e;
	int err;

	if (!context || !attr)
		return EINVAL;
	c = efiv_ctx(context);
	err = efi_query_device(c->ectx, &e);
	if (err)
		return err;
	memset(attr, 0, sizeof(*attr));
	snprintf(attr->fw_ver, sizeof(attr->fw_ver), "%s", e.fw_ver);
	attr->node_guid = c->dev->guid;
	attr->sys_image_guid = c->dev->guid;
	attr->max_mr_size = e.max_mr_size;
	attr->page_size_cap = e.page_size_cap;
	attr->vendor_id = e.vendor_id ? e.vendor_id : EFIV_VENDOR_ID;
	attr->vendor_part_id = e.vendor_part_id;
	attr->hw_ver = e.hw_ver;
	attr->max_qp = e.max_qp;
	attr->max_qp_wr = e.max_qp_wr;
	/* libefi answers RNR NAKs and generates them (responder.c); its SRQs
	 * resize (efi_modify_srq) */
	attr->device_cap_flags = e.device_cap_flags | IBV_DEVICE_RC_RNR_NAK_GEN |
				 IBV_DEVICE_SRQ_RESIZE;
	attr->max_sge = e.max_sge;
	attr->max_sge_rd = e.max_sge_rd;
	attr->max_cq = e.max_cq;
	attr->max_cqe = e.max_cqe;
	attr->max_mr = e.max_mr;
	attr->max_pd = e.max_pd;
	attr->max_qp_rd_atom = e.max_qp_rd_atom;
	attr->max_res_rd_atom = e.max_res_rd_atom;
	attr->max_qp_init_rd_atom = e.max_qp_init_rd_atom;
	attr->atomic_cap = (enum ibv_atomic_cap)e.atomic_cap;
	attr->max_pkeys = 1;
	attr->phys_port_cnt = e.phys_port_cnt;
	/* SRQs: as many as QPs, each as long as a receive queue */
	attr->max_srq = e.max_qp;
	attr->max_srq_wr = e.max_qp_wr;
	attr->max_srq_sge = e.max_sge;
	/* UD address handles: heap objects, limited by memory only */
	attr->max_ah = INT32_MAX;
	return 0;
}

/* The extended attributes, written up to attr_size bytes (callers built
 * against older headers pass a shorter struct).  What EFI has beyond
 * orig_attr is little, and said honestly: no completion timestamps (mask 0,
 * no core clock), no ODP, TSO, RSS, packet pacing, tag matching, CQ
 * moderation or device memory; one port. */
int efiv_query_device_ex(struct ibv_context *context, const struct ibv_query_device_ex_input *input,
			 struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ibv_device_attr_ex a;
	int err;

	if (!context || !attr || (input && input->comp_mask) ||
	    attr_size < offsetof(struct ibv_device_attr_ex, comp_mask))
		return EINVAL;
	memset(&a, 0, sizeof(a));
	err = ibv_query_device(context, &a.orig_attr);
	if (err)
		return err;
	a.device_cap_flags_ex = a.orig_attr.device_cap_flags;
	a.completion_timestamp_mask = 0;
	a.phys_port_cnt_ex = a.orig_attr.phys_port_cnt;
	if (attr_size > sizeof(a))
		attr_size = sizeof(a);
	memcpy(attr, &a, attr_size);
	return 0;
}

/* The port attributes, written up to len bytes of *out (callers built
 * against older headers pass a shorter struct). */
static int query_port(struct ibv_context *context, uint8_t port_num,
		      struct ibv_port_attr *out, size_t len)
{
	struct efiv_context *c;
	struct efi_port_attr e;
	struct ibv_port_attr a;
	int err;

	if (!context || !out)
		return EINVAL;
	c = efiv_ctx(context);
	err = efi_query_port(c->ectx, port_num, &e);
	if (err == ENODEV)
		efiv_async_port_error(c);
	if (err)
		return err;
	memset(&a, 0, sizeof(a));
	a.state = (enum ibv_port_state)e.state;
	a.max_mtu = (enum ibv_mtu)e.max_mtu;
	a.active_mtu = (enum ibv_mtu)e.active_mtu;
	a.gid_tbl_len = e.gid_tbl_len;
	/* As a RoCE port says (rxe, mlx5): its GIDs are the interface's IP
	 * addresses, and connections can be set up through a connection
	 * manager (efid's, and librdmacm's API through libefi-rdmacm). */
	a.port_cap_flags = e.port_cap_flags | IBV_PORT_IP_BASED_GIDS | IBV_PORT_CM_SUP;
	a.max_msg_sz = e.max_msg_sz;
	a.pkey_tbl_len = 1;
	a.max_vl_num = 1;
	/* A virtual link has no lane width or signalling rate: report a
	 * nominal 1X at 10 Gb/s so rate arithmetic in programs stays sane. */
	a.active_width = 1;
	a.active_speed = 8;		/* FDR10: "10.0 Gbps" */
	a.phys_state = e.state == EFI_PORT_ACTIVE ? 5 /* LinkUp */ : 3 /* Disabled */;
	a.link_layer = IBV_LINK_LAYER_ETHERNET;
	if (len > sizeof(a))
		len = sizeof(a);
	memcpy(out, &a, len);
	return 0;
}

int efiv_query_port_ex(struct ibv_context *context, uint8_t port_num,
		       struct ibv_port_attr *port_attr, size_t port_attr_len)
{
	return query_port(context, port_num, port_attr, port_attr_len);
}

/* The exported symbol takes the layout before port_cap_flags2 (what the
 * header calls struct _compat_ibv_port_attr); the header's inline
 * ibv_query_port goes through verbs_context.query_port instead. */
#undef ibv_query_port
EFIV_EXPORT int ibv_query_port(struct ibv_context *context, uint8_t port_num,
			       struct _compat_ibv_port_attr *port_attr)
{
	return query_port(context, port_num, (struct ibv_port_attr *)(void *)port_attr,
			  offsetof(struct ibv_port_attr, port_cap_flags2));
}

EFIV_EXPORT int ibv_query_gid(struct ibv_context *context, uint8_t port_num, int index, union ibv_gid *gid)
{
	_Static_assert(sizeof(union ibv_gid) == sizeof(union efi_gid), "GID layout");
	if (!context || !gid)
		return -1;
	/* libibverbs returns -1 here, not an errno */
	return efi_query_gid(efiv_ctx(context)->ectx, port_num, index, (union efi_gid *)gid) ? -1 : 0;
}

EFIV_EXPORT int ibv_query_pkey(struct ibv_context *context, uint8_t port_num, int index, __be16 *pkey)
{
	if (!context || !pkey || port_num != 1 || index != 0)
		return -1;
	*pkey = htobe16(0xffff);	/* the default full-member P_Key */
	return 0;
}

EFIV_EXPORT int ibv_get_pkey_index(struct ibv_context *context, uint8_t port_num, __be16 pkey)
{
	if (!context || port_num != 1)
		return -EINVAL;
	return (be16toh(pkey) & 0x7fff) == 0x7fff ? 0 : -ENOENT;
}

/* One GID entry as ibv_query_gid_ex reports it: every EFI GID is a RoCEv2
 * GID (an IP address: IPv4-mapped or IPv6) on the interface's netdev. */
static int gid_entry(struct efiv_context *c, uint32_t port_num, uint32_t index,
		     struct ibv_gid_entry *entry)
{
	union efi_gid g;
	int err;

	if (port_num != 1 || index > INT32_MAX)
		return EINVAL;
	err = efi_query_gid(c->ectx, (uint8_t)port_num, (int)index, &g);
	if (err)
		return ENODATA;		/* libibverbs' answer for an empty slot */
	memset(entry, 0, sizeof(*entry));
	memcpy(entry->gid.raw, g.raw, sizeof(g.raw));
	entry->gid_index = index;
	entry->port_num = port_num;
	entry->gid_type = IBV_GID_TYPE_ROCE_V2;
	entry->ndev_ifindex = (uint32_t)c->dev->edev->ifindex;
	return 0;
}

EFIV_EXPORT int _ibv_query_gid_ex(struct ibv_context *context, uint32_t port_num,
				  uint32_t gid_index, struct ibv_gid_entry *entry,
				  uint32_t flags, size_t entry_size)
{
	struct ibv_gid_entry e;
	int err;

	if (!context || !entry || flags || entry_size < sizeof(e))
		return EINVAL;
	err = gid_entry(efiv_ctx(context), port_num, gid_index, &e);
	if (err)
		return err;
	memcpy(entry, &e, sizeof(e));
	return 0;
}

EFIV_EXPORT ssize_t _ibv_query_gid_table(struct ibv_context *context,
					 struct ibv_gid_entry *entries, size_t max_entries,
					 uint32_t flags, size_t entry_size)
{
	struct efiv_context *c;
	struct efi_port_attr pa;
	size_t n = 0;

	if (!context || (max_entries && !entries) || flags || entry_size < sizeof(*entries))
		return -EINVAL;
	c = efiv_ctx(context);
	if (efi_query_port(c->ectx, 1, &pa))
		return -ENODEV;
	for (int i = 0; i < pa.gid_tbl_len; i++) {
		if (n == max_entries)
			return -EINVAL;	/* as libibverbs: the array is too small */
		if (gid_entry(c, 1, (uint32_t)i, (struct ibv_gid_entry *)
			      ((char *)entries + n * entry_size)) == 0)
			n++;
	}
	return (ssize_t)n;
}

EFIV_EXPORT int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num,
				   unsigned int index, int *type);

/* rdma-core's private helper (IBVERBS_PRIVATE_*), called by ibv_devinfo -v
 * to print "RoCE v2" next to each GID.  Values of enum ibv_gid_type_sysfs. */
EFIV_EXPORT int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num,
				   unsigned int index, int *type)
{
	struct ibv_gid_entry e;

	if (!context || !type)
		return -1;
	if (gid_entry(efiv_ctx(context), port_num, index, &e)) {
		errno = EINVAL;
		return -1;
	}
	*type = 1;	/* IBV_GID_TYPE_SYSFS_ROCE_V2 (rdma-core driver.h: IB_ROCE_V1 = 0, ROCE_V2 = 1) */
	return 0;
}
