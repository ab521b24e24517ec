/* spmv.c - sparse matrix-vector multiply, CSR format.
 * 200k x 200k matrix, 10 nonzeros per row at random columns (2M nonzeros:
 * 16 MB of values, 8 MB of column indices, 0.8 MB of row pointers).
 * Vectors x and y are 200k doubles (1.6 MB) each.  Each iteration computes
 * y = A * x and then copies y back into x.
 * Usage: spmv [SCALE]  (SCALE multiplies the number of iterations) */
#include <stdio.h>
#include <stdlib.h>

#define NROWS 200000
#define NNZ_PER_ROW 10
#define ITERS 110

struct csr {
    int nrows;
    int *row_ptr;
    int *col;
    double *val;
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

static unsigned rng = 12345u;

static unsigned next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 17;
    rng ^= rng << 5;
    return rng;
}

static void build(struct csr *m, int nrows)
{
    int nnz = nrows * NNZ_PER_ROW;
    m->nrows = nrows;
    m->row_ptr = xmalloc((nrows + 1) * sizeof(int));
    m->col = xmalloc(nnz * sizeof(int));
    m->val = xmalloc(nnz * sizeof(double));
    for (int i = 0; i <= nrows; i++)
        m->row_ptr[i] = i * NNZ_PER_ROW;
    for (int k = 0; k < nnz; k++) {
        m->col[k] = next_rand() % nrows;
        m->val[k] = (0.5 + (next_rand() % 100) / 100.0) / NNZ_PER_ROW;
    }
}

static void spmv(const struct csr *m, const double *x, double *y)
{
    for (int i = 0; i < m->nrows; i++) {
        double sum = 0.0;
        for (int k = m->row_ptr[i]; k < m->row_ptr[i + 1]; k++)
            sum += m->val[k] * x[m->col[k]];
        y[i] = sum;
    }
}

int main(int argc, char **argv)
{
    int scale = argc > 1 ? atoi(argv[1]) : 1;
    if (scale < 1)
        scale = 1;

    struct csr a;
    build(&a, NROWS);
    double *x = calloc(NROWS, sizeof(double));
    double *y = calloc(NROWS, sizeof(double));
    if (!x || !y) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }

    double checksum = 0.0;
    for (int it = 0; it < ITERS * scale; it++) {
        if (it % ITERS == 0)
            for (int i = 0; i < NROWS; i++)
                x[i] = 1.0 + (i % 7) * 0.125;
        spmv(&a, x, y);
        for (int i = 0; i < NROWS; i++)
            x[i] = y[i];
        checksum += y[it % NROWS];
    }

    double ysum = 0.0;
    for (int i = 0; i < NROWS; i++)
        ysum += y[i];
    printf("spmv rows=%d iters=%d checksum=%.9f ysum=%.6f\n",
           NROWS, ITERS * scale, checksum, ysum);

    free(a.row_ptr);
    free(a.col);
    free(a.val);
    free(x);
    free(y);
    return 0;
}
