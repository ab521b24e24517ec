/*
 * fuzz_asl.c - libFuzzer target: the ASL compiler (agent/asl.c,
 * agent/asl_parse.c) on arbitrary property files. A file either compiles
 * or is refused with a "path:LINE:COL: ..." message; nothing else may
 * happen (no crash, leak, overflow or undefined behaviour under ASan and
 * UBSan). What compiles is Lua text for the property sandbox: it must be
 * a NUL-terminated string.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "asl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct asl_unit u;
	char msg[512];
	int rc;

	memset(&u, 0, sizeof(u));
	rc = asl_compile("fuzz.asl", (const char *)data, size, &u, msg, sizeof(msg));
	if (rc) {
		/* a refusal names the file and a position */
		if (strncmp(msg, "fuzz.asl", 8))
			__builtin_trap();
		return 0;
	}
	for (uint32_t i = 0; i < u.nr_props; i++)
		if (!u.props[i].name || !u.props[i].lua || strlen(u.props[i].lua) == 0)
			__builtin_trap();
	asl_unit_free(&u);
	return 0;
}
