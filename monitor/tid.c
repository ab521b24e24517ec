/*
 * tid.c - what the OS says about one thread of this process: its
 * scheduling state and the CPU time it has run. The ordered mode's merger
 * (seq_merge.c) asks both of a thread whose log stays empty; sampled mode's
 * replay (tally.c) asks whether a late thread waits for a CPU.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mon.h"

char mon_tid_state(pid_t tid)
{
	char path[64], buf[256], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;	/* gone */
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	/* the state follows the name, which may hold ')' itself */
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : 0;
}

uint64_t mon_tid_cpu_ms(pid_t tid)
{
	struct timespec ts;
	/* Linux encodes the tid in the clock id, as pthread_getcpuclockid
	 * does: per thread, scheduler clock */
	clockid_t id = (clockid_t)((~(unsigned)tid << 3) | 6);

	if (clock_gettime(id, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}
