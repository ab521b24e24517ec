/*
 * hash_table - an open-addressing hash table (linear probing) with its key
 * and value arrays, an input buffer of queries, a dictionary buffer and an
 * output buffer: five heap sites with designed shares of the misses.
 *
 * Bottleneck: the table keeps keys and values in two separate arrays
 * (struct of arrays), so a hit costs two random misses, one in `keys` and one
 * in `vals`; both arrays are larger than L2, so most probes miss in L1D and
 * L2. The program builds a word count table from a dictionary of 128 Ki
 * keys (load factor 0.25 of 512 Ki slots), then runs 256 Ki queries from an
 * input buffer (60% of them present); a query that finds nothing is
 * appended to the `unknown` buffer (16-byte records). A final pass reads the
 * whole table for the checksum. Misses at SCALE 1 (sim backend, host
 * preset with a 2 MiB L2; skylake-sp within 0.1 point for L1D):
 *
 *   rank  object   kind / site                         size    L1D misses  share  L2 share
 *      1  keys     heap alloc_keys() (hash_table.c)    4 MiB   467,268     48.6%  45.3%
 *      2  vals     heap alloc_vals()                   4 MiB   344,162     35.8%  35.6%
 *      3  input    heap read_input()                   2 MiB    65,538      6.8%   8.3%
 *      4  unknown  heap alloc_unknown()                4 MiB    52,258      5.4%   6.6%
 *      5  words    heap load_dictionary()              1 MiB    32,770      3.4%   4.1%
 *         hits     global probe-length histogram       256 B      ~250     ~0%
 *
 * keys: about one miss per insert and per query (at load 0.25 most probe
 * sequences stay within one line of keys) plus the final scan;
 * vals: one per insert and per hit plus the scan; input and words: written
 * once and read once (2 per 8 keys); unknown: 1 per 4 absent queries. The
 * L2 shares are lower for keys because the 8 MiB table is only 4x L2 and
 * the probes of hot keys sometimes hit; a last-level cache larger than the
 * tables (the host preset's) sees mostly compulsory misses.
 *
 * Fixed twin (-DWL_FIXED=1): keys and values share one 16-byte bucket
 * (array of structs, `buckets` @ alloc_buckets()), so a hit costs one miss:
 * the table misses 544 K instead of 811 K in L1D (0.69 M in all, buckets
 * 78%). Same probing order, same counts, same output.
 *
 * SCALE multiplies the query passes over the input buffer. Native: ~45 ms.
 */
#include "wl.h"

#define LOG_SLOTS 19
#define NR_SLOTS (1u << LOG_SLOTS)
#define NR_WORDS (NR_SLOTS / 4)
#define NR_QUERIES (1u << 18)
#define HIT_PERCENT 60

struct val {
	uint32_t count;
	uint32_t sum;
};

struct bucket {
	uint64_t key;
	struct val v;
};

struct unknown_rec {
	uint64_t key;
	uint64_t pos;
};

uint64_t hits[32];			/* probe-length histogram: cache resident */

#ifdef WL_FIXED
static struct bucket *buckets;

__attribute__((noinline)) static struct bucket *alloc_buckets(void)
{
	return wl_check_alloc(calloc(NR_SLOTS, sizeof(struct bucket)), "buckets");
}
#else
static uint64_t *keys;
static struct val *vals;

__attribute__((noinline)) static uint64_t *alloc_keys(void)
{
	return wl_check_alloc(calloc(NR_SLOTS, sizeof(uint64_t)), "keys");
}

__attribute__((noinline)) static struct val *alloc_vals(void)
{
	return wl_check_alloc(calloc(NR_SLOTS, sizeof(struct val)), "vals");
}
#endif

__attribute__((noinline)) static uint64_t *load_dictionary(void)
{
	uint64_t *w = wl_check_alloc(malloc(sizeof(uint64_t) * NR_WORDS), "words");

	for (size_t i = 0; i < NR_WORDS; i++)
		w[i] = wl_mix(11, i) | 1;	/* 0 marks an empty slot */
	return w;
}

/* The queries: HIT_PERCENT of them dictionary words, the rest absent keys. */
__attribute__((noinline)) static uint64_t *read_input(void)
{
	uint64_t *q = wl_check_alloc(malloc(sizeof(uint64_t) * NR_QUERIES), "input");
	uint64_t rng = 0x5eed;

	for (size_t i = 0; i < NR_QUERIES; i++) {
		uint64_t r = wl_rand(&rng);

		if (r % 100 < HIT_PERCENT)
			q[i] = wl_mix(11, (r >> 8) % NR_WORDS) | 1;
		else
			q[i] = (wl_mix(12, i) | 1) ^ 2;	/* not in the dictionary (by probing) */
	}
	return q;
}

__attribute__((noinline)) static struct unknown_rec *alloc_unknown(void)
{
	return wl_check_alloc(malloc(sizeof(struct unknown_rec) * NR_QUERIES), "unknown");
}

static inline uint32_t slot_of(uint64_t key)
{
	return (uint32_t)((key * 0x9e3779b97f4a7c15ull) >> (64 - LOG_SLOTS));
}

#ifdef WL_FIXED
static inline uint64_t key_at(uint32_t s)
{
	return buckets[s].key;
}

static inline struct val *val_at(uint32_t s)
{
	return &buckets[s].v;
}

static inline void set_key(uint32_t s, uint64_t k)
{
	buckets[s].key = k;
}
#else
static inline uint64_t key_at(uint32_t s)
{
	return keys[s];
}

static inline struct val *val_at(uint32_t s)
{
	return &vals[s];
}

static inline void set_key(uint32_t s, uint64_t k)
{
	keys[s] = k;
}
#endif

/* The slot holding key, or the empty slot where it would go; counts probes. */
static uint32_t probe(uint64_t key)
{
	uint32_t s = slot_of(key), n = 0;

	for (;;) {
		uint64_t k = key_at(s);

		if (k == key || k == 0)
			break;
		s = (s + 1) & (NR_SLOTS - 1);
		n++;
	}
	hits[n < 31 ? n : 31]++;
	return s;
}

int main(int argc, char **argv)
{
	unsigned long scale = wl_scale(argc, argv, 1000);
	uint64_t *words, *input;
	struct unknown_rec *unknown;
	uint64_t nr_unknown = 0, h_unknown = 0, h_table = 0, h_hits = 0, t0;

#ifdef WL_FIXED
	buckets = alloc_buckets();
#else
	keys = alloc_keys();
	vals = alloc_vals();
#endif
	words = load_dictionary();
	input = read_input();
	unknown = alloc_unknown();

	t0 = wl_now_ns();
	/* Build: every dictionary word once (duplicates would count twice). */
	for (size_t i = 0; i < NR_WORDS; i++) {
		uint32_t s = probe(words[i]);
		struct val *v = val_at(s);

		if (key_at(s) == 0)
			set_key(s, words[i]);
		v->count++;
		v->sum += (uint32_t)i;
	}
	/* Queries: count hits, log misses. */
	for (unsigned long pass = 0; pass < scale; pass++) {
		nr_unknown = 0;
		for (size_t i = 0; i < NR_QUERIES; i++) {
			uint64_t key = input[i];
			uint32_t s = probe(key);

			if (key_at(s) == key) {
				struct val *v = val_at(s);

				v->count++;
				v->sum += (uint32_t)(i ^ pass);
			} else {
				unknown[nr_unknown].key = key;
				unknown[nr_unknown].pos = i;
				nr_unknown++;
			}
		}
	}
	wl_report_time("hash_table", t0);

	for (uint32_t s = 0; s < NR_SLOTS; s++)
		if (key_at(s))
			h_table = wl_mix(h_table, key_at(s) ^ val_at(s)->count ^ ((uint64_t)val_at(s)->sum << 24));
	for (uint64_t i = 0; i < nr_unknown; i++)
		h_unknown = wl_mix(h_unknown, unknown[i].key + unknown[i].pos);
	for (int i = 0; i < 32; i++)
		h_hits = wl_mix(h_hits, hits[i]);
	printf("hash_table: slots %u words %u queries %u x %lu\n", NR_SLOTS, NR_WORDS, NR_QUERIES,
	       scale);
	printf("table %016" PRIx64 "\nunknown %" PRIu64 " %016" PRIx64 "\nprobes %016" PRIx64 "\n",
	       h_table, nr_unknown, h_unknown, h_hits);
	free(words);
	free(input);
	free(unknown);
#ifdef WL_FIXED
	free(buckets);
#else
	free(keys);
	free(vals);
#endif
	return 0;
}
