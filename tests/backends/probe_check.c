/*
 * probe_check.c - an independent probe for the detection test: opens the
 * events `ameba list backends` reports on, with its own perf_event_open
 * calls, and prints one word per backend:
 *   perf=available|ERRNAME pagefault=... watch=...
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static long word;

static const char *try_open(struct perf_event_attr *a)
{
	long fd;

	a->size = sizeof(*a);
	a->exclude_kernel = 1;
	fd = syscall(SYS_perf_event_open, a, 0, -1, -1, 0);
	if (fd < 0)
		return strerrorname_np(errno);
	close((int)fd);
	return "available";
}

int main(void)
{
	struct perf_event_attr hw = { .type = PERF_TYPE_HARDWARE,
				      .config = PERF_COUNT_HW_CPU_CYCLES, .disabled = 1 };
	struct perf_event_attr pf = { .type = PERF_TYPE_SOFTWARE,
				      .config = PERF_COUNT_SW_PAGE_FAULTS, .sample_period = 1,
				      .sample_type = PERF_SAMPLE_ADDR, .disabled = 1 };
	struct perf_event_attr bp = { .type = PERF_TYPE_BREAKPOINT, .bp_type = HW_BREAKPOINT_W,
				      .bp_addr = (unsigned long)&word,
				      .bp_len = HW_BREAKPOINT_LEN_8, .sample_period = 1 };

	printf("perf=%s ", try_open(&hw));
	printf("pagefault=%s ", try_open(&pf));
	printf("watch=%s\n", try_open(&bp));
	return 0;
}
