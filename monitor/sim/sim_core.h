/*
 * sim_core.h - the cache simulator's state (cores, caches, directory, LLC,
 * pages) and its L1 hit path, inline: the interface of the simulator to the
 * code that calls it on every access (monitor/backend_sim.c, the assembly
 * fast path's C twin), which needs the layout to hit without a call. The
 * functions behind a miss are private to sim*.c (sim_int.h). The modelling
 * assumptions are in the Notes block of sim.c.
 */
#ifndef AMEBA_MON_SIM_CORE_H
#define AMEBA_MON_SIM_CORE_H

#include <stdint.h>
#include <stddef.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "sim.h"

#define SIM_HIDDEN __attribute__((visibility("hidden")))
#define sim_likely(x) __builtin_expect(!!(x), 1)
#define sim_unlikely(x) __builtin_expect(!!(x), 0)

/* ---- memory: anonymous mappings, never malloc (sim_mem.c) ---- */
void *sim_map(size_t sz) SIM_HIDDEN;		/* zeroed; NULL on failure */
void sim_unmap(void *p, size_t sz) SIM_HIDDEN;
/* Whether no address of this process reaches 2^47, as SIM_KEY32 needs */
int sim_low_addresses(void) SIM_HIDDEN;
/* sim_map for a hot table, aligned for huge pages; sim_unmap(*map, *map_sz) */
void *sim_map_huge(size_t sz, void **map, size_t *map_sz) SIM_HIDDEN;

/* Starts loading p's host cache line. gcc drops __builtin_prefetch in
 * parts of the miss path (sim.c in the runtime's flags), so on x86 the
 * instruction itself. */
static inline void sim_prefetch(const void *p)
{
#if defined(__x86_64__) || defined(__i386__)
	__asm__ __volatile__("prefetcht0 %0" : : "m"(*(const char *)p));
#else
	__builtin_prefetch(p);
#endif
}

/* ---- spinlocks (test-and-test-and-set) ---- */
static inline void sim_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}
void sim_lock_slow(uint32_t *l) SIM_HIDDEN;
static inline void sim_lock(uint32_t *l)
{
	if (sim_likely(!__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE)))
		return;
	sim_lock_slow(l);
}
static inline void sim_unlock(uint32_t *l)
{
	__atomic_store_n(l, 0, __ATOMIC_RELEASE);
}

/* The words (of 1 << wsh bytes) of its coherence line (of 1 << shift
 * bytes) that an access of size bytes at addr within that line touches */
static inline __attribute__((always_inline)) uint64_t sim_words(uintptr_t addr, uint32_t size,
								 uint32_t shift, uint32_t wsh)
{
	const uint64_t mask = (1ull << shift) - 1;
	uint32_t w0 = (uint32_t)((addr & mask) >> wsh);
	uint32_t w1 = (uint32_t)(((addr + size - 1) & mask) >> wsh);

	return (~0ull >> (63 - w1)) & (~0ull << w0);
}

/* ---- one set-associative array (caches and TLBs) ----
 * Way keys: ((line + 1) << 2) | state, 0 = never used. State 0 with a
 * non-zero key is an invalidated tag kept for coherence-miss detection. */
enum { SIM_I = 0, SIM_S = 1, SIM_E = 2, SIM_M = 3 };
#define SIM_ST(key) ((unsigned)((key) & 3u))
#define SIM_KEY(line) (((uint64_t)(line) + 1) << 2)
#define SIM_KEY_LINE(key) (((key) >> 2) - 1)

/* Per-way metadata of the private caches. */
struct sim_meta {
	uint64_t wpub;		/* coherence level: words published to the directory */
	uint32_t cookie;	/* caller's tag of the last access */
	uint32_t dent;		/* coherence level: directory node index */
	uint32_t shadow;	/* L1: 3C shadow node hint */
	uint8_t dirty;		/* written since filled at this level */
	uint8_t track;		/* publish written words to the directory */
	uint8_t priv;		/* coherence level: the line's page is private to
				 * this core (or the core runs solo): no directory
				 * entry, E/M only */
};

/* *m = { .wpub = wpub, .cookie = cookie, .dirty = dirty, .priv = 1 }, the
 * rest 0 (a line filled private), as three word stores where the layout
 * allows (the compound literal's zeroing and byte stores took ~12
 * instructions per lean fill) */
static inline __attribute__((always_inline)) void sim_meta_fill_priv(struct sim_meta *m,
								      uint64_t wpub,
								      uint32_t cookie,
								      int dirty)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	typedef uint64_t word __attribute__((may_alias));
	_Static_assert(sizeof(struct sim_meta) == 24 && offsetof(struct sim_meta, cookie) == 8 &&
			       offsetof(struct sim_meta, dent) == 12 &&
			       offsetof(struct sim_meta, shadow) == 16 &&
			       offsetof(struct sim_meta, dirty) == 20 &&
			       offsetof(struct sim_meta, track) == 21 &&
			       offsetof(struct sim_meta, priv) == 22,
		       "struct sim_meta as sim_meta_fill_priv writes it");
	word *w = (word *)m;

	w[0] = wpub;
	w[1] = cookie;
	w[2] = (uint64_t)(dirty != 0) << 32 | 1ull << 48;
#else
	*m = (struct sim_meta){ .wpub = wpub, .cookie = cookie, .dirty = (uint8_t)(dirty != 0),
				.priv = 1 };
#endif
}

struct sim_cache {
	/* Set s occupies key[s * stride, (s + 1) * stride): assoc way keys,
	 * then the replacement state (assoc LRU stamps or one PLRU word), so
	 * that a lookup and a victim choice touch adjacent host cache lines.
	 * Way w of set s is index s * stride + w, in meta too (meta has the
	 * same layout; the entries beyond assoc are never used). */
	uint64_t *key;
	uint64_t stride;
	struct sim_meta *meta;	/* private caches */
	uint64_t clock;		/* private LRU clock */
	uint64_t nr_sets;
	uint64_t set_mask;	/* nr_sets - 1 when a power of two */
	uint32_t assoc;
	uint32_t line_shift;
	uint8_t pow2, repl, plru_levels;
	size_t map_sz;		/* bytes mapped for this array */
	void *map;
};

static inline uint64_t sim_set_of(const struct sim_cache *k, uint64_t line)
{
	return sim_likely(k->pow2) ? (line & k->set_mask) : (line % k->nr_sets);
}

#ifdef __SSE2__
/* The ways among keys[4g, 4g + 4) (g < groups) whose key's low 32 bits,
 * state bits cleared, are want's: two bits per way (bit 2w, 2w + 1) of
 * the result, or four groups' at most. */
static inline __attribute__((always_inline)) uint32_t sim_find_lo(const uint64_t *keys,
								  uint32_t groups, uint64_t want)
{
	const __m128i m = _mm_set1_epi32(~3), wl = _mm_set1_epi32((int)(uint32_t)want);
	uint32_t bits = 0;

	for (uint32_t g = 0; g < groups; g += 2) {
		const __m128i *k = (const __m128i *)(keys + 4 * g);
		__m128 a = _mm_castsi128_ps(_mm_loadu_si128(k));
		__m128 b = _mm_castsi128_ps(_mm_loadu_si128(k + 1));
		__m128i lo0 = _mm_castps_si128(_mm_shuffle_ps(a, b, 0x88)), lo1 = lo0;

		lo0 = _mm_cmpeq_epi32(_mm_and_si128(lo0, m), wl);
		if (g + 1 < groups) {
			__m128 c = _mm_castsi128_ps(_mm_loadu_si128(k + 2));
			__m128 d = _mm_castsi128_ps(_mm_loadu_si128(k + 3));

			lo1 = _mm_castps_si128(_mm_shuffle_ps(c, d, 0x88));
			lo1 = _mm_cmpeq_epi32(_mm_and_si128(lo1, m), wl);
		} else {
			lo1 = _mm_setzero_si128();
		}
		bits |= (uint32_t)_mm_movemask_epi8(_mm_packs_epi32(lo0, lo1)) << (8 * g);
	}
	return bits;
}
#endif

/* sim_find_in over exactly n ways: n a constant, the loop unrolled whole
 * (no test of a way counter). With SSE2 and n a multiple of 4 up to 16,
 * the low halves of four ways at a time, then the first candidate whose
 * whole key matches (candidates in way order, so the first match wins as
 * in the loop; two lines 2^30 lines apart share a low half): 8 ways in
 * ~16 instructions instead of ~45 (stream's L1 misses, callgrind). */
static inline __attribute__((always_inline)) int sim_find_n(const uint64_t *keys, uint32_t n,
							     uint64_t want)
{
#ifdef __SSE2__
	if (__builtin_constant_p(n) && n % 4 == 0 && n <= 16) {
		for (uint32_t bits = sim_find_lo(keys, n / 4, want); bits; bits &= bits - 1) {
			uint32_t w = (uint32_t)__builtin_ctz(bits) / 2;

			bits &= bits - 1;	/* the way's second bit */
			if ((keys[w] & ~(uint64_t)3) == want)
				return (int)w;
		}
		return -1;
	}
#endif
#pragma GCC unroll 16
	for (uint32_t w = 0; w < n; w++)
		if ((keys[w] & ~(uint64_t)3) == want)
			return (int)w;
	return -1;
}

/* Way holding line's tag (valid or invalidated) among keys[assoc], or -1. */
static inline int sim_find_in(const uint64_t *keys, uint32_t assoc, uint64_t line)
{
	uint64_t want = SIM_KEY(line);

	/* The usual associativities searched by fully unrolled code: ~4
	 * instructions per way where a loop of unknown count, even unrolled,
	 * tests its counter after each way (~7; random kernel). */
	switch (assoc) {
	case 4:
		return sim_find_n(keys, 4, want);
	case 8:
		return sim_find_n(keys, 8, want);
	case 16:
		return sim_find_n(keys, 16, want);
	}
	return sim_find_n(keys, assoc, want);
}

/* Tree-PLRU over one set's bits: after using way w, every node on w's path
 * points away from it. Heap numbering: root 1, children 2n and 2n + 1. */
static inline void sim_plru_touch(uint64_t *bitsp, uint32_t levels, uint32_t w)
{
	uint64_t bits = *bitsp;
	uint32_t node = 1;

	for (int lv = (int)levels - 1; lv >= 0; lv--) {
		uint32_t dir = (w >> lv) & 1;	/* 0 = went left */
		if (dir)
			bits &= ~(1ull << node);	/* next victim on the left */
		else
			bits |= 1ull << node;		/* next victim on the right */
		node = 2 * node + dir;
	}
	*bitsp = bits;
}

static inline uint32_t sim_plru_victim(uint64_t bits, uint32_t levels)
{
	uint32_t node = 1, w = 0;

	for (uint32_t lv = 0; lv < levels; lv++) {
		uint32_t dir = (bits >> node) & 1;
		w = (w << 1) | dir;
		node = 2 * node + dir;
	}
	return w;
}

/* Marks way w most recently used. repl: stamps[assoc] (LRU, clock is the
 * private clock or the LLC set's) or the set's PLRU word. */
static inline void sim_touch_in(uint64_t *repl_state, int repl, uint32_t levels, uint32_t w,
				uint64_t *clock)
{
	if (repl == MRI_GEOM_LRU)
		repl_state[w] = ++*clock;
	else
		sim_plru_touch(repl_state, levels, w);
}

/* The lowest-numbered way of the minimum stamp among n (a constant for
 * the unrolled versions); one load and two cmovs per way. */
static inline __attribute__((always_inline)) uint32_t sim_lru_min_n(const uint64_t *stamps,
								     uint32_t n)
{
	uint64_t best_st = UINT64_MAX;
	uint32_t best = 0;

#pragma GCC unroll 16
	for (uint32_t w = 0; w < n; w++) {
		uint64_t st = stamps[w];
		best = st < best_st ? w : best;
		best_st = st < best_st ? st : best_st;
	}
	return best;
}

/* The host has SSE4.1 and AMEBA_SIM_SSE41 is not 0 (sim_mem.c,
 * mon_sim_sse41): sim_lru_min8 takes the minimum with pminsd */
extern int sim_sse41 SIM_HIDDEN;

/* sim_lru_min_n over 8 ways whose stamps are below 2^31 (the lean path
 * keeps the L1's there: sim_lru_renumber): their low halves as signed
 * 32-bit words, the minimum by three compare-and-select steps (SSE2),
 * or three pminsd where the host has them (the runtime is built for
 * any x86-64, so a test of sim_sse41, not of __SSE4_1__: the assembler
 * takes the instruction whatever the compiler targets), then the
 * lowest-numbered way holding it. An 8-way L1 miss: ~45 -> ~25
 * instructions (stream); pminsd, ~12 fewer (gemm's column walk). */
static inline __attribute__((always_inline)) uint32_t sim_lru_min8(const uint64_t *stamps)
{
#ifdef __SSE2__
	const __m128 *p = (const __m128 *)(const void *)stamps;
	__m128i v = _mm_castps_si128(_mm_shuffle_ps(_mm_loadu_ps((const float *)&p[0]),
						    _mm_loadu_ps((const float *)&p[1]),
						    _MM_SHUFFLE(2, 0, 2, 0)));
	__m128i w = _mm_castps_si128(_mm_shuffle_ps(_mm_loadu_ps((const float *)&p[2]),
						    _mm_loadu_ps((const float *)&p[3]),
						    _MM_SHUFFLE(2, 0, 2, 0)));
	__m128i gt, m, r;

	if (sim_likely(sim_sse41)) {
		m = v;
		__asm__("pminsd %1, %0" : "+x"(m) : "x"(w));
		r = _mm_shuffle_epi32(m, _MM_SHUFFLE(1, 0, 3, 2));
		__asm__("pminsd %1, %0" : "+x"(m) : "x"(r));
		r = _mm_shuffle_epi32(m, _MM_SHUFFLE(2, 3, 0, 1));
		__asm__("pminsd %1, %0" : "+x"(m) : "x"(r));
	} else {
		gt = _mm_cmpgt_epi32(v, w);
		m = _mm_or_si128(_mm_and_si128(gt, w), _mm_andnot_si128(gt, v));
		r = _mm_shuffle_epi32(m, _MM_SHUFFLE(1, 0, 3, 2));
		gt = _mm_cmpgt_epi32(m, r);
		m = _mm_or_si128(_mm_and_si128(gt, r), _mm_andnot_si128(gt, m));
		r = _mm_shuffle_epi32(m, _MM_SHUFFLE(2, 3, 0, 1));
		gt = _mm_cmpgt_epi32(m, r);
		m = _mm_or_si128(_mm_and_si128(gt, r), _mm_andnot_si128(gt, m));
	}
	/* two mask bits per way, ways 0-3 from v, 4-7 from w */
	unsigned mask = (unsigned)_mm_movemask_epi8(
		_mm_packs_epi32(_mm_cmpeq_epi32(v, m), _mm_cmpeq_epi32(w, m)));
	return (uint32_t)__builtin_ctz(mask) >> 1;
#else
	return sim_lru_min_n(stamps, 8);
#endif
}

/* sim_lru_min_n over assoc ways, fully unrolled for the usual
 * associativities */
static inline __attribute__((always_inline)) uint32_t sim_lru_min(const uint64_t *stamps,
								   uint32_t assoc)
{
	switch (assoc) {
	case 4:
		return sim_lru_min_n(stamps, 4);
	case 8:
		return sim_lru_min_n(stamps, 8);
	case 16:
		return sim_lru_min_n(stamps, 16);
	}
	return sim_lru_min_n(stamps, assoc);
}

/* The way to fill: the lowest-numbered empty way, else the lowest
 * invalidated one, else the replacement policy's victim. */
static inline uint32_t sim_victim_in(const uint64_t *keys, const uint64_t *repl_state, int repl,
				     uint32_t assoc, uint32_t levels)
{
	uint32_t w;

	if (repl == MRI_GEOM_PLRU) {
		for (w = 0; w < assoc; w++)
			if (!keys[w])
				return w;
		for (w = 0; w < assoc; w++)
			if (SIM_ST(keys[w]) == SIM_I)
				return w;
		return sim_plru_victim(*repl_state, levels);
	}
	/* LRU: the stamps rank the ways themselves - 0 empty, 1 invalidated
	 * (sim_key_drop keeps that up), a valid way's stamp >= 2 (the clock
	 * starts at 1; stamps are distinct) - so the victim is the
	 * lowest-numbered minimum stamp, one load and two cmovs per way (the
	 * set's ways are unpredictable on a miss: no branch but the loop's).
	 * Random kernel: ~13 -> ~4 instructions per way, against ranking each
	 * way from its key and stamp. */
	(void)keys;
	return sim_lru_min(repl_state, assoc);
}

/*
 * A reference to line in a set kept in recency order (keys[0] the most
 * recently used; the LLC, the L2 TLB): moves line's key to the front and
 * returns its old position, or, on a miss, inserts new_key at the front -
 * into the first empty way (0), else in place of the last (least recently
 * used) key - and returns -1 with the key that fell out (0 if none) in
 * *victim. Keys match on the line, whatever their state bits. One pass
 * that searches and shifts at once (as cachegrind's cg_sim.c), where a
 * search, a scan for an empty way and a shift took three: random kernel,
 * 332 -> 261 instructions per LLC lookup. Empty ways are a suffix of the
 * set unless `holes` (an LLC whose lines other nodes invalidate): then the
 * rest of the set is searched before an empty way is taken.
 */
static inline int sim_mru_ref(uint64_t *keys, uint32_t assoc, uint64_t line, uint64_t new_key,
			      uint64_t *victim, int holes)
{
	uint64_t want = SIM_KEY(line), carry = keys[0];
	uint32_t p;

	if ((carry & ~(uint64_t)3) == want)
		return 0;
	for (p = 1; p < assoc; p++) {
		uint64_t cur = keys[p];
		if (sim_unlikely(!carry) &&
		    (!holes || sim_find_n(keys + p, assoc - p, want) < 0))
			break;	/* an empty way at p - 1 and no line further on: a miss */
		keys[p] = carry;
		if ((cur & ~(uint64_t)3) == want) {
			keys[0] = cur;
			return (int)p;
		}
		carry = cur;
	}
	/* a miss: into the empty way at p - 1 (carry 0), else the last key falls out */
	keys[0] = new_key;
	*victim = carry;
	return -1;
}

/*
 * The same exact LRU for sets of at most 16 ways (the L2 TLB of the
 * presets; the LLC's: sim_llc16_ref, below) with the keys left in their
 * ways, found through a byte of fingerprint per way, and the recency
 * order in one word: nibble k names the way at recency position k (0 the
 * most recently used). A reference compares 8 fingerprints per word
 * operation, checks the key of each match and moves one nibble, where
 * sim_mru_ref compares and shifts key by key: random kernel, ~176 -> ~50
 * instructions per LLC or L2 TLB lookup. *order holds the order XOR
 * SIM_LRU16_ID, so that a zeroed set starts as the identity permutation;
 * nibbles at positions >= assoc hold ways >= assoc and never move. fp:
 * assoc bytes, 0 for an empty way, in (assoc + 7) / 8 words.
 *
 * Same hits, misses and victims as sim_mru_ref: a miss fills an empty way
 * when there is one (any: only the relative order of the valid keys
 * matters, and an empty way evicts nothing), else the least recently used
 * way's key falls out into *victim. Returns the way on a hit, -1 on a miss.
 */
#define SIM_LRU16_ID 0xfedcba9876543210ull
#define SIM_B8(x) ((x) * 0x0101010101010101ull)
static inline void sim_lru16_front(uint64_t *order, uint32_t w)
{
	uint64_t o = *order ^ SIM_LRU16_ID;
	/* position of w: the lowest zero nibble of o ^ (w in every nibble)
	 * (the borrow trick's false positives lie above the first zero) */
	uint64_t x = o ^ (w * 0x1111111111111111ull);
	uint64_t z = (x - 0x1111111111111111ull) & ~x & 0x8888888888888888ull;
	uint32_t sh = (uint32_t)__builtin_ctzll(z) & ~3u;	/* 4 * position */
	uint64_t below = (1ull << sh) - 1;
	uint64_t upto = (below << 4) | 0xf;

	o = (o & ~upto) | ((o & below) << 4) | w;
	*order = o ^ SIM_LRU16_ID;
}

/* 0x80 in each byte of x that is zero, else 0 (exact, no borrow) */
static inline uint64_t sim_zero_bytes(uint64_t x)
{
	uint64_t t = (x & SIM_B8(0x7full)) + SIM_B8(0x7full);
	return ~(t | x | SIM_B8(0x7full));
}

#include "sim_set16.h"	/* the fingerprinted sets: L2 TLB, LLC */

/* Empties (key 0) or invalidates (key with state SIM_I) way index i of a
 * private cache, keeping its LRU stamp the rank sim_victim_in reads. */
static inline void sim_key_drop(struct sim_cache *k, uint64_t i, uint64_t key)
{
	k->key[i] = key;
	if (k->repl == MRI_GEOM_LRU)
		k->key[i + k->assoc] = key != 0;
}

static inline int sim_find(const struct sim_cache *k, uint64_t set, uint64_t line)
{
	return sim_find_in(k->key + set * k->stride, k->assoc, line);
}

static inline uint64_t *sim_repl_state(const struct sim_cache *k, uint64_t set)
{
	return k->key + set * k->stride + k->assoc;
}

static inline void sim_touch(struct sim_cache *k, uint64_t set, uint32_t w, uint64_t *clock)
{
	sim_touch_in(sim_repl_state(k, set), k->repl, k->plru_levels, w, clock);
}

/* sim_touch of private cache k's way by its key index i: LRU stamps it
 * there, without the set * stride that sim_touch computes again (the
 * callers have i; the stride is reloaded after their stores) */
static inline __attribute__((always_inline)) void sim_touch_at(struct sim_cache *k, uint64_t i)
{
	if (sim_likely(k->repl == MRI_GEOM_LRU)) {
		k->key[i + k->assoc] = ++k->clock;
	} else {
		uint64_t set = i / k->stride;
		sim_touch(k, set, (uint32_t)(i - set * k->stride), &k->clock);
	}
}

static inline __attribute__((always_inline)) uint32_t sim_victim(const struct sim_cache *k,
								   uint64_t set)
{
	return sim_victim_in(k->key + set * k->stride, sim_repl_state(k, set), k->repl, k->assoc,
			     k->plru_levels);
}

/* Arrays: flags for sim_cache_init. */
enum { SIM_CA_META = 1 };
int sim_cache_init(struct sim_cache *k, uint64_t nr_sets, uint32_t assoc, uint32_t line_shift,
		   int repl, unsigned flags) SIM_HIDDEN;
void sim_cache_fini(struct sim_cache *k) SIM_HIDDEN;
/*
 * Renumbers the LRU stamps of k, set by set, in the order they had: a
 * valid way's stamp becomes 2 + the number of valid ways of its set with
 * a smaller stamp (0 empty and 1 invalidated stay), and the clock
 * 1 + assoc, so every later stamp exceeds them. Only stamps of one set are
 * ever compared, so every victim, hit and count stays the same. The lean
 * path renumbers the L1 when its clock reaches SIM_STAMP_RENUMBER (about
 * once every 2^30 accesses of a core): its stamps stay below 2^31, and
 * an 8-way victim is found by SSE2 over their low halves
 * (sim_lru_min8). sim_stamp_renumber_at: the threshold (tests lower it).
 */
#define SIM_STAMP_RENUMBER (1ull << 30)
extern uint64_t sim_stamp_renumber_at SIM_HIDDEN;
void sim_lru_renumber(struct sim_cache *k) SIM_HIDDEN;

/* ---- per-core mailbox: invalidations and downgrades from other cores ----
 * Bounded multi-producer single-consumer ring (sequence-numbered slots).
 * Producers push under the directory bucket lock of the line; the core pops
 * at the start of each access and under a bucket lock before it changes its
 * copy of that bucket's line. A full ring sets `resync`: the core then
 * reconciles all its lines with the directory. */
#ifndef SIM_RING_BITS
#define SIM_RING_BITS 12	/* tests build with a tiny ring to exercise overflow */
#endif
#define SIM_RING_CAP (1u << SIM_RING_BITS)
enum { SIM_MSG_INV = 1, SIM_MSG_DOWN = 2 };
struct sim_ring_slot {
	uint64_t seq;
	uint64_t msg;		/* (line << 2) | SIM_MSG_* */
};
struct sim_ring {
	uint64_t tail __attribute__((aligned(64)));	/* producers */
	uint64_t head __attribute__((aligned(64)));	/* consumer */
	struct sim_ring_slot slot[SIM_RING_CAP];
};

#include "sim_shadow.h"	/* the 3C shadow */

/* ---- lines a core has referenced (3C compulsory) ---- */
#define SIM_SEEN_REGION_SHIFT 21	/* 2 MiB regions */
struct sim_seen {
	uint64_t memo_region;	/* last region looked up, + 1 */
	uint64_t *memo_leaf;
	uint64_t *rkey;		/* region + 1, 0 empty */
	uint32_t *rleaf;	/* leaf index (from 1) */
	uint64_t *leaves;	/* bitmaps: leaf_words per leaf */
	uint32_t rmask, nr_leaves, max_leaves, leaf_words;
	size_t map_sz;
	void *map;
};


#define SIM_L0 8

/* mon_sim_access_lean's outcome: the level that served the access (bits
 * 0-1), the TLBs' part (bits 2-3) and, with 3C, an L1 miss's class (bits
 * 4-5) */
enum {
	SIM_LEAN_L1 = 0,	/* an L1 hit */
	SIM_LEAN_LLC = 1,	/* an L1 miss that hit the LLC */
	SIM_LEAN_MEM = 2,	/* served by (local) memory */
	SIM_LEAN_L2 = 3,	/* an L1 miss that hit the L2 (SIM_LEAN_FIT_L2) */
	SIM_LEAN_TLB2 = 4,	/* the L1 TLB missed, the L2 TLB hit */
	SIM_LEAN_WALK = 8,	/* a page walk */
	SIM_LEAN_NR = 12,	/* c->lean_cyc's: (o & SIM_LEAN_CYC) */
	SIM_LEAN_CYC = 15,
	SIM_LEAN_3C_SHIFT = 4,	/* bits 4-5: the miss's 3C class (MON_SIM_3C_*) */
};
/* c->lean: none, or the lean path with the L1 and LLC associativities
 * read from the geometry, or as constants; FIT_8_16_64 the 8- and 16-way
 * kind with 64-byte L1 lines, 4-byte words, no TLB model and sets in
 * powers of two (the cachegrind geometry, the line filter's): its shifts
 * and set masks constants as well; FIT_L2 and after, the kinds with an L2:
 * its associativities read from the geometry, or the 8-way L1 and L2 and
 * 16-way LLC as constants (the L2 as the Zen hosts have it) */
enum {
	SIM_LEAN_NO,
	SIM_LEAN_FIT,
	SIM_LEAN_FIT_8_16,
	SIM_LEAN_FIT_12_16,
	SIM_LEAN_FIT_8_16_64,
	SIM_LEAN_FIT_L2,
	SIM_LEAN_FIT_8_8_16_L2,
};
/* The lean kinds and their constants, for the functions made of each -
 * X(kind, name, a1, a3, c64, l2): sim_lean_body's associativities of the L1
 * and the LLC (0: the geometry's), its 64-byte constants and its L2 (0
 * none, 1 the geometry's ways, else the ways) */
#define SIM_LEAN_KINDS(X)                                \
	X(SIM_LEAN_FIT_8_16_64, 8_16_64, 8, 16, 1, 0)    \
	X(SIM_LEAN_FIT_8_16, 8_16, 8, 16, 0, 0)          \
	X(SIM_LEAN_FIT_12_16, 12_16, 12, 16, 0, 0)       \
	X(SIM_LEAN_FIT, any, 0, 0, 0, 0)                 \
	X(SIM_LEAN_FIT_L2, l2, 0, 0, 0, 1)               \
	X(SIM_LEAN_FIT_8_8_16_L2, 8_8_16_l2, 8, 16, 0, 8)
/* sim_lean_body's coh (sim_lean.h): the merger's lean path for a core
 * that need not be solo, and the line's page known private to it */
enum { SIM_LEAN_COH = 1, SIM_LEAN_COH_PRIV = 2 };
#define SIM_OWN_MEMO 16	/* a power of two */

struct mon_sim_core {
	struct mon_sim *sim;
	uint32_t id, node;
	uint32_t tid;		/* atomic: current thread (first-touch owner) */
	uint32_t resync;	/* atomic: the ring overflowed */
	/* Exclusive use without an atomic read-modify-write per access: the
	 * owning thread marks `busy` around each access; a second thread that
	 * attaches sets `shared`, forces a barrier on every thread
	 * (membarrier) and waits for `busy` to clear; from then on all users
	 * take `lock`. */
	uint32_t busy __attribute__((aligned(64)));	/* atomic */
	uint32_t shared;	/* atomic: SIM_SHARED (sticky) | SIM_HOLD */
	uint32_t mail;		/* atomic: set by producers after a push to `ring` (or
				 * setting `resync`), cleared by the core before it
				 * looks: one load on the hit path */
	uint32_t lock;
	int locked;		/* the current access holds `lock` */
	/* memo of the owner table: pages looked up last (+ 1, entry
	 * sim_own_memo_of(page)), and whether each is private to this core.
	 * Several: dense_2t alternates between the pages of three arrays, and
	 * one entry made nearly every miss look the page up (~55 instructions). */
	uint64_t own_page[SIM_OWN_MEMO];
	uint8_t own_priv[SIM_OWN_MEMO];
	uint32_t owner_tid;	/* under the simulator's create_lock */
	int solo;		/* the simulator runs SOLO (set at creation; cleared
				 * by the SOLO -> MULTI switch with the core held) */
	uint64_t home_page;	/* memo: last page placed and its node */
	uint32_t home_node;

	/* Fast path (see the Notes of sim.c): where the last few L1 lines
	 * accessed sat in the L1, and their pages in the L1 TLB - guesses,
	 * checked against the keys before use. last_line: the line of the
	 * last access, which it left most recently used in the L1, the L1 TLB
	 * and the 3C shadow (entry lastj). */
	struct {
		uint64_t line[SIM_L0];	/* L1 line, UINT64_MAX: empty */
		uint64_t page[SIM_L0];	/* its TLB page */
		uint32_t idx[SIM_L0];	/* its L1 key index set * stride + way */
		uint32_t tidx[SIM_L0];	/* its page's L1 TLB key index */
		uint32_t next;		/* round-robin insertion */
		/* the caller's two words for the line (opaque here; the sim
		 * backend: the object the whole line lies in, and the
		 * thread's counter vector of it; 0 none), taken from cur_tag
		 * by the access that made the entry */
		uintptr_t tag[SIM_L0][2];
		/* the low 32 bits of line[] (UINT32_MAX: empty), for a
		 * vector compare of all entries at once (the x86-64 line
		 * entry, backend_sim.c); a match there is checked in line[] */
		uint32_t lo[SIM_L0] __attribute__((aligned(16)));
	} l0;
	uint64_t last_line, last_i;	/* last_i: its L1 key index */
	uint32_t last_j;	/* last_line's entry in l0 */
	uintptr_t cur_tag[2];	/* the access in progress: its line's tag
				 * (mon_sim_access_tagged), 0 0 for none */
	uint64_t memo_page;	/* TLB page of the last access (MRU in the L1 TLB) */
	uint64_t memo_tidx;	/* its L1 TLB key index */
	uint64_t memo_shadow;	/* L1 line last touched in the 3C shadow */
	int three_c;		/* copies of the geometry's, for the hit path */
	uint32_t l1_hit_cycles;

	struct sim_cache l1, l2, tlb1, tlb2;
	struct sim_cache *coh;	/* the coherence level: &l2, or &l1 without L2 */
	int has_l2, has_tlb2;

	struct sim_ring *ring;
	struct mon_sim_recv *recv;	/* received invalidations not yet collected */
	uint32_t nr_recv;
	uint64_t recv_lost;

	struct sim_shadow shadow;
	struct sim_seen seen;
	uint64_t seen_overflows;
	/* sampled mode's cold LLC sets (sim_llc_fetch, settle_cold): this
	 * core's LLC references in full sets (known) and their misses, and
	 * the dither that settles a miss in a set not yet full */
	uint64_t llc_known, llc_known_miss, llc_cold_credit;
	uint64_t ring_overflows;	/* atomic, by producers */
	/* Whether the lean miss path (mon_sim_access_lean) fits this core's
	 * geometry, and how (SIM_LEAN_FIT*, sim.c: lean_fits); it runs while
	 * the core is solo. lean_cyc: the est_cycles of each of its outcomes
	 * (SIM_LEAN_*). */
	int lean;
	uint32_t lean_cyc[SIM_LEAN_NR];
	struct mon_sim_lf lf;	/* the line filter (sim.h) */
	/* The merger's filter (sim_mf_hit; ordered mode): NULL until its
	 * first entry, never when mf_ok is 0 (a TLB model, 3C, or
	 * AMEBA_SIM_FILTER=0) */
	struct sim_mf_ent *mf;
	int mf_ok;
	/* Dirty lines this core offered its LLC (sim_llc_writeback, and the
	 * lean path's and the filter's miss's copies of it), by its holder:
	 * the LLC's M state feeds no count, so the tests compare this across
	 * the paths (tests/sim/line_filter.sh) */
	uint64_t nr_llc_wb;
	/* the line filter's entries (lf.ent, when the core has a filter), at
	 * a constant offset from lf: the hooks' hit reaches them without
	 * loading the pointer (MON_SIM_LF_TAB, backend_sim.h) */
	struct mon_sim_lf_ent lf_tab[1u << MON_SIM_LF_BITS] __attribute__((aligned(64)));
};
/* The entries of the filter f of a core, from f (f->ent when it has one) */
#define MON_SIM_LF_TAB(f)                                                                  \
	((struct mon_sim_lf_ent *)(void *)((char *)(f) + __builtin_offsetof(struct mon_sim_core, \
									    lf_tab) -      \
					   __builtin_offsetof(struct mon_sim_core, lf)))

/* An entry of the merger's filter: L1 line `line` was at key index i with
 * key word want (its state not I) when the merger last simulated an access
 * to it */
struct sim_mf_ent {
	uint64_t line;		/* UINT64_MAX: empty */
	uint64_t want;
	uint64_t i;
};
#define SIM_MF_BITS 9
static inline uint64_t sim_mf_slot(uint64_t line)
{
	return (line ^ (line >> 16)) & ((1u << SIM_MF_BITS) - 1);
}

/* c->shared: the core is shared by threads (all users lock, for good), or
 * another core holds it still while it reads the core's caches (a page
 * becoming shared, see the owner table). */
enum { SIM_SHARED = 1, SIM_HOLD = 2 };

/* ---- directory (sim_coh.c) ---- */
#define SIM_DIR_STRIPES 1024
struct sim_dnode {
	uint64_t line;
	uint64_t sharers;	/* cores holding a valid copy */
	uint64_t lost;		/* cores holding an invalidated tag */
	uint64_t wmask;		/* atomic: words the owner wrote this ownership */
	uint32_t next;		/* hash chain */
	uint32_t fs;		/* false-sharing record (index) or 0 */
	int32_t owner;		/* E/M holder, -1 none */
	uint32_t dirty_owner;	/* atomic: owner + 1 once the owner wrote */
};
struct sim_stripe {
	uint32_t lock;
	uint32_t free_node;	/* free list of nodes (chained by next) */
	uint32_t free_fs;	/* free list of fs records (chained by word 0) */
	uint32_t pad[13];
};
struct sim_dir {
	uint32_t *head;		/* [nr_buckets] */
	struct sim_stripe *stripe;	/* [SIM_DIR_STRIPES] */
	struct sim_dnode *node;	/* arena, index 0 unused */
	uint64_t *fs;		/* arena: record r = fs[r * nr_cores ...] */
	uint32_t bucket_bits;
	uint32_t node_cap, fs_cap;
	uint32_t node_bump, fs_bump;	/* atomic */
	uint64_t overflows;	/* atomic */
	size_t map_sz;
	void *map;
};

/* ---- shared LLC of one node ----
 * One block of 64-bit words per set, so that a lookup touches few host
 * cache lines. A k32 LLC (16 LRU ways, sim_llc_init): the set is 16
 * 32-bit keys in order of recency, one host line (sim_llc32_ref), its lock
 * in locks[set]. Else [0] the lock; LRU up to 16 ways (lru16): [1] the
 * set's clock (sim_llc16_ref), [2 ..) the fingerprints, then a 16-bit
 * stamp per way, then the keys from keys_off, the block padded to whole
 * host cache lines; else [2 .. 2+assoc) the keys - for LRU in
 * most-to-least recently used order - then, for PLRU, the tree word. A
 * key's state is SIM_S (clean) or SIM_M (dirty); invalidated ways are 0
 * (fingerprint 0, stamp 0). */
struct sim_llc {
	uint64_t *blk;
	uint64_t stride;	/* words per set */
	uint64_t nr_sets, set_mask;
	uint32_t assoc;
	uint32_t keys_off;	/* words from the block's start to its keys */
	uint8_t pow2, repl, plru_levels, lru16;
	uint8_t k32;	/* 16 LRU ways, 32-bit keys (SIM_KEY32): 64-byte sets */
	uint32_t *locks;	/* k32: a lock a set */
	size_t map_sz, locks_sz;
	void *map;
};

/* ---- page placement (sim_mem.c) ---- */
#define SIM_PAGE_REGION_PAGES 512
struct sim_pages {
	uint64_t *rkey;		/* atomic: region + 1 */
	uint32_t *rleaf;	/* atomic: leaf index + 1 */
	uint64_t *leaf;		/* [leaf][SIM_PAGE_REGION_PAGES] atomic entries */
	uint32_t rmask, max_leaves;
	uint32_t nr_leaves;	/* atomic */
	uint64_t overflows;	/* atomic */
	size_t map_sz;
	void *map;
};

/* ---- page owners (sim_coh.c) ----
 * Open addressing, claimed with a CAS, never deleted: entry (page + 1) << 8
 * | state, state SIM_OWN_SHARED or the private owner core + 1. A page is
 * private to the first core that misses on one of its lines in MULTI mode;
 * the lines of a private page have no directory entry (meta.priv). The
 * first miss of another core on it registers the owner's lines (the owner
 * held still) and makes the page shared for good. A page without an entry
 * within the probe limit is shared. */
#define SIM_OWN_SHARED 0xffu
struct sim_owners {
	uint64_t *e;
	uint64_t mask;
	uint64_t overflows;	/* atomic */
	size_t map_sz;
};

struct mon_sim {
	struct mri_geom g;
	/* derived once from g */
	uint32_t l1_shift, coh_shift, word_shift, tlb_shift, page_shift;
	uint32_t l1_per_coh;		/* L1 lines per coherence line */
	struct mon_sim_core *core[MON_SIM_MAX_CORES];	/* atomic pointers */
	uint32_t create_lock;
	int barrier_cmd;		/* membarrier command, 0: cores always lock */
	uint32_t mode;			/* SIM_SOLO / SIM_MULTI, under create_lock */
	struct sim_llc *llc;		/* [nr_nodes] or NULL without LLC */
	struct sim_dir dir;
	struct sim_pages pages;
	struct sim_owners own;
	int settle_cold;		/* mon_sim_settle_cold: sampled mode */
	int no_lf;			/* mon_sim_lf_enable(s, 0) */
	int no_lean;			/* mon_sim_lean(s, 0): cores created later
					 * never take the lean path */
};

/*
 * While only one core exists (single-threaded programs, and multithreaded
 * ones before their second thread starts) nothing can be shared: the
 * simulator runs SOLO, without directory or LLC locks. Creating the second
 * core switches to MULTI for good, holding the first core still while its
 * lines' pages become private to it (sim_dir_register).
 */
enum { SIM_SOLO, SIM_MULTI };

static inline struct mon_sim_core *sim_core_at(struct mon_sim *s, uint32_t id)
{
	return __atomic_load_n(&s->core[id], __ATOMIC_ACQUIRE);
}

/* A k32 LLC's set (sim_coh.c: sim_llc_init): 16 32-bit keys, one host line */
#define SIM_LLC16_STRIDE 8
#define SIM_LLC16_KEYS 0
/* The set block of coherence line `line` in LLC L */
static inline uint64_t *sim_llc_set(const struct sim_llc *L, uint64_t line)
{
	return L->blk + (sim_likely(L->pow2) ? (line & L->set_mask) : (line % L->nr_sets)) * L->stride;
}

/* The lock of set block b of L: its own array's where L is k32, else the
 * block's first word */
static inline uint32_t *sim_llc_lock_of(const struct sim_llc *L, uint64_t *b)
{
	return L->k32 ? L->locks + (uint64_t)(b - L->blk) / SIM_LLC16_STRIDE : (uint32_t *)b;
}

/*
 * Starts the host cache misses of coherence line `line`'s set in node
 * `node`'s LLC (a k32 set's one host line; another's lock, clock,
 * fingerprints and stamps, then its keys), so that they
 * overlap the work before sim_llc_fetch or sim_llc_writeback reads them:
 * an LLC of a few MiB misses the host's own caches on most simulated
 * misses of a random kernel.
 */
static inline void sim_llc_prefetch(const struct mon_sim *s, uint32_t node, uint64_t line)
{
	const struct sim_llc *L = s->llc;

	if (!L)
		return;
	const uint64_t *b = sim_llc_set(L + node, line);
	/* host lines of 8 words; a set of up to 24 words (16 ways): no loop */
	sim_prefetch(b);
	if (L->stride > 8)
		sim_prefetch(b + 8);
	if (L->stride > 16)
		sim_prefetch(b + 16);
}

/* ---- the L1 hit path, inline for the simulator and its caller ---- */

static inline void sim_core_exit(struct mon_sim_core *c, int locked)
{
	if (locked)
		sim_unlock(&c->lock);
	else
		__atomic_store_n(&c->busy, 0, __ATOMIC_RELEASE);
}

/* The inline half of core_enter (sim.c): the owner of an unshared core
 * that no other core holds still enters (returns 1, sim_core_exit(c, 0)
 * leaves); otherwise returns 0 having changed nothing, and core_enter_slow
 * starts over. */
static inline int sim_core_try_enter(struct mon_sim_core *c)
{
	__atomic_store_n(&c->busy, 1, __ATOMIC_RELAXED);
	__asm__ __volatile__("" ::: "memory");
	if (sim_likely(!__atomic_load_n(&c->shared, __ATOMIC_ACQUIRE)))
		return 1;
	__atomic_store_n(&c->busy, 0, __ATOMIC_RELEASE);
	return 0;
}

/* The first entry of c->l0 holding L1 line `line` (no last-line check), or
 * -1. With SSE2 the low halves of the eight entries' lines are compared
 * with line's at once, then the candidates' whole lines in order (lines
 * 2^32 lines apart share a low half). */
static inline __attribute__((always_inline)) int sim_l0_search(const struct mon_sim_core *c,
								uint64_t line)
{
#ifdef __SSE2__
	_Static_assert(SIM_L0 == 8, "sim_l0_search: eight entries");
	__m128i want = _mm_set1_epi32((int)(uint32_t)line);
	__m128i lo = _mm_cmpeq_epi32(_mm_load_si128((const __m128i *)c->l0.lo), want);
	__m128i hi = _mm_cmpeq_epi32(_mm_load_si128((const __m128i *)c->l0.lo + 1), want);
	/* two mask bits per entry: keep the low one */
	unsigned m = (unsigned)_mm_movemask_epi8(_mm_packs_epi32(lo, hi)) & 0x5555u;

	for (; m; m &= m - 1) {
		int j = __builtin_ctz(m) >> 1;

		if (sim_likely(c->l0.line[j] == line))
			return j;
	}
	return -1;
#else
#pragma GCC unroll 8
	for (int j = 0; j < SIM_L0; j++)
		if (c->l0.line[j] == line)
			return j;
	return -1;
#endif
}

/* The entry of c->l0 for L1 line `line`: c->last_j when it is the line
 * of the last access (*mru = 1), else sim_l0_search's. A guess:
 * sim_l0_hit_at checks it. */
static inline __attribute__((always_inline)) int sim_l0_find(const struct mon_sim_core *c,
							      uint64_t line, int *mru)
{
	*mru = line == c->last_line;
	if (*mru)
		return (int)c->last_j;
	return sim_l0_search(c, line);
}

/*
 * The line filter (sim.h), on: c's access within L1 line `line`, at key
 * index i, whose key word is now want, is done, with tag (the caller's
 * words for the line, 0 0: none, and then no entry; the first word with
 * MON_SIM_LF_TAG_SPLIT: a split entry, for bytes c->lf.split_lo ..
 * split_hi - 1 of the line, tagged with the word without the bit - sim.h).
 * wok: what a write may
 * do through the filter (sim.h, struct mon_sim_lf_ent; sim_lf_wok when the
 * caller does not know).
 */
static inline __attribute__((always_inline)) void sim_lf_write_key(struct mon_sim_core *c,
								    uint64_t line, uint64_t i,
								    uint64_t want,
								    const uintptr_t tag[2],
								    uint32_t wok)
{
	struct mon_sim_lf_ent *e;

	c->lf.notes++;
	e = &c->lf.ent[mon_sim_lf_slot(line)];
	if (sim_unlikely(tag[0] & MON_SIM_LF_TAG_SPLIT)) {
		e->line = line | MON_SIM_LF_SPLIT;
		e->lo = c->lf.split_lo;
		e->hi = c->lf.split_hi;
		e->tag[0] = tag[0] & ~(uintptr_t)MON_SIM_LF_TAG_SPLIT;
	} else {
		e->line = tag[0] ? line : UINT64_MAX;
		e->tag[0] = tag[0];
	}
	e->want = want;
	e->i = (uint32_t)i;
	e->wok = wok;
	e->tag[1] = tag[1];
}
/* A write to L1 key index i through the filter: hits when the line is M
 * and dirty; makes it so when it is E, private, untracked and there is no
 * L2 (E -> M is then silent: the lean path's write hit) */
static inline __attribute__((always_inline)) uint32_t sim_lf_wok(const struct mon_sim_core *c,
								  uint64_t i)
{
	const struct sim_meta *m = &c->l1.meta[i];
	unsigned st = SIM_ST(c->l1.key[i]);

	if (st == SIM_M)
		return m->dirty != 0;
	return st == SIM_E && m->priv && !m->track && !c->has_l2 ? MON_SIM_LF_UPGRADE : 0;
}
/* The filter's entry of c's access to line `line` at key index i, when
 * the filter is on, from the L1's own words */
static inline __attribute__((always_inline)) void sim_lf_note(struct mon_sim_core *c,
							       uint64_t line, uint64_t i,
							       const uintptr_t tag[2])
{
	if (__atomic_load_n(&c->lf.on, __ATOMIC_RELAXED))
		sim_lf_write_key(c, line, i, c->l1.key[i], tag, sim_lf_wok(c, i));
}

/*
 * An access within L1 line `line`, whose entry in c->l0 is j (sim_l0_find,
 * mru as it said), that hits the line still where the entry says, with
 * the rights it needs: updates the replacement state of the L1, the L1 TLB
 * and the 3C shadow, and the line's metadata, as the full path would, and
 * returns 1. Else returns 0 and changes nothing. The entries are guesses
 * checked against the keys, so they need no upkeep when lines or TLB
 * entries move or lose rights. no_calls: also return 0 when the 3C shadow
 * needs an update (a call): the caller then needs no registers saved
 * around one. tag: the line's tag for the filter's entry (the caller's
 * words for the object holding the line, which lives: the entry's tag
 * then serves hits that test no flag of it; the sim backend forgets a
 * dead object's entries), or NULL: the line's entry in the filter made
 * invalid. Not the entry's remembered tag, unless the caller checked
 * that its object lives: a dead one's stays there until the line is
 * tagged again (sim_hit).
 */
static inline __attribute__((always_inline)) int sim_l0_hit_at(struct mon_sim_core *c,
								uint64_t line, int j, int mru,
								int is_write, uint32_t cookie,
								int no_calls, const uintptr_t *tag)
{
	static const uintptr_t none[2];

	uint64_t *const keys = c->l1.key;
	uint64_t i = mru ? c->last_i : c->l0.idx[j], key;

	key = keys[i];
	if (sim_unlikely((key & ~(uint64_t)3) != SIM_KEY(line) || SIM_ST(key) == SIM_I))
		return 0;
	struct sim_meta *m = &c->l1.meta[i];
	/* A write needs M, untracked - or E: E -> M is silent, and on a line
	 * with no directory entry (the core runs solo, or the line's page is
	 * private to it) without an L2 it is nothing more (write_owned would
	 * publish nothing). So a read-modify-write takes one slow path, not
	 * two. */
	if (is_write && (SIM_ST(key) != SIM_M || m->track) &&
	    (SIM_ST(key) != SIM_E || !m->priv || c->has_l2))
		return 0;
	if (!mru) {
		/* not most recently used yet (the last access's line and page
		 * are): touch the L1, the L1 TLB and the shadow */
		uint64_t page = c->l0.page[j];
		uint32_t ti = c->l0.tidx[j];
		if (page != c->memo_page) {
			uint64_t *tk = c->tlb1.key;
			if (tk[ti] != (SIM_KEY(page) | SIM_S))
				return 0;
			if (c->three_c && c->memo_shadow != line) {
				if (!sim_shadow_seg_touch(&c->shadow, line)) {
					if (no_calls)
						return 0;
					sim_shadow_access(&c->shadow, line, &m->shadow);
				}
				c->memo_shadow = line;
			}
			tk[ti + c->tlb1.assoc] = ++c->tlb1.clock;	/* the L1 TLB is LRU */
			c->memo_page = page;
			c->memo_tidx = ti;
		} else if (c->three_c && c->memo_shadow != line) {
			if (!sim_shadow_seg_touch(&c->shadow, line)) {
				if (no_calls)
					return 0;
				sim_shadow_access(&c->shadow, line, &m->shadow);
			}
			c->memo_shadow = line;
		}
		sim_touch_at(&c->l1, i);
		c->last_line = line;
		c->last_i = i;
		c->last_j = (uint32_t)j;
	}
	if (is_write)
		keys[i] = key | SIM_M;	/* E -> M, or M already */
	m->cookie = cookie;
	m->dirty |= (uint8_t)is_write;
	sim_lf_note(c, line, i, tag ? tag : none);
	return 1;
}

/* sim_l0_find, then sim_l0_hit_at (tag: the filter entry's, as there) */
static inline __attribute__((always_inline)) int sim_l0_hit(struct mon_sim_core *c, uint64_t line,
							     int is_write, uint32_t cookie,
							     int no_calls, const uintptr_t *tag)
{
	int mru, j = sim_l0_find(c, line, &mru);

	return j >= 0 && sim_l0_hit_at(c, line, j, mru, is_write, cookie, no_calls, tag);
}

/*
 * The merger's filter (ordered mode: seq_merge.c plain_hits through backend_sim.h
 * mon_sim_seq_hit; entries written by mon_sim_seq_access, sim_mf_note):
 * the L1 hit of an access within one line whose entry in c->mf says where
 * the line is, the key word there unchanged (the line has not left, lost
 * rights or been invalidated since), nothing pending from other cores.
 * Makes sim_l0_hit_at's changes - the LRU stamp, the cookie, a write's
 * dirty bit; no TLB or 3C shadow (mf_ok: neither is modelled); a write
 * needs M, untracked, or E on a private line without an L2 (then M,
 * silently: sim_l0_hit_at's rule), or M tracked without an L2 with the
 * words it writes published already (write_owned then does nothing); a
 * write of words still to publish takes the general path.
 *
 * A run of these holds the core: sim_mf_hold enters it and copies what
 * the hits read into r, so that they stay in registers over the run (the
 * stores to the counters could alias the core's fields for all gcc knows:
 * it reloaded each of them at every hit); sim_mf_hit_run is one access, 1
 * if it hit, else 0, nothing changed; sim_mf_unhold stores the L1's clock
 * back, forgets the last-line memo after a hit (the line entries' guess
 * that the line is most recently used no longer holds; nothing reads it
 * in between) and leaves the core.
 */
struct sim_mf_run {
	struct sim_mf_ent *mf;
	uint64_t *key;
	uint64_t *stamp;	/* the L1's LRU stamps: key + assoc */
	struct sim_meta *meta;
	const uint32_t *mail;	/* the core's, or a zero word when it is solo */
	uint64_t clock;		/* the L1's */
	uint32_t shift;
	uint32_t cycles;	/* an L1 hit's */
	uint32_t e2m;		/* a write may find E (on a private line): no L2 */
	uint32_t tw;		/* a write may find M tracked (its words published):
				 * the word shift + 1; 0: an L2 (the L1 is not the
				 * coherence level) */
};

/* Enters c for a run of sim_mf_hit_run: 1 if it did, 0 with nothing
 * changed when c has no merger's filter, its L1 is not LRU (a PLRU L1's
 * hits take the general path) or another core holds it still */
static inline int sim_mf_hold(struct mon_sim_core *c, struct sim_mf_run *r)
{
	static const uint32_t no_mail;

	if (!c->mf || c->l1.repl != MRI_GEOM_LRU || !sim_core_try_enter(c))
		return 0;
	*r = (struct sim_mf_run){ .mf = c->mf, .key = c->l1.key, .stamp = c->l1.key + c->l1.assoc,
				  .meta = c->l1.meta, .mail = c->solo ? &no_mail : &c->mail,
				  .clock = c->l1.clock, .shift = c->l1.line_shift,
				  .cycles = c->l1_hit_cycles, .e2m = !c->has_l2,
				  .tw = c->has_l2 ? 0 : c->sim->word_shift + 1 };
	return 1;
}

static inline __attribute__((always_inline)) int sim_mf_hit_run(struct sim_mf_run *r,
								 uintptr_t addr, uint32_t size,
								 int is_write, uint32_t cookie)
{
	const uint64_t line = addr >> r->shift;
	struct sim_mf_ent *e = &r->mf[sim_mf_slot(line)];
	uint64_t i, key;

	if (e->line != line || line != (addr + size - 1) >> r->shift)
		return 0;
	i = e->i;
	key = r->key[i];
	if (key != e->want || __atomic_load_n(r->mail, __ATOMIC_RELAXED))
		return 0;
	if (is_write && SIM_ST(key) == SIM_M && r->meta[i].track) {
		/* words other cores lost: the write publishes nothing when
		 * they are all published already (write_owned's rule) */
		if (!r->tw || (sim_words(addr, size, r->shift, r->tw - 1) & ~r->meta[i].wpub))
			return 0;
	} else if (is_write && SIM_ST(key) != SIM_M) {
		/* E -> M is silent on a line without a directory entry and
		 * without an L2 (sim_l0_hit_at's rule): the key's state, and
		 * the entry's word with it */
		if (SIM_ST(key) != SIM_E || !r->meta[i].priv || !r->e2m)
			return 0;
		r->key[i] = e->want = key | SIM_M;
	}
	r->stamp[i] = ++r->clock;
	r->meta[i].cookie = cookie;
	r->meta[i].dirty |= (uint8_t)is_write;
	return 1;
}

static inline void sim_mf_unhold(struct mon_sim_core *c, const struct sim_mf_run *r,
				 uint64_t hits)
{
	c->l1.clock = r->clock;
	if (hits)
		c->last_line = UINT64_MAX;
	sim_core_exit(c, 0);
}

/* The merger's filter: the entry of c's access just simulated, within one
 * line (sim.c). */
void sim_mf_note(struct mon_sim_core *c, uintptr_t addr, uint32_t size) SIM_HIDDEN;
/* sim_mf_note's entry, for a caller that knows the line's key index i in
 * the L1 (c->mf mapped) */
static inline void sim_mf_put(struct mon_sim_core *c, uint64_t line, uint64_t i)
{
	c->mf[sim_mf_slot(line)] = (struct sim_mf_ent){ .line = line, .want = c->l1.key[i], .i = i };
}

/*
 * The common case of mon_sim_access, inline for a caller that wants no
 * call for it (backend_sim.c): an access within one L1 line among the last
 * few accessed, nothing pending from other cores, no 3C shadow update.
 * Returns 1 with the access simulated - a plain L1 hit, est_cycles =
 * c->l1_hit_cycles - and, tag not NULL, the line's entry given tag; else 0
 * having changed nothing: the caller then calls mon_sim_access_rest (or
 * mon_sim_access). No call, so no registers saved.
 */
static inline __attribute__((always_inline)) int sim_hit(struct mon_sim_core *c, uintptr_t addr,
							  uint32_t size, int is_write,
							  uint32_t cookie, const uintptr_t *tag)
{
	uint32_t shift = c->l1.line_shift;
	uint64_t line = addr >> shift;
	int hit = 0, mru, j;

	if (sim_unlikely(line != (addr + size - 1) >> shift || !size) ||
	    sim_unlikely(!sim_core_try_enter(c)))
		return 0;
	if ((c->solo || !__atomic_load_n(&c->mail, __ATOMIC_RELAXED)) &&
	    (j = sim_l0_find(c, line, &mru)) >= 0 &&
	    (hit = sim_l0_hit_at(c, line, j, mru, is_write, cookie, 1, tag)) && tag) {
		c->l0.tag[j][0] = tag[0];
		c->l0.tag[j][1] = tag[1];
	}
	sim_core_exit(c, 0);
	return hit;
}

#endif
