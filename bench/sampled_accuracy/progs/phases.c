/* phases.c - a three-phase program.
 * Phase 1: streams over X (4M doubles, 32 MiB) several times.
 * Phase 2: random reads in Y (4M unsigned ints, 16 MiB).
 * Phase 3: column-order walk of Z (2048 x 2048 floats, 16 MiB).
 * Each phase takes roughly a third of the run time.
 * Usage: phases [SCALE]  (SCALE repeats the three phases) */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>

#define XLEN (4 * 1024 * 1024)
#define YLEN (4 * 1024 * 1024)
#define ZN 2048
#define X_PASSES 56
#define Y_READS (10 * 1024 * 1024)
#define Z_WALKS 4

static double *X;
static unsigned *Y;
static float *Z;

static void *xmalloc(size_t size)
{
    void *p = malloc(size);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    return p;
}

static double phase_stream(void)
{
    double sum = 0.0;
    for (int p = 0; p < X_PASSES; p++)
        for (size_t i = 0; i < XLEN; i++)
            sum += X[i];
    return sum;
}

static unsigned long phase_random(uint64_t seed)
{
    unsigned long sum = 0;
    for (long n = 0; n < Y_READS; n++) {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        sum += Y[seed % YLEN];
    }
    return sum;
}

static double phase_columns(void)
{
    double sum = 0.0;
    for (int w = 0; w < Z_WALKS; w++)
        for (int j = 0; j < ZN; j++)
            for (int i = 0; i < ZN; i++)
                sum += Z[(size_t)i * ZN + j];
    return sum;
}

int main(int argc, char **argv)
{
    int scale = argc > 1 ? atoi(argv[1]) : 1;
    if (scale < 1)
        scale = 1;

    X = xmalloc(XLEN * sizeof(double));
    Y = malloc(YLEN * sizeof(unsigned));
    Z = malloc((size_t)ZN * ZN * sizeof(float));
    if (!Y || !Z) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < XLEN; i++)
        X[i] = (double)(i % 1000) * 0.001;
    for (size_t i = 0; i < YLEN; i++)
        Y[i] = (unsigned)(i * 2654435761u) >> 20;
    for (size_t i = 0; i < (size_t)ZN * ZN; i++)
        Z[i] = (float)(i % 17) * 0.25f;

    double xs = 0.0, zs = 0.0;
    unsigned long ys = 0;
    for (int r = 0; r < scale; r++) {
        xs += phase_stream();
        ys += phase_random(0x2545F4914F6CDD1DULL + (uint64_t)r);
        zs += phase_columns();
    }
    printf("phases scale=%d x=%.3f y=%lu z=%.3f\n", scale, xs, ys, zs);

    free(X);
    free(Y);
    free(Z);
    return 0;
}
