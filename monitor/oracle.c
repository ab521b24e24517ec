/*
 * oracle.c - the AMEBA_ORACLE dump: exhaustive per-object, per-bin,
 * per-thread counts of every metric the active backend provides, written at
 * exit. It is the ground truth that search accuracy is measured against;
 * docs/oracle.md documents the format.
 *
 * Notes:
 *  - Streaming writer: a million objects never become a million JSON nodes.
 *  - Only objects that some thread accessed are listed one by one (their
 *    number is bounded by the accesses); every bin is listed, touched or not,
 *    with its allocation statistics.
 *  - The file appears atomically: written to PATH.tmp.PID, then renamed.
 *  - Marks (docs/oracle.md): the same dump written while the program runs,
 *    on the MRI server's thread. The counters are read with relaxed loads
 *    under each thread's table lock (counts.c), which the owner takes only
 *    to insert an object, so the program's threads are never stopped: a
 *    mark is a snapshot of each thread's counters in turn, not one instant
 *    across threads: a window armed just before it counts what each object
 *    missed until its counter is read, and the mark does not. So the
 *    counters are read first, into arrays sized and touched beforehand
 *    (entries_reserve), and everything else comes after; the header tells
 *    how long the reading took (read_ns). Writers take turns (oracle_lock): the site bins are
 *    this file's, and the exit dump may come while a mark is written.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mon.h"
#include "seq.h"

/* Site bins of this dump (built once per write, under oracle_lock). */
static struct mon_site_bins bins_of_sites;
static pthread_mutex_t oracle_lock = PTHREAD_MUTEX_INITIALIZER;

static uint32_t site_bin(uint32_t site_id)
{
	return mon_site_bins_of(&bins_of_sites, site_id);
}

struct entry {
	uint64_t key;		/* object index, or bin key */
	uint32_t thread;
	uint64_t *v;		/* mon_nr_slots values (owned by the entry array's pool) */
};

struct entries {
	struct entry *e;
	size_t nr, cap;
	uint64_t *pool;		/* values, nr_slots per entry */
	size_t pool_nr, pool_cap;
	uint32_t cur_thread;
	int err;
};

static int entries_add(struct entries *es, uint64_t key, uint32_t thread, const uint64_t *v)
{
	if (es->nr == es->cap) {
		size_t cap = es->cap ? es->cap * 2 : 1024;
		struct entry *e = mon_realloc(es->e, cap * sizeof(*e));

		if (!e)
			return AMEBA_ENOMEM;
		es->e = e;
		es->cap = cap;
	}
	if (es->pool_nr + (size_t)mon_nr_slots > es->pool_cap) {
		/* Values are addressed by offset until the pool stops growing. */
		size_t cap = es->pool_cap ? es->pool_cap * 2 : 4096;
		uint64_t *p = mon_realloc(es->pool, cap * sizeof(*p));

		if (!p)
			return AMEBA_ENOMEM;
		es->pool = p;
		es->pool_cap = cap;
	}
	for (int s = 0; s < mon_nr_slots; s++)
		es->pool[es->pool_nr + (size_t)s] = __atomic_load_n(&v[s], __ATOMIC_RELAXED);
	es->e[es->nr].key = key;
	es->e[es->nr].thread = thread;
	es->e[es->nr].v = (uint64_t *)(uintptr_t)es->pool_nr;	/* offset, fixed up later */
	es->nr++;
	es->pool_nr += (size_t)mon_nr_slots;
	return 0;
}

/*
 * Room for nr entries, its pages touched: the counters are then read into
 * memory that faults no more (a mark's reading is its skew, Notes).
 */
static int entries_reserve(struct entries *es, size_t nr)
{
	size_t vals = nr * (size_t)mon_nr_slots;

	if (nr > es->cap) {
		struct entry *e = mon_realloc(es->e, nr * sizeof(*e));

		if (!e)
			return AMEBA_ENOMEM;
		es->e = e;
		es->cap = nr;
	}
	if (vals > es->pool_cap) {
		uint64_t *p = mon_realloc(es->pool, vals * sizeof(*p));

		if (!p)
			return AMEBA_ENOMEM;
		es->pool = p;
		es->pool_cap = vals;
	}
	memset(es->e, 0, es->cap * sizeof(*es->e));
	memset(es->pool, 0, es->pool_cap * sizeof(*es->pool));
	return 0;
}

static void entries_fixup(struct entries *es)
{
	for (size_t i = 0; i < es->nr; i++)
		es->e[i].v = es->pool + (uintptr_t)es->e[i].v;
}

static int collect_cb(uint32_t obj_idx, const uint64_t *v, void *arg)
{
	struct entries *es = arg;

	es->err = entries_add(es, obj_idx, es->cur_thread, v);
	return es->err != 0;
}

static int cmp_entry(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->thread < y->thread ? -1 : x->thread > y->thread;
}

/* ---- JSON output helpers ---- */

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static void json_counts(FILE *f, const uint64_t *v)
{
	fputc('{', f);
	for (int s = 0; s < mon_nr_slots; s++)
		fprintf(f, "%s\"%s\":%llu", s ? "," : "", ameba_metric_info(mon_metric_of_slot[s])->name,
			(unsigned long long)v[s]);
	fputc('}', f);
}

/* Writes "total" and "threads" for the run of entries [i, j) of one key. */
static void json_thread_counts(FILE *f, const struct entry *e, size_t i, size_t j)
{
	uint64_t total[AMEBA_M_NR] = { 0 };

	for (size_t k = i; k < j; k++)
		for (int s = 0; s < mon_nr_slots; s++)
			total[s] += e[k].v[s];
	fputs("\"total\":", f);
	json_counts(f, total);
	fputs(",\"threads\":{", f);
	for (size_t k = i; k < j; k++) {
		fprintf(f, "%s\"%u\":", k > i ? "," : "", e[k].thread);
		json_counts(f, e[k].v);
	}
	fputc('}', f);
}

/* Bin keys: kind in the top byte, then the site id (heap, mmap), the object
 * index (global) or 0 (stack, tls, other: one bin per kind). */
static uint64_t bin_key_of(const struct mon_obj *o)
{
	uint64_t id = 0;

	/* A site bin covers its malloc-family and mmap blocks alike. */
	if (o->kind == MON_OBJ_HEAP || o->kind == MON_OBJ_MMAP)
		return (uint64_t)MON_OBJ_HEAP << 56 | site_bin(o->site_id);
	if (o->kind == MON_OBJ_GLOBAL)
		id = o->idx;
	return (uint64_t)o->kind << 56 | id;
}

static const char *bin_name(uint64_t key, char *buf, size_t len)
{
	int kind = (int)(key >> 56);
	uint64_t id = key & ((1ull << 56) - 1);

	switch (kind) {
	case MON_OBJ_HEAP:
		snprintf(buf, len, "%s", id < bins_of_sites.nr_bins ? bins_of_sites.label[id] : "[unknown site]");
		return buf;
	case MON_OBJ_GLOBAL:
		snprintf(buf, len, "%s", mon_objmap_get((uint32_t)id)->name ?: "?");
		return buf;
	default:
		snprintf(buf, len, "[%s]", mon_obj_kind_name(kind));
		return buf;
	}
}

/*
 * The simulated run time in cycles: in ordered mode the largest thread
 * clock (threads run side by side in simulated time, a joiner resumes at
 * the clock of the thread it joins); else the largest sum of one thread's
 * estimated cycles (exact for one thread; host order has no common clock).
 */
static uint64_t est_runtime(void)
{
	uint32_t nr = mon_thread_nr();
	uint64_t best = mon_seq_max_clock();

	if (mon_seq_engaged())
		return best;
	for (uint32_t id = 0; id < nr; id++) {
		struct mon_thread *t = mon_thread_get(id);
		uint64_t sum;

		if (!t)
			continue;
		sum = mon_counts_cycles(t);
		if (sum > best)
			best = sum;
	}
	return best;
}

static void write_header(FILE *f, const char *mark, int objects, uint64_t read_ns)
{
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	uint32_t nr = mon_thread_nr();

	exe[n > 0 ? n : 0] = '\0';
	fprintf(f, "{\"format\":\"ameba-oracle\",\"version\":1,\"pid\":%d,\"program\":", (int)getpid());
	json_str(f, exe);
	if (mark) {
		fputs(",\"mark\":", f);
		json_str(f, mark);
		fprintf(f, ",\"read_ns\":%llu", (unsigned long long)read_ns);
	}
	if (!objects)
		fputs(",\"objects_listed\":false", f);
	fputs(",\"backend\":", f);
	json_str(f, mon_backend ? mon_backend->name : "none");
	if (mon_backend && !strcmp(mon_backend->name, "sim"))
		fprintf(f, ",\"sim_order\":\"%s\",\"est_runtime_cycles\":%llu",
			mon_seq_engaged() ? "time" : "host", (unsigned long long)est_runtime());
	mon_backend_sim_whatif_json(f);
	fputs(",\"metrics\":[", f);
	for (int s = 0; s < mon_nr_slots; s++) {
		fputs(s ? "," : "", f);
		json_str(f, ameba_metric_info(mon_metric_of_slot[s])->name);
	}
	fputs("],\n\"threads\":[", f);
	for (uint32_t id = 0, first = 1; id < nr; id++) {
		struct mon_thread *t = mon_thread_get(id);

		if (!t)
			continue;
		fprintf(f, "%s{\"id\":%u,\"tid\":%d,\"exited\":%s}", first ? "" : ",", t->id,
			(int)t->tid, __atomic_load_n(&t->exited, __ATOMIC_ACQUIRE) ? "true" : "false");
		first = 0;
	}
	fputs("],\n", f);
}

static void write_sites(FILE *f)
{
	uint32_t nr = mon_site_nr();
	char name[512], via[512];

	fputs("\"sites\":[", f);
	for (uint32_t id = 1; id <= nr; id++) {
		const struct mon_site *s = mon_site_get(id);

		if (!s)
			continue;
		fprintf(f, "%s\n{\"id\":%u,\"name\":", id > 1 ? "," : "", id);
		mon_site_start(s, name, sizeof(name), via, sizeof(via));
		json_str(f, name);
		if (via[0]) {
			fputs(",\"via\":", f);
			json_str(f, via);
		}
		if (s->file) {
			fputs(",\"file\":", f);
			json_str(f, s->file);
		}
		fputs(",\"bin\":", f);
		json_str(f, site_bin(id) < bins_of_sites.nr_bins ? bins_of_sites.label[site_bin(id)] : "");
		fprintf(f, ",\"nr_allocs\":%llu,\"bytes\":%llu,\"frames\":[",
			(unsigned long long)__atomic_load_n(&s->nr_allocs, __ATOMIC_RELAXED),
			(unsigned long long)__atomic_load_n(&s->sz_bytes_total, __ATOMIC_RELAXED));
		for (uint32_t k = 0; k < s->nr_frames; k++) {
			struct mon_frame_info fi = { 0 };

			mon_symbolize(s->frames[k], &fi);
			fprintf(f, "%s{\"pc\":\"0x%lx\",\"func\":", k ? "," : "", (unsigned long)s->frames[k]);
			json_str(f, fi.func ? fi.func : "");
			fputs(",\"file\":", f);
			json_str(f, fi.file ? fi.file : "");
			fprintf(f, ",\"line\":%d}", fi.line);
		}
		fputs("]}", f);
	}
	fputs("],\n", f);
}

/* Every object's row (objects: 0 collects their bins only). */
static void write_objects(FILE *f, struct entries *es, struct entries *bins, int objects)
{
	char name[512];
	size_t i = 0;
	int first = 1;

	fputs("\"objects\":[", f);
	while (i < es->nr) {
		size_t j = i;
		const struct mon_obj *o = mon_objmap_get((uint32_t)es->e[i].key);

		while (j < es->nr && es->e[j].key == es->e[i].key)
			j++;
		if (objects) {
			fprintf(f, "%s\n{\"id\":%u,\"kind\":\"%s\",\"name\":", first ? "" : ",",
				o->idx, mon_obj_kind_name(o->kind));
			first = 0;
			json_str(f, mon_obj_label(o, &bins_of_sites, name, sizeof(name)));
			fputs(",\"bin\":", f);
			json_str(f, bin_name(bin_key_of(o), name, sizeof(name)));
			fprintf(f, ",\"site_id\":%u,\"seq\":%llu,\"addr\":\"0x%lx\",\"size\":%zu,"
				"\"live\":%s,",
				(o->kind == MON_OBJ_HEAP || o->kind == MON_OBJ_MMAP) ? o->site_id : 0,
				(unsigned long long)o->seq, (unsigned long)o->start, o->sz_bytes,
				(__atomic_load_n(&o->flags, __ATOMIC_RELAXED) & MON_OBJF_LIVE) ?
				"true" : "false");
			if (o->kind == MON_OBJ_MMAP && o->name) {	/* counted: never recycled */
				fputs("\"file\":", f);
				json_str(f, o->name);
				fprintf(f, ",\"offset\":%llu,", (unsigned long long)mon_file_view_off(o->name));
			}
			json_thread_counts(f, es->e, i, j);
			fputc('}', f);
		}
		for (size_t k = i; k < j && !bins->err; k++)
			bins->err = entries_add(bins, bin_key_of(o), es->e[k].thread, es->e[k].v);
		i = j;
	}
	fputs("],\n", f);
}

/* Bins: every site (touched or not), plus the bins of touched objects. */
static void write_bins(FILE *f, struct entries *bins)
{
	char name[512];
	size_t i = 0;
	int first = 1;

	/* Untouched site bins get an empty run so that every one is listed. */
	for (uint32_t b = 0; b < bins_of_sites.nr_bins; b++) {
		uint64_t zero[AMEBA_M_NR] = { 0 };

		if (!bins->err)
			bins->err = entries_add(bins, (uint64_t)MON_OBJ_HEAP << 56 | b, UINT32_MAX, zero);
	}
	entries_fixup(bins);
	qsort(bins->e, bins->nr, sizeof(*bins->e), cmp_entry);

	fputs("\"bins\":[", f);
	while (i < bins->nr) {
		uint64_t key = bins->e[i].key;
		int kind = (int)(key >> 56);
		size_t j = i, w = i;

		while (j < bins->nr && bins->e[j].key == key)
			j++;
		/* Merge the runs of one thread (several objects of one bin) in place;
		 * drop the placeholder rows (thread UINT32_MAX). */
		for (size_t k = i; k < j; k++) {
			if (bins->e[k].thread == UINT32_MAX)
				continue;
			if (w > i && bins->e[w - 1].thread == bins->e[k].thread) {
				for (int s = 0; s < mon_nr_slots; s++)
					bins->e[w - 1].v[s] += bins->e[k].v[s];
			} else {
				bins->e[w++] = bins->e[k];
			}
		}
		fprintf(f, "%s\n{\"name\":", first ? "" : ",");
		first = 0;
		json_str(f, bin_name(key, name, sizeof(name)));
		fprintf(f, ",\"kind\":\"%s\"", kind == MON_OBJ_HEAP ? "site" : mon_obj_kind_name(kind));
		if (kind == MON_OBJ_HEAP) {
			uint64_t b = key & ((1ull << 56) - 1);
			int known = b < bins_of_sites.nr_bins;

			fprintf(f, ",\"nr_objects\":%llu,\"size\":%llu",
				known ? (unsigned long long)bins_of_sites.nr_allocs[b] : 0ull,
				known ? (unsigned long long)bins_of_sites.bytes[b] : 0ull);
		} else if (kind == MON_OBJ_GLOBAL) {
			const struct mon_obj *o = mon_objmap_get((uint32_t)(key & ((1ull << 56) - 1)));

			fprintf(f, ",\"nr_objects\":1,\"size\":%zu", o->sz_bytes);
		}
		fputc(',', f);
		json_thread_counts(f, bins->e, i, w);
		fputc('}', f);
		i = j;
	}
	fputs("]\n", f);
}

/*
 * Reads every thread's counters into es (sized and touched first); the time
 * the reading took goes to *read_ns. The program's threads go on meanwhile,
 * unless the caller holds them (mon_oracle_write_armed).
 */
static int collect_all(struct entries *es, uint64_t *read_ns)
{
	uint32_t nr = mon_thread_nr();
	size_t want = 0;
	uint64_t t0;
	int err;

	for (uint32_t id = 0; id < nr; id++) {
		struct mon_thread *t = mon_thread_get(id);

		want += t ? mon_counts_nr(t) : 0;
	}
	/* some slack for the objects first touched while the others are read */
	err = entries_reserve(es, want + want / 16 + 1024);
	if (err)
		return err;
	t0 = mon_mono_ns();
	for (uint32_t id = 0; id < nr && !es->err; id++) {
		struct mon_thread *t = mon_thread_get(id);

		if (!t)
			continue;
		es->cur_thread = id;
		mon_counts_for_each(t, collect_cb, es);
	}
	*read_ns = mon_mono_ns() - t0;
	return es->err;
}

/* Writes the dump of the counts collected in es (atomically: tmp + rename). */
static int write_collected(const char *path, const char *mark, int objects, struct entries *es,
			   uint64_t read_ns)
{
	struct entries bins = { 0 };
	char tmp[4200];
	FILE *f;
	int err;

	entries_fixup(es);
	qsort(es->e, es->nr, sizeof(*es->e), cmp_entry);

	err = mon_site_bins_build(&bins_of_sites);
	if (err)
		return err;
	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
	f = fopen(tmp, "w");
	if (!f) {
		mon_log("cannot create %s: %s", tmp, strerror(errno));
		err = AMEBA_EIO;
		goto out;
	}
	setvbuf(f, NULL, _IOFBF, 1 << 20);
	write_header(f, mark, objects, read_ns);
	write_sites(f);
	write_objects(f, es, &bins, objects);
	write_bins(f, &bins);
	fputs("}\n", f);
	if (bins.err)
		err = bins.err;
	if (ferror(f) || fflush(f) || fsync(fileno(f)))
		err = AMEBA_EIO;
	if (fclose(f))
		err = AMEBA_EIO;
	if (!err && rename(tmp, path)) {
		mon_log("cannot rename %s to %s: %s", tmp, path, strerror(errno));
		err = AMEBA_EIO;
	}
	if (err)
		unlink(tmp);
out:
	mon_site_bins_free(&bins_of_sites);
	mon_free(bins.e);
	mon_free(bins.pool);
	return err;
}

int mon_oracle_write(const char *path, const char *mark, int objects)
{
	struct entries es = { 0 };
	uint64_t read_ns = 0;
	int err;

	pthread_mutex_lock(&oracle_lock);
	err = collect_all(&es, &read_ns);
	if (!err)
		err = write_collected(path, mark, objects, &es, read_ns);
	mon_free(es.e);
	mon_free(es.pool);
	pthread_mutex_unlock(&oracle_lock);
	return err;
}

struct armed_mark {
	struct entries es;
	uint64_t read_ns;
	int err;
};

/* Under the conditional counters' lock, right after the new set is
 * published: no thread can adopt it (and count on) until this returns. */
static void collect_at_arm(void *arg)
{
	struct armed_mark *m = arg;

	m->err = collect_all(&m->es, &m->read_ns);
}

int mon_oracle_write_armed(const char *path, const char *mark, int objects,
			   const struct mon_cond_spec *specs, uint32_t nr, uint64_t *gen, int *mark_err)
{
	struct armed_mark m = { 0 };
	int err;

	pthread_mutex_lock(&oracle_lock);
	err = mon_cond_arm_then(specs, nr, gen, collect_at_arm, &m);
	*mark_err = err ? err : m.err;
	if (!*mark_err)
		*mark_err = write_collected(path, mark, objects, &m.es, m.read_ns);
	mon_free(m.es.e);
	mon_free(m.es.pool);
	pthread_mutex_unlock(&oracle_lock);
	return err;
}
