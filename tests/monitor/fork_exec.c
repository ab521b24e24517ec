/*
 * fork_exec.c - the runtime across fork() and exec().
 *
 * While a second thread allocates and frees in a loop (so that runtime locks
 * are likely held at the moment of fork), the main thread forks children
 * that allocate, start threads and exit normally; then it forks a child that
 * execs this program again. Each process writes its own oracle when
 * AMEBA_ORACLE contains %p; fork_exec.sh checks all three kinds of file.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static volatile int stop;

NOINLINE static long *parent_block(void) { return malloc(100 * sizeof(long)); }
NOINLINE static long *child_block(void) { return malloc(50 * sizeof(long)); }
NOINLINE static long *thread_block(void) { return malloc(10 * sizeof(long)); }
NOINLINE static long *exec_block(void) { return malloc(20 * sizeof(long)); }

static void *churn(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		void *p = malloc(64);
		free(p);
	}
	return NULL;
}

static void *child_thread(void *arg)
{
	volatile long *p = thread_block();
	for (int i = 0; i < 10; i++)
		p[i] = i;
	long v = p[9];
	free((void *)p);
	return (void *)v;
}

static int run_exec_image(void)
{
	volatile long *p = exec_block();
	long s = 0;
	for (int i = 0; i < 20; i++)
		p[i] = i;
	for (int i = 0; i < 20; i++)
		s += p[i];
	printf("exec image: %ld\n", s);
	free((void *)p);
	return 0;
}

int main(int argc, char **argv)
{
	pthread_t bg;
	volatile long *blk;
	int status, nr_ok = 0;

	if (argc > 1 && !strcmp(argv[1], "exec"))
		return run_exec_image();

	blk = parent_block();
	for (int i = 0; i < 100; i++)
		blk[i] = i;
	pthread_create(&bg, NULL, churn, NULL);

	/* Several forks while `churn` holds allocator and object-map locks. */
	for (int k = 0; k < 5; k++) {
		fflush(stdout);
		pid_t pid = fork();
		if (pid == 0) {
			volatile long *c = child_block();
			pthread_t t;
			void *ret;

			for (int i = 0; i < 50; i++)
				c[i] = blk[i];
			pthread_create(&t, NULL, child_thread, NULL);
			pthread_join(t, &ret);
			free((void *)c);
			exit((long)ret == 9 ? 0 : 1);
		}
		waitpid(pid, &status, 0);
		nr_ok += WIFEXITED(status) && WEXITSTATUS(status) == 0;
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	pthread_join(bg, NULL);
	printf("forked children ok: %d of 5\n", nr_ok);

	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		execl("/proc/self/exe", argv[0], "exec", (char *)NULL);
		_exit(127);
	}
	waitpid(pid, &status, 0);
	printf("exec child status: %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	free((void *)blk);
	return 0;
}
