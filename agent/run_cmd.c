/*
 * run_cmd.c - `ameba run [options] -- CMD ARGS` and `ameba attach PID
 * [options]`: launch or find the target, connect through the MRI, run the
 * search online, print the ranked report and write the JSON report.
 *
 * Exit status (docs/user-guide.md):
 *   0  the report was written (and, for run, the target exited with 0 or
 *      is still running)
 *   1  error: no report, or a partial report with reason "error"
 *   2  usage error
 *   3  the report was written, and the target (run) exited non-zero or was
 *      killed by a signal; its status is in the report ("target")
 *
 * Signals: the first SIGINT or SIGTERM stops the search; the partial report
 * is written and the agent detaches (the target goes dormant and runs on).
 * For run the agent then waits for the target to exit, as a shell would; a
 * second SIGINT/SIGTERM stops that wait and the agent exits, leaving the
 * target running.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "perfmon/perfmon.h"
#include "plugins.h"
#include "provider.h"
#include "report.h"
#include "search.h"
#include "geom.h"
#include "mri.h"

#define RUN_CONNECT_MS_DEFAULT 10000

static volatile sig_atomic_t run_stop;

static void on_signal(int sig)
{
	(void)sig;
	run_stop++;
}

struct run_opts {
	int attach;
	int32_t pid;			/* attach */
	char **cmd;			/* run */
	int nr_cmd;
	uint64_t duration_ms;
	uint32_t interval_ms;
	const char *strategy;
	int strategy_given;		/* --strategy was on the command line */
	double refine_share;		/* chains: a's share of --duration */
	uint64_t refine_after_ms;	/* chains without --duration */
	const char **props;
	uint32_t nr_props;
	const char **plugin_dirs;
	uint32_t nr_plugin_dirs;
	const char *metric;
	const char *backend;
	const char *output;
	const char *html;		/* --html FILE: the report as a page too */
	int views;			/* --views (or --html): sample heat strips, line maps */
	int json;
	int quiet;
	int verbose;
	uint32_t top;
	double min_severity;		/* table: hide findings below it */
	uint32_t connect_ms;
	int gate;
	int what_if;			/* run: findings whose fix is re-simulated (0: none) */
	const char *preset;		/* run: AMEBA_PRESET of the target (checked) */
	const char *nodes;		/* run: AMEBA_NODES of the target (checked) */
	char preset_path[PATH_MAX];	/* a preset file's absolute path */
	struct agent_sampling sampling;	/* exact, sampled, or exact then sampled */
};

static void run_usage(FILE *f, int attach)
{
	if (attach)
		fprintf(f, "usage: ameba attach PID [options]\n"
			   "\n"
			   "Attaches to a running program built with `ameba cc` (or any program with\n"
			   "--backend pagefault|watch|perf), searches its memory\n"
			   "bottlenecks online until --duration is spent, the program exits, or you\n"
			   "press Ctrl-C, then prints the ranked report and writes the JSON report.\n");
	else
		fprintf(f, "usage: ameba run [options] -- CMD [ARGS...]\n"
			   "\n"
			   "Starts CMD (built with `ameba cc`), searches its memory bottlenecks online\n"
			   "while it runs, then prints the ranked report and writes the JSON report.\n"
			   "CMD's own output, input and exit status are left untouched.\n");
	fprintf(f,
		"\n"
		"options:\n"
		"  --duration T         stop the search after T (10s, 500ms, 2m; default: when the\n"
		"                       target exits or the strategy is done)\n"
		"  --interval T         length of one experiment (default 100ms)\n"
		"  --strategy NAME[:k=v,...]  search strategy and its parameters (default\n"
		"                       objects,threads)\n"
		"  --strategy A[:k=v,...],B[:k=v,...]  a chain: B refines what A found; A runs\n"
		"                       until done or, if it never finishes (objects), for\n"
		"                       --refine-share of --duration\n"
		"  --refine-share P     chains: A's share of --duration when A never finishes by\n"
		"                       itself (default 50%%; 0.3 or 30%%)\n"
		"  --refine-after T     chains without --duration: hand over to B after T\n"
		"                       (default: only when A finishes)\n"
		"  --property FILE|NAME[:k=v,...]  load a property file (.lua, .asl, .so), or evaluate only\n"
		"                       the named properties (repeatable)\n"
		"  --plugin-path DIR    also load plugins from DIR (repeatable)\n"
		"  --metric NAME        metric that ranks objects (default l1d_miss when the backend\n"
		"                       has it, else mem_ref); `ameba list metrics`\n"
		"  --backend NAME       monitor backend to start (default: the runtime's choice);\n"
		"                       perf, pagefault and watch need no `ameba cc` (see\n"
		"                       `ameba list backends`)\n"
		"  --output FILE        JSON report (default ameba-PID.json)\n"
		"  --html FILE          also write the report as one self-contained HTML page\n"
		"                       (timelines, address heat strips, thread x object map,\n"
		"                       line maps, search trace); implies --views\n"
		"  --views              sample the data of the heat strips and line maps (one\n"
		"                       interval in 4 runs with a sample stream, which takes the\n"
		"                       simulator off its fast path then; docs/user-guide.md)\n"
		"  --format table|json  what is printed on stdout (default table); with json\n"
		"                       (run) the target's own stdout goes to stderr\n"
		"  --top N              rows of the table (default 20; 0 = all)\n"
		"  --min-severity S     leave findings below severity S out of the table (0.001\n"
		"                       or 0.1%%, the default; 0 = all); the JSON report keeps them\n"
		"  --connect-timeout T  how long to wait for the target's MRI socket (default 10s)\n"
		"simulation (the sim backend; docs/simulator.md, \"Sampled simulation\"):\n"
		"  (default)            run: exact for the first 30 s, then sampled (a short run\n"
		"                       gets exact counts, a long one a report in bounded time);\n"
		"                       attach: sampled from the start (exact simulation costs\n"
		"                       ~100x native; sampled about 2x the dormant hooks' cost)\n"
		"  --exact              simulate every access for the whole run\n"
		"  --sampled            sampled from the start: counts are estimates with 95%%\n"
		"                       intervals\n"
		"  --sample-after T     exact for T, then sampled (default 30s)\n"
		"  --sampling P/W/B     a burst every P (jittered +-50%%), after W of warm-up,\n"
		"                       B long (default 20ms/2ms/4ms; units us, ms, s); the\n"
		"                       gaps stretch to keep the accesses simulated under 4%%\n"
		"                       and the time spent simulating under a third (under\n"
		"                       0.15 while the estimates are within +-5%%)\n"
		"%s%s"
		"  -q, --quiet          print nothing but errors (the report is still written)\n"
		"  -v, --verbose        log the strategy's notes\n"
		"  -h, --help           this text\n"
		"\n"
		"Exit status: 0 report written; 1 error; 2 usage; 3 report written and the\n"
		"target failed (non-zero exit or killed). See docs/user-guide.md.\n",
		attach ? "" :
		"  --no-gate            do not hold CMD at main() until the agent is attached\n",
		attach ? "" :
		"  --preset NAME|FILE   cache geometry and latencies the sim backend simulates:\n"
		"                       host (default), zen4, skylake-sp, r10000, a preset of\n"
		"                       `ameba calibrate`, or a config file (`ameba list presets`)\n"
		"  --nodes N            simulated NUMA nodes (default: the preset's)\n"
		"  --what-if N          after a clean exit, simulate CMD again with the fix of\n"
		"                       each of the first N findings that have a mechanical one\n"
		"                       (false sharing: padding) for their predicted_speedup\n"
		"                       (default 2; 0 = off; docs/whatif.md)\n");
}

/* "10s", "500ms", "2m", "1.5" (unit_ms per bare unit). -1 when invalid. */
static int64_t parse_time_ms(const char *s, double unit_ms)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (end == s || errno || !isfinite(v) || v < 0)
		return -1;
	if (!strcmp(end, "ms"))
		;
	else if (!strcmp(end, "s"))
		v *= 1e3;
	else if (!strcmp(end, "m") || !strcmp(end, "min"))
		v *= 60e3;
	else if (!strcmp(end, "h"))
		v *= 3600e3;
	else if (!*end)
		v *= unit_ms;
	else
		return -1;
	if (v > 1e15)
		return -1;
	return (int64_t)(v + 0.5);
}

static int push_str(const char ***arr, uint32_t *nr, const char *s)
{
	const char **v = realloc(*arr, (*nr + 1) * sizeof(*v));

	if (!v)
		return -1;
	v[(*nr)++] = s;
	*arr = v;
	return 0;
}

/*
 * --preset and --nodes of `ameba run`: loads the geometry as the target's
 * runtime will (the same code), so that a bad name, file or node count is a
 * usage error here, naming the file and line, instead of a target that
 * falls back to its default. A preset file is passed on by absolute path.
 * 0, or 2 with the message printed.
 */
static int check_geometry(struct run_opts *o)
{
	struct mri_geom g;
	char err[512];
	const char *env = getenv("AMEBA_PRESET");
	const char *preset = o->preset ? o->preset : env;

	if (!o->preset && !o->nodes && !(env && *env))
		return 0;
	if (!preset || !*preset)
		preset = "host";
	if (mri_geom_load(preset, &g, err, sizeof(err))) {
		fprintf(stderr, "ameba run: %s%s: %s\n", o->preset ? "--preset " : "AMEBA_PRESET=",
			preset, err);
		return 2;
	}
	if (o->nodes && (mri_geom_set(&g, "nodes", o->nodes, err, sizeof(err)) ||
			 mri_geom_check(&g, err, sizeof(err)))) {
		fprintf(stderr, "ameba run: --nodes %s: %s\n", o->nodes, err);
		return 2;
	}
	if (o->preset && (strchr(o->preset, '/') || strstr(o->preset, ".conf")) &&
	    realpath(o->preset, o->preset_path))
		o->preset = o->preset_path;
	return 0;
}

/*
 * The report's file can be written (its directory exists and is writable,
 * and it is not a directory): checked before the target starts, so that a
 * mistyped --output does not cost a whole measurement. 0, or 2 (printed).
 */
static int check_output(const char *path, const char *opt, const char *prog)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');
	struct stat st;

	if (!*path) {
		fprintf(stderr, "%s: %s: an empty file name; give a file, e.g. %s report.%s\n",
			prog, opt, opt, strcmp(opt, "--html") ? "json" : "html");
		return 2;
	}
	if (!stat(path, &st) && S_ISDIR(st.st_mode)) {
		fprintf(stderr, "%s: %s %s: is a directory; give a file in it, e.g. %s "
			"%s/report.%s\n", prog, opt, path, opt, path,
			strcmp(opt, "--html") ? "json" : "html");
		return 2;
	}
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == path)
		snprintf(dir, sizeof(dir), "/");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	if (stat(dir, &st) || !S_ISDIR(st.st_mode)) {
		const char *why = stat(dir, &st) ? strerror(errno) : "not a directory";

		fprintf(stderr, "%s: cannot write the report %s: %s: %s; create the directory or "
			"give %s in an existing one\n", prog, path, dir, why, opt);
		return 2;
	}
	if (access(dir, W_OK | X_OK)) {
		fprintf(stderr, "%s: cannot write the report %s: directory %s: %s; give %s "
			"in a directory you can write\n", prog, path, dir, strerror(errno), opt);
		return 2;
	}
	return 0;
}

/* 0, or 2 (usage, message printed), or -1 for --help (printed). */
/* "2ms", "500us", "0.02s", "20000" (us) into *us: 0, or -1 when malformed. */
static int parse_us(const char *v, uint64_t *us)
{
	char *end;
	double x = strtod(v, &end), f;

	if (end == v || !(x >= 0))
		return -1;
	f = !*end || !strcmp(end, "us") ? 1 : !strcmp(end, "ms") ? 1e3 : !strcmp(end, "s") ? 1e6 : -1;
	if (f < 0 || x * f > 1e13)
		return -1;
	*us = (uint64_t)(x * f + 0.5);
	return 0;
}

static int parse_opts(int argc, char **argv, struct run_opts *o)
{
	const char *prog = o->attach ? "ameba attach" : "ameba run";
	int i;

	o->interval_ms = 100;
	o->strategy = "objects,threads";
	o->top = 20;
	o->min_severity = AGENT_MIN_SEVERITY_DEFAULT;
	o->connect_ms = RUN_CONNECT_MS_DEFAULT;
	o->gate = 1;
	o->what_if = 2;
	/* attach: a running program, most likely a long one (and one that
	 * should not slow down 100-fold for half a minute): sampled at once */
	o->sampling = (struct agent_sampling){ .mode = o->attach ? AGENT_SAMPLED : AGENT_AUTO,
					       .after_ms = 30000,
					       .period_us = MRI_SAMPLED_PERIOD_US,
					       .warm_us = MRI_SAMPLED_WARM_US,
					       .burst_us = MRI_SAMPLED_BURST_US };
	for (i = 0; i < argc; i++) {
		const char *a = argv[i], *val = NULL, *eq;
		char name[64];

		if (!strcmp(a, "--")) {
			i++;
			break;
		}
		if (a[0] != '-' || !a[1]) {
			if (o->attach && !o->pid) {
				char *end;
				long v = strtol(a, &end, 10);

				if (*end || v <= 0 || v > INT32_MAX) {
					fprintf(stderr, "%s: '%s' is not a process id\n", prog, a);
					return 2;
				}
				o->pid = (int32_t)v;
				continue;
			}
			break;	/* run: the command starts here */
		}
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			run_usage(stdout, o->attach);
			return -1;
		}
		if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
			o->quiet = 1;
			continue;
		}
		if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) {
			o->verbose = 1;
			continue;
		}
		if (!strcmp(a, "--views")) {
			o->views = 1;
			continue;
		}
		if (!strcmp(a, "--no-gate") && !o->attach) {
			o->gate = 0;
			continue;
		}
		if (!strcmp(a, "--exact") || !strcmp(a, "--sampled")) {
			o->sampling.mode = a[2] == 'e' ? AGENT_EXACT : AGENT_SAMPLED;
			continue;	/* the last of --exact, --sampled, --sample-after wins */
		}
		eq = strchr(a, '=');
		snprintf(name, sizeof(name), "%.*s", eq ? (int)(eq - a) : (int)strlen(a), a);
		if (!strcmp(name, "--duration") || !strcmp(name, "--interval") ||
		    !strcmp(name, "--strategy") || !strcmp(name, "--property") ||
		    !strcmp(name, "--plugin-path") || !strcmp(name, "--metric") ||
		    !strcmp(name, "--backend") || !strcmp(name, "--output") || !strcmp(name, "-o") ||
		    !strcmp(name, "--html") ||
		    !strcmp(name, "--format") || !strcmp(name, "--top") ||
		    !strcmp(name, "--min-severity") ||
		    !strcmp(name, "--connect-timeout") || !strcmp(name, "--refine-share") ||
		    !strcmp(name, "--refine-after") || !strcmp(name, "--preset") ||
		    !strcmp(name, "--nodes") || !strcmp(name, "--what-if") ||
		    !strcmp(name, "--sample-after") || !strcmp(name, "--sampling")) {
			if (eq) {
				val = eq + 1;
			} else if (i + 1 < argc) {
				val = argv[++i];
			} else {
				fprintf(stderr, "%s: %s needs a value; see %s --help\n", prog, name, prog);
				return 2;
			}
		} else {
			fprintf(stderr, "%s: unknown option '%s'; see %s --help\n", prog, a, prog);
			return 2;
		}
		if (!strcmp(name, "--duration")) {
			int64_t ms = parse_time_ms(val, 1e3);

			if (ms <= 0) {
				fprintf(stderr, "%s: --duration %s: want a positive time such as 10s, "
					"500ms or 2m\n", prog, val);
				return 2;
			}
			o->duration_ms = (uint64_t)ms;
		} else if (!strcmp(name, "--interval")) {
			int64_t ms = parse_time_ms(val, 1.0);

			if (ms < 1 || ms > 3600000) {
				fprintf(stderr, "%s: --interval %s: want a time from 1ms to 1h, such as "
					"100ms or 0.5s\n", prog, val);
				return 2;
			}
			o->interval_ms = (uint32_t)ms;
		} else if (!strcmp(name, "--sample-after")) {
			int64_t ms = parse_time_ms(val, 1e3);

			if (ms < 0) {
				fprintf(stderr, "%s: --sample-after %s: want a time such as 30s or 2m (0: "
					"sampled from the start, as --sampled)\n", prog, val);
				return 2;
			}
			o->sampling.after_ms = (uint64_t)ms;
			o->sampling.mode = ms ? AGENT_AUTO : AGENT_SAMPLED;
		} else if (!strcmp(name, "--sampling")) {
			uint64_t v[3];
			const char *q = val;

			for (int k = 0; k < 3; k++) {
				char part[32];
				size_t n = strcspn(q, "/");

				snprintf(part, sizeof(part), "%.*s", (int)(n < 31 ? n : 31), q);
				if (parse_us(part, &v[k]) || (k < 2 && q[n] != '/') || (k == 2 && q[n])) {
					fprintf(stderr, "%s: --sampling %s: want PERIOD/WARMUP/BURST such as "
						"20ms/2ms/2ms (units us, ms, s)\n", prog, val);
					return 2;
				}
				q += n + (q[n] == '/');
			}
			if (v[0] < 100 || v[2] < 10 || v[0] > 3600000000ull || v[1] > 3600000000ull ||
			    v[2] > 3600000000ull) {
				fprintf(stderr, "%s: --sampling %s: the period must be at least 100us and "
					"the burst at least 10us (at most 1h each)\n", prog, val);
				return 2;
			}
			o->sampling.period_us = (uint32_t)v[0];
			o->sampling.warm_us = (uint32_t)v[1];
			o->sampling.burst_us = (uint32_t)v[2];
		} else if (!strcmp(name, "--connect-timeout")) {
			int64_t ms = parse_time_ms(val, 1e3);

			if (ms < 0 || ms > 3600000) {
				fprintf(stderr, "%s: --connect-timeout %s: want a time such as 10s\n", prog,
					val);
				return 2;
			}
			o->connect_ms = (uint32_t)ms;
		} else if (!strcmp(name, "--strategy")) {
			o->strategy = val;
			o->strategy_given = 1;
		} else if (!strcmp(name, "--refine-share")) {
			char *end;
			double v = strtod(val, &end);

			if (end != val && *end == '%' && !end[1]) {
				v /= 100;
				end++;
			}
			if (end == val || *end || !(v > 0 && v < 1)) {
				fprintf(stderr, "%s: --refine-share %s: want a share between 0 and 1 "
					"such as 0.5 or 50%%\n", prog, val);
				return 2;
			}
			o->refine_share = v;
		} else if (!strcmp(name, "--refine-after")) {
			int64_t ms = parse_time_ms(val, 1e3);

			if (ms <= 0) {
				fprintf(stderr, "%s: --refine-after %s: want a positive time such as "
					"2s or 500ms\n", prog, val);
				return 2;
			}
			o->refine_after_ms = (uint64_t)ms;
		} else if (!strcmp(name, "--property")) {
			if (push_str(&o->props, &o->nr_props, val))
				return 2;
		} else if (!strcmp(name, "--plugin-path")) {
			if (push_str(&o->plugin_dirs, &o->nr_plugin_dirs, val))
				return 2;
		} else if (!strcmp(name, "--metric")) {
			if (ameba_metric_by_name(val) < 0) {
				fprintf(stderr, "%s: --metric %s: no such metric; `ameba list metrics` "
					"prints them\n", prog, val);
				return 2;
			}
			o->metric = val;
		} else if (!strcmp(name, "--what-if")) {
			char *end;
			long v = strtol(val, &end, 10);

			if (o->attach) {
				fprintf(stderr, "%s: --what-if: only `ameba run` can start the program "
					"again\n", prog);
				return 2;
			}
			if (*end || v < 0 || v > 100) {
				fprintf(stderr, "%s: --what-if %s: want a count of findings, 0..100\n",
					prog, val);
				return 2;
			}
			o->what_if = (int)v;
		} else if (!strcmp(name, "--preset") || !strcmp(name, "--nodes")) {
			if (o->attach) {
				fprintf(stderr, "%s: %s: a running process simulates the geometry it was "
					"started with; start it with AMEBA_PRESET=NAME|FILE (and "
					"AMEBA_NODES=N) in its environment, or use `ameba run %s %s`\n",
					prog, name, name, val);
				return 2;
			}
			if (!strcmp(name, "--preset"))
				o->preset = val;
			else
				o->nodes = val;
		} else if (!strcmp(name, "--backend")) {
			const struct ameba_backend_info *b;

			if (!perfmon_backend(val)) {
				/* the backend table's names (mri/common.c) */
				fprintf(stderr, "%s: --backend %s: no such backend; want one of",
					prog, val);
				for (int k = 0; (b = ameba_backend_info(k)); k++)
					fprintf(stderr, "%s %s", k ? "," : "", b->name);
				fprintf(stderr, " (`ameba list backends`)\n");
				return 2;
			}
			o->backend = val;
		} else if (!strcmp(name, "--output") || !strcmp(name, "-o")) {
			o->output = val;
		} else if (!strcmp(name, "--html")) {
			o->html = val;
			o->views = 1;
		} else if (!strcmp(name, "--format")) {
			if (!strcmp(val, "json"))
				o->json = 1;
			else if (!strcmp(val, "table"))
				o->json = 0;
			else {
				fprintf(stderr, "%s: --format %s: want table or json\n", prog, val);
				return 2;
			}
		} else if (!strcmp(name, "--top")) {
			char *end;
			long v = strtol(val, &end, 10);

			if (*end || v < 0 || v > 1000000) {
				fprintf(stderr, "%s: --top %s: want a count (0 = all)\n", prog, val);
				return 2;
			}
			o->top = (uint32_t)v;
		} else if (!strcmp(name, "--min-severity")) {
			if (agent_parse_min_severity(val, &o->min_severity)) {
				fprintf(stderr, "%s: --min-severity %s: want a severity from 0 to 1 "
					"such as 0.001 or 0.1%% (0 shows every finding)\n", prog, val);
				return 2;
			}
		}
	}
	/* the default strategies of the backends for uninstrumented programs
	 * (docs/backends.md): breakpoints count a few words, not objects; page
	 * faults count no reads and writes, which the threads stage needs */
	if (!o->strategy_given && perfmon_is_backend(o->backend) && !strcmp(o->backend, "watch"))
		o->strategy = "words";
	if (!o->strategy_given && perfmon_is_backend(o->backend) &&
	    !strcmp(o->backend, "pagefault"))
		o->strategy = "objects";
	if (o->attach) {
		if (i < argc && !o->pid) {
			char *end;
			long v = strtol(argv[i], &end, 10);

			if (!*end && v > 0 && v <= INT32_MAX) {
				o->pid = (int32_t)v;
				i++;
			}
		}
		if (i < argc) {
			fprintf(stderr, "%s: unexpected argument '%s'\n", prog, argv[i]);
			return 2;
		}
		if (!o->pid) {
			fprintf(stderr, "%s: which process? usage: ameba attach PID [options]\n", prog);
			return 2;
		}
	} else {
		if (check_geometry(o))
			return 2;
		if (i >= argc) {
			fprintf(stderr, "%s: no command to run; usage: ameba run [options] -- CMD "
				"[ARGS...]\n", prog);
			return 2;
		}
		o->cmd = argv + i;
		o->nr_cmd = argc - i;
	}
	if (o->html && check_output(o->html, "--html", prog))
		return 2;
	return check_output(o->output ? o->output : "ameba-PID.json", "--output", prog);
}

/* The command line of pid from /proc (attach), as an argv; NULL if unknown. */
static char **proc_cmdline(int32_t pid, int *nr)
{
	char path[64], *text, **v;
	size_t len, k = 0;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	text = agent_read_file(path, &len);
	*nr = 0;
	if (!text)
		return NULL;
	for (size_t i = 0; i < len; i++)
		n += text[i] == '\0';
	v = calloc((size_t)n + 2, sizeof(*v));
	if (!v) {
		free(text);
		return NULL;
	}
	v[0] = text;	/* owns the buffer */
	for (size_t i = 0; i < len && k < (size_t)n; i += strlen(text + i) + 1)
		v[k++] = text + i;
	*nr = (int)k;
	return v;
}

struct gate {
	int fd;		/* the write end, -1 once released */
};

static void gate_release(void *arg)
{
	struct gate *g = arg;

	if (g->fd >= 0) {
		ssize_t w;

		do
			w = write(g->fd, "g", 1);
		while (w < 0 && errno == EINTR);
		close(g->fd);
		g->fd = -1;
	}
}

/*
 * Starts the target. Returns its pid, or -1 with the reason printed.
 * With a gate, the target waits at main() until gate_release().
 */
static pid_t launch(const struct run_opts *o, struct gate *g)
{
	int gate_pipe[2] = { -1, -1 }, err_pipe[2];
	char libdir[PATH_MAX], gate_lib[PATH_MAX + 32];
	pid_t pid;
	ssize_t n;
	int child_errno = 0;

	g->fd = -1;
	if (o->gate && !agent_libdir(libdir, sizeof(libdir))) {
		snprintf(gate_lib, sizeof(gate_lib), "%s/libameba-gate.so", libdir);
		if (access(gate_lib, R_OK) || pipe2(gate_pipe, O_CLOEXEC)) {
			gate_pipe[0] = gate_pipe[1] = -1;
		}
	}
	if (pipe2(err_pipe, O_CLOEXEC)) {
		fprintf(stderr, "ameba run: pipe: %s\n", strerror(errno));
		return -1;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "ameba run: fork: %s\n", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		static const int sigs[] = { SIGINT, SIGTERM, SIGPIPE, SIGQUIT, SIGHUP };

		for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
			signal(sigs[i], SIG_DFL);
		if (gate_pipe[0] >= 0) {
			char fdtext[16], *pre = getenv("LD_PRELOAD"), *buf;
			size_t len;

			fcntl(gate_pipe[0], F_SETFD, 0);	/* the target inherits the read end */
			snprintf(fdtext, sizeof(fdtext), "%d", gate_pipe[0]);
			len = strlen(gate_lib) + (pre ? strlen(pre) : 0) + 2;
			buf = malloc(len);
			if (buf) {
				snprintf(buf, len, "%s%s%s", gate_lib, pre && *pre ? ":" : "",
					 pre ? pre : "");
				setenv("LD_PRELOAD", buf, 1);
				setenv("AMEBA_GATE_FD", fdtext, 1);
				setenv("AMEBA_GATE_LIB", gate_lib, 1);
			}
		}
		if (o->preset)
			setenv("AMEBA_PRESET", o->preset, 1);
		if (o->nodes)
			setenv("AMEBA_NODES", o->nodes, 1);
		/* --format json: stdout is the report's alone (a parser reads
		 * it); the target's standard output goes to our stderr */
		if (o->json && !o->quiet)
			dup2(STDERR_FILENO, STDOUT_FILENO);
		execvp(o->cmd[0], o->cmd);
		child_errno = errno;
		n = write(err_pipe[1], &child_errno, sizeof(child_errno));
		(void)n;
		_exit(127);
	}
	close(err_pipe[1]);
	if (gate_pipe[0] >= 0)
		close(gate_pipe[0]);
	g->fd = gate_pipe[1];
	do
		n = read(err_pipe[0], &child_errno, sizeof(child_errno));
	while (n < 0 && errno == EINTR);
	close(err_pipe[0]);
	if (n == (ssize_t)sizeof(child_errno)) {
		fprintf(stderr, "ameba run: cannot run '%s': %s%s\n", o->cmd[0], strerror(child_errno),
			child_errno == ENOENT ? " (not found in PATH; give a path like ./app)" : "");
		waitpid(pid, NULL, 0);
		if (g->fd >= 0)
			close(g->fd);
		g->fd = -1;
		return -1;
	}
	return pid;
}

/*
 * Waits for the child. block: until it exits or a new signal arrives
 * (returns 0 then); else polls up to max_ms. 1 with *status when it ended.
 */
static int wait_child(pid_t pid, int *status, int block, int stop_mark, uint32_t max_ms)
{
	struct timespec ts = { 0, 5 * 1000000L };
	uint32_t waited = 0;

	for (;;) {
		pid_t r = waitpid(pid, status, WNOHANG);

		if (r == pid)
			return 1;
		if (r < 0 && errno != EINTR)
			return 0;
		if (block ? run_stop > stop_mark : waited >= max_ms)
			return 0;
		nanosleep(&ts, NULL);
		waited += 5;
	}
}

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double self_cpu_s(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru))
		return 0;
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static double run_started_s;

static void set_target(struct agent_run_info *ri, int status)
{
	ri->target_wall_s = mono_s() - run_started_s;
	if (WIFEXITED(status)) {
		ri->target_state = AGENT_TARGET_EXITED;
		ri->target_exit_code = WEXITSTATUS(status);
	} else if (WIFSIGNALED(status)) {
		ri->target_state = AGENT_TARGET_KILLED;
		ri->target_signal = WTERMSIG(status);
	}
}

static int target_failed(const struct agent_run_info *ri)
{
	return (ri->target_state == AGENT_TARGET_EXITED && ri->target_exit_code != 0) ||
	       ri->target_state == AGENT_TARGET_KILLED;
}

static int emit(const struct run_opts *o, const struct agent_search *s,
		struct agent_run_info *ri, const struct agent_plugins *pl, const char *out_path,
		int print)
{
	char err[1024];
	cJSON *root;
	int rc;

	ri->agent_cpu_s = self_cpu_s();
	root = agent_report_build(s, ri, pl);

	if (!root) {
		fprintf(stderr, "ameba: out of memory while building the report\n");
		return AMEBA_ENOMEM;
	}
	/* the final report of a run whose target exited cleanly: predicted
	 * speedups by simulating the fixes (whatif.c) */
	if (print && !o->attach && o->what_if > 0 && ri->target_state == AGENT_TARGET_EXITED &&
	    ri->target_exit_code == 0 && (!o->backend || !strcmp(o->backend, "sim")))
		agent_whatif_apply(root, o->cmd, o->what_if, o->quiet);
	rc = agent_report_write(root, out_path, err, sizeof(err));
	if (!rc && o->html && (rc = agent_report_html_write(root, o->html, err, sizeof(err))))
		fprintf(stderr, "ameba: %s (the JSON report %s was written)\n", err, out_path);
	else if (rc)
		fprintf(stderr, "ameba: %s\n", err);
	else if (print && !o->quiet) {
		if (o->json) {
			char *text = cJSON_Print(root);

			if (text)
				printf("%s\n", text);
			free(text);
		} else {
			agent_report_table(root, stdout, o->top, o->min_severity);
			printf("report: %s\n", out_path);
			if (o->html)
				printf("html: %s\n", o->html);
		}
		fflush(stdout);
	}
	cJSON_Delete(root);
	return rc;
}

/*
 * Splits a chain "A[:k=v,...],B[:k=v,...]" into its two specs (*b = NULL
 * for a lone strategy). A comma-separated piece starts the next strategy
 * when it is a bare name or NAME:k=v (a parameter key has no ':').
 * 0, or -1 for more than two strategies (or no memory).
 */
static int chain_split(const char *spec, char **a, char **b)
{
	const char *p = spec, *cut = NULL;
	int nr = 1;

	*a = *b = NULL;
	while ((p = strchr(p, ','))) {
		const char *piece = p + 1, *end = strchr(piece, ','), *eq, *colon;

		if (!end)
			end = piece + strlen(piece);
		eq = memchr(piece, '=', (size_t)(end - piece));
		colon = memchr(piece, ':', (size_t)(end - piece));
		if (!eq || (colon && colon < eq)) {
			if (++nr > 2)
				return -1;
			cut = p;
		}
		p = piece;
	}
	*a = cut ? strndup(spec, (size_t)(cut - spec)) : strdup(spec);
	*b = cut ? strdup(cut + 1) : NULL;
	return !*a || (cut && !*b) ? -1 : 0;
}

/* The strategy of one spec, with its parameters checked. 0, or 2 (printed). */
static int strategy_find(const char *prog, struct agent_plugins *pl, const char *whole,
			 const char *spec, struct agent_strategy **out, char **name,
			 struct agent_params *given)
{
	struct agent_params probe;
	char err[1024], who[128];

	if (agent_spec_parse(spec, name, given, err, sizeof(err))) {
		fprintf(stderr, "%s: --strategy %s\n", prog, err);
		return 2;
	}
	*out = agent_plugins_strategy(pl, *name);
	if (!*out) {
		size_t n = (size_t)snprintf(err, sizeof(err), "--strategy %s: no such strategy; loaded:",
					    *name);

		for (uint32_t i = 0; i < pl->nr_strategies && n < sizeof(err); i++)
			n += (size_t)snprintf(err + n, sizeof(err) - n, " %s", pl->strategies[i].name);
		if (!pl->nr_strategies && n < sizeof(err))
			snprintf(err + n, sizeof(err) - n, " none (is lib/ameba/strategies/ next to "
				 "bin/ameba? set AMEBA_LIBDIR)");
		fprintf(stderr, "%s: %s\n", prog, err);
		return 2;
	}
	/* parameter names and types are checked before anything starts */
	snprintf(who, sizeof(who), "strategy %s", (*out)->name);
	if (agent_params_resolve(who, (*out)->desc.params, (*out)->desc.nr_params, given, &probe,
				 err, sizeof(err))) {
		fprintf(stderr, "%s: --strategy %s: %s\n", prog, whole, err);
		return 2;
	}
	agent_params_free(&probe);
	return 0;
}

/*
 * The exit status once the target's end is known: a target that failed
 * makes it 3 (named on stderr) whatever else went wrong -- a crash ends
 * the search in different places from run to run, and the status must
 * not follow it; otherwise ret.
 */
static int target_failure(const char *prog, const struct agent_run_info *ri, int ret)
{
	if (!target_failed(ri))
		return ret;
	if (ri->target_state == AGENT_TARGET_EXITED)
		fprintf(stderr, "%s: the target exited with status %d\n", prog, ri->target_exit_code);
	else
		fprintf(stderr, "%s: the target was killed by SIG%s\n", prog,
			sigabbrev_np(ri->target_signal) ? sigabbrev_np(ri->target_signal) : "?");
	return 3;
}

static int run_or_attach(int argc, char **argv, int attach)
{
	struct run_opts o = { .attach = attach };
	struct agent_plugins pl;
	struct agent_search s;
	struct agent_run_info ri = { 0 };
	struct agent_provider *prov = NULL;
	struct agent_strategy *strat;
	struct agent_params strat_given = { 0 }, strat_b_given = { 0 };
	struct agent_strategy *strat_b = NULL;
	char *chain[2] = { NULL, NULL }, *strat_b_name = NULL;
	struct gate gate = { -1 };
	struct sigaction sa;
	char err[1024], *strat_name = NULL, out_path[PATH_MAX];
	char **attach_cmd = NULL;
	const char **select = NULL;
	uint32_t nr_select = 0;
	pid_t child = -1;
	int status = 0, have_status = 0, rc, ret = 1, perr = 0, stop_mark;
	const char *prog = attach ? "ameba attach" : "ameba run";

	rc = parse_opts(argc, argv, &o);
	if (rc)
		return rc < 0 ? 0 : rc;

	agent_plugins_init(&pl);
	pl.quiet = 0;
	agent_plugins_scan(&pl, o.plugin_dirs, o.nr_plugin_dirs);
	for (uint32_t i = 0; i < o.nr_props; i++) {
		const char *spec = o.props[i];
		int is_file = strchr(spec, '/') || strstr(spec, ".lua") || strstr(spec, ".so") ||
			      strstr(spec, ".asl");

		if (is_file && agent_plugins_add_file(&pl, spec, 0)) {
			/* named on the command line: the user wants it; a plugin
			 * directory's broken file is only a warning */
			fprintf(stderr, "%s: --property %s did not load (above); fix it or leave it "
				"out\n", prog, spec);
			ret = 2;
			goto out;
		} else if (!is_file && push_str(&select, &nr_select, spec)) {
			goto out;
		}
	}
	if (agent_plugins_link(&pl, select, nr_select, err, sizeof(err))) {
		fprintf(stderr, "%s: %s\n", prog, err);
		ret = 2;
		goto out;
	}
	if (chain_split(o.strategy, &chain[0], &chain[1])) {
		fprintf(stderr, "%s: --strategy %s: a chain has at most two strategies, written "
			"A[:k=v,...],B[:k=v,...] (e.g. objects,threads)\n", prog, o.strategy);
		ret = 2;
		goto out;
	}
	if (!o.strategy_given && chain[1] && !agent_plugins_strategy(&pl, chain[1])) {
		/* the default chain without threads.so installed: objects alone */
		free(chain[1]);
		chain[1] = NULL;
	}
	if (strategy_find(prog, &pl, o.strategy, chain[0], &strat, &strat_name, &strat_given) ||
	    (chain[1] && strategy_find(prog, &pl, o.strategy, chain[1], &strat_b, &strat_b_name,
				       &strat_b_given))) {
		ret = 2;
		goto out;
	}
	{
		uint32_t nr_ok = 0;

		for (uint32_t i = 0; i < pl.nr_props; i++)
			nr_ok += pl.props[i].selected && !pl.props[i].disabled;
		if (!nr_ok)
			fprintf(stderr, "%s: warning: no property is loaded; the report will list "
				"objects but no findings\n", prog);
	}

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	ri.target_wall_s = -1;
	if (!attach) {
		run_started_s = mono_s();
		child = launch(&o, &gate);
		if (child < 0)
			goto out;
		o.pid = child;
	}
	if (perfmon_is_backend(o.backend))	/* uninstrumented targets (docs/backends.md) */
		prov = agent_provider_perf_open(o.pid, o.backend, o.metric, &perr, err, sizeof(err));
	else
		prov = agent_provider_mri_open(o.pid, o.backend, attach ? 0 : o.connect_ms, child,
					       &status, &o.sampling, &run_stop, &perr, err, sizeof(err));
	if (!prov) {
		gate_release(&gate);
		fprintf(stderr, "%s: %s\n", prog, err);
		if (child > 0) {
			if (perr != AMEBA_EEXITED || run_stop) {
				if (!o.quiet)
					fprintf(stderr, "%s: the target runs on without ameba; waiting for "
						"it to exit\n", prog);
				have_status = wait_child(child, &status, 1, run_stop, 0);
			} else {
				have_status = 1;	/* reaped by the provider */
			}
			if (have_status) {
				set_target(&ri, status);
				ret = target_failure(prog, &ri, ret);
			}
		}
		goto out;
	}
	prov->armed = gate_release;
	prov->armed_arg = &gate;

	memset(&s, 0, sizeof(s));
	s.pl = &pl;
	s.strat = strat;
	s.strat_given = &strat_given;
	s.strat_b = strat_b;
	s.strat_b_given = &strat_b_given;
	s.opts.refine_share = o.refine_share;
	s.opts.refine_after_ms = o.refine_after_ms;
	s.prov = prov;
	s.opts.interval_ms = o.interval_ms;
	s.opts.duration_ms = o.duration_ms;
	s.opts.primary_metric = o.metric ? ameba_metric_by_name(o.metric) : -1;
	s.opts.progress = !o.quiet && isatty(STDERR_FILENO);
	s.opts.verbose = o.verbose;
	s.opts.stop = &run_stop;
	s.opts.nr_top_objects = 20;
	s.opts.views_samples = o.views;
	rc = agent_search_run(&s);
	gate_release(&gate);
	stop_mark = run_stop;
	if (rc) {
		fprintf(stderr, "%s: %s\n", prog, s.error);
		prov->ops->close(prov);
		prov = NULL;
		ret = rc == AMEBA_EINVAL || rc == AMEBA_ENOTSUP ? 2 : 1;
		if (child > 0 && wait_child(child, &status, 1, stop_mark, 0)) {
			set_target(&ri, status);
			ret = target_failure(prog, &ri, ret);
		}
		agent_search_free(&s);
		goto out;
	}

	ri.mode = attach ? "attach" : "run";
	ri.interval_ms = o.interval_ms;
	ri.duration_ms = o.duration_ms;
	if (attach) {
		attach_cmd = proc_cmdline(o.pid, &ri.nr_command);
		ri.command = attach_cmd ? attach_cmd : NULL;
		if (!attach_cmd)
			ri.nr_command = 0;
	} else {
		ri.command = o.cmd;
		ri.nr_command = o.nr_cmd;
	}
	ri.target_state = AGENT_TARGET_RUNNING;
	if (s.end == AGENT_END_EXITED) {
		if (child > 0 && wait_child(child, &status, 0, 0, 5000)) {
			have_status = 1;
			set_target(&ri, status);
		} else {
			ri.target_state = AGENT_TARGET_GONE;
		}
	}
	if (o.output)
		snprintf(out_path, sizeof(out_path), "%s", o.output);
	else
		snprintf(out_path, sizeof(out_path), "ameba-%d.json", (int)o.pid);

	/* detach first: the target goes dormant before we spend time writing */
	prov->ops->close(prov);
	prov = NULL;
	if (emit(&o, &s, &ri, &pl, out_path, 1)) {
		agent_search_free(&s);
		if (child > 0 && !have_status)
			wait_child(child, &status, 1, stop_mark, 0);
		goto out;
	}
	if (s.error[0])
		fprintf(stderr, "%s: %s\n", prog, s.error);
	ret = s.end == AGENT_END_ERROR ? 1 : 0;
	if (child > 0 && !have_status) {
		if (!o.quiet)
			fprintf(stderr, "%s: report written; waiting for the target (pid %d) to exit; "
				"interrupt again to leave it running\n", prog, (int)child);
		if (wait_child(child, &status, 1, stop_mark, 0)) {
			have_status = 1;
			set_target(&ri, status);
			/* the report learns how the target ended */
			emit(&o, &s, &ri, &pl, out_path, 0);
		} else if (!o.quiet) {
			fprintf(stderr, "%s: leaving pid %d running\n", prog, (int)child);
		}
	}
	if (have_status)
		ret = target_failure(prog, &ri, ret);
	agent_search_free(&s);
out:
	gate_release(&gate);
	if (prov)
		prov->ops->close(prov);
	if (attach_cmd) {
		free(attach_cmd[0]);
		free(attach_cmd);
	}
	free(strat_name);
	free(strat_b_name);
	free(chain[0]);
	free(chain[1]);
	agent_params_free(&strat_given);
	agent_params_free(&strat_b_given);
	free(select);
	free(o.props);
	free(o.plugin_dirs);
	agent_plugins_destroy(&pl);
	return ret;
}

int agent_cmd_run(int argc, char **argv)
{
	return run_or_attach(argc, argv, 0);
}

int agent_cmd_attach(int argc, char **argv)
{
	return run_or_attach(argc, argv, 1);
}
