/*
 * ring.c - perf mmap ring-buffer records, data_src decoding, multiplex
 * scaling and sample-based range estimates (see ring.h).
 *
 * Notes:
 *  - A record that wraps around the end of the ring is copied into a
 *    local buffer first; records are at most 64 KiB (header.size is 16
 *    bits), so one static-size buffer suffices.
 *  - Sample fields come in the kernel's fixed order (include/uapi/linux/
 *    perf_event.h, "PERF_RECORD_SAMPLE"); sample types this parser does
 *    not know (READ, CALLCHAIN, RAW, BRANCH_STACK, REGS_INTR,
 *    ...) are refused by the provider before the event is opened, so a
 *    record never has to be guessed.
 *  - A record whose size is below its header or beyond [tail, head) is
 *    malformed: parsing stops there, counted, and the caller moves the
 *    tail to head (the rest of that batch is lost, never misread).
 */
#include <linux/perf_event.h>
#include <math.h>
#include <string.h>

#include "ameba/ameba.h"
#include "ring.h"

uint64_t pm_ring_supported_types(void)
{
	return PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
	       PERF_SAMPLE_ADDR | PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU |
	       PERF_SAMPLE_PERIOD | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_WEIGHT |
	       PERF_SAMPLE_DATA_SRC | PERF_SAMPLE_PHYS_ADDR | PERF_SAMPLE_STACK_USER;
}

struct cursor {
	const uint8_t *p, *end;
	int bad;
};

static uint64_t take64(struct cursor *c)
{
	uint64_t v = 0;

	if (c->p + 8 > c->end) {
		c->bad = 1;
		return 0;
	}
	memcpy(&v, c->p, 8);
	c->p += 8;
	return v;
}

static int parse_sample(const uint8_t *rec, size_t len, uint64_t type, uint64_t regs_mask,
			struct pm_sample *s)
{
	struct cursor c = { rec + sizeof(struct perf_event_header), rec + len, 0 };
	uint64_t v;

	memset(s, 0, sizeof(*s));
	if (type & PERF_SAMPLE_IDENTIFIER)
		s->id = take64(&c);
	if (type & PERF_SAMPLE_IP)
		s->ip = take64(&c);
	if (type & PERF_SAMPLE_TID) {
		v = take64(&c);
		s->pid = (uint32_t)v;
		s->tid = (uint32_t)(v >> 32);
	}
	if (type & PERF_SAMPLE_TIME)
		s->time_ns = take64(&c);
	if (type & PERF_SAMPLE_ADDR)
		s->addr = take64(&c);
	if (type & PERF_SAMPLE_ID)
		s->id = take64(&c);
	if (type & PERF_SAMPLE_STREAM_ID)
		s->stream_id = take64(&c);
	if (type & PERF_SAMPLE_CPU)
		s->cpu = (uint32_t)take64(&c);
	if (type & PERF_SAMPLE_PERIOD)
		s->period = take64(&c);
	if (type & PERF_SAMPLE_REGS_USER) {
		s->regs_abi = take64(&c);
		if (s->regs_abi) {
			for (int b = 0; b < 64; b++) {
				if (!(regs_mask & (1ull << b)))
					continue;
				v = take64(&c);
				if (s->nr_regs < PM_MAX_REGS)
					s->regs[s->nr_regs++] = v;
			}
		}
	}
	if (type & PERF_SAMPLE_STACK_USER) {
		uint64_t n = take64(&c);

		if (n) {
			if (n > (uint64_t)(c.end - c.p)) {
				c.bad = 1;
				return -1;
			}
			if (n >= 8)
				memcpy(&s->stack0, c.p, 8);
			c.p += n;
			take64(&c);	/* dyn_size */
		}
	}
	if (type & PERF_SAMPLE_WEIGHT)
		s->weight = take64(&c);
	if (type & PERF_SAMPLE_DATA_SRC)
		s->data_src = take64(&c);
	if (type & PERF_SAMPLE_PHYS_ADDR)
		s->phys_addr = take64(&c);
	return c.bad ? -1 : 0;
}

uint64_t pm_ring_parse(const uint8_t *data, uint64_t data_bytes, uint64_t tail, uint64_t head,
		       uint64_t sample_type, uint64_t regs_mask, pm_sample_fn fn, void *arg,
		       struct pm_ring_stats *st)
{
	static uint8_t wrap[65536];
	uint64_t mask = data_bytes - 1;

	while (head - tail >= sizeof(struct perf_event_header)) {
		struct perf_event_header h;
		uint64_t off = tail & mask;
		const uint8_t *rec;

		/* the header itself may straddle the end */
		for (size_t i = 0; i < sizeof(h); i++)
			((uint8_t *)&h)[i] = data[(off + i) & mask];
		if (h.size < sizeof(h) || h.size > head - tail || h.size > data_bytes) {
			st->nr_bad++;
			return head;
		}
		if (off + h.size <= data_bytes) {
			rec = data + off;
		} else {
			uint64_t first = data_bytes - off;

			memcpy(wrap, data + off, first);
			memcpy(wrap + first, data, h.size - first);
			rec = wrap;
		}
		switch (h.type) {
		case PERF_RECORD_SAMPLE: {
			struct pm_sample s;

			if (parse_sample(rec, h.size, sample_type, regs_mask, &s)) {
				st->nr_bad++;
				return head;
			}
			st->nr_samples++;
			if (fn)
				fn(arg, &s);
			break;
		}
		case PERF_RECORD_LOST: {
			uint64_t lost = 0;

			if (h.size >= sizeof(h) + 16)
				memcpy(&lost, rec + sizeof(h) + 8, 8);
			st->nr_lost += lost;
			break;
		}
		case PERF_RECORD_THROTTLE:
			st->nr_throttle++;
			break;
		case PERF_RECORD_UNTHROTTLE:
			st->nr_unthrottle++;
			break;
		default:
			st->nr_other++;
			break;
		}
		tail += h.size;
	}
	return tail;
}

void pm_dsrc_decode(uint64_t v, struct pm_dsrc *d)
{
	uint64_t op = (v >> PERF_MEM_OP_SHIFT) & 0x1f;
	uint64_t lvl = (v >> PERF_MEM_LVL_SHIFT) & 0x3fff;
	uint64_t snoop = (v >> PERF_MEM_SNOOP_SHIFT) & 0x1f;
	uint64_t lock = (v >> PERF_MEM_LOCK_SHIFT) & 0x3;
	uint64_t tlb = (v >> PERF_MEM_TLB_SHIFT) & 0x7f;
	uint64_t lvlnum = (v >> PERF_MEM_LVLNUM_SHIFT) & 0xf;
	uint64_t remote = (v >> PERF_MEM_REMOTE_SHIFT) & 0x1;
	uint64_t snoopx = (v >> PERF_MEM_SNOOPX_SHIFT) & 0x3;

	memset(d, 0, sizeof(*d));
	d->load = !!(op & PERF_MEM_OP_LOAD);
	d->store = !!(op & PERF_MEM_OP_STORE);
	d->locked = !!(lock & PERF_MEM_LOCK_LOCKED);
	d->tlb_miss = !!(tlb & PERF_MEM_TLB_MISS);
	d->hitm = !!(snoop & PERF_MEM_SNOOP_HITM) || !!(snoopx & PERF_MEM_SNOOPX_PEER);
	d->remote = !!remote;
	/* the newer level number wins over the older level bits */
	switch (lvlnum) {
	case PERF_MEM_LVLNUM_L1: d->level = PM_LVL_L1; break;
	case PERF_MEM_LVLNUM_L2: d->level = PM_LVL_L2; break;
	case PERF_MEM_LVLNUM_L3: d->level = PM_LVL_L3; break;
	case PERF_MEM_LVLNUM_L4: d->level = PM_LVL_L3; break;
	case PERF_MEM_LVLNUM_LFB: d->level = PM_LVL_LFB; break;
	case PERF_MEM_LVLNUM_RAM: d->level = PM_LVL_RAM; break;
	case PERF_MEM_LVLNUM_PMEM: d->level = PM_LVL_RAM; break;
	case PERF_MEM_LVLNUM_IO: d->level = PM_LVL_IO; break;
	case PERF_MEM_LVLNUM_ANY_CACHE:
		d->level = remote ? PM_LVL_REMOTE_CACHE : PM_LVL_L3;
		break;
	default:
		break;
	}
	if (d->level == PM_LVL_NA) {
		if (lvl & PERF_MEM_LVL_L1)
			d->level = PM_LVL_L1;
		else if (lvl & PERF_MEM_LVL_LFB)
			d->level = PM_LVL_LFB;
		else if (lvl & PERF_MEM_LVL_L2)
			d->level = PM_LVL_L2;
		else if (lvl & PERF_MEM_LVL_L3)
			d->level = PM_LVL_L3;
		else if (lvl & PERF_MEM_LVL_LOC_RAM)
			d->level = PM_LVL_RAM;
		else if (lvl & (PERF_MEM_LVL_REM_RAM1 | PERF_MEM_LVL_REM_RAM2)) {
			d->level = PM_LVL_RAM;
			d->remote = 1;
		} else if (lvl & (PERF_MEM_LVL_REM_CCE1 | PERF_MEM_LVL_REM_CCE2)) {
			d->level = PM_LVL_REMOTE_CACHE;
			d->remote = 1;
		} else if (lvl & PERF_MEM_LVL_IO)
			d->level = PM_LVL_IO;
		else if (lvl & PERF_MEM_LVL_UNC)
			d->level = PM_LVL_UNCACHED;
	}
	if (d->level == PM_LVL_RAM && (lvl & (PERF_MEM_LVL_REM_RAM1 | PERF_MEM_LVL_REM_RAM2)))
		d->remote = 1;
}

void pm_dsrc_metrics(const struct pm_dsrc *d, double *vals)
{
	int l1m = d->level >= PM_LVL_LFB && d->level != PM_LVL_NA;
	int l2m = d->level >= PM_LVL_L3;
	int llcm = d->level >= PM_LVL_RAM;

	vals[AMEBA_M_MEM_REF] += 1;
	if (d->load)
		vals[AMEBA_M_READS] += 1;
	if (d->store)
		vals[AMEBA_M_WRITES] += 1;
	if (l1m) {
		vals[AMEBA_M_L1D_MISS] += 1;
		vals[d->store ? AMEBA_M_L1D_MISS_WR : AMEBA_M_L1D_MISS_RD] += 1;
	}
	if (l2m) {
		vals[AMEBA_M_L2_MISS] += 1;
		vals[d->store ? AMEBA_M_L2_MISS_WR : AMEBA_M_L2_MISS_RD] += 1;
	}
	if (llcm) {
		vals[AMEBA_M_LLC_MISS] += 1;
		vals[d->store ? AMEBA_M_LLC_MISS_WR : AMEBA_M_LLC_MISS_RD] += 1;
	}
	if (d->tlb_miss)
		vals[AMEBA_M_TLB_MISS] += 1;
	if (d->hitm) {
		vals[AMEBA_M_COH_MISS] += 1;
		vals[AMEBA_M_INTERVENTION] += 1;
	}
	if (d->level == PM_LVL_RAM || d->level == PM_LVL_REMOTE_CACHE)
		vals[d->remote ? AMEBA_M_MEM_REMOTE : AMEBA_M_MEM_LOCAL] += 1;
}

double pm_scale(uint64_t value, uint64_t enabled_ns, uint64_t running_ns, int *ran)
{
	*ran = running_ns > 0;
	if (!running_ns)
		return 0;
	if (running_ns >= enabled_ns)
		return (double)value;
	return (double)value * ((double)enabled_ns / (double)running_ns);
}

void pm_estimate_range(uint64_t nr_in, uint64_t nr_total, uint64_t period,
		       struct pm_estimate *out)
{
	double c;

	out->nr_samples = nr_in;
	out->value = (double)nr_in * (double)(period ? period : 1);
	if (nr_in)
		c = 1.0 - 1.96 / sqrt((double)nr_in);
	else
		c = nr_total ? 1.0 - 1.0 / sqrt((double)nr_total) : 0.0;
	out->confidence = c < 0 ? 0 : c > 1 ? 1 : c;
}
