/* SPDX-License-Identifier: MIT */
/*
 * efi-perf: latency and bandwidth of EFI verbs between two processes, in the
 * manner of perftest (ib_send_lat, ib_write_bw …).  The server is started
 * without a host, the client with the server's address; they exchange QP
 * numbers, PSNs, GIDs and buffer keys over TCP, connect one or more RC QPs
 * and run the test.  See docs/efi-perf.md.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tools/efi-perf/perf.h"

static const char *const verb_names[] = {
	[PERF_SEND] = "send", [PERF_WRITE] = "write", [PERF_READ] = "read", [PERF_ATOMIC] = "atomic",
};

const char *perf_verb_name(enum perf_verb verb)
{
	return verb_names[verb];
}

void perf_die(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs("efi-perf: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static struct perf_ctx *closing_pc;

/* The peer went away: for up to 0.2 s, look whether our own QPs are failing
 * too (perf_poll dies on an error completion, naming it). */
static void local_errors_first(void)
{
	struct efi_wc wc[16];
	double until = perf_now() + 0.2;

	while (closing_pc && perf_now() < until)
		for (int q = 0; q < closing_pc->num_qps; q++)
			perf_poll(closing_pc, &closing_pc->qps[q], wc, 16, false);
}

double perf_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void usage(FILE *out)
{
	fputs("Usage: efi-perf TEST [options] [HOST]\n"
	      "  TEST: send_lat write_lat read_lat atomic_lat send_bw write_bw read_bw atomic_bw\n"
	      "  Without HOST: the server (waits for a client).  With HOST: the client.\n"
	      "\n"
	      "  -d, --device=DEV       EFI device (interface) to use (default: the first)\n"
	      "  -s, --size=BYTES       message size (default 2 for latency, 65536 for bandwidth;\n"
	      "                         K, M, G suffixes; atomics are always 8)\n"
	      "  -a, --all              all sizes 2 B … 8 MiB (powers of two)\n"
	      "  -n, --iters=N          iterations per size (default 1000 latency, 5000 bandwidth)\n"
	      "  -D, --duration=SEC     run each size for SEC seconds instead of -n\n"
	      "  -q, --qps=N            QPs (bandwidth tests only, 1 … 64, default 1)\n"
	      "  -I, --inline=BYTES     send messages up to BYTES inline (send/write)\n"
	      "  -e, --events           wait for completions on a completion channel\n"
	      "  -x, --gid-index=N      local GID index (default: the first IPv4-mapped one)\n"
	      "  -p, --port=PORT        TCP port of the out-of-band exchange, and the connection\n"
	      "                         manager's service number (default 18515)\n"
	      "      --tcp-exchange     exchange QP numbers over TCP and connect the QPs by hand,\n"
	      "                         instead of through the connection manager\n"
	      "      --use-srq          receive through one shared receive queue (send tests)\n"
	      "      --json             print the results as JSON\n"
	      "  -h, --help             this help\n", out);
}

/* A bad command line: what is wrong, and exit 2 as for unknown options. */
static void __attribute__((format(printf, 1, 2), noreturn)) usage_die(const char *fmt, ...)
{
	va_list ap;

	fputs("efi-perf: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs(" (efi-perf --help)\n", stderr);
	exit(2);
}

static unsigned long long parse_number(const char *arg, const char *what, unsigned long long max,
				       bool suffixes)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(arg, &end, 0);
	if (errno || end == arg || *arg == '-')
		usage_die("%s: '%s' is not a number", what, arg);
	if (suffixes && *end) {
		unsigned shift = 0;

		switch (*end) {
		case 'k': case 'K': shift = 10; break;
		case 'm': case 'M': shift = 20; break;
		case 'g': case 'G': shift = 30; break;
		default: usage_die("%s: unknown suffix in '%s' (use K, M or G)", what, arg);
		}
		if (end[1] && strcmp(end + 1, "iB") && strcmp(end + 1, "B"))
			usage_die("%s: unknown suffix in '%s' (use K, M or G)", what, arg);
		if (v > (max >> shift))
			usage_die("%s: %s is too large (at most %llu)", what, arg, max);
		v <<= shift;
		end = (char *)"";
	}
	if (*end)
		usage_die("%s: '%s' is not a number", what, arg);
	if (v > max)
		usage_die("%s: %s is too large (at most %llu)", what, arg, max);
	return v;
}

static void parse_test(struct perf_opts *o, const char *name)
{
	static const struct { const char *name; enum perf_verb verb; enum perf_kind kind; } tests[] = {
		{ "send_lat", PERF_SEND, PERF_LAT }, { "write_lat", PERF_WRITE, PERF_LAT },
		{ "read_lat", PERF_READ, PERF_LAT }, { "atomic_lat", PERF_ATOMIC, PERF_LAT },
		{ "send_bw", PERF_SEND, PERF_BW }, { "write_bw", PERF_WRITE, PERF_BW },
		{ "read_bw", PERF_READ, PERF_BW }, { "atomic_bw", PERF_ATOMIC, PERF_BW },
	};

	for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
		if (!strcmp(name, tests[i].name)) {
			o->test_name = tests[i].name;
			o->verb = tests[i].verb;
			o->kind = tests[i].kind;
			return;
		}
	}
	fprintf(stderr, "efi-perf: unknown test '%s'\n", name);
	usage(stderr);
	exit(2);
}

static void parse_args(struct perf_opts *o, int argc, char **argv)
{
	enum { OPT_JSON = 256, OPT_TCP_EXCHANGE, OPT_USE_SRQ };
	static const struct option longopts[] = {
		{ "device", required_argument, NULL, 'd' },
		{ "size", required_argument, NULL, 's' },
		{ "all", no_argument, NULL, 'a' },
		{ "iters", required_argument, NULL, 'n' },
		{ "duration", required_argument, NULL, 'D' },
		{ "qps", required_argument, NULL, 'q' },
		{ "inline", required_argument, NULL, 'I' },
		{ "events", no_argument, NULL, 'e' },
		{ "gid-index", required_argument, NULL, 'x' },
		{ "port", required_argument, NULL, 'p' },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "tcp-exchange", no_argument, NULL, OPT_TCP_EXCHANGE },
		{ "use-srq", no_argument, NULL, OPT_USE_SRQ },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool size_set = false;
	int c;

	*o = (struct perf_opts){ .num_qps = 1, .inline_size = -1, .gid_index = -1,
				 .port = PERF_DEFAULT_PORT };
	while ((c = getopt_long(argc, argv, "d:s:an:D:q:I:ex:p:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'd': o->dev_name = optarg; break;
		case 's':
			o->size = (uint32_t)parse_number(optarg, "-s", 1u << 31, true);
			size_set = true;
			break;
		case 'a': o->all_sizes = true; break;
		case 'n':
			o->iters = parse_number(optarg, "-n", 1000000000ull, false);
			if (!o->iters)
				usage_die("-n: at least 1 iteration");
			break;
		case 'D': {
			char *end;

			o->duration = strtod(optarg, &end);
			if (end == optarg || *end || !(o->duration > 0 && o->duration <= 3600))
				usage_die("-D: '%s' is not a duration in seconds (0 < SEC <= 3600)", optarg);
			break;
		}
		case 'q':
			o->num_qps = (int)parse_number(optarg, "-q", PERF_MAX_QPS, false);
			if (!o->num_qps)
				usage_die("-q: at least 1 QP");
			break;
		case 'I': o->inline_size = (int)parse_number(optarg, "-I", 1u << 20, false); break;
		case 'e': o->events = true; break;
		case 'x': o->gid_index = (int)parse_number(optarg, "-x", 1024, false); break;
		case 'p':
			o->port = (uint16_t)parse_number(optarg, "-p", 65535, false);
			if (!o->port)
				usage_die("-p: port 0 is not a port");
			break;
		case OPT_JSON: o->json = true; break;
		case OPT_TCP_EXCHANGE: o->tcp_exchange = true; break;
		case OPT_USE_SRQ: o->use_srq = true; break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); exit(2);
		}
	}
	if (optind >= argc) {
		fputs("efi-perf: which test? (e.g. efi-perf send_lat)\n", stderr);
		usage(stderr);
		exit(2);
	}
	parse_test(o, argv[optind++]);
	/* GNU getopt moves the operands to the end: TEST, then HOST */
	if (optind < argc)
		o->host = argv[optind++];
	if (optind < argc)
		usage_die("unexpected argument '%s' after the host '%s'", argv[optind], o->host);

	if (o->iters && o->duration > 0)
		usage_die("-n and -D exclude each other: give an iteration count or a duration");
	if (!o->iters && !(o->duration > 0))
		o->iters = o->kind == PERF_LAT ? 1000 : 5000;
	if (o->verb == PERF_ATOMIC) {
		if (size_set && o->size != 8)
			usage_die("-s: atomics always move 8 bytes");
		if (o->all_sizes)
			usage_die("-a: atomics have one size (8 bytes)");
		o->size = 8;
	} else if (!size_set) {
		o->size = o->kind == PERF_LAT ? 2 : 65536;
	}
	if (o->all_sizes && size_set)
		usage_die("-a and -s exclude each other");
	if (o->verb == PERF_WRITE && o->kind == PERF_LAT && o->size == 0)
		usage_die("-s: write_lat needs at least 1 byte (it polls the last byte, as perftest)");
	if (o->kind == PERF_LAT && o->num_qps != 1)
		usage_die("-q: the latency tests use one QP; -q is for the bandwidth tests");
	if (o->events && o->verb == PERF_WRITE && o->kind == PERF_LAT)
		usage_die("-e: write_lat polls memory for the peer's write (as perftest); use send_lat -e");
	if (o->use_srq && o->verb != PERF_SEND)
		usage_die("--use-srq: only the send tests post receives (as perftest's --use-srq)");
	if (o->inline_size > 0 && (o->verb == PERF_READ || o->verb == PERF_ATOMIC))
		usage_die("-I: Reads and atomics carry no data to inline");
}

/* The sizes of one run: -s, or 2 B … 8 MiB with -a. */
static uint32_t next_size(const struct perf_opts *o, uint32_t size)
{
	if (!o->all_sizes)
		return 0;
	return size * 2 <= PERF_ALL_MAX_SIZE ? size * 2 : 0;
}

int main(int argc, char **argv)
{
	struct perf_opts opts;
	struct perf_ctx pc = { .oob_fd = -1 };
	uint32_t size, first, largest;

	setvbuf(stdout, NULL, _IOLBF, 0);
	parse_args(&opts, argc, argv);

	/* The server learns the client's parameters from the handshake, so
	 * the device is opened first and the TCP exchange comes after. */
	perf_open(&pc, &opts);
	if (opts.host)
		pc.oob_fd = oob_connect(opts.host, opts.port);
	else
		pc.oob_fd = oob_listen_accept(opts.port);
	oob_handshake(&pc, &opts);

	first = opts.all_sizes ? PERF_ALL_MIN_SIZE : opts.size;
	largest = opts.all_sizes ? PERF_ALL_MAX_SIZE : opts.size;
	perf_create_qps(&pc, largest < 64 ? 64 : largest);
	if (opts.tcp_exchange) {
		oob_exchange_qps(&pc);
		perf_connect_qps(&pc);
	} else {
		perf_cm_connect_qps(&pc);
	}
	closing_pc = &pc;
	oob_peer_closed_hook = local_errors_first;
	oob_sync(&pc, "connected");

	report_banner(&pc);
	report_header(&pc);
	for (size = first; size; size = next_size(&opts, size)) {
		struct perf_result res = { .bytes = size };

		if (opts.kind == PERF_LAT)
			perf_run_lat(&pc, size, &res);
		else
			perf_run_bw(&pc, size, &res);
		report_row(&pc, &res);
		oob_sync(&pc, "size-done");
	}
	report_footer(&pc);
	perf_close(&pc);
	return 0;
}
