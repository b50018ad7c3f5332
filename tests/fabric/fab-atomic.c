/* SPDX-License-Identifier: MIT */
/*
 * fab-atomic: the efi provider's fi_atomic and fi_getinfo, through
 * libfabric's public API only (run inside an instance, FI_PROVIDER_PATH at
 * the provider):
 *
 *   fab-atomic info            fi_getinfo: hints beyond the device's limits
 *                              get -FI_ENODATA, returned values are the
 *                              device's (efi_query_device) or the hints'
 *   fab-atomic server PORT     FI_EP_MSG listener exposing two 8-byte words
 *   fab-atomic client IP PORT  fetch-add, compare-swap, atomic write/inject,
 *                              atomic read and 64 concurrent fetch-adds on
 *                              them, every result checked; the valid
 *                              queries; the server checks the final words
 *
 * Exit status 0 when every check passed; each failure is printed.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#include <efi/efi.h>

#include "fabtest.h"

#define CONCURRENT 64

static int failures;

static void failf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void failf(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("FAIL: ", stdout);
	vprintf(fmt, ap);
	fputc('\n', stdout);
	va_end(ap);
	failures++;
}

/* A check whose failure is counted and the run goes on (fabtest.h's
 * CHECK and MUST end it: setup errors, after which nothing can run). */
#define EXPECT(cond, ...) do { if (!(cond)) failf(__VA_ARGS__); } while (0)

static struct fi_info *base_hints(void)
{
	return fab_hints(FI_MSG | FI_ATOMIC, FI_CONTEXT | FI_RX_CQ_DATA);
}

/* ------------------------------------------------------------ info */

static int getinfo(struct fi_info *hints, struct fi_info **out)
{
	return fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, out);
}

/* fi_getinfo with hints changed by edit must give ENODATA (want_ok false)
 * or an entry (want_ok true; returned in *out when out is not NULL). */
static void expect(const char *what, void (*edit)(struct fi_info *, const struct fi_info *),
		   const struct fi_info *dflt, bool want_ok, struct fi_info **out)
{
	struct fi_info *h = base_hints(), *fi = NULL;
	int ret;

	edit(h, dflt);
	ret = getinfo(h, &fi);
	if (want_ok)
		EXPECT(ret == 0 && fi, "getinfo %s: %d, expected an entry", what, ret);
	else
		EXPECT(ret == -FI_ENODATA, "getinfo %s: %d, expected -FI_ENODATA", what, ret);
	if (out && ret == 0)
		*out = fi;
	else
		fi_freeinfo(fi);
	fi_freeinfo(h);
}

static void e_msg_too_big(struct fi_info *h, const struct fi_info *d)
{ h->ep_attr->max_msg_size = d->ep_attr->max_msg_size + 1; }
static void e_msg_max(struct fi_info *h, const struct fi_info *d)
{ h->ep_attr->max_msg_size = d->ep_attr->max_msg_size; }
static void e_tx_too_big(struct fi_info *h, const struct fi_info *d)
{ h->tx_attr->size = d->tx_attr->size + 1; }
static void e_rx_too_big(struct fi_info *h, const struct fi_info *d)
{ h->rx_attr->size = d->rx_attr->size + 1; }
static void e_tx_small(struct fi_info *h, const struct fi_info *d)
{ (void)d; h->tx_attr->size = 16; h->rx_attr->size = 32; }
static void e_inject_too_big(struct fi_info *h, const struct fi_info *d)
{ h->tx_attr->inject_size = d->tx_attr->inject_size + 1; }
static void e_iov_too_big(struct fi_info *h, const struct fi_info *d)
{ h->tx_attr->iov_limit = d->tx_attr->iov_limit + 1; }
static void e_rma_iov(struct fi_info *h, const struct fi_info *d)
{ (void)d; h->tx_attr->rma_iov_limit = 2; }
static void e_key_8(struct fi_info *h, const struct fi_info *d)
{ (void)d; h->domain_attr->mr_key_size = 8; }
static void e_key_4(struct fi_info *h, const struct fi_info *d)
{ (void)d; h->domain_attr->mr_key_size = 4; }
static void e_cqdata_8(struct fi_info *h, const struct fi_info *d)
{ (void)d; h->domain_attr->cq_data_size = 8; }
static void e_cqdata_4(struct fi_info *h, const struct fi_info *d)
{ (void)d; h->caps |= FI_REMOTE_CQ_DATA; h->domain_attr->cq_data_size = 4; }
static void e_tagged(struct fi_info *h, const struct fi_info *d)
{ (void)d; h->caps |= FI_TAGGED; }
static void e_collective(struct fi_info *h, const struct fi_info *d)
{ (void)d; h->caps |= FI_COLLECTIVE; }
static void e_cntr(struct fi_info *h, const struct fi_info *d)
{ (void)d; h->domain_attr->cntr_cnt = 1; }
static void e_srx(struct fi_info *h, const struct fi_info *d)
{ (void)d; h->domain_attr->max_ep_srx_ctx = 1; }
static void e_mr_iov(struct fi_info *h, const struct fi_info *d)
{ (void)d; h->domain_attr->mr_iov_limit = 2; }
static void e_ep_cnt(struct fi_info *h, const struct fi_info *d)
{ h->domain_attr->ep_cnt = d->domain_attr->ep_cnt + 1; }
static void e_comp_order(struct fi_info *h, const struct fi_info *d)
{ (void)d; h->tx_attr->comp_order = FI_ORDER_STRICT; }
static void e_rdm(struct fi_info *h, const struct fi_info *d)
{ (void)d; h->ep_attr->type = FI_EP_RDM; }

static int run_info(void)
{
	struct fi_info *h = base_hints(), *dflt = NULL, *fi = NULL;
	struct efi_device **list;
	struct efi_context *ctx;
	struct efi_device_attr da;
	int n;

	MUST(getinfo(h, &dflt));
	fi_freeinfo(h);

	/* the device's own limits, to hold the defaults against */
	list = efi_get_device_list(&n);
	if (!list || n < 1 || !(ctx = efi_open_device(list[0])) || efi_query_device(ctx, &da)) {
		printf("FAIL: no EFI device to compare with\n");
		return 1;
	}
	EXPECT(!strcmp(dflt->domain_attr->name, list[0]->name), "domain %s, device %s",
	      dflt->domain_attr->name, list[0]->name);
	EXPECT(dflt->caps & FI_ATOMIC, "FI_ATOMIC not offered");
	EXPECT((dflt->tx_attr->caps & FI_ATOMIC) && (dflt->rx_attr->caps & FI_ATOMIC),
	      "FI_ATOMIC missing in tx/rx caps");
	EXPECT(dflt->ep_attr->max_msg_size == da.max_msg_sz, "max_msg_size %zu, device %u",
	      dflt->ep_attr->max_msg_size, da.max_msg_sz);
	EXPECT(dflt->tx_attr->size == (size_t)da.max_qp_wr, "tx size %zu, device %d",
	      dflt->tx_attr->size, da.max_qp_wr);
	EXPECT(dflt->rx_attr->size == (size_t)da.max_qp_wr, "rx size %zu, device %d",
	      dflt->rx_attr->size, da.max_qp_wr);
	EXPECT(dflt->tx_attr->inject_size == 16384 + 64, "inject %zu (16448: bounce.c above the device's %u)",
	      dflt->tx_attr->inject_size, da.max_inline_data);
	EXPECT(dflt->tx_attr->iov_limit == (size_t)da.max_sge, "iov_limit %zu, device %d",
	      dflt->tx_attr->iov_limit, da.max_sge);
	EXPECT(dflt->domain_attr->mr_key_size == 4, "mr_key_size %zu", dflt->domain_attr->mr_key_size);
	efi_close_device(ctx);
	efi_free_device_list(list);

	expect("max_msg_size + 1", e_msg_too_big, dflt, false, NULL);
	expect("max_msg_size", e_msg_max, dflt, true, NULL);
	expect("tx size + 1", e_tx_too_big, dflt, false, NULL);
	expect("rx size + 1", e_rx_too_big, dflt, false, NULL);
	expect("inject_size + 1", e_inject_too_big, dflt, false, NULL);
	expect("tx iov_limit + 1", e_iov_too_big, dflt, false, NULL);
	expect("rma_iov_limit 2", e_rma_iov, dflt, false, NULL);
	expect("mr_key_size 8", e_key_8, dflt, false, NULL);
	expect("mr_key_size 4", e_key_4, dflt, true, NULL);
	expect("cq_data_size 8", e_cqdata_8, dflt, false, NULL);
	expect("cq_data_size 4", e_cqdata_4, dflt, true, &fi);
	if (fi) {
		/* not a capability in 1.17 (issue 21): cq_data_size says it */
		EXPECT(fi->domain_attr->cq_data_size == 4 && !(fi->caps & FI_REMOTE_CQ_DATA),
		      "cq_data_size %zu", fi->domain_attr->cq_data_size);
		fi_freeinfo(fi);
		fi = NULL;
	}
	expect("FI_TAGGED", e_tagged, dflt, false, NULL);
	expect("FI_COLLECTIVE", e_collective, dflt, false, NULL);
	expect("cntr_cnt 1", e_cntr, dflt, false, NULL);
	expect("max_ep_srx_ctx 1", e_srx, dflt, false, NULL);
	expect("mr_iov_limit 2", e_mr_iov, dflt, false, NULL);
	expect("ep_cnt + 1", e_ep_cnt, dflt, false, NULL);
	expect("comp_order FI_ORDER_STRICT", e_comp_order, dflt, false, NULL);
	/* FI_EP_RDM: only ofi_rxm layered on efi, never efi itself */
	expect("FI_EP_RDM", e_rdm, dflt, true, &fi);
	for (struct fi_info *i = fi; i; i = i->next)
		EXPECT(strchr(i->fabric_attr->prov_name, ';'), "efi itself offers FI_EP_RDM (%s)",
		      i->fabric_attr->prov_name);
	fi_freeinfo(fi);
	fi = NULL;
	/* smaller queues than the device's: what fi_enable will allocate */
	expect("tx 16 / rx 32", e_tx_small, dflt, true, &fi);
	if (fi) {
		EXPECT(fi->tx_attr->size == 16 && fi->rx_attr->size == 32,
		      "tx/rx size %zu/%zu, asked 16/32", fi->tx_attr->size, fi->rx_attr->size);
		fi_freeinfo(fi);
	}
	fi_freeinfo(dflt);
	printf("info: %s\n", failures ? "FAILED" : "ok");
	return failures ? 1 : 0;
}

/* ------------------------------------------------------------ connection */

struct conn {
	struct fab_side f;		/* f.mr: over buf */
	struct {
		uint64_t words[2];	/* the server's atomic targets */
		uint64_t results[CONCURRENT + 8];
		uint64_t msg[4];	/* address/key exchange, verdict */
	} buf;
};

struct keyinfo {
	uint64_t addr;
	uint64_t key;
};

/* Waits for one completion; returns its entry (op_context, flags) or fails. */
static struct fi_cq_data_entry wait_comp(struct conn *c, const char *what)
{
	return fab_wait_comp(c->f.cq, what);
}

static void open_common(struct conn *c)
{
	fab_open(&c->f, FI_CQ_FORMAT_DATA, 256);
	MUST(fi_mr_reg(c->f.domain, &c->buf, sizeof(c->buf),
		       FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE, 0,
		       0, 0, &c->f.mr, NULL));
}

static void close_all(struct conn *c)
{
	if (c->f.ep)
		fi_shutdown(c->f.ep, 0);
	fab_close(&c->f);
}

static void *desc(struct conn *c)
{
	return fi_mr_desc(c->f.mr);
}

static void send_msg(struct conn *c, size_t len)
{
	static struct fi_context ctx;

	MUST(fi_send(c->f.ep, c->buf.msg, len, desc(c), 0, &ctx));
	wait_comp(c, "send");
}

static void post_recv_msg(struct conn *c)
{
	static struct fi_context ctx;

	MUST(fi_recv(c->f.ep, c->buf.msg, sizeof(c->buf.msg), desc(c), 0, &ctx));
}

/* ------------------------------------------------------------ server */

static int run_server(const char *port)
{
	struct conn *c = calloc(1, sizeof(*c));
	struct fi_info *hints = base_hints();
	struct keyinfo *k;

	if (!c)
		return 1;
	fab_getinfo(&c->f, hints, true, NULL, port);
	fi_freeinfo(hints);
	open_common(c);
	fab_listen(&c->f);
	fab_take_connreq(&c->f);
	post_recv_msg(c);
	MUST(fi_accept(c->f.ep, NULL, 0));
	fab_wait_event(c->f.eq, FI_CONNECTED, NULL, "FI_CONNECTED");

	c->buf.words[0] = 1000;
	c->buf.words[1] = 7;
	k = (struct keyinfo *)c->buf.msg;
	k->addr = (uint64_t)(uintptr_t)c->buf.words;
	k->key = fi_mr_key(c->f.mr);
	/* the client's recv is posted before it connects */
	{
		static struct fi_context ctx;

		MUST(fi_send(c->f.ep, k, sizeof(*k), desc(c), 0, &ctx));
		wait_comp(c, "send keys");
	}
	/* "done" from the client, then the verdict on the words */
	wait_comp(c, "recv done");
	EXPECT(__atomic_load_n(&c->buf.words[0], __ATOMIC_SEQ_CST) == 52,
	      "server word 0 = %" PRIu64 ", expected 52", c->buf.words[0]);
	EXPECT(__atomic_load_n(&c->buf.words[1], __ATOMIC_SEQ_CST) == 7 + CONCURRENT,
	      "server word 1 = %" PRIu64 ", expected %d", c->buf.words[1], 7 + CONCURRENT);
	c->buf.msg[0] = (uint64_t)failures;
	send_msg(c, sizeof(uint64_t));
	fab_wait_event(c->f.eq, FI_SHUTDOWN, NULL, "the peer's fi_shutdown");
	fi_close(&c->f.ep->fid);
	c->f.ep = NULL;
	close_all(c);
	free(c);
	printf("server: %s\n", failures ? "FAILED" : "ok");
	return failures ? 1 : 0;
}

/* ------------------------------------------------------------ client */

static void check_valid(struct fid_ep *ep)
{
	size_t count;
	int ret;

	count = 0;
	ret = fi_atomicvalid(ep, FI_UINT64, FI_SUM, &count);
	EXPECT(ret == 0 && count == 1, "atomicvalid UINT64 SUM: %d count %zu", ret, count);
	count = 0;
	ret = fi_atomicvalid(ep, FI_INT64, FI_SUM, &count);
	EXPECT(ret == 0 && count == 1, "atomicvalid INT64 SUM: %d count %zu", ret, count);
	ret = fi_atomicvalid(ep, FI_UINT32, FI_SUM, &count);
	EXPECT(ret == -FI_EOPNOTSUPP, "atomicvalid UINT32 SUM: %d", ret);
	ret = fi_atomicvalid(ep, FI_UINT64, FI_MIN, &count);
	EXPECT(ret == -FI_EOPNOTSUPP, "atomicvalid UINT64 MIN: %d", ret);
	ret = fi_atomicvalid(ep, FI_UINT64, FI_ATOMIC_WRITE, &count);
	EXPECT(ret == -FI_EOPNOTSUPP, "atomicvalid UINT64 ATOMIC_WRITE: %d", ret);
	ret = fi_atomicvalid(ep, FI_DOUBLE, FI_SUM, &count);
	EXPECT(ret == -FI_EOPNOTSUPP, "atomicvalid DOUBLE SUM: %d", ret);

	count = 0;
	ret = fi_fetch_atomicvalid(ep, FI_UINT64, FI_SUM, &count);
	EXPECT(ret == 0 && count == 1, "fetch_atomicvalid UINT64 SUM: %d count %zu", ret, count);
	count = 0;
	ret = fi_fetch_atomicvalid(ep, FI_INT64, FI_ATOMIC_READ, &count);
	EXPECT(ret == 0 && count == 1, "fetch_atomicvalid INT64 READ: %d count %zu", ret, count);
	ret = fi_fetch_atomicvalid(ep, FI_UINT64, FI_CSWAP, &count);
	EXPECT(ret == -FI_EOPNOTSUPP, "fetch_atomicvalid UINT64 CSWAP: %d", ret);
	ret = fi_fetch_atomicvalid(ep, FI_UINT64, FI_BAND, &count);
	EXPECT(ret == -FI_EOPNOTSUPP, "fetch_atomicvalid UINT64 BAND: %d", ret);

	count = 0;
	ret = fi_compare_atomicvalid(ep, FI_UINT64, FI_CSWAP, &count);
	EXPECT(ret == 0 && count == 1, "compare_atomicvalid UINT64 CSWAP: %d count %zu", ret, count);
	ret = fi_compare_atomicvalid(ep, FI_UINT64, FI_CSWAP_NE, &count);
	EXPECT(ret == -FI_EOPNOTSUPP, "compare_atomicvalid UINT64 CSWAP_NE: %d", ret);
	ret = fi_compare_atomicvalid(ep, FI_INT32, FI_CSWAP, &count);
	EXPECT(ret == -FI_EOPNOTSUPP, "compare_atomicvalid INT32 CSWAP: %d", ret);
	ret = fi_compare_atomicvalid(ep, FI_UINT64, FI_SUM, &count);
	EXPECT(ret == -FI_EOPNOTSUPP, "compare_atomicvalid UINT64 SUM: %d", ret);
}

static void check_query(struct fid_domain *domain)
{
	struct fi_atomic_attr attr = { 0 };
	int ret;

	ret = fi_query_atomic(domain, FI_UINT64, FI_SUM, &attr, FI_FETCH_ATOMIC);
	EXPECT(ret == 0 && attr.count == 1 && attr.size == 8,
	      "query_atomic fetch SUM: %d count %zu size %zu", ret, attr.count, attr.size);
	ret = fi_query_atomic(domain, FI_UINT64, FI_CSWAP, &attr, FI_COMPARE_ATOMIC);
	EXPECT(ret == 0 && attr.count == 1 && attr.size == 8,
	      "query_atomic compare CSWAP: %d count %zu size %zu", ret, attr.count, attr.size);
	ret = fi_query_atomic(domain, FI_UINT64, FI_CSWAP, &attr, 0);
	EXPECT(ret == -FI_EOPNOTSUPP, "query_atomic write CSWAP: %d", ret);
	ret = fi_query_atomic(domain, FI_FLOAT, FI_SUM, &attr, 0);
	EXPECT(ret == -FI_EOPNOTSUPP, "query_atomic write FLOAT SUM: %d", ret);
}

static struct fi_context actx[CONCURRENT + 8];

/* One fetch-add / compare-swap / write, waited for, its completion checked. */
static void fetch(struct conn *c, const struct keyinfo *k, int slot, enum fi_datatype type,
		  enum fi_op op, uint64_t operand, uint64_t want, const char *what)
{
	struct fi_cq_data_entry e;
	ssize_t ret;

	c->buf.results[slot] = UINT64_MAX;
	ret = fi_fetch_atomic(c->f.ep, &operand, 1, NULL, &c->buf.results[slot], desc(c), 0,
			      k->addr, k->key, type, op, &actx[slot]);
	EXPECT(ret == 0, "%s: fi_fetch_atomic %zd", what, ret);
	if (ret)
		return;
	e = wait_comp(c, what);
	EXPECT(e.op_context == &actx[slot], "%s: completion context", what);
	EXPECT((e.flags & (FI_ATOMIC | FI_READ)) == (FI_ATOMIC | FI_READ),
	      "%s: completion flags %#" PRIx64, what, e.flags);
	EXPECT(c->buf.results[slot] == want, "%s: fetched %" PRIu64 ", expected %" PRIu64, what,
	      c->buf.results[slot], want);
}

static void cswap(struct conn *c, const struct keyinfo *k, int slot, uint64_t compare,
		  uint64_t swap, uint64_t want, const char *what)
{
	struct fi_cq_data_entry e;
	ssize_t ret;

	c->buf.results[slot] = UINT64_MAX;
	ret = fi_compare_atomic(c->f.ep, &swap, 1, NULL, &compare, NULL, &c->buf.results[slot],
				desc(c), 0, k->addr, k->key, FI_UINT64, FI_CSWAP, &actx[slot]);
	EXPECT(ret == 0, "%s: fi_compare_atomic %zd", what, ret);
	if (ret)
		return;
	e = wait_comp(c, what);
	EXPECT(e.op_context == &actx[slot], "%s: completion context", what);
	EXPECT(c->buf.results[slot] == want, "%s: fetched %" PRIu64 ", expected %" PRIu64, what,
	      c->buf.results[slot], want);
}

static void check_bad_input(struct conn *c, const struct keyinfo *k)
{
	uint64_t one = 1, two[2] = { 1, 1 };
	ssize_t ret;

	ret = fi_atomic(c->f.ep, &one, 1, NULL, 0, k->addr + 4, k->key, FI_UINT64, FI_SUM, &actx[0]);
	EXPECT(ret == -FI_EINVAL, "misaligned target: %zd", ret);
	ret = fi_atomic(c->f.ep, two, 2, NULL, 0, k->addr, k->key, FI_UINT64, FI_SUM, &actx[0]);
	EXPECT(ret == -FI_EINVAL, "count 2: %zd", ret);
	ret = fi_atomic(c->f.ep, &one, 1, NULL, 0, k->addr, k->key, FI_UINT64, FI_PROD, &actx[0]);
	EXPECT(ret == -FI_EOPNOTSUPP, "FI_PROD: %zd", ret);
	ret = fi_atomic(c->f.ep, &one, 1, NULL, 0, k->addr, k->key, FI_UINT32, FI_SUM, &actx[0]);
	EXPECT(ret == -FI_EOPNOTSUPP, "FI_UINT32: %zd", ret);
	ret = fi_compare_atomic(c->f.ep, &one, 1, NULL, &one, NULL, &c->buf.results[0], desc(c), 0,
				k->addr, k->key, FI_UINT64, FI_CSWAP_LE, &actx[0]);
	EXPECT(ret == -FI_EOPNOTSUPP, "FI_CSWAP_LE: %zd", ret);
}

static int run_client(const char *node, const char *port)
{
	struct conn *c = calloc(1, sizeof(*c));
	struct fi_info *hints = base_hints();
	struct fi_cq_data_entry e;
	struct keyinfo k;
	uint64_t operand;
	bool seen[CONCURRENT] = { false };
	ssize_t ret;

	if (!c)
		return 1;
	fab_getinfo(&c->f, hints, false, node, port);
	fi_freeinfo(hints);
	open_common(c);
	fab_open_ep(&c->f, c->f.info);
	post_recv_msg(c);
	MUST(fi_connect(c->f.ep, c->f.info->dest_addr, NULL, 0));
	fab_wait_event(c->f.eq, FI_CONNECTED, NULL, "FI_CONNECTED");
	wait_comp(c, "recv keys");
	memcpy(&k, c->buf.msg, sizeof(k));

	check_valid(c->f.ep);
	check_query(c->f.domain);
	check_bad_input(c, &k);

	fetch(c, &k, 0, FI_UINT64, FI_SUM, 5, 1000, "fetch-add 5");
	fetch(c, &k, 1, FI_INT64, FI_SUM, (uint64_t)-3, 1005, "fetch-add -3 (INT64)");
	cswap(c, &k, 2, 1002, 42, 1002, "compare-swap 1002 -> 42");
	cswap(c, &k, 3, 1, 99, 42, "compare-swap 1 -> 99 (no match)");
	/* an atomic write: completes as FI_ATOMIC | FI_WRITE */
	operand = 8;
	ret = fi_atomic(c->f.ep, &operand, 1, NULL, 0, k.addr, k.key, FI_UINT64, FI_SUM, &actx[4]);
	EXPECT(ret == 0, "fi_atomic SUM 8: %zd", ret);
	if (!ret) {
		e = wait_comp(c, "atomic write");
		EXPECT(e.op_context == &actx[4], "atomic write: completion context");
		EXPECT((e.flags & (FI_ATOMIC | FI_WRITE)) == (FI_ATOMIC | FI_WRITE) &&
		      !(e.flags & FI_READ), "atomic write: completion flags %#" PRIx64, e.flags);
	}
	/* inject: the operand's buffer is free on return; no completion */
	operand = 2;
	ret = fi_inject_atomic(c->f.ep, &operand, 1, 0, k.addr, k.key, FI_UINT64, FI_SUM);
	EXPECT(ret == 0, "fi_inject_atomic SUM 2: %zd", ret);
	operand = 1000;	/* must not matter */
	/* RC order: the read sees both */
	fetch(c, &k, 5, FI_UINT64, FI_ATOMIC_READ, 0, 52, "atomic read");

	/* concurrent fetch-adds of 1 on word 1 (7): results 7 … 7+N-1, once each */
	operand = 1;
	for (int i = 0; i < CONCURRENT; i++) {
		c->buf.results[8 + i] = UINT64_MAX;
		ret = fi_fetch_atomic(c->f.ep, &operand, 1, NULL, &c->buf.results[8 + i], desc(c), 0,
				      k.addr + 8, k.key, FI_UINT64, FI_SUM, &actx[8 + i]);
		EXPECT(ret == 0, "concurrent fetch-add %d: %zd", i, ret);
		if (ret)
			exit(1);
	}
	for (int i = 0; i < CONCURRENT; i++)
		wait_comp(c, "concurrent fetch-add");
	for (int i = 0; i < CONCURRENT; i++) {
		uint64_t r = c->buf.results[8 + i];

		if (r < 7 || r >= 7 + CONCURRENT || seen[r - 7])
			failf("concurrent fetch-add %d fetched %" PRIu64, i, r);
		else
			seen[r - 7] = true;
	}

	/* done: the server checks its words and answers with its failures;
	 * our send's completion and the answer may come in either order */
	post_recv_msg(c);
	c->buf.msg[1] = 0;
	{
		static struct fi_context ctx;
		bool got_recv = false;

		MUST(fi_send(c->f.ep, &c->buf.msg[1], sizeof(uint64_t), desc(c), 0, &ctx));
		for (int i = 0; i < 2; i++)
			got_recv |= (wait_comp(c, "done / verdict").flags & FI_RECV) != 0;
		EXPECT(got_recv, "no verdict from the server");
	}
	EXPECT(c->buf.msg[0] == 0, "the server found %" PRIu64 " wrong word(s)", c->buf.msg[0]);
	close_all(c);
	free(c);
	printf("client: %s\n", failures ? "FAILED" : "ok");
	return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 2 && !strcmp(argv[1], "info"))
		return run_info();
	if (argc == 3 && !strcmp(argv[1], "server"))
		return run_server(argv[2]);
	if (argc == 4 && !strcmp(argv[1], "client"))
		return run_client(argv[2], argv[3]);
	fprintf(stderr, "usage: fab-atomic info | server PORT | client IP PORT\n");
	return 2;
}
