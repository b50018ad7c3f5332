/* SPDX-License-Identifier: MIT */
/*
 * lossy-test: the command line, and what the modes share (see lossy.h).
 */
#include "config.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/lossy/lossy.h"

static const struct {
	const char *name;
	lossy_mode_fn *fn;
	const char *what;
} modes[] = {
	{ "integrity", lossy_integrity, "every opcode, random sizes, order/dup/checksums checked" },
	{ "bulk", lossy_bulk, "RDMA Write streams: completion gaps, shares, Jain index" },
	{ "pingpong", lossy_pingpong, "Send ping-pong: latency percentiles, longest round trip" },
	{ "retry", lossy_retry, "Writes into a dead network: RETRY_EXC_ERR, then flushes" },
};

uint64_t lossy_mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

double lossy_quantile(double *v, size_t n, double q)
{
	size_t i;

	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_double);
	i = (size_t)(q * (double)(n - 1) + 0.5);
	return v[i < n ? i : n - 1];
}

void lossy_started(void)
{
	struct timespec ts;

	/* the wall clock, so that a script can say when, in this process's
	 * time, it broke the network */
	clock_gettime(CLOCK_REALTIME, &ts);
	printf("STARTED epoch=%.3f\n", (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9);
	fflush(stdout);
}

struct dp_qp_cfg lossy_qp_cfg(const struct lossy_opts *o, uint32_t wrs, size_t buf_size)
{
	struct dp_qp_cfg cfg = { 0 };

	cfg.max_send_wr = wrs;
	cfg.max_recv_wr = wrs;
	cfg.buf_size = buf_size;
	cfg.timeout = o->qp_timeout;
	cfg.retry_cnt = o->retry_cnt;
	/* RNR is flow control, not failure: retry it forever (7) */
	cfg.rnr_retry = 7;
	cfg.rnr_retry_set = true;
	return cfg;
}

void lossy_print_counters(const char *who, struct efi_qp *qp)
{
	struct efi_counters c;

	if (efi_query_qp_counters(qp, &c) != 0)
		return;	/* also called on the way out of a failure */
	printf("COUNTERS %s qp %u: tx_packets=%" PRIu64 " rx_packets=%" PRIu64
	       " retransmissions=%" PRIu64 " timeouts=%" PRIu64 " duplicates=%" PRIu64
	       " seq_naks_sent=%" PRIu64 " seq_naks_received=%" PRIu64 " rnr_naks_received=%" PRIu64
	       " drops=%" PRIu64 " (out_of_window=%" PRIu64 " qp_state=%" PRIu64 " bad_source=%" PRIu64
	       " bad_key=%" PRIu64 ") fast_retransmits=%" PRIu64 " tail_probes=%" PRIu64 " paths=%u\n",
	       who, qp->qp_num, c.tx_packets, c.rx_packets, c.retransmissions, c.timeouts,
	       c.duplicates, c.seq_naks_sent, c.seq_naks_received, c.rnr_naks_received, c.drops,
	       c.drop_reasons[EFI_DROP_OUT_OF_WINDOW], c.drop_reasons[EFI_DROP_QP_STATE],
	       c.drop_reasons[EFI_DROP_BAD_SOURCE], c.drop_reasons[EFI_DROP_BAD_KEY],
	       c.fast_retransmits, c.tail_probes, c.num_paths);
	/* how each path fared: which were avoided and how often */
	for (unsigned i = 0; i < c.num_paths && i < EFI_COUNTERS_PATHS; i++)
		printf("PATH %s qp %u path %u: %s rtt_min_us=%.1f srtt_us=%.1f cwnd=%.2f inflight=%" PRIu64
		       " retransmissions=%" PRIu64 " suspected=%" PRIu64 " restored=%" PRIu64 " peer_lane=%u\n",
		       who, qp->qp_num, i, c.paths[i].active ? "active" : "suspect",
		       c.paths[i].rtt_min_ns / 1e3, c.paths[i].rtt_smoothed_ns / 1e3,
		       c.paths[i].cwnd_milli / 1e3, c.paths[i].inflight, c.paths[i].retransmissions,
		       c.paths[i].suspected, c.paths[i].restored, c.paths[i].peer_lane);
	fflush(stdout);
}

void lossy_print_context_counters(const char *who, struct efi_context *ctx)
{
	struct efi_counters c;

	if (efi_query_context_counters(ctx, &c) != 0)
		return;
	printf("CONTEXT %s: rx_packets=%" PRIu64 " drops=%" PRIu64, who, c.rx_packets, c.drops);
	for (int r = 0; r < EFI_DROP_REASON_COUNT; r++)
		printf(" %d=%" PRIu64, r, c.drop_reasons[r]);
	printf(" (enum efi_drop_reason)\n");
	fflush(stdout);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: lossy-test server MODE [options]\n"
		   "       lossy-test client MODE SERVER-ADDRESS [options]\n"
		   "       lossy-test list | build\n"
		   "options: -p PORT  --timeout S (longest wait for one completion)\n"
		   "         --messages N --seed N --window N --max-size B (integrity)\n"
		   "         --qps N --size B --seconds S --warmup S (bulk, pingpong, retry)\n"
		   "         --qp-timeout T --retry-cnt N (the QP's, verbs encoding)\n"
		   "         --gap-limit-ms MS (fail when completions pause longer)\n");
}

static uint64_t parse_u64(const char *what, const char *s, uint64_t min, uint64_t max)
{
	char *end;
	unsigned long long v;

	v = strtoull(s, &end, 0);
	if (!*s || *end || v < min || v > max) {
		fprintf(stderr, "lossy-test: %s '%s': an integer in %" PRIu64 " … %" PRIu64 "\n", what, s,
			min, max);
		exit(2);
	}
	return v;
}

static double parse_seconds(const char *what, const char *s)
{
	char *end;
	double v = strtod(s, &end);

	if (!*s || *end || !(v >= 0 && v <= 86400)) {
		fprintf(stderr, "lossy-test: %s '%s': a number of seconds\n", what, s);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	enum { O_TIMEOUT = 256, O_MESSAGES, O_SEED, O_WINDOW, O_MAXSIZE, O_SIZE, O_QPS, O_SECONDS,
	       O_WARMUP, O_QPTIMEOUT, O_RETRY, O_GAP };
	static const struct option longopts[] = {
		{ "port", required_argument, NULL, 'p' },
		{ "timeout", required_argument, NULL, O_TIMEOUT },
		{ "messages", required_argument, NULL, O_MESSAGES },
		{ "seed", required_argument, NULL, O_SEED },
		{ "window", required_argument, NULL, O_WINDOW },
		{ "max-size", required_argument, NULL, O_MAXSIZE },
		{ "size", required_argument, NULL, O_SIZE },
		{ "qps", required_argument, NULL, O_QPS },
		{ "seconds", required_argument, NULL, O_SECONDS },
		{ "warmup", required_argument, NULL, O_WARMUP },
		{ "qp-timeout", required_argument, NULL, O_QPTIMEOUT },
		{ "retry-cnt", required_argument, NULL, O_RETRY },
		{ "gap-limit-ms", required_argument, NULL, O_GAP },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct lossy_opts o = {
		.dp = { .port = LOSSY_DEFAULT_PORT, .timeout = 30 },
		.messages = 1000000, .seed = 1, .window = 128, .max_size = 1u << 20,
		.size = 65536, .qps = 1, .seconds = 5, .warmup = 1, .qp_timeout = 14, .retry_cnt = 7,
	};
	struct dp_side side;
	lossy_mode_fn *fn = NULL;
	int c;

	while ((c = getopt_long(argc, argv, "p:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'p': o.dp.port = (uint16_t)parse_u64("port", optarg, 1, 65535); break;
		case O_TIMEOUT: o.dp.timeout = parse_seconds("timeout", optarg); break;
		case O_MESSAGES: o.messages = parse_u64("messages", optarg, 1, UINT64_MAX >> 8); break;
		case O_SEED: o.seed = parse_u64("seed", optarg, 0, UINT64_MAX); break;
		case O_WINDOW: o.window = (uint32_t)parse_u64("window", optarg, 4, 1024); break;
		case O_MAXSIZE: o.max_size = (uint32_t)parse_u64("max-size", optarg, 64, 64u << 20); break;
		case O_SIZE: o.size = (uint32_t)parse_u64("size", optarg, 0, 64u << 20); break;
		case O_QPS: o.qps = (int)parse_u64("qps", optarg, 1, 64); break;
		case O_SECONDS: o.seconds = parse_seconds("seconds", optarg); break;
		case O_WARMUP: o.warmup = parse_seconds("warmup", optarg); break;
		case O_QPTIMEOUT: o.qp_timeout = (uint8_t)parse_u64("qp-timeout", optarg, 1, 31); break;
		case O_RETRY: o.retry_cnt = (uint8_t)parse_u64("retry-cnt", optarg, 0, 7); break;
		case O_GAP: o.gap_limit_ms = parse_seconds("gap-limit-ms", optarg); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc && !strcmp(argv[optind], "list")) {
		for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
			printf("%-10s %s\n", modes[i].name, modes[i].what);
		return 0;
	}
	/* which build this is: the scripts size their runs by it */
	if (optind < argc && !strcmp(argv[optind], "build")) {
#if defined(__SANITIZE_ADDRESS__)
		printf("sanitize\n");
#else
		printf("normal\n");
#endif
		return 0;
	}
	if (argc - optind < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[optind], "server")) {
		o.dp.server = true;
	} else if (strcmp(argv[optind], "client") || argc - optind < 3) {
		usage(stderr);
		return 2;
	}
	o.mode = o.dp.case_name = argv[optind + 1];
	if (!o.dp.server)
		o.dp.host = argv[optind + 2];
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		if (!strcmp(modes[i].name, o.mode))
			fn = modes[i].fn;
	if (!fn) {
		fprintf(stderr, "lossy-test: no mode '%s' (lossy-test list)\n", o.mode);
		return 2;
	}
	if (o.warmup >= o.seconds && !strcmp(o.mode, "bulk")) {
		fprintf(stderr, "lossy-test: --warmup must be shorter than --seconds\n");
		return 2;
	}
	dp_case = o.mode;
	dp_set_timeout(o.dp.timeout);
	dp_side_open(&side, &o.dp);
	fn(&side, &o);
	dp_sync(&side, "end");
	dp_side_close(&side);
	printf("PASS %s (%s)\n", o.mode, o.dp.server ? "server" : "client");
	return 0;
}
