/* SPDX-License-Identifier: MIT */
/*
 * The operation tables of an open context.
 *
 * struct ibv_context.ops carries the data path the header's inline
 * ibv_post_send, ibv_post_recv, ibv_poll_cq and ibv_req_notify_cq call.
 * struct verbs_context (in front of it; abi_compat marks it present) carries
 * the extended verbs the header's inline helpers call.  As libibverbs does
 * for a provider that lacks one (its dummy ops), every extended op we do not
 * implement is present and fails with EOPNOTSUPP (errno for the calls that
 * return pointers), so programs take their fallbacks: ibv_create_cq_ex fails
 * cleanly, and so on.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "verbs_int.h"

#define UNSUPPORTED_PTR do { errno = EOPNOTSUPP; return NULL; } while (0)

static struct ibv_mw *no_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	(void)pd; (void)type;
	UNSUPPORTED_PTR;
}

static int no_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *bind)
{
	(void)qp; (void)mw; (void)bind;
	return EOPNOTSUPP;
}

static int no_dealloc_mw(struct ibv_mw *mw)
{
	(void)mw;
	return EOPNOTSUPP;
}

static int no_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice, uint32_t flags,
			struct ibv_sge *sg_list, uint32_t num_sges)
{
	(void)pd; (void)advice; (void)flags; (void)sg_list; (void)num_sges;
	return EOPNOTSUPP;
}

static struct ibv_mr *no_alloc_null_mr(struct ibv_pd *pd)
{
	(void)pd;
	UNSUPPORTED_PTR;
}

static int no_read_counters(struct ibv_counters *c, uint64_t *v, uint32_t n, uint32_t flags)
{
	(void)c; (void)v; (void)n; (void)flags;
	return EOPNOTSUPP;
}

static int no_attach_counters_point_flow(struct ibv_counters *c, struct ibv_counter_attach_attr *a,
					 struct ibv_flow *f)
{
	(void)c; (void)a; (void)f;
	return EOPNOTSUPP;
}

static struct ibv_counters *no_create_counters(struct ibv_context *ctx,
					       struct ibv_counters_init_attr *a)
{
	(void)ctx; (void)a;
	UNSUPPORTED_PTR;
}

static int no_destroy_counters(struct ibv_counters *c)
{
	(void)c;
	return EOPNOTSUPP;
}

static struct ibv_mr *no_reg_dm_mr(struct ibv_pd *pd, struct ibv_dm *dm, uint64_t off,
				   size_t len, unsigned int access)
{
	(void)pd; (void)dm; (void)off; (void)len; (void)access;
	UNSUPPORTED_PTR;
}

static struct ibv_dm *no_alloc_dm(struct ibv_context *ctx, struct ibv_alloc_dm_attr *a)
{
	(void)ctx; (void)a;
	UNSUPPORTED_PTR;
}

static int no_free_dm(struct ibv_dm *dm)
{
	(void)dm;
	return EOPNOTSUPP;
}

static int no_modify_flow_action_esp(struct ibv_flow_action *a, struct ibv_flow_action_esp_attr *e)
{
	(void)a; (void)e;
	return EOPNOTSUPP;
}

static int no_destroy_flow_action(struct ibv_flow_action *a)
{
	(void)a;
	return EOPNOTSUPP;
}

static struct ibv_flow_action *no_create_flow_action_esp(struct ibv_context *ctx,
							 struct ibv_flow_action_esp_attr *e)
{
	(void)ctx; (void)e;
	UNSUPPORTED_PTR;
}

static int no_modify_qp_rate_limit(struct ibv_qp *qp, struct ibv_qp_rate_limit_attr *a)
{
	(void)qp; (void)a;
	return EOPNOTSUPP;
}

static struct ibv_pd *no_alloc_parent_domain(struct ibv_context *ctx,
					     struct ibv_parent_domain_init_attr *a)
{
	(void)ctx; (void)a;
	UNSUPPORTED_PTR;
}

static int no_dealloc_td(struct ibv_td *td)
{
	(void)td;
	return EOPNOTSUPP;
}

static struct ibv_td *no_alloc_td(struct ibv_context *ctx, struct ibv_td_init_attr *a)
{
	(void)ctx; (void)a;
	UNSUPPORTED_PTR;
}

static int no_modify_cq(struct ibv_cq *cq, struct ibv_modify_cq_attr *a)
{
	(void)cq; (void)a;
	return EOPNOTSUPP;
}

static int no_post_srq_ops(struct ibv_srq *srq, struct ibv_ops_wr *op, struct ibv_ops_wr **bad)
{
	(void)srq;
	if (bad)
		*bad = op;
	return EOPNOTSUPP;
}

static int no_destroy_rwq_ind_table(struct ibv_rwq_ind_table *t)
{
	(void)t;
	return EOPNOTSUPP;
}

static struct ibv_rwq_ind_table *no_create_rwq_ind_table(struct ibv_context *ctx,
							 struct ibv_rwq_ind_table_init_attr *a)
{
	(void)ctx; (void)a;
	UNSUPPORTED_PTR;
}

static int no_destroy_wq(struct ibv_wq *wq)
{
	(void)wq;
	return EOPNOTSUPP;
}

static int no_modify_wq(struct ibv_wq *wq, struct ibv_wq_attr *a)
{
	(void)wq; (void)a;
	return EOPNOTSUPP;
}

static struct ibv_wq *no_create_wq(struct ibv_context *ctx, struct ibv_wq_init_attr *a)
{
	(void)ctx; (void)a;
	UNSUPPORTED_PTR;
}

static int no_query_rt_values(struct ibv_context *ctx, struct ibv_values_ex *v)
{
	(void)ctx; (void)v;
	return EOPNOTSUPP;
}

static struct ibv_cq_ex *no_create_cq_ex(struct ibv_context *ctx, struct ibv_cq_init_attr_ex *a)
{
	(void)ctx; (void)a;
	UNSUPPORTED_PTR;
}

static int no_destroy_flow(struct ibv_flow *f)
{
	(void)f;
	return EOPNOTSUPP;
}

static struct ibv_flow *no_create_flow(struct ibv_qp *qp, struct ibv_flow_attr *a)
{
	(void)qp; (void)a;
	UNSUPPORTED_PTR;
}

static struct ibv_qp *no_open_qp(struct ibv_context *ctx, struct ibv_qp_open_attr *a)
{
	(void)ctx; (void)a;
	UNSUPPORTED_PTR;
}

static int no_get_srq_num(struct ibv_srq *srq, uint32_t *num)
{
	(void)srq; (void)num;
	return EOPNOTSUPP;
}

static struct ibv_xrcd *no_open_xrcd(struct ibv_context *ctx, struct ibv_xrcd_init_attr *a)
{
	(void)ctx; (void)a;
	UNSUPPORTED_PTR;
}

static int no_close_xrcd(struct ibv_xrcd *x)
{
	(void)x;
	return EOPNOTSUPP;
}

/* The legacy query entries of ibv_context.ops, for binaries built against
 * headers that called through them. */
#undef ibv_query_port
static int compat_query_port(struct ibv_context *context, uint8_t port_num,
			     struct _compat_ibv_port_attr *attr)
{
	return ibv_query_port(context, port_num, attr);
}

void efiv_fill_ops(struct efiv_context *c)
{
	struct verbs_context *v = &c->vctx;
	struct ibv_context_ops *o = &v->context.ops;

	o->_compat_query_device = ibv_query_device;
	o->_compat_query_port = compat_query_port;
	o->alloc_mw = no_alloc_mw;
	o->bind_mw = no_bind_mw;
	o->dealloc_mw = no_dealloc_mw;
	o->poll_cq = efiv_poll_cq;
	o->req_notify_cq = efiv_req_notify_cq;
	o->post_srq_recv = efiv_post_srq_recv;
	o->post_send = efiv_post_send;
	o->post_recv = efiv_post_recv;

	v->query_port = efiv_query_port_ex;
	v->advise_mr = no_advise_mr;
	v->alloc_null_mr = no_alloc_null_mr;
	v->read_counters = no_read_counters;
	v->attach_counters_point_flow = no_attach_counters_point_flow;
	v->create_counters = no_create_counters;
	v->destroy_counters = no_destroy_counters;
	v->reg_dm_mr = no_reg_dm_mr;
	v->alloc_dm = no_alloc_dm;
	v->free_dm = no_free_dm;
	v->modify_flow_action_esp = no_modify_flow_action_esp;
	v->destroy_flow_action = no_destroy_flow_action;
	v->create_flow_action_esp = no_create_flow_action_esp;
	v->modify_qp_rate_limit = no_modify_qp_rate_limit;
	v->alloc_parent_domain = no_alloc_parent_domain;
	v->dealloc_td = no_dealloc_td;
	v->alloc_td = no_alloc_td;
	v->modify_cq = no_modify_cq;
	v->post_srq_ops = no_post_srq_ops;
	v->destroy_rwq_ind_table = no_destroy_rwq_ind_table;
	v->create_rwq_ind_table = no_create_rwq_ind_table;
	v->destroy_wq = no_destroy_wq;
	v->modify_wq = no_modify_wq;
	v->create_wq = no_create_wq;
	v->query_rt_values = no_query_rt_values;
	v->create_cq_ex = no_create_cq_ex;
	v->priv = NULL;
	v->query_device_ex = efiv_query_device_ex;
	v->ibv_destroy_flow = no_destroy_flow;
	v->ibv_create_flow = no_create_flow;
	v->open_qp = no_open_qp;
	/* RC QPs through ibv_create_qp_ex, with or without the ibv_wr_* API */
	v->create_qp_ex = efiv_create_qp_ex;
	v->get_srq_num = no_get_srq_num;
	/* basic SRQs (srq.c) */
	v->create_srq_ex = efiv_create_srq_ex;
	v->open_xrcd = no_open_xrcd;
	v->close_xrcd = no_close_xrcd;
	v->sz = sizeof(*v);
	v->context.abi_compat = __VERBS_ABI_IS_EXTENDED;
}
