/*
 * rt.c - runtime start-up, the thread registry and the access slow path.
 *
 * Notes:
 *  - Initialisation runs from __tsan_init (every instrumented translation
 *    unit's constructor calls it) and from a constructor of our own, whichever
 *    comes first. Allocations made before it are not tracked (they belong to
 *    the C library and the loader, not to the program).
 *  - The runtime is dormant (mon_active == 0) unless an analysis is attached:
 *    AMEBA_ORACLE in the environment attaches the exhaustive counting backend
 *    from the start.
 *  - Thread ids are dense and handed out in pthread_create() order by the
 *    creating thread, so a program that creates its threads in a fixed order
 *    gets the same ids on every run. A thread that was not created through
 *    pthread_create (e.g. raw clone) gets the next id when it first touches
 *    instrumented memory.
 *  - Thread records are never freed: their counts outlive the thread. What a
 *    thread owns besides (counter tables) is bounded by what it touched.
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "mon.h"
#include "seq.h"

static const struct mon_backend_ops *seq_choose(const struct mon_backend_ops *b);

/* dormant until an analysis attaches (mon_set_active) */
struct mon_hot mon_hot = { .dormant = 1 };

/*
 * The plain hooks test mon_hot.gate alone, whose dormant byte is active's
 * opposite; the others, and the dual path, test active. Off: dormant
 * first, so that no hook delivers once active is 0; on: active first.
 */
void mon_set_active(int on)
{
	if (on) {
		__atomic_store_n(&mon_active, 1, __ATOMIC_RELEASE);
		__atomic_store_n(&mon_hot.dormant, 0, __ATOMIC_RELEASE);
	} else {
		__atomic_store_n(&mon_hot.dormant, 1, __ATOMIC_SEQ_CST);
		__atomic_store_n(&mon_active, 0, __ATOMIC_SEQ_CST);
	}
}

/*
 * The dual path's switch (docs/dual-path.md): code that `ameba cc` built
 * with two bodies per function runs the instrumented one while this word is
 * non-zero. It is mon_hot.active itself, under a name the compiler can
 * reach: the two bodies then switch exactly when the hooks start and stop
 * delivering, with nothing to keep in step, and the dispatch reads the
 * line the hooks read.
 */
__asm__(".globl __ameba_path\n\t"
	".type __ameba_path, @object\n\t"
	".size __ameba_path, 4\n\t"
	".set __ameba_path, mon_hot");
_Static_assert(__builtin_offsetof(struct mon_hot, active) == 0,
	       "__ameba_path is mon_hot.active: it must come first");

__thread struct mon_thread *mon_self __attribute__((tls_model("initial-exec")));

/* Thread records by dense id: a two-level table so that it never moves. */
#define THREAD_CHUNK_SHIFT 10
#define THREAD_CHUNK (1u << THREAD_CHUNK_SHIFT)
#define THREAD_NR_CHUNKS 4096	/* 4M threads */

static struct mon_thread **thread_chunks[THREAD_NR_CHUNKS];
static uint32_t thread_nr_ids;		/* ids handed out (atomic) */
static uint32_t thread_nr_published;	/* upper bound of ids with a record (atomic) */
static pthread_mutex_t thread_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_key_t thread_exit_key;

static int rt_state;		/* 0 = not started, 1 = starting, 2 = ready (atomic) */
static char *oracle_path;
static pid_t rt_pid;		/* the process that read the configuration */

uint32_t mon_thread_nr(void)
{
	return __atomic_load_n(&thread_nr_published, __ATOMIC_ACQUIRE);
}

struct mon_thread *mon_thread_get(uint32_t id)
{
	struct mon_thread **chunk;

	if (id >= (uint32_t)THREAD_NR_CHUNKS * THREAD_CHUNK)
		return NULL;
	chunk = __atomic_load_n(&thread_chunks[id >> THREAD_CHUNK_SHIFT], __ATOMIC_ACQUIRE);
	if (!chunk)
		return NULL;
	return __atomic_load_n(&chunk[id & (THREAD_CHUNK - 1)], __ATOMIC_ACQUIRE);
}

/* Reserves the next dense id (called by the creating thread). */
static uint32_t thread_reserve_id(void)
{
	return __atomic_fetch_add(&thread_nr_ids, 1, __ATOMIC_RELAXED);
}

static int thread_publish(struct mon_thread *t)
{
	uint32_t c = t->id >> THREAD_CHUNK_SHIFT;
	struct mon_thread **chunk;
	uint32_t nr;

	if (c >= THREAD_NR_CHUNKS)
		return AMEBA_ERANGE;
	pthread_mutex_lock(&thread_lock);
	chunk = thread_chunks[c];
	if (!chunk) {
		chunk = mon_calloc(THREAD_CHUNK, sizeof(*chunk));
		if (!chunk) {
			pthread_mutex_unlock(&thread_lock);
			return AMEBA_ENOMEM;
		}
		__atomic_store_n(&thread_chunks[c], chunk, __ATOMIC_RELEASE);
	}
	__atomic_store_n(&chunk[t->id & (THREAD_CHUNK - 1)], t, __ATOMIC_RELEASE);
	nr = __atomic_load_n(&thread_nr_published, __ATOMIC_RELAXED);
	if (t->id + 1 > nr)
		__atomic_store_n(&thread_nr_published, t->id + 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&thread_lock);
	return 0;
}

struct tls_probe {
	uintptr_t lo, hi;
};

static int find_exe_tls(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct tls_probe *p = arg;

	/* The first module reported is the executable. */
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_TLS && info->dlpi_tls_data) {
			p->lo = (uintptr_t)info->dlpi_tls_data;
			p->hi = p->lo + ph->p_memsz;
		}
	}
	return 1;
}

static void thread_find_ranges(struct mon_thread *t)
{
	pthread_attr_t attr;
	struct tls_probe tls = { 0, 0 };
	void *stack;
	size_t sz;

	if (pthread_getattr_np(pthread_self(), &attr) == 0) {
		if (pthread_attr_getstack(&attr, &stack, &sz) == 0) {
			t->stack_lo = (uintptr_t)stack;
			t->stack_hi = (uintptr_t)stack + sz;
		}
		pthread_attr_destroy(&attr);
	}
	dl_iterate_phdr(find_exe_tls, &tls);
	t->tls_lo = tls.lo;
	t->tls_hi = tls.hi;
	/* The static TLS block of a non-main thread sits inside its stack
	 * mapping; keep the two objects disjoint. */
	if (t->tls_lo >= t->stack_lo && t->tls_hi <= t->stack_hi && t->tls_lo < t->tls_hi &&
	    t->stack_hi - t->tls_hi < 1u << 20)
		t->stack_hi = t->tls_lo;
}

/* Creates and publishes the record of the calling thread with the given id. */
static struct mon_thread *thread_register(uint32_t id)
{
	struct mon_thread *t = mon_calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->id = id;
	t->tid = (pid_t)syscall(SYS_gettid);
	t->in_rt = 1;		/* what follows may allocate: do not track it */
	mon_self = t;
	thread_find_ranges(t);
	if (thread_publish(t)) {
		mon_self = NULL;
		mon_free(t);
		return NULL;
	}
	if (__atomic_load_n(&rt_state, __ATOMIC_ACQUIRE) == 2)
		pthread_setspecific(thread_exit_key, t);
	mon_objmap_thread_add(t);
	t->in_rt = 0;
	return t;
}

struct mon_thread *mon_thread_self(void)
{
	if (mon_likely(mon_self != NULL))
		return mon_self;
	if (__atomic_load_n(&rt_state, __ATOMIC_ACQUIRE) != 2)
		return NULL;
	return thread_register(thread_reserve_id());
}

/* pthread key destructor: the thread is ending. */
static void thread_exit_cb(void *arg)
{
	struct mon_thread *t = arg;

	if (!t || __atomic_load_n(&t->exited, __ATOMIC_ACQUIRE))
		return;
	mon_batch_thread_exit(t);
	t->in_rt++;
	mon_fold_thread_exit(t);	/* before ordered mode stops logging it */
	if (t->started && t->started->thread_exit)
		t->started->thread_exit(t);
	mon_objmap_thread_del(t);
	__atomic_store_n(&t->exited, 1, __ATOMIC_RELEASE);
	t->in_rt--;
}

/* ---- pthread_create support (called by intercept.c) ---- */

struct thread_start {
	void *(*fn)(void *);
	void *arg;
	uint32_t id;
	int seq_created;	/* ordered mode logged the creation (seq.c) */
};

static void *thread_trampoline(void *p)
{
	struct thread_start st = *(struct thread_start *)p;
	struct mon_thread *t;

	mon_free(p);
	t = thread_register(st.id);
	/* before its first access makes its log: that log waits for the
	 * creation entry and starts at the creator's simulated time */
	if (t)
		__atomic_store_n(&t->seq_created, st.seq_created, __ATOMIC_RELEASE);
	return st.fn(st.arg);
}

/*
 * Wraps a start routine so that the new thread registers itself with the id
 * reserved here, in creation order. Returns 0 and fills *fn / *arg, or an
 * error (then the caller starts the thread unwrapped).
 */
int mon_thread_wrap_start(void *(**fn)(void *), void **arg)
{
	struct thread_start *st;

	if (__atomic_load_n(&rt_state, __ATOMIC_ACQUIRE) != 2)
		return AMEBA_EINVAL;
	mon_batch_off(mon_self);	/* a second thread: the core stops being solo */
	st = mon_malloc(sizeof(*st));
	if (!st)
		return AMEBA_ENOMEM;
	st->fn = *fn;
	st->arg = *arg;
	st->id = thread_reserve_id();
	*fn = thread_trampoline;
	*arg = st;
	/* a second thread: the sim backend goes to ordered mode; the new thread
	 * starts at its creator's simulated time */
	{
		const struct mon_backend_ops *b = __atomic_load_n(&mon_backend, __ATOMIC_ACQUIRE);

		if (b == &mon_backend_sim || b == &mon_backend_sim_c || b == &mon_backend_sim_whatif) {
			pthread_mutex_lock(&thread_lock);
			b = seq_choose(b);
			__atomic_store_n(&mon_backend, b, __ATOMIC_RELEASE);
			pthread_mutex_unlock(&thread_lock);
		}
		st->seq_created = mon_seq_thread_created(st->id);
	}
	return 0;
}

/* pthread_create failed after a successful wrap: release the start block. The
 * reserved id stays unused (ids remain unique). */
void mon_thread_unwrap_start(void *arg)
{
	mon_free(arg);
}

/* ---- fork ---- */

static void rt_fork_prepare(void)
{
	mon_batch_off(mon_self);	/* the child must not simulate them again */
	pthread_mutex_lock(&thread_lock);
}

static void rt_fork_parent(void)
{
	pthread_mutex_unlock(&thread_lock);
}

static void rt_fork_child(void)
{
	uint32_t nr = mon_thread_nr();

	pthread_mutex_init(&thread_lock, NULL);
	mon_cond_after_fork();
	mon_batch_after_fork();
	mon_sample_after_fork();
	/* Only the forking thread lives on in the child. */
	for (uint32_t id = 0; id < nr; id++) {
		struct mon_thread *t = mon_thread_get(id);

		if (!t)
			continue;
		mon_counts_after_fork(t);
		if (t != mon_self)
			__atomic_store_n(&t->exited, 1, __ATOMIC_RELEASE);
	}
	if (mon_self)
		mon_self->tid = (pid_t)syscall(SYS_gettid);
	mon_backend_sim_after_fork();
	mon_sampled_after_fork();
	/* the merger did not survive: the child's thread simulates itself */
	if (mon_backend == &mon_backend_sim_seq) {
		mon_seq_after_fork();
		mon_backend = &mon_backend_sim;
	}
	mri_server_after_fork();
}

/* ---- start-up and exit ---- */

/* The oracle path with every %p replaced by the pid; NULL when a forked child
 * should not write (no %p: the parent owns the file). */
static char *oracle_expand(const char *tmpl)
{
	char buf[4096];
	size_t o = 0;
	int has_pid = 0;

	for (const char *p = tmpl; *p && o + 24 < sizeof(buf); p++) {
		if (p[0] == '%' && p[1] == 'p') {
			o += (size_t)snprintf(buf + o, sizeof(buf) - o, "%d", (int)getpid());
			p++;
			has_pid = 1;
		} else {
			buf[o++] = *p;
		}
	}
	buf[o] = '\0';
	if (!has_pid && getpid() != rt_pid)
		return NULL;
	return mon_strdup(buf);
}

/* The exit dump began: counts are final, marks are refused (atomic). */
static int oracle_final;
/* AMEBA_ORACLE_MARKS=bins: marks list the bins only (docs/oracle.md) */
static int oracle_marks_bins;

/* The path of mark `label` into path[len]: 0, or why not (why[wlen]). */
static int mark_path(const char *label, char *path, size_t len, char *why, size_t wlen)
{
	char *base;

	path[0] = '\0';
	if (!oracle_path) {
		snprintf(why, wlen, "the target runs without AMEBA_ORACLE: there are no oracle counts "
			 "to mark (run it with AMEBA_ORACLE=FILE)");
		return AMEBA_ENOENT;
	}
	if (__atomic_load_n(&oracle_final, __ATOMIC_ACQUIRE)) {
		snprintf(why, wlen, "the target is exiting: its oracle file is being written");
		return AMEBA_ENOENT;
	}
	base = oracle_expand(oracle_path);
	if (!base) {
		snprintf(why, wlen, "a forked child writes no oracle (AMEBA_ORACLE has no %%p)");
		return AMEBA_ENOENT;
	}
	if ((size_t)snprintf(path, len, "%s.mark-%s", base, label) >= len) {
		mon_free(base);
		snprintf(why, wlen, "the mark's path is longer than %zu bytes", len - 1);
		path[0] = '\0';
		return AMEBA_ERANGE;
	}
	mon_free(base);
	return 0;
}

int mon_oracle_mark(const char *label, char *path, size_t len, char *why, size_t wlen)
{
	int err = mark_path(label, path, len, why, wlen);

	if (err)
		return err;
	err = mon_oracle_write(path, label, !oracle_marks_bins);
	if (err)
		snprintf(why, wlen, "cannot write %s: %s", path, ameba_strerror(err));
	return err;
}

int mon_oracle_mark_armed(const char *label, const struct mon_cond_spec *specs, uint32_t nr,
			  uint64_t *gen, char *path, size_t len, char *why, size_t wlen,
			  int *mark_err)
{
	int err;

	*mark_err = mark_path(label, path, len, why, wlen);
	if (*mark_err)
		return mon_cond_arm(specs, nr, gen);
	err = mon_oracle_write_armed(path, label, !oracle_marks_bins, specs, nr, gen, mark_err);
	if (!err && *mark_err)
		snprintf(why, wlen, "cannot write %s: %s", path, ameba_strerror(*mark_err));
	return err;
}

static void rt_exit(void)
{
	struct mon_thread *t = mon_self;
	char *path;

	mon_batch_off(t);
	if (!oracle_path)
		return;
	__atomic_store_n(&oracle_final, 1, __ATOMIC_RELEASE);
	if (t)
		t->in_rt++;
	/* Stop delivering: counts are final from here on. */
	mon_set_active(0);
	path = oracle_expand(oracle_path);
	if (path) {
		int err = mon_oracle_write(path, NULL, 1);

		if (err)
			mon_log("cannot write the oracle file %s: %s", path, ameba_strerror(err));
		mon_free(path);
	}
	if (t)
		t->in_rt--;
}

/*
 * The ops of the runtime rows of the backend table (mri/common.c), keyed by
 * the row's name: a name resolves through the table first, so the table is
 * the one list of backends and this is only where their code is.
 */
static const struct mon_backend_ops *const rt_backend_ops[] = {
	&mon_backend_count,
	&mon_backend_sim,
};

const struct mon_backend_ops *mon_backend_by_name(const char *name)
{
	const struct ameba_backend_info *row = ameba_backend_by_name(name);

	if (!row || row->where != AMEBA_BACKEND_RUNTIME)
		return NULL;
	for (size_t i = 0; i < sizeof(rt_backend_ops) / sizeof(rt_backend_ops[0]); i++)
		if (!strcmp(rt_backend_ops[i]->name, row->name)) {
			const char *as = getenv("AMEBA_SIM_ASM");

			/* the sim backend's C line entry instead of its
			 * assembly one: the same counts (the tests compare) */
			if (rt_backend_ops[i] == &mon_backend_sim && as && !strcmp(as, "0"))
				return &mon_backend_sim_c;
			/* a what-if run (agent/whatif.c): the general path only */
			if (rt_backend_ops[i] == &mon_backend_sim && mon_backend_sim_whatif_wanted())
				return &mon_backend_sim_whatif;
			return rt_backend_ops[i];
		}
	return NULL;	/* a runtime row this runtime has no code for */
}

size_t mon_backend_names(char *buf, size_t len)
{
	const struct ameba_backend_info *row;
	size_t n = 0;

	if (len)
		buf[0] = 0;
	for (int i = 0; (row = ameba_backend_info(i)); i++) {
		if (row->where != AMEBA_BACKEND_RUNTIME || !mon_backend_by_name(row->name))
			continue;
		if (n < len)
			n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? ", " : "", row->name);
	}
	return n < len ? n : (len ? len - 1 : 0);
}

/* The metrics b's ops provide are its table row's (mri/common.c): what the
 * agent lists and what the runtime counts must not drift apart. */
static int backend_check_row(const struct mon_backend_ops *b)
{
	const struct ameba_backend_info *row = ameba_backend_by_name(b->name);
	uint64_t mask = 0;

	for (int i = 0; i < b->nr_metrics; i++)
		mask |= AMEBA_M_BIT(b->metrics[i]);
	if (row && row->where == AMEBA_BACKEND_RUNTIME && row->metrics == mask)
		return 0;
	mon_log("the %s backend provides metrics 0x%llx, its row of the backend table "
		"(mri/common.c) says 0x%llx: make them agree", b->name, (unsigned long long)mask,
		row ? (unsigned long long)row->metrics : 0ull);
	return AMEBA_EINVAL;
}

/*
 * The sim backend interleaves threads in simulated time (seq.c) once a
 * second thread exists: with b the sim backend about to be (or being) the
 * active one, starts the merger and returns the ordered-mode ops to make
 * active instead; else b. Called with thread_lock held or from the thread
 * creating the second thread.
 */
static const struct mon_backend_ops *seq_choose(const struct mon_backend_ops *b)
{
	if ((b != &mon_backend_sim && b != &mon_backend_sim_c && b != &mon_backend_sim_whatif) ||
	    !mon_seq_wanted())
		return b;
	if (mon_seq_engage(b)) {
		mon_log("ordered simulation unavailable: threads simulate in host order");
		return b;
	}
	/* before the backend changes: the hooks' line filter stops (its hits
	 * test the gate, not the backend; kept after a fork, which goes back
	 * to host order: the filter's gain is not worth a second path) */
	__atomic_store_n(&mon_hot.ordered, 1, __ATOMIC_SEQ_CST);
	return &mon_backend_sim_seq;
}

/* Makes `b` the active backend and starts delivery. */
static int rt_activate(const struct mon_backend_ops *b)
{
	int err = backend_check_row(b);

	if (!err)
		err = mon_counts_configure(b->metrics, b->nr_metrics);
	if (err)
		return err;
	if (b->activate && (err = b->activate()))
		return err;
	if (mon_thread_nr() > 1)
		b = seq_choose(b);
	mon_backend = b;
	mon_set_active(1);
	return 0;
}

int mon_activate(const char *name)
{
	const struct mon_backend_ops *b = mon_backend_by_name(name);
	int err;

	if (!b)
		return AMEBA_ENOENT;
	pthread_mutex_lock(&thread_lock);
	if (mon_backend == &mon_backend_sim_seq &&
	    (b == &mon_backend_sim || b == &mon_backend_sim_c || b == &mon_backend_sim_whatif))
		b = &mon_backend_sim_seq;	/* the same backend, in ordered mode */
	if (mon_backend && mon_backend != b) {
		pthread_mutex_unlock(&thread_lock);
		return AMEBA_EBUSY;
	}
	if (mon_backend == b) {
		mon_set_active(1);
		pthread_mutex_unlock(&thread_lock);
		return 0;
	}
	err = rt_activate(b);
	pthread_mutex_unlock(&thread_lock);
	/* Threads already running meet the backend on their next access
	 * (mon_access calls its thread_start). */
	return err;
}

void mon_deactivate(void)
{
	mon_set_active(0);
}

int mon_oracle_wanted(void)
{
	return oracle_path != NULL;
}

int mon_initialized(void)
{
	return __atomic_load_n(&rt_state, __ATOMIC_ACQUIRE) == 2;
}

void mon_init(void)
{
	int expected = 0;
	const char *oracle, *bname;
	const struct mon_backend_ops *b = NULL;
	struct mon_thread *t;

	if (!__atomic_compare_exchange_n(&rt_state, &expected, 1, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE))
		return;		/* done, or running on this thread right now */
	rt_pid = getpid();
	/* The interposers rely on the runtime's code being one contiguous range. */
	if (!mon_pc_in_runtime((uintptr_t)mon_access) || !mon_pc_in_runtime((uintptr_t)mon_cond_read) ||
	    !mon_pc_in_runtime((uintptr_t)mon_oracle_write))
		mon_log("runtime code is not contiguous; mem/str calls of the runtime may be counted "
			"(was libameba-rt linked without --whole-archive?)");
	pthread_key_create(&thread_exit_key, thread_exit_cb);

	oracle = getenv("AMEBA_ORACLE");
	bname = getenv("AMEBA_BACKEND");
	if (oracle && *oracle) {
		const char *marks = getenv("AMEBA_ORACLE_MARKS");

		oracle_path = mon_strdup(oracle);
		if (marks && !strcmp(marks, "bins"))
			oracle_marks_bins = 1;
		else if (marks && *marks && strcmp(marks, "all"))
			mon_log("AMEBA_ORACLE_MARKS=%s: want bins or all; marks list everything",
				marks);
		b = mon_backend_by_name(bname && *bname ? bname : "count");
		if (!b) {
			char names[128];

			mon_backend_names(names, sizeof(names));
			mon_log("AMEBA_BACKEND=%s is not a backend of this runtime%s (its backends: "
				"%s); using count", bname, ameba_backend_by_name(bname) ?
				": it runs in the agent, `ameba run --backend` starts it" : "",
				names);
			b = &mon_backend_count;
		}
	}

	mon_fold_init(oracle_path != NULL);	/* the oracle lists every block */

	/* The main thread's record first: it takes id 0. */
	t = mon_calloc(1, sizeof(*t));
	if (t) {
		t->id = thread_reserve_id();
		t->tid = (pid_t)syscall(SYS_gettid);
		t->in_rt = 1;
		mon_self = t;
		thread_find_ranges(t);
		thread_publish(t);
	}
	mon_objmap_init();
	/*
	 * After the object map's own handlers: child handlers run in
	 * registration order, so ours runs once the map's locks are usable again
	 * (what it calls may free memory); prepare handlers run in reverse, so
	 * ours takes thread_lock before the map's locks are taken.
	 */
	pthread_atfork(rt_fork_prepare, rt_fork_parent, rt_fork_child);
	if (t)
		mon_objmap_thread_add(t);
	__atomic_store_n(&rt_state, 2, __ATOMIC_RELEASE);
	if (t)
		pthread_setspecific(thread_exit_key, t);

	if (b) {
		int err = rt_activate(b);

		if (err)
			mon_log("cannot start the %s backend: %s; running dormant", b->name,
				ameba_strerror(err));
		atexit(rt_exit);
	}
	if (t)
		t->in_rt = 0;
	mri_server_start();
}

__attribute__((constructor(101))) static void rt_constructor(void)
{
	mon_init();
}

/* ---- the access path ---- */

/* Adds what one piece caused to t's counters of it (v, NULL when they could
 * not be allocated), the conditional counters and the sample streams. */
static inline void account(struct mon_thread *t, uint64_t *v, uintptr_t a, uintptr_t pc,
			   const struct mon_obj *obj, const struct mon_events *ev)
{
	/* nothing happened (or it happens later: the ordered mode's merger
	 * accounts for t, and t must not touch its cond/sample state) */
	if (mon_unlikely(ev->nr == 0))
		return;
	if (mon_likely(v != NULL))
		for (uint32_t i = 0; i < ev->nr; i++)
			mon_count_add(v, ev->slot[i], ev->n[i]);
	if (mon_unlikely(__atomic_load_n(&mon_cond_armed, __ATOMIC_RELAXED)))
		mon_cond_account(t, a, obj, ev);
	if (mon_unlikely(__atomic_load_n(&mon_sample_armed, __ATOMIC_RELAXED)))
		mon_sample_account(t, a, pc, obj, ev);
}

static void deliver(struct mon_thread *t, uintptr_t a, uintptr_t end, unsigned flags, uintptr_t pc)
{
	while (a < end) {
		struct mon_obj *obj = mon_objmap_lookup(t, a);
		uintptr_t piece_end = end;
		struct mon_events ev;

		/* A chunk that runs past its object's end is split: each object
		 * overlapped counts one access. [other] takes the rest. */
		if (obj->kind != MON_OBJ_OTHER && obj->end < end)
			piece_end = obj->end;
		ev.nr = 0;
		ev.counts = NULL;
		mon_backend->access(t, obj, a, (uint32_t)(piece_end - a), flags, pc, &ev);
		account(t, mon_counts_get(t, obj->idx), a, pc, obj, &ev);
		a = piece_end;
	}
}

/* Everything the fast path of mon_access does not take. */
static __attribute__((noinline)) void access_slow(uintptr_t addr, size_t sz, unsigned flags,
						  uintptr_t pc)
{
	struct mon_thread *t = mon_self;
	uintptr_t end = addr + sz;

	if (mon_unlikely(!t)) {
		t = mon_thread_self();
		if (!t)
			return;
	}
	if (t->in_rt || t->ignore || !mon_backend || sz == 0)
		return;
	if (end < addr)		/* wraps around the address space */
		end = UINTPTR_MAX;
	t->in_rt++;
	if (mon_unlikely(t->started != mon_backend)) {
		if (mon_backend->thread_start)
			mon_backend->thread_start(t);
		t->started = mon_backend;
	}
	mon_fold_check(t);	/* a thread that reads what others free (fold.c) */
	while (addr < end) {
		uintptr_t line_end = (addr | (MON_LINE_SIZE - 1)) + 1;

		if (line_end > end || line_end == 0)
			line_end = end;
		deliver(t, addr, line_end, flags, pc);
		addr = line_end;
	}
	t->in_rt--;
}

/* The fast path's piece when someone besides the object's counters wants
 * its events (conditional counters, sample streams), or the counters could
 * not be allocated. */
static __attribute__((noinline)) void access_events(struct mon_thread *t, int w, uintptr_t addr,
						    size_t sz, unsigned flags, uintptr_t pc)
{
	struct mon_obj *obj = t->cache.obj[w];
	uint64_t *v = t->cache.counts[w];
	struct mon_events ev;

	t->in_rt++;
	if (!v)
		mon_objmap_cache_counts(t, w, addr, v = mon_counts_get(t, obj->idx));
	ev.nr = 0;
	ev.counts = NULL;
	mon_backend->access(t, obj, addr, (uint32_t)sz, flags, pc, &ev);
	account(t, v, addr, pc, obj, &ev);
	t->in_rt--;
}

/* The fast path's piece: object cache way w of t holds it, and its counters
 * take the events directly. */
static __attribute__((noinline)) void access_piece(struct mon_thread *t, int w, uintptr_t addr,
						   size_t sz, unsigned flags, uintptr_t pc)
{
	struct mon_events ev;

	t->in_rt++;
	ev.nr = 0;
	ev.counts = t->cache.counts[w];
	mon_backend->access(t, t->cache.obj[w], addr, (uint32_t)sz, flags, pc, &ev);
	t->in_rt--;
}

/*
 * An object cache miss of an access within one line: the object map's
 * lookup puts the object into t's cache (mon_objmap_lookup), with its
 * counters; the way that now holds [addr, addr + sz), or -1 (no object
 * there, or the access runs past the object's end: access_slow's pieces).
 * So that a program of many objects - more than the cache's ways at a
 * time, or blocks smaller than a line - pays one lookup on a miss and
 * then takes the backend's fast path, not the general one (Lua's
 * interpreter on a numeric script, bench/sim_speed_long/others.sh: 4.5-4.7
 * -> 2.9 CPU s, the same counts).
 */
static __attribute__((noinline)) int objcache_fill(struct mon_thread *t, uintptr_t addr, size_t sz)
{
	int w;

	t->in_rt++;
	mon_fold_check(t);	/* as access_slow */
	w = mon_objcache_fill(t, addr, sz);
	t->in_rt--;
	return w;
}

int mon_objcache_fill(struct mon_thread *t, uintptr_t addr, size_t sz)
{
	int w = mon_objmap_cache_fill(t, addr);

	if (w < 0 || addr + sz > t->cache.end[w])
		return -1;
	if (!t->cache.counts[w])
		mon_objmap_cache_counts(t, w, addr, mon_counts_get(t, t->cache.obj[w]->idx));
	return w;
}

/*
 * The object cache half of the fast path: object cache way w of t holds
 * [addr, addr + sz), and its counters exist and want the events alone -
 * nearly every access of a program. One piece, no loop, no call to find
 * the object or its counters. It counts exactly as access_slow would. Only
 * tail calls, so it saves no registers.
 */
static inline __attribute__((always_inline)) void access_cached(struct mon_thread *t,
								 const struct mon_backend_ops *b,
								 uintptr_t addr, size_t sz,
								 unsigned flags, uintptr_t pc)
{
	int w;

	if (mon_unlikely((w = mon_objcache_way(t, addr)) < 0 || addr + sz > t->cache.end[w]) &&
	    (w >= 0 || (w = objcache_fill(t, addr, sz)) < 0)) {
		access_slow(addr, sz, flags, pc);
		return;
	}
	if (mon_unlikely(!t->cache.counts[w] || __atomic_load_n(&mon_cond_armed, __ATOMIC_RELAXED) ||
			 __atomic_load_n(&mon_sample_armed, __ATOMIC_RELAXED))) {
		access_events(t, w, addr, sz, flags, pc);
		return;
	}
	if (b->fast) {
		/* the sim backend's L1 hits; sz <= MON_LINE_SIZE here */
		b->fast(t, addr, MON_FAST_WFS(w, flags, sz), pc);
		return;
	}
	access_piece(t, w, addr, sz, flags, pc);
}

void mon_access_cached(struct mon_thread *t, uintptr_t addr, uint32_t wfs, uintptr_t pc)
{
	access_cached(t, mon_backend, addr, MON_FAST_SZ(wfs), MON_FAST_FLAGS(wfs), pc);
}

/*
 * The fast path: a registered thread whose backend has started, an access
 * within one line: the backend's line_fast (the sim backend: an L1 hit on
 * a remembered line, whose object it remembers too), else the object
 * cache. Stencil kernel: ~55 instructions per access here and in
 * access_piece, from ~130 in the loop over pieces, before line_fast.
 */
void mon_access(uintptr_t addr, size_t sz, unsigned flags, uintptr_t pc)
{
	struct mon_thread *t = mon_self;
	const struct mon_backend_ops *b = mon_backend;
	void (*line_fast)(struct mon_thread *, uintptr_t, uint32_t, uintptr_t);

	mon_batch_sync(t);	/* the thread's batched accesses come first */

	/* The program loads or stores addr right after this hook returns:
	 * start that host cache miss now, so that it overlaps the simulation
	 * (chase kernel, a dependent miss per step: -15% time). */
	__builtin_prefetch((const void *)addr);
	if (mon_unlikely(!mon_access_plain(t, b, addr, sz))) {
		access_slow(addr, sz, flags, pc);
		return;
	}
	if ((line_fast = mon_line_entry(b))) {
		line_fast(t, addr, MON_FAST_WFS(0, flags, sz), pc);
		return;
	}
	access_cached(t, b, addr, sz, flags, pc);
}
