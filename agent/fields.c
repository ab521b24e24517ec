/*
 * fields.c - the name of the field at a byte offset of a global, from the
 * DWARF of the target's executable: the host's field_name() (plugin.h),
 * with which the words strategy names the words it watches.
 *
 * Notes:
 *  - The executable is read through /proc/PID/exe, so a target started
 *    from a path that is gone since still works. One Dwarf handle per
 *    search, opened at the first call and closed with the search.
 *  - The variable is found by name among the compile units, once: the
 *    type of the last one found is remembered, since a strategy asks for
 *    the fields of one object, word after word.
 *  - Only globals of the executable: a library's global ("name (lib.so)")
 *    and anything else answer -1, as does an executable without DWARF.
 *  - Names: "a", "s.b" (nested struct), "[3].x" (array of structs); the
 *    type is looked at through typedefs and qualifiers.
 */
#include <elfutils/libdw.h>
#include <dwarf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "search.h"

struct agent_fields {
	int32_t pid;
	int fd;
	Dwarf *dbg;
	char *name;		/* the variable found last, and its type */
	Dwarf_Die ty;
	int found;
};

static int die_type(Dwarf_Die *die, Dwarf_Die *out)
{
	Dwarf_Attribute at;

	if (!dwarf_attr_integrate(die, DW_AT_type, &at) || !dwarf_formref_die(&at, out))
		return -1;
	while (dwarf_tag(out) == DW_TAG_typedef || dwarf_tag(out) == DW_TAG_const_type ||
	       dwarf_tag(out) == DW_TAG_volatile_type || dwarf_tag(out) == DW_TAG_atomic_type) {
		Dwarf_Die t;

		if (!dwarf_attr_integrate(out, DW_AT_type, &at) || !dwarf_formref_die(&at, &t))
			return -1;
		*out = t;
	}
	return 0;
}

/* The field of aggregate type ty at byte off into buf ("" when none). */
static void field_at(Dwarf_Die *ty, uint64_t off, char *buf, size_t len, int depth)
{
	Dwarf_Die m, mt;
	int tag = dwarf_tag(ty);

	buf[0] = 0;
	if (depth > 4)
		return;
	if (tag == DW_TAG_array_type) {
		Dwarf_Word esz;
		char sub[192];

		if (die_type(ty, &mt) || dwarf_aggregate_size(&mt, &esz) || !esz)
			return;
		field_at(&mt, off % esz, sub, sizeof(sub), depth + 1);
		snprintf(buf, len, "[%llu]%s%s", (unsigned long long)(off / esz), sub[0] ? "." : "",
			 sub);
		return;
	}
	if ((tag != DW_TAG_structure_type && tag != DW_TAG_union_type) || dwarf_child(ty, &m))
		return;
	do {
		Dwarf_Attribute at;
		Dwarf_Word moff = 0, msz = 0;
		const char *name = dwarf_diename(&m);

		if (dwarf_tag(&m) != DW_TAG_member)
			continue;
		if (dwarf_attr_integrate(&m, DW_AT_data_member_location, &at))
			dwarf_formudata(&at, &moff);
		if (die_type(&m, &mt) || dwarf_aggregate_size(&mt, &msz))
			continue;
		if (off >= moff && off < moff + msz) {
			char sub[192];

			field_at(&mt, off - moff, sub, sizeof(sub), depth + 1);
			snprintf(buf, len, "%s%s%s", name ? name : "?",
				 sub[0] && sub[0] != '[' ? "." : "", sub);
			return;
		}
	} while (!dwarf_siblingof(&m, &m));
}

/* Finds the variable var among the compile units: 0 with f->ty set, or -1. */
static int find_var(struct agent_fields *f, const char *var)
{
	Dwarf_Off off = 0, next;
	size_t hsz;

	while (!dwarf_nextcu(f->dbg, off, &next, &hsz, NULL, NULL, NULL)) {
		Dwarf_Die cu, d;

		if (dwarf_offdie(f->dbg, off + hsz, &cu) && !dwarf_child(&cu, &d)) {
			do {
				const char *name = dwarf_diename(&d);

				if (dwarf_tag(&d) == DW_TAG_variable && name && !strcmp(name, var) &&
				    !die_type(&d, &f->ty))
					return 0;
			} while (!dwarf_siblingof(&d, &d));
		}
		off = next;
	}
	return -1;
}

int agent_fields_name(struct agent_fields **fp, int32_t pid, const char *var, uint64_t off,
		      char *buf, size_t len)
{
	struct agent_fields *f = *fp;

	buf[0] = 0;
	if (!var || !*var || strchr(var, ' ') || pid <= 0)
		return -1;	/* a library's global, "name (lib.so)": not ours to read */
	if (f && f->pid != pid) {
		agent_fields_close(f);
		*fp = f = NULL;
	}
	if (!f) {
		char path[64];

		f = calloc(1, sizeof(*f));
		if (!f)
			return -1;
		f->pid = pid;
		snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
		f->fd = open(path, O_RDONLY | O_CLOEXEC);
		f->dbg = f->fd >= 0 ? dwarf_begin(f->fd, DWARF_C_READ) : NULL;
		*fp = f;
	}
	if (!f->dbg)
		return -1;
	if (!f->name || strcmp(f->name, var)) {
		free(f->name);
		f->name = strdup(var);
		f->found = f->name && !find_var(f, var);
	}
	if (!f->found)
		return -1;
	field_at(&f->ty, off, buf, len, 0);
	return buf[0] ? 0 : -1;
}

void agent_fields_close(struct agent_fields *f)
{
	if (!f)
		return;
	if (f->dbg)
		dwarf_end(f->dbg);
	if (f->fd >= 0)
		close(f->fd);
	free(f->name);
	free(f);
}
