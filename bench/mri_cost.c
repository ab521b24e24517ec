/*
 * mri_cost.c - what the MRI costs a tool: the time of one request/response
 * round trip (ping: framing, JSON both ways, the server thread's wake-up and
 * dispatch, the socket) and of one read of 64 conditional counters (the
 * same plus mon_cond_read over every thread and 64 values each way), on a
 * live instrumented target that sits idle waiting for input.
 *
 * Prints `name: value` lines; never fails on timing.
 * usage: mri_cost INSTRUMENTED_MRI_TARGET [ROUNDS]
 */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mri.h"

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

int main(int argc, char **argv)
{
	int rounds = argc > 2 ? atoi(argv[2]) : 20000, ctl[2], status, err;
	struct mri_counter c[64];
	struct mri_range r[64];
	struct mri_session *s = NULL;
	struct mri_reading rd;
	uint64_t exp;
	double t0, rt, read64;
	pid_t pid;

	if (argc < 2 || rounds <= 0) {
		fprintf(stderr, "usage: %s MRI_TARGET [ROUNDS]\n", argv[0]);
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	if (pipe(ctl))
		return 2;
	pid = fork();
	if (pid == 0) {
		dup2(ctl[0], 0);
		/* Nothing else inherited: make's jobserver pipes are fd 3 and 4,
		 * and fd 3 is the target's acknowledgement channel. */
		for (int fd = 3; fd < 256; fd++)
			close(fd);
		if (!freopen("/dev/null", "w", stdout))
			_exit(126);
		execl(argv[1], argv[1], (char *)NULL);
		_exit(127);
	}
	close(ctl[0]);
	err = AMEBA_ENOENT;
	for (int i = 0; i < 200 && err == AMEBA_ENOENT; i++) {	/* until its socket is up */
		if (s)
			mri_close(s);
		s = NULL;
		usleep(10000);
		if (waitpid(pid, &status, WNOHANG) == pid) {
			fprintf(stderr, "mri_cost: %s ended with status %d before it could be measured\n",
				argv[1], WIFEXITED(status) ? WEXITSTATUS(status) : -1);
			return 1;
		}
		err = mri_open_pid(&s, pid, 10000);
	}
	if (err) {
		fprintf(stderr, "mri_cost: %s\n", mri_errmsg(s));
		return 1;
	}
	for (int i = 0; i < 100; i++)	/* warm up */
		mri_ping(s);
	t0 = now_us();
	for (int i = 0; i < rounds; i++)
		if (mri_ping(s))
			return 1;
	rt = (now_us() - t0) / rounds;

	if (mri_attach(s, NULL))
		return 1;
	for (int i = 0; i < 64; i++) {
		/* 64 disjoint 4 KiB ranges (the addresses need not be mapped). */
		r[i].start = 0x10000000ull + (uint64_t)i * 0x2000;
		r[i].end = r[i].start + 0x1000;
		c[i] = (struct mri_counter){ .metric = AMEBA_M_MEM_REF, .nr_ranges = 1, .ranges = &r[i] };
	}
	if (mri_experiment_start(s, c, 64, 0, &exp)) {
		fprintf(stderr, "mri_cost: %s\n", mri_errmsg(s));
		return 1;
	}
	for (int i = 0; i < 100; i++)
		mri_experiment_read(s, exp, 0, &rd);
	t0 = now_us();
	for (int i = 0; i < rounds / 4; i++)
		if (mri_experiment_read(s, exp, 0, &rd))
			return 1;
	read64 = (now_us() - t0) / (rounds / 4);
	mri_experiment_stop(s, exp, NULL);
	mri_detach(s);
	mri_close(s);
	if (write(ctl[1], "quit\n", 5) != 5)
		kill(pid, SIGTERM);
	waitpid(pid, &status, 0);

	printf("mri_rounds: %d\n", rounds);
	printf("mri_roundtrip_us: %.2f\n", rt);
	printf("mri_read64_us: %.2f\n", read64);
	return 0;
}
