/* jacobi.c - 2-D 5-point Jacobi relaxation on a 2048 x 2048 grid of doubles.
 * Two grids (cur, next) are swapped after every sweep; a small per-row
 * coefficient table scales the update.  Usage: jacobi [SCALE] */
#include <stdio.h>
#include <stdlib.h>

#define N 2048
#define SWEEPS 32

struct grid {
    int n;
    double *v;
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

static void grid_init(struct grid *g, int n)
{
    g->n = n;
    g->v = xmalloc((size_t)n * n * sizeof(double));
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            g->v[(size_t)i * n + j] = (i == 0 || j == 0) ? 1.0 : 0.0;
}

static void sweep(const struct grid *src, struct grid *dst, const double *coef)
{
    int n = src->n;
    const double *s = src->v;
    double *d = dst->v;
    for (int i = 1; i < n - 1; i++) {
        double w = coef[i];
        for (int j = 1; j < n - 1; j++) {
            size_t k = (size_t)i * n + j;
            d[k] = w * (s[k - 1] + s[k + 1] + s[k - n] + s[k + n])
                 + (1.0 - 4.0 * w) * s[k];
        }
    }
}

int main(int argc, char **argv)
{
    int scale = argc > 1 ? atoi(argv[1]) : 1;
    if (scale < 1)
        scale = 1;

    struct grid a, b;
    grid_init(&a, N);
    grid_init(&b, N);

    double *coef = xmalloc(N * sizeof(double));
    for (int i = 0; i < N; i++)
        coef[i] = 0.20 + 0.05 * (double)(i % 8) / 8.0;

    struct grid *cur = &a, *next = &b, *tmp;
    for (int s = 0; s < SWEEPS * scale; s++) {
        sweep(cur, next, coef);
        tmp = cur;
        cur = next;
        next = tmp;
    }

    double sum = 0.0;
    for (size_t k = 0; k < (size_t)N * N; k++)
        sum += cur->v[k];
    printf("jacobi N=%d sweeps=%d sum=%.6f center=%.9f\n",
           N, SWEEPS * scale, sum, cur->v[(size_t)5 * N + 4]);

    free(a.v);
    free(b.v);
    free(coef);
    return 0;
}
