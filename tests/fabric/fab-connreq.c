/* SPDX-License-Identifier: MIT */
/*
 * fab-connreq: every order in which a server may end a connection request
 * (fi_accept, fi_reject, fi_close of the handle, closing the endpoint
 * opened on it, fi_freeinfo, closing the passive endpoint) frees each
 * object once (issue 21: fi_reject freed the request and closing the
 * endpoint freed it again).  Run it in a sanitizer build: ASan reports a
 * double free, a use after free or a leak.
 *
 *   fab-connreq server PORT SYNCDIR [CASES]
 *   fab-connreq client IP PORT SYNCDIR [CASES]
 *
 * The client connects once per case with the case's letter as CM data; the
 * server ends each request as the case says and the client checks what it
 * sees (connected, refused, timed out).  In the "late" cases the client
 * gives up first (FI_EFI_CONNECT_TIMEOUT) and says so with the file
 * SYNCDIR/gaveup, after which the server's fi_accept must fail cleanly.
 * Cases L, N, O and M end with the passive endpoint's close.  Case S is a
 * server slow to accept (7 s between FI_CONNREQ and fi_accept,
 * longer than the provider's old fixed connect timeout): the client must
 * connect.  CASES (letters, both sides alike) picks cases; default A..M.
 * Exit status 0 when every case went as it should.
 */
#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fabtest.h"

#define USAGE "fab-connreq server PORT SYNCDIR [CASES] | client IP PORT SYNCDIR [CASES]"

/* The cases, in the order the client runs them, and what it must see. */
enum outcome { CONNECTED, REFUSED, TIMEDOUT, LATER };

static const struct {
	char id;
	enum outcome client;
	const char *what;
} cases[] = {
	{ 'A', CONNECTED, "fi_endpoint, fi_accept, fi_freeinfo, close ep" },
	{ 'B', REFUSED, "fi_reject, fi_freeinfo" },
	{ 'C', REFUSED, "fi_freeinfo, fi_reject" },
	{ 'D', REFUSED, "fi_endpoint, fi_reject, close ep, fi_freeinfo" },
	{ 'E', REFUSED, "fi_endpoint, close ep, fi_reject, fi_freeinfo" },
	{ 'F', TIMEDOUT, "client gives up; fi_endpoint, fi_accept fails, fi_reject, close ep" },
	{ 'G', TIMEDOUT, "client gives up; fi_endpoint, fi_accept fails, close ep, fi_reject" },
	{ 'H', REFUSED, "fi_close(handle), fi_freeinfo" },
	{ 'I', CONNECTED, "fi_endpoint, fi_accept, fi_reject fails, close ep, fi_freeinfo" },
	{ 'J', CONNECTED, "fi_endpoint, fi_accept, fi_close(handle), close ep, fi_freeinfo" },
	{ 'K', CONNECTED, "fi_endpoint, fi_freeinfo, fi_accept, close ep" },
	{ 'L', LATER, "fi_freeinfo only: closing the passive endpoint refuses it" },
	{ 'N', LATER, "the passive endpoint closed first: fi_endpoint fails, fi_close(handle)" },
	{ 'O', LATER, "fi_endpoint, the passive endpoint closed, close ep, fi_close(handle)" },
	{ 'M', LATER, "never read from the EQ: closing the passive endpoint refuses it" },
	{ 'S', CONNECTED, "a slow server: 7 s from FI_CONNREQ to fi_accept" },
};
#define DEFAULT_CASES "ABCDEFGHIJKLNOM"
#define SLOW_ACCEPT_S 7

/* The cases asked for (argv), as indexes into cases[]; the count. */
static size_t pick(const char *want, size_t *idx)
{
	size_t n = 0;

	for (const char *p = want; *p; p++) {
		for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
			if (cases[c].id == *p)
				idx[n++] = c;
		}
	}
	return n;
}

/* An EQ entry with room for the CM data behind it. */
struct side {
	struct fab_side f;
	const char *sync;
	size_t run[32], nrun;	/* the cases to run, in order */
};

static void open_common(struct side *s)
{
	fab_open(&s->f, FI_CQ_FORMAT_CONTEXT, 64);
}

static struct fid_ep *open_ep(struct side *s, struct fi_info *info)
{
	struct fid_ep *ep;

	MUST(fi_endpoint(s->f.domain, info, &ep, NULL));
	MUST(fi_ep_bind(ep, &s->f.eq->fid, 0));
	MUST(fi_ep_bind(ep, &s->f.cq->fid, FI_TRANSMIT | FI_RECV));
	MUST(fi_enable(ep));
	return ep;
}

/* The next EQ event, which must be want (for fid, if given); an error
 * entry is returned in *err when want is 0. */
static void next_event(struct side *s, uint32_t want, fid_t fid, struct fab_cm_event *entry,
		       struct fi_eq_err_entry *err, uint8_t *err_data)
{
	uint32_t event = 0;
	ssize_t n = fi_eq_sread(s->f.eq, &event, entry, sizeof(*entry), FAB_TIMEOUT_MS, 0);

	if (n == -FI_EAVAIL && !want) {
		memset(err, 0, sizeof(*err));
		err->err_data = err_data;
		err->err_data_size = 8;
		n = fi_eq_readerr(s->f.eq, err, 0);
		if (n != sizeof(*err)) {
			printf("FAIL: fi_eq_readerr: %zd\n", n);
			exit(1);
		}
		return;
	}
	if (n < 0 || event != want || (fid && entry->e.fid != fid)) {
		printf("FAIL: waiting for CM event %u: got %zd (%s), event %u\n", want, n,
		       n < 0 ? fi_strerror((int)-n) : "-", event);
		exit(1);
	}
}

static void wait_file(const char *path)
{
	for (int i = 0; i < FAB_TIMEOUT_MS / 10; i++) {
		if (!access(path, F_OK)) {
			unlink(path);
			return;
		}
		usleep(10000);
	}
	printf("FAIL: %s did not appear\n", path);
	exit(1);
}

/* ------------------------------------------------------------ server */

static void expect_connected(struct side *s, struct fid_ep *ep)
{
	struct fab_cm_event entry;

	next_event(s, FI_CONNECTED, &ep->fid, &entry, NULL, NULL);
}

static int server(struct side *s)
{
	struct fab_cm_event entry;
	struct fi_info *late = NULL, *held = NULL;
	struct fid_ep *held_ep = NULL;
	char gaveup[4096];
	uint32_t event;
	ssize_t n;

	snprintf(gaveup, sizeof(gaveup), "%s/gaveup", s->sync);
	fab_listen(&s->f);
	fflush(stdout);

	for (size_t k = 0; k < s->nrun; k++) {
		size_t c = s->run[k];
		struct fi_info *info;
		struct fid_ep *ep = NULL;
		fid_t handle;
		char id;
		int ret;

		/* M: the request stays in the EQ (peeked at, never read) */
		n = fi_eq_sread(s->f.eq, &event, &entry, sizeof(entry),
				FAB_TIMEOUT_MS, cases[c].id == 'M' ? FI_PEEK : 0);
		if (n < (ssize_t)sizeof(entry.e) + 1 || event != FI_CONNREQ) {
			printf("FAIL: waiting for the request of case %c: %zd, event %u\n",
			       cases[c].id, n, event);
			return 1;
		}
		info = entry.e.info;
		handle = info->handle;
		id = (char)entry.data[0];
		if (id != cases[c].id) {
			printf("FAIL: request of case %c, expected %c\n", id, cases[c].id);
			return 1;
		}
		printf("case %c: %s\n", id, cases[c].what);
		fflush(stdout);
		switch (id) {
		case 'A':
			ep = open_ep(s, info);
			MUST(fi_accept(ep, NULL, 0));
			expect_connected(s, ep);
			fi_freeinfo(info);
			MUST(fi_close(&ep->fid));
			break;
		case 'B':
			MUST(fi_reject(s->f.pep, handle, "no", 3));
			fi_freeinfo(info);
			break;
		case 'C':
			fi_freeinfo(info);
			MUST(fi_reject(s->f.pep, handle, NULL, 0));
			break;
		case 'D':
			ep = open_ep(s, info);
			MUST(fi_reject(s->f.pep, handle, NULL, 0));
			MUST(fi_close(&ep->fid));
			fi_freeinfo(info);
			break;
		case 'E':
			ep = open_ep(s, info);
			MUST(fi_close(&ep->fid));
			/* closing the endpoint refused it already: either answer */
			ret = fi_reject(s->f.pep, handle, NULL, 0);
			printf("  fi_reject after the close: %d\n", ret);
			fi_freeinfo(info);
			break;
		case 'F':
		case 'G':
			ep = open_ep(s, info);
			wait_file(gaveup);
			ret = fi_accept(ep, NULL, 0);
			printf("  fi_accept of a request the client gave up: %d (%s)\n", ret,
			       fi_strerror(-ret));
			if (!ret) {
				printf("FAIL: fi_accept succeeded on a withdrawn request\n");
				return 1;
			}
			if (id == 'F') {
				ret = fi_reject(s->f.pep, handle, NULL, 0);
				MUST(fi_close(&ep->fid));
			} else {
				MUST(fi_close(&ep->fid));
				ret = fi_reject(s->f.pep, handle, NULL, 0);
			}
			printf("  fi_reject: %d\n", ret);
			fi_freeinfo(info);
			break;
		case 'H':
			MUST(fi_close(handle));
			fi_freeinfo(info);
			break;
		case 'I':
			ep = open_ep(s, info);
			MUST(fi_accept(ep, NULL, 0));
			ret = fi_reject(s->f.pep, handle, NULL, 0);
			printf("  fi_reject after fi_accept: %d (%s)\n", ret, fi_strerror(-ret));
			if (!ret) {
				printf("FAIL: fi_reject of an accepted request succeeded\n");
				return 1;
			}
			expect_connected(s, ep);
			MUST(fi_close(&ep->fid));
			fi_freeinfo(info);
			break;
		case 'J':
			ep = open_ep(s, info);
			MUST(fi_accept(ep, NULL, 0));
			expect_connected(s, ep);
			ret = fi_close(handle);
			printf("  fi_close(handle) after fi_accept: %d\n", ret);
			MUST(fi_close(&ep->fid));
			fi_freeinfo(info);
			break;
		case 'K':
			ep = open_ep(s, info);
			fi_freeinfo(info);
			MUST(fi_accept(ep, NULL, 0));
			expect_connected(s, ep);
			MUST(fi_close(&ep->fid));
			break;
		case 'L':
			fi_freeinfo(info);
			break;
		case 'N':
			late = info;	/* after the passive endpoint's close */
			break;
		case 'O':
			held = info;
			held_ep = open_ep(s, info);
			break;
		case 'M':
			break;	/* still queued: closing the PEP drops it */
		case 'S':
			ep = open_ep(s, info);
			sleep(SLOW_ACCEPT_S);
			MUST(fi_accept(ep, NULL, 0));
			expect_connected(s, ep);
			fi_freeinfo(info);
			MUST(fi_close(&ep->fid));
			break;
		}
	}
	MUST(fi_close(&s->f.pep->fid));
	s->f.pep = NULL;
	if (late) {
		struct fid_ep *ep;
		int ret = fi_endpoint(s->f.domain, late, &ep, NULL);

		printf("case N: fi_endpoint after the listener's close: %d (%s)\n", ret,
		       fi_strerror(-ret));
		if (!ret) {
			printf("FAIL: fi_endpoint on a request its closed listener refused\n");
			return 1;
		}
		MUST(fi_close(late->handle));
		fi_freeinfo(late);
	}
	if (held) {
		MUST(fi_close(&held_ep->fid));
		MUST(fi_close(held->handle));
		fi_freeinfo(held);
		printf("case O: the endpoint and the handle closed after the listener\n");
	}
	printf("server: ok\n");
	return 0;
}

/* ------------------------------------------------------------ client */

static int client(struct side *s)
{
	struct fid_ep *later[8] = { NULL };
	int nlater = 0;
	char gaveup[4096];

	snprintf(gaveup, sizeof(gaveup), "%s/gaveup", s->sync);
	for (size_t k = 0; k < s->nrun; k++) {
		size_t c = s->run[k];
		struct fab_cm_event entry;
		struct fi_eq_err_entry err;
		uint8_t err_data[8] = { 0 };
		struct fid_ep *ep;
		char id = cases[c].id;

		if (cases[c].client == TIMEDOUT)
			setenv("FI_EFI_CONNECT_TIMEOUT", "1000", 1);
		ep = open_ep(s, s->f.info);
		MUST(fi_connect(ep, s->f.info->dest_addr, &id, 1));
		unsetenv("FI_EFI_CONNECT_TIMEOUT");
		switch (cases[c].client) {
		case CONNECTED:
			next_event(s, FI_CONNECTED, &ep->fid, &entry, NULL, NULL);
			/* the server closes its endpoint: we hear of it */
			next_event(s, FI_SHUTDOWN, &ep->fid, &entry, NULL, NULL);
			break;
		case REFUSED:
		case TIMEDOUT:
			next_event(s, 0, NULL, &entry, &err, err_data);
			if (err.fid != &ep->fid ||
			    err.err != (cases[c].client == REFUSED ? FI_ECONNREFUSED : FI_ETIMEDOUT)) {
				printf("FAIL: case %c: error %d (%s), expected %s\n", id, err.err,
				       fi_strerror(err.err),
				       cases[c].client == REFUSED ? "refused" : "timed out");
				return 1;
			}
			if (id == 'B' && (err.err_data_size != 3 || strcmp((char *)err_data, "no"))) {
				printf("FAIL: case B: the reject's data did not arrive\n");
				return 1;
			}
			if (cases[c].client == TIMEDOUT) {
				char why[128];
				FILE *f;

				printf("case %c: %s\n", id,
				       fi_eq_strerror(s->f.eq, err.prov_errno, err.err_data, why,
						      sizeof(why)));
				f = fopen(gaveup, "w");

				if (!f) {
					printf("FAIL: %s: %s\n", gaveup, strerror(errno));
					return 1;
				}
				fclose(f);
			}
			break;
		case LATER:
			later[nlater++] = ep;
			continue;
		}
		printf("case %c: as expected\n", id);
		MUST(fi_close(&ep->fid));
	}
	/* L, N, O and M: refused when the server closes its passive endpoint */
	for (int i = 0; i < nlater; i++) {
		struct fab_cm_event entry;
		struct fi_eq_err_entry err;
		uint8_t err_data[8];

		next_event(s, 0, NULL, &entry, &err, err_data);
		if (err.err != FI_ECONNREFUSED) {
			printf("FAIL: a request left to the server's close: error %d (%s)\n",
			       err.err, fi_strerror(err.err));
			return 1;
		}
	}
	for (int i = 0; i < nlater; i++)
		MUST(fi_close(&later[i]->fid));
	if (nlater)
		printf("cases L, N, O, M: refused at the server's close\n");
	printf("client: ok\n");
	return 0;
}

int main(int argc, char **argv)
{
	struct side s = { 0 };
	const char *ip, *port;
	bool is_server = fab_args(argc, argv, USAGE, &ip, &port);
	int first = is_server ? 3 : 4;	/* SYNCDIR */
	struct fi_info *h;
	int ret;

	if (argc <= first) {
		fprintf(stderr, "usage: %s\n", USAGE);
		return 2;
	}
	{
		const char *want = argc > first + 1 ? argv[first + 1] : DEFAULT_CASES;

		if (strlen(want) > sizeof(s.run) / sizeof(s.run[0])) {
			fprintf(stderr, "fab-connreq: too many cases\n");
			return 2;
		}
		s.nrun = pick(want, s.run);
	}
	s.sync = argv[first];
	h = fab_hints(FI_MSG, 0);
	fab_getinfo(&s.f, h, is_server, ip, port);
	fi_freeinfo(h);
	open_common(&s);
	ret = is_server ? server(&s) : client(&s);
	fab_close(&s.f);
	return ret;
}
