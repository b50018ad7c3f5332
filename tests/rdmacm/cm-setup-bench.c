/* SPDX-License-Identifier: MIT */
/*
 * cm-setup-bench: connection set-up time through rdma_cm (librdmacm's API,
 * served by libefi-rdmacm under efi-run) next to efi_connect's (libefi's
 * own), one connection at a time: the time from the connect call to the
 * ESTABLISHED event, median and percentiles of N.  A benchmark, run by
 * hand (docs/rdmacm.md); it asserts nothing about time.
 *
 *   cm-setup-bench rdma|efi server ADDR PORT N
 *   cm-setup-bench rdma|efi client ADDR PORT N
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rdma/rdma_cma.h>

#include <efi/efi.h>
#include <efi/efi_cm.h>

#define DIE(...)                                                               \
	do {                                                                   \
		fprintf(stderr, "cm-setup-bench: " __VA_ARGS__);               \
		fprintf(stderr, " (%s)\n", strerror(errno));                  \
		exit(1);                                                       \
	} while (0)

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void report(const char *what, double *t, int n)
{
	qsort(t, (size_t)n, sizeof(*t), cmp);
	printf("%s: %d connections: median %.1f us, p10 %.1f us, p90 %.1f us, p99 %.1f us\n", what, n,
	       t[n / 2], t[n / 10], t[n * 9 / 10], t[n * 99 / 100]);
}

/* ---- rdma_cm ------------------------------------------------------------ */

static struct rdma_cm_event *rdma_next(struct rdma_event_channel *ch, enum rdma_cm_event_type want)
{
	struct rdma_cm_event *ev;

	if (rdma_get_cm_event(ch, &ev) != 0)
		DIE("rdma_get_cm_event");
	if (ev->event != want) {
		errno = EPROTO;
		DIE("got %s (status %d), wanted %s", rdma_event_str(ev->event), ev->status,
		    rdma_event_str(want));
	}
	return ev;
}

static void rdma_qp(struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr a = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 },
	};

	if (rdma_create_qp(id, NULL, &a) != 0)
		DIE("rdma_create_qp");
}

static int rdma_side(int server, struct sockaddr_in *sin, int n)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	double *t = calloc((size_t)n, sizeof(*t));
	int i;

	if (!ch || !t)
		DIE("setup");
	if (server) {
		struct rdma_cm_id *l;

		if (rdma_create_id(ch, &l, NULL, RDMA_PS_TCP) || rdma_bind_addr(l, (struct sockaddr *)sin) ||
		    rdma_listen(l, 16))
			DIE("listen");
		printf("listening\n");
		fflush(stdout);
		/* events of different ids may come in any order (the
		 * next request before the last ESTABLISHED) */
		for (i = 0; i < n;) {
			if (rdma_get_cm_event(ch, &ev) != 0)
				DIE("rdma_get_cm_event");
			id = ev->id;
			switch (ev->event) {
			case RDMA_CM_EVENT_CONNECT_REQUEST:
				rdma_ack_cm_event(ev);
				rdma_qp(id);
				if (rdma_accept(id, NULL))
					DIE("rdma_accept");
				break;
			case RDMA_CM_EVENT_DISCONNECTED:
				rdma_ack_cm_event(ev);
				rdma_destroy_qp(id);
				rdma_destroy_id(id);
				i++;
				break;
			default:
				rdma_ack_cm_event(ev);
			}
		}
		rdma_destroy_id(l);
	} else {
		for (i = 0; i < n; i++) {
			double t0;

			if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) ||
			    rdma_resolve_addr(id, NULL, (struct sockaddr *)sin, 2000))
				DIE("resolve");
			rdma_ack_cm_event(rdma_next(ch, RDMA_CM_EVENT_ADDR_RESOLVED));
			if (rdma_resolve_route(id, 2000))
				DIE("route");
			rdma_ack_cm_event(rdma_next(ch, RDMA_CM_EVENT_ROUTE_RESOLVED));
			rdma_qp(id);
			t0 = now_us();
			if (rdma_connect(id, NULL))
				DIE("rdma_connect");
			rdma_ack_cm_event(rdma_next(ch, RDMA_CM_EVENT_ESTABLISHED));
			t[i] = now_us() - t0;
			rdma_disconnect(id);
			rdma_ack_cm_event(rdma_next(ch, RDMA_CM_EVENT_DISCONNECTED));
			rdma_destroy_qp(id);
			rdma_destroy_id(id);
		}
		report("rdma_connect", t, n);
	}
	rdma_destroy_event_channel(ch);
	free(t);
	return 0;
}

/* ---- efi_cm ------------------------------------------------------------- */

struct efi_res {
	struct efi_context *ctx;
	struct efi_pd *pd;
	struct efi_cq *cq;
};

static struct efi_qp *efi_qp(struct efi_res *r)
{
	struct efi_qp_init_attr a = {
		.send_cq = r->cq,
		.recv_cq = r->cq,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = EFI_QPT_RC,
	};
	struct efi_qp *qp = efi_create_qp(r->pd, &a);

	if (!qp)
		DIE("efi_create_qp");
	return qp;
}

static void efi_next(struct efi_cm_id *id, struct efi_cm_event *ev, enum efi_cm_event_type want)
{
	int e = efi_cm_get_event(id, ev, -1);

	if (e) {
		errno = e;
		DIE("efi_cm_get_event");
	}
	if (ev->event != want) {
		errno = EPROTO;
		DIE("got %s, wanted %s", efi_cm_event_str(ev->event), efi_cm_event_str(want));
	}
}

static int efi_side(int server, const char *host, const char *port, int n)
{
	struct efi_device **list = efi_get_device_list(NULL);
	struct efi_cm_event ev;
	struct efi_res r;
	double *t = calloc((size_t)n, sizeof(*t));
	int i;

	if (!list || !list[0] || !t)
		DIE("no EFI device");
	r.ctx = efi_open_device(list[0]);
	r.pd = r.ctx ? efi_alloc_pd(r.ctx) : NULL;
	r.cq = r.pd ? efi_create_cq(r.ctx, 16, NULL, NULL, 0) : NULL;
	if (!r.cq)
		DIE("resources");
	if (server) {
		struct efi_cm_id *l = efi_listen(r.ctx, port, 16);

		if (!l)
			DIE("efi_listen");
		printf("listening\n");
		fflush(stdout);
		for (i = 0; i < n; i++) {
			struct efi_cm_id *req;
			struct efi_qp *qp;
			int e;

			efi_next(l, &ev, EFI_CM_EVENT_CONNECT_REQUEST);
			req = ev.request;
			qp = efi_qp(&r);
			e = efi_accept(req, qp, NULL, 0);
			if (e) {
				errno = e;
				DIE("efi_accept");
			}
			efi_next(req, &ev, EFI_CM_EVENT_ESTABLISHED);
			/* the client destroys its id right after disconnecting:
			 * whichever way the end arrives, it is not timed */
			(void)efi_cm_get_event(req, &ev, 2000);
			efi_cm_destroy_id(req);
			efi_destroy_qp(qp);
		}
		efi_cm_destroy_id(l);
	} else {
		for (i = 0; i < n; i++) {
			struct efi_qp *qp = efi_qp(&r);
			struct efi_cm_id *c;
			double t0 = now_us();

			c = efi_connect(qp, host, port, NULL, 0, 0);
			if (!c)
				DIE("efi_connect");
			efi_next(c, &ev, EFI_CM_EVENT_ESTABLISHED);
			t[i] = now_us() - t0;
			efi_disconnect(c);
			efi_cm_destroy_id(c);
			efi_destroy_qp(qp);
		}
		report("efi_connect", t, n);
	}
	efi_destroy_cq(r.cq);
	efi_dealloc_pd(r.pd);
	efi_close_device(r.ctx);
	efi_free_device_list(list);
	free(t);
	return 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	int server, n;

	if (argc != 6 || (strcmp(argv[2], "server") && strcmp(argv[2], "client"))) {
		fprintf(stderr, "usage: cm-setup-bench rdma|efi server|client ADDR PORT N\n");
		return 2;
	}
	server = strcmp(argv[2], "server") == 0;
	n = atoi(argv[5]);
	if (n < 1)
		n = 1;
	if (strcmp(argv[1], "efi") == 0)
		return efi_side(server, argv[3], argv[4], n);
	sin.sin_port = htons((uint16_t)atoi(argv[4]));
	if (inet_pton(AF_INET, argv[3], &sin.sin_addr) != 1)
		DIE("bad address %s", argv[3]);
	return rdma_side(server, &sin, n);
}
