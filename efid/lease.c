/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <endian.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

#include "countershm.h"
#include "efid.h"
#include "kernel.h"
#include "lease.h"
#include "lease_int.h"
#include "log.h"
#include "netns.h"
#include "store.h"

struct lease_registry *lease_registry(struct efid *d)
{
	if (!d->leases)
		d->leases = calloc(1, sizeof(*d->leases));
	return d->leases;
}

struct lease *lease_new(struct client *c)
{
	struct lease *l = calloc(1, sizeof(struct lease));
	if (l)
		l->client = c;
	return l;
}

void lease_free(struct efid *d, struct lease *l)
{
	if (!l)
		return;
	struct lease_registry *reg = d->leases;
	for (struct slot **pp = reg ? &reg->slots : NULL; pp && *pp;) {
		struct slot *s = *pp;
		if (s->owner == l) {
			log_debug("lease: slot %u of %s/%s released", s->slot, s->instance, s->ifname);
			*pp = s->next;
			reg->count--;
			free(s);
		} else {
			pp = &s->next;
		}
	}
	lease_quota_gone(d, l);
	if (l->counters)
		munmap((void *)l->counters, l->counters_size);
	free(l);
}

int lease_publish_counters(struct efid *d, struct lease *l, const struct peer *p, int fd,
			   char *err, size_t errlen)
{
	struct stat st;
	int seals;
	void *m;

	(void)d;
	if (!l || l->nslots == 0) {
		snprintf(err, errlen, "publish-counters comes after open-device on the same connection");
		close(fd);
		return -EINVAL;
	}
	/* One page (versions 1 and 2) or a version 3 page: the size, not
	 * the version the writer claims, decides what efid maps and reads. */
	seals = fcntl(fd, F_GET_SEALS);
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (st.st_size != EFI_COUNTERSHM_SIZE && st.st_size != EFI_COUNTERSHM_V3_SIZE) ||
	    seals < 0 || !(seals & F_SEAL_SHRINK)) {
		snprintf(err, errlen,
			 "the counters page must be a memfd of %u or %u bytes sealed against shrinking",
			 EFI_COUNTERSHM_SIZE, EFI_COUNTERSHM_V3_SIZE);
		close(fd);
		return -EINVAL;
	}
	size_t size = (size_t)st.st_size;
	m = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED) {
		int e = errno;
		snprintf(err, errlen, "cannot map the counters page: %s", strerror(e));
		return -e;
	}
	if (l->counters)
		munmap((void *)l->counters, l->counters_size);
	l->counters = m;
	l->counters_size = size;
	l->pid = p->pid;
	return 0;
}

/* Copies the page's values (and, from a version 2 page, its peer table)
 * into *out under its sequence count; false when the writer kept it busy
 * (or it is not a counters page at all).  The copy is bounded here, for
 * every later use: npeers ≤ EFI_CSHM_MAX_PEERS, each npaths ≤
 * EFI_CSHM_MAX_PATHS, and a page older than version 2 has no peers.  The
 * writer is another process: nothing else in the copy is trusted either. */
static bool read_counters(const struct efi_countershm *c, size_t size, struct efi_countershm *out,
			  struct efi_countershm_ext *ext)
{
	const struct efi_countershm_ext *x = efi_cshm_ext(c);

	if (__atomic_load_n(&c->magic, __ATOMIC_RELAXED) != EFI_COUNTERSHM_MAGIC)
		return false;
	for (int tries = 0; tries < 8; tries++) {
		uint32_t s1 = __atomic_load_n(&c->seq, __ATOMIC_ACQUIRE);
		if (s1 & 1)
			continue;
		out->version = __atomic_load_n(&c->version, __ATOMIC_RELAXED);
		for (int i = 0; i < EFI_CSHM_COUNT; i++)
			out->value[i] = __atomic_load_n(&c->value[i], __ATOMIC_RELAXED);
		out->npeers = 0;
		out->peers_omitted = 0;
		if (out->version >= 2) {
			out->npeers = __atomic_load_n(&c->npeers, __ATOMIC_RELAXED);
			out->peers_omitted = __atomic_load_n(&c->peers_omitted, __ATOMIC_RELAXED);
			if (out->npeers > EFI_CSHM_MAX_PEERS)
				out->npeers = EFI_CSHM_MAX_PEERS;
			for (uint32_t k = 0; k < out->npeers; k++)
				efi_cshm_peer_load(&out->peer[k], &c->peer[k]);
		}
		/* Version 3: only from a page mapped at the version 3 size. */
		ext->nqps = 0;
		ext->qps_omitted = 0;
		if (out->version >= 3 && size >= EFI_COUNTERSHM_V3_SIZE) {
			for (unsigned i = 0; i < EFI_CSHM_DROP_REASONS; i++)
				ext->drop_reasons[i] =
					__atomic_load_n(&x->drop_reasons[i], __ATOMIC_RELAXED);
			ext->nqps = __atomic_load_n(&x->nqps, __ATOMIC_RELAXED);
			ext->qps_omitted = __atomic_load_n(&x->qps_omitted, __ATOMIC_RELAXED);
			if (ext->nqps > EFI_CSHM_MAX_QPS)
				ext->nqps = EFI_CSHM_MAX_QPS;
			for (uint32_t k = 0; k < ext->nqps; k++) {
				const struct efi_countershm_qp *q = &x->qp[k];
				struct efi_countershm_qp *o = &ext->qp[k];
				o->qpn = __atomic_load_n(&q->qpn, __ATOMIC_RELAXED);
				o->state = __atomic_load_n(&q->state, __ATOMIC_RELAXED);
				o->peer[0] = __atomic_load_n(&q->peer[0], __ATOMIC_RELAXED);
				o->peer[1] = __atomic_load_n(&q->peer[1], __ATOMIC_RELAXED);
				for (unsigned i = 0; i < EFI_CSHM_QP_VALUES; i++)
					o->value[i] = __atomic_load_n(&q->value[i], __ATOMIC_RELAXED);
			}
			/* Version 4: the stall detector (same size as 3) */
			ext->stalled_qps = 0;
			memset(ext->work, 0, sizeof(ext->work));
			if (out->version >= 4) {
				ext->stalled_qps = __atomic_load_n(&x->stalled_qps, __ATOMIC_RELAXED);
				for (uint32_t k = 0; k < ext->nqps; k++) {
					const struct efi_countershm_qp_work *w = &x->work[k];
					struct efi_countershm_qp_work *o = &ext->work[k];
					o->outstanding = __atomic_load_n(&w->outstanding, __ATOMIC_RELAXED);
					o->stalled_ms = __atomic_load_n(&w->stalled_ms, __ATOMIC_RELAXED);
					o->flags = __atomic_load_n(&w->flags, __ATOMIC_RELAXED) &
						   EFI_CSHM_QPW_RNR;
				}
			}
		}
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&c->seq, __ATOMIC_RELAXED) != s1)
			continue;
		for (uint32_t k = 0; k < out->npeers; k++)
			if (out->peer[k].npaths > EFI_CSHM_MAX_PATHS)
				out->peer[k].npaths = EFI_CSHM_MAX_PATHS;
		return true;
	}
	return false;
}

/* A version 3 page's drops by reason and QP table, bounded by
 * read_counters, into the CONTEXT nest; with version 4's stall detector
 * when the page has it. */
static void put_ext(struct ctl_buf *b, const struct efi_countershm_ext *x, bool v4)
{
	uint64_t le[EFI_CSHM_DROP_REASONS];

	for (unsigned i = 0; i < EFI_CSHM_DROP_REASONS; i++)
		le[i] = htole64(x->drop_reasons[i]);
	ctl_put(b, EFI_A_DROP_REASONS, le, sizeof(le));
	ctl_put_u32(b, EFI_A_QPS_OMITTED, x->qps_omitted);
	if (v4)
		ctl_put_u32(b, EFI_A_QPS_STALLED, x->stalled_qps);
	for (uint32_t k = 0; k < x->nqps; k++) {
		const struct efi_countershm_qp *q = &x->qp[k];
		uint64_t v[EFI_CSHM_QP_VALUES];
		for (unsigned i = 0; i < EFI_CSHM_QP_VALUES; i++)
			v[i] = htole64(q->value[i]);
		size_t n = ctl_nest_begin(b, EFI_A_QP);
		ctl_put_u32(b, EFI_A_QP_NUM, q->qpn & 0xffffff);
		ctl_put_u32(b, EFI_A_QP_STATE, q->state);
		ctl_put(b, EFI_A_PEER_ADDR, q->peer, 16);
		ctl_put(b, EFI_A_QP_VALUES, v, sizeof(v));
		if (v4) {
			ctl_put_u32(b, EFI_A_QP_OUTSTANDING, x->work[k].outstanding);
			ctl_put_u32(b, EFI_A_QP_STALLED_MS, x->work[k].stalled_ms);
			ctl_put_u32(b, EFI_A_QP_WORK_FLAGS, x->work[k].flags);
		}
		ctl_nest_end(b, n);
	}
}

void lease_put_contexts(struct efid *d, struct ctl_buf *b, const char *instance,
			const char *ifname)
{
	const struct lease *seen[64];
	size_t nseen = 0;

	if (!d->leases)
		return;
	for (const struct slot *s = d->leases->slots; s; s = s->next) {
		const struct lease *l = s->owner;
		bool dup = false;
		if (!l->counters || strcmp(s->instance, instance) || strcmp(s->ifname, ifname))
			continue;
		for (size_t i = 0; i < nseen; i++)
			dup |= seen[i] == l;
		if (dup)
			continue;
		if (nseen < sizeof(seen) / sizeof(seen[0]))
			seen[nseen++] = l;
		struct efi_countershm snap; /* a private copy: the page may change under us */
		static struct efi_countershm_ext ext; /* 6.8 KB: efid is one thread */
		uint64_t le[EFI_CSHM_COUNT];
		if (!read_counters(l->counters, l->counters_size, &snap, &ext))
			continue;
		for (int i = 0; i < EFI_CSHM_COUNT; i++)
			le[i] = htole64(snap.value[i]);
		size_t nest = ctl_nest_begin(b, EFI_A_CONTEXT);
		ctl_put_u32(b, EFI_A_PID, (uint32_t)l->pid);
		ctl_put(b, EFI_A_COUNTERS, le, sizeof(le));
		if (snap.version >= 2)
			ctl_put_u32(b, EFI_A_PEERS_OMITTED, snap.peers_omitted);
		/* Path health per peer: read_counters bounded the counts; a path
		 * in a state efid does not know is left out, never passed on. */
		for (uint32_t k = 0; k < snap.npeers; k++) {
			const struct efi_countershm_peer *pe = &snap.peer[k];
			size_t pn = ctl_nest_begin(b, EFI_A_PEER);
			ctl_put(b, EFI_A_PEER_ADDR, pe->addr, 16);
			ctl_put_u32(b, EFI_A_PEER_QPS, pe->qps);
			for (uint32_t i = 0; i < pe->npaths; i++) {
				const struct efi_countershm_path *pa = &pe->path[i];
				if (pa->state != EFI_CSHM_PATH_ACTIVE && pa->state != EFI_CSHM_PATH_SUSPECT)
					continue;
				uint64_t pv[EFI_CSHM_PATH_VALUES] = {
					[EFI_CSHM_PATH_RTT_MIN_US] = htole64(pa->rtt_min_us),
					[EFI_CSHM_PATH_SRTT_US] = htole64(pa->srtt_us),
					[EFI_CSHM_PATH_CWND_MILLI] = htole64(pa->cwnd_milli),
					[EFI_CSHM_PATH_RETRANSMISSIONS] = htole64(pa->retransmissions),
					[EFI_CSHM_PATH_SUSPECTED] = htole64(pa->suspected),
					[EFI_CSHM_PATH_RESTORED] = htole64(pa->restored),
				};
				size_t an = ctl_nest_begin(b, EFI_A_PATH);
				ctl_put_u32(b, EFI_A_PATH_INDEX, i);
				ctl_put_u32(b, EFI_A_PATH_STATE, pa->state);
				ctl_put(b, EFI_A_PATH_VALUES, pv, sizeof(pv));
				ctl_nest_end(b, an);
			}
			ctl_nest_end(b, pn);
		}
		if (snap.version >= 3 && l->counters_size >= EFI_COUNTERSHM_V3_SIZE)
			put_ext(b, &ext, snap.version >= 4);
		ctl_nest_end(b, nest);
	}
}

void lease_registry_free(struct efid *d)
{
	if (!d->leases)
		return;
	while (d->leases->slots) {
		struct slot *s = d->leases->slots;
		d->leases->slots = s->next;
		free(s);
	}
	while (d->leases->usage) {
		struct usage *u = d->leases->usage;
		d->leases->usage = u->next;
		free(u);
	}
	free(d->leases);
	d->leases = NULL;
}

bool lease_qpn_owned(const struct efid *d, const char *instance, const char *ifname, uint32_t qpn,
		     pid_t pid)
{
	unsigned slot = qpn >> LEASE_SLOT_BITS;
	if (!d->leases)
		return false;
	for (const struct slot *s = d->leases->slots; s; s = s->next)
		if (s->slot == slot && s->owner->pid == pid && strcmp(s->instance, instance) == 0 &&
		    strcmp(s->ifname, ifname) == 0)
			return true;
	return false;
}

size_t lease_slots_in_use(const struct efid *d)
{
	return d->leases ? d->leases->count : 0;
}

bool lease_slot_taken(const struct lease_registry *reg, const char *instance, unsigned slot)
{
	for (const struct slot *s = reg->slots; s; s = s->next)
		if (s->slot == slot && strcmp(s->instance, instance) == 0)
			return true;
	return false;
}

int lease_add_slot(struct efid *d, struct lease *l, const struct peer *p, const char *ifname,
		   unsigned slot)
{
	struct lease_registry *reg = lease_registry(d);
	struct slot *s = reg ? calloc(1, sizeof(*s)) : NULL;
	if (!s)
		return -ENOMEM;
	s->owner = l;
	s->slot = slot;
	snprintf(s->instance, sizeof(s->instance), "%s", p->instance);
	snprintf(s->ifname, sizeof(s->ifname), "%s", ifname);
	s->next = reg->slots;
	reg->slots = s;
	reg->count++;
	l->nslots++;
	l->pid = p->pid;
	snprintf(l->instance, sizeof(l->instance), "%s", p->instance);
	return 0;
}

unsigned lease_lane_port(const struct efid *d, unsigned slot, unsigned lane)
{
	return d->config.port_base + lane * EFID_LANE_STRIDE + slot;
}

struct make_socket {
	const char *ifname;
	unsigned port[EFID_LANES_MAX]; /* one per lane */
	unsigned nlanes;
	int fd[EFID_LANES_MAX];        /* out */
	int err;  /* out: errno of the failing step */
	const char *step;
	unsigned failed_port;
};

/* One lane's socket, inside the instance's namespace: the socket belongs to
 * it for life.  Returns the descriptor or -1 with errno and m->step. */
static int make_one_socket(struct make_socket *m, unsigned port)
{
	int off = 0, buf = LEASE_SOCKET_BUFFER;
	struct sockaddr_in6 sin6 = { .sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port),
				     .sin6_addr = IN6ADDR_ANY_INIT };
	int fd = socket(AF_INET6, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0) {
		m->step = "socket";
		return -1;
	}
	m->step = "IPV6_V6ONLY";
	if (setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off)) < 0)
		goto fail;
	m->step = "SO_BINDTODEVICE";
	if (setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, m->ifname, (socklen_t)strlen(m->ifname)) < 0)
		goto fail;
	/* Loss at high rates is receive-buffer overflow (shared/TESTBED.md):
	 * size the buffers deliberately, past rmem_max (efid has CAP_NET_ADMIN). */
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof(buf)) < 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &buf, sizeof(buf)) < 0)
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
	m->step = "bind";
	if (bind(fd, (struct sockaddr *)&sin6, sizeof(sin6)) < 0)
		goto fail;
	return fd;
fail:;
	int e = errno;
	close(fd);
	errno = e;
	return -1;
}

/* Runs inside the instance's namespace: every lane's socket, or none. */
static int make_socket_in_netns(void *ud)
{
	struct make_socket *m = ud;
	unsigned i;

	for (i = 0; i < m->nlanes; i++) {
		m->fd[i] = make_one_socket(m, m->port[i]);
		if (m->fd[i] < 0) {
			m->err = errno;
			m->failed_port = m->port[i];
			while (i--) {
				close(m->fd[i]);
				m->fd[i] = -1;
			}
			return -m->err;
		}
	}
	return 0;
}

static void put_reply(struct efid *d, struct ctl_buf *b, const struct store_iface *it,
		      unsigned slot, unsigned port)
{
	struct store_gid gids[STORE_MAX_GIDS];
	size_t n = 0;

	ctl_put_str(b, EFI_A_INSTANCE, it->spec.instance);
	ctl_put_str(b, EFI_A_IFNAME, it->spec.name);
	ctl_put_u32(b, EFI_A_IFINDEX, it->ifindex);
	ctl_put_u32(b, EFI_A_MTU, it->spec.mtu);
	ctl_put_str(b, EFI_A_HOST_ID, store_host_id(d->store));
	ctl_put_str(b, EFI_A_LINK, it->link);
	if (store_gids_get(d->store, it->id, gids, STORE_MAX_GIDS, &n) == 0) {
		for (size_t i = 0; i < n; i++) {
			size_t g = ctl_nest_begin(b, EFI_A_GID);
			ctl_put_u32(b, EFI_A_GID_INDEX, gids[i].index);
			ctl_put(b, EFI_A_GID_VALUE, gids[i].gid.raw, 16);
			ctl_nest_end(b, g);
		}
	}
	ctl_put_u32(b, EFI_A_PORT, port);
	ctl_put_u32(b, EFI_A_PORT_BASE, d->config.port_base);
	ctl_put_u32(b, EFI_A_LANES, d->config.lanes);
	ctl_put_u32(b, EFI_A_QPN_BASE, slot << LEASE_SLOT_BITS);
	ctl_put_u32(b, EFI_A_QPN_COUNT, LEASE_QPNS_PER_SLOT);
	if (d->config.cc_spec[0])
		ctl_put_str(b, EFI_A_CC_PARAMS, d->config.cc_spec);
}

int lease_open_device(struct efid *d, struct lease *l, const struct peer *p, const char *ifname,
		      struct ctl_buf *body, struct ctl_fds *out, char *err, size_t errlen)
{
	struct lease_registry *reg = lease_registry(d);
	struct store_iface it;
	int r;

	if (!reg || !l)
		return -ENOMEM;
	if (!p->instance[0]) {
		snprintf(err, errlen,
			 "permission denied: devices are opened from inside the instance that owns them (run the program with `ip netns exec INSTANCE …`)");
		return -EPERM;
	}
	r = store_iface_get(d->store, p->instance, ifname, &it);
	if (r == -ENOENT) {
		snprintf(err, errlen, "no EFI interface '%s' in instance '%s' (see `efictl status`)",
			 ifname, p->instance);
		return -ENOENT;
	}
	if (r < 0) {
		snprintf(err, errlen, "cannot read the state database: %s", store_errmsg(d->store));
		return r;
	}
	if (strcmp(it.state, "attached") != 0) {
		snprintf(err, errlen, "interface '%s' of instance '%s' is %s; efid repairs it or `efictl attach` again",
			 ifname, p->instance, it.state);
		return -ENETDOWN;
	}
	if (l->nslots >= LEASE_MAX_PER_CLIENT) {
		snprintf(err, errlen, "this connection already holds %u endpoints (the most one context may have)",
			 l->nslots);
		return -EMFILE;
	}

	int ns = netns_open(p->instance);
	if (ns < 0) {
		snprintf(err, errlen, "cannot enter instance '%s': %s", p->instance, strerror(-ns));
		return ns;
	}
	/* Find a slot whose ports are free in this namespace on every lane:
	 * skip slots efid leased, and ports something else holds (EADDRINUSE). */
	struct make_socket m = { .ifname = it.spec.name, .nlanes = d->config.lanes };
	unsigned slot = 0;
	/* The instance's leased slots, gathered once: asking the list for
	 * each candidate cost 4095 × 4095 comparisons per request once every
	 * slot was held, and a client pipelining such requests stalled efid
	 * for seconds (issue 22). */
	uint8_t taken[LEASE_MAX_SLOTS + 1];
	memset(taken, 0, sizeof(taken));
	for (const struct slot *s = reg->slots; s; s = s->next)
		if (s->slot <= LEASE_MAX_SLOTS && strcmp(s->instance, p->instance) == 0)
			taken[s->slot] = 1;
	r = -EADDRINUSE;
	for (unsigned tries = 0; tries < LEASE_MAX_SLOTS; tries++) {
		unsigned cand = 1 + (reg->cursor++ % LEASE_MAX_SLOTS);
		if (taken[cand])
			continue;
		for (unsigned lane = 0; lane < m.nlanes; lane++)
			m.port[lane] = lease_lane_port(d, cand, lane);
		r = netns_run(d->kernel->self_netns_fd, ns, make_socket_in_netns, &m);
		if (r == 0) {
			slot = cand;
			break;
		}
		if (r != -EADDRINUSE)
			break;
	}
	close(ns);
	if (r < 0) {
		if (r == -EADDRINUSE)
			snprintf(err, errlen, "no slot with free ports on all %u lanes (PortBase %u + lane*%u + 1..%u) in instance '%s'",
				 m.nlanes, d->config.port_base, EFID_LANE_STRIDE, LEASE_MAX_SLOTS,
				 p->instance);
		else
			snprintf(err, errlen, "cannot create the endpoint on %s/%s, port %u (%s): %s",
				 p->instance, ifname, m.failed_port, m.step ? m.step : "setns",
				 strerror(-r));
		return r;
	}

	put_reply(d, body, &it, slot, m.port[0]);
	r = body->err ? body->err : lease_add_slot(d, l, p, it.spec.name, slot);
	if (r) {
		for (unsigned lane = 0; lane < m.nlanes; lane++)
			close(m.fd[lane]);
		return r;
	}
	for (unsigned lane = 0; lane < m.nlanes; lane++)
		out->fd[out->n++] = m.fd[lane];
	log_debug("lease: slot %u (ports %u + lane*%u, %u lanes, QPNs 0x%06x..) of %s/%s to pid %d",
		  slot, m.port[0], EFID_LANE_STRIDE, m.nlanes, slot << LEASE_SLOT_BITS, p->instance,
		  ifname, (int)p->pid);
	return 0;
}
