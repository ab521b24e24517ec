/* fs_loop.c - false sharing between two threads.
 * Each thread bumps its own counter in counters[2]; the two counters are
 * adjacent longs in the same cache line, so the line ping-pongs between the
 * cores.  Each thread also sweeps a private 1 MiB array of longs.
 * Usage: fs_loop [SCALE]  (SCALE multiplies the number of sweeps) */
#include <stdio.h>
#include <stdlib.h>
#include <pthread.h>

#define NTHREADS 2
#define PRIV_LEN (1024 * 1024 / sizeof(long))
#define SWEEPS 4000

struct counter {
    volatile long count;
};

struct counter counters[NTHREADS];   /* both in one cache line */

struct worker {
    int id;
    int sweeps;
    long *priv;
    long sum;
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

static void *work(void *arg)
{
    struct worker *w = arg;
    long sum = 0;
    for (int s = 0; s < w->sweeps; s++) {
        for (size_t i = 0; i < PRIV_LEN; i++) {
            sum += w->priv[i];
            if ((i & 3) == 0)
                counters[w->id].count++;
        }
    }
    w->sum = sum;
    return NULL;
}

int main(int argc, char **argv)
{
    int scale = argc > 1 ? atoi(argv[1]) : 1;
    if (scale < 1)
        scale = 1;

    pthread_t tid[NTHREADS];
    struct worker w[NTHREADS];
    for (int t = 0; t < NTHREADS; t++) {
        w[t].id = t;
        w[t].sweeps = SWEEPS * scale;
        w[t].priv = xmalloc(PRIV_LEN * sizeof(long));
        for (size_t i = 0; i < PRIV_LEN; i++)
            w[t].priv[i] = (long)((i * 31 + (size_t)t) % 97);
        w[t].sum = 0;
    }

    for (int t = 0; t < NTHREADS; t++)
        pthread_create(&tid[t], NULL, work, &w[t]);
    for (int t = 0; t < NTHREADS; t++)
        pthread_join(tid[t], NULL);

    long total = 0, psum = 0;
    for (int t = 0; t < NTHREADS; t++) {
        total += counters[t].count;
        psum += w[t].sum;
        free(w[t].priv);
    }
    printf("fs_loop threads=%d sweeps=%d counts=%ld privsum=%ld\n",
           NTHREADS, SWEEPS * scale, total, psum);
    return 0;
}
