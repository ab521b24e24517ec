/* hashtab.c - open-addressing (linear probing) hash table of 64-bit keys.
 * Table: 2^21 buckets of {key, val} = 32 MiB.  Each round clears the table,
 * inserts 1M random keys, then does random lookups (half hits, half misses).
 * A small per-lookup "stats" histogram is updated on every lookup.
 * Usage: hashtab [SCALE]  (SCALE multiplies the number of rounds) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>

#define TABLE_BITS 21
#define TABLE_SIZE (1u << TABLE_BITS)
#define NKEYS (1u << 20)
#define NLOOKUPS (6u << 20)
#define ROUNDS 1
#define NSTATS 64

struct bucket {
    uint64_t key;   /* 0 means empty */
    uint64_t val;
};

static struct bucket *table;
static unsigned long stats[NSTATS];

static void *xmalloc(size_t size)
{
    void *p = malloc(size);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    return p;
}

static uint64_t xorshift(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

static uint64_t hash(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return k;
}

static void insert(uint64_t key, uint64_t val)
{
    uint64_t i = hash(key) & (TABLE_SIZE - 1);
    while (table[i].key != 0 && table[i].key != key)
        i = (i + 1) & (TABLE_SIZE - 1);
    table[i].key = key;
    table[i].val = val;
}

static int lookup(uint64_t key, uint64_t *val)
{
    uint64_t i = hash(key) & (TABLE_SIZE - 1);
    int probes = 0;
    while (table[i].key != 0) {
        if (table[i].key == key) {
            *val = table[i].val;
            stats[probes < NSTATS - 1 ? probes : NSTATS - 1]++;
            return 1;
        }
        i = (i + 1) & (TABLE_SIZE - 1);
        probes++;
    }
    stats[NSTATS - 1 - (probes % 8)]++;
    return 0;
}

int main(int argc, char **argv)
{
    int scale = argc > 1 ? atoi(argv[1]) : 1;
    if (scale < 1)
        scale = 1;

    table = xmalloc(TABLE_SIZE * sizeof(struct bucket));
    uint64_t found = 0, sum = 0;

    for (int r = 0; r < ROUNDS * scale; r++) {
        memset(table, 0, TABLE_SIZE * sizeof(struct bucket));
        uint64_t seed = 88172645463325252ULL + (uint64_t)(r % 4);
        for (unsigned n = 0; n < NKEYS; n++) {
            uint64_t k = xorshift(&seed) | 1;
            insert(k, k >> 3);
        }

        uint64_t hit_seed = 88172645463325252ULL + (uint64_t)(r % 4);
        uint64_t miss_seed = 0x9e3779b97f4a7c15ULL;
        for (unsigned n = 0; n < NLOOKUPS; n++) {
            uint64_t k, v;
            if (n & 1)
                k = xorshift(&miss_seed) | 1;
            else
                k = xorshift(&hit_seed) | 1;   /* replays inserted keys */
            if (n % (2 * NKEYS) == 0)
                hit_seed = 88172645463325252ULL + (uint64_t)(r % 4);
            if (lookup(k, &v)) {
                found++;
                sum += v;
            }
        }
    }

    unsigned long s = 0;
    for (int i = 0; i < NSTATS; i++)
        s += stats[i] * (unsigned long)(i + 1);
    printf("hashtab rounds=%d found=%llu sum=%llu stats=%lu\n",
           ROUNDS * scale, (unsigned long long)found,
           (unsigned long long)(sum & 0xffffffffffffULL), s);
    free(table);
    return 0;
}
