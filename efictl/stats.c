/* SPDX-License-Identifier: MIT */
/*
 * efictl stats: the transport counters of every interface, context, peer
 * path and connection efid knows, for people, as JSON (--json) or in the
 * Prometheus text exposition format (--prometheus) for node_exporter's
 * textfile collector.  docs/metrics.md describes every metric.
 *
 * Where the numbers come from: one LIST request, whose reply carries each
 * open libefi context's counters page as efid read it (common/countershm.h:
 * totals, and the health of the paths to each peer), the connection
 * manager's connections (QPs), and the interface's host-side device, whose
 * kernel counters this file reads from /sys/class/net (efictl runs in the
 * host's namespace; absent when it does not, or for a macvlan).
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "efictl.h"
#include "ifacespec.h"

/* ---- the interface's host-side device ------------------------------------ */

enum { HD_RX_PACKETS, HD_RX_BYTES, HD_RX_DROPPED, HD_TX_PACKETS, HD_TX_BYTES, HD_TX_DROPPED,
       HD_COUNT };
static const char *const hd_names[HD_COUNT] = { "rx_packets", "rx_bytes", "rx_dropped",
						"tx_packets", "tx_bytes", "tx_dropped" };

struct hostdev {
	bool present;
	uint64_t v[HD_COUNT];
};

/* Reads the files of /sys/class/net/DEV/statistics: present only when each is
 * there and holds a number (the name comes from efid: it must be a plain
 * interface name, nothing a path could be built from). */
static void hostdev_read(const char *dev, struct hostdev *h)
{
	memset(h, 0, sizeof(*h));
	if (!dev || !*dev || !efi_ifname_valid(dev))
		return;
	for (int k = 0; k < HD_COUNT; k++) {
		char path[128], buf[32];
		FILE *f;
		char *end;
		snprintf(path, sizeof(path), "/sys/class/net/%s/statistics/%s", dev, hd_names[k]);
		f = fopen(path, "re");
		if (!f)
			return;
		bool ok = fgets(buf, sizeof(buf), f) != NULL;
		fclose(f);
		if (!ok)
			return;
		errno = 0;
		h->v[k] = strtoull(buf, &end, 10);
		if (errno || end == buf)
			return;
	}
	h->present = true;
}

/* ---- what is shown for one interface -------------------------------------- */

struct istats {
	const struct ec_iface *i;
	uint64_t totals[EFI_CSHM_COUNT]; /* summed over the open contexts */
	uint32_t paths_active, paths_suspect;
	struct hostdev hd;
};

static void istats_fill(struct istats *s, const struct ec_iface *i)
{
	memset(s, 0, sizeof(*s));
	s->i = i;
	for (size_t k = 0; k < i->ncontexts; k++) {
		const struct ec_context *x = &i->contexts[k];
		for (int c = 0; c < EFI_CSHM_COUNT; c++)
			s->totals[c] += x->counters[c];
		for (size_t p = 0; p < x->npeers; p++)
			for (size_t q = 0; q < x->peers[p].npaths; q++) {
				if (x->peers[p].paths[q].suspect)
					s->paths_suspect++;
				else
					s->paths_active++;
			}
	}
	hostdev_read(i->host_ifname, &s->hd);
}

static const char *const counter_names[EFI_CSHM_COUNT] = EFI_COUNTERSHM_NAMES;

/* ---- JSON ----------------------------------------------------------------- */

static void json_counters(struct json *j, const uint64_t *c)
{
	for (int k = 0; k < EFI_CSHM_COUNT; k++)
		json_member_u64(j, counter_names[k], c[k]);
}

static void stats_json_iface(struct json *j, const struct istats *s)
{
	const struct ec_iface *i = s->i;
	char buf[64];

	json_obj_begin(j);
	json_member_str(j, "instance", i->instance);
	json_member_str(j, "name", i->name);
	json_member_str(j, "state", i->state);
	json_member_str(j, "link", i->link);
	json_member_str(j, "kind", i->kind);
	json_member_str(j, "host_device", i->host_ifname && *i->host_ifname ? i->host_ifname : NULL);
	json_key(j, "host_device_counters");
	if (s->hd.present) {
		json_obj_begin(j);
		for (int k = 0; k < HD_COUNT; k++)
			json_member_u64(j, hd_names[k], s->hd.v[k]);
		json_obj_end(j);
	} else {
		json_null(j);
	}
	json_key(j, "totals");
	json_obj_begin(j);
	json_counters(j, s->totals);
	json_obj_end(j);
	json_member_u64(j, "paths_active", s->paths_active);
	json_member_u64(j, "paths_suspect", s->paths_suspect);
	json_key(j, "qps");
	if (i->has_leases)
		json_u64(j, i->qps);
	else
		json_null(j);
	json_key(j, "contexts");
	json_arr_begin(j);
	for (size_t k = 0; k < i->ncontexts; k++) {
		const struct ec_context *x = &i->contexts[k];
		json_obj_begin(j);
		json_member_u64(j, "pid", x->pid);
		json_counters(j, x->counters);
		ec_peers_json(j, x);
		ec_qps_json(j, x);
		json_obj_end(j);
	}
	json_arr_end(j);
	json_key(j, "connections");
	json_arr_begin(j);
	for (size_t k = 0; k < i->nconns; k++) {
		const struct ec_cm_conn *c = &i->conns[k];
		json_obj_begin(j);
		json_member_u64(j, "qpn", c->qpn);
		json_member_u64(j, "peer_qpn", c->peer_qpn);
		json_member_str(j, "peer_gid", efi_gid_format(&c->peer_gid, buf, sizeof(buf)));
		json_member_str(j, "state", c->state);
		json_member_str(j, "role", c->active ? "client" : "server");
		json_key(j, "pid");
		if (c->has_pid)
			json_u64(j, c->pid);
		else
			json_null(j);
		json_obj_end(j);
	}
	json_arr_end(j);
	json_obj_end(j);
}

static int stats_json(const struct ec_listing *l, const struct istats *s)
{
	struct json j;
	json_init(&j, stdout);
	json_obj_begin(&j);
	json_member_str(&j, "host_id", l->host_id);
	json_member_str(&j, "efid_version", l->server_version);
	json_key(&j, "interfaces");
	json_arr_begin(&j);
	for (size_t k = 0; k < l->nifaces; k++)
		stats_json_iface(&j, &s[k]);
	json_arr_end(&j);
	json_key(&j, "uplinks");
	json_arr_begin(&j);
	for (size_t n = 0; n < l->nuplinks; n++) {
		json_obj_begin(&j);
		json_member_str(&j, "name", l->uplinks[n].name);
		json_member_str(&j, "link", l->uplinks[n].link && *l->uplinks[n].link
						   ? l->uplinks[n].link
						   : "unknown");
		json_member_u64(&j, "lanes", (uint64_t)__builtin_popcount(l->uplinks[n].lanes));
		json_member_u64(&j, "changes", l->uplinks[n].changes);
		json_obj_end(&j);
	}
	json_arr_end(&j);
	json_obj_end(&j);
	return json_finish(&j);
}

/* ---- Prometheus text exposition (format 0.0.4) ---------------------------- */

/* A label value with \, " and newline escaped (the format's only escapes). */
static void prom_value(FILE *f, const char *s)
{
	fputc('"', f);
	for (; s && *s; s++) {
		if (*s == '\\' || *s == '"')
			fprintf(f, "\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}

static void prom_family(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* name{efi_instance="..",interface=".."  (the caller closes the braces).
 * "efi_instance", not "instance": Prometheus gives every scraped series an
 * "instance" label of its own (the target), which would rename ours. */
static void prom_iface_labels(FILE *f, const char *name, const struct ec_iface *i)
{
	fprintf(f, "%s{efi_instance=", name);
	prom_value(f, i->instance);
	fputs(",interface=", f);
	prom_value(f, i->name);
}

/* A context is known by its pid; a process with several contexts on one
 * interface gets context="N" (N = 1, 2, ...: its contexts after the first,
 * in efid's order) on all but the first, so that no two series are alike. */
static void prom_ctx_labels(FILE *f, const char *name, const struct ec_iface *i,
			    const struct ec_context *x)
{
	unsigned n = 0;
	for (const struct ec_context *y = i->contexts; y < x; y++)
		n += y->pid == x->pid;
	prom_iface_labels(f, name, i);
	fprintf(f, ",pid=\"%u\"", x->pid);
	if (n)
		fprintf(f, ",context=\"%u\"", n);
}

static void prom_path_labels(FILE *f, const char *name, const struct ec_iface *i,
			     const struct ec_context *x, const struct ec_peer *pe,
			     const struct ec_path *p)
{
	char buf[64];
	prom_ctx_labels(f, name, i, x);
	fputs(",peer=", f);
	prom_value(f, efi_gid_format(&pe->addr, buf, sizeof(buf)));
	fprintf(f, ",path=\"%u\"", p->index);
}

/* Per-context counters: efi_context_NAME_total. */
static const char *const counter_help[EFI_CSHM_COUNT] = {
	"Datagrams the context sent (UDP payloads, EFI headers included).",
	"Bytes of UDP payload the context sent, EFI headers included.",
	"Datagrams the context received and accepted.",
	"Bytes of UDP payload the context received and accepted.",
	"Packets the context sent again.",
	"Retransmission timer expiries.",
	"Duplicate requests received (acknowledged or replayed again).",
	"RNR NAKs sent (no receive posted).",
	"RNR NAKs received.",
	"PSN sequence-error NAKs sent.",
	"PSN sequence-error NAKs received.",
	"Received datagrams dropped, all reasons together.",
};

/* Per-path values: name, type, help, divisor (µs → s, thousandths → packets). */
static const struct {
	const char *name, *type, *help;
	double div;
} path_metrics[EFI_CSHM_PATH_VALUES] = {
	[EFI_CSHM_PATH_RTT_MIN_US] = { "efi_path_rtt_min_seconds", "gauge",
				       "Smallest RTT measured on the path by any QP to the peer (0: no sample yet).",
				       1e6 },
	[EFI_CSHM_PATH_SRTT_US] = { "efi_path_rtt_smoothed_seconds", "gauge",
				    "Mean of the smoothed RTTs of the QPs to the peer on the path (0: no sample yet).",
				    1e6 },
	[EFI_CSHM_PATH_CWND_MILLI] = { "efi_path_window_packets", "gauge",
				       "Congestion window on the path, summed over the QPs to the peer, in packets.",
				       1e3 },
	[EFI_CSHM_PATH_RETRANSMISSIONS] = { "efi_path_retransmissions_total", "counter",
					    "Packets first sent on the path that were sent again (QPs to the peer now open).",
					    1 },
	[EFI_CSHM_PATH_SUSPECTED] = { "efi_path_suspected_total", "counter",
				      "Times the path went silent and was avoided.", 1 },
	[EFI_CSHM_PATH_RESTORED] = { "efi_path_restored_total", "counter",
				     "Times the path answered again and was re-admitted.", 1 },
};

static void prom_u64(FILE *f, uint64_t v)
{
	fprintf(f, "} %" PRIu64 "\n", v);
}

static void prom_scaled(FILE *f, uint64_t v, double div)
{
	if (div == 1)
		prom_u64(f, v);
	else
		fprintf(f, "} %.9g\n", (double)v / div);
}

/* Per-QP counters of a version 3 counters page: efi_qp_NAME_total. */
static const char *const qp_help[EFI_CSHM_QP_VALUES] = {
	"Datagrams the QP sent.",
	"Bytes of UDP payload the QP sent, EFI headers included.",
	"Datagrams the QP received and accepted.",
	"Bytes of UDP payload the QP received and accepted.",
	"Packets the QP sent again.",
	"Retransmission timer expiries of the QP.",
	"Duplicate requests the QP received.",
	"Received datagrams for the QP that it dropped.",
};

/* The labels of one QP's series: its context's, its number, its peer. */
static void prom_qp_labels(FILE *f, const char *name, const struct ec_iface *i,
			   const struct ec_context *cx, const struct ec_qp *qp)
{
	char buf[64];

	prom_ctx_labels(f, name, i, cx);
	fprintf(f, ",qpn=\"%u\"", qp->qpn);
	if (qp->has_peer) {
		fputs(",peer=", f);
		prom_value(f, efi_gid_format(&qp->peer, buf, sizeof(buf)));
	}
}

/* The stall detector of a version 4 counters page: stalled QPs per
 * context, and each QP's outstanding send work and time without progress.
 * Contexts of an older libefi give no series. */
static void prom_stall(FILE *f, const struct ec_listing *l, const struct istats *s)
{
	prom_family(f, "efi_context_qps_stalled", "gauge",
		    "QPs of the context with send work outstanding and no progress for 2 s or more.");
	for (size_t k = 0; k < l->nifaces; k++)
		for (size_t x = 0; x < s[k].i->ncontexts; x++) {
			const struct ec_context *cx = &s[k].i->contexts[x];
			if (!cx->has_stalled)
				continue;
			prom_ctx_labels(f, "efi_context_qps_stalled", s[k].i, cx);
			prom_u64(f, cx->stalled_qps);
		}
	static const char *const names[2] = { "efi_qp_outstanding_wqes", "efi_qp_stalled_seconds" };
	static const char *const help[2] = {
		"Send work requests the QP has posted and not completed.",
		"Seconds the QP has had send work outstanding without progress (0: none, or progressing).",
	};
	for (int v = 0; v < 2; v++) {
		prom_family(f, names[v], "gauge", help[v]);
		for (size_t k = 0; k < l->nifaces; k++)
			for (size_t x = 0; x < s[k].i->ncontexts; x++) {
				const struct ec_context *cx = &s[k].i->contexts[x];
				for (size_t q = 0; q < cx->nqps; q++) {
					const struct ec_qp *qp = &cx->qps[q];
					if (!qp->has_work)
						continue;
					prom_qp_labels(f, names[v], s[k].i, cx, qp);
					if (v == 0)
						prom_u64(f, qp->outstanding);
					else
						prom_scaled(f, qp->stalled_ms, 1e3);
				}
			}
	}
}

/* What a version 3 counters page adds: drops by reason, per-QP counters.
 * Contexts of an older libefi have neither and give no series. */
static void prom_ext(FILE *f, const struct ec_listing *l, const struct istats *s)
{
	static const char *const qp_names[EFI_CSHM_QP_VALUES] = EFI_CSHM_QP_VALUE_NAMES;
	char name[96];

	prom_family(f, "efi_context_drops_by_reason_total", "counter",
		    "Received datagrams the context dropped, by reason (libefi's efi_drop_reason_str).");
	for (size_t k = 0; k < l->nifaces; k++)
		for (size_t x = 0; x < s[k].i->ncontexts; x++) {
			const struct ec_context *cx = &s[k].i->contexts[x];
			if (!cx->has_drops)
				continue;
			for (unsigned r = 0; r < EFI_CSHM_DROP_REASONS; r++) {
				const char *rn = ec_drop_reason_name(r);
				if (!rn && !cx->drop_reasons[r])
					continue;
				prom_ctx_labels(f, "efi_context_drops_by_reason_total", s[k].i, cx);
				if (rn)
					fprintf(f, ",reason=\"%s\"", rn);
				else
					fprintf(f, ",reason=\"%u\"", r);
				prom_u64(f, cx->drop_reasons[r]);
			}
		}
	prom_family(f, "efi_context_qps_omitted", "gauge",
		    "QPs of the context left out of its counters page (it describes 64).");
	for (size_t k = 0; k < l->nifaces; k++)
		for (size_t x = 0; x < s[k].i->ncontexts; x++) {
			const struct ec_context *cx = &s[k].i->contexts[x];
			if (!cx->has_qps)
				continue;
			prom_ctx_labels(f, "efi_context_qps_omitted", s[k].i, cx);
			prom_u64(f, cx->qps_omitted);
		}
	prom_stall(f, l, s);
	for (int v = 0; v < EFI_CSHM_QP_VALUES; v++) {
		snprintf(name, sizeof(name), "efi_qp_%s_total", qp_names[v]);
		prom_family(f, name, "counter", qp_help[v]);
		for (size_t k = 0; k < l->nifaces; k++)
			for (size_t x = 0; x < s[k].i->ncontexts; x++) {
				const struct ec_context *cx = &s[k].i->contexts[x];
				for (size_t q = 0; q < cx->nqps; q++) {
					const struct ec_qp *qp = &cx->qps[q];
					prom_qp_labels(f, name, s[k].i, cx, qp);
					prom_u64(f, qp->v[v]);
				}
			}
	}
}

static int stats_prometheus(const struct ec_listing *l, const struct istats *s)
{
	FILE *f = stdout;
	char name[96];

	/* efid's uplinks ([Transport] Uplinks=): the host's side of path health */
	if (l->nuplinks) {
		prom_family(f, "efi_uplink_up", "gauge",
			    "1 when the uplink's link is up (its lanes' packets leave by it), else 0.");
		for (size_t n = 0; n < l->nuplinks; n++) {
			fputs("efi_uplink_up{uplink=", f);
			prom_value(f, l->uplinks[n].name);
			prom_u64(f, l->uplinks[n].link && strcmp(l->uplinks[n].link, "up") == 0);
		}
		prom_family(f, "efi_uplink_lanes", "gauge", "Lanes pinned to the uplink.");
		for (size_t n = 0; n < l->nuplinks; n++) {
			fputs("efi_uplink_lanes{uplink=", f);
			prom_value(f, l->uplinks[n].name);
			prom_u64(f, (uint64_t)__builtin_popcount(l->uplinks[n].lanes));
		}
		prom_family(f, "efi_uplink_changes_total", "counter",
			    "Link state changes of the uplink since efid started.");
		for (size_t n = 0; n < l->nuplinks; n++) {
			fputs("efi_uplink_changes_total{uplink=", f);
			prom_value(f, l->uplinks[n].name);
			prom_u64(f, l->uplinks[n].changes);
		}
	}
	prom_family(f, "efi_interface_info", "gauge",
		    "An EFI interface efid has on record (always 1), with its kind, state, link and host device.");
	for (size_t k = 0; k < l->nifaces; k++) {
		const struct ec_iface *i = s[k].i;
		prom_iface_labels(f, "efi_interface_info", i);
		fputs(",kind=", f);
		prom_value(f, i->kind ? i->kind : "");
		fputs(",state=", f);
		prom_value(f, i->state ? i->state : "");
		fputs(",link=", f);
		prom_value(f, i->link ? i->link : "");
		fputs(",host_device=", f);
		prom_value(f, i->host_ifname ? i->host_ifname : "");
		prom_u64(f, 1);
	}
	prom_family(f, "efi_interface_up", "gauge",
		    "1 when the interface is attached and its link is up, else 0.");
	for (size_t k = 0; k < l->nifaces; k++) {
		const struct ec_iface *i = s[k].i;
		bool up = i->state && strcmp(i->state, "attached") == 0 && i->link &&
			  strcmp(i->link, "up") == 0;
		prom_iface_labels(f, "efi_interface_up", i);
		prom_u64(f, up);
	}
	prom_family(f, "efi_interface_contexts", "gauge",
		    "libefi contexts open on the interface (processes using it).");
	for (size_t k = 0; k < l->nifaces; k++) {
		prom_iface_labels(f, "efi_interface_contexts", s[k].i);
		prom_u64(f, s[k].i->ncontexts);
	}
	prom_family(f, "efi_interface_qps", "gauge", "QPs the interface's contexts hold.");
	for (size_t k = 0; k < l->nifaces; k++) {
		prom_iface_labels(f, "efi_interface_qps", s[k].i);
		prom_u64(f, s[k].i->qps);
	}
	prom_family(f, "efi_interface_connections", "gauge",
		    "Connection-manager connections of the interface, by state.");
	static const char *const conn_states[] = { "connecting", "established", "closing" };
	for (size_t k = 0; k < l->nifaces; k++) {
		const struct ec_iface *i = s[k].i;
		for (size_t st = 0; st < 3; st++) {
			uint64_t n = 0;
			for (size_t c = 0; c < i->nconns; c++)
				n += i->conns[c].state && strcmp(i->conns[c].state, conn_states[st]) == 0;
			prom_iface_labels(f, "efi_interface_connections", i);
			fprintf(f, ",state=\"%s\"", conn_states[st]);
			prom_u64(f, n);
		}
	}
	prom_family(f, "efi_interface_paths", "gauge",
		    "Paths from the interface's contexts to their peers, by health.");
	for (size_t k = 0; k < l->nifaces; k++) {
		prom_iface_labels(f, "efi_interface_paths", s[k].i);
		fputs(",state=\"active\"", f);
		prom_u64(f, s[k].paths_active);
		prom_iface_labels(f, "efi_interface_paths", s[k].i);
		fputs(",state=\"suspect\"", f);
		prom_u64(f, s[k].paths_suspect);
	}
	for (int h = 0; h < HD_COUNT; h++) {
		bool any = false;
		snprintf(name, sizeof(name), "efi_interface_host_device_%s_total", hd_names[h]);
		for (size_t k = 0; k < l->nifaces; k++) {
			if (!s[k].hd.present)
				continue;
			if (!any)
				prom_family(f, name, "counter",
					    "The kernel's counter of the interface's host-side device "
					    "(the veth end on the uplink bridge): all its traffic, EFI or not.");
			any = true;
			prom_iface_labels(f, name, s[k].i);
			prom_u64(f, s[k].hd.v[h]);
		}
	}

	for (int c = 0; c < EFI_CSHM_COUNT; c++) {
		snprintf(name, sizeof(name), "efi_context_%s_total", counter_names[c]);
		prom_family(f, name, "counter", counter_help[c]);
		for (size_t k = 0; k < l->nifaces; k++)
			for (size_t x = 0; x < s[k].i->ncontexts; x++) {
				const struct ec_context *cx = &s[k].i->contexts[x];
				prom_ctx_labels(f, name, s[k].i, cx);
				prom_u64(f, cx->counters[c]);
			}
	}
	prom_family(f, "efi_context_peers_omitted", "gauge",
		    "Peers of the context left out of its counters page (it holds 14).");
	for (size_t k = 0; k < l->nifaces; k++)
		for (size_t x = 0; x < s[k].i->ncontexts; x++) {
			const struct ec_context *cx = &s[k].i->contexts[x];
			prom_ctx_labels(f, "efi_context_peers_omitted", s[k].i, cx);
			prom_u64(f, cx->peers_omitted);
		}
	prom_family(f, "efi_peer_qps", "gauge", "Connected QPs of the context to the peer.");
	for (size_t k = 0; k < l->nifaces; k++)
		for (size_t x = 0; x < s[k].i->ncontexts; x++) {
			const struct ec_context *cx = &s[k].i->contexts[x];
			for (size_t p = 0; p < cx->npeers; p++) {
				char buf[64];
				prom_ctx_labels(f, "efi_peer_qps", s[k].i, cx);
				fputs(",peer=", f);
				prom_value(f, efi_gid_format(&cx->peers[p].addr, buf, sizeof(buf)));
				prom_u64(f, cx->peers[p].qps);
			}
		}
	prom_family(f, "efi_path_up", "gauge",
		    "1 while the path is in use, 0 while it is suspected (silent, avoided and probed).");
	for (size_t k = 0; k < l->nifaces; k++)
		for (size_t x = 0; x < s[k].i->ncontexts; x++) {
			const struct ec_context *cx = &s[k].i->contexts[x];
			for (size_t p = 0; p < cx->npeers; p++)
				for (size_t q = 0; q < cx->peers[p].npaths; q++) {
					const struct ec_path *pa = &cx->peers[p].paths[q];
					prom_path_labels(f, "efi_path_up", s[k].i, cx, &cx->peers[p], pa);
					prom_u64(f, !pa->suspect);
				}
		}
	for (int v = 0; v < EFI_CSHM_PATH_VALUES; v++) {
		prom_family(f, path_metrics[v].name, path_metrics[v].type, path_metrics[v].help);
		for (size_t k = 0; k < l->nifaces; k++)
			for (size_t x = 0; x < s[k].i->ncontexts; x++) {
				const struct ec_context *cx = &s[k].i->contexts[x];
				for (size_t p = 0; p < cx->npeers; p++)
					for (size_t q = 0; q < cx->peers[p].npaths; q++) {
						const struct ec_path *pa = &cx->peers[p].paths[q];
						prom_path_labels(f, path_metrics[v].name, s[k].i, cx,
								 &cx->peers[p], pa);
						prom_scaled(f, pa->values[v], path_metrics[v].div);
					}
			}
	}
	prom_ext(f, l, s);
	prom_family(f, "efi_qp_info", "gauge",
		    "A connection-manager connection (always 1): its QP, the peer's QP and GID, its state.");
	for (size_t k = 0; k < l->nifaces; k++) {
		const struct ec_iface *i = s[k].i;
		for (size_t c = 0; c < i->nconns; c++) {
			const struct ec_cm_conn *cn = &i->conns[c];
			char buf[64];
			prom_iface_labels(f, "efi_qp_info", i);
			fprintf(f, ",qpn=\"%u\",peer_qpn=\"%u\",peer=", cn->qpn, cn->peer_qpn);
			prom_value(f, efi_gid_format(&cn->peer_gid, buf, sizeof(buf)));
			fputs(",state=", f);
			prom_value(f, cn->state ? cn->state : "");
			if (cn->has_pid)
				fprintf(f, ",pid=\"%u\"", cn->pid);
			prom_u64(f, 1);
		}
	}
	return fflush(f) == EOF ? -EIO : 0;
}

/* ---- for people ------------------------------------------------------------ */

static void print_counters(const char *label, const uint64_t *c, int indent)
{
	printf("%*s%-10s tx %" PRIu64 " pkts %" PRIu64 " B, rx %" PRIu64 " pkts %" PRIu64
	       " B, retrans %" PRIu64 ", timeouts %" PRIu64 ", dups %" PRIu64
	       ", RNR NAKs %" PRIu64 "/%" PRIu64 ", seq NAKs %" PRIu64 "/%" PRIu64
	       ", drops %" PRIu64 "\n",
	       indent, "", label, c[EFI_CSHM_TX_PACKETS], c[EFI_CSHM_TX_BYTES],
	       c[EFI_CSHM_RX_PACKETS], c[EFI_CSHM_RX_BYTES], c[EFI_CSHM_RETRANSMISSIONS],
	       c[EFI_CSHM_TIMEOUTS], c[EFI_CSHM_DUPLICATES], c[EFI_CSHM_RNR_NAKS_SENT],
	       c[EFI_CSHM_RNR_NAKS_RECEIVED], c[EFI_CSHM_SEQ_NAKS_SENT],
	       c[EFI_CSHM_SEQ_NAKS_RECEIVED], c[EFI_CSHM_DROPS]);
}

static void stats_print(const struct ec_listing *l, const struct istats *s)
{
	for (size_t n = 0; n < l->nuplinks; n++)
		printf("uplink %s: %s, %d lane%s, %u change%s\n%s", l->uplinks[n].name,
		       l->uplinks[n].link && *l->uplinks[n].link ? l->uplinks[n].link : "unknown",
		       __builtin_popcount(l->uplinks[n].lanes),
		       __builtin_popcount(l->uplinks[n].lanes) == 1 ? "" : "s", l->uplinks[n].changes,
		       l->uplinks[n].changes == 1 ? "" : "s", n + 1 == l->nuplinks ? "\n" : "");
	if (l->nifaces == 0) {
		printf("no interfaces attached\n");
		return;
	}
	for (size_t k = 0; k < l->nifaces; k++) {
		const struct ec_iface *i = s[k].i;
		char label[32], buf[64];
		printf("%s%s/%s: %s, link %s, %zu context%s, %u QP%s, paths %u active %u suspect\n",
		       k ? "\n" : "", i->instance, i->name, i->state ? i->state : "-",
		       i->link ? i->link : "-", i->ncontexts, i->ncontexts == 1 ? "" : "s", i->qps,
		       i->qps == 1 ? "" : "s", s[k].paths_active, s[k].paths_suspect);
		if (s[k].hd.present)
			printf("  %-10s %s: rx %" PRIu64 " pkts %" PRIu64 " B, %" PRIu64
			       " dropped; tx %" PRIu64 " pkts %" PRIu64 " B, %" PRIu64 " dropped\n",
			       "device", i->host_ifname, s[k].hd.v[HD_RX_PACKETS],
			       s[k].hd.v[HD_RX_BYTES], s[k].hd.v[HD_RX_DROPPED],
			       s[k].hd.v[HD_TX_PACKETS], s[k].hd.v[HD_TX_BYTES],
			       s[k].hd.v[HD_TX_DROPPED]);
		if (i->ncontexts)
			print_counters("total", s[k].totals, 2);
		for (size_t x = 0; x < i->ncontexts; x++) {
			snprintf(label, sizeof(label), "pid %u", i->contexts[x].pid);
			print_counters(label, i->contexts[x].counters, 2);
			ec_peers_print(stdout, &i->contexts[x], 13);
			ec_qps_print(stdout, &i->contexts[x], 13);
		}
		for (size_t c = 0; c < i->nconns; c++) {
			const struct ec_cm_conn *cn = &i->conns[c];
			printf("  %-10s QP %u -> %s QP %u, %s", c ? "" : "QPs", cn->qpn,
			       efi_gid_format(&cn->peer_gid, buf, sizeof(buf)), cn->peer_qpn,
			       cn->state ? cn->state : "-");
			if (cn->has_pid)
				printf(", pid %u", cn->pid);
			printf("\n");
		}
	}
}

/* ---- the command ------------------------------------------------------------ */

int cmd_stats(struct efictl *ctx, int argc, char **argv)
{
	enum { OPT_PROMETHEUS = 0x200 };
	static const struct option longopts[] = {
		EFICTL_GLOBAL_OPTIONS,
		{ "prometheus", no_argument, NULL, OPT_PROMETHEUS },
		{ NULL, 0, NULL, 0 },
	};
	struct ctl_reply rep;
	struct ec_listing l;
	struct istats *s = NULL;
	const char *instance = NULL, *name = NULL;
	bool prometheus = false;
	int c, r;

	while ((c = efictl_getopt(ctx, argc, argv, "", longopts)) != -1) {
		if (c == EFICTL_OPT_STOP)
			return ctx->stop_exit;
		if (c == OPT_PROMETHEUS)
			prometheus = true;
	}
	if (optind < argc)
		instance = argv[optind++];
	if (optind < argc)
		name = argv[optind++];
	if (optind < argc)
		return efictl_usage_error(ctx, "stats", "unexpected argument '%s'", argv[optind]);
	if (prometheus && ctx->json)
		return efictl_usage_error(ctx, "stats", "--json and --prometheus exclude each other");
	if (instance && !efi_instance_name_valid(instance))
		return efictl_usage_error(ctx, "stats", "invalid instance name '%s'", instance);
	if (name && !efi_ifname_valid(name))
		return efictl_usage_error(ctx, "stats", "invalid interface name '%s'", name);

	r = efictl_fetch_listing(ctx, "stats", instance, name, &rep, &l);
	if (r)
		return r;
	if (instance && l.nifaces == 0) {
		if (name)
			r = efictl_report(ctx, EXIT_NOT_FOUND, "not-found", ENOENT,
					  "instance %s has no interface %s (see `efictl list`)",
					  instance, name);
		else
			r = efictl_report(ctx, EXIT_NOT_FOUND, "not-found", ENOENT,
					  "instance %s has no interfaces (see `efictl list`)",
					  instance);
		goto out;
	}
	if (l.nifaces) {
		s = calloc(l.nifaces, sizeof(*s));
		if (!s) {
			r = efictl_report(ctx, EXIT_FAIL, "failed", ENOMEM, "out of memory");
			goto out;
		}
	}
	for (size_t k = 0; k < l.nifaces; k++)
		istats_fill(&s[k], &l.ifaces[k]);
	if (ctx->json)
		stats_json(&l, s);
	else if (prometheus)
		stats_prometheus(&l, s);
	else
		stats_print(&l, s);
	r = EXIT_OK;
out:
	free(s);
	ec_listing_free(&l);
	ctl_reply_free(&rep);
	return r;
}
