/* SPDX-License-Identifier: MIT */
/*
 * cm-many: many live connections in one process (issue 18), one side each.
 *
 *   cm-many server SERVICE N [--listeners L]
 *                                     accepts N connections (more later too)
 *                                     on SERVICE, and listens on SERVICE + 1
 *                                     ... SERVICE + L - 1 too
 *   cm-many client HOST SERVICE N [--parallel P]
 *
 * Both print "ready N threads T" once N connections are established, T
 * being the process's threads then (the CM must not need one per
 * connection).  The client also prints the set-up median and p99 and the
 * rate.  Then both read commands, one a line, from stdin:
 *
 *   send    (client) one message over every connection; "send ok N"
 *   recv    (server) waits for the message of every connection; "recv ok N"
 *   more M [SERVICE]  (client) M further connects (to SERVICE, else the
 *           first one), each established then closed; "more ok M"
 *   quit    tidies up and exits 0
 *
 * The server prints "disconnected N first F last L" (wall-clock ms) when the
 * first N connections have all reported DISCONNECTED with their QP in ERR,
 * and "all in ERR at T" when it first sees all their QPs in ERR,
 * and either side prints "reset K" once K of its channels reported
 * ECONNRESET (efid went away and they were not resumed).  Exit 0, or 1 with
 * a FAIL line.  Every wait has a deadline; the process ends itself after
 * CM_MANY_ALARM seconds (300).
 */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <efi/efi.h>
#include <efi/efi_cm.h>

#define MSG 64
#define WAIT_MS 20000

#define FAIL(...) do { fprintf(stdout, "FAIL: " __VA_ARGS__); fputc('\n', stdout); exit(1); } while (0)

struct conn {
	struct efi_cm_id *id;
	struct efi_qp *qp;
	double t0, took;
	bool established, disconnected, reset, extra;
};

static struct efi_context *ctx;
static struct efi_pd *pd;
static struct efi_cq *cq;
static struct efi_mr *mr;
static uint8_t buf[2 * MSG];
static struct conn *conns;
static int nconns, capconns;

static double mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static double wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int threads(void)
{
	int n = 0;
	DIR *d = opendir("/proc/self/task");
	if (!d)
		return -1;
	for (struct dirent *e; (e = readdir(d));)
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

static void setup(int n)
{
	int nd = 0;
	struct efi_device **list = efi_get_device_list(&nd);
	if (!list || nd < 1)
		FAIL("no EFI device: %s", strerror(errno));
	ctx = efi_open_device(list[0]);
	efi_free_device_list(list);
	if (!ctx)
		FAIL("efi_open_device: %s", strerror(errno));
	pd = efi_alloc_pd(ctx);
	cq = efi_create_cq(ctx, 4 * n + 64, NULL, NULL, 0);
	if (!pd || !cq)
		FAIL("resources: %s", strerror(errno));
	mr = efi_reg_mr(pd, buf, sizeof(buf), EFI_ACCESS_LOCAL_WRITE);
	if (!mr)
		FAIL("efi_reg_mr: %s", strerror(errno));
}

static void teardown(void)
{
	efi_dereg_mr(mr);
	efi_destroy_cq(cq);
	efi_dealloc_pd(pd);
	efi_close_device(ctx);
	free(conns);
}

static struct efi_qp *new_qp(void)
{
	struct efi_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = EFI_QPT_RC, .sq_sig_all = 1,
		.cap = { .max_send_wr = 2, .max_recv_wr = 2, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct efi_qp *qp = efi_create_qp(pd, &ia);
	if (!qp)
		FAIL("efi_create_qp (%d made): %s", nconns, strerror(errno));
	return qp;
}

static struct conn *add_conn(void)
{
	if (nconns == capconns) {
		capconns = capconns ? capconns * 2 : 1024;
		conns = realloc(conns, (size_t)capconns * sizeof(*conns));
		if (!conns)
			FAIL("out of memory");
	}
	struct conn *c = &conns[nconns++];
	memset(c, 0, sizeof(*c));
	return c;
}

static void close_conn(struct conn *c)
{
	efi_cm_destroy_id(c->id);
	efi_destroy_qp(c->qp);
	c->id = NULL;
	c->qp = NULL;
}

static void post_one_recv(int i)
{
	struct efi_sge sge = { (uintptr_t)buf + MSG, MSG, mr->lkey };
	struct efi_recv_wr wr = { .wr_id = (uint64_t)i, .sg_list = &sge, .num_sge = 1 }, *bad;
	if (efi_post_recv(conns[i].qp, &wr, &bad))
		FAIL("efi_post_recv %d", i);
}

/* Waits for k completions of opcode-kind `recv` (true: receives), all
 * successful.  Other completions are counted as failures. */
static void wait_completions(int k, bool recv)
{
	double end = mono_ms() + WAIT_MS;
	int got = 0;
	while (got < k) {
		struct efi_wc wc[64];
		int n = efi_poll_cq(cq, 64, wc);
		if (n < 0)
			FAIL("efi_poll_cq: %d", n);
		for (int i = 0; i < n; i++) {
			/* the receive of a later connection, flushed when it
			 * was closed: not one of these */
			if (recv && wc[i].wr_id >= (uint64_t)k && wc[i].status == EFI_WC_WR_FLUSH_ERR)
				continue;
			if (wc[i].status != EFI_WC_SUCCESS)
				FAIL("connection %llu: %s completion %s", (unsigned long long)wc[i].wr_id,
				     recv ? "receive" : "send", efi_wc_status_str(wc[i].status));
			got++;
			if (recv)
				post_one_recv((int)wc[i].wr_id); /* for the next round */
		}
		if (n == 0 && mono_ms() > end)
			FAIL("%d of %d %s completions in %d ms", got, k, recv ? "receive" : "send", WAIT_MS);
		if (n == 0)
			usleep(100);
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static int last_reason;

/* One event of c; returns it, or -1 for ECONNRESET (counted), -2 for none. */
static int take(struct conn *c, int *resets)
{
	struct efi_cm_event ev;
	int r = efi_cm_get_event(c->id, &ev, 0);
	last_reason = r == 0 ? ev.reject_reason : 0;
	if (r == EAGAIN)
		return -2;
	if (r == ECONNRESET) {
		if (!c->reset)
			(*resets)++;
		c->reset = true;
		return -1;
	}
	if (r)
		FAIL("efi_cm_get_event: %s", strerror(r));
	return (int)ev.event;
}

/* ---- server ---------------------------------------------------------- */

static int server(const char *service, int n, int nlisten)
{
	setup(n + 1024);
	/* listeners on SERVICE, SERVICE + 1, ...: all accept */
	struct efi_cm_id **ls = calloc((size_t)nlisten, sizeof(*ls));
	for (int k = 0; k < nlisten; k++) {
		char svc[16];
		snprintf(svc, sizeof(svc), "%d", atoi(service) + k);
		ls[k] = efi_listen(ctx, svc, 4096);
		if (!ls[k])
			FAIL("efi_listen %s: %s", svc, strerror(errno));
	}
	printf("listening\n");
	int established = 0, disconnected = 0, resets = 0;
	double first = 0, last = 0;
	bool ready = false, told = false, all_err = false;
	struct pollfd *pfd = NULL;
	for (;;) {
		int base = 1 + nlisten; /* stdin, the listeners, then the connections */
		pfd = realloc(pfd, (size_t)(nconns + base) * sizeof(*pfd));
		pfd[0] = (struct pollfd){ .fd = 0, .events = POLLIN };
		for (int k = 0; k < nlisten; k++)
			pfd[1 + k] = (struct pollfd){ .fd = efi_cm_get_fd(ls[k]), .events = POLLIN };
		for (int i = 0; i < nconns; i++)
			pfd[i + base] = (struct pollfd){ .fd = conns[i].id ? efi_cm_get_fd(conns[i].id) : -1,
							 .events = POLLIN };
		int polled = nconns; /* accepting below adds to conns */
		if (poll(pfd, (nfds_t)(polled + base), 1000) < 0 && errno != EINTR)
			FAIL("poll: %s", strerror(errno));
		for (int k = 0; k < nlisten; k++) {
			if (!pfd[1 + k].revents)
				continue;
			struct efi_cm_event ev;
			int r = efi_cm_get_event(ls[k], &ev, 0);
			if (r == 0 && ev.event == EFI_CM_EVENT_CONNECT_REQUEST) {
				struct conn *c = add_conn();
				c->extra = ready;
				c->qp = new_qp();
				c->id = ev.request;
				r = efi_accept(ev.request, c->qp, NULL, 0);
				if (r)
					FAIL("efi_accept: %s", strerror(r));
				post_one_recv(nconns - 1);
			} else if (r == ECONNRESET && !told) {
				told = true;
				printf("listener reset\n");
			} else if (r && r != EAGAIN && r != ECONNRESET) {
				FAIL("listener: %s", strerror(r));
			}
		}
		for (int i = 0; i < polled; i++) {
			struct conn *c = &conns[i];
			if (!pfd[i + base].revents || !c->id)
				continue;
			int e = take(c, &resets);
			if (e == -1)
				printf("reset %d\n", resets);
			if (e == EFI_CM_EVENT_ESTABLISHED && !c->established) {
				c->established = true;
				established++;
			} else if (e == EFI_CM_EVENT_DISCONNECTED) {
				struct efi_qp_attr qa;
				struct efi_qp_init_attr qi;
				efi_query_qp(c->qp, &qa, 0, &qi);
				if (qa.qp_state != EFI_QPS_ERR)
					FAIL("after DISCONNECTED the QP is in state %d, not ERR", qa.qp_state);
				c->disconnected = true;
				if (!c->extra) {
					double now = wall_ms();
					if (!disconnected++)
						first = now;
					last = now;
					if (disconnected == n)
						printf("disconnected %d first %.3f last %.3f\n", n, first, last);
				}
				if (c->extra)
					close_conn(c);
			}
		}
		/* when every first-n QP is in ERR: what the watcher did at
		 * the events' arrival, whatever this loop's own pace */
		if (disconnected && !all_err) {
			int in_err = 0;
			for (int i = 0; i < n; i++) {
				struct efi_qp_attr qa;
				struct efi_qp_init_attr qi;
				if (conns[i].qp && efi_query_qp(conns[i].qp, &qa, 0, &qi) == 0 &&
				    qa.qp_state == EFI_QPS_ERR)
					in_err++;
			}
			if (in_err == n) {
				all_err = true;
				printf("all in ERR at %.3f\n", wall_ms());
			}
		}
		if (!ready && established >= n) {
			ready = true;
			printf("ready %d threads %d\n", n, threads());
		}
		if (pfd[0].revents & (POLLIN | POLLHUP)) {
			char line[64];
			if (!fgets(line, sizeof(line), stdin) || !strncmp(line, "quit", 4))
				break;
			if (!strncmp(line, "recv", 4)) {
				wait_completions(n, true);
				printf("recv ok %d\n", n);
			}
		}
	}
	for (int i = 0; i < nconns; i++)
		if (conns[i].id)
			close_conn(&conns[i]);
	for (int k = 0; k < nlisten; k++)
		efi_cm_destroy_id(ls[k]);
	free(ls);
	free(pfd);
	teardown();
	return 0;
}

/* ---- client ---------------------------------------------------------- */

/* Connects conns[from, from + k) with up to par outstanding; all must be
 * ESTABLISHED.  Prints the median, p99 and rate as "label". */
static void connect_many(const char *host, const char *service, int k, int par, const char *label)
{
	int from = nconns, next = 0, done = 0, resets = 0;
	double start = mono_ms();
	struct pollfd *pfd = calloc((size_t)k, sizeof(*pfd));
	int *which = calloc((size_t)k, sizeof(*which));
	while (done < k) {
		while (next < k && next - done < par) {
			struct conn *c = add_conn();
			c->qp = new_qp();
			c->t0 = mono_ms();
			c->id = efi_connect(c->qp, host, service, NULL, 0, 10000);
			if (!c->id)
				FAIL("efi_connect %d: %s", next, strerror(errno));
			next++;
		}
		int np = 0;
		for (int i = from; i < from + next; i++)
			if (!conns[i].established) {
				pfd[np] = (struct pollfd){ .fd = efi_cm_get_fd(conns[i].id), .events = POLLIN };
				which[np++] = i;
			}
		if (poll(pfd, (nfds_t)np, WAIT_MS) <= 0)
			FAIL("%s: nothing for %d ms (%d of %d established)", label, WAIT_MS, done, k);
		for (int j = 0; j < np; j++) {
			if (!pfd[j].revents)
				continue;
			struct conn *c = &conns[which[j]];
			int e = take(c, &resets);
			if (e == -2)
				continue;
			if (e != EFI_CM_EVENT_ESTABLISHED)
				FAIL("%s: connect %d: %s (reason %d)", label, which[j] - from,
				     e < 0 ? "channel reset" : efi_cm_event_str((enum efi_cm_event_type)e),
				     last_reason);
			c->established = true;
			c->took = mono_ms() - c->t0;
			done++;
		}
	}
	double all = mono_ms() - start;
	double *t = calloc((size_t)k, sizeof(double));
	for (int i = 0; i < k; i++)
		t[i] = conns[from + i].took;
	qsort(t, (size_t)k, sizeof(double), cmp_double);
	printf("%s %d threads %d median %.3f p99 %.3f rate %.0f\n", label, k, threads(), t[k / 2],
	       t[(k * 99) / 100], k / (all / 1e3));
	free(t);
	free(pfd);
	free(which);
}

static int client(const char *host, const char *service, int n, int par)
{
	setup(n + 1024);
	connect_many(host, service, n, par, "ready");
	int resets = 0;
	struct pollfd *pfd = calloc((size_t)n + 1, sizeof(*pfd));
	for (;;) {
		pfd[0] = (struct pollfd){ .fd = 0, .events = POLLIN };
		for (int i = 0; i < n; i++)
			pfd[i + 1] = (struct pollfd){ .fd = conns[i].reset ? -1 : efi_cm_get_fd(conns[i].id),
						      .events = POLLIN };
		if (poll(pfd, (nfds_t)n + 1, 1000) < 0 && errno != EINTR)
			FAIL("poll: %s", strerror(errno));
		for (int i = 0; i < n; i++) {
			if (!pfd[i + 1].revents)
				continue;
			int e = take(&conns[i], &resets);
			if (e == -1)
				printf("reset %d\n", resets);
			else if (e == EFI_CM_EVENT_DISCONNECTED)
				FAIL("connection %d: DISCONNECTED", i);
		}
		if (!(pfd[0].revents & (POLLIN | POLLHUP)))
			continue;
		char line[64];
		if (!fgets(line, sizeof(line), stdin) || !strncmp(line, "quit", 4))
			break;
		if (!strncmp(line, "send", 4)) {
			for (int i = 0; i < n; i++) {
				struct efi_sge sge = { (uintptr_t)buf, MSG, mr->lkey };
				struct efi_send_wr wr = { .wr_id = (uint64_t)i, .sg_list = &sge, .num_sge = 1,
							  .opcode = EFI_WR_SEND }, *bad;
				if (efi_post_send(conns[i].qp, &wr, &bad))
					FAIL("efi_post_send %d", i);
			}
			wait_completions(n, false);
			printf("send ok %d\n", n);
		} else if (!strncmp(line, "more ", 5)) {
			/* more M [SERVICE] */
			char svc[16] = "";
			int m = 0, from = nconns;
			if (sscanf(line + 5, "%d %15s", &m, svc) < 1 || m < 1 || m > 1024)
				FAIL("more: 1..1024 [SERVICE]");
			connect_many(host, svc[0] ? svc : service, m, 16, "more ok");
			for (int i = from; i < nconns; i++) {
				efi_disconnect(conns[i].id);
				close_conn(&conns[i]);
			}
			nconns = from;
			struct efi_wc wc[64];
			while (efi_poll_cq(cq, 64, wc) > 0)
				;
		}
	}
	for (int i = 0; i < nconns; i++)
		close_conn(&conns[i]);
	free(pfd);
	teardown();
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	const char *a = getenv("CM_MANY_ALARM");
	alarm(a ? (unsigned)atoi(a) : 300);
	if (argc >= 4 && !strcmp(argv[1], "server")) {
		int nl = argc >= 6 && !strcmp(argv[4], "--listeners") ? atoi(argv[5]) : 1;
		return server(argv[2], atoi(argv[3]), nl < 1 ? 1 : nl > 1000 ? 1000 : nl);
	}
	if (argc >= 5 && !strcmp(argv[1], "client")) {
		int par = argc >= 7 && !strcmp(argv[5], "--parallel") ? atoi(argv[6]) : 32;
		return client(argv[2], argv[3], atoi(argv[4]), par < 1 ? 1 : par);
	}
	fprintf(stderr, "usage: cm-many server SERVICE N [--listeners L]\n"
			"       cm-many client HOST SERVICE N [--parallel P]\n");
	return 2;
}
