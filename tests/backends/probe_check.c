/*
 * probe_check.c - an independent probe for the detection test: opens the
 * events `ameba list backends` reports on, with its own perf_event_open
 * calls, and prints one word per backend:
 *   perf=available|ERRNAME pagefault=... watch=...
 * A breakpoint must also count: watch=NOCOUNT when it opens but counts
 * fewer than the 3 writes made to its word (a hypervisor that does not pass
 * debug-register hits on).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static volatile long word;

/* perf_event_open of a on this thread, user level: the fd, or -1 (errno) */
static long open_ev(struct perf_event_attr *a)
{
	a->size = sizeof(*a);
	a->exclude_kernel = 1;
	return syscall(SYS_perf_event_open, a, 0, -1, -1, 0);
}

static const char *try_open(struct perf_event_attr *a)
{
	long fd = open_ev(a);

	if (fd < 0)
		return strerrorname_np(errno);
	close((int)fd);
	return "available";
}

/* Opens a, writes its word three times, and reads the count. */
static const char *try_count(struct perf_event_attr *a)
{
	long fd = open_ev(a);
	long long v = 0;

	if (fd < 0)
		return strerrorname_np(errno);
	for (int i = 0; i < 3; i++)
		word = word + 1;
	if (read((int)fd, &v, sizeof(v)) != sizeof(v))
		v = -1;
	close((int)fd);
	return v == 3 ? "available" : "NOCOUNT";
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
	printf("watch=%s\n", try_count(&bp));
	return 0;
}
