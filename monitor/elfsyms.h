/*
 * elfsyms.h - what the object map needs from one ELF file: its data symbols,
 * its executable PT_LOAD segments and whether it was built with the
 * ThreadSanitizer instrumentation (ameba cc).
 *
 * Addresses are link-time values (st_value, p_vaddr): add the module's load
 * bias (dl_phdr_info.dlpi_addr) to get run-time addresses.
 *
 * Everything is allocated with mon_malloc(); libelf itself calls malloc, so
 * mon_elfsyms_read() raises mon_self->in_rt around its libelf calls.
 */
#ifndef AMEBA_ELFSYMS_H
#define AMEBA_ELFSYMS_H

#include <stddef.h>
#include <stdint.h>

#include "mon.h"

struct mon_elfsym {
	const char *name;	/* points into mon_elfsyms.strings */
	uintptr_t value;	/* st_value (link-time address, or TLS offset) */
	size_t sz_bytes;	/* st_size */
	uint8_t type;		/* STT_OBJECT or STT_TLS */
	uint8_t bind;		/* STB_LOCAL, STB_GLOBAL, STB_WEAK, ... */
	uint8_t rt_unit;	/* local symbol of a runtime translation unit (see below) */
	uint8_t pad;
};

struct mon_elfseg {
	uintptr_t vaddr;	/* p_vaddr */
	size_t memsz;		/* p_memsz */
};

enum mon_elfsyms_flags {
	MON_ELFSYMS_SYMTAB = 1u << 0,	/* symbols from .symtab (else .dynsym) */
	MON_ELFSYMS_TSAN_REF = 1u << 1,	/* has an undefined __tsan_* symbol */
	MON_ELFSYMS_TSAN_INIT = 1u << 2, /* defines __tsan_init (runtime linked in) */
};

#define MON_ELFSYMS_MAX_SEGS 8

struct mon_elfsyms {
	uint16_t elf_type;	/* ET_EXEC, ET_DYN */
	unsigned flags;		/* enum mon_elfsyms_flags */
	uint32_t nr_syms;
	struct mon_elfsym *syms;	/* defined, sized or not, in file order */
	uint32_t nr_segs;
	struct mon_elfseg segs[MON_ELFSYMS_MAX_SEGS];	/* PT_LOAD with PF_X */
	char *strings;		/* one block holding every name */
};

/*
 * Reads path. Returns 0 and fills *es (release with mon_elfsyms_free), or
 * AMEBA_ENOENT (cannot open), AMEBA_EPROTO (not ELF), AMEBA_ENOMEM; then *es
 * is zeroed.
 *
 * Local symbols of the runtime's own translation units are marked rt_unit:
 * every file that includes mon.h defines the local MON_RT_UNIT_MARKER symbol,
 * and the linker keeps each object's local symbols together after its
 * STT_FILE symbol, so the marker tags the whole group.
 */
int mon_elfsyms_read(const char *path, struct mon_elfsyms *es) MON_HIDDEN;
void mon_elfsyms_free(struct mon_elfsyms *es) MON_HIDDEN;

#endif /* AMEBA_ELFSYMS_H */
