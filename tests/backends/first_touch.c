/*
 * first_touch.c - uninstrumented (plain cc) first-touch workload for the
 * pagefault backend: the main thread initialises master_data, two worker
 * threads initialise one half of worker_data each; then every thread reads
 * both arrays.
 *
 * With an argument FIFO, the program opens FIFO and waits for one byte
 * before it starts (the test attaches first), and prints its pid first.
 * Transparent huge pages are disabled on both arrays so that one page
 * fault is one 4 KiB page (exact expectations: NR_PAGES per array).
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#define PAGE 4096
#define NR_PAGES 1024

char master_data[NR_PAGES * PAGE] __attribute__((aligned(PAGE)));
char worker_data[NR_PAGES * PAGE] __attribute__((aligned(PAGE)));
static volatile uint64_t sink;
static pthread_barrier_t touched;

static void *worker(void *arg)
{
	long half = (long)arg;
	uint64_t s = 0;

	for (long p = half * NR_PAGES / 2; p < (half + 1) * NR_PAGES / 2; p++)
		worker_data[p * PAGE] = (char)p;
	pthread_barrier_wait(&touched);	/* no read before every page is written */
	for (long p = 0; p < NR_PAGES; p++)
		s += (unsigned char)master_data[p * PAGE] + (unsigned char)worker_data[p * PAGE];
	sink += s;
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t[2];

	madvise(master_data, sizeof(master_data), MADV_NOHUGEPAGE);
	madvise(worker_data, sizeof(worker_data), MADV_NOHUGEPAGE);
	if (argc > 1) {
		char c;
		int fd;

		printf("%d\n", (int)getpid());
		fflush(stdout);
		fd = open(argv[1], O_RDONLY);
		if (fd < 0 || read(fd, &c, 1) != 1)
			return 2;
		close(fd);
	}
	for (long p = 0; p < NR_PAGES; p++)
		master_data[p * PAGE] = (char)p;
	pthread_barrier_init(&touched, NULL, 2);
	for (long i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, worker, (void *)i))
			return 3;	/* the monitor must never make this fail */
	for (long i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	printf("first_touch: done %llu\n", (unsigned long long)(sink & 1));
	return 0;
}
