/* SPDX-License-Identifier: MIT */
/* The libfabric test programs' shared helpers: fabtest.h. */
#include <string.h>
#include <time.h>

#include "fabtest.h"

/* An error completion at the head of cq: reported, and the run fails. */
static void fail_comp_error(struct fid_cq *cq, const char *what)
{
	struct fi_cq_err_entry err = { 0 };

	fi_cq_readerr(cq, &err, 0);
	CHECK(0, "%s: error completion %d (%s), context %p", what, err.err, fi_strerror(err.err),
	      err.op_context);
}

struct fi_info *fab_hints(uint64_t caps, uint64_t mode)
{
	struct fi_info *h = fi_allocinfo();

	CHECK(h, "fi_allocinfo");
	h->ep_attr->type = FI_EP_MSG;
	h->caps = caps;
	h->mode = mode;
	h->domain_attr->mr_mode = FAB_MR_MODE;
	h->fabric_attr->prov_name = strdup("efi");
	return h;
}

bool fab_args(int argc, char **argv, const char *usage, const char **ip, const char **port)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 3 && !strcmp(argv[1], "server")) {
		*ip = NULL;
		*port = argv[2];
		return true;
	}
	if (argc >= 4 && !strcmp(argv[1], "client")) {
		*ip = argv[2];
		*port = argv[3];
		return false;
	}
	fprintf(stderr, "usage: %s\n", usage);
	exit(2);
}

void fab_getinfo(struct fab_side *s, const struct fi_info *hints, bool server, const char *ip,
		 const char *port)
{
	if (server)
		MUST(fi_getinfo(FI_VERSION(1, 17), NULL, port, FI_SOURCE, hints, &s->info));
	else
		MUST(fi_getinfo(FI_VERSION(1, 17), ip, port, 0, hints, &s->info));
}

void fab_open(struct fab_side *s, enum fi_cq_format format, size_t cq_size)
{
	struct fi_eq_attr eq_attr = { .wait_obj = FI_WAIT_FD };
	struct fi_cq_attr cq_attr = { .format = format, .wait_obj = FI_WAIT_FD, .size = cq_size };

	MUST(fi_fabric(s->info->fabric_attr, &s->fabric, NULL));
	MUST(fi_eq_open(s->fabric, &eq_attr, &s->eq, NULL));
	MUST(fi_domain(s->fabric, s->info, &s->domain, NULL));
	MUST(fi_cq_open(s->domain, &cq_attr, &s->cq, NULL));
}

void fab_open_ep(struct fab_side *s, struct fi_info *info)
{
	MUST(fi_endpoint(s->domain, info, &s->ep, NULL));
	MUST(fi_ep_bind(s->ep, &s->eq->fid, 0));
	MUST(fi_ep_bind(s->ep, &s->cq->fid, FI_TRANSMIT | FI_RECV));
	MUST(fi_enable(s->ep));
}

void fab_listen(struct fab_side *s)
{
	MUST(fi_passive_ep(s->fabric, s->info, &s->pep, NULL));
	MUST(fi_pep_bind(s->pep, &s->eq->fid, 0));
	MUST(fi_listen(s->pep));
	printf("listening\n");
}

ssize_t fab_wait_event(struct fid_eq *eq, uint32_t want, struct fab_cm_event *ev,
		       const char *what)
{
	struct fab_cm_event mine;
	uint32_t event = 0;
	ssize_t n;

	if (!ev)
		ev = &mine;
	n = fi_eq_sread(eq, &event, ev, sizeof(*ev), FAB_TIMEOUT_MS, 0);
	if (n == -FI_EAVAIL) {
		struct fi_eq_err_entry err = { 0 };

		fi_eq_readerr(eq, &err, 0);
		CHECK(0, "%s: EQ error %d (%s), provider errno %d", what, err.err,
		      fi_strerror(err.err), err.prov_errno);
	}
	CHECK(n >= (ssize_t)sizeof(ev->e.fid) && event == want,
	      "%s: fi_eq_sread %zd (%s), event %u, expected %u", what, n,
	      n < 0 ? fi_strerror((int)-n) : "-", event, want);
	if (ev == &mine && want == FI_CONNREQ)
		fi_freeinfo(mine.e.info);
	return n;
}

void fab_take_connreq(struct fab_side *s)
{
	struct fab_cm_event ev;

	fab_wait_event(s->eq, FI_CONNREQ, &ev, "FI_CONNREQ");
	fab_open_ep(s, ev.e.info);
	fi_freeinfo(ev.e.info);
}

struct fi_cq_data_entry fab_wait_comp(struct fid_cq *cq, const char *what)
{
	struct fi_cq_data_entry e = { 0 };
	ssize_t n = fi_cq_sread(cq, &e, 1, NULL, FAB_TIMEOUT_MS);

	if (n == -FI_EAVAIL)
		fail_comp_error(cq, what);
	CHECK(n == 1, "%s: fi_cq_sread %zd (%s)", what, n, n < 0 ? fi_strerror((int)-n) : "-");
	return e;
}

struct fi_cq_data_entry fab_poll_comp(struct fid_cq *cq, const char *what)
{
	struct fi_cq_data_entry e = { 0 };
	double end = fab_now_ms() + FAB_TIMEOUT_MS;

	while (fab_now_ms() < end) {
		ssize_t n = fi_cq_read(cq, &e, 1);

		if (n == 1)
			return e;
		if (n == -FI_EAVAIL)
			fail_comp_error(cq, what);
		CHECK(n == -FI_EAGAIN, "%s: fi_cq_read %zd (%s)", what, n, fi_strerror((int)-n));
	}
	CHECK(0, "%s: nothing in %d ms", what, FAB_TIMEOUT_MS);
	return e;
}

void fab_close(struct fab_side *s)
{
	if (s->ep)
		MUST(fi_close(&s->ep->fid));
	if (s->pep)
		MUST(fi_close(&s->pep->fid));
	if (s->mr)
		MUST(fi_close(&s->mr->fid));
	if (s->cq)
		MUST(fi_close(&s->cq->fid));
	if (s->domain)
		MUST(fi_close(&s->domain->fid));
	if (s->eq)
		MUST(fi_close(&s->eq->fid));
	if (s->fabric)
		MUST(fi_close(&s->fabric->fid));
	fi_freeinfo(s->info);
	memset(s, 0, sizeof(*s));
}

double fab_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}
