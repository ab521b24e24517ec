/*
 * uprobe.c - heap blocks of an outside process through uprobes on the
 * malloc family of the C library it maps (see uprobe.h).
 *
 * Notes:
 *  - The probes are perf events of the uprobe PMU (type from
 *    /sys/bus/event_source/devices/uprobe/type): config1 points at the
 *    library's path, config2 is the file offset of the function (from its
 *    ELF symbol and PT_LOAD), config bit 0 (format "retprobe") makes a
 *    return probe. Entry probes on malloc, calloc, realloc and free; return
 *    probes on malloc, calloc and realloc.
 *  - Each sample carries the registers of the System V ABI that matter
 *    (rdi, rsi: the arguments; rax: the return value) and the first 8
 *    bytes of the user stack: at a function's first instruction that is
 *    the return address, i.e. the allocation site, named func@file:line
 *    through DWARF (libdw) when the caller's file has it, else func+0xOFF.
 *  - One event per (thread, probe) with cpu -1, the 7 probes of a thread
 *    writing into one ring of that thread. Not inherited: the kernel
 *    would re-read the path (config1) in the target when a thread is
 *    created, which fails with EFAULT and
 *    makes the target's pthread_create fail. New threads get their probes
 *    when the monitor rescans the threads (every few milliseconds while it
 *    waits, pm_uprobes_sync), so a new thread's allocations in its first
 *    milliseconds can be missed. The samples of a drain are sorted
 *    by time (a thread may move between cpus from entry to return), then
 *    matched per thread: an entry is pushed on the thread's stack, the
 *    return of the same function pops it (realloc(NULL, n) calls malloc
 *    inside: the stack keeps the two apart).
 *  - Blocks allocated before attach are unknown: their accesses count in
 *    [heap] or their anonymous mapping; once freed and reallocated they
 *    become blocks like the others. A block's id is a sequence number
 *    (bit 62 set, never an address): a block freed and reallocated at the
 *    same place is a new object.
 *  - x86-64 only (register numbers and the ABI); elsewhere open() returns
 *    NULL and the monitor runs without heap blocks.
 */
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pm_elf.h"
#include "ring.h"
#include "uprobe.h"

long pm_perf_open(struct perf_event_attr *a, pid_t pid, int cpu, int group, unsigned long flags);

enum up_kind { UP_MALLOC, UP_CALLOC, UP_REALLOC, UP_FREE, UP_MALLOC_RET, UP_CALLOC_RET,
	       UP_REALLOC_RET, UP_NR };

static const char *const up_func[UP_NR] = { "malloc", "calloc", "realloc", "free", "malloc",
					     "calloc", "realloc" };

#define UP_REGS_MASK ((1ull << 0) | (1ull << 4) | (1ull << 5))	/* ax, si, di */
#define UP_TYPES (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | \
		  PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER)
#define UP_RING_PAGES 16
#define UP_MAX_RINGS 1024		/* threads with probes */
#define UP_DEPTH 4

struct up_ring {
	int fd;
	void *base;
	size_t bytes;
};

struct up_id {
	uint64_t id;
	int kind;
};

struct up_pending {
	int32_t tid;
	uint32_t depth;
	struct {
		int kind;
		uint64_t size, old, site;
	} st[UP_DEPTH];
};

struct up_site {
	uint64_t addr;
	char *label;
};

struct pm_uprobes {
	int32_t pid;
	int type;
	int32_t *tids;			/* threads with probes */
	uint32_t nr_tids;
	char libc[4096];
	uint64_t off[UP_NR];
	struct up_ring rings[UP_MAX_RINGS];	/* one per probed thread */
	uint32_t nr_rings;
	int *fds;
	uint32_t nr_fds, cap_fds;
	struct up_id *ids;
	uint32_t nr_ids;
	struct up_pending *pend;
	uint32_t nr_pend;
	struct pm_sample *batch;
	uint32_t nr_batch, cap_batch;
	struct pm_ring_stats stats;
	/* live blocks, unsorted */
	struct pm_extra_obj *blocks;
	uint32_t nr_blocks, cap_blocks;
	uint64_t next_seq;
	struct up_site *sites;
	uint32_t nr_sites;
};

static int up_push_fd(struct pm_uprobes *u, int fd, int kind)
{
	uint64_t id = 0;

	if (u->nr_fds == u->cap_fds) {
		uint32_t c = u->cap_fds ? 2 * u->cap_fds : 64;
		int *v = realloc(u->fds, c * sizeof(*v));
		struct up_id *w = realloc(u->ids, c * sizeof(*w));

		if (v)
			u->fds = v;
		if (w)
			u->ids = w;
		if (!v || !w)
			return -ENOMEM;
		u->cap_fds = c;
	}
	ioctl(fd, PERF_EVENT_IOC_ID, &id);
	u->fds[u->nr_fds++] = fd;
	u->ids[u->nr_ids++] = (struct up_id){ id, kind };
	return 0;
}

/* The 7 probes of one thread, cpu -1, writing into one ring of the thread. */
static int up_open_thread(struct pm_uprobes *u, int32_t tid, int type)
{
	int ring_fd = -1;

	if (u->nr_rings == UP_MAX_RINGS)
		return -ENOSPC;
	for (int k = 0; k < UP_NR; k++) {
		struct perf_event_attr a = { 0 };
		long fd;

		a.size = sizeof(a);
		a.type = (uint32_t)type;
		a.config = k >= UP_MALLOC_RET ? 1 : 0;	/* retprobe */
		a.config1 = (uintptr_t)u->libc;
		a.config2 = u->off[k];
		a.sample_period = 1;
		a.sample_type = UP_TYPES;
		a.sample_regs_user = UP_REGS_MASK;
		a.sample_stack_user = 8;
		/* never inherit: config1 points into the agent, and a clone()
		 * that inherits the event fails with EFAULT in the target */
		a.inherit = 0;
		fd = pm_perf_open(&a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
		if (fd < 0)
			continue;
		if (ring_fd < 0) {
			size_t bytes = (size_t)(UP_RING_PAGES + 1) * (size_t)sysconf(_SC_PAGESIZE);
			void *b = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, (int)fd, 0);

			if (b == MAP_FAILED) {
				close((int)fd);
				continue;
			}
			u->rings[u->nr_rings++] = (struct up_ring){ (int)fd, b, bytes };
			ring_fd = (int)fd;
		} else if (ioctl((int)fd, PERF_EVENT_IOC_SET_OUTPUT, ring_fd)) {
			close((int)fd);
			continue;
		}
		if (up_push_fd(u, (int)fd, k)) {
			close((int)fd);
			return -ENOMEM;
		}
	}
	return ring_fd >= 0 ? 0 : -ESRCH;
}

struct pm_uprobes *pm_uprobes_open(int32_t pid, int nr_cpus, const struct ameba_thread *threads,
				   uint32_t nr_threads)
{
#if defined(__x86_64__)
	struct pm_uprobes *u;
	struct pm_elf e;
	FILE *f;
	int type = -1, ok = 0;

	f = fopen("/sys/bus/event_source/devices/uprobe/type", "re");
	if (!f)
		return NULL;
	if (fscanf(f, "%d", &type) != 1)
		type = -1;
	fclose(f);
	if (type < 0)
		return NULL;
	u = calloc(1, sizeof(*u));
	if (!u)
		return NULL;
	u->pid = pid;
	if (pm_find_libc(pid, u->libc, sizeof(u->libc)) || pm_elf_read(u->libc, &e))
		goto fail;
	for (int k = 0; k < UP_NR; k++) {
		const struct pm_sym *s = pm_elf_func(&e, up_func[k]);

		u->off[k] = s ? pm_elf_file_offset(&e, s->value) : UINT64_MAX;
		if (u->off[k] == UINT64_MAX) {
			pm_elf_free(&e);
			goto fail;
		}
	}
	pm_elf_free(&e);
	u->type = type;
	pm_uprobes_sync(u, threads, nr_threads);
	ok = u->nr_tids > 0;
	if (!ok)
		goto fail;
	return u;
fail:
	pm_uprobes_close(u);
	return NULL;
#else
	return NULL;
#endif
}

void pm_uprobes_sync(struct pm_uprobes *u, const struct ameba_thread *threads, uint32_t nr)
{
	if (!u)
		return;
	for (uint32_t i = 0; i < nr; i++) {
		int32_t *v;
		uint32_t k;

		if (threads[i].exited)
			continue;
		for (k = 0; k < u->nr_tids && u->tids[k] != threads[i].tid; k++)
			;
		if (k < u->nr_tids)
			continue;
		v = realloc(u->tids, (u->nr_tids + 1) * sizeof(*v));
		if (!v)
			return;
		u->tids = v;
		/* a thread that is gone by now is remembered anyway: not retried */
		up_open_thread(u, threads[i].tid, u->type);
		u->tids[u->nr_tids++] = threads[i].tid;
	}
}

static void up_collect(void *arg, const struct pm_sample *s)
{
	struct pm_uprobes *u = arg;

	if (u->nr_batch == u->cap_batch) {
		uint32_t c = u->cap_batch ? 2 * u->cap_batch : 1024;
		struct pm_sample *v = realloc(u->batch, c * sizeof(*v));

		if (!v)
			return;
		u->batch = v;
		u->cap_batch = c;
	}
	u->batch[u->nr_batch++] = *s;
}

static int time_cmp(const void *a, const void *b)
{
	const struct pm_sample *x = a, *y = b;

	return (x->time_ns > y->time_ns) - (x->time_ns < y->time_ns);
}

static struct up_pending *pending_of(struct pm_uprobes *u, int32_t tid)
{
	struct up_pending *v;

	for (uint32_t i = 0; i < u->nr_pend; i++)
		if (u->pend[i].tid == tid)
			return &u->pend[i];
	v = realloc(u->pend, (u->nr_pend + 1) * sizeof(*v));
	if (!v)
		return NULL;
	u->pend = v;
	v = &u->pend[u->nr_pend++];
	memset(v, 0, sizeof(*v));
	v->tid = tid;
	return v;
}

/* func@file:line of the code address addr in the target, or func+0xOFF. */
static const char *site_label(struct pm_uprobes *u, uint64_t addr)
{
	char path[64], line[1024], label[512] = "", file[512] = "";
	unsigned long long s, e, off = 0;
	uint64_t link = 0;
	struct up_site *v;
	struct pm_elf elf;
	FILE *f;

	for (uint32_t i = 0; i < u->nr_sites; i++)
		if (u->sites[i].addr == addr)
			return u->sites[i].label;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)u->pid);
	f = fopen(path, "re");
	if (f) {
		unsigned long long first = 0;
		char cur[512] = "";

		while (fgets(line, sizeof(line), f)) {
			char *p = strchr(line, '/');

			if (sscanf(line, "%llx-%llx %*s %llx", &s, &e, &off) != 3 || !p)
				continue;
			p[strcspn(p, "\n")] = 0;
			if (strcmp(cur, p)) {
				snprintf(cur, sizeof(cur), "%s", p);
				first = s - off;	/* start of the file's mapping */
			}
			if (addr >= s && addr < e) {
				snprintf(file, sizeof(file), "%s", p);
				off = first;
				break;
			}
		}
		fclose(f);
	}
	if (file[0] && !pm_elf_read(file, &elf)) {
		const struct pm_sym *best = NULL;
		uint64_t bias = elf.type == 2 /* ET_EXEC */ ? 0 : off -
				(elf.nr_segs ? elf.segs[0].vaddr & ~0xfffull : 0);
		int fd;

		link = addr - bias;
		for (uint32_t i = 0; i < elf.nr_syms; i++) {
			const struct pm_sym *sy = &elf.syms[i];

			uint64_t end = sy->value + (sy->sz_bytes ? sy->sz_bytes : 1);

			if (sy->func && link >= sy->value && link < end)
				best = sy;
		}
		fd = open(file, O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			Dwarf *dbg = dwarf_begin(fd, DWARF_C_READ);
			Dwarf_Die cu;

			/* the call's line: the return address minus one is inside the call */
			if (dbg && dwarf_addrdie(dbg, link - 1, &cu)) {
				Dwarf_Line *ln = dwarf_getsrc_die(&cu, link - 1);
				int lineno = 0;
				const char *src = ln ? dwarf_linesrc(ln, NULL, NULL) : NULL;

				if (ln && !dwarf_lineno(ln, &lineno) && src) {
					const char *b = strrchr(src, '/');

					snprintf(label, sizeof(label), "%s@%s:%d",
						 best ? best->name : "?", b ? b + 1 : src, lineno);
				}
			}
			if (dbg)
				dwarf_end(dbg);
			close(fd);
		}
		if (!label[0] && best)
			snprintf(label, sizeof(label), "%s+0x%" PRIx64, best->name,
				 link - best->value);
		pm_elf_free(&elf);
	}
	if (!label[0])
		snprintf(label, sizeof(label), "0x%" PRIx64, addr);
	v = realloc(u->sites, (u->nr_sites + 1) * sizeof(*v));
	if (!v)
		return "?";
	u->sites = v;
	v[u->nr_sites].addr = addr;
	v[u->nr_sites].label = strdup(label);
	return v[u->nr_sites].label ? v[u->nr_sites++].label : "?";
}

static void block_remove(struct pm_uprobes *u, uint64_t ptr)
{
	for (uint32_t i = 0; i < u->nr_blocks; i++) {
		if (u->blocks[i].start == ptr) {
			u->blocks[i] = u->blocks[--u->nr_blocks];
			return;
		}
	}
}

static void block_add(struct pm_uprobes *u, uint64_t ptr, uint64_t size, uint64_t site)
{
	struct pm_extra_obj *b;
	const char *label;

	if (!ptr || !size)
		return;
	block_remove(u, ptr);
	if (u->nr_blocks == u->cap_blocks) {
		uint32_t c = u->cap_blocks ? 2 * u->cap_blocks : 256;
		struct pm_extra_obj *v = realloc(u->blocks, c * sizeof(*v));

		if (!v)
			return;
		u->blocks = v;
		u->cap_blocks = c;
	}
	label = site_label(u, site);
	b = &u->blocks[u->nr_blocks++];
	b->start = (uintptr_t)ptr;
	b->end = (uintptr_t)(ptr + size);
	b->name = label;
	b->site = label;
	b->id = (1ull << 62) | ++u->next_seq;
}

static int kind_of(const struct pm_uprobes *u, uint64_t id)
{
	for (uint32_t i = 0; i < u->nr_ids; i++)
		if (u->ids[i].id == id)
			return u->ids[i].kind;
	return -1;
}

void pm_uprobes_drain(struct pm_uprobes *u)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	if (!u)
		return;
	u->nr_batch = 0;
	for (uint32_t i = 0; i < u->nr_rings; i++) {
		struct up_ring *r = &u->rings[i];
		struct perf_event_mmap_page *mp = r->base;
		uint64_t head, tail;

		if (!mp)
			continue;
		head = __atomic_load_n(&mp->data_head, __ATOMIC_ACQUIRE);
		tail = pm_ring_parse((const uint8_t *)r->base + page, r->bytes - page,
				     mp->data_tail, head, UP_TYPES, UP_REGS_MASK, up_collect, u,
				     &u->stats);
		__atomic_store_n(&mp->data_tail, tail, __ATOMIC_RELEASE);
	}
	qsort(u->batch, u->nr_batch, sizeof(*u->batch), time_cmp);
	for (uint32_t i = 0; i < u->nr_batch; i++) {
		const struct pm_sample *s = &u->batch[i];
		int kind = kind_of(u, s->id);
		struct up_pending *pd;
		uint64_t ax = s->regs[0], si = s->regs[1], di = s->regs[2];

		if (kind < 0 || s->nr_regs < 3)
			continue;
		if (kind == UP_FREE) {
			block_remove(u, di);
			continue;
		}
		pd = pending_of(u, (int32_t)s->tid);
		if (!pd)
			continue;
		if (kind < UP_MALLOC_RET) {
			if (pd->depth == UP_DEPTH) {
				memmove(pd->st, pd->st + 1, (UP_DEPTH - 1) * sizeof(pd->st[0]));
				pd->depth--;
			}
			pd->st[pd->depth].kind = kind;
			pd->st[pd->depth].site = s->stack0;
			pd->st[pd->depth].old = kind == UP_REALLOC ? di : 0;
			pd->st[pd->depth].size = kind == UP_MALLOC ? di :
						 kind == UP_CALLOC ? di * si : si;
			pd->depth++;
			continue;
		}
		/* a return: pops the entry of the same function */
		while (pd->depth && pd->st[pd->depth - 1].kind != kind - UP_MALLOC_RET)
			pd->depth--;
		if (!pd->depth)
			continue;
		pd->depth--;
		if (pd->st[pd->depth].old && ax)
			block_remove(u, pd->st[pd->depth].old);
		block_add(u, ax, pd->st[pd->depth].size, pd->st[pd->depth].site);
	}
}

void pm_uprobes_objects(struct pm_uprobes *u, const struct pm_extra_obj **out, uint32_t *nr)
{
	pm_uprobes_drain(u);
	*out = u->blocks;
	*nr = u->nr_blocks;
}

/*
 * Closing a uprobe event unregisters the probe, and the kernel does that
 * one event at a time, each waiting for an RCU grace period (~80 ms
 * measured here): 7 probes x 8 threads would hold the agent for seconds
 * at detach. The events are disabled at once (no more samples), then a
 * detached grandchild, holding copies of the fds, closes them in the
 * background while the agent's own close only drops references. Should
 * the fork fail, the agent closes them itself.
 */
static void close_all(const int *fds, uint32_t nr)
{
	int go[2] = { -1, -1 };
	pid_t pid = -1;

	for (uint32_t i = 0; i < nr; i++)
		ioctl(fds[i], PERF_EVENT_IOC_DISABLE, 0);
	if (nr > UP_NR && !pipe2(go, O_CLOEXEC))
		pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);
		char c;

		/* keep nobody's pipes open (a shell waiting on our output) */
		for (int fd = 0; fd < 3; fd++)
			if (null >= 0)
				dup2(null, fd);
		close(go[1]);
		if (fork() == 0) {
			/* wait until the agent dropped its copies: the last close pays */
			while (read(go[0], &c, 1) < 0 && errno == EINTR)
				;
			for (uint32_t i = 0; i < nr; i++)
				close(fds[i]);
		}
		_exit(0);
	}
	if (pid > 0) {
		int st;

		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
	}
	for (uint32_t i = 0; i < nr; i++)
		close(fds[i]);
	if (go[0] >= 0) {
		close(go[0]);
		close(go[1]);	/* the grandchild starts closing now */
	}
}

void pm_uprobes_close(struct pm_uprobes *u)
{
	if (!u)
		return;
	for (uint32_t i = 0; i < u->nr_rings; i++)
		munmap(u->rings[i].base, u->rings[i].bytes);
	close_all(u->fds, u->nr_fds);
	for (uint32_t i = 0; i < u->nr_sites; i++)
		free(u->sites[i].label);
	free(u->sites);
	free(u->tids);
	free(u->fds);
	free(u->ids);
	free(u->pend);
	free(u->batch);
	free(u->blocks);
	free(u);
}
