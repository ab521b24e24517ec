/*
 * guard.c - a plugin's fault does not take the agent down.
 *
 * Notes:
 *  - C property and strategy plugins run in the agent's process. A call
 *    into one is made under a guard: the synchronous fault signals
 *    (SIGSEGV, SIGBUS, SIGFPE, SIGILL) get a handler that jumps back to
 *    the guard with siglongjmp, the caller disables the plugin with a
 *    message naming the signal, and the run goes on to its report.
 *  - Chosen over a forked evaluator: a property is evaluated on every
 *    context of every interval (thousands of calls a run, each a few
 *    microseconds), and a fork per call, or a second process holding the
 *    contexts, would cost more than the evaluation. The guard costs eight
 *    sigaction calls and a saved signal mask per call (a few microseconds).
 *  - What a crashed plugin may have left behind (a lock it held, memory it
 *    corrupted) stays: the guard saves the run's results, not the plugin.
 *    The agent evaluates on one thread, so one guard at a time.
 *  - The handlers run on an alternate signal stack, so that a plugin that
 *    overflows its stack is caught too.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "ameba/ameba.h"

static const int guard_sigs[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL };
#define NR_GUARD_SIGS (sizeof(guard_sigs) / sizeof(guard_sigs[0]))

static sigjmp_buf guard_jmp;
static volatile sig_atomic_t guard_sig;
static void *alt_stack;

static void guard_handler(int sig)
{
	guard_sig = sig;
	siglongjmp(guard_jmp, 1);
}

int agent_guard_call(int (*fn)(void *arg), void *arg, int *sig)
{
	struct sigaction sa, old[NR_GUARD_SIGS];
	volatile int rc = 0;

	*sig = 0;
	if (!alt_stack && (alt_stack = malloc(AGENT_GUARD_STACK))) {
		stack_t ss = { .ss_sp = alt_stack, .ss_size = AGENT_GUARD_STACK, .ss_flags = 0 };

		if (sigaltstack(&ss, NULL)) {
			free(alt_stack);
			alt_stack = NULL;
		}
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = guard_handler;
	sa.sa_flags = SA_NODEFER | (alt_stack ? SA_ONSTACK : 0);
	sigemptyset(&sa.sa_mask);
	guard_sig = 0;
	for (size_t i = 0; i < NR_GUARD_SIGS; i++)
		sigaction(guard_sigs[i], &sa, &old[i]);
	if (sigsetjmp(guard_jmp, 1) == 0)
		rc = fn(arg);
	for (size_t i = 0; i < NR_GUARD_SIGS; i++)
		sigaction(guard_sigs[i], &old[i], NULL);
	if (guard_sig) {
		*sig = guard_sig;
		return AMEBA_EIO;
	}
	return rc;
}
