/* SPDX-License-Identifier: MIT */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "efi_testutil.h"
#include "libefi/efi_int.h"

struct tw_node {
	struct tw_node *next;
	struct sockaddr_in6 src;
	uint32_t len;
	uint8_t data[];
};

struct tw_queue {
	pthread_mutex_t lock;
	struct tw_node *head, *tail;
	int efd;
};

struct tw_pair {
	struct tw_queue q[2];
	int refs;
	pthread_mutex_t lock;
	struct sockaddr_in6 addr[2];
};

struct tw_end {
	struct efi_wire w;
	struct tw_pair *pair;
	int side;
	struct sockaddr_in6 self;
	struct tw_fault f;
	uint64_t rng;
	struct tw_node *held;	/* reordering: sent after the next one */
};

static double rnd(struct tw_end *e)
{
	e->rng ^= e->rng << 13;
	e->rng ^= e->rng >> 7;
	e->rng ^= e->rng << 17;
	return (double)(e->rng >> 11) / (double)(1ull << 53);
}

static void q_push(struct tw_queue *q, struct tw_node *n)
{
	uint64_t one = 1;
	n->next = NULL;
	pthread_mutex_lock(&q->lock);
	if (q->tail)
		q->tail->next = n;
	else
		q->head = n;
	q->tail = n;
	if (write(q->efd, &one, sizeof(one)) < 0) {
	}
	pthread_mutex_unlock(&q->lock);
}

static struct tw_node *mk_node(struct tw_end *e, const struct efi_wire_pkt *p)
{
	uint32_t len = efi_wire_pkt_size(p);
	struct tw_node *n = malloc(sizeof(*n) + len);
	ck_assert_ptr_nonnull(n);
	n->src = e->self;
	n->len = len;
	efi_wire_pkt_copy(p, n->data);
	return n;
}

static int tw_send(struct efi_wire *w, struct efi_wire_pkt *p, unsigned n)
{
	struct tw_end *e = (struct tw_end *)w;
	struct tw_queue *q = &e->pair->q[!e->side];

	for (unsigned i = 0; i < n; i++) {
		struct tw_node *nd;
		if (e->f.loss && rnd(e) < e->f.loss)
			continue;
		nd = mk_node(e, &p[i]);
		if (e->f.dup && rnd(e) < e->f.dup)
			q_push(q, mk_node(e, &p[i]));
		if (e->f.reorder && !e->held && rnd(e) < e->f.reorder) {
			e->held = nd;
			continue;
		}
		q_push(q, nd);
		if (e->held) {
			q_push(q, e->held);
			e->held = NULL;
		}
	}
	return (int)n;
}

static int tw_recv(struct efi_wire *w, struct efi_wire_pkt *p, unsigned n)
{
	struct tw_end *e = (struct tw_end *)w;
	struct tw_queue *q = &e->pair->q[e->side];
	unsigned k = 0;
	uint64_t v;

	pthread_mutex_lock(&q->lock);
	while (k < n && q->head) {
		struct tw_node *nd = q->head;
		q->head = nd->next;
		if (!q->head)
			q->tail = NULL;
		p[k].len = nd->len < p[k].cap ? nd->len : p[k].cap;
		memcpy(p[k].buf, nd->data, p[k].len);
		p[k].peer = nd->src;
		free(nd);
		k++;
	}
	if (!q->head && read(q->efd, &v, sizeof(v)) < 0) {
	}
	pthread_mutex_unlock(&q->lock);
	return (int)k;
}

static int tw_fd(const struct efi_wire *w)
{
	const struct tw_end *e = (const struct tw_end *)w;
	return e->pair->q[e->side].efd;
}

static void tw_destroy(struct efi_wire *w)
{
	struct tw_end *e = (struct tw_end *)w;
	struct tw_pair *pr = e->pair;
	int left;

	free(e->held);
	pthread_mutex_lock(&pr->lock);
	left = --pr->refs;
	pthread_mutex_unlock(&pr->lock);
	if (!left) {
		for (int i = 0; i < 2; i++) {
			while (pr->q[i].head) {
				struct tw_node *n = pr->q[i].head;
				pr->q[i].head = n->next;
				free(n);
			}
			close(pr->q[i].efd);
		}
		free(pr);
	}
	free(e);
}

static const struct efi_wire_ops tw_ops = {
	.send_batch = tw_send, .recv_batch = tw_recv, .poll_fd = tw_fd, .destroy = tw_destroy,
};

static void set_addr(struct sockaddr_in6 *s, const union efi_gid *g)
{
	memset(s, 0, sizeof(*s));
	s->sin6_family = AF_INET6;
	memcpy(&s->sin6_addr, g->raw, 16);
	s->sin6_port = htons(18516);
}

void tw_pair_create(struct efi_wire **a, struct efi_wire **b, const union efi_gid *addr_a,
		    const union efi_gid *addr_b, const struct tw_fault *fault)
{
	struct tw_pair *pr = calloc(1, sizeof(*pr));
	struct tw_end *e[2];

	ck_assert_ptr_nonnull(pr);
	pthread_mutex_init(&pr->lock, NULL);
	pr->refs = 2;
	for (int i = 0; i < 2; i++) {
		pthread_mutex_init(&pr->q[i].lock, NULL);
		pr->q[i].efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		ck_assert_int_ge(pr->q[i].efd, 0);
		e[i] = calloc(1, sizeof(*e[i]));
		ck_assert_ptr_nonnull(e[i]);
		e[i]->w.ops = &tw_ops;
		e[i]->pair = pr;
		e[i]->side = i;
		if (fault)
			e[i]->f = *fault;
		e[i]->rng = (fault && fault->seed ? fault->seed : 0x9e3779b97f4a7c15ull) + (uint64_t)i * 7919;
	}
	set_addr(&e[0]->self, addr_a);
	set_addr(&e[1]->self, addr_b);
	pr->addr[0] = e[0]->self;
	pr->addr[1] = e[1]->self;
	*a = &e[0]->w;
	*b = &e[1]->w;
}

void tw_inject(struct efi_wire *to, const void *buf, uint32_t len)
{
	struct tw_end *e = (struct tw_end *)to;
	struct tw_node *n = malloc(sizeof(*n) + len);

	ck_assert_ptr_nonnull(n);
	n->src = e->pair->addr[!e->side];	/* as if the other end sent it */
	n->len = len;
	memcpy(n->data, buf, len);
	q_push(&e->pair->q[e->side], n);
}

int tw_take(struct efi_wire *from_peer_of, void *buf, uint32_t cap)
{
	struct tw_end *e = (struct tw_end *)from_peer_of;
	struct tw_queue *q = &e->pair->q[!e->side];
	struct tw_node *nd;
	int len = -1;

	pthread_mutex_lock(&q->lock);
	if ((nd = q->head)) {
		q->head = nd->next;
		if (!q->head)
			q->tail = NULL;
		len = (int)(nd->len < cap ? nd->len : cap);
		memcpy(buf, nd->data, (size_t)len);
		free(nd);
	}
	pthread_mutex_unlock(&q->lock);
	return len;
}

void tgid_v4(union efi_gid *g, uint8_t a, uint8_t b, uint8_t c, uint8_t d)
{
	memset(g, 0, sizeof(*g));
	g->raw[10] = g->raw[11] = 0xff;
	g->raw[12] = a;
	g->raw[13] = b;
	g->raw[14] = c;
	g->raw[15] = d;
}

void tpair_open(struct tpair *t, uint32_t link_mtu, const struct tw_fault *fault)
{
	tpair_open_opts(t, link_mtu, link_mtu, fault, 0);
}

void tpair_open_lanes(struct tpair *t, uint32_t link_mtu, const struct tw_fault *fault, unsigned nlanes)
{
	tpair_open_opts(t, link_mtu, link_mtu, fault, nlanes);
}

void tpair_open_mtus(struct tpair *t, uint32_t mtu0, uint32_t mtu1, const struct tw_fault *fault)
{
	tpair_open_opts(t, mtu0, mtu1, fault, 0);
}

void tpair_open_opts(struct tpair *t, uint32_t mtu0, uint32_t mtu1, const struct tw_fault *fault, unsigned nlanes)
{
	struct efi_wire *w[2];
	struct efi_ctx_params p[2];

	memset(t, 0, sizeof(*t));
	memset(p, 0, sizeof(p));
	for (int i = 0; i < 2; i++) {
		snprintf(p[i].ifname, sizeof(p[i].ifname), "efi%d", i);
		snprintf(p[i].instance, sizeof(p[i].instance), "test%d", i);
		p[i].link_mtu = i ? mtu1 : mtu0;
		p[i].port_base = 18515;
		p[i].qpn_base = (uint32_t)(i + 1) << 12;
		p[i].ngids = 1;
		p[i].nlanes = nlanes;
		tgid_v4(&p[i].gids[0], 10, 0, 0, (uint8_t)(i + 1));
	}
	tw_pair_create(&w[0], &w[1], &p[0].gids[0], &p[1].gids[0], fault);
	for (int i = 0; i < 2; i++) {
		t->ctx[i] = efi_context_create(w[i], &p[i], NULL);
		ck_assert_ptr_nonnull(t->ctx[i]);
		t->pd[i] = efi_alloc_pd(t->ctx[i]);
		ck_assert_ptr_nonnull(t->pd[i]);
		t->cq[i] = efi_create_cq(t->ctx[i], 4096, NULL, NULL, 0);
		ck_assert_ptr_nonnull(t->cq[i]);
	}
}

int tqp_to_rts(struct efi_qp *qp, uint32_t dest, const union efi_gid *dgid, uint32_t my_psn,
	       uint32_t peer_psn, uint8_t rnr_retry, uint8_t min_rnr_timer, uint8_t timeout,
	       uint8_t retry_cnt, enum efi_mtu mtu)
{
	struct efi_qp_attr a;
	int r;

	memset(&a, 0, sizeof(a));
	a.qp_state = EFI_QPS_INIT;
	a.qp_access_flags = EFI_ACCESS_REMOTE_WRITE | EFI_ACCESS_REMOTE_READ | EFI_ACCESS_REMOTE_ATOMIC;
	a.port_num = 1;
	if ((r = efi_modify_qp(qp, &a, EFI_QP_STATE | EFI_QP_ACCESS_FLAGS | EFI_QP_PORT | EFI_QP_PKEY_INDEX)))
		return r;
	memset(&a, 0, sizeof(a));
	a.qp_state = EFI_QPS_RTR;
	a.path_mtu = mtu;
	a.dest_qp_num = dest;
	a.rq_psn = peer_psn;
	a.max_dest_rd_atomic = 16;
	a.min_rnr_timer = min_rnr_timer;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = *dgid;
	a.ah_attr.port_num = 1;
	if ((r = efi_modify_qp(qp, &a, EFI_QP_STATE | EFI_QP_AV | EFI_QP_PATH_MTU | EFI_QP_DEST_QPN |
				  EFI_QP_RQ_PSN | EFI_QP_MAX_DEST_RD_ATOMIC | EFI_QP_MIN_RNR_TIMER)))
		return r;
	memset(&a, 0, sizeof(a));
	a.qp_state = EFI_QPS_RTS;
	a.timeout = timeout;
	a.retry_cnt = retry_cnt;
	a.rnr_retry = rnr_retry;
	a.sq_psn = my_psn;
	a.max_rd_atomic = 16;
	return efi_modify_qp(qp, &a, EFI_QP_STATE | EFI_QP_TIMEOUT | EFI_QP_RETRY_CNT | EFI_QP_RNR_RETRY |
			     EFI_QP_SQ_PSN | EFI_QP_MAX_QP_RD_ATOMIC);
}

void tpair_connect(struct tpair *t, const struct efi_qp_cap *cap, int sq_sig_all,
		   uint8_t rnr_retry, uint8_t min_rnr_timer, uint8_t timeout, uint8_t retry_cnt)
{
	union efi_gid g[2];
	/* PSNs near the wrap-around on purpose. */
	uint32_t psn[2] = { 0xfffff0, 0x123456 };

	for (int i = 0; i < 2; i++) {
		struct efi_qp_init_attr ia;
		memset(&ia, 0, sizeof(ia));
		ia.send_cq = ia.recv_cq = t->cq[i];
		ia.cap = *cap;
		ia.qp_type = EFI_QPT_RC;
		ia.sq_sig_all = sq_sig_all;
		t->qp[i] = efi_create_qp(t->pd[i], &ia);
		ck_assert_ptr_nonnull(t->qp[i]);
		ck_assert_int_eq(efi_query_gid(t->ctx[i], 1, 0, &g[i]), 0);
	}
	for (int i = 0; i < 2; i++) {
		struct efi_port_attr pa;
		ck_assert_int_eq(efi_query_port(t->ctx[i], 1, &pa), 0);
		ck_assert_int_eq(tqp_to_rts(t->qp[i], t->qp[!i]->qp_num, &g[!i], psn[i], psn[!i], rnr_retry,
					    min_rnr_timer, timeout, retry_cnt, pa.active_mtu), 0);
	}
}

void tpair_close(struct tpair *t)
{
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(efi_destroy_qp(t->qp[i]), 0);
		ck_assert_int_eq(efi_destroy_cq(t->cq[i]), 0);
		ck_assert_int_eq(efi_dealloc_pd(t->pd[i]), 0);
	}
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(efi_close_device(t->ctx[i]), 0);
}

static uint64_t ms_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int tpoll(struct efi_cq *cq, struct efi_wc *wc, int n, int ms)
{
	int got = 0;
	uint64_t end = ms_now() + (uint64_t)ms;

	while (got < n && ms_now() < end) {
		int r = efi_poll_cq(cq, n - got, wc + got);
		ck_assert_int_ge(r, 0);
		got += r;
	}
	return got;
}

struct efi_mr *treg(struct efi_pd *pd, void *buf, size_t len, int access)
{
	struct efi_mr *mr = efi_reg_mr(pd, buf, len, access);
	ck_assert_ptr_nonnull(mr);
	return mr;
}

int tpost_send1(struct efi_qp *qp, enum efi_wr_opcode op, uint64_t id, void *buf, uint32_t len,
		const struct efi_mr *mr, uint64_t raddr, uint32_t rkey)
{
	return tpost_send1_ex(qp, op, id, buf, len, mr, raddr, rkey, 0, 0);
}

int tpost_send1_ex(struct efi_qp *qp, enum efi_wr_opcode op, uint64_t id, void *buf, uint32_t len,
		   const struct efi_mr *mr, uint64_t raddr, uint32_t rkey, unsigned flags, uint32_t imm)
{
	struct efi_sge sge = { (uintptr_t)buf, len, mr ? mr->lkey : 0 };
	struct efi_send_wr wr, *bad;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = op;
	wr.send_flags = flags | EFI_SEND_SIGNALED;
	wr.imm_data = imm;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return efi_post_send(qp, &wr, &bad);
}

const struct efi_qp_cap tcap_default = {
	.max_send_wr = 256, .max_recv_wr = 256, .max_send_sge = 16, .max_recv_sge = 16,
	.max_inline_data = 256,
};

struct efi_mr *treg_all(struct efi_pd *pd, void *buf, size_t len)
{
	return treg(pd, buf, len, EFI_ACCESS_LOCAL_WRITE | EFI_ACCESS_REMOTE_WRITE | EFI_ACCESS_REMOTE_READ |
			       EFI_ACCESS_REMOTE_ATOMIC);
}

uint8_t *tpattern(size_t len, unsigned seed)
{
	uint8_t *p = malloc(len ? len : 1);
	uint32_t x = seed * 2654435761u + 1;

	ck_assert_ptr_nonnull(p);
	for (size_t i = 0; i < len; i++) {
		x = x * 1103515245u + 12345u;
		p[i] = (uint8_t)(x >> 16);
	}
	return p;
}

struct efi_qp *texpect_qp, *texpect_peer;

static void texpect_dump(void)
{
	struct efi_counters c;

	if (texpect_peer) {
		struct efi_qp_attr qa;
		struct efi_qp_init_attr qia;
		efi_query_qp_counters(texpect_peer, &c);
		efi_query_qp(texpect_peer, &qa, 0, &qia);
		fprintf(stderr, "peer qp %u: state %d rx %llu tx %llu dups %llu rnr %llu seqnak %llu drops %llu (state %llu window %llu src %llu)\n",
			texpect_peer->qp_num, qa.qp_state, (unsigned long long)c.rx_packets,
			(unsigned long long)c.tx_packets, (unsigned long long)c.duplicates,
			(unsigned long long)c.rnr_naks_sent, (unsigned long long)c.seq_naks_sent,
			(unsigned long long)c.drops, (unsigned long long)c.drop_reasons[EFI_DROP_QP_STATE],
			(unsigned long long)c.drop_reasons[EFI_DROP_OUT_OF_WINDOW],
			(unsigned long long)c.drop_reasons[EFI_DROP_BAD_SOURCE]);
	}
	efi_query_qp_counters(texpect_qp, &c);
	fprintf(stderr, "qp %u: tx %llu rx %llu retx %llu timeouts %llu dups %llu seqnak s/r %llu/%llu drops %llu\n",
		texpect_qp->qp_num, (unsigned long long)c.tx_packets, (unsigned long long)c.rx_packets,
		(unsigned long long)c.retransmissions, (unsigned long long)c.timeouts,
		(unsigned long long)c.duplicates, (unsigned long long)c.seq_naks_sent,
		(unsigned long long)c.seq_naks_received, (unsigned long long)c.drops);
}

void texpect_wc(struct efi_cq *cq, enum efi_wc_status st, uint64_t id, struct efi_wc *out)
{
	struct efi_wc wc;

	ck_assert_msg(tpoll(cq, &wc, 1, 30000) == 1, "no completion for wr_id %llu", (unsigned long long)id);
	if (wc.status != st && texpect_qp)
		texpect_dump();
	ck_assert_msg(wc.status == st, "wr_id %llu: status %s, expected %s", (unsigned long long)wc.wr_id,
		      efi_wc_status_str(wc.status), efi_wc_status_str(st));
	ck_assert_uint_eq(wc.wr_id, id);
	if (out)
		*out = wc;
}

void tpost_recv1(struct efi_qp *qp, uint64_t id, void *buf, uint32_t len, const struct efi_mr *mr)
{
	struct efi_sge sge = { (uintptr_t)buf, len, mr->lkey };
	struct efi_recv_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1 }, *bad;
	ck_assert_int_eq(efi_post_recv(qp, &wr, &bad), 0);
}
