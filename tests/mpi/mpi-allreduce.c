/* SPDX-License-Identifier: MIT */
/*
 * MPI_Allreduce (MPI_SUM) over all ranks (tests/mpi/t-mpi-efi.sh), for
 * vectors of 8 B … 16 MiB (powers of 2 by default), alternately of int64
 * and of double, ITERS calls each (fewer for large sizes: as many as
 * BUDGET bytes allow, at least 3).  Element i of rank r in iteration k holds a value whose
 * sum over the ranks is known in closed form; the doubles are small
 * integers, exactly representable, so the sums are exact whatever order
 * the reduction adds them in.  Every element of every result is checked.
 * Rank 0 prints, per size, the median and minimum time of one call.
 *
 *     mpi-allreduce [-i ITERS] [-m MIN] [-M MAX] [-s STEP] [-b BUDGET]
 *
 * Exit status: 0 when every element of every result was right, 1
 * otherwise (all ranks agree through a last MPI_Allreduce).  With
 * MPI_TEST_CORRUPT=1, the last rank adds 1 to one element of its
 * contribution once: the test uses this to prove that the check can fail.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Contribution of rank r to element i in iteration k: small enough that
 * the sum over 2^10 ranks stays below 2^53 (exact as a double). */
static int64_t value(int r, size_t i, int k)
{
	return (int64_t)((i * 31u + (size_t)k * 7u) % 100003u) + (int64_t)r * 3 - 1;
}

/* Sum over ranks 0..n-1 of value(r, i, k). */
static int64_t expected(int n, size_t i, int k)
{
	return ((int64_t)((i * 31u + (size_t)k * 7u) % 100003u) - 1) * n +
	       (int64_t)3 * n * (n - 1) / 2;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static size_t parse_size(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 0);

	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	default: break;
	}
	if (*end || !v) {
		fprintf(stderr, "mpi-allreduce: bad size '%s'\n", s);
		exit(2);
	}
	return (size_t)v;
}

int main(int argc, char **argv)
{
	int rank, nranks, iters = 10, step = 2, opt, bad = 0, anybad;
	size_t min = 8, max = 16u << 20, budget = 32u << 20;
	const char *corrupt = getenv("MPI_TEST_CORRUPT");
	int corrupted = 0;
	void *in, *out;
	double *t;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	while ((opt = getopt(argc, argv, "i:m:M:s:b:")) != -1) {
		switch (opt) {
		case 'i': iters = atoi(optarg); break;
		case 'm': min = parse_size(optarg); break;
		case 'M': max = parse_size(optarg); break;
		case 's': step = atoi(optarg); break;
		case 'b': budget = parse_size(optarg); break;
		default:
			if (!rank)
				fprintf(stderr, "usage: mpi-allreduce [-i ITERS] [-m MIN] [-M MAX] [-s STEP] [-b BUDGET]\n");
			MPI_Abort(MPI_COMM_WORLD, 2);
		}
	}
	if (iters < 1 || budget < 1 || step < 2 || min < 8 || min > max || nranks > 1024) {
		if (!rank)
			fprintf(stderr, "mpi-allreduce: needs ITERS >= 1, STEP >= 2, 8 <= MIN <= MAX, at most 1024 ranks\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	in = malloc(max);
	out = malloc(max);
	t = calloc((size_t)iters, sizeof(*t));
	if (!in || !out || !t) {
		fprintf(stderr, "mpi-allreduce: out of memory for %zu bytes\n", max);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	if (!rank)
		printf("%10s %6s %8s %12s %12s\n", "bytes", "type", "iters", "time_us",
		       "time_min_us");
	for (size_t size = min, n = 0; size <= max; size *= (size_t)step, n++) {
		int dbl = n & 1;	/* int64 and double by turns */
		size_t count = size / 8;
		int m = iters;

		if ((size_t)m > budget / size)
			m = budget / size < 3 ? 3 : (int)(budget / size);
		if (m > iters)
			m = iters;
		for (int it = -1; it < m; it++) {
			int64_t *li = in, *lo = out;
			double *di = in, *dout = out, t0;

			for (size_t i = 0; i < count; i++) {
				int64_t v = value(rank, i, it);

				if (dbl)
					di[i] = (double)v;
				else
					li[i] = v;
			}
			if (corrupt && *corrupt == '1' && !corrupted && rank == nranks - 1 &&
			    it == m / 2) {
				if (dbl)
					di[count / 2] += 1;	/* the negative test */
				else
					li[count / 2] += 1;
				corrupted = 1;
			}
			memset(out, 0xee, size);
			MPI_Barrier(MPI_COMM_WORLD);
			t0 = MPI_Wtime();
			MPI_Allreduce(in, out, (int)count, dbl ? MPI_DOUBLE : MPI_INT64_T, MPI_SUM,
				      MPI_COMM_WORLD);
			if (it >= 0)
				t[it] = MPI_Wtime() - t0;
			for (size_t i = 0; i < count; i++) {
				int64_t want = expected(nranks, i, it);
				int ok = dbl ? dout[i] == (double)want : lo[i] == want;

				if (!ok) {
					if (dbl)
						fprintf(stderr, "mpi-allreduce: rank %d: %zu bytes (double) iteration %d: element %zu is %.17g, expected %lld\n",
							rank, size, it, i, dout[i], (long long)want);
					else
						fprintf(stderr, "mpi-allreduce: rank %d: %zu bytes (int64) iteration %d: element %zu is %lld, expected %lld\n",
							rank, size, it, i, (long long)lo[i], (long long)want);
					bad = 1;
					break;
				}
			}
		}
		if (!rank) {
			qsort(t, (size_t)m, sizeof(*t), cmp_double);
			printf("%10zu %6s %8d %12.2f %12.2f\n", size, dbl ? "double" : "int64", m,
			       t[m / 2] * 1e6, t[0] * 1e6);
			fflush(stdout);
		}
		if (size > max / (size_t)step)
			break;
	}
	MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	if (!rank)
		printf("%s\n", anybad ? "FAILED: wrong sums" : "OK: every element checked");
	free(t);
	free(out);
	free(in);
	MPI_Finalize();
	return anybad ? 1 : 0;
}
