/* gemm_blocked.c - dense matrix multiply C = A * B with cache blocking.
 * Tiles of T x T; inside a tile the loop order is i-k-j, so B and C are
 * walked along rows.  Usage: gemm_blocked [SCALE]  (SCALE multiplies reps) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 512
#define T 32
#define REPS 14

static double *xmalloc(size_t n)
{
    double *p = malloc(n * sizeof(double));
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    return p;
}

static void fill(double *m, unsigned seed)
{
    for (int i = 0; i < N * N; i++) {
        seed = seed * 1103515245u + 12345u;
        m[i] = (double)((seed >> 16) % 100) / 50.0 - 1.0;
    }
}

static void multiply(const double *a, const double *b, double *c)
{
    memset(c, 0, N * N * sizeof(double));
    for (int ii = 0; ii < N; ii += T)
        for (int kk = 0; kk < N; kk += T)
            for (int jj = 0; jj < N; jj += T)
                for (int i = ii; i < ii + T; i++)
                    for (int k = kk; k < kk + T; k++) {
                        double aik = a[i * N + k];
                        for (int j = jj; j < jj + T; j++)
                            c[i * N + j] += aik * b[k * N + j];
                    }
}

int main(int argc, char **argv)
{
    int scale = argc > 1 ? atoi(argv[1]) : 1;
    if (scale < 1)
        scale = 1;

    double *a = xmalloc(N * N);
    double *b = xmalloc(N * N);
    double *c = xmalloc(N * N);
    fill(a, 1);
    fill(b, 2);

    double checksum = 0.0;
    for (int r = 0; r < REPS * scale; r++) {
        multiply(a, b, c);
        checksum += c[(r * 7919) % (N * N)];
        a[r % (N * N)] += 0.5;
    }

    double total = 0.0;
    for (int i = 0; i < N * N; i++)
        total += c[i];
    printf("gemm_blocked N=%d T=%d reps=%d checksum=%.6f total=%.6f\n",
           N, T, REPS * scale, checksum, total);

    free(a);
    free(b);
    free(c);
    return 0;
}
