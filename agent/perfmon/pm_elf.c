/*
 * pm_elf.c - reads the symbols and segments of one ELF file with libelf, for
 * the out-of-process monitor (objects of an outside process, uprobe
 * offsets).
 *
 * Notes:
 *  - .symtab when the file has one (unstripped executables: static
 *    globals too), else .dynsym (libraries: exported globals, and the
 *    malloc family that uprobes need).
 *  - Only defined symbols are kept: STT_OBJECT with a size (globals; TLS
 *    has no fixed address and is skipped) and STT_FUNC / STT_GNU_IFUNC.
 *  - The monitor's own reader (monitor/elfsyms.c) allocates with the
 *    runtime's allocator inside a target process; the agent needs plain
 *    malloc and the segment offsets too, hence this small separate reader.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pm_elf.h"

static int sym_cmp(const void *a, const void *b)
{
	const struct pm_sym *x = a, *y = b;

	if (x->value != y->value)
		return x->value < y->value ? -1 : 1;
	if (x->sz_bytes != y->sz_bytes)
		return x->sz_bytes > y->sz_bytes ? -1 : 1;	/* larger first */
	return strcmp(x->name, y->name);
}

static Elf_Scn *find_symtab(Elf *elf, GElf_Shdr *out, Elf_Scn **dyn, GElf_Shdr *dynhdr)
{
	Elf_Scn *scn = NULL, *tab = NULL;
	GElf_Shdr sh;

	*dyn = NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_SYMTAB) {
			tab = scn;
			*out = sh;
		} else if (sh.sh_type == SHT_DYNSYM) {
			*dyn = scn;
			*dynhdr = sh;
		}
	}
	return tab;
}

int pm_elf_read(const char *path, struct pm_elf *e)
{
	Elf *elf = NULL;
	Elf_Scn *scn, *dyn;
	GElf_Shdr sh, dynsh;
	GElf_Ehdr eh;
	size_t nr_ph = 0, str_bytes = 0, str_used = 0;
	Elf_Data *data;
	int fd, ret = -EINVAL;
	uint32_t n;

	memset(e, 0, sizeof(*e));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh))
		goto out;
	e->type = eh.e_type;
	if (!elf_getphdrnum(elf, &nr_ph)) {
		for (size_t i = 0; i < nr_ph && e->nr_segs < 16; i++) {
			GElf_Phdr ph;

			if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
				continue;
			e->segs[e->nr_segs++] = (struct pm_seg){ ph.p_vaddr, ph.p_offset,
								 ph.p_filesz, ph.p_memsz,
								 ph.p_flags };
		}
	}
	scn = find_symtab(elf, &sh, &dyn, &dynsh);
	if (!scn) {
		scn = dyn;
		sh = dynsh;
	}
	ret = 0;
	if (!scn || !sh.sh_entsize)
		goto out;
	data = elf_getdata(scn, NULL);
	if (!data)
		goto out;
	n = (uint32_t)(sh.sh_size / sh.sh_entsize);
	/* pass 1: sizes */
	for (uint32_t i = 0; i < n; i++) {
		GElf_Sym s;
		const char *name;
		int t;

		if (!gelf_getsym(data, (int)i, &s) || s.st_shndx == SHN_UNDEF || !s.st_value)
			continue;
		t = GELF_ST_TYPE(s.st_info);
		if (!((t == STT_OBJECT && s.st_size) || t == STT_FUNC || t == STT_GNU_IFUNC))
			continue;
		name = elf_strptr(elf, sh.sh_link, s.st_name);
		if (!name || !*name)
			continue;
		e->nr_syms++;
		str_bytes += strlen(name) + 1;
	}
	e->syms = calloc(e->nr_syms ? e->nr_syms : 1, sizeof(*e->syms));
	e->strings = malloc(str_bytes ? str_bytes : 1);
	if (!e->syms || !e->strings) {
		ret = -ENOMEM;
		goto out;
	}
	e->nr_syms = 0;
	for (uint32_t i = 0; i < n; i++) {
		GElf_Sym s;
		const char *name;
		size_t l;
		int t;

		if (!gelf_getsym(data, (int)i, &s) || s.st_shndx == SHN_UNDEF || !s.st_value)
			continue;
		t = GELF_ST_TYPE(s.st_info);
		if (!((t == STT_OBJECT && s.st_size) || t == STT_FUNC || t == STT_GNU_IFUNC))
			continue;
		name = elf_strptr(elf, sh.sh_link, s.st_name);
		if (!name || !*name)
			continue;
		l = strlen(name) + 1;
		if (str_used + l > str_bytes)
			break;
		memcpy(e->strings + str_used, name, l);
		e->syms[e->nr_syms++] = (struct pm_sym){ e->strings + str_used, s.st_value,
							 s.st_size, t != STT_OBJECT };
		str_used += l;
	}
	qsort(e->syms, e->nr_syms, sizeof(*e->syms), sym_cmp);
out:
	if (elf)
		elf_end(elf);
	close(fd);
	if (ret)
		pm_elf_free(e);
	return ret;
}

void pm_elf_free(struct pm_elf *e)
{
	free(e->syms);
	free(e->strings);
	memset(e, 0, sizeof(*e));
}

const struct pm_sym *pm_elf_func(const struct pm_elf *e, const char *name)
{
	const struct pm_sym *best = NULL;

	for (uint32_t i = 0; i < e->nr_syms; i++) {
		const struct pm_sym *s = &e->syms[i];

		if (!s->func || strcmp(s->name, name))
			continue;
		if (!best || s->sz_bytes > best->sz_bytes)
			best = s;
	}
	return best;
}

uint64_t pm_elf_file_offset(const struct pm_elf *e, uint64_t vaddr)
{
	for (uint32_t i = 0; i < e->nr_segs; i++) {
		const struct pm_seg *g = &e->segs[i];

		if (vaddr >= g->vaddr && vaddr < g->vaddr + g->filesz)
			return vaddr - g->vaddr + g->offset;
	}
	return UINT64_MAX;
}

uint64_t pm_elf_bias(const struct pm_elf *e, uint64_t map_start, uint64_t map_offset)
{
	/* the segment whose page-aligned file offset is this mapping's offset */
	for (uint32_t i = 0; i < e->nr_segs; i++) {
		const struct pm_seg *g = &e->segs[i];
		uint64_t page_off = g->offset & ~0xfffull, page_va = g->vaddr & ~0xfffull;

		if (page_off == map_offset)
			return map_start - page_va;
	}
	if (e->type == ET_EXEC)
		return 0;
	return map_start - map_offset;
}
