/*
 * agent.h - internal interfaces of the `ameba` command.
 */
#ifndef AMEBA_AGENT_H
#define AMEBA_AGENT_H

#include <stddef.h>

/* Subcommands; each returns the process exit status. */
int agent_cmd_cc(int argc, char **argv, int cxx);
int agent_cmd_list(int argc, char **argv);
int agent_cmd_geometry(int argc, char **argv);
int agent_list_presets(void);
int agent_cmd_calibrate(int argc, char **argv);	/* calibrate.c */

/*
 * whatif.c: for the first max_fixes findings of report root whose property
 * has a mechanical fix (FalseSharing: padding), simulates cmd again as it
 * is and with the fix (AMEBA_WHATIF) and adds "what_if" and
 * "predicted_speedup" to each. Returns how many it tried.
 */
struct cJSON;
int agent_whatif_apply(struct cJSON *root, char **cmd, int max_fixes, int quiet);
int agent_cmd_oracle(int argc, char **argv);
int agent_cmd_run(int argc, char **argv);	/* run_cmd.c */
int agent_cmd_attach(int argc, char **argv);	/* run_cmd.c */
int agent_cmd_report(int argc, char **argv);	/* report_cmd.c */
int agent_cmd_mri(int argc, char **argv);	/* cmd_mri.c */

/*
 * guard.c: fn(arg) under a guard against its faults. Returns fn's result,
 * or AMEBA_EIO with *sig the signal (SIGSEGV, SIGBUS, SIGFPE, SIGILL) when
 * fn faulted; *sig is 0 otherwise. One thread at a time.
 */
#define AGENT_GUARD_STACK (64 * 1024)
int agent_guard_call(int (*fn)(void *arg), void *arg, int *sig);

/* s with its control characters escaped (\xNN; \u00NN for the C1
 * controls in UTF-8), cut to fit buf: for printing names a file or a
 * program gave. Returns buf. */
const char *agent_escape(const char *s, char *buf, size_t len);
/* The one rule of both: the escape of the character at p (n bytes left)
 * into out, and how many bytes it stands for; 0 when it prints as is. */
size_t agent_escape_one(const unsigned char *p, size_t n, char out[8]);

/* Reads a whole file into a NUL-terminated buffer; NULL with errno set. */
char *agent_read_file(const char *path, size_t *len_out);

/* The directory holding libameba-rt.a and the shims: $AMEBA_LIBDIR, else
 * <dir of this executable>/../lib/ameba. 0 or -1. */
int agent_libdir(char *buf, size_t len);

#endif
