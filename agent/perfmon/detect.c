/*
 * detect.c - which backends work on this machine, and why the others do
 * not: `ameba list backends`, and the error an unusable backend gives.
 *
 * Notes:
 *  - Every answer is probed, not assumed: a hardware event (cycles, then
 *    instructions) is opened on the agent itself; a page-fault event with
 *    PERF_SAMPLE_ADDR likewise; breakpoints are opened on a word of the
 *    agent until the kernel refuses one (that count is the slots a thread
 *    has, 4 on x86), and the probe checks that three writes count three;
 *    a uprobe is opened on malloc of the agent's own libc through the
 *    uprobe PMU (type from sysfs, config1 = path, config2 = file offset).
 *  - ENOENT / EOPNOTSUPP / ENODEV on a hardware event mean no PMU (a VM
 *    without PMU passthrough); EACCES / EPERM mean permissions, explained
 *    with perf_event_paranoid and the capabilities the agent has.
 *  - libpfm4 is asked which core PMU models it finds present; it still
 *    encodes the generic "cycles" through its perf_event table when none
 *    is, so pfm_ok alone does not mean a PMU exists.
 *  - The listing is the backend table's (ameba_backend_info, mri/common.c),
 *    row by row in its order: a runtime row is always available and says
 *    what it needs; an agent row is as available as its probe here
 *    (detect_agent), which may add what it found to the description. A row
 *    without a probe is listed unavailable, with the reason. The uprobes
 *    line after them is not a backend but what the agent rows find heap
 *    blocks with.
 */
#include <errno.h>
#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pm_elf.h"
#include "perfmon.h"
#include "pfm.h"
#include "uprobe.h"

long pm_perf_open(struct perf_event_attr *a, pid_t pid, int cpu, int group, unsigned long flags)
{
	return syscall(SYS_perf_event_open, a, pid, cpu, group, flags);
}

const char *perfmon_errname(int e)
{
	const char *n = strerrorname_np(e);

	return n ? n : "unknown error";
}

static int read_int_file(const char *path, int def)
{
	FILE *f = fopen(path, "re");
	int v = def;

	if (!f)
		return def;
	if (fscanf(f, "%d", &v) != 1)
		v = def;
	fclose(f);
	return v;
}

static void read_caps(struct perfmon_caps *c)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[256];
	unsigned long long eff = 0;

	if (f) {
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "CapEff: %llx", &eff) == 1)
				break;
		fclose(f);
	}
	c->cap_sys_admin = !!(eff & (1ull << 21));
	c->cap_sys_ptrace = !!(eff & (1ull << 19));
	c->cap_perfmon = !!(eff & (1ull << 38));
	c->is_root = geteuid() == 0;
}

static int probe_hw(uint64_t config)
{
	struct perf_event_attr a = { 0 };
	long fd;

	a.size = sizeof(a);
	a.type = PERF_TYPE_HARDWARE;
	a.config = config;
	a.disabled = 1;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	fd = pm_perf_open(&a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return errno;
	close((int)fd);
	return 0;
}

static volatile uint64_t probe_word __attribute__((aligned(8)));

static void probe_bp(struct perfmon_caps *c)
{
	int fds[16];
	uint32_t n = 0;

	for (; n < 16; n++) {
		struct perf_event_attr a = { 0 };
		long fd;

		a.size = sizeof(a);
		a.type = PERF_TYPE_BREAKPOINT;
		a.bp_type = HW_BREAKPOINT_W;
		a.bp_addr = (uintptr_t)&probe_word;
		a.bp_len = HW_BREAKPOINT_LEN_8;
		a.sample_period = 1;
		a.exclude_kernel = 1;
		a.exclude_hv = 1;
		fd = pm_perf_open(&a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
		if (fd < 0) {
			if (!n)
				c->bp_errno = errno;
			break;
		}
		fds[n] = (int)fd;
	}
	c->nr_bp_slots = n;
	if (n) {
		uint64_t v = 0;

		for (int i = 0; i < 3; i++)
			probe_word = probe_word + 1;
		if (read(fds[0], &v, sizeof(v)) == sizeof(v))
			c->bp_probe_count = v;
		c->bp_ok = v == 3;
		if (!c->bp_ok)
			c->bp_errno = EIO;
	}
	while (n)
		close(fds[--n]);
}

static void probe_sw(struct perfmon_caps *c)
{
	struct perf_event_attr a = { 0 };
	long fd;

	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_PAGE_FAULTS;
	a.sample_period = 1;
	a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_ADDR | PERF_SAMPLE_IP;
	a.disabled = 1;
	a.exclude_kernel = 1;
	fd = pm_perf_open(&a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0) {
		c->sw_errno = errno;
		return;
	}
	c->sw_ok = 1;
	close((int)fd);
}

/* The path of the C library pid maps, from /proc/PID/maps. */
int pm_find_libc(int32_t pid, char *path, size_t len)
{
	char mp[64], line[4096];
	FILE *f;
	int found = 0;

	snprintf(mp, sizeof(mp), "/proc/%d/maps", (int)pid);
	f = fopen(mp, "re");
	if (!f)
		return -errno;
	while (!found && fgets(line, sizeof(line), f)) {
		char *p = strchr(line, '/'), *base;

		if (!p)
			continue;
		p[strcspn(p, "\n")] = 0;
		base = strrchr(p, '/') + 1;
		if (!strncmp(base, "libc.so", 7) || !strncmp(base, "libc-", 5)) {
			snprintf(path, len, "%s", p);
			found = 1;
		}
	}
	fclose(f);
	return found ? 0 : -ENOENT;
}

static void probe_uprobe(struct perfmon_caps *c)
{
	struct perf_event_attr a = { 0 };
	struct pm_elf e;
	const struct pm_sym *s;
	char libc[4096];
	uint64_t off;
	long fd;

	c->uprobe_type = read_int_file("/sys/bus/event_source/devices/uprobe/type", -1);
	if (c->uprobe_type < 0) {
		c->uprobe_errno = ENOENT;
		return;
	}
	if (pm_find_libc(getpid(), libc, sizeof(libc)) || pm_elf_read(libc, &e)) {
		c->uprobe_errno = ENOENT;
		return;
	}
	s = pm_elf_func(&e, "malloc");
	off = s ? pm_elf_file_offset(&e, s->value) : UINT64_MAX;
	pm_elf_free(&e);
	if (off == UINT64_MAX) {
		c->uprobe_errno = ENOENT;
		return;
	}
	a.size = sizeof(a);
	a.type = (uint32_t)c->uprobe_type;
	a.config1 = (uintptr_t)libc;
	a.config2 = off;
	a.disabled = 1;
	fd = pm_perf_open(&a, getpid(), -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0) {
		c->uprobe_errno = errno;
		return;
	}
	c->uprobe_ok = 1;
	close((int)fd);
}

void perfmon_probe(struct perfmon_caps *c)
{
	memset(c, 0, sizeof(*c));
	c->paranoid = read_int_file("/proc/sys/kernel/perf_event_paranoid", -100);
	read_caps(c);
	c->hw_errno = probe_hw(PERF_COUNT_HW_CPU_CYCLES);
	c->hw_insn_errno = probe_hw(PERF_COUNT_HW_INSTRUCTIONS);
	c->hw_ok = !c->hw_errno;
	c->pfm_ok = pm_pfm_probe(c->pfm_pmus, sizeof(c->pfm_pmus)) == 0;
	c->ibs_op_type = read_int_file("/sys/bus/event_source/devices/ibs_op/type", -1);
	probe_sw(c);
	probe_bp(c);
	probe_uprobe(c);
}

static int errno_is_perm(int e)
{
	return e == EACCES || e == EPERM;
}

/* Why an event cannot be opened for reason e, in words, with the fix. */
static void perm_reason(const struct perfmon_caps *c, const char *what, int e, char *buf,
			size_t len)
{
	snprintf(buf, len, "perf_event_open of %s failed: %s; kernel.perf_event_paranoid is %d "
		 "and the agent has %s%s: run as root, give the agent CAP_PERFMON (Linux 5.8+; "
		 "CAP_SYS_ADMIN before) and CAP_SYS_PTRACE to attach to other users' processes, "
		 "or lower the setting (sysctl kernel.perf_event_paranoid=1)", what,
		 perfmon_errname(e), c->paranoid,
		 c->cap_perfmon ? "CAP_PERFMON" : c->cap_sys_admin ? "CAP_SYS_ADMIN" :
		 "neither CAP_PERFMON nor CAP_SYS_ADMIN",
		 c->paranoid >= 2 ? " (paranoid 2 allows only user-space events of your own "
		 "processes)" : "");
}

/* Why the event `what` could not be opened (errno e), with the fix when
 * it was a permission. */
static void open_reason(const struct perfmon_caps *c, const char *what, int e, char *buf,
			size_t len)
{
	if (errno_is_perm(e))
		perm_reason(c, what, e, buf, len);
	else
		snprintf(buf, len, "perf_event_open of %s failed: %s", what, perfmon_errname(e));
}

void perfmon_hw_reason(const struct perfmon_caps *c, char *buf, size_t len)
{
	if (c->hw_ok) {
		buf[0] = 0;
		return;
	}
	if (errno_is_perm(c->hw_errno)) {
		perm_reason(c, "PERF_COUNT_HW_CPU_CYCLES", c->hw_errno, buf, len);
		return;
	}
	snprintf(buf, len, "this machine has no hardware PMU (perf_event_open of "
		 "PERF_COUNT_HW_CPU_CYCLES failed: %s); use `ameba cc` and the sim backend",
		 perfmon_errname(c->hw_errno));
}

void perfmon_bp_reason(const struct perfmon_caps *c, char *buf, size_t len)
{
	if (c->bp_ok)
		buf[0] = 0;
	else if (c->nr_bp_slots)	/* it opened, but did not count */
		snprintf(buf, len, "a PERF_TYPE_BREAKPOINT event opens but counted %llu of 3 "
			 "writes to its word: this machine (or its hypervisor) does not deliver "
			 "debug-register hits; use `ameba cc` and the count or sim backend",
			 (unsigned long long)c->bp_probe_count);
	else
		open_reason(c, "a PERF_TYPE_BREAKPOINT event", c->bp_errno, buf, len);
}

const struct ameba_backend_info *perfmon_backend(const char *name)
{
	/* "perf-sw": the pagefault backend's first name */
	if (name && !strcmp(name, "perf-sw"))
		name = "pagefault";
	return ameba_backend_by_name(name);
}

int perfmon_is_backend(const char *b)
{
	const struct ameba_backend_info *row = perfmon_backend(b);

	return row && row->where == AMEBA_BACKEND_AGENT;
}

int perfmon_metric_needs_pmu(int m)
{
	switch (m) {
	case AMEBA_M_SAMPLES:
		return 0;
	default:
		return 1;
	}
}

/* The metric names of mask, wrapped under a row of the listing. */
static void row_metrics(FILE *f, uint64_t mask)
{
	const int indent = 26, width = 100;
	int col = fprintf(f, "%*smetrics:", indent, "");

	for (int m = 0; m < AMEBA_M_NR; m++) {
		const char *name = ameba_metric_info(m)->name;

		if (!(mask & AMEBA_M_BIT(m)))
			continue;
		if (col + 1 + (int)strlen(name) > width)
			col = fprintf(f, "\n%*s", indent + 8, "") - 1;
		col += fprintf(f, " %s", name);
	}
	fputc('\n', f);
}

static void row(FILE *f, const struct ameba_backend_info *b, int ok, const char *detail,
		const char *why)
{
	fprintf(f, "%-10s %-12s %s%s%s%s\n", b->name, ok ? "available" : "unavailable", b->desc,
		detail[0] ? " (" : "", detail, detail[0] ? ")" : "");
	if (why && *why)
		fprintf(f, "%-10s %-12s   %s\n", "", "", why);
	row_metrics(f, b->metrics);
}

/*
 * Whether the agent row b works here (the probes in c): 1 or 0, with what
 * the probe found that the description should say into detail, and why it
 * does not work into why ("" when it does).
 */
static int detect_agent(const struct perfmon_caps *c, const struct ameba_backend_info *b,
			char *detail, size_t dlen, char *why, size_t wlen)
{
	if (!strcmp(b->name, "perf")) {
		perfmon_hw_reason(c, why, wlen);
		snprintf(detail, dlen, "libpfm4%s%s%s", c->pfm_pmus[0] ? ": " :
			 ": no core PMU model found", c->pfm_pmus,
			 c->ibs_op_type >= 0 ? ", AMD IBS op" : "");
		return c->hw_ok;
	}
	if (!strcmp(b->name, "pagefault")) {
		if (!c->sw_ok)
			open_reason(c, "PERF_COUNT_SW_PAGE_FAULTS", c->sw_errno, why, wlen);
		return c->sw_ok;
	}
	if (!strcmp(b->name, "watch")) {
		perfmon_bp_reason(c, why, wlen);
		snprintf(detail, dlen, "here: on %u words at a time", c->nr_bp_slots);
		return c->bp_ok;
	}
	snprintf(why, wlen, "agent/perfmon/detect.c has no probe for this backend");
	return 0;
}

int perfmon_list_backends(FILE *f)
{
	const struct ameba_backend_info *b;
	struct perfmon_caps c;
	char why[768], detail[512];

	perfmon_probe(&c);
	fprintf(f, "%-10s %-12s %s\n", "backend", "status", "description");
	for (int i = 0; (b = ameba_backend_info(i)); i++) {
		int ok = 1;

		why[0] = detail[0] = 0;
		if (b->where == AMEBA_BACKEND_RUNTIME)
			snprintf(why, sizeof(why), "needs %s", b->needs);
		else
			ok = detect_agent(&c, b, detail, sizeof(detail), why, sizeof(why));
		row(f, b, ok, detail, why);
	}
	/* not a backend: what the agent-side backends find heap blocks with */
	why[0] = 0;
	if (!c.uprobe_ok) {
		if (c.uprobe_type < 0)
			snprintf(why, sizeof(why), "no uprobe PMU (/sys/bus/event_source/devices/"
				 "uprobe/type missing: kernel without CONFIG_UPROBE_EVENTS)");
		else if (errno_is_perm(c.uprobe_errno))
			perm_reason(&c, "a uprobe", c.uprobe_errno, why, sizeof(why));
		else
			snprintf(why, sizeof(why), "perf_event_open of a uprobe on malloc "
				 "failed: %s", perfmon_errname(c.uprobe_errno));
	}
	fprintf(f, "%-10s %-12s heap blocks of uninstrumented processes (malloc family) for the",
		"uprobes", c.uprobe_ok ? "available" : "unavailable");
	for (int i = 0, n = 0; (b = ameba_backend_info(i)); i++) {
		const struct ameba_backend_info *next;
		int j = i + 1;

		if (b->where != AMEBA_BACKEND_AGENT)
			continue;
		while ((next = ameba_backend_info(j)) && next->where != AMEBA_BACKEND_AGENT)
			j++;
		fprintf(f, "%s %s", !n++ ? "" : next ? "," : " and", b->name);
	}
	fprintf(f, " backends\n");
	if (why[0])
		fprintf(f, "%-10s %-12s   %s\n", "", "", why);
	fprintf(f, "\nperf_event_paranoid=%d, agent capabilities:%s%s%s%s\n", c.paranoid,
		c.cap_perfmon ? " CAP_PERFMON" : "", c.cap_sys_admin ? " CAP_SYS_ADMIN" : "",
		c.cap_sys_ptrace ? " CAP_SYS_PTRACE" : "",
		!c.cap_perfmon && !c.cap_sys_admin && !c.cap_sys_ptrace ? " none" : "");
	return 0;
}
