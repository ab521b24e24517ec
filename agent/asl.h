/*
 * asl.h - the ASL front-end: properties written in the APART Specification
 * Language style of seed 004 §4, compiled to the Lua property form
 * (docs/writing-properties.md) when they are loaded. docs/asl.md is the
 * language reference.
 *
 * A .asl file holds one or more properties; each compiles to one Lua chunk
 * that returns one property table, which the agent then loads into a
 * sandboxed state of its own exactly like a .lua file (lua_prop.c). The
 * generated chunk keeps the ASL line numbers: a run-time error in it is
 * reported at the ASL line that caused it.
 */
#ifndef AMEBA_AGENT_ASL_H
#define AMEBA_AGENT_ASL_H

#include <stddef.h>
#include <stdint.h>

/* One compiled property. */
struct asl_prop {
	char *name;		/* the property's name */
	char *lua;		/* the generated chunk (NUL-terminated) */
	size_t lua_len;
	int line;		/* where its `property` keyword is */
};

/* Every property of one file, in file order. */
struct asl_unit {
	struct asl_prop *props;
	uint32_t nr_props;
};

/*
 * Compiles text (len bytes, the contents of path) into out. path is only
 * used in messages. Returns 0, or a negative AMEBA_E* code with msg set to
 * "path:LINE:COL: what was found and what was expected" (AMEBA_EINVAL for
 * a syntax or semantic error; nothing of the file is kept then).
 */
int asl_compile(const char *path, const char *text, size_t len, struct asl_unit *out, char *msg,
		size_t msg_len);

void asl_unit_free(struct asl_unit *u);

#endif
