/*
 * agent_util.c - small helpers shared by the subcommands and the agent core.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent.h"

/* Reads a whole file; NULL with errno set on failure. */
char *agent_read_file(const char *path, size_t *len_out)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t len = 0, cap = 0, n;

	if (!f)
		return NULL;
	do {
		if (len + 65536 + 1 > cap) {
			char *nb;

			cap = cap ? cap * 2 : 131072;
			nb = realloc(buf, cap);
			if (!nb) {
				free(buf);
				fclose(f);
				errno = ENOMEM;
				return NULL;
			}
			buf = nb;
		}
		n = fread(buf + len, 1, 65536, f);
		len += n;
	} while (n > 0);
	if (ferror(f)) {
		free(buf);
		fclose(f);
		errno = EIO;
		return NULL;
	}
	fclose(f);
	buf[len] = '\0';
	if (len_out)
		*len_out = len;
	return buf;
}

int agent_libdir(char *buf, size_t len)
{
	const char *env = getenv("AMEBA_LIBDIR");
	char exe[PATH_MAX];
	ssize_t n;
	char *slash;
	struct stat st;

	if (env && *env) {
		snprintf(buf, len, "%s", env);
		return 0;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return -1;
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (!slash)
		return -1;
	*slash = '\0';		/* .../bin */
	snprintf(buf, len, "%s/../lib/ameba", exe);
	if (stat(buf, &st) || !S_ISDIR(st.st_mode))
		return -1;
	return 0;
}

const char *agent_escape(const char *s, char *buf, size_t len)
{
	size_t o = 0;

	if (!len)
		return buf;
	for (const unsigned char *p = (const unsigned char *)s; *p && o + 7 < len; p++) {
		if (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f)
			o += (size_t)snprintf(buf + o, len - o, "\\u00%02x", *++p);
		else if (*p < 0x20 || *p == 0x7f)
			o += (size_t)snprintf(buf + o, len - o, "\\x%02x", *p);
		else
			buf[o++] = (char)*p;
	}
	buf[o] = '\0';
	return buf;
}
