/*
 * cc.c - `ameba cc` / `ameba c++`: the compiler wrapper.
 *
 * Compiles with the ThreadSanitizer instrumentation ABI (-fsanitize=thread),
 * debug info and frame pointers, and links executables with libameba-rt
 * instead of the compiler's libtsan. Every other argument passes through in
 * its original order.
 *
 * How libtsan is kept out of the link:
 *   gcc   - its link spec adds libtsan_preinit.o (searched in -B prefixes) and
 *           -ltsan (searched in -L directories). We put our shim directory
 *           first in both; it holds an empty object and an empty linker script.
 *   clang - -fno-sanitize-link-runtime.
 * The runtime archive is then appended whole (its interposers of malloc,
 * memcpy, pthread_create... must all be present), with a dynamic list so that
 * DSOs and libc bind to the executable's definitions.
 *
 * Shared libraries (-shared) get the instrumentation but no runtime: they
 * bind to the runtime of the instrumented executable that loads them.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"

enum cc_mode { CC_LINK_EXE, CC_LINK_SHARED, CC_NO_LINK, CC_QUERY };

/*
 * gcc builtins that write or copy memory and that gcc expands or folds
 * into inline stores (strcpy of a constant, mempcpy, bzero...) unless told
 * not to. Their calls reach the runtime's interposers (monitor/intercept.c).
 * Builtins that only compute a value (strlen or strcmp of constants) stay:
 * folded, they access no memory at run time either.
 */
static const char *const gcc_no_builtin[] = {
	"-fno-builtin-memcpy", "-fno-builtin-memset", "-fno-builtin-memmove",
	"-fno-builtin-bzero", "-fno-builtin-bcopy", "-fno-builtin-mempcpy",
	"-fno-builtin-strcpy", "-fno-builtin-stpcpy", "-fno-builtin-strncpy",
	"-fno-builtin-stpncpy", "-fno-builtin-strcat", "-fno-builtin-strncat",
};

struct argv_buf {
	char **v;
	int nr, cap;
};

/* Whether the file of ameba's build at path is missing (said on stderr:
 * what it is, and how to make it). */
static int missing(const char *sub, const char *what, const char *path)
{
	if (!access(path, R_OK))
		return 0;
	fprintf(stderr, "ameba %s: %s %s is missing (%s); build ameba first (cmake --build build)\n",
		sub, what, path, strerror(errno));
	return 1;
}

static int argv_push(struct argv_buf *a, const char *s)
{
	if (a->nr + 2 > a->cap) {
		int cap = a->cap ? a->cap * 2 : 64;
		char **v = realloc(a->v, (size_t)cap * sizeof(*v));

		if (!v)
			return -1;
		a->v = v;
		a->cap = cap;
	}
	a->v[a->nr] = strdup(s);
	if (!a->v[a->nr])
		return -1;
	a->nr++;
	a->v[a->nr] = NULL;
	return 0;
}

/* Does an argument of the user's mention opt (an -mllvm option the user
 * chose, which then wins over our default)? */
static int user_sets(const struct argv_buf *a, const char *opt)
{
	for (int i = 0; i < a->nr; i++)
		if (strstr(a->v[i], opt))
			return 1;
	return 0;
}

/*
 * The dual path's plugin for this compiler family in libdir (gcc:
 * monitor/dual/dual_gcc.cc, clang: dual_llvm.cc) and the compiler version it
 * was built for, in ver (-1: there is none).
 */
static int dual_plugin(const char *libdir, int clang, char *path, size_t len, char *ver,
		       size_t vlen)
{
	const char *name = clang ? "ameba_dual_llvm" : "ameba_dual_gcc";
	char vpath[PATH_MAX + 32];
	FILE *f;

	ver[0] = 0;
	snprintf(path, len, "%s/%s.so", libdir, name);
	snprintf(vpath, sizeof(vpath), "%s/%s.version", libdir, name);
	if (access(path, R_OK) || !(f = fopen(vpath, "r")))
		return -1;
	if (!fgets(ver, (int)vlen, f))
		ver[0] = 0;
	fclose(f);
	ver[strcspn(ver, "\n")] = 0;
	return ver[0] ? 0 : -1;
}

/*
 * Is compiler `cc` of version `ver`? gcc: its -dumpfullversion, exactly (a
 * gcc plugin is tied to one cc1 build); clang: the major version of its
 * -dumpversion (LLVM's pass plugin API holds within a major version).
 */
static int compiler_version_is(const char *cc, int clang, const char *ver)
{
	char cmd[PATH_MAX + 64], line[128] = "";
	FILE *p;

	snprintf(cmd, sizeof(cmd), "'%s' %s 2>/dev/null", cc,
		 clang ? "-dumpversion" : "-dumpfullversion");
	if (!(p = popen(cmd, "r")))
		return 0;
	if (!fgets(line, sizeof(line), p))
		line[0] = 0;
	pclose(p);
	line[strcspn(line, "\n")] = 0;
	if (clang)
		line[strcspn(line, ".")] = 0;
	return !strcmp(line, ver);
}

static void cc_usage(FILE *f, const char *sub)
{
	char libdir[PATH_MAX], path[PATH_MAX + 32], gver[64] = "", lver[64] = "";
	int have = !agent_libdir(libdir, sizeof(libdir));
	int gcc_dual = have && !dual_plugin(libdir, 0, path, sizeof(path), gver, sizeof(gver));
	int clang_dual = have && !dual_plugin(libdir, 1, path, sizeof(path), lver, sizeof(lver));

	fprintf(f,
		"usage: ameba %s [--compiler CC] [--ameba-verbose] COMPILER-ARGS...\n"
		"\n"
		"Compiles and links like the compiler it wraps, adding ameba's access\n"
		"instrumentation (-fsanitize=thread -g -fno-omit-frame-pointer) and, when\n"
		"linking an executable, the ameba runtime (libameba-rt) instead of libtsan.\n"
		"All other arguments pass through unchanged: -c, -o, -shared -fPIC,\n"
		"-fopenmp, -pthread, multi-file builds.\n"
		"\n"
		"  --compiler CC     compiler to run (default: $%s, else %s); gcc and clang\n"
		"                    families are supported\n"
		"  --ameba-verbose   print the compiler command line before running it\n"
		"  --ameba-single-path\n"
		"                    one instrumented body per function (no dual path)\n"
		"  --ameba-help      this text (plain --help goes to the compiler)\n"
		"\n"
		"Dual path (docs/dual-path.md): each function gets a clean body besides\n"
		"the instrumented one and runs it while no analysis is attached: native\n"
		"speed, vectorised loops. Attaching switches at the next call or loop\n"
		"iteration (gcc: of an outermost loop or one holding others; a flat\n"
		"loop whose count gcc knows at entry, every 4,096 iterations). Built for\n"
		"this ameba: gcc %s, clang %s; other versions, -flto, and gcc's -O0\n"
		"and -Og build one path, as before.\n"
		"\n"
		"Environment: AMEBA_LIBDIR overrides where the runtime is looked up\n"
		"(default: <prefix>/lib/ameba next to this ameba's bin/);\n"
		"AMEBA_CC_DUAL=0 is --ameba-single-path.\n"
		"For build systems that cannot use a wrapper: pkg-config ameba-rt\n"
		"(<libdir>/pkgconfig/ameba-rt.pc).\n",
		sub, strcmp(sub, "c++") == 0 ? "CXX" : "CC",
		strcmp(sub, "c++") == 0 ? "g++" : "gcc",
		gcc_dual ? gver : "none (no gcc plugin headers when ameba was built)",
		clang_dual ? lver : "none (no llvm-14-dev when ameba was built)");
}

/* Is `cc` a clang driver? By name first, then by asking it. */
static int compiler_is_clang(const char *cc)
{
	const char *base = strrchr(cc, '/');
	char cmd[PATH_MAX + 64], line[256];
	FILE *p;
	int clang = 0;

	base = base ? base + 1 : cc;
	if (strstr(base, "clang"))
		return 1;
	if (strstr(base, "gcc") || strstr(base, "g++"))
		return 0;
	/* cc, c++, or a custom name: ask the driver itself. */
	snprintf(cmd, sizeof(cmd), "'%s' --version 2>/dev/null", cc);
	p = popen(cmd, "r");
	if (!p)
		return 0;
	while (fgets(line, sizeof(line), p))
		if (strstr(line, "clang"))
			clang = 1;
	pclose(p);
	return clang;
}

static enum cc_mode classify(int argc, char **argv)
{
	enum cc_mode mode = CC_LINK_EXE;
	int nr_inputs = 0;

	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "-c") || !strcmp(a, "-S") || !strcmp(a, "-E") ||
		    !strcmp(a, "-M") || !strcmp(a, "-MM") || !strcmp(a, "-fsyntax-only"))
			return CC_NO_LINK;
		if (!strcmp(a, "-shared") || !strcmp(a, "-r"))
			mode = CC_LINK_SHARED;
		if (a[0] != '-')
			nr_inputs++;
		/* options whose value is a separate argument */
		if ((!strcmp(a, "-o") || !strcmp(a, "-x") || !strcmp(a, "-I") || !strcmp(a, "-L") ||
		     !strcmp(a, "-D") || !strcmp(a, "-U") || !strcmp(a, "-include") ||
		     !strcmp(a, "-isystem") || !strcmp(a, "-MF") || !strcmp(a, "-MT") ||
		     !strcmp(a, "-MQ") || !strcmp(a, "-Xlinker") || !strcmp(a, "-l")) &&
		    i + 1 < argc)
			i++;
	}
	if (nr_inputs == 0)
		return CC_QUERY;
	return mode;
}

int agent_cmd_cc(int argc, char **argv, int cxx)
{
	const char *sub = cxx ? "c++" : "cc";
	const char *compiler = getenv(cxx ? "CXX" : "CC");
	char libdir[PATH_MAX], path[PATH_MAX + 64];
	struct argv_buf out = { 0 }, user = { 0 };
	int verbose = 0, clang, single = 0;
	enum cc_mode mode;

	if (!compiler || !*compiler)
		compiler = cxx ? "g++" : "gcc";

	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--compiler") || !strncmp(a, "--compiler=", 11)) {
			if (a[10] == '=') {
				compiler = a + 11;
			} else if (i + 1 < argc) {
				compiler = argv[++i];
			} else {
				fprintf(stderr, "ameba %s: --compiler needs a value, e.g. --compiler clang\n", sub);
				return 2;
			}
		} else if (!strcmp(a, "--ameba-verbose")) {
			verbose = 1;
		} else if (!strcmp(a, "--ameba-single-path")) {
			single = 1;
		} else if (!strcmp(a, "--ameba-help")) {
			cc_usage(stdout, sub);
			return 0;
		} else if (!strcmp(a, "-static")) {
			fprintf(stderr, "ameba %s: -static is not supported: the ameba runtime needs the "
				"dynamic loader (dlsym, dl_iterate_phdr); drop -static\n", sub);
			return 2;
		} else if (argv_push(&user, a)) {
			goto nomem;
		}
	}
	if (user.nr == 0) {
		cc_usage(stderr, sub);
		return 2;
	}

	mode = classify(user.nr, user.v);
	clang = compiler_is_clang(compiler);
	if (agent_libdir(libdir, sizeof(libdir))) {
		fprintf(stderr, "ameba %s: cannot find the ameba runtime directory (lib/ameba next to "
			"the ameba binary); set AMEBA_LIBDIR to the directory holding libameba-rt.a\n", sub);
		return 2;
	}

	if (argv_push(&out, compiler))
		goto nomem;
	if (mode != CC_QUERY) {
		/* Ours first, so that the user's own -g level or -O win where they clash. */
		if (argv_push(&out, "-fsanitize=thread") || argv_push(&out, "-g") ||
		    argv_push(&out, "-fno-omit-frame-pointer"))
			goto nomem;
		/*
		 * gcc expands string and memory builtins inline after its tsan
		 * pass, so those accesses would reach no hook: bzero at any size
		 * and -O level into rep stos, strcpy of a constant into stores,
		 * __builtin_memset and aggregate fills/copies into rep stos/movs.
		 * Keeping them as calls lets the runtime's interposers count them
		 * (clang's tsan pass already turns its memory intrinsics into
		 * calls). See docs/ameba-cc.md for what each flag covers.
		 */
		if (!clang)
			for (size_t i = 0; i < sizeof(gcc_no_builtin) / sizeof(gcc_no_builtin[0]); i++)
				if (argv_push(&out, gcc_no_builtin[i]))
					goto nomem;
#if defined(__x86_64__) || defined(__i386__)
		/*
		 * What gcc still expands (explicit __builtin_mem*, the fills and
		 * copies of aggregates, structs passed by value) becomes a call to
		 * memset/memcpy above the size it moves by plain stores: never a
		 * rep string instruction. Where gcc also instruments the aggregate
		 * (__tsan_{read,write}_range), the runtime counts the pair once.
		 */
		if (!clang && argv_push(&out, "-mstringop-strategy=libcall"))
			goto nomem;
#endif
		/*
		 * clang drops the read of a read-modify-write (x += y) when the same
		 * location is written later in the basic block: a race detector
		 * needs only the write, a profiler needs both. And without cmpxchg16b
		 * it sends 16-byte atomics to libatomic, past the hooks.
		 */
		/*
		 * The dual path (docs/dual-path.md): the plugin for this compiler
		 * family, into the version it was built for only; not with -flto,
		 * where the sanitizer runs at link time.
		 */
		if (!single && !user_sets(&user, "-flto")) {
			const char *e = getenv("AMEBA_CC_DUAL");
			char ver[64];

			if (!(e && !strcmp(e, "0")) &&
			    !dual_plugin(libdir, clang, path, sizeof(path), ver, sizeof(ver)) &&
			    compiler_version_is(compiler, clang, ver)) {
				char opt[PATH_MAX + 80];

				snprintf(opt, sizeof(opt), "%s=%s",
					 clang ? "-fpass-plugin" : "-fplugin", path);
				if (argv_push(&out, opt))
					goto nomem;
			}
		}
		if (clang && !user_sets(&user, "-tsan-compound-read-before-write") &&
		    (argv_push(&out, "-mllvm") ||
		     argv_push(&out, "-tsan-instrument-read-before-write=1")))
			goto nomem;
#if defined(__x86_64__)
		if (clang && argv_push(&out, "-mcx16"))
			goto nomem;
#endif
	}
	for (int i = 0; i < user.nr; i++)
		if (argv_push(&out, user.v[i]))
			goto nomem;
	/*
	 * After the user's arguments, so that it wins over -D_FORTIFY_SOURCE
	 * and -Wp,-D_FORTIFY_SOURCE alike: the fortified headers call
	 * __builtin___memcpy_chk & co., which both compilers expand inline
	 * past the instrumentation or send to libc's __*_chk, where the access
	 * is not seen. A correct program behaves the same without the checks.
	 */
	if (mode != CC_QUERY && argv_push(&out, "-Wp,-U_FORTIFY_SOURCE"))
		goto nomem;

	if (mode == CC_LINK_EXE || mode == CC_LINK_SHARED) {
		if (clang) {
			if (argv_push(&out, "-fno-sanitize-link-runtime"))
				goto nomem;
		} else {
			snprintf(path, sizeof(path), "-B%s/gcc-shim/", libdir);
			if (argv_push(&out, path))
				goto nomem;
			snprintf(path, sizeof(path), "-L%s/gcc-shim", libdir);
			if (argv_push(&out, path))
				goto nomem;
		}
	}
	if (mode == CC_LINK_EXE) {
		/* without the shim's start-up object gcc's link spec finds gcc's
		 * own libtsan_preinit.o, which calls __tsan_init from
		 * .preinit_array: the program links and runs, but writes no oracle
		 * (seen with a build tree whose ameba-rt-shim target was not built) */
		snprintf(path, sizeof(path), "%s/gcc-shim/libtsan_preinit.o", libdir);
		if (!clang && missing(sub, "gcc start-up shim", path))
			return 2;
		snprintf(path, sizeof(path), "%s/libameba-rt.a", libdir);
		if (missing(sub, "runtime", path))
			return 2;
		if (argv_push(&out, "-pthread") || argv_push(&out, "-Wl,--whole-archive") ||
		    argv_push(&out, path) || argv_push(&out, "-Wl,--no-whole-archive"))
			goto nomem;
		snprintf(path, sizeof(path), "-Wl,--dynamic-list=%s/ameba-rt.dynlist", libdir);
		if (argv_push(&out, path))
			goto nomem;
		static const char *const deps[] = { "-ldw", "-lelf", "-ldl", "-lpthread", "-lm" };
		for (size_t i = 0; i < sizeof(deps) / sizeof(deps[0]); i++)
			if (argv_push(&out, deps[i]))
				goto nomem;
	}

	if (verbose || getenv("AMEBA_CC_VERBOSE")) {
		for (int i = 0; i < out.nr; i++)
			fprintf(stderr, "%s%s", i ? " " : "", out.v[i]);
		fputc('\n', stderr);
	}
	fflush(NULL);
	execvp(out.v[0], out.v);
	fprintf(stderr, "ameba %s: cannot run compiler '%s': %s (choose one with --compiler or $%s)\n",
		sub, out.v[0], strerror(errno), cxx ? "CXX" : "CC");
	return 127;
nomem:
	fprintf(stderr, "ameba %s: out of memory\n", sub);
	return 2;
}
