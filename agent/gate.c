/*
 * gate.c - libameba-gate.so: holds a program started by `ameba run` at the
 * door of main() until the agent has attached and armed its first
 * experiment, so that short programs are measured from their first line.
 *
 * `ameba run` starts the target with LD_PRELOAD=<this library> and
 * AMEBA_GATE_FD=<the read end of a pipe>. The library interposes
 * __libc_start_main and runs main() behind gate_main(): it reads one byte
 * from the pipe (the agent writes it once armed, or the pipe reaches end of
 * file when the agent gives up or dies), closes the fd, and removes both
 * variables from the environment, so the program and its children see the
 * environment they were given. Constructors (the ameba runtime's, which
 * opens the MRI socket) have all run by then.
 *
 * Without AMEBA_GATE_FD the library does nothing. It allocates nothing
 * and prints nothing: the target's output stays its own.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int (*gate_main_fn)(int, char **, char **);
typedef int (*gate_start_fn)(gate_main_fn, int, char **, void (*)(void), void (*)(void),
			     void (*)(void), void *);

static gate_main_fn gate_real_main;

/* Removes this library's path (AMEBA_GATE_LIB) from LD_PRELOAD, in place. */
static void gate_clean_preload(void)
{
	const char *lib = getenv("AMEBA_GATE_LIB");
	char *pre = getenv("LD_PRELOAD");
	size_t n;

	if (!lib || !pre)
		goto out;
	n = strlen(lib);
	if (!strcmp(pre, lib))
		unsetenv("LD_PRELOAD");
	else if (!strncmp(pre, lib, n) && (pre[n] == ':' || pre[n] == ' '))
		memmove(pre, pre + n + 1, strlen(pre + n + 1) + 1);
out:
	unsetenv("AMEBA_GATE_LIB");
}

static int gate_main(int argc, char **argv, char **envp)
{
	const char *v = getenv("AMEBA_GATE_FD");

	if (v) {
		int fd = atoi(v);
		char c;

		while (read(fd, &c, 1) < 0 && errno == EINTR)
			;
		close(fd);
		unsetenv("AMEBA_GATE_FD");
		gate_clean_preload();
	}
	return gate_real_main(argc, argv, envp);
}

__attribute__((visibility("default"))) int
__libc_start_main(gate_main_fn main_fn, int argc, char **argv, void (*init)(void),
		  void (*fini)(void), void (*rtld_fini)(void), void *stack_end)
{
	gate_start_fn real;

	*(void **)&real = dlsym(RTLD_NEXT, "__libc_start_main");
	if (!real)
		_exit(127);
	if (!getenv("AMEBA_GATE_FD"))
		return real(main_fn, argc, argv, init, fini, rtld_fini, stack_end);
	gate_real_main = main_fn;
	return real(gate_main, argc, argv, init, fini, rtld_fini, stack_end);
}
