/* gemm.c - naive dense matrix multiply C = A * B (i-j-k order).
 * B is walked down a column in the inner loop, so almost every B access
 * touches a new cache line.  Usage: gemm [SCALE]  (SCALE multiplies reps) */
#include <stdio.h>
#include <stdlib.h>

#define N 512
#define REPS 3

static void fill(double *m, unsigned seed)
{
    for (int i = 0; i < N * N; i++) {
        seed = seed * 1103515245u + 12345u;
        m[i] = (double)((seed >> 16) % 100) / 50.0 - 1.0;
    }
}

static void multiply(const double *a, const double *b, double *c)
{
    for (int i = 0; i < N; i++) {
        for (int j = 0; j < N; j++) {
            double sum = 0.0;
            for (int k = 0; k < N; k++)
                sum += a[i * N + k] * b[k * N + j];
            c[i * N + j] = sum;
        }
    }
}

int main(int argc, char **argv)
{
    int scale = argc > 1 ? atoi(argv[1]) : 1;
    if (scale < 1)
        scale = 1;

    double *a = malloc(N * N * sizeof(double));
    double *b = malloc(N * N * sizeof(double));
    double *c = malloc(N * N * sizeof(double));
    if (!a || !b || !c) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    fill(a, 1);
    fill(b, 2);

    double checksum = 0.0;
    for (int r = 0; r < REPS * scale; r++) {
        multiply(a, b, c);
        checksum += c[(r * 7919) % (N * N)];
        a[r % (N * N)] += 0.5;   /* make each rep slightly different */
    }

    double total = 0.0;
    for (int i = 0; i < N * N; i++)
        total += c[i];
    printf("gemm N=%d reps=%d checksum=%.6f total=%.6f\n",
           N, REPS * scale, checksum, total);

    free(a);
    free(b);
    free(c);
    return 0;
}
