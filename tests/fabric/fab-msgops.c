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
#include <string.h>
#include <unistd.h>

#include "fabtest.h"

#define DATA_X 0x1234abcdu

/* What the server's accept tells the client: where to write. */
struct target {
	uint64_t addr, key;
};

struct side {
	struct fab_side f;
	char buf[4096];
	struct fi_context ctx[8];
};

static struct fi_info *hints(uint64_t caps)
{
	struct fi_info *h = fab_hints(caps, FI_CONTEXT | FI_RX_CQ_DATA);

	h->domain_attr->cq_data_size = 4;
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
	CHECK(s->f.info->domain_attr->cq_data_size == 4 &&
	      (s->f.info->rx_attr->mode & FI_RX_CQ_DATA),
	      "an RMA target: cq_data_size %zu, rx_attr->mode 0x%llx",
	      s->f.info->domain_attr->cq_data_size, (unsigned long long)s->f.info->rx_attr->mode);
	fab_open(&s->f, FI_CQ_FORMAT_DATA, 64);
	MUST(fi_mr_reg(s->f.domain, s->buf, sizeof(s->buf),
		       FI_SEND | FI_RECV | FI_WRITE | FI_REMOTE_WRITE, 0, 0, 0, &s->f.mr, NULL));
}

static void *sread_thread(void *arg)
{
	struct side *s = arg;
	struct fi_cq_data_entry e;

	return (void *)(intptr_t)fi_cq_sread(s->f.cq, &e, 1, NULL, -1);
}

/* fi_cq_signal wakes a thread blocked in fi_cq_sread on an empty CQ. */
static void check_signal(struct side *s)
{
	pthread_t t;
	void *ret;

	CHECK(!pthread_create(&t, NULL, sread_thread, s), "pthread_create");
	usleep(200000);	/* let it block (or not: the signal waits for it) */
	MUST(fi_cq_signal(s->f.cq));
	CHECK(!pthread_join(t, &ret), "pthread_join");
	CHECK((intptr_t)ret == -FI_EAGAIN, "fi_cq_sread after fi_cq_signal: %d",
	      (int)(intptr_t)ret);
	printf("fi_cq_signal woke fi_cq_sread (-FI_EAGAIN)\n");
}

/* ------------------------------------------------------------ server */

static void expect_data(struct side *s, void *ctx, uint64_t flags, uint64_t data, const char *what)
{
	struct fi_cq_data_entry e = fab_wait_comp(s->f.cq, what);

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
	struct target t = { (uint64_t)(uintptr_t)s->buf, fi_mr_key(s->f.mr) };
	struct fab_cm_event ev;
	void *desc = fi_mr_desc(s->f.mr);

	fab_listen(&s->f);
	fab_take_connreq(&s->f);
	/* one receive per message with data, and one the write with data
	 * consumes (FI_RX_CQ_DATA) */
	for (int i = 0; i < 4; i++)
		MUST(fi_recv(s->f.ep, s->buf + 1024 + 64 * i, 64, desc, 0, &s->ctx[i]));
	MUST(fi_accept(s->f.ep, &t, sizeof(t)));
	fab_wait_event(s->f.eq, FI_CONNECTED, &ev, "FI_CONNECTED");

	expect_data(s, &s->ctx[0], FI_RECV | FI_MSG | FI_REMOTE_CQ_DATA, 0, "fi_senddata, data 0");
	expect_data(s, &s->ctx[1], FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA, 0,
		    "fi_writedata, data 0");
	expect_data(s, &s->ctx[2], FI_RECV | FI_MSG | FI_REMOTE_CQ_DATA, DATA_X,
		    "fi_senddata, data 0x1234abcd");
	CHECK(!memcmp(s->buf, "written-with-0", 15), "the write with data 0 did not land");
	{
		struct fi_cq_data_entry e = fab_wait_comp(s->f.cq, "fi_sendmsg FI_INJECT");

		CHECK(e.op_context == &s->ctx[3], "fi_sendmsg FI_INJECT: context %p", e.op_context);
		CHECK(!memcmp(s->buf + 1024 + 64 * 3, "inject-original", 16),
		      "fi_sendmsg FI_INJECT carried \"%.15s\", not the buffer at the call",
		      s->buf + 1024 + 64 * 3);
		/* the write before it (RC order) */
		CHECK(!memcmp(s->buf + 512, "write-inject", 13),
		      "fi_writemsg FI_INJECT: \"%.12s\" landed", s->buf + 512);
		printf("FI_INJECT sendmsg/writemsg: the data of the call arrived\n");
	}
	fab_wait_event(s->f.eq, FI_SHUTDOWN, &ev, "the peer's fi_shutdown");
	CHECK(ev.e.fid == &s->f.ep->fid, "FI_SHUTDOWN for another fid");
	printf("FI_SHUTDOWN: the peer's fi_shutdown reached us\n");
	check_signal(s);
	fab_close(&s->f);
	printf("server: ok\n");
	return 0;
}

/* ------------------------------------------------------------ client */

static int client(struct side *s)
{
	struct fab_cm_event ev;
	struct target t;
	void *desc = fi_mr_desc(s->f.mr);
	char inject_buf[32] = "inject-original";
	char winject_buf[32] = "write-inject";
	struct iovec iov;
	struct fi_rma_iov rma;
	struct fi_msg msg = { .msg_iov = &iov, .iov_count = 1 };
	struct fi_msg_rma rmsg = { .msg_iov = &iov, .iov_count = 1, .rma_iov = &rma,
				   .rma_iov_count = 1 };
	bool seen[8] = { false };

	fab_open_ep(&s->f, s->f.info);
	MUST(fi_connect(s->f.ep, s->f.info->dest_addr, NULL, 0));
	fab_wait_event(s->f.eq, FI_CONNECTED, &ev, "FI_CONNECTED");
	memcpy(&t, ev.data, sizeof(t));

	memcpy(s->buf, "written-with-0", 15);
	MUST(fi_senddata(s->f.ep, s->buf, 8, desc, 0, 0, &s->ctx[0]));
	MUST(fi_writedata(s->f.ep, s->buf, 15, desc, 0, 0, t.addr, t.key, &s->ctx[1]));
	MUST(fi_senddata(s->f.ep, s->buf, 8, desc, DATA_X, 0, &s->ctx[2]));
	/* FI_INJECT: the buffers are ours again on return */
	iov = (struct iovec){ winject_buf, 13 };
	rma = (struct fi_rma_iov){ t.addr + 512, 13, t.key };
	rmsg.context = &s->ctx[3];
	MUST(fi_writemsg(s->f.ep, &rmsg, FI_INJECT));
	memset(winject_buf, 'X', sizeof(winject_buf));
	iov = (struct iovec){ inject_buf, 16 };
	msg.context = &s->ctx[4];
	MUST(fi_sendmsg(s->f.ep, &msg, FI_INJECT));
	memset(inject_buf, 'X', sizeof(inject_buf));

	for (int i = 0; i < 5; i++) {
		struct fi_cq_data_entry e = fab_wait_comp(s->f.cq, "the client's completions "
								"(FI_INJECT sendmsg/writemsg among them)");
		int k = (int)((struct fi_context *)e.op_context - s->ctx);

		CHECK(k >= 0 && k < 5 && !seen[k], "a completion with context %p", e.op_context);
		seen[k] = true;
	}
	printf("FI_INJECT sendmsg/writemsg: both completed with their contexts\n");

	MUST(fi_shutdown(s->f.ep, 0));
	fab_wait_event(s->f.eq, FI_SHUTDOWN, &ev, "our own fi_shutdown");
	CHECK(ev.e.fid == &s->f.ep->fid, "FI_SHUTDOWN for another fid");
	printf("FI_SHUTDOWN: our fi_shutdown reached our EQ\n");
	fab_close(&s->f);
	printf("client: ok\n");
	return 0;
}

int main(int argc, char **argv)
{
	struct side *s = calloc(1, sizeof(*s));
	const char *ip, *port;
	bool is_server = fab_args(argc, argv, "fab-msgops server PORT | client IP PORT", &ip,
				  &port);
	struct fi_info *h;
	int ret;

	CHECK(s, "calloc");
	h = hints(FI_MSG | FI_RMA);
	check_msg_only_info(ip, port, is_server ? FI_SOURCE : 0);
	fab_getinfo(&s->f, h, is_server, ip, port);
	fi_freeinfo(h);
	open_common(s);
	ret = is_server ? server(s) : client(s);
	free(s);
	return ret;
}
