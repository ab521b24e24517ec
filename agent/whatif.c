/*
 * whatif.c - a finding's predicted speedup, by simulating the program again
 * with the fix applied virtually (docs/whatif.md).
 *
 * Notes:
 * - Only `ameba run` (the agent can start the program again) and only a
 *   target that exited with status 0 (the same input gives the same run).
 * - Two more simulated runs at least: the program as it is, and one per
 *   finding with a mechanical fix (table below), each with AMEBA_ORACLE so
 *   the runtime writes est_runtime_cycles (the simulated run time: the
 *   largest thread clock in ordered mode) at exit, and with AMEBA_MRI=0 (no
 *   agent). predicted_speedup = cycles as it is / cycles with the fix.
 * - The runs are sequential and silent (stdin, stdout and stderr of the
 *   program to /dev/null); a run that fails leaves its finding without a
 *   prediction, and the report says why in the finding's what_if.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "agent.h"

/*
 * property -> the fix the runtime can simulate (AMEBA_WHATIF kind), and
 * what to try when that kind finds nothing to fix: transpose and rowpad
 * learn the object's row stride from the run (docs/whatif.md) and may find
 * no strided walk; TLBThrashing then falls back to 2 MiB pages, HotObject
 * has no mechanical fix (no prediction). min_stride: the learnt stride
 * must exceed it (HotObject: a walk that skips lines, not one that steps
 * a line at a time, which is a structure-splitting question).
 */
static const struct fix {
	const char *property;
	const char *kind;
	const char *fix;
	const char *fallback;	/* kind if kind's walk is not found, or NULL */
	const char *fallback_fix;
	unsigned min_stride;
} fixes[] = {
	{ "FalseSharing", "pad", "each thread's words on cache lines of their own", NULL, NULL, 0 },
	{ "WordFalseSharing", "pad", "each thread's words on cache lines of their own", NULL, NULL,
	  0 },
	{ "TrueSharingContention", "private",
	  "each thread's updates kept in a local variable, combined once at the end", NULL, NULL,
	  0 },
	{ "TLBThrashing", "transpose",
	  "the strided walk made sequential (loops interchanged, or the object stored transposed)",
	  "huge", "the object on 2 MiB pages", 0 },
	{ "HotObject", "transpose",
	  "the strided walk made sequential (loops interchanged, or the object stored transposed)",
	  NULL, NULL, 64 },
	{ "Unbalanced*", "balance",
	  "the work on the object split evenly among the threads that share it", NULL, NULL, 0 },
	{ "ConflictMisses", "rowpad", "each row padded by one cache line", NULL, NULL, 0 },
	{ "RemoteMemAccess", "local",
	  "each thread initialises the part it uses (parallel first touch: its pages local to it)",
	  NULL, NULL, 0 },
	{ "FirstTouchPlacement", "local",
	  "each thread initialises the part it uses (parallel first touch: its pages local to it)",
	  NULL, NULL, 0 },
};

/* What a layout what-if learnt (the oracle's "what_if"): applied is -1
 * when the kind learns nothing. */
struct learnt {
	int applied;
	unsigned long long stride, elem;
	int reduction;	/* transpose: the walk is a column reduction */
};

/*
 * An oracle file as JSON: whole (every object's counts; a program of a
 * million blocks writes a gigabyte), or only its header (the first line up
 * to "metrics": the run time and the what-if's "what_if"), which is all
 * most fixes read. NULL with errno set (0: not JSON).
 */
static cJSON *oracle_load(const char *path, int whole)
{
	char *text, *end;
	size_t len;
	cJSON *root;

	if (whole) {
		if (!(text = agent_read_file(path, &len)))
			return NULL;
	} else {
		FILE *f = fopen(path, "rb");
		size_t cap = 1 << 16;

		if (!f)
			return NULL;
		if (!(text = malloc(cap + 2))) {
			fclose(f);
			return NULL;
		}
		len = fread(text, 1, cap, f);
		fclose(f);
		text[len] = 0;
		if ((end = strstr(text, ",\"metrics\":"))) {
			end[0] = '}';
			end[1] = 0;
			len = (size_t)(end + 1 - text);
		} else if (len == cap) {	/* a header longer than that: read it all */
			free(text);
			return oracle_load(path, 1);
		}
	}
	errno = 0;
	root = cJSON_ParseWithLength(text, len);
	free(text);
	return root;
}

/* Runs cmd with AMEBA_BACKEND=sim, AMEBA_ORACLE=oracle, AMEBA_MRI=0,
 * AMEBA_SIM_3C=0 and (whatif != NULL) AMEBA_WHATIF=whatif; its simulated run
 * time in cycles, or 0 with why[] set. */
static uint64_t sim_runtime(char **cmd, const char *oracle, const char *whatif, char *why,
			    size_t wlen, struct learnt *learnt, cJSON **keep)
{
	pid_t pid;
	int status;

	unlink(oracle);
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		snprintf(why, wlen, "fork: %s", strerror(errno));
		return 0;
	}
	if (pid == 0) {
		int fd = open("/dev/null", O_RDWR);

		if (fd >= 0) {
			dup2(fd, 0);
			dup2(fd, 1);
			dup2(fd, 2);
		}
		setenv("AMEBA_BACKEND", "sim", 1);
		setenv("AMEBA_ORACLE", oracle, 1);
		setenv("AMEBA_MRI", "0", 1);
		/* the run time is all these runs give: the 3C split changes no
		 * cycle, and its shadow cache is work on every access */
		setenv("AMEBA_SIM_3C", "0", 1);
		if (whatif)
			setenv("AMEBA_WHATIF", whatif, 1);
		else
			unsetenv("AMEBA_WHATIF");
		execvp(cmd[0], cmd);
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			snprintf(why, wlen, "waitpid: %s", strerror(errno));
			return 0;
		}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		snprintf(why, wlen, "the %s run %s %d", whatif ? "what-if" : "baseline",
			 WIFEXITED(status) ? "exited with status" : "was killed by signal",
			 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
		return 0;
	}
	cJSON *root = oracle_load(oracle, keep != NULL);
	if (!root) {
		snprintf(why, wlen, "no oracle file from the %s run (%s)",
			 whatif ? "what-if" : "baseline", errno ? strerror(errno) : "not JSON");
		return 0;
	}
	cJSON *rt = cJSON_GetObjectItemCaseSensitive(root, "est_runtime_cycles");
	uint64_t cycles = cJSON_IsNumber(rt) && rt->valuedouble > 0 ? (uint64_t)rt->valuedouble : 0;
	cJSON *wi = cJSON_GetObjectItemCaseSensitive(root, "what_if");
	cJSON *ap = cJSON_GetObjectItemCaseSensitive(wi, "applied");
	cJSON *st = cJSON_GetObjectItemCaseSensitive(wi, "stride");
	cJSON *el = cJSON_GetObjectItemCaseSensitive(wi, "element");
	cJSON *rd = cJSON_GetObjectItemCaseSensitive(wi, "reduction");

	if (learnt) {
		learnt->applied = cJSON_IsBool(ap) ? cJSON_IsTrue(ap) : -1;
		learnt->stride = cJSON_IsNumber(st) ? (unsigned long long)st->valuedouble : 0;
		learnt->elem = cJSON_IsNumber(el) ? (unsigned long long)el->valuedouble : 0;
		learnt->reduction = cJSON_IsTrue(rd);
	}
	if (keep && cycles)
		*keep = root;
	else
		cJSON_Delete(root);
	if (!cycles)
		snprintf(why, wlen, "the %s run's oracle has no simulated run time (not the sim "
			 "backend?)", whatif ? "what-if" : "baseline");
	return cycles;
}

/*
 * balance: no re-simulation; from the baseline oracle. The threads that
 * share the object are those whose estimated cycles on it reach 5% of the
 * busiest one's (not thread 0 when two others do); they run side by side, so the run ends with the slowest.
 * Spread evenly, each would make the mean of their accesses, at the
 * slowest thread's cycles per access (its share is the largest, and a
 * larger share misses more: the even shares cost at most that), and the
 * run would be that much shorter. Returns the run time with the fix, or 0
 * with why[] set.
 */
#define WHATIF_THREADS 4096
struct users {
	double on_obj[WHATIF_THREADS];	/* est_cycles on the object, per thread id */
	double total[WHATIF_THREADS];	/* est_cycles in all */
	double refs[WHATIF_THREADS];	/* accesses in all */
	double top;			/* the largest on_obj */
	double set_up;			/* thread 0's on_obj when left out */
	double busiest;			/* the largest total of a user */
	int n;				/* users: on_obj >= 5% of top, thread 0 left out
					 * when two others are users */
};

/* The users of object `name` in an oracle; 0 if it has no such object. */
static int users_of(cJSON *oracle, const char *name, struct users *u)
{
	cJSON *objs = cJSON_GetObjectItemCaseSensitive(oracle, "objects"), *o, *th, *v;
	int seen = 0;

	memset(u, 0, sizeof(*u));

	cJSON_ArrayForEach(o, objs) {
		const char *on = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "name"));
		int mine = on && !strcmp(on, name);

		seen |= mine;
		cJSON_ArrayForEach(th, cJSON_GetObjectItemCaseSensitive(o, "threads")) {
			long id = strtol(th->string ? th->string : "", NULL, 10);
			cJSON *r = cJSON_GetObjectItemCaseSensitive(th, "mem_ref");

			v = cJSON_GetObjectItemCaseSensitive(th, "est_cycles");
			if (id < 0 || id >= WHATIF_THREADS || !cJSON_IsNumber(v))
				continue;
			u->total[id] += v->valuedouble;
			u->refs[id] += cJSON_IsNumber(r) ? r->valuedouble : 0;
			if (mine)
				u->on_obj[id] += v->valuedouble;
		}
	}
	for (int id = 0; id < WHATIF_THREADS; id++)
		u->top = u->on_obj[id] > u->top ? u->on_obj[id] : u->top;
	/* as the Unbalanced* properties (asl.users_view): thread 0 (main) is
	 * left out when two others share the object (its set-up does not run
	 * beside the workers) */
	for (int id = 1; id < WHATIF_THREADS; id++)
		u->n += u->top > 0 && u->on_obj[id] >= 0.05 * u->top;
	if (u->n >= 2) {
		u->set_up = u->on_obj[0];
		u->on_obj[0] = 0;
	}
	u->n = 0;
	for (int id = 0; id < WHATIF_THREADS; id++)
		if (u->top > 0 && u->on_obj[id] >= 0.05 * u->top) {
			u->n++;
			if (u->total[id] > u->busiest)
				u->busiest = u->total[id];
		}
	return seen;
}

static uint64_t balanced_runtime(cJSON *oracle, const char *name, uint64_t base, char *why,
				 size_t wlen)
{
	static struct users u;
	double sum = 0, max = 0, max_refs = 0, even;

	if (!users_of(oracle, name, &u)) {
		snprintf(why, wlen, "the baseline run has no object %s", name);
		return 0;
	}
	for (int id = 0; id < WHATIF_THREADS; id++)
		if (u.top > 0 && u.on_obj[id] >= 0.05 * u.top) {
			sum += u.refs[id];
			if (u.total[id] > max) {
				max = u.total[id];
				max_refs = u.refs[id];
			}
		}
	if (u.n < 2 || max_refs <= 0) {
		snprintf(why, wlen, "fewer than two threads share %s in the baseline run", name);
		return 0;
	}
	even = sum / u.n * (max / max_refs);
	if (even >= max) {
		snprintf(why, wlen, "the threads sharing %s are balanced already", name);
		return 0;
	}
	if (max - even >= (double)base) {
		snprintf(why, wlen, "the threads' cycles exceed the run time (not side by side)");
		return 0;
	}
	return base - (uint64_t)(max - even);
}

/*
 * local: the fix the NUMA properties advise is a parallel first touch:
 * each user initialises its own part, so its pages are local to it and the
 * lines it wrote are in its node's caches (the what-if run), and thread
 * 0's serial set-up of the object is shared by the n users: the run is
 * shorter by (n - 1) / n of thread 0's cycles on the object in the what-if
 * run (when thread 0 is not one of its users) - but it cannot end before
 * the busiest user has done its own work and its share of the set-up.
 */
static uint64_t parallel_set_up(cJSON *oracle, const char *name, uint64_t fixed)
{
	static struct users u;
	double left;

	if (!oracle || !users_of(oracle, name, &u) || u.n < 2 || u.set_up <= 0)
		return fixed;
	left = (double)fixed - u.set_up * (u.n - 1) / u.n;
	if (left < u.busiest + u.set_up / u.n)
		left = u.busiest + u.set_up / u.n;
	return left < (double)fixed ? (uint64_t)left : fixed;
}

int agent_whatif_apply(cJSON *root, char **cmd, int max_fixes, int quiet)
{
	cJSON *findings = cJSON_GetObjectItemCaseSensitive(root, "findings"), *f;
	char dir[] = "/tmp/ameba-whatif-XXXXXX", base_path[PATH_MAX], fix_path[PATH_MAX];
	char why[256] = "", spec[600];
	cJSON *base_root = NULL;
	uint64_t base = 0;
	int done = 0, tried_base = 0;

	if (max_fixes <= 0 || !cJSON_IsArray(findings) || !mkdtemp(dir))
		return 0;
	snprintf(base_path, sizeof(base_path), "%s/base.json", dir);
	snprintf(fix_path, sizeof(fix_path), "%s/fix.json", dir);
	cJSON_ArrayForEach(f, findings) {
		const char *prop = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(f, "property"));
		cJSON *ctx = cJSON_GetObjectItemCaseSensitive(f, "context");
		cJSON *obj = ctx ? cJSON_GetObjectItemCaseSensitive(ctx, "object") : NULL;
		const char *name = obj ? cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(obj, "name")) : NULL;
		const struct fix *fx = NULL;
		struct learnt learnt;
		cJSON *w;

		if (done >= max_fixes)
			break;
		for (size_t i = 0; prop && i < sizeof(fixes) / sizeof(fixes[0]); i++) {
			size_t l = strlen(fixes[i].property);

			if (!strcmp(prop, fixes[i].property) ||
			    (fixes[i].property[l - 1] == '*' && !strncmp(prop, fixes[i].property, l - 1)))
				fx = &fixes[i];
		}
		if (!fx || !name || !*name)
			continue;
		if (!tried_base) {
			tried_base = 1;
			if (!quiet)
				fprintf(stderr, "ameba: what-if: simulating the program again as it is\n");
			base = sim_runtime(cmd, base_path, NULL, why, sizeof(why), NULL, NULL);
		}
		w = cJSON_AddObjectToObject(f, "what_if");
		if (!w)
			break;
		done++;
		if (!base) {
			cJSON_AddStringToObject(w, "fix", fx->fix);
			cJSON_AddStringToObject(w, "error", why);
			continue;
		}
		const char *kind = fx->kind, *fix = fx->fix;
		uint64_t fixed = 0;

		learnt.applied = -1;
		learnt.reduction = 0;
		if (!strcmp(kind, "balance")) {
			/* the per-thread counts of every object: read once, when needed */
			if (!base_root && !(base_root = oracle_load(base_path, 1)))
				snprintf(why, sizeof(why), "the baseline oracle cannot be read "
					 "again (%s)", errno ? strerror(errno) : "not JSON");
			fixed = base_root ? balanced_runtime(base_root, name, base, why, sizeof(why)) : 0;
			kind = NULL;
		}
		for (int attempt = 0; attempt < 2 && kind; attempt++) {
			snprintf(spec, sizeof(spec), "%s:%s", kind, name);
			if (!quiet)
				fprintf(stderr, "ameba: what-if: simulating %s with %s (%s)\n", name, fix,
					prop);
			cJSON *fix_root = NULL;

			fixed = sim_runtime(cmd, fix_path, spec, why, sizeof(why), &learnt,
					    !strcmp(kind, "local") ? &fix_root : NULL);
			if (fix_root) {
				fixed = parallel_set_up(fix_root, name, fixed);
				cJSON_Delete(fix_root);
			}
			if (!fixed || learnt.applied < 0 ||
			    (learnt.applied && learnt.stride > fx->min_stride))
				break;
			if (learnt.applied)
				snprintf(why, sizeof(why),
					 "the object's walks step by %llu B at most: no strided walk "
					 "to make sequential (the fix is not mechanical)", learnt.stride);
			else
				snprintf(why, sizeof(why),
					 "no strided walk of the object dominates its accesses (the "
					 "fix is not mechanical)");
			fixed = 0;
			if (fx->fallback && !attempt) {
				kind = fx->fallback;
				fix = fx->fallback_fix;
			} else {
				kind = NULL;
			}
		}
		if (fixed && learnt.applied > 0 && learnt.reduction)
			fix = "the column walk interchanged, its per-column results kept in a row of "
			      "accumulators (a sequential walk)";
		cJSON_AddStringToObject(w, "fix", fix);
		cJSON_AddNumberToObject(w, "runtime_cycles", (double)base);
		if (!fixed) {
			cJSON_AddStringToObject(w, "error", why);
			continue;
		}
		if (learnt.applied > 0) {
			cJSON_AddNumberToObject(w, "row_stride", (double)learnt.stride);
			cJSON_AddNumberToObject(w, "element_size", (double)learnt.elem);
			if (learnt.reduction)
				cJSON_AddBoolToObject(w, "column_reduction", 1);
		}
		cJSON_AddNumberToObject(w, "runtime_cycles_fixed", (double)fixed);
		cJSON_AddNumberToObject(f, "predicted_speedup",
					(double)(uint64_t)((double)base / (double)fixed * 1000 + 0.5) / 1000);
	}
	cJSON_Delete(base_root);
	unlink(base_path);
	unlink(fix_path);
	rmdir(dir);
	return done;
}
