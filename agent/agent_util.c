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

size_t agent_escape_one(const unsigned char *p, size_t n, char out[8])
{
	if (n >= 2 && p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f) {
		snprintf(out, 8, "\\u00%02x", p[1]);
		return 2;
	}
	if (n >= 1 && (p[0] < 0x20 || p[0] == 0x7f)) {
		snprintf(out, 8, "\\x%02x", p[0]);
		return 1;
	}
	return 0;
}

const char *agent_escape(const char *s, char *buf, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t o = 0, n = strlen(s), k;
	char e[8];

	if (!len)
		return buf;
	while (*p && o + 7 < len) {
		if ((k = agent_escape_one(p, n - (size_t)(p - (const unsigned char *)s), e))) {
			o += (size_t)snprintf(buf + o, len - o, "%s", e);
			p += k;
		} else {
			buf[o++] = (char)*p++;
		}
	}
	buf[o] = '\0';
	return buf;
}
