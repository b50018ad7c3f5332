/* SPDX-License-Identifier: MIT */
/*
 * efi-perf's output: perftest's banner and tables, or one JSON object with
 * --json (printed at the end, when every size has run).
 */
#include "config.h"

#include <arpa/inet.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/efi-perf/perf.h"

#define RULE "---------------------------------------------------------------------------------------\n"
#define MAX_ROWS 64

static struct perf_result rows[MAX_ROWS];
static int nrows;

static const char *test_title(const struct perf_opts *o)
{
	static char title[64];
	static const char *const verbs[] = { "Send", "RDMA_Write", "RDMA_Read", "Atomic FETCH_AND_ADD" };

	snprintf(title, sizeof(title), "%s %s Test", verbs[o->verb], o->kind == PERF_LAT ? "Latency" : "BW");
	return title;
}

static void gid_str(const union efi_gid *gid, char *out, size_t size)
{
	if (!inet_ntop(AF_INET6, gid->raw, out, (socklen_t)size))
		snprintf(out, size, "?");
}

/* Rows the server prints: only send_bw measures anything there. */
static bool has_numbers(const struct perf_ctx *pc)
{
	return pc->opts->host || (pc->opts->kind == PERF_BW && pc->opts->verb == PERF_SEND);
}

void report_banner(const struct perf_ctx *pc)
{
	const struct perf_opts *o = pc->opts;
	char gid[INET6_ADDRSTRLEN];

	if (o->json)
		return;
	gid_str(&pc->gid, gid, sizeof(gid));
	printf(RULE "                    %s\n", test_title(o));
	printf(" Device         : %-14s Role           : %s\n", pc->dev_name, o->host ? "client" : "server");
	printf(" Number of qps  : %-14d Transport type : RC (EFI over UDP)\n", pc->num_qps);
	printf(" Mtu            : %d[B]%-*s Link MTU       : %u[B]\n", efi_mtu_to_num(pc->port_attr.active_mtu),
	       (int)(11 - snprintf(NULL, 0, "%d", efi_mtu_to_num(pc->port_attr.active_mtu))), "",
	       pc->port_attr.link_mtu);
	printf(" Max inline data: %d[B]%-*s Completions    : %s\n", pc->inline_size,
	       (int)(11 - snprintf(NULL, 0, "%d", pc->inline_size)), "", o->events ? "events" : "polling");
	if (o->duration > 0)
		printf(" Duration       : %.1f[s]\n", o->duration);
	if (pc->srq)
		printf(" Receive queue  : one SRQ of %d WRs for %d QP(s)\n", pc->srq_size, pc->num_qps);
	printf(" GID index      : %-14d GID            : %s\n", pc->gid_index, gid);
	printf(RULE);
	for (int i = 0; i < pc->num_qps; i++) {
		const struct perf_qp *pq = &pc->qps[i];

		printf(" local address:  QPN 0x%06x PSN 0x%06x RKey 0x%08x VAddr 0x%016llx\n",
		       pq->qp->qp_num, pq->psn, pq->mr->rkey, (unsigned long long)(uintptr_t)pq->buf);
		gid_str(&pq->remote.gid, gid, sizeof(gid));
		printf(" remote address: QPN 0x%06x PSN 0x%06x RKey 0x%08x VAddr 0x%016llx GID %s\n",
		       pq->remote.qpn, pq->remote.psn, pq->remote.rkey, (unsigned long long)pq->remote.addr,
		       gid);
	}
	printf(RULE);
}

void report_header(const struct perf_ctx *pc)
{
	if (pc->opts->json || !has_numbers(pc))
		return;
	if (pc->opts->kind == PERF_LAT)
		printf(" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]"
		       "    t_stdev[usec]   99%% percentile[usec]   99.9%% percentile[usec]\n");
	else
		printf(" #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n");
}

void report_row(const struct perf_ctx *pc, const struct perf_result *res)
{
	if (!has_numbers(pc))
		return;
	if (nrows < MAX_ROWS)
		rows[nrows++] = *res;
	if (pc->opts->json)
		return;
	if (pc->opts->kind == PERF_LAT)
		printf(" %-7u %-10llu     %-10.2f     %-10.2f   %-10.2f          %-10.2f       %-10.2f      "
		       "%-10.2f             %-10.2f\n", res->bytes, (unsigned long long)res->iters, res->t_min,
		       res->t_max, res->t_typical, res->t_avg, res->t_stdev, res->t_p99, res->t_p999);
	else
		printf(" %-10u %-10llu     %-10.2f         %-10.2f           %-10.6f\n", res->bytes,
		       (unsigned long long)res->iters, res->bw_peak_gbps, res->bw_avg_gbps, res->msg_rate_mpps);
}

void report_footer(const struct perf_ctx *pc)
{
	const struct perf_opts *o = pc->opts;
	char gid[INET6_ADDRSTRLEN];

	if (!o->json) {
		struct efi_counters sum = { 0 };

		if (!has_numbers(pc))
			printf(" (the client measures this test and prints its results)\n");
		/* the transport's view: where a tail or a slow run came from */
		for (int i = 0; i < pc->num_qps; i++) {
			struct efi_counters c;

			if (efi_query_qp_counters(pc->qps[i].qp, &c))
				continue;
			sum.tx_packets += c.tx_packets;
			sum.rx_packets += c.rx_packets;
			sum.retransmissions += c.retransmissions;
			sum.timeouts += c.timeouts;
			sum.duplicates += c.duplicates;
			sum.rnr_naks_received += c.rnr_naks_received;
			sum.seq_naks_received += c.seq_naks_received;
			sum.drops += c.drops;
		}
		printf(" transport: %llu packets sent, %llu received, %llu retransmitted, %llu timeouts,"
		       " %llu duplicates, %llu RNR NAKs, %llu sequence NAKs received, %llu dropped\n",
		       (unsigned long long)sum.tx_packets, (unsigned long long)sum.rx_packets,
		       (unsigned long long)sum.retransmissions, (unsigned long long)sum.timeouts,
		       (unsigned long long)sum.duplicates, (unsigned long long)sum.rnr_naks_received,
		       (unsigned long long)sum.seq_naks_received, (unsigned long long)sum.drops);
		/* each path of each QP: what loss recovery and congestion
		 * control saw (RTT, window, resends, suspicions) */
		for (int i = 0; i < pc->num_qps; i++) {
			struct efi_counters c;

			if (efi_query_qp_counters(pc->qps[i].qp, &c))
				continue;
			printf(" qp %d: %llu fast retransmits, %llu tail probes\n", i,
			       (unsigned long long)c.fast_retransmits, (unsigned long long)c.tail_probes);
			for (unsigned k = 0; k < c.num_paths && k < EFI_COUNTERS_PATHS; k++)
				printf(" qp %d path %u: rtt min %.1f us smoothed %.1f us, window %.2f packets,"
				       " %llu retransmitted, %llu suspected, %llu restored\n",
				       i, k, c.paths[k].rtt_min_ns / 1e3, c.paths[k].rtt_smoothed_ns / 1e3,
				       c.paths[k].cwnd_milli / 1000.0,
				       (unsigned long long)c.paths[k].retransmissions,
				       (unsigned long long)c.paths[k].suspected,
				       (unsigned long long)c.paths[k].restored);
		}
		printf(RULE);
		return;
	}
	gid_str(&pc->gid, gid, sizeof(gid));
	printf("{\"test\":\"%s\",\"role\":\"%s\",\"device\":\"%s\",\"gid\":\"%s\",\"qps\":%d,"
	       "\"mtu\":%d,\"inline\":%d,\"events\":%s,\"srq\":%s,\"results\":[", o->test_name,
	       o->host ? "client" : "server", pc->dev_name, gid, pc->num_qps,
	       efi_mtu_to_num(pc->port_attr.active_mtu), pc->inline_size, o->events ? "true" : "false",
	       pc->srq ? "true" : "false");
	for (int i = 0; i < nrows; i++) {
		const struct perf_result *r = &rows[i];

		printf("%s{\"bytes\":%u,\"iterations\":%llu,", i ? "," : "", r->bytes,
		       (unsigned long long)r->iters);
		if (o->kind == PERF_LAT)
			printf("\"t_min_us\":%.3f,\"t_max_us\":%.3f,\"t_typical_us\":%.3f,\"t_avg_us\":%.3f,"
			       "\"t_stdev_us\":%.3f,\"t_p99_us\":%.3f,\"t_p99_9_us\":%.3f}", r->t_min, r->t_max,
			       r->t_typical, r->t_avg, r->t_stdev, r->t_p99, r->t_p999);
		else
			printf("\"bw_peak_gbps\":%.4f,\"bw_avg_gbps\":%.4f,\"msg_rate_mpps\":%.6f,"
			       "\"seconds\":%.6f}", r->bw_peak_gbps, r->bw_avg_gbps, r->msg_rate_mpps, r->seconds);
	}
	printf("]}\n");
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The sample at quantile q (nearest rank), of sorted samples. */
static double quantile(const double *v, size_t n, double q)
{
	size_t i = (size_t)ceil(q * (double)n);

	return v[i ? i - 1 : 0];
}

void report_lat_stats(double *samples, size_t n, struct perf_result *res)
{
	double sum = 0, sq = 0;

	if (!n)
		return;
	qsort(samples, n, sizeof(*samples), cmp_double);
	for (size_t i = 0; i < n; i++)
		sum += samples[i];
	res->t_avg = sum / (double)n;
	for (size_t i = 0; i < n; i++)
		sq += (samples[i] - res->t_avg) * (samples[i] - res->t_avg);
	res->t_stdev = sqrt(sq / (double)n);
	res->t_min = samples[0];
	res->t_max = samples[n - 1];
	res->t_typical = quantile(samples, n, 0.5);
	res->t_p99 = quantile(samples, n, 0.99);
	res->t_p999 = quantile(samples, n, 0.999);
}
