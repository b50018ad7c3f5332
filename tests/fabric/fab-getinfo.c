/* SPDX-License-Identifier: MIT */
/*
 * fab-getinfo: fi_getinfo over the efi provider for combinations of hints
 * the man pages allow (caps, modes, mr_mode, cq_data_size), as fabtests'
 * getinfo_test and applications ask.  Every call must answer 0 or
 * -FI_ENODATA, and every entry must keep to the hints:
 *   - caps within those asked (plus the optional ones), tx/rx caps within
 *     the entry's, no FI_REMOTE_CQ_DATA among them (not a capability in
 *     1.17: cq_data_size says it);
 *   - mode within hints->mode, mr_mode within hints' mr_mode (FI_MR_BASIC
 *     answered as FI_MR_BASIC, or not at all);
 *   - cq_data_size at least what was asked; FI_RX_CQ_DATA in rx_attr->mode
 *     whenever a write with data would consume a receive;
 * and some hints must be answered: capability-only hints, FI_MSG without
 * any mode or VIRT_ADDR/PROV_KEY (remote CQ data included), FI_RMA with
 * FI_RX_CQ_DATA; and what efi declines (FI_MR_SCALABLE, counters,
 * FI_RMA_EVENT) must be -FI_ENODATA.
 *
 *   fab-getinfo
 *
 * Exit status 0 when every answer kept to its hints.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_errno.h>

#define PRIMARY_TX_CAPS	(FI_MSG | FI_RMA | FI_TAGGED | FI_ATOMIC | FI_MULTICAST | \
			 FI_NAMED_RX_CTX | FI_HMEM | FI_COLLECTIVE)
#define PRIMARY_RX_CAPS	(FI_MSG | FI_RMA | FI_TAGGED | FI_ATOMIC | FI_DIRECTED_RECV | \
			 FI_VARIABLE_MSG | FI_HMEM | FI_COLLECTIVE)
#define DOMAIN_CAPS	(FI_LOCAL_COMM | FI_REMOTE_COMM | FI_SHARED_AV)
#define OPT_TX_CAPS	(FI_SEND | FI_READ | FI_WRITE | FI_TRIGGER | FI_FENCE | FI_RMA_PMEM)
#define OPT_RX_CAPS	(FI_RECV | FI_REMOTE_READ | FI_REMOTE_WRITE | FI_RMA_PMEM | FI_SOURCE | \
			 FI_SOURCE_ERR | FI_RMA_EVENT | FI_MULTI_RECV | FI_TRIGGER)
#define OPT_CAPS	(DOMAIN_CAPS | OPT_TX_CAPS | OPT_RX_CAPS)
#define FULL_MR		(FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY)

static int failures, calls, answered;

struct want {
	uint64_t caps, mode;
	int mr_mode;
	size_t cq_data_size;
	size_t cntr_cnt;
	bool no_domain;		/* hints->domain_attr NULL: caps and mode only */
};

static const char *str(uint64_t v, enum fi_type type)
{
	static char buf[4][512];
	static int i;
	char *b = buf[i++ % 4];

	snprintf(b, 512, "%s", fi_tostr(&v, type));
	return b;
}

static void bad(const struct want *w, const char *msg)
{
	if (failures++ < 40)
		printf("FAIL: hints caps [%s] mode [%s] mr_mode 0x%x cq_data_size %zu%s: %s\n",
		       str(w->caps, FI_TYPE_CAPS), str(w->mode, FI_TYPE_MODE), w->mr_mode,
		       w->cq_data_size, w->no_domain ? " (no domain_attr)" : "", msg);
}

#define BAD(w, ...) do { \
	char msg_[1024]; \
	snprintf(msg_, sizeof(msg_), __VA_ARGS__); \
	bad(w, msg_); \
} while (0)

/* The write-with-data rule: peers may RDMA-write into this endpoint. */
static bool write_target(uint64_t caps)
{
	if (!(caps & FI_RMA))
		return false;
	if (caps & FI_REMOTE_WRITE)
		return true;
	return !(caps & (FI_READ | FI_WRITE | FI_REMOTE_READ | FI_SEND | FI_RECV));
}

static void check(const struct want *w, const struct fi_info *fi)
{
	const struct fi_domain_attr *d = fi->domain_attr;
	uint64_t allowed_mode = w->mode;

	if ((fi->caps | fi->tx_attr->caps | fi->rx_attr->caps | d->caps) & FI_REMOTE_CQ_DATA)
		BAD(w, "FI_REMOTE_CQ_DATA among the caps [%s]", str(fi->caps, FI_TYPE_CAPS));
	/* FI_REMOTE_CQ_DATA alone names no capability: any caps then */
	if ((w->caps & ~FI_REMOTE_CQ_DATA) && (fi->caps & ~(w->caps | OPT_CAPS)))
		BAD(w, "caps [%s] beyond those asked", str(fi->caps, FI_TYPE_CAPS));
	if (fi->tx_attr->caps & ~(PRIMARY_TX_CAPS | OPT_TX_CAPS))
		BAD(w, "tx_attr caps [%s]", str(fi->tx_attr->caps, FI_TYPE_CAPS));
	if (fi->rx_attr->caps & ~(PRIMARY_RX_CAPS | OPT_RX_CAPS))
		BAD(w, "rx_attr caps [%s]", str(fi->rx_attr->caps, FI_TYPE_CAPS));
	if ((fi->rx_attr->caps | fi->tx_attr->caps) & ~fi->caps)
		BAD(w, "tx/rx caps beyond the entry's [%s]", str(fi->caps, FI_TYPE_CAPS));
	if (w->caps & ~FI_REMOTE_CQ_DATA & ~fi->caps & (PRIMARY_TX_CAPS | PRIMARY_RX_CAPS))
		BAD(w, "caps [%s] lack some asked for", str(fi->caps, FI_TYPE_CAPS));
	if ((fi->mode | fi->rx_attr->mode | fi->tx_attr->mode) & ~allowed_mode)
		BAD(w, "mode [%s] beyond hints' (rx_attr [%s])", str(fi->mode, FI_TYPE_MODE),
		    str(fi->rx_attr->mode, FI_TYPE_MODE));
	if (w->no_domain) {
		/* no mr_mode asked: nothing to keep to */
	} else if (w->mr_mode == FI_MR_BASIC) {
		if (d->mr_mode != FI_MR_BASIC)
			BAD(w, "FI_MR_BASIC answered with mr_mode [%s]",
			    fi_tostr(&d->mr_mode, FI_TYPE_MR_MODE));
	} else if (d->mr_mode & ~w->mr_mode) {
		BAD(w, "mr_mode [%s] beyond hints'", fi_tostr(&d->mr_mode, FI_TYPE_MR_MODE));
	}
	if (d->cq_data_size < w->cq_data_size)
		BAD(w, "cq_data_size %zu below the one asked", d->cq_data_size);
	if (d->cq_data_size && write_target(fi->caps) && !(fi->rx_attr->mode & FI_RX_CQ_DATA))
		BAD(w, "remote CQ data on an RMA target without FI_RX_CQ_DATA in rx_attr->mode");
	if (!(fi->caps & FI_RMA) && !d->cq_data_size)
		BAD(w, "no remote CQ data for an endpoint no write reaches");
}

/* One fi_getinfo; returns its result after checking it. */
static int ask(struct want *w, bool with_domain)
{
	struct fi_info *h = fi_allocinfo(), *info = NULL;
	int ret;

	if (!h)
		exit(1);
	h->ep_attr->type = FI_EP_MSG;
	h->fabric_attr->prov_name = strdup("efi");
	h->caps = w->caps;
	h->mode = w->mode;
	w->no_domain = !with_domain;
	if (with_domain) {
		h->domain_attr->mr_mode = w->mr_mode;
		h->domain_attr->cq_data_size = w->cq_data_size;
		h->domain_attr->cntr_cnt = w->cntr_cnt;
	} else {
		/* capability-only hints: libfabric's defaults for the rest */
		free(h->domain_attr);
		h->domain_attr = NULL;
	}
	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info);
	calls++;
	if (ret && ret != -FI_ENODATA) {
		BAD(w, "fi_getinfo: %s", fi_strerror(-ret));
	} else if (!ret) {
		answered++;
		for (struct fi_info *fi = info; fi; fi = fi->next)
			check(w, fi);
	}
	fi_freeinfo(info);
	fi_freeinfo(h);
	return ret;
}

static void must_answer(const char *what, struct want *w, bool with_domain)
{
	int ret = ask(w, with_domain);

	printf("%s: %s\n", what, ret ? fi_strerror(-ret) : "answered");
	if (ret)
		BAD(w, "%s: no entry", what);
}

static void must_refuse(const char *what, struct want *w)
{
	int ret = ask(w, true);

	printf("%s: %s\n", what, ret ? fi_strerror(-ret) : "answered");
	if (ret != -FI_ENODATA)
		BAD(w, "%s: expected -FI_ENODATA", what);
}

int main(void)
{
	static const uint64_t primaries[] = { FI_MSG, FI_RMA, FI_ATOMIC, FI_TAGGED, FI_HMEM };
	static const uint64_t modifiers[] = {
		0, FI_SEND | FI_RECV, FI_READ | FI_WRITE, FI_REMOTE_READ | FI_REMOTE_WRITE,
		FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE,
		FI_REMOTE_CQ_DATA,
	};
	static const uint64_t modes[] = { 0, FI_CONTEXT, FI_RX_CQ_DATA, FI_LOCAL_MR, ~0ULL };
	static const int mr_modes[] = {
		0, FI_MR_BASIC, FI_MR_SCALABLE, FI_MR_LOCAL, FI_MR_LOCAL | FI_MR_ALLOCATED,
		FULL_MR, FULL_MR | FI_MR_RAW | FI_MR_MMU_NOTIFY | FI_MR_RMA_EVENT | FI_MR_ENDPOINT,
		FI_MR_BASIC | FI_MR_LOCAL,
	};
	struct want w;

	setvbuf(stdout, NULL, _IOLBF, 0);
	/* the walk: every combination of these */
	for (unsigned int p = 0; p < 1u << 5; p++) {
		uint64_t prim = 0;

		for (int i = 0; i < 5; i++)
			if (p & (1u << i))
				prim |= primaries[i];
		for (size_t m = 0; m < sizeof(modifiers) / sizeof(modifiers[0]); m++) {
			for (size_t o = 0; o < sizeof(modes) / sizeof(modes[0]); o++) {
				w = (struct want){ .caps = prim | modifiers[m], .mode = modes[o] };
				ask(&w, false);
				for (size_t r = 0; r < sizeof(mr_modes) / sizeof(mr_modes[0]); r++) {
					w.mr_mode = mr_modes[r];
					w.cq_data_size = 0;
					ask(&w, true);
					w.cq_data_size = 4;
					ask(&w, true);
				}
			}
		}
	}
	printf("%d fi_getinfo calls, %d answered, the rest -FI_ENODATA\n", calls, answered);

	/* what must be answered, and how */
	w = (struct want){ .caps = FI_MSG };
	must_answer("caps FI_MSG only (no domain hints)", &w, false);
	w = (struct want){ .caps = FI_MSG | FI_RMA, .mode = ~0ULL };
	must_answer("caps FI_MSG|FI_RMA, every mode (no domain hints)", &w, false);
	w = (struct want){ .caps = FI_MSG, .mr_mode = FI_MR_LOCAL | FI_MR_ALLOCATED,
			   .cq_data_size = 4 };
	must_answer("FI_MSG, no mode, LOCAL|ALLOCATED, cq_data_size 4", &w, true);
	w = (struct want){ .caps = FI_MSG | FI_RMA, .mode = FI_RX_CQ_DATA, .mr_mode = FULL_MR,
			   .cq_data_size = 4 };
	must_answer("FI_MSG|FI_RMA, FI_RX_CQ_DATA, cq_data_size 4", &w, true);
	w = (struct want){ .caps = FI_MSG | FI_RMA, .mr_mode = FULL_MR };
	must_answer("FI_MSG|FI_RMA, no mode (cq_data_size 0 then)", &w, true);
	w = (struct want){ .caps = FI_MSG | FI_RMA, .mode = FI_LOCAL_MR, .mr_mode = FI_MR_BASIC };
	must_answer("FI_MR_BASIC with the FI_LOCAL_MR mode", &w, true);
	w = (struct want){ .caps = FI_MSG | FI_RMA, .mode = FI_CONTEXT, .mr_mode = FI_MR_BASIC };
	must_refuse("FI_MR_BASIC without FI_LOCAL_MR", &w);
	w = (struct want){ .caps = FI_MSG | FI_RMA, .mode = ~0ULL, .mr_mode = FI_MR_SCALABLE };
	must_refuse("FI_MR_SCALABLE", &w);
	w = (struct want){ .caps = FI_MSG | FI_RMA, .mr_mode = FULL_MR, .cq_data_size = 4 };
	must_refuse("FI_RMA target, cq_data_size 4, no FI_RX_CQ_DATA", &w);
	w = (struct want){ .caps = FI_MSG, .mode = ~0ULL, .mr_mode = FULL_MR, .cq_data_size = 8 };
	must_refuse("cq_data_size 8", &w);
	/* declined: libefi completes work into CQs only */
	w = (struct want){ .caps = FI_MSG, .mode = ~0ULL, .mr_mode = FULL_MR, .cntr_cnt = 1 };
	must_refuse("counters (cntr_cnt 1)", &w);
	w = (struct want){ .caps = FI_MSG | FI_RMA | FI_RMA_EVENT, .mode = ~0ULL,
			   .mr_mode = FULL_MR | FI_MR_RMA_EVENT };
	must_refuse("FI_RMA_EVENT", &w);

	if (failures) {
		printf("%d answers broke their hints\n", failures);
		return 1;
	}
	printf("ok\n");
	return 0;
}
