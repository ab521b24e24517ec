/*
 * cmd_mri.c - `ameba mri PID`: a small debugging client of the Monitoring
 * Request Interface. It lists the target's threads and objects, attaches,
 * arms conditional counters (named objects plus the total), prints a few
 * interval readings and detaches, leaving the target dormant again.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "ameba/ameba.h"
#include "mri/mri.h"

#define MAX_NAMED 16
#define PAGE 1024

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ameba mri PID [options]\n"
		"\n"
		"Talks to the MRI server of process PID (a program built with `ameba cc`):\n"
		"lists its threads and objects, attaches, counts a metric on named objects\n"
		"and on the whole address space over a few intervals, then detaches.\n"
		"\n"
		"options:\n"
		"  --objects N       objects to list (default 40; 0: none; all: every one)\n"
		"  --kind K          list only objects of kind K (global, heap, mmap, stack,\n"
		"                    tls, other); may be repeated\n"
		"  --count NAME      count on the objects named NAME (a global's symbol or a\n"
		"                    site such as make_table@app.c:12); may be repeated\n"
		"  --metric M        the metric to count (default mem_ref; `ameba list metrics`)\n"
		"  --backend B       the backend to attach (default: the runtime's choice)\n"
		"  --sampled P/W/B   attach in sampled mode: a burst every P us (jittered),\n"
		"                    each after W us of warm-up, B us long (e.g.\n"
		"                    20000/2000/2000); readings are estimates, printed\n"
		"                    with the half-width of their 95%% interval\n"
		"  --interval-ms N   time between readings (default 200)\n"
		"  --reads N         readings to print (default 5)\n"
		"  --threads         also print per-thread values of each reading\n"
		"  --timeout-ms N    per-request timeout (default 10000)\n"
		"  --raw JSON        send one raw request (e.g. '{\"op\":\"process\"}'), print\n"
		"                    the reply and stop\n"
		"\n"
		"Exit status: 0 done (also when the target exited meanwhile), 1 an error,\n"
		"2 bad usage. See docs/mri.md.\n");
}

struct opts {
	pid_t pid;
	long nr_objects;		/* -1: all */
	uint32_t kinds;
	const char *named[MAX_NAMED];
	int nr_named;
	int metric;
	const char *backend;
	int sampled;
	struct mri_sampling sampling;
	long interval_ms, nr_reads, timeout_ms;
	int threads;
	const char *raw;
};

static int parse_long(const char *opt, const char *v, long lo, long hi, long *out)
{
	char *end;
	long x;

	if (!v) {
		fprintf(stderr, "ameba mri: %s needs a value\n", opt);
		return -1;
	}
	errno = 0;
	x = strtol(v, &end, 10);
	if (errno || *end || end == v || x < lo || x > hi) {
		fprintf(stderr, "ameba mri: %s %s: want a number in %ld..%ld\n", opt, v, lo, hi);
		return -1;
	}
	*out = x;
	return 0;
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
	long pid;

	memset(o, 0, sizeof(*o));
	o->nr_objects = 40;
	o->metric = AMEBA_M_MEM_REF;
	o->interval_ms = 200;
	o->nr_reads = 5;
	o->timeout_ms = 10000;
	if (argc < 1 || !strcmp(argv[0], "--help") || !strcmp(argv[0], "-h")) {
		usage(argc < 1 ? stderr : stdout);
		return argc < 1 ? 2 : 1;
	}
	if (parse_long("PID", argv[0], 1, 0x7fffffff, &pid))
		return 2;
	o->pid = (pid_t)pid;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--objects")) {
			if (v && !strcmp(v, "all"))
				o->nr_objects = -1;
			else if (parse_long(a, v, 0, 1000000000, &o->nr_objects))
				return 2;
			i++;
		} else if (!strcmp(a, "--kind")) {
			int k;

			for (k = 0; v && k < MRI_OBJ_NR_KINDS; k++)
				if (!strcmp(v, mri_obj_kind_name(k)))
					break;
			if (!v || k == MRI_OBJ_NR_KINDS) {
				fprintf(stderr, "ameba mri: --kind %s: want global, heap, mmap, stack, tls "
					"or other\n", v ? v : "(missing)");
				return 2;
			}
			o->kinds |= 1u << k;
			i++;
		} else if (!strcmp(a, "--count")) {
			if (!v || o->nr_named == MAX_NAMED) {
				fprintf(stderr, "ameba mri: --count needs a name (at most %d)\n", MAX_NAMED);
				return 2;
			}
			o->named[o->nr_named++] = v;
			i++;
		} else if (!strcmp(a, "--metric")) {
			o->metric = v ? ameba_metric_by_name(v) : AMEBA_ENOENT;
			if (o->metric < 0) {
				fprintf(stderr, "ameba mri: --metric %s: unknown metric; see `ameba list "
					"metrics`\n", v ? v : "(missing)");
				return 2;
			}
			i++;
		} else if (!strcmp(a, "--backend")) {
			if (!v) {
				fprintf(stderr, "ameba mri: --backend needs a name (sim, count)\n");
				return 2;
			}
			o->backend = v;
			i++;
		} else if (!strcmp(a, "--sampled")) {
			unsigned p, w, b;
			char tail;

			if (!v || sscanf(v, "%u/%u/%u%c", &p, &w, &b, &tail) != 3 || p < 100 || b < 10) {
				fprintf(stderr, "ameba mri: --sampled %s: want PERIOD/WARM/BURST in "
					"microseconds, period >= 100 and burst >= 10, such as "
					"20000/2000/2000\n", v ? v : "(missing)");
				return 2;
			}
			o->sampled = 1;
			o->sampling = (struct mri_sampling){ .period_us = p, .warm_us = w, .burst_us = b };
			i++;
		} else if (!strcmp(a, "--interval-ms")) {
			if (parse_long(a, v, 10, 3600000, &o->interval_ms))
				return 2;
			i++;
		} else if (!strcmp(a, "--reads")) {
			if (parse_long(a, v, 0, 1000000, &o->nr_reads))
				return 2;
			i++;
		} else if (!strcmp(a, "--timeout-ms")) {
			if (parse_long(a, v, -1, 3600000, &o->timeout_ms))
				return 2;
			i++;
		} else if (!strcmp(a, "--threads")) {
			o->threads = 1;
		} else if (!strcmp(a, "--raw")) {
			if (!v) {
				fprintf(stderr, "ameba mri: --raw needs a JSON request\n");
				return 2;
			}
			o->raw = v;
			i++;
		} else {
			fprintf(stderr, "ameba mri: unknown option %s; try `ameba mri --help`\n", a);
			return 2;
		}
	}
	return 0;
}

static int fail(struct mri_session *s, const char *what, int err)
{
	fprintf(stderr, "ameba mri: %s: %s\n", what, s ? mri_errmsg(s) : ameba_strerror(err));
	return 1;
}

static int print_threads(struct mri_session *s)
{
	struct mri_thread_info t[PAGE];
	uint32_t off = 0, total = 0;
	int n;

	do {
		n = mri_threads(s, off, t, PAGE, &total);
		if (n < 0)
			return fail(s, "listing threads", n);
		if (off == 0)
			printf("threads (%u):\n  %4s %8s  %s\n", total, "id", "tid", "state");
		for (int i = 0; i < n; i++)
			printf("  %4u %8d  %s\n", t[i].id, t[i].tid, t[i].exited ? "exited" : "running");
		off += (uint32_t)n;
	} while (n > 0 && off < total);
	return 0;
}

static int print_objects(struct mri_session *s, const struct opts *o)
{
	struct mri_object_query q = { .kinds = o->kinds };
	struct mri_object *page = calloc(PAGE, sizeof(*page));
	uint32_t cursor = 0, shown = 0;
	int n = 0;

	if (!page)
		return fail(NULL, "listing objects", AMEBA_ENOMEM);
	printf("objects:\n  %8s %-6s %12s %-18s %s\n", "id", "kind", "size", "start", "name");
	while (cursor != MRI_END && (o->nr_objects < 0 || shown < (uint32_t)o->nr_objects)) {
		uint32_t want = PAGE;

		if (o->nr_objects >= 0 && (uint32_t)o->nr_objects - shown < want)
			want = (uint32_t)o->nr_objects - shown;
		n = mri_objects(s, &q, &cursor, page, want);
		if (n < 0)
			break;
		for (int i = 0; i < n; i++, shown++)
			printf("  %8u %-6s %12" PRIu64 " 0x%-16" PRIx64 " %s%s\n", page[i].id,
			       mri_obj_kind_name(page[i].kind), page[i].sz_bytes, page[i].start,
			       page[i].name ? page[i].name : "?", page[i].live ? "" : " (freed)");
	}
	free(page);
	if (n < 0)
		return fail(s, "listing objects", n);
	if (cursor != MRI_END)
		printf("  ... (more: --objects all)\n");
	return 0;
}

/* Ids of the live objects named name, appended to ids (grows). */
static int find_named(struct mri_session *s, const char *name, uint32_t **ids, uint32_t *nr)
{
	struct mri_object_query q = { .live_only = 1, .name = name };
	struct mri_object *page = calloc(PAGE, sizeof(*page));
	uint32_t cursor = 0, found = 0;
	int n = 0;

	if (!page)
		return AMEBA_ENOMEM;
	while (cursor != MRI_END) {
		n = mri_objects(s, &q, &cursor, page, PAGE);
		if (n < 0)
			break;
		for (int i = 0; i < n; i++) {
			uint32_t *g = realloc(*ids, (*nr + 1) * sizeof(**ids));

			if (!g) {
				n = AMEBA_ENOMEM;
				break;
			}
			*ids = g;
			(*ids)[(*nr)++] = page[i].id;
			found++;
		}
		if (n < 0)
			break;
	}
	free(page);
	if (n < 0)
		return n;
	return found ? 0 : AMEBA_ENOENT;
}

/* One line of deltas; then, from rows (optional), cumulative per-thread values. */
static void print_reading(const struct mri_reading *r, const struct mri_reading *rows,
			  uint64_t t0_ns, int nr_cols)
{
	printf("  %5" PRIu64 " %8.1f", r->seq, (double)(r->t_ns - t0_ns) / 1e6);
	for (int i = 0; i < nr_cols && (uint32_t)i < r->nr; i++) {
		if (r->sampled && r->ci_deltas[i] >= 0)
			printf(" %16" PRIu64 " +-%-8.0f", r->deltas[i], r->ci_deltas[i]);
		else if (r->sampled)
			printf(" %16" PRIu64 " +-%-8s", r->deltas[i], "?");
		else
			printf(" %16" PRIu64, r->deltas[i]);
	}
	if (r->sampled)
		printf("  (%u bursts, %.2f%% simulated)", r->bursts_read, 100 * r->fraction);
	printf("\n");
	for (uint32_t k = 0; rows && k < rows->nr_threads; k++) {
		printf("    thread %-7u", rows->thread_ids[k]);
		for (int i = 0; i < nr_cols && (uint32_t)i < rows->nr; i++)
			printf(" %16" PRIu64, rows->thread_values[(size_t)k * rows->nr + i]);
		printf("  (since the start)\n");
	}
}

static int count(struct mri_session *s, const struct opts *o, uint64_t t0_ns)
{
	struct mri_counter c[MAX_NAMED + 1];
	uint32_t *ids[MAX_NAMED] = { 0 }, nr_ids[MAX_NAMED] = { 0 };
	struct mri_backend_info bi;
	struct mri_reading r;
	uint64_t exp;
	int err, nr = 0, rc = 1;

	for (int i = 0; i < o->nr_named; i++) {
		err = find_named(s, o->named[i], &ids[i], &nr_ids[i]);
		if (err == AMEBA_ENOENT) {
			fprintf(stderr, "ameba mri: --count %s: no live object of that name (list them: "
				"ameba mri %d --objects all)\n", o->named[i], (int)o->pid);
			goto out;
		}
		if (err) {
			fail(s, "looking up objects", err);
			goto out;
		}
		c[nr++] = (struct mri_counter){ .metric = o->metric, .nr_objects = nr_ids[i],
						.objects = ids[i] };
	}
	c[nr++] = (struct mri_counter){ .metric = o->metric };	/* the total */

	err = o->sampled ? mri_attach_sampled(s, o->backend, &o->sampling) : mri_attach(s, o->backend);
	if (err) {
		fail(s, "attach", err);
		goto out;
	}
	if (mri_backend(s, &bi) == 0) {
		printf("backend: %s\nmetrics:", bi.name ? bi.name : "?");
		for (uint32_t i = 0; i < bi.nr_metrics; i++)
			printf(" %s", ameba_metric_info(bi.metrics[i])->name);
		printf("\ngeometry:");
		if (!bi.geometry || !strchr(bi.geometry, '\n')) {
			printf(" %s\n", bi.geometry ? bi.geometry : "not applicable");
		} else {
			/* the simulator's configuration text, one setting a line */
			for (const char *l = bi.geometry; *l;) {
				const char *nl = strchr(l, '\n');
				int n = nl ? (int)(nl - l) : (int)strlen(l);

				if (n && *l != '#')
					printf("\n  %.*s", n, l);
				l += n + (nl != NULL);
			}
			printf("\n");
		}
	}
	err = mri_experiment_start(s, c, (uint32_t)nr, (uint32_t)o->interval_ms, &exp);
	if (err) {
		fail(s, "start", err);
		goto out;
	}
	printf("experiment %" PRIu64 ": %s per %ld ms, deltas\n  %5s %8s", exp,
	       ameba_metric_info(o->metric)->name, o->interval_ms, "read", "t_ms");
	for (int i = 0; i < o->nr_named; i++)
		printf(" %16.16s", o->named[i]);
	printf(" %16s\n", "total");
	for (long k = 0; k < o->nr_reads; k++) {
		struct mri_event ev;

		/* Interval events carry the readings; --threads reads explicitly. */
		err = mri_next_event(s, &ev, (int)o->interval_ms * 4 + 1000);
		if (err == AMEBA_EEXITED) {
			if (mri_final_reading(s, &r) == 0) {
				printf("  target exited; final reading:\n");
				print_reading(&r, NULL, t0_ns, nr);
			} else {
				printf("  target exited\n");
			}
			rc = 0;
			goto out;
		}
		if (err) {
			fail(s, "waiting for a reading", err);
			goto out;
		}
		if (ev.kind != MRI_EV_INTERVAL) {
			k--;
			continue;
		}
		if (o->threads) {
			/* The event has the interval's deltas; a read adds the
			 * per-thread rows (its own deltas are about nothing). */
			err = mri_experiment_read(s, exp, MRI_READ_THREADS, &r);
			if (err) {
				fail(s, "read", err);
				goto out;
			}
			print_reading(&ev.reading, &r, t0_ns, nr);
		} else {
			print_reading(&ev.reading, NULL, t0_ns, nr);
		}
	}
	err = mri_experiment_stop(s, exp, &r);
	if (!err)
		err = mri_detach(s);
	if (err == AMEBA_EEXITED) {
		printf("  target exited\n");
		rc = 0;
	} else if (err) {
		fail(s, "stop", err);
	} else {
		printf("detached: the target is dormant again\n");
		rc = 0;
	}
out:
	for (int i = 0; i < MAX_NAMED; i++)
		free(ids[i]);
	return rc;
}

int agent_cmd_mri(int argc, char **argv)
{
	struct mri_session *s;
	struct mri_process_info pi;
	struct opts o;
	int rc = parse_opts(argc, argv, &o), err;

	if (rc)
		return rc == 1 ? 0 : rc;
	err = mri_open_pid(&s, o.pid, (int)o.timeout_ms);
	if (err) {
		rc = fail(s, "cannot attach", err);
		mri_close(s);
		return rc;
	}
	if (o.raw) {
		char *reply = NULL;

		err = mri_request(s, o.raw, &reply);
		if (reply)
			printf("%s\n", reply);
		free(reply);
		mri_close(s);
		return err ? 1 : 0;
	}
	err = mri_process(s, &pi);
	if (err) {
		rc = fail(s, "process", err);
		goto out;
	}
	printf("process %d: %s (ameba-rt %s, MRI protocol %u)\n", pi.pid, pi.program ? pi.program : "?",
	       pi.runtime_version ? pi.runtime_version : "?", pi.protocol);
	rc = print_threads(s);
	if (!rc && o.nr_objects != 0)
		rc = print_objects(s, &o);
	if (!rc && o.nr_reads > 0) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		rc = count(s, &o, (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec);
	}
out:
	mri_close(s);
	return rc;
}
