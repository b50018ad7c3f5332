/* SPDX-License-Identifier: MIT */
/*
 * MPI ping-pong between ranks 0 and 1 (tests/mpi/t-mpi-efi.sh): for every
 * size from MIN to MAX bytes (powers of 2 by default, 8 B … 16 MiB), ITERS
 * round trips (fewer for large sizes: as many as BUDGET bytes allow, at
 * least 3); every message received is checked byte by byte against a
 * pattern that depends on the size, the iteration and the direction, so a
 * stale or misplaced buffer fails.  Rank 0 prints, per size, the latency
 * (half a round trip, µs, median and minimum over the iterations) and the
 * bandwidth (bytes of one direction over half the total time).
 *
 *     mpi-pingpong [-i ITERS] [-m MIN] [-M MAX] [-s STEP] [-b BUDGET]
 *
 * Exit status: 0 when every byte of every message was right, 1 otherwise
 * (both ranks agree on the verdict through an MPI_Allreduce).  With
 * MPI_TEST_CORRUPT=1 in its environment, rank 1 flips one byte of one
 * message before answering it: the test uses this to prove that the check
 * can fail.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static unsigned char pattern(size_t size, int iter, int dir, size_t i)
{
	uint64_t x = (uint64_t)size * 2654435761u + (uint64_t)iter * 40503u +
		     (uint64_t)dir * 977u + i * 7u;

	return (unsigned char)(x ^ (x >> 11) ^ (i >> 8));
}

static void fill(unsigned char *buf, size_t size, int iter, int dir)
{
	for (size_t i = 0; i < size; i++)
		buf[i] = pattern(size, iter, dir, i);
}

/* Index of the first wrong byte, or size when all are right. */
static size_t check(const unsigned char *buf, size_t size, int iter, int dir)
{
	for (size_t i = 0; i < size; i++)
		if (buf[i] != pattern(size, iter, dir, i))
			return i;
	return size;
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
		fprintf(stderr, "mpi-pingpong: bad size '%s'\n", s);
		exit(2);
	}
	return (size_t)v;
}

int main(int argc, char **argv)
{
	int rank, nranks, iters = 20, step = 2, opt, bad = 0, anybad;
	size_t min = 8, max = 16u << 20, budget = 32u << 20;
	const char *corrupt = getenv("MPI_TEST_CORRUPT");
	int corrupted = 0;
	unsigned char *sbuf, *rbuf;
	double *rtt;

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
				fprintf(stderr, "usage: mpi-pingpong [-i ITERS] [-m MIN] [-M MAX] [-s STEP] [-b BUDGET]\n");
			MPI_Abort(MPI_COMM_WORLD, 2);
		}
	}
	if (nranks != 2 || iters < 1 || budget < 1 || step < 2 || min > max) {
		if (!rank)
			fprintf(stderr, "mpi-pingpong: needs exactly 2 ranks, ITERS >= 1, STEP >= 2, MIN <= MAX\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	sbuf = malloc(max);
	rbuf = malloc(max);
	rtt = calloc((size_t)iters, sizeof(*rtt));
	if (!sbuf || !rbuf || !rtt) {
		fprintf(stderr, "mpi-pingpong: out of memory for %zu bytes\n", max);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	if (!rank)
		printf("%10s %8s %12s %12s %12s\n", "bytes", "iters", "lat_us", "lat_min_us",
		       "MB/s");
	for (size_t size = min; size <= max; size *= (size_t)step) {
		double total = 0;
		size_t at;
		int n = iters;

		if ((size_t)n > budget / size)
			n = budget / size < 3 ? 3 : (int)(budget / size);
		if (n > iters)
			n = iters;
		/* one untimed round trip: connection set-up and first touch */
		for (int it = -1; it < n; it++) {
			int tag = it + 1;
			double t0;

			if (rank == 0) {
				fill(sbuf, size, it, 0);
				MPI_Barrier(MPI_COMM_WORLD);
				t0 = MPI_Wtime();
				MPI_Send(sbuf, (int)size, MPI_BYTE, 1, tag, MPI_COMM_WORLD);
				MPI_Recv(rbuf, (int)size, MPI_BYTE, 1, tag, MPI_COMM_WORLD,
					 MPI_STATUS_IGNORE);
				t0 = MPI_Wtime() - t0;
				if (it >= 0) {
					rtt[it] = t0;
					total += t0;
				}
				at = check(rbuf, size, it, 1);
			} else {
				fill(sbuf, size, it, 1);
				MPI_Barrier(MPI_COMM_WORLD);
				MPI_Recv(rbuf, (int)size, MPI_BYTE, 0, tag, MPI_COMM_WORLD,
					 MPI_STATUS_IGNORE);
				if (corrupt && *corrupt == '1' && !corrupted && it == n / 2) {
					sbuf[size / 2] ^= 0x5a;	/* the negative test */
					corrupted = 1;
				}
				MPI_Send(sbuf, (int)size, MPI_BYTE, 0, tag, MPI_COMM_WORLD);
				at = check(rbuf, size, it, 0);
			}
			if (at != size) {
				fprintf(stderr,
					"mpi-pingpong: rank %d: size %zu iteration %d: byte %zu is 0x%02x, expected 0x%02x\n",
					rank, size, it, at, rbuf[at],
					pattern(size, it, !rank, at));
				bad = 1;
			}
		}
		if (!rank) {
			qsort(rtt, (size_t)n, sizeof(*rtt), cmp_double);
			printf("%10zu %8d %12.2f %12.2f %12.2f\n", size, n,
			       rtt[n / 2] / 2 * 1e6, rtt[0] / 2 * 1e6,
			       (double)size * n / (total / 2) / 1e6);
			fflush(stdout);
		}
		if (size > max / (size_t)step)
			break;
	}
	MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	if (!rank)
		printf("%s\n", anybad ? "FAILED: data mismatch" : "OK: every byte checked");
	free(rtt);
	free(rbuf);
	free(sbuf);
	MPI_Finalize();
	return anybad ? 1 : 0;
}
