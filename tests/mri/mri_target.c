/*
 * mri_target.c - a long-lived workload for the MRI tests whose memory
 * accesses are known exactly, driven one command per line on stdin:
 *
 *   phase N   each of the two workers makes N passes over its halves of
 *             work_a and work_b (below); the target prints the phase's
 *             checksums and acknowledges on fd 3 with the accesses it made:
 *             "done K a=A ar=AR aw=AW b=B br=BR bw=BW" (a = mem_ref on
 *             work_a, ar/aw its reads/writes; b for work_b)
 *   churn N [K]  the main thread allocates N blocks of 64 bytes, one at a
 *             time, from one site (churn_block@mri_target.c), writes each 4
 *             times and reads it once (8-byte volatile accesses: one line
 *             each), frees it - but keeps every K-th block (K > 0) live
 *             until quit; prints the checksum, acknowledges "churned N"
 *             (freed blocks' records are recycled: monitor/fold.c)
 *   xchurn N  blocks handed between threads: a helper thread allocates
 *             N blocks of 64 bytes from one site (xchurn_block@mri_target.c)
 *             in rounds of 1,000 and writes each 4 times; the main thread
 *             reads each once and frees it (5 counted accesses a block, by
 *             two threads); prints the checksum, acknowledges "xchurned N"
 *   mchurn N  the same through three threads: a relay thread reads each
 *             block once between the helper and main (6 counted accesses a
 *             block: 4 writes, 2 reads); acknowledges "mchurned N"
 *   threads N the main thread starts N threads one after the other, each
 *             incrementing its slot of spawned[] 10 times (10 volatile
 *             8-byte reads and 10 writes) and ending; acknowledges "spawned N" once all were joined (ids
 *             from 3 on: main is 0, the workers 1 and 2)
 *   quit      reads both arrays once for the final checksum, acknowledges
 *             "quit a=4096 b=2048", prints, exits 0
 *
 * and, started as `mri_target --spin SECONDS`, runs a one-pass phase every
 * 10 ms on its own for that long (for tests that only need a live target).
 *
 * (The arrays are not called mri_*: the object map takes names with the
 * runtime's prefixes - mon_, mri_, ameba_ - for the runtime's own data.)
 *
 * Every counted access is a volatile 8-byte access to 64-byte aligned
 * arrays, so each is exactly one instrumented access to one cache line
 * (docs/oracle.md). Everything else - command parsing, synchronisation,
 * printing - runs in functions built without instrumentation
 * (no_sanitize("thread")) and touches no instrumented memory, so that
 * between two commands the program makes exactly the accesses it reports.
 *
 * Per pass, worker w (0 or 1) makes
 *   a[i] = a[i] * 3 + p + 1   for its 2048 elements of a: 2048 reads + 2048 writes
 *   b[j] = b[j] + a[2 * j]    for its 1024 elements of b: 1024 reads + 1024
 *                             writes of b, 1024 reads of a (its own half)
 * so the workers never touch each other's elements and the output does not
 * depend on the schedule. Threads: main = 0, workers = 1 and 2.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
#define UNCOUNTED __attribute__((no_sanitize("thread"), noinline))

#define NR_A 4096
#define NR_B 2048
#define HALF_A (NR_A / 2)
#define HALF_B (NR_B / 2)

uint64_t work_a[NR_A] __attribute__((aligned(64)));
uint64_t work_b[NR_B] __attribute__((aligned(64)));

static struct {
	pthread_mutex_t lock;
	pthread_cond_t go, done;
	uint64_t seq;			/* phase number being run */
	long passes;
	int nr_done;
	int quit;
} ctl = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, 0 };

static int ack_fd = -1;

/* A heap block with a site the tests look for: make_table@mri_target.c. */
NOINLINE static void *make_table(void)
{
	return malloc(64 * 1024);
}

/*
 * Short-lived blocks whose site has no live block by the time a client
 * lists: make_scratch@mri_target.c, 3 blocks of 256 bytes, all freed before
 * "ready" (never touched: nothing counted).
 */
NOINLINE static void make_scratch(void)
{
	for (int i = 0; i < 3; i++) {
		void *volatile p = malloc(256);

		free(p);
	}
}

NOINLINE static void *churn_block(void)
{
	return malloc(64);
}

uint64_t spawned[64] __attribute__((aligned(64)));

/* threads N (above): 20 counted accesses, then the thread ends. */
NOINLINE static void *spawned_thread(void *arg)
{
	volatile uint64_t *slot = &spawned[(uintptr_t)arg % 64];

	for (int i = 0; i < 10; i++)
		*slot = *slot + 1;
	return NULL;
}

UNCOUNTED static void spawn_threads(long n)
{
	for (long i = 0; i < n; i++) {
		pthread_t th;

		if (pthread_create(&th, NULL, spawned_thread, (void *)(uintptr_t)i) == 0)
			pthread_join(th, NULL);
	}
}

NOINLINE static void *xchurn_block(void)
{
	return malloc(64);
}

#define XROUND 1000

/*
 * xchurn and mchurn (above): rounds of up to XROUND blocks pass from the
 * helper (it makes and writes them) through the relay when there is one
 * (it reads each once) to main (it reads each once and frees them).
 * stage: 0 the helper's turn, 1 the relay's, 2 main's; done: no blocks
 * left and main took the last round.
 */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t cv;
	volatile uint64_t *blk[XROUND];
	long left;		/* blocks still to make */
	int n;			/* blocks in this round */
	int stage, relay, done;
} xc = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, { 0 }, 0, 0, 0, 0, 0 };

/* The helper's round: n blocks made and written (4 counted writes each). */
NOINLINE static void xchurn_make(long n, long base)
{
	for (long i = 0; i < n; i++) {
		volatile uint64_t *p = xchurn_block();

		if (p) {
			p[0] = (uint64_t)(base + i);
			p[1] = 1;
			p[2] = 2;
			p[3] = 3;
		}
		xc.blk[i] = p;
	}
}

/* The relay's round: each block read once (1 counted read). */
NOINLINE static uint64_t xchurn_pass(long n)
{
	uint64_t s = 0;

	for (long i = 0; i < n; i++)
		if (xc.blk[i])
			s += xc.blk[i][1];
	return s;
}

/* Main's round: each block read once (1 counted read) and freed. */
NOINLINE static uint64_t xchurn_take(long n)
{
	uint64_t s = 0;

	for (long i = 0; i < n; i++)
		if (xc.blk[i]) {
			s += xc.blk[i][0];
			free((void *)(uintptr_t)xc.blk[i]);
		}
	return s;
}

/* Waits for stage (or done); returns the round's size, 0 when done. */
UNCOUNTED static int xchurn_wait(int stage)
{
	int n;

	pthread_mutex_lock(&xc.lock);
	while (xc.stage != stage && !xc.done)
		pthread_cond_wait(&xc.cv, &xc.lock);
	n = xc.stage == stage && !xc.done ? xc.n : 0;
	pthread_mutex_unlock(&xc.lock);
	return n;
}

UNCOUNTED static void xchurn_next(int stage)
{
	pthread_mutex_lock(&xc.lock);
	xc.stage = stage;
	pthread_cond_broadcast(&xc.cv);
	pthread_mutex_unlock(&xc.lock);
}

UNCOUNTED static void *xchurn_helper(void *arg)
{
	long base = 0;

	(void)arg;
	for (;;) {
		long n;

		pthread_mutex_lock(&xc.lock);
		while (xc.stage != 0)
			pthread_cond_wait(&xc.cv, &xc.lock);
		n = xc.left < XROUND ? xc.left : XROUND;
		if (!n) {
			xc.done = 1;
			pthread_cond_broadcast(&xc.cv);
		}
		pthread_mutex_unlock(&xc.lock);
		if (!n)
			return NULL;
		xchurn_make(n, base);
		base += n;
		pthread_mutex_lock(&xc.lock);
		xc.left -= n;
		xc.n = (int)n;
		xc.stage = xc.relay ? 1 : 2;
		pthread_cond_broadcast(&xc.cv);
		pthread_mutex_unlock(&xc.lock);
	}
}

UNCOUNTED static void *xchurn_relay(void *arg)
{
	uint64_t *s = arg;
	int n;

	while ((n = xchurn_wait(1))) {
		*s += xchurn_pass(n);
		xchurn_next(2);
	}
	return NULL;
}

/* relay: a third thread reads every block between helper and main. */
UNCOUNTED static uint64_t xchurn(long n, int relay)
{
	pthread_t th, rth;
	uint64_t s = 0, rs = 0;
	int got;

	xc.left = n;
	xc.n = 0;
	xc.stage = 0;
	xc.done = 0;
	xc.relay = relay;
	if (pthread_create(&th, NULL, xchurn_helper, NULL))
		return 0;
	if (relay && pthread_create(&rth, NULL, xchurn_relay, &rs)) {
		fprintf(stderr, "mri_target: no relay thread\n");
		exit(1);
	}
	while ((got = xchurn_wait(2))) {
		s += xchurn_take(got);
		xchurn_next(0);
	}
	pthread_join(th, NULL);
	if (relay)
		pthread_join(rth, NULL);
	return s + rs;
}

static void *kept[256];
static int nr_kept;

/* churn N K (above): 5 counted accesses per block, all in its own block. */
NOINLINE static uint64_t churn(long n, long k)
{
	uint64_t s = 0;

	for (long i = 0; i < n; i++) {
		volatile uint64_t *p = churn_block();

		if (!p)
			break;
		p[0] = (uint64_t)i;
		p[1] = (uint64_t)i + 1;
		p[2] = (uint64_t)i + 2;
		p[3] = (uint64_t)i + 3;
		s += p[2];
		if (k > 0 && i % k == k - 1 && nr_kept < 256)
			kept[nr_kept++] = (void *)(uintptr_t)p;
		else
			free((void *)(uintptr_t)p);
	}
	return s;
}

/* The counted work of one worker: passes over its halves. */
NOINLINE static void work(int w, long passes)
{
	volatile uint64_t *a = work_a, *b = work_b;

	for (long p = 0; p < passes; p++) {
		for (int i = w * HALF_A; i < (w + 1) * HALF_A; i++)
			a[i] = a[i] * 3 + (uint64_t)p + 1;
		for (int j = w * HALF_B; j < (w + 1) * HALF_B; j++)
			b[j] = b[j] + a[2 * j];
	}
}

/* The final checksum: every element read once (4096 + 2048 reads). */
NOINLINE static uint64_t checksum(void)
{
	volatile uint64_t *a = work_a, *b = work_b;
	uint64_t s = 0;

	for (int i = 0; i < NR_A; i++)
		s = s * 31 + a[i];
	for (int j = 0; j < NR_B; j++)
		s = s * 37 + b[j];
	return s;
}

UNCOUNTED static uint64_t peek_sum(const uint64_t *x, int n)
{
	uint64_t s = 0;

	for (int i = 0; i < n; i++)
		s = s * 131 + x[i];
	return s;
}

UNCOUNTED static void ack(const char *fmt, long a1, long a2, long a3, long a4, long a5, long a6,
			  long a7)
{
	char buf[256];
	int n;

	if (ack_fd < 0)
		return;
	n = snprintf(buf, sizeof(buf), fmt, a1, a2, a3, a4, a5, a6, a7);
	if (write(ack_fd, buf, (size_t)n) != n)
		ack_fd = -1;	/* nobody listens: carry on without acks */
}

UNCOUNTED static void *worker(void *arg)
{
	int w = (int)(intptr_t)arg;
	uint64_t seen = 0;

	for (;;) {
		long passes;

		pthread_mutex_lock(&ctl.lock);
		while (ctl.seq == seen && !ctl.quit)
			pthread_cond_wait(&ctl.go, &ctl.lock);
		if (ctl.quit) {
			pthread_mutex_unlock(&ctl.lock);
			return NULL;
		}
		seen = ctl.seq;
		passes = ctl.passes;
		pthread_mutex_unlock(&ctl.lock);
		work(w, passes);
		pthread_mutex_lock(&ctl.lock);
		ctl.nr_done++;
		pthread_cond_signal(&ctl.done);
		pthread_mutex_unlock(&ctl.lock);
	}
}

UNCOUNTED static void phase(long passes)
{
	long ar = 2 * passes * (HALF_A + HALF_B), aw = 2 * passes * HALF_A;
	long br = 2 * passes * HALF_B, bw = 2 * passes * HALF_B;

	pthread_mutex_lock(&ctl.lock);
	ctl.passes = passes;
	ctl.nr_done = 0;
	ctl.seq++;
	pthread_cond_broadcast(&ctl.go);
	while (ctl.nr_done < 2)
		pthread_cond_wait(&ctl.done, &ctl.lock);
	pthread_mutex_unlock(&ctl.lock);
	printf("phase %lu: %ld passes, a %016llx, b %016llx\n", (unsigned long)ctl.seq, passes,
	       (unsigned long long)peek_sum(work_a, NR_A),
	       (unsigned long long)peek_sum(work_b, NR_B));
	fflush(stdout);
	ack("done %ld a=%ld ar=%ld aw=%ld b=%ld br=%ld bw=%ld\n", (long)ctl.seq, ar + aw, ar, aw,
	    br + bw, br, bw);
}

UNCOUNTED static int is_word(const char *line, const char *w)
{
	int i = 0;

	while (w[i] && line[i] == w[i])
		i++;
	return !w[i] && (line[i] == '\0' || line[i] == '\n' || line[i] == ' ');
}

UNCOUNTED int main(int argc, char **argv)
{
	pthread_t th[2];
	char line[128];
	void *table;
	long n;

	/* fd 3 is the ack channel when it is open for writing. */
	if ((fcntl(3, F_GETFL) & O_ACCMODE) != O_RDONLY && fcntl(3, F_GETFD) != -1)
		ack_fd = 3;
	table = make_table();
	make_scratch();
	for (int w = 0; w < 2; w++)
		if (pthread_create(&th[w], NULL, worker, (void *)(intptr_t)w))
			return 2;
	if (argc == 3 && is_word(argv[1], "--spin")) {
		struct timespec t0, now, tick = { 0, 10000000 };

		clock_gettime(CLOCK_MONOTONIC, &t0);
		do {
			phase(1);
			nanosleep(&tick, NULL);
			clock_gettime(CLOCK_MONOTONIC, &now);
		} while (now.tv_sec - t0.tv_sec < atol(argv[2]));
	} else {
		ack("ready %ld\n", (long)getpid(), 0, 0, 0, 0, 0, 0);
		while (fgets(line, sizeof(line), stdin)) {
			if (sscanf(line, "phase %ld", &n) == 1 && n > 0 && n < 1000000)
				phase(n);
			else if (sscanf(line, "xchurn %ld", &n) == 1 && n > 0 && n < 100000000) {
				printf("xchurn %ld: %016llx\n", n, (unsigned long long)xchurn(n, 0));
				fflush(stdout);
				ack("xchurned %ld\n", n, 0, 0, 0, 0, 0, 0);
			} else if (sscanf(line, "mchurn %ld", &n) == 1 && n > 0 && n < 100000000) {
				printf("mchurn %ld: %016llx\n", n, (unsigned long long)xchurn(n, 1));
				fflush(stdout);
				ack("mchurned %ld\n", n, 0, 0, 0, 0, 0, 0);
			} else if (sscanf(line, "threads %ld", &n) == 1 && n > 0 && n < 100000) {
				spawn_threads(n);
				ack("spawned %ld\n", n, 0, 0, 0, 0, 0, 0);
			} else if (sscanf(line, "churn %ld", &n) == 1 && n > 0 && n < 100000000) {
				long k = 0;

				if (sscanf(line, "churn %ld %ld", &n, &k) < 2)
					k = 0;
				printf("churn %ld: %016llx\n", n, (unsigned long long)churn(n, k));
				fflush(stdout);
				ack("churned %ld\n", n, 0, 0, 0, 0, 0, 0);
			}
			else if (is_word(line, "quit"))
				break;
			else
				fprintf(stderr, "mri_target: unknown command: %s", line);
		}
	}
	ack("quit a=%ld b=%ld\n", NR_A, NR_B, 0, 0, 0, 0, 0);
	printf("final %016llx\n", (unsigned long long)checksum());
	pthread_mutex_lock(&ctl.lock);
	ctl.quit = 1;
	pthread_cond_broadcast(&ctl.go);
	pthread_mutex_unlock(&ctl.lock);
	for (int w = 0; w < 2; w++)
		pthread_join(th[w], NULL);
	free(table);
	while (nr_kept > 0)
		free(kept[--nr_kept]);
	return 0;
}
