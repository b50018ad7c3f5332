/* SPDX-License-Identifier: MIT */
/*
 * Devices and contexts: listing interfaces and opening them through efid
 * (the lease: a control connection kept open for the context's life, and
 * the UDP socket efid hands over), device/port/GID queries.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/ctlclient.h"
#include "efi_int.h"
#include "lease.h"

#define CTL_TIMEOUT_MS 5000

/* efid's negative errno → what efi.h promises. */
static int map_ctl_error(int e)
{
	switch (e) {
	case EPERM:
		return EACCES;
	case ENETDOWN:
	case ENOENT:
		return ENODEV;
	default:
		return e;
	}
}

/* One request/reply with efid on c (or a fresh connection if c is NULL);
 * with path_table, it asks for the path table too.  Returns 0 or a
 * positive errno. */
static int ctl_roundtrip_pt(struct ctl_client *c, uint16_t type, const char *ifname,
			    bool path_table, struct ctl_reply *rep)
{
	struct ctl_buf req;
	int r;

	ctl_buf_init(&req);
	ctl_msg_begin(&req, type, 0);
	ctl_put_str(&req, EFI_A_CLIENT, "libefi");
	if (ifname)
		ctl_put_str(&req, EFI_A_IFNAME, ifname);
	if (path_table)
		ctl_put_u32(&req, EFI_A_PATH_TABLE, EFI_PATHTABLE_VERSION);
	r = ctl_msg_end(&req);
	if (r == 0)
		r = ctl_client_call(c, &req, NULL, 0, rep, CTL_TIMEOUT_MS);
	ctl_buf_free(&req);
	if (r < 0)
		return -r;
	if (rep->status < 0) {
		r = map_ctl_error(-rep->status);
		ctl_reply_free(rep);
		return r;
	}
	return 0;
}

static int ctl_roundtrip(struct ctl_client *c, uint16_t type, const char *ifname,
			 struct ctl_reply *rep)
{
	return ctl_roundtrip_pt(c, type, ifname, false, rep);
}

static void copy_str(char *dst, size_t cap, const struct ctl_attr *a)
{
	size_t n = a->len;
	if (n && a->data[n - 1] == 0)
		n--;
	if (n >= cap)
		n = cap - 1;
	memcpy(dst, a->data, n);
	dst[n] = 0;
}

struct efi_device **efi_get_device_list(int *num_devices)
{
	struct ctl_client *c = NULL;
	struct ctl_reply rep;
	struct ctl_iter it;
	struct ctl_attr a;
	struct efi_device **list = NULL;
	int n = 0, r;

	memset(&rep, 0, sizeof(rep));
	r = ctl_client_connect(NULL, &c);
	if (r < 0) {
		errno = -r;
		return NULL;
	}
	r = ctl_roundtrip(c, EFI_CTL_LIST, NULL, &rep);
	ctl_client_close(c);
	if (r) {
		errno = r;
		return NULL;
	}
	list = calloc(1, sizeof(*list));
	ctl_iter_init(&it, rep.payload, rep.payload_len);
	while (list && ctl_iter_next(&it, &a)) {
		struct ctl_iter in;
		struct ctl_attr b;
		struct efi_device *d, **nl;

		if (a.type != EFI_A_IFACE)
			continue;
		d = calloc(1, sizeof(*d));
		nl = d ? realloc(list, (size_t)(n + 2) * sizeof(*list)) : NULL;
		if (!nl) {
			free(d);
			efi_free_device_list(list);
			list = NULL;
			break;
		}
		list = nl;
		ctl_iter_nest(&in, &a);
		while (ctl_iter_next(&in, &b)) {
			uint32_t v;
			if (b.type == EFI_A_IFNAME)
				copy_str(d->name, sizeof(d->name), &b);
			else if (b.type == EFI_A_INSTANCE)
				copy_str(d->instance, sizeof(d->instance), &b);
			else if (b.type == EFI_A_IFINDEX && ctl_attr_u32(&b, &v) == 0)
				d->ifindex = (int)v;
		}
		list[n++] = d;
		list[n] = NULL;
	}
	ctl_reply_free(&rep);
	if (!list) {
		errno = ENOMEM;
		return NULL;
	}
	if (num_devices)
		*num_devices = n;
	return list;
}

void efi_free_device_list(struct efi_device **list)
{
	if (!list)
		return;
	for (struct efi_device **d = list; *d; d++)
		free(*d);
	free(list);
}

const char *efi_get_device_name(struct efi_device *device)
{
	return device ? device->name : NULL;
}

/* $name as a decimal within [lo, hi]: 1 and *out set, 0 when unset or
 * empty, -EINVAL when malformed (a sign, other characters) or out of range
 * (the caller fails the open: a setting the user asked for is never
 * silently replaced by the default). */
static int env_ulong(const char *name, unsigned long lo, unsigned long hi, unsigned long *out)
{
	const char *v = getenv(name);
	char *end;
	unsigned long x;

	if (!v || !*v)
		return 0;
	errno = 0;
	x = strtoul(v, &end, 10);
	if (errno || *end || *v == '-' || *v == '+' || x < lo || x > hi)
		return -EINVAL;
	*out = x;
	return 1;
}

struct efi_context *efi_context_create(struct efi_wire *wire, const struct efi_ctx_params *p, void *ctl)
{
	struct efi_context_int *ctx = calloc(1, sizeof(*ctx));
	int r;

	if (!ctx || !(ctx->qps[0] = calloc(EFI_QPN_PER_BLOCK, sizeof(*ctx->qps[0]))) ||
	    !(ctx->txbuf = malloc((size_t)EFI_BATCH * EFI_PKTBUF_SIZE)) ||
	    !(ctx->rxbuf = malloc((size_t)EFI_BATCH * EFI_RXBUF_SIZE))) {
		r = ENOMEM;
		goto fail;
	}
	ctx->p = *p;
	ctx->nblocks = 1;
	ctx->qpn_base[0] = p->qpn_base;
	ctx->block_of_slot[(p->qpn_base >> 12) & (EFI_QPN_PER_BLOCK - 1)] = 1;
	if (!ctx->p.link_mtu)
		ctx->p.link_mtu = 1500;
	/* Congestion-control parameters: the defaults, then efid.conf's
	 * [CongestionControl] (efid validated it with the same parser; one
	 * that still fails can only come from an efid newer than this
	 * library, and then the defaults stand rather than failing every
	 * open), then $EFI_CC for experiments ("target_us=200,ai=1", cc.h),
	 * where a bad spec fails the open. */
	efi_cc_params_default(&ctx->ccp);
	if (ctx->p.cc_spec[0])
		(void)efi_cc_params_parse(&ctx->ccp, ctx->p.cc_spec);
	{
		const char *seg = getenv("EFI_LINK_SEG");
		ctx->link_seg = !(seg && strcmp(seg, "0") == 0);
	}
	/* How long the ACK of a message the application polled for waits for
	 * its answer to leave first (xport.c); $EFI_ACK_DELAY_US, 0 = never;
	 * $EFI_ACK_PIGGYBACK=1: the answer carries it (docs/wire-format.md). */
	ctx->ack_delay_ns = EFI_ACK_DELAY_DEFAULT_US * 1000ull;
	{
		unsigned long us;
		const char *v;

		if ((r = env_ulong("EFI_ACK_DELAY_US", 0, EFI_ACK_DELAY_MAX_US, &us)) < 0) {
			r = EINVAL;
			goto fail;
		}
		if (r)
			ctx->ack_delay_ns = us * 1000ull;
		r = 0;
		v = getenv("EFI_ACK_PIGGYBACK");
		if (v && *v && strcmp(v, "0") != 0 && strcmp(v, "1") != 0) {
			r = EINVAL;
			goto fail;
		}
		/* off by default: it halves a ping-pong's datagrams, but on
		 * this testbed its half round trip is 6.1 against 4.5 us with
		 * the ACK sent right behind the answer (the note of the
		 * session that added it) */
		ctx->pack = v && strcmp(v, "1") == 0;
	}
	/* The least silence that fails a QP (EFI_MIN_DEAD_NS, 10 s): a
	 * program that must hear of a stopped network sooner lowers it, a
	 * host that deschedules processes for longer raises it; a peer that
	 * really died is reported by the connection manager anyway. */
	{
		unsigned long ms;

		if ((r = env_ulong("EFI_MIN_DEAD_MS", EFI_MIN_DEAD_MS_MIN, EFI_MIN_DEAD_MS_MAX, &ms)) < 0) {
			r = EINVAL;
			goto fail;
		}
		if (r)
			ctx->min_dead_ns = ms * 1000000ull;
		r = 0;
	}
	{
		const char *spec = getenv("EFI_CC");
		if (spec && *spec && efi_cc_params_parse(&ctx->ccp, spec)) {
			r = EINVAL;
			goto fail;
		}
	}
	snprintf(ctx->dev.name, sizeof(ctx->dev.name), "%s", p->ifname);
	snprintf(ctx->dev.instance, sizeof(ctx->dev.instance), "%s", p->instance);
	ctx->dev.ifindex = p->ifindex;
	ctx->pub.device = &ctx->dev;
	ctx->pub.num_comp_vectors = 1;
	ctx->wire = wire;
	ctx->ctl = ctl;
	ctx->stop_fd = -1;
	/* best effort: without it, QPs share no RTT (rtt.h) */
	efi_rtt_peers_alloc(&ctx->rtt_peers);
	pthread_mutex_init(&ctx->lock, NULL);
	pthread_mutex_init(&ctx->obj_lock, NULL);
	r = efi_progress_start(ctx);
	if (r < 0) {
		r = -r;
		pthread_mutex_destroy(&ctx->obj_lock);
		pthread_mutex_destroy(&ctx->lock);
		goto fail;
	}
	return &ctx->pub;
fail:
	if (ctx) {
		efi_rtt_peers_free(&ctx->rtt_peers);
		free(ctx->rxbuf);
		free(ctx->txbuf);
		free(ctx->qps[0]);
		free(ctx);
	}
	errno = r;
	return NULL;
}

/* Parses an OPEN_DEVICE reply into p, and *pt_index (the path table's
 * descriptor, or -1).  Returns 0 or EPROTO. */
static int parse_open_reply(const struct ctl_reply *rep, struct efi_ctx_params *p, int *pt_index)
{
	struct ctl_iter it;
	struct ctl_attr a;
	bool have_port_base = false, have_qpn = false;

	ctl_iter_init(&it, rep->payload, rep->payload_len);
	while (ctl_iter_next(&it, &a)) {
		uint32_t v;
		switch (a.type) {
		case EFI_A_INSTANCE:
			copy_str(p->instance, sizeof(p->instance), &a);
			break;
		case EFI_A_CC_PARAMS:
			copy_str(p->cc_spec, sizeof(p->cc_spec), &a);
			break;
		case EFI_A_IFINDEX:
			if (ctl_attr_u32(&a, &v) == 0)
				p->ifindex = (int)v;
			break;
		case EFI_A_MTU:
			if (ctl_attr_u32(&a, &v) == 0)
				p->link_mtu = v;
			break;
		case EFI_A_LANES:
			if (ctl_attr_u32(&a, &v) == 0 && v >= 1 && v <= EFI_WIRE_MAX_LANES)
				p->nlanes = v;
			break;
		case EFI_A_PATH_TABLE:
			if (ctl_attr_u32(&a, &v) == 0 && v < EFI_CTL_MAX_FDS)
				*pt_index = (int)v;
			break;
		case EFI_A_PORT_BASE:
			if (ctl_attr_u32(&a, &v) == 0) {
				p->port_base = v;
				have_port_base = true;
			}
			break;
		case EFI_A_QPN_BASE:
			if (ctl_attr_u32(&a, &v) == 0 && v >= EFI_QPN_PER_BLOCK && v <= EFI_QPN_MASK &&
			    !(v & (EFI_QPN_PER_BLOCK - 1))) {
				p->qpn_base = v;
				have_qpn = true;
			}
			break;
		case EFI_A_GID: {
			struct ctl_iter in;
			struct ctl_attr b;
			uint32_t index = UINT32_MAX;
			const uint8_t *raw = NULL;
			ctl_iter_nest(&in, &a);
			while (ctl_iter_next(&in, &b)) {
				if (b.type == EFI_A_GID_INDEX)
					ctl_attr_u32(&b, &index);
				else if (b.type == EFI_A_GID_VALUE && b.len == 16)
					raw = b.data;
			}
			if (raw && index < 8) {
				memcpy(p->gids[index].raw, raw, 16);
				if ((int)index + 1 > p->ngids)
					p->ngids = (int)index + 1;
			}
			break;
		}
		default:
			break;
		}
	}
	return have_port_base && have_qpn && !it.err ? 0 : EPROTO;
}

struct efi_context *efi_open_device(struct efi_device *device)
{
	struct ctl_client *c = NULL;
	struct ctl_reply rep;
	struct efi_ctx_params p;
	struct efi_wire *wire, *blocks;
	struct efi_context *ctx;
	const char *fault;
	int r, fds[EFI_WIRE_MAX_LANES], pt_index = -1, pt_fd = -1;
	unsigned nfds = 0, use = 0;

	if (!device) {
		errno = EINVAL;
		return NULL;
	}
	memset(&rep, 0, sizeof(rep));
	memset(&p, 0, sizeof(p));
	snprintf(p.ifname, sizeof(p.ifname), "%s", device->name);
	r = ctl_client_connect(NULL, &c);
	if (r < 0) {
		errno = -r;
		return NULL;
	}
	r = ctl_roundtrip_pt(c, EFI_CTL_OPEN_DEVICE, device->name, efi_pt_wanted(), &rep);
	if (r)
		goto fail;
	p.nlanes = 1;	/* an efid without lanes passes one socket */
	/* The lanes' sockets, then the path table's page when efid has one. */
	if (parse_open_reply(&rep, &p, &pt_index) || rep.nfds < 0 ||
	    (unsigned)rep.nfds != p.nlanes + (pt_index >= 0) ||
	    (pt_index >= 0 && (unsigned)pt_index != p.nlanes)) {
		ctl_reply_free(&rep);
		r = EPROTO;
		goto fail;
	}
	nfds = p.nlanes;
	memcpy(fds, rep.fds, nfds * sizeof(int));
	if (pt_index >= 0)
		pt_fd = rep.fds[pt_index];
	rep.nfds = 0;	/* the descriptors are ours now */
	ctl_reply_free(&rep);
	/* EFI_LANES=N uses only the first N lanes (for comparisons: a peer's
	 * packets to the others go unread); the lease keeps all of them. */
	const char *lanes_env = getenv("EFI_LANES");
	use = nfds;
	if (lanes_env && *lanes_env) {
		char *end;
		unsigned long v = strtoul(lanes_env, &end, 10);
		if (*end || v < 1 || v > EFI_WIRE_MAX_LANES) {
			r = EINVAL;
			use = 0;	/* every lane is closed at fail */
			goto fail;
		}
		if (v < use)
			use = (unsigned)v;
	}
	p.nlanes = use;
	wire = efi_wire_udp_create_lanes(fds, use);
	if (!wire) {
		r = errno;
		use = 0;
		goto fail;
	}
	/* the context's wire spans its QPN blocks (qpn_blocks.c): this one,
	 * and those efi_ctx_grow adds */
	blocks = efi_wire_blocks_create(wire);
	if (!blocks) {
		r = errno;
		efi_wire_destroy(wire);
		goto fail;
	}
	wire = blocks;
	fault = getenv("EFI_FAULT");
	if (fault && *fault) {
		struct efi_wire *w = efi_wire_fault_wrap(wire, fault);
		if (!w) {
			r = errno;	/* EINVAL: a bad spec; the inner wire stays ours */
			efi_wire_destroy(wire);
			goto fail;
		}
		wire = w;
	}
	ctx = efi_context_create(wire, &p, c);
	if (!ctx) {
		r = errno;
		efi_wire_destroy(wire);
		goto fail;
	}
	ctx_of(ctx)->blocks_wire = blocks;
	if (pt_fd >= 0) {
		/* A page that does not check out is ignored: the transport
		 * runs on suspicion alone, as without efid's table. */
		(void)efi_pt_attach(ctx_of(ctx), pt_fd);
		pt_fd = -1;
	}
	efi_counters_publish_open(ctx_of(ctx), c);
	ctx_of(ctx)->lease = efi_lease_start(ctx_of(ctx), fds, nfds);
	for (unsigned i = use; i < nfds; i++)
		close(fds[i]);	/* unused lanes: the lease holds its own copies */
	return ctx;
fail:
	/* the wire owns lanes below use; the rest are still ours */
	for (unsigned i = use; i < nfds; i++)
		close(fds[i]);
	if (pt_fd >= 0)
		close(pt_fd);
	ctl_client_close(c);
	errno = r;
	return NULL;
}

/* Takes ctx->obj_lock; stops the progress thread. */
int efi_close_device(struct efi_context *context)
{
	struct efi_context_int *ctx = ctx_of(context);
	bool busy;

	if (!ctx)
		return 0;
	pthread_mutex_lock(&ctx->obj_lock);
	busy = ctx->npd || ctx->ncq || ctx->nchannel;
	pthread_mutex_unlock(&ctx->obj_lock);
	if (busy)
		return EBUSY;
	efi_cm_context_close(ctx);	/* before the QPs' machinery goes */
	efi_lease_stop(ctx->lease);	/* ends the lease */
	ctx->lease = NULL;
	efi_progress_stop(ctx);
	efi_counters_publish_close(ctx);
	efi_pt_detach(ctx);	/* the progress thread is gone: nobody reads it */
	efi_wire_destroy(ctx->wire);
	ctl_client_close(ctx->ctl);	/* ends the lease */
	efi_mr_table_free(ctx);
	efi_rtt_peers_free(&ctx->rtt_peers);
	pthread_mutex_destroy(&ctx->obj_lock);
	pthread_mutex_destroy(&ctx->lock);
	free(ctx->rxbuf);
	free(ctx->txbuf);
	for (unsigned b = 0; b < ctx->nblocks; b++)
		free(ctx->qps[b]);
	free(ctx);
	return 0;
}

int efi_query_device(struct efi_context *context, struct efi_device_attr *attr)
{
	if (!context || !attr)
		return EINVAL;
	memset(attr, 0, sizeof(*attr));
	snprintf(attr->fw_ver, sizeof(attr->fw_ver), "libefi %s", PACKAGE_VERSION);
	attr->vendor_id = EFI_VENDOR_ID;
	attr->max_mr_size = EFI_MAX_MR_SIZE;
	attr->page_size_cap = 4096;
	/* a context with a lease grows block by block (qpn_blocks.c) */
	attr->max_qp = (int)(EFI_QPN_PER_BLOCK * (ctx_of(context)->lease ? EFI_MAX_BLOCKS : 1));
	attr->max_qp_wr = EFI_MAX_QP_WR;
	attr->max_sge = EFI_MAX_SGE;
	attr->max_sge_rd = EFI_MAX_SGE;
	attr->max_cq = 1 << 16;
	attr->max_cqe = EFI_MAX_CQE;
	attr->max_mr = 1 << 24;
	attr->max_pd = 1 << 16;
	attr->max_qp_rd_atom = EFI_MAX_RD_ATOMIC;
	attr->max_res_rd_atom = EFI_MAX_RD_ATOMIC * EFI_QPN_PER_BLOCK;
	attr->max_qp_init_rd_atom = EFI_MAX_RD_ATOMIC;
	attr->atomic_cap = EFI_ATOMIC_GLOB;
	attr->phys_port_cnt = 1;
	attr->max_inline_data = EFI_MAX_INLINE;
	attr->max_msg_sz = EFI_MAX_MSG_SIZE;
	return 0;
}

int efi_query_port(struct efi_context *context, uint8_t port_num, struct efi_port_attr *attr)
{
	struct efi_context_int *ctx = ctx_of(context);
	if (!ctx || !attr || port_num != 1)
		return EINVAL;
	memset(attr, 0, sizeof(*attr));
	attr->state = ctx->p.ngids ? EFI_PORT_ACTIVE : EFI_PORT_DOWN;
	attr->max_mtu = EFI_MTU_4096;
	attr->active_mtu = efi_active_mtu(ctx->p.link_mtu);
	attr->gid_tbl_len = ctx->p.ngids;
	attr->max_msg_sz = EFI_MAX_MSG_SIZE;
	attr->link_layer = EFI_LINK_LAYER_ETHERNET;
	attr->link_mtu = ctx->p.link_mtu;
	return 0;
}

int efi_query_gid(struct efi_context *context, uint8_t port_num, int index, union efi_gid *gid)
{
	struct efi_context_int *ctx = ctx_of(context);

	if (!ctx || !gid || port_num != 1 || index < 0 || index >= ctx->p.ngids)
		return EINVAL;
	*gid = ctx->p.gids[index];
	return 0;
}
