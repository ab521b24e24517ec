/*
 * elfsyms.c - data symbols and code segments of one ELF file (libelf).
 *
 * Notes:
 *  - .symtab is preferred: it has the file-local statics that are often the
 *    program's big arrays. A stripped file only has .dynsym (exported data).
 *  - Both tables are scanned for __tsan_* names: an instrumented DSO has
 *    undefined references in .dynsym even when stripped; an executable that
 *    links the runtime defines __tsan_init.
 *  - Local symbols are grouped by the linker after their object file's
 *    STT_FILE symbol. A group holding mon_rt_unit_marker (mon.h) comes from a
 *    runtime translation unit, and all its locals are flagged rt_unit. The
 *    marker may sit anywhere in its group, hence the separate marking pass.
 *  - libelf allocates with malloc: the calling thread's in_rt is raised for
 *    the whole read so that the interposer passes those calls through.
 */
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <string.h>
#include <unistd.h>

#include "elfsyms.h"

#define RT_MARKER "mon_rt_unit_marker"

struct symtab_view {
	Elf_Scn *scn;
	Elf_Data *data;
	size_t strndx;		/* section of the names */
	size_t nr;		/* symbols, including entry 0 */
};

static int view_open(Elf *elf, Elf_Scn *scn, struct symtab_view *v)
{
	GElf_Shdr sh;

	memset(v, 0, sizeof(*v));
	if (!scn || !gelf_getshdr(scn, &sh) || !sh.sh_entsize)
		return AMEBA_ENOENT;
	v->data = elf_getdata(scn, NULL);
	if (!v->data)
		return AMEBA_EPROTO;
	v->scn = scn;
	v->strndx = sh.sh_link;
	v->nr = sh.sh_size / sh.sh_entsize;
	return 0;
}

static const char *sym_name(Elf *elf, const struct symtab_view *v, const GElf_Sym *s)
{
	const char *n = elf_strptr(elf, v->strndx, s->st_name);

	return n ? n : "";
}

static int is_data_sym(const GElf_Sym *s)
{
	int type = GELF_ST_TYPE(s->st_info);

	if (type != STT_OBJECT && type != STT_TLS)
		return 0;
	/* Absolute symbols are not in any section: no address of a module. */
	return s->st_shndx != SHN_UNDEF && s->st_shndx != SHN_COMMON && s->st_shndx != SHN_ABS;
}

static void scan_tsan(Elf *elf, const struct symtab_view *v, struct mon_elfsyms *es)
{
	for (size_t i = 1; i < v->nr; i++) {
		GElf_Sym s;
		const char *n;

		if (!gelf_getsym(v->data, (int)i, &s))
			continue;
		n = sym_name(elf, v, &s);
		if (strncmp(n, "__tsan_", 7))
			continue;
		if (s.st_shndx == SHN_UNDEF)
			es->flags |= MON_ELFSYMS_TSAN_REF;
		else if (!strcmp(n, "__tsan_init"))
			es->flags |= MON_ELFSYMS_TSAN_INIT;
	}
}

/*
 * Marks which STT_FILE groups are runtime units. Group g holds the locals
 * after the g-th STT_FILE symbol (group 0: locals before any). Returns a
 * mon_calloc'ed array of nr_groups flags, or NULL (then nothing is marked).
 */
static uint8_t *mark_rt_groups(Elf *elf, const struct symtab_view *v, size_t *nr_groups)
{
	size_t nr = 1, g = 0;
	uint8_t *rt;

	for (size_t i = 1; i < v->nr; i++) {
		GElf_Sym s;

		if (gelf_getsym(v->data, (int)i, &s) && GELF_ST_TYPE(s.st_info) == STT_FILE)
			nr++;
	}
	rt = mon_calloc(nr, 1);
	if (!rt)
		return NULL;
	for (size_t i = 1; i < v->nr; i++) {
		GElf_Sym s;

		if (!gelf_getsym(v->data, (int)i, &s))
			continue;
		if (GELF_ST_TYPE(s.st_info) == STT_FILE)
			g++;
		else if (GELF_ST_BIND(s.st_info) == STB_LOCAL && g < nr &&
			 !strcmp(sym_name(elf, v, &s), RT_MARKER))
			rt[g] = 1;
	}
	*nr_groups = nr;
	return rt;
}

static int collect(Elf *elf, const struct symtab_view *v, struct mon_elfsyms *es)
{
	size_t nr = 0, sz_strings = 0, nr_groups = 0, g = 0, o = 0;
	uint8_t *rt = mark_rt_groups(elf, v, &nr_groups);
	uint32_t k = 0;

	for (size_t i = 1; i < v->nr; i++) {
		GElf_Sym s;

		if (gelf_getsym(v->data, (int)i, &s) && is_data_sym(&s)) {
			nr++;
			sz_strings += strlen(sym_name(elf, v, &s)) + 1;
		}
	}
	if (!nr) {
		mon_free(rt);
		return 0;
	}
	es->syms = mon_calloc(nr, sizeof(*es->syms));
	es->strings = mon_malloc(sz_strings);
	if (!es->syms || !es->strings) {
		mon_free(rt);
		return AMEBA_ENOMEM;
	}
	for (size_t i = 1; i < v->nr && k < nr; i++) {
		struct mon_elfsym *d;
		const char *n;
		GElf_Sym s;
		size_t len;

		if (!gelf_getsym(v->data, (int)i, &s))
			continue;
		if (GELF_ST_TYPE(s.st_info) == STT_FILE)
			g++;
		if (!is_data_sym(&s))
			continue;
		n = sym_name(elf, v, &s);
		len = strlen(n) + 1;
		if (o + len > sz_strings)	/* cannot happen: same table twice */
			break;
		memcpy(es->strings + o, n, len);
		d = &es->syms[k++];
		d->name = es->strings + o;
		o += len;
		d->value = (uintptr_t)s.st_value;
		d->sz_bytes = (size_t)s.st_size;
		d->type = (uint8_t)GELF_ST_TYPE(s.st_info);
		d->bind = (uint8_t)GELF_ST_BIND(s.st_info);
		d->rt_unit = rt && d->bind == STB_LOCAL && g < nr_groups && rt[g];
	}
	es->nr_syms = k;
	mon_free(rt);
	return 0;
}

static int read_elf(int fd, struct mon_elfsyms *es)
{
	struct symtab_view symtab, dynsym;
	Elf_Scn *scn = NULL, *s_symtab = NULL, *s_dynsym = NULL;
	size_t nr_phdrs = 0;
	GElf_Ehdr eh;
	int err = 0;
	Elf *elf;

	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf)
		return AMEBA_EPROTO;
	if (elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh)) {
		err = AMEBA_EPROTO;
		goto out;
	}
	es->elf_type = eh.e_type;

	if (elf_getphdrnum(elf, &nr_phdrs) == 0) {
		for (size_t i = 0; i < nr_phdrs && es->nr_segs < MON_ELFSYMS_MAX_SEGS; i++) {
			GElf_Phdr ph;

			if (!gelf_getphdr(elf, (int)i, &ph))
				continue;
			if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X)) {
				es->segs[es->nr_segs].vaddr = (uintptr_t)ph.p_vaddr;
				es->segs[es->nr_segs].memsz = (size_t)ph.p_memsz;
				es->nr_segs++;
			}
		}
	}

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_SYMTAB)
			s_symtab = scn;
		else if (sh.sh_type == SHT_DYNSYM)
			s_dynsym = scn;
	}
	if (view_open(elf, s_symtab, &symtab) == 0)
		scan_tsan(elf, &symtab, es);
	else
		s_symtab = NULL;
	if (view_open(elf, s_dynsym, &dynsym) == 0)
		scan_tsan(elf, &dynsym, es);
	else
		s_dynsym = NULL;

	if (s_symtab) {
		es->flags |= MON_ELFSYMS_SYMTAB;
		err = collect(elf, &symtab, es);
	} else if (s_dynsym) {
		err = collect(elf, &dynsym, es);
	}
out:
	elf_end(elf);
	return err;
}

int mon_elfsyms_read(const char *path, struct mon_elfsyms *es)
{
	struct mon_thread *t = mon_self;
	int fd, err;

	memset(es, 0, sizeof(*es));
	if (!path || !*path)
		return AMEBA_ENOENT;
	if (t)
		t->in_rt++;
	if (elf_version(EV_CURRENT) == EV_NONE) {
		err = AMEBA_ENOTSUP;
		goto out;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = AMEBA_ENOENT;
		goto out;
	}
	err = read_elf(fd, es);
	close(fd);
	if (err)
		mon_elfsyms_free(es);
out:
	if (t)
		t->in_rt--;
	return err;
}

void mon_elfsyms_free(struct mon_elfsyms *es)
{
	mon_free(es->syms);
	mon_free(es->strings);
	memset(es, 0, sizeof(*es));
}
