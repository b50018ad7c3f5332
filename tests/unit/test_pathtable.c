/* SPDX-License-Identifier: MIT */
/*
 * The path table (common/pathtable.h, efid/path_table.c,
 * libefi/path_table.c): the sealed memfd efid makes and the read-only
 * descriptor a client gets; the sequence count under a writer thread (a
 * reader never sees a torn publication); hostile pages (magic, version,
 * size, lane counts, states) ignored without a crash; and libefi's use:
 * a lane published down suspects its path at once and keeps it from
 * probes and re-admission, up again probes it at once.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "efid/path_table.h"
#include "libefi/efi_int.h"
#include "pathtable.h"

static int memfd_with(const struct efi_pathtable *t, size_t size)
{
	int fd = memfd_create("t", MFD_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, (off_t)size), 0);
	if (t)
		ck_assert_int_eq(pwrite(fd, t, sizeof(*t) < size ? sizeof(*t) : size, 0),
				 (ssize_t)(sizeof(*t) < size ? sizeof(*t) : size));
	return fd;
}

static struct efi_pathtable good_page(unsigned nlanes)
{
	struct efi_pathtable t;
	memset(&t, 0, sizeof(t));
	t.magic = EFI_PATHTABLE_MAGIC;
	t.version = EFI_PATHTABLE_VERSION;
	t.size = EFI_PATHTABLE_SIZE;
	t.nlanes = nlanes;
	return t;
}

START_TEST(efid_table_sealed_and_read_only)
{
	struct efid_pathtable *t = NULL;
	uint8_t st[EFI_PATHTABLE_MAX_LANES];
	uint32_t ch[EFI_PATHTABLE_MAX_LANES], seq, n;

	ck_assert_int_eq(efid_pathtable_create(0, &t), -EINVAL);
	ck_assert_int_eq(efid_pathtable_create(EFI_PATHTABLE_MAX_LANES + 1, &t), -EINVAL);
	ck_assert_int_eq(efid_pathtable_create(4, &t), 0);
	int fd = efid_pathtable_reader_fd(t);
	ck_assert_int_ge(fd, 0);
	/* Read-only: no writable mapping, no write, no resize. */
	ck_assert_ptr_eq(mmap(NULL, EFI_PATHTABLE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0),
			 MAP_FAILED);
	ck_assert_int_lt(write(fd, "x", 1), 0);
	ck_assert_int_lt(ftruncate(fd, 0), 0);
	const struct efi_pathtable *m = mmap(NULL, EFI_PATHTABLE_SIZE, PROT_READ, MAP_SHARED, fd, 0);
	ck_assert_ptr_ne(m, MAP_FAILED);
	close(fd);
	ck_assert(efi_pathtable_valid(m, EFI_PATHTABLE_SIZE));
	ck_assert(!efi_pathtable_valid(m, sizeof(*m) - 1));

	ck_assert_int_eq(efi_pathtable_read(m, &seq, &n, st, ch), 0);
	ck_assert_uint_eq(n, 4);
	ck_assert_uint_eq(seq, 0);
	for (unsigned i = 0; i < 4; i++)
		ck_assert_uint_eq(st[i], EFI_PT_UNKNOWN);

	ck_assert(efid_pathtable_set(t, 1, 7, "up1", EFI_PT_UP));
	ck_assert(!efid_pathtable_set(t, 1, 7, "up1", EFI_PT_UP)); /* no change, no publication */
	ck_assert(efid_pathtable_set(t, 1, 7, "up1", EFI_PT_DOWN));
	ck_assert(!efid_pathtable_set(t, 9, 7, "up9", EFI_PT_DOWN)); /* out of range: ignored */
	ck_assert_int_eq(efi_pathtable_read(m, &seq, &n, st, ch), 0);
	ck_assert_uint_eq(seq, 4); /* two publications, even */
	ck_assert_uint_eq(m->generation, 2);
	ck_assert_uint_eq(st[1], EFI_PT_DOWN);
	ck_assert_uint_eq(ch[1], 2);
	ck_assert_uint_eq(m->lane[1].ifindex, 7);
	ck_assert_str_eq(m->lane[1].ifname, "up1");
	uint32_t changes;
	ck_assert_int_eq(efid_pathtable_get(t, 1, &changes), EFI_PT_DOWN);
	ck_assert_uint_eq(changes, 2);
	/* The page outlives efid's handle, as it outlives efid. */
	efid_pathtable_free(t);
	ck_assert_uint_eq(m->lane[1].state, EFI_PT_DOWN);
	munmap((void *)m, EFI_PATHTABLE_SIZE);
	efid_pathtable_free(NULL);
}
END_TEST

/* ---- the sequence count under a writer -------------------------------- */

struct race {
	struct efi_pathtable *t;
	volatile int stop;
	unsigned long writes;
};

/* Every publication sets all lanes alike (state and change count): a
 * reader that ever sees them differ saw a torn one. */
static void *writer(void *arg)
{
	struct race *r = arg;
	uint32_t k = 0;

	while (!__atomic_load_n(&r->stop, __ATOMIC_RELAXED)) {
		k++;
		efi_pathtable_write_begin(r->t);
		for (unsigned i = 0; i < EFI_PATHTABLE_MAX_LANES; i++) {
			__atomic_store_n(&r->t->lane[i].state, k & 1 ? EFI_PT_DOWN : EFI_PT_UP,
					 __ATOMIC_RELAXED);
			__atomic_store_n(&r->t->lane[i].changes, k, __ATOMIC_RELAXED);
		}
		efi_pathtable_write_end(r->t);
		r->writes++;
		/* A moment between writes, as efid's are far apart: a writer
		 * that spent nearly all its time inside the section left the
		 * reader nothing but EAGAIN on a loaded machine (good == 0 in
		 * 200,000 reads), which proves nothing about tearing. */
		for (int j = 0; j < 256; j++)
			__asm__ volatile("" ::: "memory");
	}
	return NULL;
}

START_TEST(seqlock_never_torn)
{
	static struct efi_pathtable page;
	struct race r = { .t = &page };
	pthread_t th;
	unsigned long good = 0, busy = 0;

	page = good_page(EFI_PATHTABLE_MAX_LANES);
	ck_assert_int_eq(pthread_create(&th, NULL, writer, &r), 0);
	for (int i = 0; i < 200000; i++) {
		uint8_t st[EFI_PATHTABLE_MAX_LANES];
		uint32_t ch[EFI_PATHTABLE_MAX_LANES], seq, n;
		int rc = efi_pathtable_read(&page, &seq, &n, st, ch);
		if (rc == -EAGAIN) {
			busy++;
			continue;
		}
		ck_assert_int_eq(rc, 0);
		ck_assert_uint_eq(seq & 1, 0);
		ck_assert_uint_eq(n, EFI_PATHTABLE_MAX_LANES);
		for (unsigned l = 1; l < n; l++) {
			ck_assert_uint_eq(st[l], st[0]);
			ck_assert_uint_eq(ch[l], ch[0]);
		}
		ck_assert_uint_eq(st[0], ch[0] == 0 ? EFI_PT_UNKNOWN
					 : ch[0] & 1 ? EFI_PT_DOWN : EFI_PT_UP);
		good++;
	}
	__atomic_store_n(&r.stop, 1, __ATOMIC_RELAXED);
	pthread_join(th, NULL);
	ck_assert_uint_gt(good, 0);
	ck_assert_uint_gt(r.writes, 0);
}
END_TEST

/* ---- hostile pages ------------------------------------------------------ */

START_TEST(hostile_headers_ignored)
{
	struct efi_pathtable t = good_page(2);
	ck_assert(efi_pathtable_valid(&t, EFI_PATHTABLE_SIZE));
	t.magic ^= 1;
	ck_assert(!efi_pathtable_valid(&t, EFI_PATHTABLE_SIZE));
	t = good_page(2);
	t.version = EFI_PATHTABLE_VERSION + 1;
	ck_assert(!efi_pathtable_valid(&t, EFI_PATHTABLE_SIZE));
	t = good_page(2);
	t.size = 16;
	ck_assert(!efi_pathtable_valid(&t, EFI_PATHTABLE_SIZE));
	t = good_page(2);
	t.size = 1u << 30; /* claims more than the reader mapped */
	ck_assert(!efi_pathtable_valid(&t, EFI_PATHTABLE_SIZE));
	ck_assert(!efi_pathtable_valid(NULL, EFI_PATHTABLE_SIZE));
}
END_TEST

START_TEST(hostile_lanes_ignored)
{
	struct efi_pathtable t = good_page(EFI_PATHTABLE_MAX_LANES + 1);
	uint8_t st[EFI_PATHTABLE_MAX_LANES];
	uint32_t seq, n;

	ck_assert_int_eq(efi_pathtable_read(&t, &seq, &n, st, NULL), -EINVAL);
	t.nlanes = UINT32_MAX;
	ck_assert_int_eq(efi_pathtable_read(&t, &seq, &n, st, NULL), -EINVAL);
	/* A writer that never finishes: the reader gives up, does not hang. */
	t = good_page(2);
	t.seq = 3;
	ck_assert_int_eq(efi_pathtable_read(&t, &seq, &n, st, NULL), -EAGAIN);
	/* States out of range read as unknown. */
	t = good_page(2);
	t.lane[0].state = 77;
	t.lane[1].state = EFI_PT_DOWN;
	ck_assert_int_eq(efi_pathtable_read(&t, &seq, &n, st, NULL), 0);
	ck_assert_uint_eq(st[0], EFI_PT_UNKNOWN);
	ck_assert_uint_eq(st[1], EFI_PT_DOWN);
}
END_TEST

/* ---- libefi's use ------------------------------------------------------- */

struct fixture {
	struct efi_context_int *ctx;
	struct efi_qp_int *qp;
};

static struct fixture fixture(unsigned npaths)
{
	struct fixture f;
	f.ctx = calloc(1, sizeof(*f.ctx));
	f.qp = calloc(1, sizeof(*f.qp));
	ck_assert_ptr_nonnull(f.ctx);
	ck_assert_ptr_nonnull(f.qp);
	efi_cc_params_default(&f.ctx->ccp);
	f.qp->ctx = f.ctx;
	f.qp->npaths = npaths;
	for (unsigned i = 0; i < npaths; i++)
		efi_path_init(&f.qp->paths[i], &f.ctx->ccp, 1000);
	/* nothing in flight: efi_retx_path_down has nothing to move */
	return f;
}

static void fixture_free(struct fixture *f)
{
	efi_pt_detach(f->ctx);
	free(f->qp);
	free(f->ctx);
}

START_TEST(libefi_refuses_hostile_pages)
{
	struct fixture f = fixture(4);
	struct efi_pathtable t = good_page(4);

	t.magic = 0;
	ck_assert_int_eq(efi_pt_attach(f.ctx, memfd_with(&t, EFI_PATHTABLE_SIZE)), -EPROTO);
	ck_assert_ptr_null(f.ctx->pt.map);
	t = good_page(4);
	t.version = 99;
	ck_assert_int_eq(efi_pt_attach(f.ctx, memfd_with(&t, EFI_PATHTABLE_SIZE)), -EPROTO);
	/* A file too short to map whole (it would fault on read). */
	t = good_page(4);
	ck_assert_int_eq(efi_pt_attach(f.ctx, memfd_with(&t, 64)), -EPROTO);
	ck_assert_int_eq(efi_pt_attach(f.ctx, -1), -EBADF);
	ck_assert_ptr_null(f.ctx->pt.map);
	/* A page whose lane count goes bad later is dropped, the QP untouched. */
	t = good_page(4);
	int fd = memfd_with(&t, EFI_PATHTABLE_SIZE);
	struct efi_pathtable *w = mmap(NULL, EFI_PATHTABLE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ck_assert_ptr_ne(w, MAP_FAILED);
	ck_assert_int_eq(efi_pt_attach(f.ctx, fd), 0);
	w->nlanes = 1000;
	efi_pt_check(f.ctx, f.qp, 2000);
	ck_assert_ptr_null(f.ctx->pt.map);
	ck_assert_uint_eq(f.ctx->pt.broken, 1);
	for (unsigned i = 0; i < 4; i++)
		ck_assert_int_eq(f.qp->paths[i].state, EFI_PATH_ACTIVE);
	munmap(w, EFI_PATHTABLE_SIZE);
	fixture_free(&f);
}
END_TEST

START_TEST(lane_down_suspects_up_probes)
{
	struct fixture f = fixture(4);
	struct efid_pathtable *t = NULL;
	uint64_t now = 5000000;

	ck_assert_int_eq(efid_pathtable_create(4, &t), 0);
	for (unsigned l = 0; l < 4; l++)
		efid_pathtable_set(t, l, 3 + l % 2, l % 2 ? "up1" : "up0", EFI_PT_UP);
	ck_assert_int_eq(efi_pt_attach(f.ctx, efid_pathtable_reader_fd(t)), 0);
	efi_pt_check(f.ctx, f.qp, now);
	for (unsigned i = 0; i < 4; i++)
		ck_assert_int_eq(f.qp->paths[i].state, EFI_PATH_ACTIVE);

	/* up0 (lanes 0 and 2) goes down */
	efid_pathtable_set(t, 0, 3, "up0", EFI_PT_DOWN);
	efid_pathtable_set(t, 2, 3, "up0", EFI_PT_DOWN);
	efi_pt_check(f.ctx, f.qp, ++now);
	ck_assert_int_eq(f.qp->paths[0].state, EFI_PATH_SUSPECT);
	ck_assert_int_eq(f.qp->paths[2].state, EFI_PATH_SUSPECT);
	ck_assert_int_eq(f.qp->paths[1].state, EFI_PATH_ACTIVE);
	ck_assert_uint_eq(f.qp->paths[0].suspected, 1);
	/* avoided by the path choice, no probes, no re-admission by a late answer */
	int pick = efi_paths_pick(f.qp->paths, 4, now);
	ck_assert(pick == 1 || pick == 3);
	ck_assert(!efi_path_probe_due(&f.qp->paths[0], now + 1000000000ull));
	ck_assert(!efi_path_on_answer(&f.qp->paths[0], &f.ctx->ccp, 1000, now));
	ck_assert_int_eq(f.qp->paths[0].state, EFI_PATH_SUSPECT);
	/* nothing new: the same check is one load and does nothing */
	uint64_t refreshes = f.ctx->pt.refreshes;
	efi_pt_check(f.ctx, f.qp, ++now);
	ck_assert_uint_eq(f.ctx->pt.refreshes, refreshes);

	/* up again: probed at once, re-admitted by the probe's answer */
	efid_pathtable_set(t, 0, 3, "up0", EFI_PT_UP);
	efid_pathtable_set(t, 2, 3, "up0", EFI_PT_UP);
	efi_pt_check(f.ctx, f.qp, ++now);
	ck_assert(efi_path_probe_due(&f.qp->paths[0], now));
	ck_assert(efi_path_on_answer(&f.qp->paths[0], &f.ctx->ccp, 1000, now));
	ck_assert_int_eq(f.qp->paths[0].state, EFI_PATH_ACTIVE);
	ck_assert_uint_eq(f.qp->paths[0].restored, 1);

	/* a QP whose paths were set up again acts on what is down now */
	efid_pathtable_set(t, 1, 4, "up1", EFI_PT_DOWN);
	efi_pt_check(f.ctx, f.qp, ++now);
	ck_assert_int_eq(f.qp->paths[1].state, EFI_PATH_SUSPECT);
	for (unsigned i = 0; i < 4; i++)
		efi_path_init(&f.qp->paths[i], &f.ctx->ccp, now);
	efi_pt_qp_reset(f.ctx, f.qp);
	efi_pt_check(f.ctx, f.qp, ++now);
	ck_assert_int_eq(f.qp->paths[1].state, EFI_PATH_SUSPECT);

	/* one path: left alone, there is nowhere else to go */
	struct fixture g = fixture(1);
	efid_pathtable_set(t, 0, 3, "up0", EFI_PT_DOWN);
	ck_assert_int_eq(efi_pt_attach(g.ctx, efid_pathtable_reader_fd(t)), 0);
	efi_pt_check(g.ctx, g.qp, ++now);
	ck_assert_int_eq(g.qp->paths[0].state, EFI_PATH_ACTIVE);
	fixture_free(&g);
	efid_pathtable_free(t);
	fixture_free(&f);
}
END_TEST

/* Responses (ACKs) to a path whose uplink is down leave by another lane. */
START_TEST(responses_avoid_down_lanes)
{
	struct efi_pt pt = { .down = 0 };

	ck_assert_uint_eq(efi_pt_response_lane(&pt, 2, 4), 2);
	pt.down = 1u << 0 | 1u << 2;
	ck_assert_uint_eq(efi_pt_response_lane(&pt, 0, 4), 1);
	ck_assert_uint_eq(efi_pt_response_lane(&pt, 2, 4), 3);
	ck_assert_uint_eq(efi_pt_response_lane(&pt, 3, 4), 3);
	pt.down = 0xf;
	ck_assert_uint_eq(efi_pt_response_lane(&pt, 1, 4), 1); /* all down: unchanged */
	pt.down = 1;
	ck_assert_uint_eq(efi_pt_response_lane(&pt, 0, 1), 0); /* one lane: unchanged */
}
END_TEST

int main(void)
{
	Suite *s = suite_create("pathtable");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, efid_table_sealed_and_read_only);
	tcase_add_test(tc, seqlock_never_torn);
	tcase_add_test(tc, hostile_headers_ignored);
	tcase_add_test(tc, hostile_lanes_ignored);
	tcase_add_test(tc, libefi_refuses_hostile_pages);
	tcase_add_test(tc, lane_down_suspects_up_probes);
	tcase_add_test(tc, responses_avoid_down_lanes);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
