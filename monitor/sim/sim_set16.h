/*
 * sim_set16.h - sets of up to 16 ways found by fingerprint: the L2 TLB's
 * (a nibble order word, sim_lru16_ref) and the LLC's (16-bit stamps from
 * the set's clock, sim_llc16_ref; 32-bit keys in order of recency in a k32
 * LLC's 64-byte set, sim_llc32_ref). Inline for the lean path and the
 * coherence path.
 * Included by sim_core.h, after its key and stamp helpers.
 */
#ifndef AMEBA_SIM_SET16_H
#define AMEBA_SIM_SET16_H

/* A way's fingerprint: 1..128, never 0 (an empty way) */
static inline uint8_t sim_fp(uint64_t line)
{
	return (uint8_t)(((line * 0x9e3779b97f4a7c15ull) >> 57) + 1);
}

/* The way of a set of sim_lru16_ref holding line, or -1; n ways, a
 * constant in the unrolled versions (sim_lru16_find): every fingerprint is
 * tested before any key, so a miss costs no loop (the bytes past the last
 * way are 0, and a fingerprint never is). With SSE2 the 16 bytes at once
 * (a 16-way LLC miss: ~35 -> ~15 instructions, stream), else two words. */
static inline __attribute__((always_inline)) int sim_lru16_find_n(const uint64_t *keys,
								   const uint8_t *fp, uint32_t n,
								   uint64_t line)
{
	uint64_t want = SIM_KEY(line), fb = SIM_B8((uint64_t)sim_fp(line)), word, m0, m1 = 0;

#ifdef __SSE2__
	if (n > 8) {
		__m128i f = _mm_loadu_si128((const __m128i *)fp);
		__m128i b = _mm_set1_epi64x((long long)fb);
		uint32_t m = (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(f, b));

		for (; m; m &= m - 1) {
			uint32_t w = (uint32_t)__builtin_ctz(m);
			if (sim_likely((keys[w] & ~(uint64_t)3) == want))
				return (int)w;
		}
		return -1;
	}
#endif

	__builtin_memcpy(&word, fp, 8);
	m0 = sim_zero_bytes(word ^ fb);
	if (n > 8) {
		__builtin_memcpy(&word, fp + 8, 8);
		m1 = sim_zero_bytes(word ^ fb);
	}
	if (!(m0 | m1))
		return -1;
	for (; m0; m0 &= m0 - 1) {
		uint32_t w = (uint32_t)__builtin_ctzll(m0) >> 3;
		if ((keys[w] & ~(uint64_t)3) == want)
			return (int)w;
	}
	for (; m1; m1 &= m1 - 1) {
		uint32_t w = 8 + ((uint32_t)__builtin_ctzll(m1) >> 3);
		if ((keys[w] & ~(uint64_t)3) == want)
			return (int)w;
	}
	return -1;
}

/*
 * An LLC's 32-bit key (sim_llc.k32): the line plus one, shifted right by
 * 12, over the two state bits - SIM_KEY(line) >> 12 with those bits
 * cleared, one shift and a mask from the key the miss holds. The lines of
 * one set of an LLC of 4,096 sets or more agree in their low 12 bits, so
 * it is one-to-one on them; lines of 64 bytes or more below 2^47
 * (sim_low_addresses) are below 2^41, so it fits. It is 0 for the lines
 * below 4,095, as is an empty way's key: the state bits tell them apart
 * (an empty way's are 0, a line's S or M; sim_llc32_find).
 */
#define SIM_KEY32(line) ((uint32_t)((((line) + 1) >> 12) << 2))

/*
 * sim_lru16_ref over n ways (n a constant in the unrolled versions). A
 * miss that evicts the least recently used way moves it from the last
 * position to the first: the order word shifts up one nibble below
 * position n, no search for the way's position (sim_lru16_front). Random
 * kernel: ~30 instructions less per L2 TLB or LLC miss with the search
 * above.
 */
static inline __attribute__((always_inline)) int sim_lru16_ref_n(uint64_t *keys, uint8_t *fp,
								  uint64_t *order, uint32_t n,
								  uint64_t line, uint64_t new_key,
								  uint64_t *victim, int holes)
{
	uint64_t word, o;
	uint32_t w, base;
	int hit = sim_lru16_find_n(keys, fp, n, line);

	if (hit >= 0) {
		sim_lru16_front(order, (uint32_t)hit);
		return hit;
	}
	/* a miss: an empty way if any (without holes the empty ways are the
	 * last ones: ways fill lowest first), else the LRU way */
	o = *order ^ SIM_LRU16_ID;
	w = (uint32_t)((o >> (4 * (n - 1))) & 0xf);
	*victim = keys[w];
	if (sim_unlikely(!keys[n - 1] || holes)) {
		for (base = 0; base < n; base += 8) {
			__builtin_memcpy(&word, fp + base, 8);
			uint64_t z = sim_zero_bytes(word);
			if (n - base < 8)	/* bytes past the last way */
				z &= (1ull << (8 * (n - base))) - 1;
			if (z) {
				w = base + ((uint32_t)__builtin_ctzll(z) >> 3);
				*victim = 0;
				keys[w] = new_key;
				fp[w] = sim_fp(line);
				sim_lru16_front(order, w);
				return -1;
			}
		}
	}
	keys[w] = new_key;
	fp[w] = sim_fp(line);
	/* w was at position n - 1: positions 0 .. n - 2 move up one */
	uint64_t lo = n >= 16 ? ~0ull : (1ull << (4 * n)) - 1;
	o = (o & ~lo) | ((o << 4) & lo) | w;
	*order = o ^ SIM_LRU16_ID;
	return -1;
}

/* sim_lru16_find_n, unrolled for the usual associativities */
static inline __attribute__((always_inline)) int sim_lru16_find(const uint64_t *keys,
								 const uint8_t *fp, uint32_t assoc,
								 uint64_t line)
{
	switch (assoc) {
	case 16:
		return sim_lru16_find_n(keys, fp, 16, line);
	case 12:
		return sim_lru16_find_n(keys, fp, 12, line);
	case 8:
		return sim_lru16_find_n(keys, fp, 8, line);
	}
	return sim_lru16_find_n(keys, fp, assoc, line);
}

static inline int sim_lru16_ref(uint64_t *keys, uint8_t *fp, uint64_t *order, uint32_t assoc,
				uint64_t line, uint64_t new_key, uint64_t *victim, int holes)
{
	switch (assoc) {
	case 16:
		return sim_lru16_ref_n(keys, fp, order, 16, line, new_key, victim, holes);
	case 12:
		return sim_lru16_ref_n(keys, fp, order, 12, line, new_key, victim, holes);
	case 8:
		return sim_lru16_ref_n(keys, fp, order, 8, line, new_key, victim, holes);
	}
	return sim_lru16_ref_n(keys, fp, order, assoc, line, new_key, victim, holes);
}

/*
 * The LLC's sets of at most 16 LRU ways (struct sim_llc, lru16): keys and
 * fingerprints as sim_lru16_ref's, the recency as a 16-bit stamp per way
 * between the fingerprints and the keys, taken from the set's own clock
 * (word 1 of its block: the last stamp given) - what a reference decides
 * by in one host line, the keys in the next two. A hit writes one stamp
 * where moving a nibble of the order word to the front first had to find
 * its position (~28 -> ~8 instructions an LLC hit, chase); a miss takes
 * the way of the smallest stamp. Stamps of valid ways are distinct and at least 1; an empty way's
 * (key 0: never filled, or invalidated by another node) is 0, so the
 * smallest stamp is an empty way's when the set has one (the lowest
 * numbered) and else the least recently used way's - the hits, misses and
 * victims of sim_mru_ref (test sim_unit). A set's clock at
 * SIM_LLC16_CLOCK_MAX renumbers its stamps 1 .. k in their order
 * (sim_llc16_renumber, once per ~65,000 references to the set).
 */
#define SIM_LLC16_CLOCK_MAX 0xffffu
/* The stamps of set block b of n ways: after the fingerprints, in the
 * block's first host line with them (a 16-way set: words 4-7) */
static inline uint16_t *sim_llc16_stamps(uint64_t *b, uint32_t n)
{
	return (uint16_t *)(void *)(b + 2 + (n + 7) / 8);
}
uint32_t sim_llc16_renumber(uint64_t *clock, uint16_t *st, uint32_t n) SIM_HIDDEN;

/* Way w of the set whose clock is *clock and stamps st (n ways) is now
 * the most recently used */
static inline __attribute__((always_inline)) void sim_llc16_touch(uint64_t *clock, uint16_t *st,
								   uint32_t n, uint32_t w)
{
	uint64_t t = *clock + 1;

	if (sim_unlikely(t > SIM_LLC16_CLOCK_MAX))
		t = sim_llc16_renumber(clock, st, n);
	*clock = t;
	st[w] = (uint16_t)t;
}

/* The lowest-numbered way of the smallest of n stamps. 16 ways: two
 * phminposuw where the host has SSE4.1 (sim_sse41), else with SSE2 the
 * minimum of the stamps biased to signed words, then its first way;
 * other counts (the general path's) widened for sim_lru_min_n. */
static inline __attribute__((always_inline)) uint32_t sim_llc16_min_n(const uint16_t *st,
								       uint32_t n)
{
#ifdef __SSE2__
	if (__builtin_constant_p(n) && n == 16) {
		__m128i a = _mm_loadu_si128((const __m128i *)(const void *)st);
		__m128i b = _mm_loadu_si128((const __m128i *)(const void *)(st + 8));

		if (sim_likely(sim_sse41)) {
			__m128i ra, rb;

			__asm__("phminposuw %1, %0" : "=x"(ra) : "x"(a));
			__asm__("phminposuw %1, %0" : "=x"(rb) : "x"(b));
			uint32_t x = (uint32_t)_mm_cvtsi128_si32(ra);
			uint32_t y = (uint32_t)_mm_cvtsi128_si32(rb);
			/* bits 0-15 the minimum, 16-18 its first lane */
			return (y & 0xffff) < (x & 0xffff) ? 8 + (y >> 16) : x >> 16;
		}
		const __m128i bias = _mm_set1_epi16((short)0x8000);
		__m128i sa = _mm_xor_si128(a, bias), sb = _mm_xor_si128(b, bias);
		__m128i m = _mm_min_epi16(sa, sb);

		m = _mm_min_epi16(m, _mm_shuffle_epi32(m, _MM_SHUFFLE(1, 0, 3, 2)));
		m = _mm_min_epi16(m, _mm_shuffle_epi32(m, _MM_SHUFFLE(2, 3, 0, 1)));
		m = _mm_min_epi16(m, _mm_srli_epi32(m, 16));
		m = _mm_shuffle_epi32(_mm_shufflelo_epi16(m, 0), 0);
		unsigned mask = (unsigned)_mm_movemask_epi8(
			_mm_packs_epi16(_mm_cmpeq_epi16(sa, m), _mm_cmpeq_epi16(sb, m)));
		return (uint32_t)__builtin_ctz(mask);
	}
#endif
	uint64_t wide[16];

	for (uint32_t w = 0; w < n; w++)
		wide[w] = st[w];
	return sim_lru_min_n(wide, n);
}

/*
 * A reference to line in LLC set block b (n ways, keys from word koff):
 * its way on a hit; on a miss -1, new_key filled into an empty way or the
 * least recently used one, whose key (0 if empty) goes to *victim. Both
 * make the way most recently used. n a constant in the unrolled versions.
 */
static inline __attribute__((always_inline)) int sim_llc16_ref_n(uint64_t *b, uint64_t koff,
								  uint32_t n, uint64_t line,
								  uint64_t new_key,
								  uint64_t *victim)
{
	uint64_t *keys = b + koff;
	uint8_t *fp = (uint8_t *)(b + 2);
	uint16_t *st = sim_llc16_stamps(b, n);
	int hit = sim_lru16_find_n(keys, fp, n, line);
	uint32_t w;

	if (hit >= 0) {
		sim_llc16_touch(&b[1], st, n, (uint32_t)hit);
		return hit;
	}
	w = sim_llc16_min_n(st, n);
	*victim = keys[w];
	keys[w] = new_key;
	fp[w] = sim_fp(line);
	sim_llc16_touch(&b[1], st, n, w);
	return -1;
}

/*
 * A k32 LLC's set (sim_llc.k32): 16 32-bit keys (SIM_KEY32 | state) in one
 * 64-byte host line, in order of recency - keys[0] the most recently used,
 * the order sim_mru_ref keeps - without fingerprints, stamps or a clock: a
 * hit or a miss touches one host line where the 128-byte set of
 * fingerprints, stamps and keys touched two (chase: the sets' footprint in
 * the host's L2 set its time; docs/simulator.md, "The LLC in one host
 * line"). A valid key's state is S (1) or M (3), an empty way's key is 0
 * (never filled, or invalidated by another node: a hole, left in place).
 * A key k holds line when (k | 2) == (SIM_KEY32(line) | 3), which an
 * empty way's 0 never meets, even for a line whose SIM_KEY32 is 0.
 */
#define SIM_LLC32_WAYS 16

/* The positions of keys (16) holding want (SIM_KEY32(line) | 3) and the
 * empty ones, a bit each */
static inline __attribute__((always_inline)) void sim_llc32_masks(const uint32_t *keys,
								   uint32_t want, uint32_t *hit,
								   uint32_t *empty)
{
	uint32_t h = 0, e = 0;
#ifdef __SSE2__
	const __m128i w = _mm_set1_epi32((int)want), two = _mm_set1_epi32(2);
	const __m128i zero = _mm_setzero_si128();
	__m128i kq[4], hq[4], eq[4];

	for (int q = 0; q < 4; q++) {
		kq[q] = _mm_loadu_si128((const __m128i *)(const void *)(keys + 4 * q));
		hq[q] = _mm_cmpeq_epi32(_mm_or_si128(kq[q], two), w);
		eq[q] = _mm_cmpeq_epi32(kq[q], zero);
	}
	h = (uint32_t)_mm_movemask_epi8(_mm_packs_epi16(_mm_packs_epi32(hq[0], hq[1]),
						       _mm_packs_epi32(hq[2], hq[3])));
	e = (uint32_t)_mm_movemask_epi8(_mm_packs_epi16(_mm_packs_epi32(eq[0], eq[1]),
						       _mm_packs_epi32(eq[2], eq[3])));
#else
	for (uint32_t p = 0; p < SIM_LLC32_WAYS; p++) {
		h |= (uint32_t)((keys[p] | 2) == want) << p;
		e |= (uint32_t)(keys[p] == 0) << p;
	}
#endif
	*hit = h;
	*empty = e;
}

/* The position of line in keys, or -1 */
static inline __attribute__((always_inline)) int sim_llc32_find(const uint32_t *keys,
								 uint64_t line)
{
	uint32_t h, e;

	sim_llc32_masks(keys, SIM_KEY32(line) | 3, &h, &e);
	return h ? __builtin_ctz(h) : -1;
}

/* key to the front of keys, positions 0 .. p - 1 down one (p's key goes:
 * a hit's own, moving, or a miss's victim). Without a branch on p, with
 * SSE2: every key shifted down a lane, key into lane 0, the lanes past p
 * as they were. */
static inline __attribute__((always_inline)) void sim_llc32_front(uint32_t *keys, uint32_t p,
								   uint32_t key)
{
#ifdef __SSE2__
	const __m128i pp = _mm_set1_epi32((int)p);
	__m128i x[4], y[4];

	for (int q = 0; q < 4; q++)
		x[q] = _mm_loadu_si128((const __m128i *)(const void *)(keys + 4 * q));
	y[0] = _mm_or_si128(_mm_slli_si128(x[0], 4), _mm_cvtsi32_si128((int)key));
	for (int q = 1; q < 4; q++)
		y[q] = _mm_or_si128(_mm_slli_si128(x[q], 4), _mm_srli_si128(x[q - 1], 12));
	for (int q = 0; q < 4; q++) {
		__m128i keep = _mm_cmpgt_epi32(_mm_setr_epi32(4 * q, 4 * q + 1, 4 * q + 2, 4 * q + 3),
					       pp);
		y[q] = _mm_or_si128(_mm_and_si128(keep, x[q]), _mm_andnot_si128(keep, y[q]));
		_mm_storeu_si128((__m128i *)(void *)(keys + 4 * q), y[q]);
	}
#else
	for (uint32_t i = p; i > 0; i--)
		keys[i] = keys[i - 1];
	keys[0] = key;
#endif
}

/*
 * sim_mru_ref over a k32 set: a hit moves to the front and returns its old
 * position; a miss (-1) takes the first empty way (a hole's, or, the set
 * not yet full, the first past its keys), else the least recently used
 * (the last), whose key (0 if empty) goes to *victim in its 32 bits (its
 * state is what counts), and puts the line's key, new_key's state, at the
 * front. The hits, misses and victims of sim_mru_ref, and the same order
 * (test sim_unit: test_llc32_random).
 */
static inline __attribute__((always_inline)) int sim_llc32_ref(uint32_t *keys, uint64_t line,
								uint64_t new_key, uint64_t *victim)
{
	uint32_t k = SIM_KEY32(line), h, e, p;

	sim_llc32_masks(keys, k | 3, &h, &e);
	if (h) {
		p = (uint32_t)__builtin_ctz(h);
		if (p)
			sim_llc32_front(keys, p, keys[p]);
		return (int)p;
	}
	p = (uint32_t)__builtin_ctz(e | 1u << (SIM_LLC32_WAYS - 1));
	*victim = keys[p];
	sim_llc32_front(keys, p, k | (uint32_t)(new_key & 3));
	return -1;
}

/* sim_llc16_ref_n, unrolled for the usual associativities */
static inline int sim_llc16_ref(uint64_t *b, uint64_t koff, uint32_t assoc, uint64_t line,
				uint64_t new_key, uint64_t *victim)
{
	switch (assoc) {
	case 16:
		return sim_llc16_ref_n(b, koff, 16, line, new_key, victim);
	case 11:
		return sim_llc16_ref_n(b, koff, 11, line, new_key, victim);
	case 8:
		return sim_llc16_ref_n(b, koff, 8, line, new_key, victim);
	}
	return sim_llc16_ref_n(b, koff, assoc, line, new_key, victim);
}

#endif
