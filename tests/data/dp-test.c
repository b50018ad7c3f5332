/* SPDX-License-Identifier: MIT */
/*
 * dp-test: runs one data-path case between two processes (see dp.h).
 *     dp-test server CASE [-d DEV] [-p PORT] [--large-mb N] [--timeout S] [--cm]
 *     dp-test client CASE HOST [-d DEV] [-p PORT] [--large-mb N] [--timeout S] [--cm]
 *     dp-test list
 * --cm connects the case's QPs through the connection manager (service
 * PORT) instead of by hand: its negotiated path MTU and segment (mixed link
 * MTUs), the buffers described in its private data.
 */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/data/dp.h"

static const struct {
	const char *name;
	dp_case_fn *fn;
	const char *what;
} cases[] = {
	{ "opcodes", dp_case_opcodes, "every opcode, byte-exact, 1 B … 64 KiB+1" },
	{ "sizes", dp_case_sizes, "0-byte messages and one large message (--large-mb)" },
	{ "sge16", dp_case_sge16, "16 SGEs on both sides" },
	{ "inline", dp_case_inline, "inline at max_inline_data" },
	{ "unsignaled", dp_case_unsignaled, "unsignaled sends with periodic signaled ones" },
	{ "events", dp_case_events, "completion channel and epoll" },
	{ "solicited", dp_case_solicited, "solicited-only events" },
	{ "rkey", dp_case_rkey, "rkey, bounds and access violations" },
	{ "rnr", dp_case_rnr, "RNR with and without retry" },
	{ "peerkill", dp_case_peerkill, "the server is killed mid-transfer" },
	{ "atomics8", dp_case_atomics8, "CAS/FAA from 8 threads on one counter" },
	{ "loss", dp_case_loss, "byte-exact data under EFI_FAULT loss" },
	{ "threads", dp_case_threads, "8 threads x 8 QPs" },
	{ "syscalls", dp_case_syscalls, "a post/poll loop between strace markers" },
};

static void usage(FILE *out)
{
	fputs("usage: dp-test server CASE [-d DEV] [-p PORT] [--large-mb N] [--timeout S] [--cm]\n"
	      "       dp-test client CASE HOST [-d DEV] [-p PORT] [--large-mb N] [--timeout S] [--cm]\n"
	      "       dp-test list\n", out);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "device", required_argument, NULL, 'd' },
		{ "port", required_argument, NULL, 'p' },
		{ "large-mb", required_argument, NULL, 'L' },
		{ "timeout", required_argument, NULL, 't' },
		{ "cm", no_argument, NULL, 'C' },
		{ NULL, 0, NULL, 0 },
	};
	struct dp_opts opts = { .port = DP_DEFAULT_PORT, .large_bytes = 256ull << 20, .timeout = 20 };
	struct dp_side side;
	dp_case_fn *fn = NULL;
	int c;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((c = getopt_long(argc, argv, "d:p:", longopts, NULL)) != -1) {
		switch (c) {
		case 'd': opts.dev_name = optarg; break;
		case 'p': opts.port = (uint16_t)atoi(optarg); break;
		case 'L': opts.large_bytes = strtoull(optarg, NULL, 10) << 20; break;
		case 't': opts.timeout = atof(optarg); break;
		case 'C': opts.cm = true; break;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc && !strcmp(argv[optind], "list")) {
		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
			printf("%-12s %s\n", cases[i].name, cases[i].what);
		return 0;
	}
	if (argc - optind < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[optind], "server")) {
		opts.server = true;
	} else if (strcmp(argv[optind], "client")) {
		usage(stderr);
		return 2;
	}
	opts.case_name = argv[optind + 1];
	if (!opts.server) {
		if (argc - optind < 3) {
			usage(stderr);
			return 2;
		}
		opts.host = argv[optind + 2];
	}
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (!strcmp(cases[i].name, opts.case_name))
			fn = cases[i].fn;
	if (!fn) {
		fprintf(stderr, "dp-test: no case '%s' (dp-test list)\n", opts.case_name);
		return 2;
	}
	dp_case = opts.case_name;
	dp_set_timeout(opts.timeout);
	dp_side_open(&side, &opts);
	fn(&side);
	dp_sync(&side, "end");
	dp_side_close(&side);
	printf("PASS %s (%s)\n", opts.case_name, opts.server ? "server" : "client");
	return 0;
}
