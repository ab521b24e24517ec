/*
 * procmap.c - objects of an outside process from /proc/PID/maps and the
 * ELF symbols of its mapped files (design.md section 4, outside process).
 *
 * Notes:
 *  - Each file is read once per monitor (cached by path, device, inode);
 *    its load bias comes from the mapping of the page holding its first
 *    PT_LOAD (pm_elf_bias), so PIE executables and libraries relocate.
 *  - Globals: STT_OBJECT symbols with a size, named as in the source for
 *    the executable and "name (libfoo.so.1)" for a library. Overlapping
 *    symbols (aliases such as environ / __environ) keep the first, larger.
 *  - Regions: [heap], [stack], and every other anonymous writable mapping
 *    ("[anon 0x7f...]": thread stacks, big malloc blocks, mmaps) are
 *    objects too, except the anonymous tail right after a file mapping
 *    (its .bss, covered by the file's symbols). Heap blocks known from
 *    uprobes (extra objects) are carved out of the region holding them;
 *    the remaining pieces of one region share its name as their site, so
 *    strategies aggregate them into one bin.
 *  - Object ids are start addresses: stable across refreshes while the
 *    object lives, which the strategies rely on.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "procmap.h"
#include "provider.h"

struct map_ent {
	uintptr_t start, end;
	char perms[5];
	uint64_t offset, ino;
	char path[512];
};

static const char *name_dup(struct pm_procmap *m, const char *s)
{
	size_t l = strlen(s) + 1;

	if (m->names_used + l > m->names_cap)
		return NULL;	/* sized in advance; never grows (pointers stay valid) */
	memcpy(m->names + m->names_used, s, l);
	m->names_used += l;
	return m->names + m->names_used - l;
}

static struct pm_file *file_get(struct pm_procmap *m, const char *path, uint64_t ino)
{
	struct pm_file *f;

	for (uint32_t i = 0; i < m->nr_files; i++)
		if (m->files[i].ino == ino && !strcmp(m->files[i].path, path))
			return &m->files[i];
	f = realloc(m->files, (m->nr_files + 1) * sizeof(*f));
	if (!f)
		return NULL;
	m->files = f;
	f = &m->files[m->nr_files++];
	memset(f, 0, sizeof(*f));
	f->path = strdup(path);
	f->ino = ino;
	return f;
}

static int obj_cmp(const void *a, const void *b)
{
	const struct ameba_object *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->end > y->end ? -1 : x->end < y->end;
}

static int push(struct ameba_object **v, uint32_t *nr, uint32_t *cap, const struct ameba_object *o)
{
	if (*nr == *cap) {
		uint32_t c = *cap ? 2 * *cap : 256;
		struct ameba_object *n = realloc(*v, c * sizeof(*n));

		if (!n)
			return -ENOMEM;
		*v = n;
		*cap = c;
	}
	(*v)[(*nr)++] = *o;
	return 0;
}

static int read_maps(int32_t pid, struct map_ent **out, uint32_t *nr)
{
	char path[64], line[1024];
	struct map_ent *v = NULL;
	uint32_t n = 0, cap = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	while (fgets(line, sizeof(line), f)) {
		struct map_ent e = { 0 };
		unsigned long long s, en, off, ino;
		int pos = 0;

		if (sscanf(line, "%llx-%llx %4s %llx %*s %llu %n", &s, &en, e.perms, &off, &ino,
			   &pos) < 5)
			continue;
		e.start = (uintptr_t)s;
		e.end = (uintptr_t)en;
		e.offset = off;
		e.ino = ino;
		snprintf(e.path, sizeof(e.path), "%s", line + pos);
		e.path[strcspn(e.path, "\n")] = 0;
		if (n == cap) {
			struct map_ent *nv;

			cap = cap ? 2 * cap : 128;
			nv = realloc(v, cap * sizeof(*nv));
			if (!nv) {
				free(v);
				fclose(f);
				return -ENOMEM;
			}
			v = nv;
		}
		v[n++] = e;
	}
	fclose(f);
	if (!n) {
		/* an exiting process has released its memory: keep the last map */
		free(v);
		return -ESRCH;
	}
	*out = v;
	*nr = n;
	return 0;
}

static int in_maps(const struct map_ent *me, uint32_t nr, uintptr_t s, uintptr_t e)
{
	for (uint32_t i = 0; i < nr; i++)
		if (s >= me[i].start && e <= me[i].end)
			return 1;
	return 0;
}

int pm_procmap_refresh(struct pm_procmap *m, const struct pm_extra_obj *extra,
		       uint32_t nr_extra)
{
	struct map_ent *me = NULL;
	struct ameba_object *hi = NULL, *lo = NULL;
	uint32_t nr_me = 0, nr_hi = 0, cap_hi = 0, nr_lo = 0, cap_lo = 0, k;
	size_t need = 4096;
	int ret;

	ret = read_maps(m->pid, &me, &nr_me);
	if (ret)
		return ret;
	m->nr_objs = 0;
	m->names_used = 0;
	m->heap_start = m->heap_end = 0;
	/* names: "[anon 0x...]" per mapping, "sym (lib)" per library symbol */
	for (uint32_t i = 0; i < nr_me; i++)
		need += 64;
	/* globals */
	for (uint32_t i = 0; i < nr_me; i++) {
		struct pm_file *f;

		if (me[i].path[0] != '/' || me[i].offset != 0)
			continue;
		f = file_get(m, me[i].path, me[i].ino);
		if (!f)
			continue;
		if (!f->loaded) {
			f->loaded = 1;
			f->ok = pm_elf_read(f->path, &f->elf) == 0;
		}
		if (!f->ok)
			continue;
		for (uint32_t s = 0; s < f->elf.nr_syms; s++)
			if (!f->elf.syms[s].func)
				need += strlen(f->elf.syms[s].name) + strlen(f->path) + 4;
	}
	if (need > m->names_cap) {
		free(m->names);
		m->names = malloc(need);
		m->names_cap = m->names ? need : 0;
	}
	/*
	 * The executable's symbols keep their bare names. Its path is read
	 * once per refresh and kept: a target that exits between reading its
	 * maps and its exe link must not rename its globals "sym (prog)".
	 */
	{
		char link[64], exe[sizeof(m->exe)];
		ssize_t l;

		snprintf(link, sizeof(link), "/proc/%d/exe", (int)m->pid);
		l = readlink(link, exe, sizeof(exe) - 1);
		if (l > 0) {
			exe[l] = 0;
			memcpy(m->exe, exe, (size_t)l + 1);
		}
	}
	for (uint32_t i = 0; i < nr_me; i++) {
		struct pm_file *f;
		uint64_t bias;
		const char *base;
		int is_exe;

		if (me[i].path[0] != '/' || me[i].offset != 0)
			continue;
		f = file_get(m, me[i].path, me[i].ino);
		if (!f || !f->ok)
			continue;
		is_exe = m->exe[0] && !strcmp(m->exe, f->path);
		base = strrchr(f->path, '/') + 1;
		bias = pm_elf_bias(&f->elf, me[i].start, 0);
		for (uint32_t s = 0; s < f->elf.nr_syms; s++) {
			const struct pm_sym *sy = &f->elf.syms[s];
			struct ameba_object o = { 0 };
			char nm[768];

			if (sy->func)
				continue;
			o.start = (uintptr_t)(sy->value + bias);
			o.end = o.start + sy->sz_bytes;
			if (!in_maps(me, nr_me, o.start, o.end))
				continue;
			if (is_exe) {
				o.name = sy->name;
			} else {
				snprintf(nm, sizeof(nm), "%s (%s)", sy->name, base);
				o.name = name_dup(m, nm);
				if (!o.name)
					continue;
			}
			o.kind = AMEBA_OBJ_GLOBAL;
			o.sz_bytes = sy->sz_bytes;
			o.nr_blocks = 1;
			o.live = 1;
			o.id = o.start;
			if ((ret = push(&hi, &nr_hi, &cap_hi, &o)))
				goto out;
		}
	}
	for (uint32_t i = 0; i < nr_extra; i++) {
		struct ameba_object o = { 0 };

		o.start = extra[i].start;
		o.end = extra[i].end;
		o.name = extra[i].name;
		o.site = extra[i].site;
		o.kind = AMEBA_OBJ_HEAP;
		o.sz_bytes = o.end - o.start;
		o.nr_blocks = 1;
		o.live = 1;
		o.id = extra[i].id;
		if ((ret = push(&hi, &nr_hi, &cap_hi, &o)))
			goto out;
	}
	qsort(hi, nr_hi, sizeof(*hi), obj_cmp);
	/* drop overlaps: the first (larger at equal start) wins */
	k = 0;
	for (uint32_t i = 0; i < nr_hi; i++)
		if (!k || hi[i].start >= hi[k - 1].end)
			hi[k++] = hi[i];
	nr_hi = k;
	/* regions */
	for (uint32_t i = 0; i < nr_me; i++) {
		struct ameba_object o = { 0 };
		char nm[64];

		if (me[i].perms[1] != 'w')
			continue;
		if (!strcmp(me[i].path, "[heap]")) {
			o.kind = AMEBA_OBJ_HEAP;
			o.name = "[heap]";
			m->heap_start = me[i].start;
			m->heap_end = me[i].end;
		} else if (!strcmp(me[i].path, "[stack]")) {
			o.kind = AMEBA_OBJ_STACK;
			o.name = "[stack]";
		} else if (!me[i].path[0]) {
			/* the .bss tail of the file mapped just below */
			if (i && me[i - 1].end == me[i].start && me[i - 1].path[0] == '/')
				continue;
			snprintf(nm, sizeof(nm), "[anon 0x%" PRIxPTR "]", me[i].start);
			o.kind = AMEBA_OBJ_MMAP;
			o.name = name_dup(m, nm);
			if (!o.name)
				continue;
		} else {
			continue;
		}
		o.start = me[i].start;
		o.end = me[i].end;
		if ((ret = push(&lo, &nr_lo, &cap_lo, &o)))
			goto out;
	}
	/* the result: every hi object, and the pieces of lo regions around them */
	k = 0;
	for (uint32_t r = 0; r < nr_lo; r++) {
		uintptr_t at = lo[r].start;
		int split = 0;

		while (k < nr_hi && hi[k].end <= lo[r].start)
			k++;
		for (uint32_t j = k; j <= nr_hi; j++) {
			uintptr_t stop = lo[r].end;

			if (j < nr_hi && hi[j].start < lo[r].end)
				stop = hi[j].start;

			if (stop > at) {
				struct ameba_object o = lo[r];

				o.start = at;
				o.end = stop;
				o.sz_bytes = stop - at;
				o.id = at;
				o.nr_blocks = 1;
				o.live = 1;
				if (split || stop != lo[r].end)
					o.site = lo[r].name;
				if ((ret = push(&m->objs, &m->nr_objs, &m->cap_objs, &o)))
					goto out;
			}
			if (j == nr_hi || hi[j].start >= lo[r].end)
				break;
			split = 1;
			at = hi[j].end > at ? hi[j].end : at;
		}
	}
	for (uint32_t i = 0; i < nr_hi; i++)
		if ((ret = push(&m->objs, &m->nr_objs, &m->cap_objs, &hi[i])))
			goto out;
	qsort(m->objs, m->nr_objs, sizeof(*m->objs), obj_cmp);
out:
	free(me);
	free(hi);
	free(lo);
	return ret;
}

void pm_procmap_free(struct pm_procmap *m)
{
	for (uint32_t i = 0; i < m->nr_files; i++) {
		free(m->files[i].path);
		if (m->files[i].ok)
			pm_elf_free(&m->files[i].elf);
	}
	free(m->files);
	free(m->objs);
	free(m->names);
	memset(m, 0, sizeof(*m));
}

const struct ameba_object *pm_procmap_find(const struct pm_procmap *m, uintptr_t addr)
{
	return agent_object_at(m->objs, m->nr_objs, addr);
}
