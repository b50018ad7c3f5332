/* SPDX-License-Identifier: MIT */
/*
 * fab-msgops: what the efi provider's data and CM calls promise, as tcp
 * and verbs keep it (issue 21):
 *   - remote CQ data 0 is data: fi_senddata and fi_writedata with data 0
 *     give the target a completion with FI_REMOTE_CQ_DATA (and 0), as one
 *     with 0x1234abcd does; fi_getinfo offers cq_data_size 4 to FI_MSG-only
 *     hints and FI_RX_CQ_DATA in rx_attr->mode to an RMA target;
 *   - FI_INJECT on fi_sendmsg/fi_writemsg means "the buffer is reusable on
 *     return", not "no completion": both complete with their contexts, and
 *     the data sent is what the buffer held at the call;
 *   - fi_shutdown gives FI_SHUTDOWN on the caller's EQ and on the peer's;
 *   - fi_cq_signal wakes a thread blocked in fi_cq_sread.
 *
 *   fab-msgops server PORT
 *   fab-msgops client IP PORT
 *
 * Exit status 0 when every promise held.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#define TIMEOUT_MS 30000
#define DATA_X 0x1234abcdu

#define MUST(call) do { \
	int must_ret_ = (int)(call); \
	if (must_ret_) { \
		printf("FAIL: %s: %d (%s)\n", #call, must_ret_, fi_strerror(-must_ret_)); \
		exit(1); \
	} \
} while (0)

#define CHECK(cond, ...) do { \
	if (!(cond)) { \
		printf("FAIL: "); \
		printf(__VA_ARGS__); \
		printf("\n"); \
		exit(1); \
	} \
} while (0)

/* What the server's accept tells the client: where to write. */
struct target {
	uint64_t addr, key;
};

struct cm_event {
	struct fi_eq_cm_entry e;
	uint8_t data[256];
};

struct side {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_eq *eq;
	struct fid_domain *domain;
	struct fid_cq *cq;
	struct fid_pep *pep;
	struct fid_ep *ep;
	struct fid_mr *mr;
	char buf[4096];
	struct fi_context ctx[8];
};

static struct fi_info *hints(uint64_t caps)
{
	struct fi_info *h = fi_allocinfo();

	if (!h)
		exit(1);
	h->ep_attr->type = FI_EP_MSG;
	h->caps = caps;
	h->mode = FI_CONTEXT | FI_RX_CQ_DATA;
	h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				  FI_MR_PROV_KEY;
	h->domain_attr->cq_data_size = 4;
	h->fabric_attr->prov_name = strdup("efi");
	return h;
}

/* fi_getinfo for FI_MSG only: remote CQ data without any mode. */
static void check_msg_only_info(const char *node, const char *service, uint64_t flags)
{
	struct fi_info *h = hints(FI_MSG), *fi;

	h->mode = 0;
	MUST(fi_getinfo(FI_VERSION(1, 17), node, service, flags, h, &fi));
	CHECK(fi->domain_attr->cq_data_size == 4 && !(fi->mode & FI_RX_CQ_DATA),
	      "FI_MSG-only hints: cq_data_size %zu, mode 0x%llx", fi->domain_attr->cq_data_size,
	      (unsigned long long)fi->mode);
	fi_freeinfo(fi);
	fi_freeinfo(h);
}

static void open_common(struct side *s)
{
	struct fi_eq_attr eq_attr = { .wait_obj = FI_WAIT_FD };
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_DATA, .wait_obj = FI_WAIT_FD,
				      .size = 64 };

	CHECK(s->info->domain_attr->cq_data_size == 4 && (s->info->rx_attr->mode & FI_RX_CQ_DATA),
	      "an RMA target: cq_data_size %zu, rx_attr->mode 0x%llx",
	      s->info->domain_attr->cq_data_size, (unsigned long long)s->info->rx_attr->mode);
	MUST(fi_fabric(s->info->fabric_attr, &s->fabric, NULL));
	MUST(fi_eq_open(s->fabric, &eq_attr, &s->eq, NULL));
	MUST(fi_domain(s->fabric, s->info, &s->domain, NULL));
	MUST(fi_cq_open(s->domain, &cq_attr, &s->cq, NULL));
	MUST(fi_mr_reg(s->domain, s->buf, sizeof(s->buf),
		       FI_SEND | FI_RECV | FI_WRITE | FI_REMOTE_WRITE, 0, 0, 0, &s->mr, NULL));
}

static void open_ep(struct side *s, struct fi_info *info)
{
	MUST(fi_endpoint(s->domain, info, &s->ep, NULL));
	MUST(fi_ep_bind(s->ep, &s->eq->fid, 0));
	MUST(fi_ep_bind(s->ep, &s->cq->fid, FI_TRANSMIT | FI_RECV));
	MUST(fi_enable(s->ep));
}

static void wait_event(struct side *s, uint32_t want, struct cm_event *ev, const char *what)
{
	uint32_t event = 0;
	ssize_t n = fi_eq_sread(s->eq, &event, ev, sizeof(*ev), TIMEOUT_MS, 0);

	CHECK(n >= (ssize_t)sizeof(ev->e) && event == want, "%s: fi_eq_sread %zd (%s), event %u",
	      what, n, n < 0 ? fi_strerror((int)-n) : "-", event);
}

static struct fi_cq_data_entry wait_comp(struct side *s, const char *what)
{
	struct fi_cq_data_entry e = { 0 };
	ssize_t n = fi_cq_sread(s->cq, &e, 1, NULL, TIMEOUT_MS);

	if (n == -FI_EAVAIL) {
		struct fi_cq_err_entry err = { 0 };

		fi_cq_readerr(s->cq, &err, 0);
		CHECK(0, "%s: error completion %d (%s)", what, err.err, fi_strerror(err.err));
	}
	CHECK(n == 1, "%s: fi_cq_sread %zd (%s)", what, n, n < 0 ? fi_strerror((int)-n) : "-");
	return e;
}

static void *sread_thread(void *arg)
{
	struct side *s = arg;
	struct fi_cq_data_entry e;

	return (void *)(intptr_t)fi_cq_sread(s->cq, &e, 1, NULL, -1);
}

/* fi_cq_signal wakes a thread blocked in fi_cq_sread on an empty CQ. */
static void check_signal(struct side *s)
{
	pthread_t t;
	void *ret;

	CHECK(!pthread_create(&t, NULL, sread_thread, s), "pthread_create");
	usleep(200000);	/* let it block (or not: the signal waits for it) */
	MUST(fi_cq_signal(s->cq));
	CHECK(!pthread_join(t, &ret), "pthread_join");
	CHECK((intptr_t)ret == -FI_EAGAIN, "fi_cq_sread after fi_cq_signal: %d",
	      (int)(intptr_t)ret);
	printf("fi_cq_signal woke fi_cq_sread (-FI_EAGAIN)\n");
}

static void close_side(struct side *s)
{
	if (s->ep)
		MUST(fi_close(&s->ep->fid));
	if (s->pep)
		MUST(fi_close(&s->pep->fid));
	MUST(fi_close(&s->mr->fid));
	MUST(fi_close(&s->cq->fid));
	MUST(fi_close(&s->domain->fid));
	MUST(fi_close(&s->eq->fid));
	MUST(fi_close(&s->fabric->fid));
	fi_freeinfo(s->info);
}

/* ------------------------------------------------------------ server */

static void expect_data(struct side *s, void *ctx, uint64_t flags, uint64_t data, const char *what)
{
	struct fi_cq_data_entry e = wait_comp(s, what);

	CHECK(e.op_context == ctx, "%s: context %p, expected %p", what, e.op_context, ctx);
	CHECK((e.flags & flags) == flags, "%s: flags 0x%llx lack 0x%llx (FI_REMOTE_CQ_DATA?)",
	      what, (unsigned long long)e.flags, (unsigned long long)flags);
	CHECK(e.data == data, "%s: data 0x%llx, expected 0x%llx", what,
	      (unsigned long long)e.data, (unsigned long long)data);
	printf("%s: flags 0x%llx data 0x%llx\n", what, (unsigned long long)e.flags,
	       (unsigned long long)e.data);
}

static int server(struct side *s)
{
	struct target t = { (uint64_t)(uintptr_t)s->buf, fi_mr_key(s->mr) };
	struct cm_event ev;
	void *desc = fi_mr_desc(s->mr);

	MUST(fi_passive_ep(s->fabric, s->info, &s->pep, NULL));
	MUST(fi_pep_bind(s->pep, &s->eq->fid, 0));
	MUST(fi_listen(s->pep));
	printf("listening\n");
	wait_event(s, FI_CONNREQ, &ev, "FI_CONNREQ");
	open_ep(s, ev.e.info);
	fi_freeinfo(ev.e.info);
	/* one receive per message with data, and one the write with data
	 * consumes (FI_RX_CQ_DATA) */
	for (int i = 0; i < 4; i++)
		MUST(fi_recv(s->ep, s->buf + 1024 + 64 * i, 64, desc, 0, &s->ctx[i]));
	MUST(fi_accept(s->ep, &t, sizeof(t)));
	wait_event(s, FI_CONNECTED, &ev, "FI_CONNECTED");

	expect_data(s, &s->ctx[0], FI_RECV | FI_MSG | FI_REMOTE_CQ_DATA, 0, "fi_senddata, data 0");
	expect_data(s, &s->ctx[1], FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA, 0,
		    "fi_writedata, data 0");
	expect_data(s, &s->ctx[2], FI_RECV | FI_MSG | FI_REMOTE_CQ_DATA, DATA_X,
		    "fi_senddata, data 0x1234abcd");
	CHECK(!memcmp(s->buf, "written-with-0", 15), "the write with data 0 did not land");
	{
		struct fi_cq_data_entry e = wait_comp(s, "fi_sendmsg FI_INJECT");

		CHECK(e.op_context == &s->ctx[3], "fi_sendmsg FI_INJECT: context %p", e.op_context);
		CHECK(!memcmp(s->buf + 1024 + 64 * 3, "inject-original", 16),
		      "fi_sendmsg FI_INJECT carried \"%.15s\", not the buffer at the call",
		      s->buf + 1024 + 64 * 3);
		/* the write before it (RC order) */
		CHECK(!memcmp(s->buf + 512, "write-inject", 13),
		      "fi_writemsg FI_INJECT: \"%.12s\" landed", s->buf + 512);
		printf("FI_INJECT sendmsg/writemsg: the data of the call arrived\n");
	}
	wait_event(s, FI_SHUTDOWN, &ev, "the peer's fi_shutdown");
	CHECK(ev.e.fid == &s->ep->fid, "FI_SHUTDOWN for another fid");
	printf("FI_SHUTDOWN: the peer's fi_shutdown reached us\n");
	check_signal(s);
	close_side(s);
	printf("server: ok\n");
	return 0;
}

/* ------------------------------------------------------------ client */

static int client(struct side *s)
{
	struct cm_event ev;
	struct target t;
	void *desc = fi_mr_desc(s->mr);
	char inject_buf[32] = "inject-original";
	char winject_buf[32] = "write-inject";
	struct iovec iov;
	struct fi_rma_iov rma;
	struct fi_msg msg = { .msg_iov = &iov, .iov_count = 1 };
	struct fi_msg_rma rmsg = { .msg_iov = &iov, .iov_count = 1, .rma_iov = &rma,
				   .rma_iov_count = 1 };
	bool seen[8] = { false };

	open_ep(s, s->info);
	MUST(fi_connect(s->ep, s->info->dest_addr, NULL, 0));
	wait_event(s, FI_CONNECTED, &ev, "FI_CONNECTED");
	memcpy(&t, ev.data, sizeof(t));

	memcpy(s->buf, "written-with-0", 15);
	MUST(fi_senddata(s->ep, s->buf, 8, desc, 0, 0, &s->ctx[0]));
	MUST(fi_writedata(s->ep, s->buf, 15, desc, 0, 0, t.addr, t.key, &s->ctx[1]));
	MUST(fi_senddata(s->ep, s->buf, 8, desc, DATA_X, 0, &s->ctx[2]));
	/* FI_INJECT: the buffers are ours again on return */
	iov = (struct iovec){ winject_buf, 13 };
	rma = (struct fi_rma_iov){ t.addr + 512, 13, t.key };
	rmsg.context = &s->ctx[3];
	MUST(fi_writemsg(s->ep, &rmsg, FI_INJECT));
	memset(winject_buf, 'X', sizeof(winject_buf));
	iov = (struct iovec){ inject_buf, 16 };
	msg.context = &s->ctx[4];
	MUST(fi_sendmsg(s->ep, &msg, FI_INJECT));
	memset(inject_buf, 'X', sizeof(inject_buf));

	for (int i = 0; i < 5; i++) {
		struct fi_cq_data_entry e = wait_comp(s, "the client's completions (FI_INJECT "
							 "sendmsg/writemsg among them)");
		int k = (int)((struct fi_context *)e.op_context - s->ctx);

		CHECK(k >= 0 && k < 5 && !seen[k], "a completion with context %p", e.op_context);
		seen[k] = true;
	}
	printf("FI_INJECT sendmsg/writemsg: both completed with their contexts\n");

	MUST(fi_shutdown(s->ep, 0));
	wait_event(s, FI_SHUTDOWN, &ev, "our own fi_shutdown");
	CHECK(ev.e.fid == &s->ep->fid, "FI_SHUTDOWN for another fid");
	printf("FI_SHUTDOWN: our fi_shutdown reached our EQ\n");
	close_side(s);
	printf("client: ok\n");
	return 0;
}

int main(int argc, char **argv)
{
	struct side *s = calloc(1, sizeof(*s));
	struct fi_info *h;
	bool is_server;
	int ret;

	if (!s || argc < 3 || (strcmp(argv[1], "server") && strcmp(argv[1], "client")) ||
	    (!strcmp(argv[1], "client") && argc < 4)) {
		fprintf(stderr, "usage: fab-msgops server PORT | client IP PORT\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	is_server = !strcmp(argv[1], "server");
	h = hints(FI_MSG | FI_RMA);
	if (is_server) {
		check_msg_only_info(NULL, argv[2], FI_SOURCE);
		MUST(fi_getinfo(FI_VERSION(1, 17), NULL, argv[2], FI_SOURCE, h, &s->info));
	} else {
		check_msg_only_info(argv[2], argv[3], 0);
		MUST(fi_getinfo(FI_VERSION(1, 17), argv[2], argv[3], 0, h, &s->info));
	}
	fi_freeinfo(h);
	open_common(s);
	ret = is_server ? server(s) : client(s);
	free(s);
	return ret;
}
