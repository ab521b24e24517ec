/* graphwalk.c - pointer-chasing random walk over a random graph.
 * 1M nodes (40 bytes each, ~40 MB in one array), each with 4 random
 * out-edges.  The walk follows next[k] for many steps, summing payloads
 * and bumping a per-node visit counter (2 MB array of unsigned short).
 * Usage: graphwalk [SCALE]  (SCALE multiplies the number of steps) */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>

#define NNODES (1 << 20)
#define NSTEPS 2000000L

struct node {
    struct node *next[4];
    long payload;
};

static void *xmalloc(size_t size)
{
    void *p = malloc(size);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    return p;
}

static uint32_t rng_state = 2463534242u;

static uint32_t rnd(void)
{
    uint32_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return rng_state = x;
}

int main(int argc, char **argv)
{
    int scale = argc > 1 ? atoi(argv[1]) : 1;
    if (scale < 1)
        scale = 1;

    struct node *nodes = xmalloc(NNODES * sizeof(struct node));
    unsigned short *visited = calloc(NNODES, sizeof(unsigned short));
    if (!visited) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }

    for (int i = 0; i < NNODES; i++) {
        nodes[i].payload = i % 1000;
        for (int k = 0; k < 4; k++)
            nodes[i].next[k] = &nodes[rnd() % NNODES];
    }

    struct node *cur = &nodes[0];
    long sum = 0;
    long steps = NSTEPS * (long)scale;
    for (long s = 0; s < steps; s++) {
        sum += cur->payload;
        visited[cur - nodes]++;
        cur = cur->next[rnd() & 3];
    }

    unsigned long vsum = 0;
    int maxv = 0;
    for (int i = 0; i < NNODES; i++) {
        vsum += (unsigned long)visited[i] * (unsigned long)(i & 255);
        if (visited[i] > maxv)
            maxv = visited[i];
    }
    printf("graphwalk nodes=%d steps=%ld sum=%ld vsum=%lu maxv=%d last=%ld\n",
           NNODES, steps, sum, vsum, maxv, (long)(cur - nodes));

    free(nodes);
    free(visited);
    return 0;
}
