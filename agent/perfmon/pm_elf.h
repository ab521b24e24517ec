/*
 * pm_elf.h - the ELF facts the out-of-process monitor needs from one mapped
 * file: data symbols (globals with names and sizes), function symbols (for
 * uprobes on the malloc family) and the PT_LOAD segments (to turn a
 * link-time address into a file offset or a run-time address).
 */
#ifndef AMEBA_PERFMON_ELF_H
#define AMEBA_PERFMON_ELF_H

#include <stddef.h>
#include <stdint.h>

struct pm_sym {
	const char *name;	/* into pm_elf.strings */
	uint64_t value;		/* st_value, link-time */
	uint64_t sz_bytes;
	int func;		/* STT_FUNC / STT_GNU_IFUNC, else STT_OBJECT */
};

struct pm_seg {
	uint64_t vaddr, offset, filesz, memsz;
	uint32_t flags;		/* PF_R | PF_W | PF_X */
};

struct pm_elf {
	int type;		/* ET_EXEC or ET_DYN */
	uint32_t nr_syms;
	struct pm_sym *syms;	/* sorted by value */
	uint32_t nr_segs;
	struct pm_seg segs[16];	/* PT_LOAD in file order */
	char *strings;
};

/* Reads path: 0, or -errno (file) / -EINVAL (not ELF); *e zeroed then. */
int pm_elf_read(const char *path, struct pm_elf *e);
void pm_elf_free(struct pm_elf *e);

/* The function symbol named name, or NULL. */
const struct pm_sym *pm_elf_func(const struct pm_elf *e, const char *name);

/* The file offset of link-time address vaddr, or UINT64_MAX (uprobe
 * offsets are file offsets). */
uint64_t pm_elf_file_offset(const struct pm_elf *e, uint64_t vaddr);

/* The load bias of a file mapped with its offset-0 page at map_start. */
uint64_t pm_elf_bias(const struct pm_elf *e, uint64_t map_start, uint64_t map_offset);

#endif
