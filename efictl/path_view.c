/* SPDX-License-Identifier: MIT */
/*
 * The path health of a libefi context's peers in LIST replies (EFI_A_PEER
 * nests inside EFI_A_CONTEXT, from the counters page's peer table), parsed
 * as strictly as the rest of the reply (model.c), in JSON and for people.
 */
#include "config.h"

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "efictl.h"

static const struct ctl_policy peer_policy[EFI_A_MAX] = {
	[EFI_A_PEER_ADDR] = { .kind = CTL_BIN, .minlen = 16, .maxlen = 16 },
	[EFI_A_PEER_QPS] = { .kind = CTL_U32 },
	[EFI_A_PATH] = { .kind = CTL_NEST, .multi = true },
};

static const struct ctl_policy path_policy[EFI_A_MAX] = {
	[EFI_A_PATH_INDEX] = { .kind = CTL_U32 },
	[EFI_A_PATH_STATE] = { .kind = CTL_U32 },
	[EFI_A_PATH_VALUES] = { .kind = CTL_BIN, .minlen = 8 * EFI_CSHM_PATH_VALUES,
				.maxlen = 8 * EFI_CSHM_PATH_VALUES },
};

/* One PATH nest of peer pe: an index below EFI_CSHM_MAX_PATHS not seen
 * before, a known state, the values. */
static int parse_path(const struct ctl_attr *a, struct ec_peer *pe)
{
	struct ctl_attr tb[EFI_A_MAX];
	uint32_t index, state;
	struct ec_path *p;

	if (ctl_parse(a->data, a->len, path_policy, EFI_A_MAX, tb, NULL) ||
	    !ctl_has(tb, EFI_A_PATH_INDEX) || !ctl_has(tb, EFI_A_PATH_STATE) ||
	    !ctl_has(tb, EFI_A_PATH_VALUES))
		return -EBADMSG;
	ctl_attr_u32(&tb[EFI_A_PATH_INDEX], &index);
	ctl_attr_u32(&tb[EFI_A_PATH_STATE], &state);
	if (index >= EFI_CSHM_MAX_PATHS ||
	    (state != EFI_CSHM_PATH_ACTIVE && state != EFI_CSHM_PATH_SUSPECT))
		return -EBADMSG;
	for (size_t k = 0; k < pe->npaths; k++)
		if (pe->paths[k].index == index)
			return -EBADMSG;
	p = ec_grow_one(&pe->paths, &pe->npaths, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->index = index;
	p->suspect = state == EFI_CSHM_PATH_SUSPECT;
	for (int k = 0; k < EFI_CSHM_PATH_VALUES; k++) {
		uint64_t le;
		memcpy(&le, tb[EFI_A_PATH_VALUES].data + 8 * k, 8);
		p->values[k] = le64toh(le);
	}
	return 0;
}

static int parse_peer(const struct ctl_attr *a, struct ec_context *x)
{
	struct ctl_attr tb[EFI_A_MAX];
	struct ctl_iter it;
	struct ctl_attr pa;
	struct ec_peer *pe;
	int r;

	if (ctl_parse(a->data, a->len, peer_policy, EFI_A_MAX, tb, NULL) ||
	    !ctl_has(tb, EFI_A_PEER_ADDR) || !ctl_has(tb, EFI_A_PEER_QPS))
		return -EBADMSG;
	for (size_t k = 0; k < x->npeers; k++)
		if (memcmp(x->peers[k].addr.raw, tb[EFI_A_PEER_ADDR].data, 16) == 0)
			return -EBADMSG; /* listed twice */
	pe = ec_grow_one(&x->peers, &x->npeers, sizeof(*pe));
	if (!pe)
		return -ENOMEM;
	memcpy(pe->addr.raw, tb[EFI_A_PEER_ADDR].data, 16);
	ctl_attr_u32(&tb[EFI_A_PEER_QPS], &pe->qps);
	ctl_iter_nest(&it, a);
	while (ctl_iter_next(&it, &pa))
		if (pa.type == EFI_A_PATH && (r = parse_path(&pa, pe)))
			return r;
	return it.err ? -EBADMSG : 0;
}

int ec_peer_parse_attr(const struct ctl_attr *a, struct ec_context *x)
{
	int r;

	if (a->type == EFI_A_PEERS_OMITTED) {
		if (ctl_attr_u32(a, &x->peers_omitted))
			return -EBADMSG;
		x->has_peers = true;
		return 1;
	}
	if (a->type == EFI_A_PEER) {
		r = parse_peer(a, x);
		if (r)
			return r;
		x->has_peers = true;
		return 1;
	}
	return 0;
}

void ec_peers_free(struct ec_context *x)
{
	for (size_t k = 0; k < x->npeers; k++)
		free(x->peers[k].paths);
	free(x->peers);
	x->peers = NULL;
	x->npeers = 0;
}

void ec_peers_json(struct json *j, const struct ec_context *x)
{
	static const char *const names[EFI_CSHM_PATH_VALUES] = EFI_CSHM_PATH_VALUE_NAMES;
	char buf[INET6_ADDRSTRLEN];

	json_key(j, "peers_omitted");
	if (x->has_peers)
		json_u64(j, x->peers_omitted);
	else
		json_null(j);
	json_key(j, "peers");
	json_arr_begin(j);
	for (size_t k = 0; k < x->npeers; k++) {
		const struct ec_peer *pe = &x->peers[k];
		json_obj_begin(j);
		json_member_str(j, "address", efi_gid_format(&pe->addr, buf, sizeof(buf)));
		json_member_u64(j, "qps", pe->qps);
		json_key(j, "paths");
		json_arr_begin(j);
		for (size_t i = 0; i < pe->npaths; i++) {
			const struct ec_path *p = &pe->paths[i];
			json_obj_begin(j);
			json_member_u64(j, "index", p->index);
			json_member_str(j, "state", p->suspect ? "suspect" : "active");
			for (int v = 0; v < EFI_CSHM_PATH_VALUES; v++) {
				json_member_u64(j, names[v], p->values[v]);
			}
			json_obj_end(j);
		}
		json_arr_end(j);
		json_obj_end(j);
	}
	json_arr_end(j);
}

/* "38 us", or "-" before the first sample. */
static const char *fmt_us(uint64_t us, char *buf, size_t len)
{
	if (!us)
		return "-";
	snprintf(buf, len, "%" PRIu64 " us", us);
	return buf;
}

void ec_peers_print(FILE *f, const struct ec_context *x, int indent)
{
	char buf[INET6_ADDRSTRLEN], min[32], srtt[32];

	if (!x->has_peers)
		return; /* a libefi that publishes no peer table */
	if (x->npeers == 0 && x->peers_omitted == 0) {
		fprintf(f, "%*speers: none connected\n", indent, "");
		return;
	}
	fprintf(f, "%*speers:\n", indent, "");
	for (size_t k = 0; k < x->npeers; k++) {
		const struct ec_peer *pe = &x->peers[k];
		fprintf(f, "%*s%s, %u QP%s\n", indent + 2, "",
			efi_gid_format(&pe->addr, buf, sizeof(buf)), pe->qps, pe->qps == 1 ? "" : "s");
		for (size_t i = 0; i < pe->npaths; i++) {
			const struct ec_path *p = &pe->paths[i];
			const uint64_t *v = p->values;
			fprintf(f,
				"%*spath %u  %-7s  rtt min %s, srtt %s, window %" PRIu64 ".%03" PRIu64
				" pkts, retrans %" PRIu64 ", suspected %" PRIu64 ", restored %" PRIu64 "\n",
				indent + 4, "", p->index, p->suspect ? "suspect" : "active",
				fmt_us(v[EFI_CSHM_PATH_RTT_MIN_US], min, sizeof(min)),
				fmt_us(v[EFI_CSHM_PATH_SRTT_US], srtt, sizeof(srtt)),
				v[EFI_CSHM_PATH_CWND_MILLI] / 1000, v[EFI_CSHM_PATH_CWND_MILLI] % 1000,
				v[EFI_CSHM_PATH_RETRANSMISSIONS], v[EFI_CSHM_PATH_SUSPECTED],
				v[EFI_CSHM_PATH_RESTORED]);
		}
	}
	if (x->peers_omitted)
		fprintf(f, "%*s(%u more peer%s not shown: the context's counters page holds %u)\n",
			indent + 2, "", x->peers_omitted, x->peers_omitted == 1 ? "" : "s",
			EFI_CSHM_MAX_PEERS);
}
