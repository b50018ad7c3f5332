/* SPDX-License-Identifier: MIT */
/*
 * lossy-test integrity: --messages messages of every opcode (Send,
 * Send+Imm, Write, Write+Imm, Read, fetch-add, compare-swap) and random
 * sizes, from the client (requester) to the server (target), on one QP.
 *
 * Both sides derive the same schedule from --seed: message seq's opcode,
 * size, Read offset and atomic operands are a function of (seed, seq).  So
 * the target knows exactly what it must see next, and the requester what
 * each completion must return:
 *  - the target takes the visible messages (Send, Send+Imm, Write+Imm) off
 *    its receive CQ and requires them to be the next visible ones of the
 *    schedule, with the right opcode, length, immediate and receive buffer;
 *    on each it also checks the invisible Writes posted before it (RC places
 *    them first).  Payloads carry their sequence number and a checksum of
 *    the rest (messages under 16 bytes are compared byte for byte): a lost,
 *    duplicated, reordered or corrupted message fails at the target;
 *  - the requester requires its send completions in posting order, checks
 *    every Read against the pattern the target's memory holds, and every
 *    atomic's returned value against the sequence of atomics so far (a
 *    duplicated execution shows); at the end the target compares its final
 *    atomic words with what the requester computed.
 * Flow control: the target returns credits (Send+Imm, 0 bytes, imm = number
 * of messages verified) every window/4 messages; the requester keeps seq <
 * credit + window, so the target's Write slots and receive buffers (window
 * of each, indexed seq % window) are never reused before they are checked.
 * The first BIG_SLOTS slots take up to --max-size bytes, the others 64 KiB:
 * the schedule gives the largest messages only to big slots.
 * Every window/4-th message of the schedule is visible, so credits flow.
 *
 * Sizes (mean about 1.1 KiB, so 10^6
 * messages are about 1.1 GB): 97.9% up to 4 KiB (an exponent e uniform in
 * 1 … 12, then a size uniform in 0 … 2^e: many tiny messages, about 8% of
 * them 0 bytes), 2% 4 KiB … 64 KiB, 0.1% 64 KiB … 1 MiB (--max-size caps).
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lossy/lossy.h"

enum msg_op { OP_SEND, OP_SEND_IMM, OP_WRITE, OP_WRITE_IMM, OP_READ, OP_FAA, OP_CAS };

static const char *const op_names[] = { "Send", "Send+Imm", "Write", "Write+Imm", "Read",
					"fetch-add", "compare-swap" };

struct msg {
	enum msg_op op;
	uint32_t len;
	uint32_t roff;		/* Read: offset in the target's read region */
	uint64_t operand;	/* fetch-add: the addend; compare-swap: the swap value */
	bool cas_hit;		/* compare-swap: compare with the current value */
};

/* Message slots, indexed seq % window: the first BIG_SLOTS hold up to
 * --max-size bytes, the others up to 64 KiB (the schedule puts the largest
 * messages only on the big ones), so a deep window costs little memory. */
#define BIG_SLOTS	4
#define SMALL_SLOT	65536u

struct layout {
	uint32_t window, big, small;	/* bytes per big and small slot */
	size_t area;			/* bytes of one set of window slots */
	size_t t_read, t_atom, t_write, t_recv, t_size;	/* the target's buffer */
	size_t c_credit, c_size;			/* the requester's */
};

#define READ_SALT	0x5eadull
#define ATOM_SALT	0xa70full
#define CREDIT_BYTES	64

static bool op_visible(enum msg_op op)
{
	return op == OP_SEND || op == OP_SEND_IMM || op == OP_WRITE_IMM;
}

/* A size from 64 random bits.  big: the message has a big slot, where
 * 64 KiB … 1 MiB come with probability 0.001 × window / BIG_SLOTS, so
 * 0.1% of all messages are that large. */
static uint32_t msg_size(uint64_t r, uint32_t max, bool big, uint32_t window)
{
	uint32_t cls = (uint32_t)(r % 1000), e, len;
	uint64_t u = r >> 16;

	if (big && (r >> 44) % 100000 < 100u * window / BIG_SLOTS)
		cls = 999;
	else if (cls == 999)
		cls = 998;
	if (cls < 979) {
		e = 1 + (uint32_t)(u % 12);
		len = (uint32_t)((u >> 8) % ((1ull << e) + 1));
	} else if (cls < 999) {
		e = 12 + (uint32_t)(u % 4);
		len = (1u << e) + (uint32_t)((u >> 8) % (1ull << e));
	} else {
		e = 16 + (uint32_t)(u % 4);
		len = (1u << e) + (uint32_t)((u >> 8) % ((1ull << e) + 1));
	}
	return len < max ? len : max;
}

/* Message seq of the schedule of (seed, n messages, window). */
static void schedule(const struct lossy_opts *o, uint64_t seq, struct msg *m)
{
	uint64_t r1 = lossy_mix(o->seed * 0x100000001b3ull ^ seq);
	uint64_t r2 = lossy_mix(r1 ^ 0x7e57ull);
	uint32_t k = o->window / 4, p = (uint32_t)(r1 % 100);

	memset(m, 0, sizeof(*m));
	if (seq % k == k - 1 || seq == o->messages - 1)
		m->op = p < 34 ? OP_SEND : p < 67 ? OP_SEND_IMM : OP_WRITE_IMM;
	else
		m->op = p < 20 ? OP_SEND : p < 35 ? OP_SEND_IMM : p < 55 ? OP_WRITE :
			p < 70 ? OP_WRITE_IMM : p < 85 ? OP_READ : p < 93 ? OP_FAA : OP_CAS;
	if (m->op == OP_FAA || m->op == OP_CAS) {
		m->len = 8;
		m->operand = r2;
		m->cas_hit = (r1 >> 40) % 4 != 0;
		return;
	}
	m->len = msg_size(r2, o->max_size, seq % o->window < BIG_SLOTS, o->window);
	if (m->op == OP_READ)
		m->roff = (uint32_t)((r1 >> 32) % ((uint64_t)o->max_size - m->len + 1));
}

static struct layout make_layout(const struct lossy_opts *o)
{
	struct layout l;

	l.window = o->window;
	l.big = (o->max_size + 63) & ~63u;
	l.small = l.big < SMALL_SLOT ? l.big : SMALL_SLOT;
	l.area = (size_t)BIG_SLOTS * l.big + (size_t)(l.window - BIG_SLOTS) * l.small;
	l.t_read = 0;
	l.t_atom = l.big;
	l.t_write = l.t_atom + 64;
	l.t_recv = l.t_write + l.area;
	l.t_size = l.t_recv + l.area;
	l.c_credit = l.area;
	l.c_size = l.c_credit + (size_t)l.window * CREDIT_BYTES;
	return l;
}

/* Where message seq's slot starts in an area, and its size. */
static size_t slot_off(const struct layout *l, uint64_t seq)
{
	uint32_t i = (uint32_t)(seq % l->window);

	return i < BIG_SLOTS ? (size_t)i * l->big : (size_t)BIG_SLOTS * l->big + (size_t)(i - BIG_SLOTS) * l->small;
}

static uint32_t slot_len(const struct layout *l, uint64_t seq)
{
	return seq % l->window < BIG_SLOTS ? l->big : l->small;
}

/* ------------------------------------------------------------ payloads */

static uint64_t msg_seed(const struct lossy_opts *o, uint64_t seq)
{
	return lossy_mix(o->seed ^ (seq * 0x9e3779b97f4a7c15ull));
}

static uint64_t checksum(const uint8_t *p, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull ^ len, w;
	size_t i = 0;

	for (; i + 8 <= len; i += 8) {
		memcpy(&w, p + i, 8);
		h = (h ^ w) * 0x100000001b3ull;
		h ^= h >> 29;
	}
	for (; i < len; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

/* Message seq's payload: a pattern unique to it; from 16 bytes on, its
 * sequence number and the checksum of the rest in front. */
static void fill_msg(const struct lossy_opts *o, uint8_t *buf, uint32_t len, uint64_t seq)
{
	uint64_t sum;

	dp_fill(buf, len, msg_seed(o, seq));
	if (len < 16)
		return;
	sum = checksum(buf + 16, len - 16);
	memcpy(buf, &seq, 8);
	memcpy(buf + 8, &sum, 8);
}

static void check_msg(const struct lossy_opts *o, const uint8_t *buf, uint32_t len, uint64_t seq,
		      const char *what)
{
	uint64_t got_seq, got_sum;

	if (len < 16) {
		size_t bad = dp_verify(buf, len, msg_seed(o, seq));

		DP_CHECK(!bad, "message %" PRIu64 " (%s, %u B): byte %zu differs (lost, duplicated or "
			 "corrupted)", seq, what, len, bad - 1);
		return;
	}
	memcpy(&got_seq, buf, 8);
	memcpy(&got_sum, buf + 8, 8);
	DP_CHECK(got_seq == seq, "message %" PRIu64 " (%s, %u B): the buffer holds message %" PRIu64
		 "'s sequence number (lost, duplicated or out of order)", seq, what, len, got_seq);
	DP_CHECK(got_sum == checksum(buf + 16, len - 16),
		 "message %" PRIu64 " (%s, %u B): checksum mismatch (corrupted payload)", seq, what, len);
}

static void atom_initial(const struct lossy_opts *o, uint64_t *faa, uint64_t *cas)
{
	*faa = lossy_mix(o->seed ^ ATOM_SALT);
	*cas = lossy_mix(*faa);
}

/* ---------------------------------------------------------- the target */

struct target {
	const struct lossy_opts *o;
	struct layout l;
	struct dp_conn *c;
	uint64_t verified;	/* every message below this one checked */
	uint64_t visible;	/* visible messages taken */
	uint64_t recv_next;	/* receives are posted for the visible messages below it */
	uint64_t credit_posted, credit_done, credit_sent_at;
	bool credit_due;
	double last_progress;
};

static void target_send_credit(struct target *t)
{
	struct efi_send_wr wr = { .wr_id = t->credit_posted, .opcode = EFI_WR_SEND_WITH_IMM,
				  .send_flags = EFI_SEND_SIGNALED }, *bad = NULL;
	int rc;

	wr.imm_data = htonl((uint32_t)t->verified);
	rc = efi_post_send(t->c->qp, &wr, &bad);
	if (rc == ENOMEM)	/* send queue full: again on the next turn */
		return;
	DP_CHECK(rc == 0, "posting a credit: %s", strerror(rc));
	t->credit_posted++;
	t->credit_sent_at = t->verified;
	t->credit_due = false;
}

static void target_poll_credits(struct target *t)
{
	struct efi_wc wc[16];
	int n = efi_poll_cq(t->c->scq, 16, wc);

	DP_CHECK(n >= 0, "efi_poll_cq: %d", n);
	for (int i = 0; i < n; i++) {
		DP_CHECK(wc[i].status == EFI_WC_SUCCESS, "credit Send %" PRIu64 ": %s (QP error)",
			 wc[i].wr_id, efi_wc_status_str(wc[i].status));
		DP_CHECK(wc[i].wr_id == t->credit_done, "credit Send completion %" PRIu64 ", expected %"
			 PRIu64 " (out of order)", wc[i].wr_id, t->credit_done);
		t->credit_done++;
		t->last_progress = dp_now();
	}
}

/* Posts a receive, in message seq's slot, for each visible message of the
 * window: the requester sends none beyond it, and a slot is reused only
 * once its message is verified. */
static void target_post_recvs(struct target *t)
{
	struct msg m;

	for (; t->recv_next < t->o->messages && t->recv_next < t->verified + t->l.window; t->recv_next++) {
		schedule(t->o, t->recv_next, &m);
		if (op_visible(m.op))
			dp_post_recv(t->c, t->l.t_recv + slot_off(&t->l, t->recv_next),
				     slot_len(&t->l, t->recv_next), t->recv_next);
	}
}

/* A visible message arrived: it must be the next visible one. */
static void target_take(struct target *t, const struct efi_wc *wc)
{
	const struct lossy_opts *o = t->o;
	uint64_t v = t->verified;
	struct msg m;
	const uint8_t *data;

	DP_CHECK(wc->status == EFI_WC_SUCCESS, "receive completion after message %" PRIu64
		 " verified: %s (QP error)", t->verified, efi_wc_status_str(wc->status));
	for (;; v++) {
		DP_CHECK(v < o->messages, "a receive completion after the last message (%" PRIu64
			 "): duplicated delivery", o->messages);
		schedule(o, v, &m);
		if (op_visible(m.op))
			break;
	}
	DP_CHECK(wc->wr_id == v, "message %" PRIu64 " (%s) completed the receive posted for message %"
		 PRIu64 " (receives consumed out of order)", v, op_names[m.op], wc->wr_id);
	if (m.op == OP_WRITE_IMM) {
		DP_CHECK(wc->opcode == EFI_WC_RECV_RDMA_WITH_IMM, "message %" PRIu64 " should be a "
			 "Write+Imm, the completion says opcode %d (lost or out of order)", v, wc->opcode);
	} else {
		DP_CHECK(wc->opcode == EFI_WC_RECV, "message %" PRIu64 " should be a %s, the completion "
			 "says opcode %d (lost or out of order)", v, op_names[m.op], wc->opcode);
		DP_CHECK(wc->byte_len == m.len, "message %" PRIu64 " (%s): %u bytes received, sent %u",
			 v, op_names[m.op], wc->byte_len, m.len);
	}
	if (m.op == OP_SEND) {
		DP_CHECK(!(wc->wc_flags & EFI_WC_WITH_IMM), "message %" PRIu64 " (Send) completed with "
			 "an immediate (another message's?)", v);
	} else {
		DP_CHECK(wc->wc_flags & EFI_WC_WITH_IMM, "message %" PRIu64 " (%s) without its "
			 "immediate", v, op_names[m.op]);
		DP_CHECK(ntohl(wc->imm_data) == (uint32_t)v, "message %" PRIu64 " (%s) carries "
			 "immediate %u: lost, duplicated or out of order", v, op_names[m.op],
			 ntohl(wc->imm_data));
	}
	/* RC: the Writes posted before it are placed by now */
	for (uint64_t w = t->verified; w < v; w++) {
		struct msg mw;

		schedule(o, w, &mw);
		if (mw.op == OP_WRITE)
			check_msg(o, t->c->buf + t->l.t_write + slot_off(&t->l, w), mw.len,
				  w, "Write");
	}
	if (m.op == OP_WRITE_IMM)
		data = t->c->buf + t->l.t_write + slot_off(&t->l, v);
	else
		data = t->c->buf + t->l.t_recv + slot_off(&t->l, v);
	check_msg(o, data, m.len, v, op_names[m.op]);
	t->visible++;
	t->verified = v + 1;
	target_post_recvs(t);
	t->last_progress = dp_now();
	if (t->verified < o->messages && t->verified - t->credit_sent_at >= t->l.window / 4)
		t->credit_due = true;
}

static void integrity_target(struct dp_side *s, const struct lossy_opts *o, struct dp_conn *c,
			     const struct layout *l)
{
	struct target t = { .o = o, .l = *l, .c = c, .last_progress = dp_now() };
	uint64_t faa, cas, want_faa, want_cas;
	struct efi_wc wc[16];

	target_post_recvs(&t);
	dp_sync(s, "receives posted");
	while (t.verified < o->messages) {
		int n = efi_poll_cq(c->rcq, 16, wc);

		DP_CHECK(n >= 0, "efi_poll_cq: %d", n);
		for (int i = 0; i < n; i++)
			target_take(&t, &wc[i]);
		if (t.credit_due)
			target_send_credit(&t);
		target_poll_credits(&t);
		DP_CHECK(dp_now() - t.last_progress < o->dp.timeout, "no message for %.0f s after %"
			 PRIu64 " of %" PRIu64 " (credits %" PRIu64 " posted, %" PRIu64 " completed)",
			 o->dp.timeout, t.verified, o->messages, t.credit_posted, t.credit_done);
		if (!n)
			sched_yield();
	}
	while (t.credit_done < t.credit_posted) {
		target_poll_credits(&t);
		DP_CHECK(dp_now() - t.last_progress < o->dp.timeout, "credit Sends not completed "
			 "after %.0f s", o->dp.timeout);
		sched_yield();
	}
	dp_sync(s, "all verified");
	DP_CHECK(dp_no_wc_for(c->rcq, 300), "a receive completion after the last message: "
		 "duplicated delivery");
	memcpy(&faa, c->buf + l->t_atom, 8);
	memcpy(&cas, c->buf + l->t_atom + 8, 8);
	want_faa = dp_recv_u64(s, "faa");
	want_cas = dp_recv_u64(s, "cas");
	DP_CHECK(faa == want_faa, "fetch-add word 0x%" PRIx64 ", the requester's sum is 0x%" PRIx64
		 " (an atomic lost or applied twice)", faa, want_faa);
	DP_CHECK(cas == want_cas, "compare-swap word 0x%" PRIx64 ", the requester expects 0x%" PRIx64
		 " (an atomic lost or applied twice)", cas, want_cas);
	dp_log("target: %" PRIu64 " messages in order, none lost or duplicated, payloads and "
	       "atomics intact; %" PRIu64 " credits sent", o->messages, t.credit_posted);
	lossy_print_counters("target", c->qp);
}

/* ------------------------------------------------------- the requester */

struct pending {
	struct msg m;
	uint64_t expect;	/* atomics: the value they must return */
};

struct requester {
	const struct lossy_opts *o;
	struct layout l;
	struct dp_conn *c;
	struct pending *pend;	/* window of them, seq % window */
	uint8_t *read_pattern;	/* what the target's read region holds */
	uint64_t posted, completed, credit, bytes;
	uint64_t faa, cas;	/* the atomic words as they must be after what was posted */
	uint64_t counts[7];
	double last_progress;
};

static void requester_post(struct requester *r)
{
	const struct lossy_opts *o = r->o;
	uint64_t seq = r->posted;
	struct pending *p = &r->pend[seq % r->l.window];
	uint8_t *slot = r->c->buf + slot_off(&r->l, seq);
	struct efi_sge sge = { .addr = (uintptr_t)slot, .lkey = r->c->mr->lkey };
	struct efi_send_wr wr = { .wr_id = seq, .sg_list = &sge, .send_flags = EFI_SEND_SIGNALED },
			   *bad = NULL;
	uint64_t raddr = r->c->remote.addr;
	int rc;

	schedule(o, seq, &p->m);
	sge.length = p->m.len;
	wr.num_sge = p->m.len ? 1 : 0;
	wr.imm_data = htonl((uint32_t)seq);
	switch (p->m.op) {
	case OP_SEND:
	case OP_SEND_IMM:
		wr.opcode = p->m.op == OP_SEND ? EFI_WR_SEND : EFI_WR_SEND_WITH_IMM;
		fill_msg(o, slot, p->m.len, seq);
		break;
	case OP_WRITE:
	case OP_WRITE_IMM:
		wr.opcode = p->m.op == OP_WRITE ? EFI_WR_RDMA_WRITE : EFI_WR_RDMA_WRITE_WITH_IMM;
		fill_msg(o, slot, p->m.len, seq);
		wr.wr.rdma.remote_addr = raddr + r->l.t_write + slot_off(&r->l, seq);
		wr.wr.rdma.rkey = r->c->remote.rkey;
		break;
	case OP_READ:
		wr.opcode = EFI_WR_RDMA_READ;
		memset(slot, 0xee, p->m.len);
		wr.wr.rdma.remote_addr = raddr + r->l.t_read + p->m.roff;
		wr.wr.rdma.rkey = r->c->remote.rkey;
		break;
	case OP_FAA:
		wr.opcode = EFI_WR_ATOMIC_FETCH_AND_ADD;
		wr.wr.atomic.remote_addr = raddr + r->l.t_atom;
		wr.wr.atomic.compare_add = p->m.operand;
		p->expect = r->faa;
		r->faa += p->m.operand;
		break;
	case OP_CAS:
		wr.opcode = EFI_WR_ATOMIC_CMP_AND_SWP;
		wr.wr.atomic.remote_addr = raddr + r->l.t_atom + 8;
		wr.wr.atomic.compare_add = p->m.cas_hit ? r->cas : ~r->cas;
		wr.wr.atomic.swap = p->m.operand;
		p->expect = r->cas;
		if (p->m.cas_hit)
			r->cas = p->m.operand;
		break;
	}
	if (p->m.op == OP_FAA || p->m.op == OP_CAS) {
		memset(slot, 0xee, 8);
		wr.wr.atomic.rkey = r->c->remote.rkey;
	}
	rc = efi_post_send(r->c->qp, &wr, &bad);
	DP_CHECK(rc == 0, "posting message %" PRIu64 " (%s, %u B): %s", seq, op_names[p->m.op],
		 p->m.len, strerror(rc));
	r->posted++;
	r->counts[p->m.op]++;
	r->bytes += p->m.len;
}

static const enum efi_wc_opcode wc_opcode_of[] = {
	[OP_SEND] = EFI_WC_SEND, [OP_SEND_IMM] = EFI_WC_SEND, [OP_WRITE] = EFI_WC_RDMA_WRITE,
	[OP_WRITE_IMM] = EFI_WC_RDMA_WRITE, [OP_READ] = EFI_WC_RDMA_READ,
	[OP_FAA] = EFI_WC_FETCH_ADD, [OP_CAS] = EFI_WC_COMP_SWAP,
};

static void requester_complete(struct requester *r, const struct efi_wc *wc)
{
	uint64_t seq = r->completed, got;
	struct pending *p = &r->pend[seq % r->l.window];
	const uint8_t *slot = r->c->buf + slot_off(&r->l, seq);

	DP_CHECK(wc->status == EFI_WC_SUCCESS, "message %" PRIu64 " (%s, %u B) completed with %s "
		 "(QP error) after %" PRIu64 " good completions", wc->wr_id,
		 wc->wr_id == seq ? op_names[p->m.op] : "?", wc->wr_id == seq ? p->m.len : 0,
		 efi_wc_status_str(wc->status), r->completed);
	DP_CHECK(wc->wr_id == seq, "send completion of message %" PRIu64 ", expected %" PRIu64
		 " (completions out of order or duplicated)", wc->wr_id, seq);
	DP_CHECK(wc->opcode == wc_opcode_of[p->m.op], "message %" PRIu64 " (%s): completion opcode %d",
		 seq, op_names[p->m.op], wc->opcode);
	switch (p->m.op) {
	case OP_READ:
		for (uint32_t i = 0; i < p->m.len; i++)
			DP_CHECK(slot[i] == r->read_pattern[p->m.roff + i], "message %" PRIu64 " (Read, %u B "
				 "at %u): byte %u differs from the target's memory", seq, p->m.len,
				 p->m.roff, i);
		break;
	case OP_FAA:
	case OP_CAS:
		memcpy(&got, slot, 8);
		DP_CHECK(got == p->expect, "message %" PRIu64 " (%s): returned 0x%" PRIx64 ", expected 0x%"
			 PRIx64 " (an atomic lost, reordered or applied twice)", seq, op_names[p->m.op],
			 got, p->expect);
		break;
	default:
		break;
	}
	r->completed++;
	r->last_progress = dp_now();
}

static void requester_credit(struct requester *r, const struct efi_wc *wc)
{
	uint64_t c;

	DP_CHECK(wc->status == EFI_WC_SUCCESS, "credit receive: %s (QP error)",
		 efi_wc_status_str(wc->status));
	DP_CHECK(wc->opcode == EFI_WC_RECV && (wc->wc_flags & EFI_WC_WITH_IMM) && wc->byte_len == 0,
		 "a credit that is not a 0-byte Send+Imm (opcode %d, %u B)", wc->opcode, wc->byte_len);
	c = r->credit + (uint32_t)(ntohl(wc->imm_data) - (uint32_t)r->credit);
	DP_CHECK(c >= r->credit && c <= r->posted, "credit %" PRIu64 " after %" PRIu64 " with %"
		 PRIu64 " posted: the target verified messages never sent", c, r->credit, r->posted);
	r->credit = c;
	dp_post_recv(r->c, r->l.c_credit + wc->wr_id * CREDIT_BYTES, CREDIT_BYTES, wc->wr_id);
	r->last_progress = dp_now();
}

static void integrity_requester(struct dp_side *s, const struct lossy_opts *o, struct dp_conn *c,
				const struct layout *l)
{
	struct requester r = { .o = o, .l = *l, .c = c };
	uint64_t next_report = o->messages / 10;
	struct efi_wc wc[16];
	double t0, secs;

	r.pend = calloc(l->window, sizeof(*r.pend));
	r.read_pattern = malloc(o->max_size);
	DP_CHECK(r.pend && r.read_pattern, "out of memory");
	dp_fill(r.read_pattern, o->max_size, o->seed ^ READ_SALT);
	atom_initial(o, &r.faa, &r.cas);
	for (uint32_t i = 0; i < l->window; i++)
		dp_post_recv(c, l->c_credit + (size_t)i * CREDIT_BYTES, CREDIT_BYTES, i);
	dp_sync(s, "receives posted");
	lossy_started();
	t0 = r.last_progress = dp_now();
	while (r.completed < o->messages) {
		int n;

		while (r.posted < o->messages && r.posted < r.completed + l->window &&
		       r.posted < r.credit + l->window)
			requester_post(&r);
		n = efi_poll_cq(c->scq, 16, wc);
		DP_CHECK(n >= 0, "efi_poll_cq: %d", n);
		for (int i = 0; i < n; i++)
			requester_complete(&r, &wc[i]);
		n = efi_poll_cq(c->rcq, 16, wc);
		DP_CHECK(n >= 0, "efi_poll_cq: %d", n);
		for (int i = 0; i < n; i++)
			requester_credit(&r, &wc[i]);
		DP_CHECK(dp_now() - r.last_progress < o->dp.timeout, "no completion for %.0f s: %" PRIu64
			 " posted, %" PRIu64 " completed, credit %" PRIu64, o->dp.timeout, r.posted,
			 r.completed, r.credit);
		if (r.completed >= next_report && next_report) {
			secs = dp_now() - t0;
			dp_log("%" PRIu64 "/%" PRIu64 " messages, %.1f MB, %.1f s, %.0f messages/s",
			       r.completed, o->messages, (double)r.bytes / 1e6, secs,
			       (double)r.completed / secs);
			next_report += o->messages / 10;
		}
	}
	secs = dp_now() - t0;
	dp_sync(s, "all verified");
	dp_send_u64(s, "faa", r.faa);
	dp_send_u64(s, "cas", r.cas);
	dp_log("requester: %" PRIu64 " completions in order, Reads and atomics as expected",
	       r.completed);
	printf("MIX");
	for (int i = 0; i < 7; i++)
		printf(" %s=%" PRIu64, op_names[i], r.counts[i]);
	printf("\nRESULT mode=integrity messages=%" PRIu64 " bytes=%" PRIu64 " seconds=%.2f "
	       "messages_per_s=%.0f MB_per_s=%.1f\n", o->messages, r.bytes, secs,
	       (double)o->messages / secs, (double)r.bytes / secs / 1e6);
	lossy_print_counters("requester", c->qp);
	free(r.pend);
	free(r.read_pattern);
}

static struct dp_conn *failing_conn;

static void explain_failure(void)
{
	if (failing_conn && failing_conn->qp)
		lossy_print_counters("at-failure", failing_conn->qp);
}

void lossy_integrity(struct dp_side *s, const struct lossy_opts *o)
{
	struct layout l = make_layout(o);
	struct dp_qp_cfg cfg = lossy_qp_cfg(o, l.window, s->opts->server ? l.t_size : l.c_size);
	struct dp_conn c;

	dp_conn_create(s, &c, &cfg);
	if (s->opts->server) {
		uint64_t faa, cas;

		dp_fill(c.buf + l.t_read, o->max_size, o->seed ^ READ_SALT);
		atom_initial(o, &faa, &cas);
		memcpy(c.buf + l.t_atom, &faa, 8);
		memcpy(c.buf + l.t_atom + 8, &cas, 8);
	}
	dp_exchange(s, &c, 1);
	dp_conn_connect(&c);
	dp_sync(s, "connected");
	failing_conn = &c;
	dp_fail_hook = explain_failure;
	if (s->opts->server)
		integrity_target(s, o, &c, &l);
	else
		integrity_requester(s, o, &c, &l);
	dp_fail_hook = NULL;
	dp_sync(s, "integrity done");
	dp_conn_destroy(&c);
}
