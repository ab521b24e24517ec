/*
 * mri_attach_test.c - the MRI against a live instrumented target
 * (mri_target.c), one scenario per run:
 *
 *   count   a client attaches by pid, finds the objects by name, arms
 *           counters on work_a, work_b and the total (mem_ref and writes on
 *           each: the product form of start), reads them after
 *           each of three phases and detaches. Every reading equals what the
 *           target reports it did in that window, and agrees with the
 *           AMEBA_ORACLE dump: a window's count is the oracle's count minus
 *           the accesses outside the window (per array, from the target's
 *           reports; for the total, from a reference run without the window
 *           phases). A second client meanwhile is refused as busy. The
 *           output equals the native build's.
 *   killed  a client process is killed with SIGKILL mid-experiment (interval
 *           events flowing); the target runs on with correct output, is
 *           dormant again, and a new client attaches and counts exactly.
 *   exit    the target exits while a client polls it: the client gets a
 *           clean AMEBA_EEXITED, the exit event and the final counts; the
 *           socket file is gone afterwards.
 *   mark    oracle marks (docs/oracle.md): with AMEBA_ORACLE, a mark taken
 *           between two phases holds exactly the accesses made before it
 *           (per array from the target's reports; over all objects, a
 *           reference run's oracle minus its final checksum), reads/writes
 *           included, and the oracle at exit is the mark plus what came
 *           after; no temporary file is left behind. A bad label is refused
 *           and the session goes on. Without AMEBA_ORACLE the reply says
 *           why and no file appears.
 *   fold    bounded memory (monitor/fold.c): under the sim backend the
 *           main thread allocates, touches and frees 200,000 blocks of one
 *           site while two other threads exist (ordered mode); counters on
 *           the site's bin, armed before, count exactly its 5 accesses per
 *           block (1,000,000; 800,000 writes), though the blocks' records
 *           were recycled and their counts folded into the site's retired
 *           record meanwhile: the object table stays under 20,000 records
 *           (it grew by one per block before), nr_freed counts every free.
 *           Then 200,000 blocks handed between threads (a helper allocates
 *           and writes them, main reads and frees them: two holders each)
 *           count exactly (5 accesses a block on their bin) and leave the
 *           table under 30,000 records; and 200,000 blocks of three
 *           holders (a relay thread that never allocates reads each one
 *           between them: 6 accesses a block) leave it under 40,000.
 *           (ctest runs it twice: mri_fold in the sim backend's time order,
 *           mri_fold_host in host order, where each thread simulates its
 *           own accesses and invalidations reach lines of freed blocks.)
 *   provider_fold  the agent's MRI provider keeps the live blocks of a
 *           churning site right while the monitor recycles their ids: 10
 *           blocks kept out of 5,000 are listed; 10 more kept out of 5,000
 *           more, most in recycled ids below the listing's end, are learnt
 *           by the sweep, each once.
 *   rows    per-thread rows of short-lived threads: after 40 threads each
 *           made 10 reads and 10 writes and ended, a read with rows lists
 *           each once (20 mem_ref); the next read, after a phase of the
 *           workers, lists none of them (an exited thread's row is sent
 *           once), while the totals still hold their 800 accesses. The
 *           agent's provider then gives strategies the rows of those
 *           threads alone (ameba_results.thread_ids).
 *   provider_exit  the agent's MRI provider (agent/provider_mri.c) counts
 *           work_a, work_b and the total; the target works one phase and
 *           exits; the next experiment, which keeps the work_a counter and
 *           adds one on work_b's reads, gets from the old experiment's
 *           final reading exactly what work_a's counter counted since its
 *           last reading (the phase and the final checksum), and 0 for the
 *           counter that never ran (a switch that finds the target gone
 *           used to report nothing: the last loop of million_live, lost).
 *   replace_exit  the target exits while the monitor replies to the
 *           provider's experiment replace (the reply held back 800 ms by
 *           AMEBA_MRI_TEST_REPLACE_DELAY_MS, the quit sent 100 ms into
 *           it): the reply, with the replaced experiment's final reading,
 *           still comes before the exit event, so work_a's counter that
 *           goes on has the phase (carried) and the final checksum (the
 *           exit event's reading, the new experiment's), and the new
 *           counter on work_b's reads the checksum's 2,048. (The exit
 *           event used to overtake the reply, which was dropped: the
 *           phase was lost, and the exit event's reading of the new
 *           experiment taken as the old one's.)
 *
 * usage: mri_attach_test SCENARIO INSTRUMENTED_TARGET NATIVE_TARGET
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "check.h"
#include "mri.h"
#include "provider.h"

struct target {
	pid_t pid;
	int ctl;			/* its stdin */
	FILE *ack;			/* its fd 3 */
};

struct phase_counts {
	long k, a, ar, aw, b, br, bw;
};

static char tmpdir[] = "/tmp/mri-test.XXXXXX";

static void die(const char *what)
{
	fprintf(stderr, "mri_attach_test: %s: %s\n", what, strerror(errno));
	exit(2);
}

/* Starts bin with stdout to out; oracle (optional) sets AMEBA_ORACLE. */
static void spawn(struct target *t, const char *bin, const char *out, const char *oracle)
{
	int ctl[2], ack[2];
	char line[128];

	if (pipe2(ctl, O_CLOEXEC) || pipe2(ack, O_CLOEXEC))
		die("pipe");
	t->pid = fork();
	if (t->pid < 0)
		die("fork");
	if (t->pid == 0) {
		int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

		if (fd < 0 || dup2(ctl[0], 0) < 0 || dup2(ack[1], 3) < 0 || dup2(fd, 1) < 0)
			_exit(126);
		setenv("XDG_RUNTIME_DIR", tmpdir, 1);
		if (oracle)
			setenv("AMEBA_ORACLE", oracle, 1);
		else
			unsetenv("AMEBA_ORACLE");
		unsetenv("AMEBA_MRI");
		execl(bin, bin, (char *)NULL);
		_exit(127);
	}
	close(ctl[0]);
	close(ack[1]);
	t->ctl = ctl[1];
	t->ack = fdopen(ack[0], "r");
	if (!t->ack || !fgets(line, sizeof(line), t->ack) || strncmp(line, "ready ", 6)) {
		fprintf(stderr, "mri_attach_test: %s did not start\n", bin);
		exit(2);
	}
}

static void say(struct target *t, const char *cmd)
{
	if (write(t->ctl, cmd, strlen(cmd)) != (ssize_t)strlen(cmd))
		die("write to the target");
}

static struct phase_counts phase(struct target *t, long passes)
{
	struct phase_counts c = { 0 };
	char cmd[64], line[256];

	snprintf(cmd, sizeof(cmd), "phase %ld\n", passes);
	say(t, cmd);
	if (!fgets(line, sizeof(line), t->ack) ||
	    sscanf(line, "done %ld a=%ld ar=%ld aw=%ld b=%ld br=%ld bw=%ld", &c.k, &c.a, &c.ar, &c.aw,
		   &c.b, &c.br, &c.bw) != 7) {
		fprintf(stderr, "mri_attach_test: no ack for %s", cmd);
		exit(2);
	}
	return c;
}

/* Sends quit; returns the accesses the final checksum makes (a + b). */
static void quit(struct target *t, long *qa, long *qb)
{
	char line[128];
	int status;

	say(t, "quit\n");
	if (!fgets(line, sizeof(line), t->ack) || sscanf(line, "quit a=%ld b=%ld", qa, qb) != 2) {
		fprintf(stderr, "mri_attach_test: no ack for quit\n");
		exit(2);
	}
	if (waitpid(t->pid, &status, 0) != t->pid)
		die("waitpid");
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	close(t->ctl);
	fclose(t->ack);
}

/* Runs bin through the phases given (0-terminated), then quit. */
static void run_script(const char *bin, const char *out, const char *oracle, const long *passes)
{
	struct target t;
	long qa, qb;

	spawn(&t, bin, out, oracle);
	for (int i = 0; passes[i]; i++)
		phase(&t, passes[i]);
	quit(&t, &qa, &qb);
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = malloc((size_t)n + 1);
	if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	if (buf)
		buf[n] = '\0';
	fclose(f);
	return buf;
}

static void same_output(const char *a, const char *b)
{
	char *x = slurp(a), *y = slurp(b);

	CHECK(x && y);
	if (x && y && strcmp(x, y)) {
		fprintf(stderr, "output differs:\n--- native\n%s--- instrumented, with a client\n%s", x, y);
		CHECK(0);
	}
	free(x);
	free(y);
}

/* The oracle's count of metric of the object named name, or of all objects (NULL). */
static uint64_t oracle_count(const char *path, const char *name, const char *metric)
{
	char *txt = slurp(path);
	cJSON *root = txt ? cJSON_Parse(txt) : NULL, *o;
	uint64_t sum = 0;

	CHECK(root != NULL);
	cJSON_ArrayForEach(o, cJSON_GetObjectItem(root, "objects")) {
		const cJSON *n = cJSON_GetObjectItem(o, "name");
		const cJSON *m = cJSON_GetObjectItem(cJSON_GetObjectItem(o, "total"), metric);

		if (!name || (cJSON_IsString(n) && !strcmp(n->valuestring, name)))
			sum += cJSON_IsNumber(m) ? (uint64_t)m->valuedouble : 0;
	}
	cJSON_Delete(root);
	free(txt);
	return sum;
}

/* A bin's total of metric in an oracle file (-1: no such bin). */
static int64_t oracle_bin_count(const char *path, const char *name, const char *metric)
{
	char *txt = slurp(path);
	cJSON *root = txt ? cJSON_Parse(txt) : NULL, *b;
	int64_t v = -1;

	CHECK(root != NULL);
	cJSON_ArrayForEach(b, cJSON_GetObjectItem(root, "bins")) {
		const cJSON *n = cJSON_GetObjectItem(b, "name");
		const cJSON *m = cJSON_GetObjectItem(cJSON_GetObjectItem(b, "total"), metric);

		if (cJSON_IsString(n) && !strcmp(n->valuestring, name) && cJSON_IsNumber(m))
			v = (int64_t)m->valuedouble;
	}
	cJSON_Delete(root);
	free(txt);
	return v;
}

static uint64_t oracle_mem_ref(const char *path, const char *name)
{
	return oracle_count(path, name, "mem_ref");
}

/* The id of the live global named name. */
static uint32_t object_id(struct mri_session *s, const char *name)
{
	struct mri_object_query q = { .kinds = 1u << MRI_OBJ_GLOBAL, .live_only = 1, .name = name };
	struct mri_object o[4];
	uint32_t cursor = 0;
	int n = 0, got;

	while (cursor != MRI_END && (got = mri_objects(s, &q, &cursor, o + n, 4 - (uint32_t)n)) >= 0)
		n += got;
	CHECK_EQ_U64(n, 1);
	if (n == 1) {
		CHECK_STR(o[0].name, name);
		CHECK(o[0].end - o[0].start == (strcmp(name, "work_a") ? 2048 : 4096) * 8);
	}
	return n >= 1 ? o[0].id : UINT32_MAX;
}

/* Lists every object; checks the expected names are present. */
static void check_listing(struct mri_session *s)
{
	struct mri_object page[512];
	uint32_t cursor = 0, nr = 0;
	int have_a = 0, have_b = 0, have_table = 0, have_stack = 0, n;
	uint64_t dead = 0;

	CHECK(mri_objects_freed(s) == UINT64_MAX);	/* no objects reply yet */
	while (cursor != MRI_END) {
		n = mri_objects(s, NULL, &cursor, page, 512);
		CHECK(n >= 0);
		if (n < 0) {
			fprintf(stderr, "%s\n", mri_errmsg(s));
			break;
		}
		for (int i = 0; i < n; i++, nr++) {
			const char *name = page[i].name ? page[i].name : "";

			have_a |= !strcmp(name, "work_a") && page[i].kind == MRI_OBJ_GLOBAL;
			have_b |= !strcmp(name, "work_b") && page[i].kind == MRI_OBJ_GLOBAL;
			have_table |= !strncmp(name, "make_table@mri_target.c:", 24) &&
				      page[i].kind == MRI_OBJ_HEAP && page[i].live &&
				      page[i].sz_bytes == 64 * 1024 && page[i].bin_id != MRI_NO_BIN;
			have_stack |= !strcmp(name, "[stack T1]") && page[i].kind == MRI_OBJ_STACK;
			dead += !page[i].live;
		}
	}
	/* nr_freed counts every record that stopped being live, make_scratch's
	 * three frees at least (records never accessed may be reused, so the
	 * listing can show fewer dead ones) */
	CHECK(mri_objects_freed(s) != UINT64_MAX && mri_objects_freed(s) >= 3 &&
	      mri_objects_freed(s) >= dead);
	CHECK(nr > 4);
	CHECK(have_a);
	CHECK(have_b);
	CHECK(have_table);
	CHECK(have_stack);
}

/*
 * The bins: every site seen, also one whose blocks were all freed before the
 * client listed (make_scratch: 3 blocks of 256 bytes, no live object), then
 * the kind bins [stack] and [tls], last.
 */
static void check_bins(struct mri_session *s)
{
	struct mri_bin page[64];
	struct mri_object_query q = { .live_only = 1 };
	struct mri_object o[4];
	uint32_t cursor = 0, nr = 0, ocursor = 0;
	int scratch = -1, table = -1, stack = -1, tls = -1, n;
	char scratch_name[128] = "";

	while (cursor != MRI_END && nr < 64) {
		n = mri_bins(s, &cursor, page + nr, 64 - nr);
		CHECK(n > 0);
		if (n <= 0)
			break;
		nr += (uint32_t)n;
	}
	for (uint32_t i = 0; i < nr; i++) {
		const char *name = page[i].name ? page[i].name : "";

		if (!strncmp(name, "make_scratch@mri_target.c:", 26)) {
			scratch = (int)i;
			snprintf(scratch_name, sizeof(scratch_name), "%s", name);
		}
		table = !strncmp(name, "make_table@mri_target.c:", 24) ? (int)i : table;
		stack = !strcmp(name, "[stack]") ? (int)i : stack;
		tls = !strcmp(name, "[tls]") ? (int)i : tls;
	}
	CHECK(scratch >= 0 && table >= 0);
	CHECK(stack >= 0 && stack == (int)nr - 2);
	CHECK(tls >= 0 && tls == (int)nr - 1);
	if (scratch >= 0) {
		CHECK_EQ_U64(page[scratch].nr_objects, 3);
		CHECK_EQ_U64(page[scratch].sz_bytes, 3 * 256);
		/* listed as a bin, though no live object has its name */
		int live = 0;

		q.name = scratch_name;
		while (ocursor != MRI_END && (n = mri_objects(s, &q, &ocursor, o, 4)) >= 0)
			live += n;
		CHECK_EQ_U64(live, 0);
	}
	if (table >= 0)
		CHECK_EQ_U64(page[table].nr_objects, 1);
}

static void check_threads(struct mri_session *s, pid_t pid)
{
	struct mri_thread_info t[8];
	uint32_t total = 0;
	int n = mri_threads(s, 0, t, 8, &total);

	CHECK_EQ_U64(n, 3);
	CHECK_EQ_U64(total, 3);
	if (n == 3) {
		CHECK(t[0].id == 0 && t[0].tid == pid && !t[0].exited);
		CHECK(t[1].id == 1 && t[2].id == 2 && t[1].tid != pid && !t[2].exited);
	}
}

static void scenario_count(const char *instr, const char *native)
{
	static const long script[] = { 1, 2, 3, 1, 2, 0 };	/* phases 2-4 are the window */
	static const long ref_script[] = { 1, 2, 0 };		/* without the window */
	char out[300], nat_out[300], oracle[300], ref_oracle[300], ref_out[300];
	struct phase_counts pre, post, win[3];
	uint64_t win_a = 0, win_b = 0, win_total = 0, exp;
	struct mri_session *s, *s2;
	struct mri_process_info pi;
	struct mri_reading r;
	struct target t;
	uint32_t id_a, id_b;
	long qa, qb;
	int err;

	snprintf(out, sizeof(out), "%s/run.out", tmpdir);
	snprintf(nat_out, sizeof(nat_out), "%s/native.out", tmpdir);
	snprintf(ref_out, sizeof(ref_out), "%s/ref.out", tmpdir);
	snprintf(oracle, sizeof(oracle), "%s/run.json", tmpdir);
	snprintf(ref_oracle, sizeof(ref_oracle), "%s/ref.json", tmpdir);
	run_script(native, nat_out, NULL, script);
	run_script(instr, ref_out, ref_oracle, ref_script);

	spawn(&t, instr, out, oracle);
	pre = phase(&t, script[0]);
	err = mri_open_pid(&s, t.pid, 10000);
	if (err) {
		fprintf(stderr, "mri_open_pid: %s\n", mri_errmsg(s));
		CHECK(0);
		exit(check_done());
	}
	CHECK(mri_process(s, &pi) == 0);
	CHECK(pi.pid == t.pid && pi.protocol == MRI_PROTOCOL_VERSION && !pi.attached && pi.active);
	CHECK(pi.program && strstr(pi.program, "mri_target"));
	check_threads(s, t.pid);
	check_listing(s);
	check_bins(s);
	id_a = object_id(s, "work_a");
	id_b = object_id(s, "work_b");

	/* A second client is told who holds the target. */
	err = mri_open_pid(&s2, t.pid, 5000);
	CHECK(err == AMEBA_EBUSY);
	{
		char want[96];

		snprintf(want, sizeof(want), "busy: another client (pid %d) is attached", (int)getpid());
		if (!strstr(mri_errmsg(s2), want)) {
			fprintf(stderr, "second client: \"%s\" lacks \"%s\"\n", mri_errmsg(s2), want);
			CHECK(0);
		}
	}
	mri_close(s2);

	CHECK(mri_attach(s, NULL) == 0);
	{
		/* every metric on every place, metric-major: the client sends
		 * it in the product form (docs/mri.md, start) */
		struct mri_counter c[6] = {
			{ .metric = AMEBA_M_MEM_REF, .nr_objects = 1, .objects = &id_a },
			{ .metric = AMEBA_M_MEM_REF, .nr_objects = 1, .objects = &id_b },
			{ .metric = AMEBA_M_MEM_REF },
			{ .metric = AMEBA_M_WRITES, .nr_objects = 1, .objects = &id_a },
			{ .metric = AMEBA_M_WRITES, .nr_objects = 1, .objects = &id_b },
			{ .metric = AMEBA_M_WRITES },
		};

		err = mri_experiment_start(s, c, 6, 0, &exp);
		if (err)
			fprintf(stderr, "start: %s\n", mri_errmsg(s));
		CHECK(err == 0);
	}
	for (int i = 0; i < 3; i++) {
		unsigned flags = i == 1 ? MRI_READ_THREADS : 0;

		win[i] = phase(&t, script[1 + i]);
		err = mri_experiment_read(s, exp, flags, &r);
		CHECK(err == 0);
		if (err) {
			fprintf(stderr, "read: %s\n", mri_errmsg(s));
			continue;
		}
		printf("window %d: work_a %" PRIu64 " (target: %ld), work_b %" PRIu64
		       " (target: %ld), total %" PRIu64 "\n", i + 1, r.deltas[0], win[i].a, r.deltas[1],
		       win[i].b, r.deltas[2]);
		CHECK(r.nr == 6 && r.seq == (uint64_t)i + 1);
		CHECK_EQ_U64(r.deltas[0], win[i].a);
		CHECK_EQ_U64(r.deltas[1], win[i].b);
		CHECK_EQ_U64(r.deltas[3], win[i].aw);
		CHECK_EQ_U64(r.deltas[4], win[i].bw);
		CHECK(r.deltas[2] >= r.deltas[0] + r.deltas[1]);
		CHECK(r.deltas[5] >= r.deltas[3] + r.deltas[4]);
		win_a += r.deltas[0];
		win_b += r.deltas[1];
		win_total += r.deltas[2];
		CHECK_EQ_U64(r.values[0], win_a);
		if (flags) {
			/* Both workers counted half of work_a's accesses. */
			uint64_t sum = 0;

			CHECK_EQ_U64(r.nr_threads, 2);
			for (uint32_t k = 0; k < r.nr_threads; k++) {
				CHECK(r.thread_ids[k] == 1 || r.thread_ids[k] == 2);
				sum += r.thread_values[(size_t)k * r.nr + 0];
			}
			CHECK_EQ_U64(sum, r.values[0]);
			if (r.nr_threads == 2)
				CHECK_EQ_U64(r.thread_values[0], r.thread_values[r.nr]);
		}
	}
	CHECK(mri_experiment_stop(s, exp, &r) == 0);
	CHECK(mri_detach(s) == 0);
	CHECK(mri_process(s, &pi) == 0);
	CHECK(!pi.attached && pi.active);	/* AMEBA_ORACLE keeps counting */
	mri_close(s);
	post = phase(&t, script[4]);
	quit(&t, &qa, &qb);

	same_output(nat_out, out);
	/* The windows against the oracle of the whole run. */
	{
		uint64_t all_a = oracle_mem_ref(oracle, "work_a");
		uint64_t all_b = oracle_mem_ref(oracle, "work_b");
		uint64_t outside_a = (uint64_t)(pre.a + post.a + qa);
		uint64_t outside_b = (uint64_t)(pre.b + post.b + qb);
		uint64_t run_total = oracle_mem_ref(oracle, NULL);
		uint64_t ref_total = oracle_mem_ref(ref_oracle, NULL);

		printf("oracle: work_a %" PRIu64 " - outside %" PRIu64 " = %" PRIu64 " (MRI %" PRIu64
		       ")\n", all_a, outside_a, all_a - outside_a, win_a);
		printf("oracle: work_b %" PRIu64 " - outside %" PRIu64 " = %" PRIu64 " (MRI %" PRIu64
		       ")\n", all_b, outside_b, all_b - outside_b, win_b);
		printf("oracle: all objects %" PRIu64 " - reference run %" PRIu64 " = %" PRIu64
		       " (MRI total %" PRIu64 ")\n", run_total, ref_total, run_total - ref_total, win_total);
		CHECK_EQ_U64(all_a - outside_a, win_a);
		CHECK_EQ_U64(all_b - outside_b, win_b);
		CHECK_EQ_U64(run_total - ref_total, win_total);
	}
}

static void scenario_killed(const char *instr, const char *native)
{
	static const long script[] = { 1, 3, 2, 1, 0 };
	char out[300], nat_out[300], line[16];
	struct mri_session *s = NULL;
	struct mri_process_info pi;
	struct phase_counts c;
	struct target t;
	int sync[2], status, err = AMEBA_EBUSY;
	pid_t client;
	uint32_t id_a;
	uint64_t exp;
	long qa, qb;

	snprintf(out, sizeof(out), "%s/run.out", tmpdir);
	snprintf(nat_out, sizeof(nat_out), "%s/native.out", tmpdir);
	run_script(native, nat_out, NULL, script);
	spawn(&t, instr, out, NULL);
	phase(&t, script[0]);

	if (pipe(sync))
		die("pipe");
	client = fork();
	if (client == 0) {
		struct mri_counter c1 = { .metric = AMEBA_M_MEM_REF };
		struct mri_event ev;

		close(sync[0]);
		if (mri_open_pid(&s, t.pid, 10000) || mri_attach(s, NULL) ||
		    mri_experiment_start(s, &c1, 1, 10, &exp)) {
			fprintf(stderr, "client: %s\n", mri_errmsg(s));
			_exit(1);
		}
		if (write(sync[1], "armed\n", 6) != 6)
			_exit(1);
		for (;;)	/* interval events until killed */
			mri_next_event(s, &ev, 1000);
	}
	close(sync[1]);
	if (read(sync[0], line, sizeof(line)) <= 0) {
		fprintf(stderr, "mri_attach_test: the client did not attach\n");
		exit(2);
	}
	close(sync[0]);
	phase(&t, script[1]);		/* counted, with interval events flowing */
	kill(client, SIGKILL);		/* mid-experiment */
	waitpid(client, &status, 0);
	CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	phase(&t, script[2]);		/* the target goes on */

	/* A new client: the server may need a moment to see the old one gone. */
	for (int tries = 0; tries < 100 && err == AMEBA_EBUSY; tries++) {
		if (s)
			mri_close(s);
		err = mri_open_pid(&s, t.pid, 5000);
		if (err == AMEBA_EBUSY)
			usleep(20000);
	}
	if (err)
		fprintf(stderr, "new client: %s\n", mri_errmsg(s));
	CHECK(err == 0);
	CHECK(mri_process(s, &pi) == 0);
	CHECK(!pi.attached && !pi.active);	/* dormant again */
	id_a = object_id(s, "work_a");
	CHECK(mri_attach(s, NULL) == 0);
	{
		struct mri_counter c1 = { .metric = AMEBA_M_MEM_REF, .nr_objects = 1, .objects = &id_a };
		struct mri_reading r;

		CHECK(mri_experiment_start(s, &c1, 1, 0, &exp) == 0);
		c = phase(&t, script[3]);
		CHECK(mri_experiment_read(s, exp, 0, &r) == 0);
		CHECK_EQ_U64(r.values[0], c.a);
		printf("after the kill: work_a %" PRIu64 " (target: %ld)\n", r.values[0], c.a);
	}
	CHECK(mri_detach(s) == 0);
	CHECK(mri_process(s, &pi) == 0);
	CHECK(!pi.active);
	mri_close(s);
	quit(&t, &qa, &qb);
	same_output(nat_out, out);
}

static void scenario_exit(const char *instr)
{
	char out[300], sock[300];
	struct mri_session *s;
	struct mri_reading r;
	struct mri_event ev;
	struct phase_counts c;
	struct target t;
	uint32_t id_a, id_b;
	uint64_t exp;
	long qa, qb;
	int err = 0, status, n = 0;
	char line[128];
	struct stat st;

	snprintf(out, sizeof(out), "%s/run.out", tmpdir);
	spawn(&t, instr, out, NULL);
	snprintf(sock, sizeof(sock), "%s/ameba/%d.sock", tmpdir, (int)t.pid);
	CHECK(mri_open_pid(&s, t.pid, 10000) == 0);
	CHECK(stat(sock, &st) == 0 && S_ISSOCK(st.st_mode) && (st.st_mode & 0777) == 0600);
	id_a = object_id(s, "work_a");
	id_b = object_id(s, "work_b");
	CHECK(mri_attach(s, NULL) == 0);
	{
		struct mri_counter cs[3] = {
			{ .metric = AMEBA_M_MEM_REF, .nr_objects = 1, .objects = &id_a },
			{ .metric = AMEBA_M_MEM_REF, .nr_objects = 1, .objects = &id_b },
			{ .metric = AMEBA_M_MEM_REF },
		};

		CHECK(mri_experiment_start(s, cs, 3, 0, &exp) == 0);
	}
	c = phase(&t, 2);
	say(&t, "quit\n");
	/* Requests race with the exit: each is answered, until the target is
	 * gone - then a clean AMEBA_EEXITED, never a hang or a crash. */
	while ((err = mri_ping(s)) == 0 && n++ < 100000)
		usleep(1000);
	CHECK(err == AMEBA_EEXITED);
	if (err != AMEBA_EEXITED)
		fprintf(stderr, "ping: %d %s\n", err, mri_errmsg(s));
	if (!fgets(line, sizeof(line), t.ack) || sscanf(line, "quit a=%ld b=%ld", &qa, &qb) != 2)
		die("quit ack");
	err = mri_final_reading(s, &r);
	CHECK(err == 0);
	if (err)
		fprintf(stderr, "final reading: %s\n", mri_errmsg(s));
	if (!err) {
		printf("final reading: work_a %" PRIu64 " (target: %ld), work_b %" PRIu64
		       " (target: %ld), total %" PRIu64 "\n", r.values[0], c.a + qa, r.values[1],
		       c.b + qb, r.values[2]);
		CHECK_EQ_U64(r.values[0], (uint64_t)(c.a + qa));
		CHECK_EQ_U64(r.values[1], (uint64_t)(c.b + qb));
		CHECK(r.experiment == exp);
	}
	/* The exit event itself, then nothing but EEXITED. */
	CHECK(mri_next_event(s, &ev, 1000) == 0 && ev.kind == MRI_EV_EXIT);
	CHECK(ev.reading.nr == 3 && ev.reading.values[0] == (uint64_t)(c.a + qa));
	CHECK(mri_next_event(s, &ev, 100) == AMEBA_EEXITED);
	CHECK(mri_experiment_read(s, exp, 0, &r) == AMEBA_EEXITED);
	mri_close(s);
	CHECK(waitpid(t.pid, &status, 0) == t.pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
	CHECK(stat(sock, &st) != 0 && errno == ENOENT);	/* removed at exit */
}

static void scenario_mark(const char *instr)
{
	static const long ref_script[] = { 1, 2, 0 };	/* the phases before the mark */
	char out[300], ref_out[300], oracle[300], ref_oracle[300], path[4200], want[400], cmd[400];
	struct phase_counts c1, c2, c3;
	struct mri_session *s;
	struct target t;
	long qa, qb;
	int written = -1;
	uint64_t ref_total;

	snprintf(out, sizeof(out), "%s/run.out", tmpdir);
	snprintf(ref_out, sizeof(ref_out), "%s/ref.out", tmpdir);
	snprintf(oracle, sizeof(oracle), "%s/run.json", tmpdir);
	snprintf(ref_oracle, sizeof(ref_oracle), "%s/ref.json", tmpdir);
	run_script(instr, ref_out, ref_oracle, ref_script);
	ref_total = oracle_mem_ref(ref_oracle, NULL);

	spawn(&t, instr, out, oracle);
	c1 = phase(&t, 1);
	c2 = phase(&t, 2);
	CHECK(mri_open_pid(&s, t.pid, 10000) == 0);
	/* the target is idle between commands: the mark is an exact cut */
	CHECK(mri_mark(s, "w-1", &written, path, sizeof(path)) == 0);
	snprintf(want, sizeof(want), "%s.mark-w-1", oracle);
	CHECK(written == 1);
	CHECK(!strcmp(path, want));
	CHECK(mri_mark(s, "../x", &written, path, sizeof(path)) == AMEBA_EINVAL);
	CHECK(strstr(mri_errmsg(s), "label: \"../x\" must not be empty or start with '.'") != NULL);
	CHECK(mri_ping(s) == 0);
	mri_close(s);
	c3 = phase(&t, 3);
	quit(&t, &qa, &qb);
	{
		char *txt = slurp(want);
		cJSON *root = txt ? cJSON_Parse(txt) : NULL;
		const cJSON *mk = cJSON_GetObjectItem(root, "mark");
		uint64_t ma = oracle_mem_ref(want, "work_a"), mb = oracle_mem_ref(want, "work_b");
		uint64_t mall = oracle_mem_ref(want, NULL);

		CHECK(root && cJSON_IsString(mk) && !strcmp(mk->valuestring, "w-1"));
		CHECK(!strcmp(cJSON_GetObjectItem(root, "format")->valuestring, "ameba-oracle"));
		/* a mark says how long its counters took to read (its skew) */
		CHECK(cJSON_IsNumber(cJSON_GetObjectItem(root, "read_ns")) &&
		      cJSON_GetObjectItem(root, "read_ns")->valuedouble > 0);
		printf("mark: work_a %" PRIu64 " (target: %ld), work_b %" PRIu64 " (target: %ld), "
		       "all %" PRIu64 " (reference run %" PRIu64 " - checksum %ld)\n", ma, c1.a + c2.a,
		       mb, c1.b + c2.b, mall, ref_total, qa + qb);
		CHECK_EQ_U64(ma, (uint64_t)(c1.a + c2.a));
		CHECK_EQ_U64(mb, (uint64_t)(c1.b + c2.b));
		CHECK_EQ_U64(oracle_count(want, "work_a", "reads"), (uint64_t)(c1.ar + c2.ar));
		CHECK_EQ_U64(oracle_count(want, "work_a", "writes"), (uint64_t)(c1.aw + c2.aw));
		CHECK_EQ_U64(oracle_count(want, "work_b", "writes"), (uint64_t)(c1.bw + c2.bw));
		CHECK_EQ_U64(mall, ref_total - (uint64_t)(qa + qb));
		/* the oracle at exit: the mark plus what came after it */
		CHECK_EQ_U64(oracle_mem_ref(oracle, "work_a"), ma + (uint64_t)(c3.a + qa));
		CHECK_EQ_U64(oracle_mem_ref(oracle, "work_b"), mb + (uint64_t)(c3.b + qb));
		cJSON_Delete(root);
		free(txt);
	}
	/* atomic: nothing but the files themselves (no .tmp.PID left) */
	snprintf(cmd, sizeof(cmd), "test $(ls '%s' | grep -c tmp) = 0", tmpdir);
	CHECK(system(cmd) == 0);

	/* AMEBA_ORACLE_MARKS=bins: the mark lists the bins alone (a million
	 * objects' rows are ~1 GB); the oracle at exit lists everything */
	setenv("AMEBA_ORACLE_MARKS", "bins", 1);
	spawn(&t, instr, out, oracle);
	unsetenv("AMEBA_ORACLE_MARKS");
	c1 = phase(&t, 1);
	CHECK(mri_open_pid(&s, t.pid, 10000) == 0);
	CHECK(mri_mark(s, "w-b", &written, path, sizeof(path)) == 0);
	CHECK(written == 1);
	mri_close(s);
	c2 = phase(&t, 2);
	quit(&t, &qa, &qb);
	snprintf(want, sizeof(want), "%s.mark-w-b", oracle);
	{
		char *txt = slurp(want);
		cJSON *root = txt ? cJSON_Parse(txt) : NULL;

		CHECK(root && cJSON_IsFalse(cJSON_GetObjectItem(root, "objects_listed")));
		CHECK(root && cJSON_GetArraySize(cJSON_GetObjectItem(root, "objects")) == 0);
		CHECK(oracle_bin_count(want, "work_a", "mem_ref") == c1.a);
		CHECK(oracle_bin_count(want, "work_b", "mem_ref") == c1.b);
		CHECK(oracle_bin_count(oracle, "work_a", "mem_ref") == c1.a + c2.a + qa);
		CHECK(oracle_mem_ref(oracle, "work_a") == (uint64_t)(c1.a + c2.a + qa));
		cJSON_Delete(root);
		free(txt);
	}

	/* the mark with an experiment's start: the counters and the mark
	 * begin at the same instant, so the window's counts are the oracle
	 * at stop minus the mark; a bad label starts nothing */
	spawn(&t, instr, out, oracle);
	c1 = phase(&t, 1);
	CHECK(mri_open_pid(&s, t.pid, 10000) == 0);
	{
		uint32_t id_a = object_id(s, "work_a");
		struct mri_counter cs[1] = {
			{ .metric = AMEBA_M_MEM_REF, .nr_objects = 1, .objects = &id_a },
		};
		struct mri_reading r;
		uint64_t exp = 0;

		CHECK(mri_attach(s, NULL) == 0);
		CHECK(mri_experiment_start_marked(s, cs, 1, 0, "w/s", &exp, &written, path,
						  sizeof(path)) == AMEBA_EINVAL);
		CHECK(strstr(mri_errmsg(s), "mark: \"w/s\" has the character '/'") != NULL);
		written = -1;
		CHECK(mri_experiment_start_marked(s, cs, 1, 0, "w-s", &exp, &written, path,
						  sizeof(path)) == 0);
		snprintf(want, sizeof(want), "%s.mark-w-s", oracle);
		CHECK(written == 1);
		CHECK(!strcmp(path, want));
		c2 = phase(&t, 2);
		CHECK(mri_experiment_stop(s, exp, &r) == 0);
		CHECK(r.nr == 1 && r.values[0] == (uint64_t)c2.a);
		mri_close(s);
		quit(&t, &qa, &qb);
		CHECK_EQ_U64(oracle_mem_ref(want, "work_a"), (uint64_t)c1.a);
		CHECK_EQ_U64(oracle_mem_ref(oracle, "work_a") - oracle_mem_ref(want, "work_a"),
			     (uint64_t)(c2.a + qa));
	}

	/* without AMEBA_ORACLE: a reply saying why, no file */
	spawn(&t, instr, out, NULL);
	c1 = phase(&t, 1);
	CHECK(mri_open_pid(&s, t.pid, 10000) == 0);
	written = -1;
	CHECK(mri_mark(s, "w-2", &written, path, sizeof(path)) == 0);
	CHECK(written == 0);
	CHECK(strstr(path, "runs without AMEBA_ORACLE") != NULL);
	{
		/* ... and with a start: the experiment runs, the mark says why not */
		uint32_t id_a = object_id(s, "work_a");
		struct mri_counter cs[1] = {
			{ .metric = AMEBA_M_MEM_REF, .nr_objects = 1, .objects = &id_a },
		};
		uint64_t exp = 0;

		CHECK(mri_attach(s, NULL) == 0);
		written = -1;
		CHECK(mri_experiment_start_marked(s, cs, 1, 0, "w-3", &exp, &written, path,
						  sizeof(path)) == 0);
		CHECK(written == 0 && exp != 0);
		CHECK(strstr(path, "runs without AMEBA_ORACLE") != NULL);
	}
	mri_close(s);
	quit(&t, &qa, &qb);
	snprintf(cmd, sizeof(cmd), "test $(ls '%s' | grep -c w-2) = 0", tmpdir);
	CHECK(system(cmd) == 0);
}

static void cleanup(void)
{
	char cmd[400];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd))
		fprintf(stderr, "mri_attach_test: could not remove %s\n", tmpdir);
}

/* The global named name in w, or NULL. */
static const struct ameba_object *world_object(const struct agent_world *w, const char *name)
{
	for (uint32_t i = 0; i < w->nr_objects; i++)
		if (w->objects[i].name && !strcmp(w->objects[i].name, name))
			return &w->objects[i];
	return NULL;
}

/*
 * provider_exit's and replace_exit's set-up: the target started (with
 * AMEBA_MRI_TEST_REPLACE_DELAY_MS=delay unless NULL), the agent's provider
 * on it, and two experiments: e1 counts mem_ref on work_a, on work_b and
 * in total; e2 keeps work_a's counter and adds one on work_b's reads.
 */
struct prov_case {
	struct target t;
	struct agent_provider *p;
	uintptr_t ra[2], rb[2];
	struct ameba_counter old[3], next[2];
	struct ameba_experiment e1, e2;
};

static int prov_case_start(struct prov_case *pc, const char *instr, const char *delay)
{
	char out[300], msg[512] = "";
	struct agent_world w;
	const struct ameba_object *a, *b;
	int err = 0;

	memset(pc, 0, sizeof(*pc));
	snprintf(out, sizeof(out), "%s/run.out", tmpdir);
	if (delay)
		setenv("AMEBA_MRI_TEST_REPLACE_DELAY_MS", delay, 1);
	spawn(&pc->t, instr, out, NULL);
	unsetenv("AMEBA_MRI_TEST_REPLACE_DELAY_MS");
	pc->p = agent_provider_mri_open(pc->t.pid, NULL, 10000, 0, NULL, NULL, NULL, &err, msg,
					sizeof(msg));
	CHECK(pc->p != NULL);
	if (!pc->p) {
		fprintf(stderr, "provider: %d %s\n", err, msg);
		return -1;
	}
	CHECK(pc->p->ops->refresh(pc->p, &w) == 0);
	a = world_object(&w, "work_a");
	b = world_object(&w, "work_b");
	CHECK(a && b);
	if (!a || !b)
		return -1;
	pc->ra[0] = a->start;
	pc->ra[1] = a->end;
	pc->rb[0] = b->start;
	pc->rb[1] = b->end;
	pc->old[0] = (struct ameba_counter){ .metric = AMEBA_M_MEM_REF, .nr_ranges = 1, .ranges = pc->ra };
	pc->old[1] = (struct ameba_counter){ .metric = AMEBA_M_MEM_REF, .nr_ranges = 1, .ranges = pc->rb };
	pc->old[2] = (struct ameba_counter){ .metric = AMEBA_M_MEM_REF };
	pc->next[0] = pc->old[0];
	pc->next[1] = (struct ameba_counter){ .metric = AMEBA_M_READS, .nr_ranges = 1, .ranges = pc->rb };
	pc->e1 = (struct ameba_experiment){ .nr_counters = 3, .counters = pc->old };
	pc->e2 = (struct ameba_experiment){ .nr_counters = 2, .counters = pc->next };
	return 0;
}

static void prov_case_end(struct prov_case *pc)
{
	if (pc->p)
		pc->p->ops->close(pc->p);
	close(pc->t.ctl);
	fclose(pc->t.ack);
}

static void scenario_provider_exit(const char *instr)
{
	struct prov_case pc;
	struct agent_exp_result res;
	struct phase_counts c;
	char line[128];
	long qa, qb;
	int status;

	if (prov_case_start(&pc, instr, NULL)) {
		prov_case_end(&pc);
		return;
	}
	/* an idle interval: read once, so the phase comes after a reading */
	CHECK(pc.p->ops->experiment(pc.p, &pc.e1, 20, NULL, &res) == 0);
	CHECK(res.r.nr_counters == 3 && res.r.values[0] == 0 && !res.r.target_exited);
	c = phase(&pc.t, 2);
	say(&pc.t, "quit\n");
	if (!fgets(line, sizeof(line), pc.t.ack) || sscanf(line, "quit a=%ld b=%ld", &qa, &qb) != 2)
		die("quit ack");
	CHECK(waitpid(pc.t.pid, &status, 0) == pc.t.pid && WIFEXITED(status));
	CHECK(pc.p->ops->experiment(pc.p, &pc.e2, 20, NULL, &res) == 0);
	CHECK(res.r.target_exited);
	CHECK(res.r.nr_counters == 2);
	if (res.r.nr_counters == 2) {
		printf("after the exit: work_a %" PRIu64 " (target: %ld), work_b reads %" PRIu64
		       " (never armed)\n", res.r.values[0], c.a + qa, res.r.values[1]);
		CHECK_EQ_U64(res.r.values[0], (uint64_t)(c.a + qa));
		CHECK_EQ_U64(res.r.values[1], 0);
	}
	CHECK(pc.p->ops->experiment(pc.p, &pc.e2, 20, NULL, &res) == AMEBA_EEXITED);
	prov_case_end(&pc);
}

/* replace_exit's second thread: quits the target while the replace's
 * reply is held back */
static struct {
	struct target *t;
	long qa, qb;
	int ok;
} qlater;

static void *quit_later(void *arg)
{
	char line[128];

	(void)arg;
	poll(NULL, 0, 100);
	say(qlater.t, "quit\n");
	qlater.ok = fgets(line, sizeof(line), qlater.t->ack) &&
		    sscanf(line, "quit a=%ld b=%ld", &qlater.qa, &qlater.qb) == 2;
	return NULL;
}

static void scenario_replace_exit(const char *instr)
{
	struct prov_case pc;
	struct agent_exp_result res;
	struct phase_counts c;
	pthread_t th;
	int status;

	if (prov_case_start(&pc, instr, "800")) {
		prov_case_end(&pc);
		return;
	}
	CHECK(pc.p->ops->experiment(pc.p, &pc.e1, 20, NULL, &res) == 0);
	CHECK(res.r.nr_counters == 3 && res.r.values[0] == 0 && !res.r.target_exited);
	c = phase(&pc.t, 2);
	qlater.t = &pc.t;
	if (pthread_create(&th, NULL, quit_later, NULL))
		die("pthread_create");
	CHECK(pc.p->ops->experiment(pc.p, &pc.e2, 20, NULL, &res) == 0);
	pthread_join(th, NULL);
	CHECK(qlater.ok);
	CHECK(waitpid(pc.t.pid, &status, 0) == pc.t.pid && WIFEXITED(status));
	CHECK(res.r.target_exited);
	CHECK(res.r.nr_counters == 2);
	if (res.r.nr_counters == 2) {
		printf("exit during the replace's reply: work_a %" PRIu64 " (target: %ld), "
		       "work_b reads %" PRIu64 " (target: %ld)\n", res.r.values[0],
		       c.a + qlater.qa, res.r.values[1], qlater.qb);
		CHECK_EQ_U64(res.r.values[0], (uint64_t)(c.a + qlater.qa));
		CHECK_EQ_U64(res.r.values[1], (uint64_t)qlater.qb);
	}
	prov_case_end(&pc);
}

/* Sends "VERB N[ K]" and waits for its acknowledgement "ACK N". */
static void target_cmd(struct target *t, const char *verb, const char *ack, long n, long k)
{
	char cmd[64], line[128], want[64];

	if (k >= 0)
		snprintf(cmd, sizeof(cmd), "%s %ld %ld\n", verb, n, k);
	else
		snprintf(cmd, sizeof(cmd), "%s %ld\n", verb, n);
	snprintf(want, sizeof(want), "%s %ld\n", ack, n);
	say(t, cmd);
	if (!fgets(line, sizeof(line), t->ack) || strcmp(line, want)) {
		fprintf(stderr, "mri_attach_test: no ack for %s", cmd);
		exit(2);
	}
}

static void churn(struct target *t, long n, long keep)
{
	target_cmd(t, "churn", "churned", n, keep);
}

/* Starts instr (no oracle) and attaches a session with the sim backend. */
static struct mri_session *spawn_attached(struct target *t, const char *instr, const char *out)
{
	struct mri_session *s;

	spawn(t, instr, out, NULL);
	if (mri_open_pid(&s, t->pid, 10000)) {
		fprintf(stderr, "mri_open_pid: %s\n", mri_errmsg(s));
		CHECK(0);
		exit(check_done());
	}
	CHECK(mri_attach(s, "sim") == 0);
	return s;
}

/* name holds one of the '|'-separated alternatives of alts. */
static int name_has_any(const char *name, const char *alts)
{
	char alt[128];

	for (const char *a = alts, *bar; *a; a = bar ? bar + 1 : a + strlen(a)) {
		size_t n;

		bar = strchr(a, '|');
		n = bar ? (size_t)(bar - a) : strlen(a);
		if (n < sizeof(alt)) {
			memcpy(alt, a, n);
			alt[n] = '\0';
			if (strstr(name, alt))
				return 1;
		}
		if (!bar)
			break;
	}
	return 0;
}

/*
 * One fold case: VERB 1000 makes the site's bin (its name holds one of
 * bin_has's '|'-separated alternatives),
 * counters on it are armed, VERB n churns: the bin counts 4 writes and
 * `reads` reads a block and the object table stays under max_records.
 */
static void fold_case(struct mri_session *s, struct target *t, const char *verb, const char *ack,
		      const char *bin_has, long n, uint64_t reads, uint32_t max_records)
{
	struct mri_object_query q = { 0 };
	struct mri_object o[4];
	struct mri_bin page[64];
	struct mri_reading r;
	char bin[256] = "";
	uint32_t cursor = 0;
	uint64_t exp = 0;
	int nb;

	target_cmd(t, verb, ack, 1000, -1);
	while (cursor != MRI_END && (nb = mri_bins(s, &cursor, page, 64)) > 0)
		for (int i = 0; i < nb; i++)
			if (page[i].name && name_has_any(page[i].name, bin_has))
				snprintf(bin, sizeof(bin), "%s", page[i].name);
	CHECK(bin[0] != '\0');
	{
		const char *bins[1] = { bin };
		struct mri_counter c[3] = {
			{ .metric = AMEBA_M_MEM_REF, .nr_bins = 1, .bins = bins },
			{ .metric = AMEBA_M_WRITES, .nr_bins = 1, .bins = bins },
			{ .metric = AMEBA_M_READS, .nr_bins = 1, .bins = bins },
		};

		if (mri_experiment_start(s, c, 3, 0, &exp)) {
			fprintf(stderr, "start: %s\n", mri_errmsg(s));
			CHECK(0);
		}
	}
	target_cmd(t, verb, ack, n, -1);
	CHECK(mri_experiment_read(s, exp, 0, &r) == 0);
	printf("fold: %s %ld: bin %s: mem_ref %" PRIu64 ", writes %" PRIu64 ", reads %" PRIu64 "\n",
	       verb, n, bin, r.values[0], r.values[1], r.values[2]);
	CHECK_EQ_U64(r.values[0], (4 + reads) * (uint64_t)n);
	CHECK_EQ_U64(r.values[1], 4 * (uint64_t)n);
	CHECK_EQ_U64(r.values[2], reads * (uint64_t)n);
	cursor = 0;
	CHECK(mri_objects(s, &q, &cursor, o, 4) > 0);
	printf("fold: %s %ld: %u records in the object table, %" PRIu64 " freed\n", verb, n,
	       mri_objects_total(s), mri_objects_freed(s));
	CHECK(mri_objects_total(s) < max_records);
	CHECK(mri_objects_freed(s) != UINT64_MAX && mri_objects_freed(s) >= (uint64_t)n);
	CHECK(mri_experiment_stop(s, exp, &r) == 0);
}

static void scenario_fold(const char *instr)
{
	enum { N = 200000 };
	char out[300];
	struct mri_session *s;
	struct target t;
	long qa, qb;

	snprintf(out, sizeof(out), "%s/fold.out", tmpdir);
	s = spawn_attached(&t, instr, out);
	/* blocks one thread allocates, touches and frees */
	fold_case(s, &t, "churn", "churned", "churn_block@mri_target.c:", N, 1, 20000);
	/* blocks of two holders: a helper allocates and writes, main reads
	 * and frees (the site is xchurn_block's; gcc may merge it with
	 * churn_block, and the bin's name then ends "<- xchurn_make@...";
	 * xchurn itself names the bin of the threads it creates) */
	fold_case(s, &t, "xchurn", "xchurned", "xchurn_block@|<- xchurn_make@", N, 1, 30000);
	/* three holders: a relay thread, which never allocates nor frees,
	 * reads each block between the helper and main */
	fold_case(s, &t, "mchurn", "mchurned", "xchurn_block@|<- xchurn_make@", N, 2, 40000);
	CHECK(mri_detach(s) == 0);
	mri_close(s);
	quit(&t, &qa, &qb);
}

/* The value of thread id in a reading's rows (counter i), -1: no row. */
static int64_t row_of(const struct mri_reading *r, uint32_t id, uint32_t i)
{
	for (uint32_t k = 0; k < r->nr_threads; k++)
		if (r->thread_ids[k] == id)
			return (int64_t)r->thread_values[(size_t)k * r->nr + i];
	return -1;
}

static void scenario_rows(const char *instr)
{
	enum { N = 40 };
	char out[300], msg[512] = "";
	const uint32_t spawned_first = 3;
	struct mri_session *s;
	struct mri_reading r;
	struct agent_provider *p;
	struct agent_world w;
	struct agent_exp_result res;
	struct target t;
	uint32_t id;
	uint64_t exp, total;
	long qa, qb;
	int n, err = 0;

	snprintf(out, sizeof(out), "%s/rows.out", tmpdir);
	s = spawn_attached(&t, instr, out);
	{
		struct mri_object_query q = { .kinds = 1u << MRI_OBJ_GLOBAL, .live_only = 1,
					      .name = "spawned" };
		struct mri_object o[2];
		uint32_t cursor = 0;

		CHECK(mri_objects(s, &q, &cursor, o, 2) == 1);
		id = o[0].id;
	}
	{
		struct mri_counter c[1] = { { .metric = AMEBA_M_MEM_REF, .nr_objects = 1, .objects = &id } };

		CHECK(mri_experiment_start(s, c, 1, 0, &exp) == 0);
	}
	target_cmd(&t, "threads", "spawned", N, -1);
	CHECK(mri_experiment_read(s, exp, MRI_READ_THREADS, &r) == 0);
	n = 0;
	for (uint32_t k = spawned_first; k < spawned_first + N; k++)
		n += row_of(&r, k, 0) == 20;
	printf("rows: first read: %u rows, %d of the %d ended threads with their 20 accesses, total %" PRIu64
	       "\n", r.nr_threads, n, N, r.values[0]);
	CHECK_EQ_U64(n, N);
	CHECK_EQ_U64(r.values[0], 20 * N);
	total = r.values[0];
	phase(&t, 1);
	CHECK(mri_experiment_read(s, exp, MRI_READ_THREADS, &r) == 0);
	n = 0;
	for (uint32_t k = spawned_first; k < spawned_first + N; k++)
		n += row_of(&r, k, 0) >= 0;
	printf("rows: second read: %u rows, %d of the ended threads\n", r.nr_threads, n);
	CHECK_EQ_U64(n, 0);
	CHECK_EQ_U64(r.values[0], total);	/* the workers do not touch spawned[] */
	CHECK(mri_experiment_stop(s, exp, &r) == 0);
	CHECK(mri_detach(s) == 0);
	mri_close(s);

	/* the provider: strategies get the rows of the threads that counted */
	p = agent_provider_mri_open(t.pid, "sim", 10000, 0, NULL, NULL, NULL, &err, msg, sizeof(msg));
	CHECK(p != NULL);
	if (!p) {
		fprintf(stderr, "provider: %d %s\n", err, msg);
		exit(check_done());
	}
	CHECK(p->ops->refresh(p, &w) == 0);
	{
		uintptr_t range[2] = { 0, 0 };
		const struct ameba_object *o = world_object(&w, "spawned");
		struct ameba_counter c[1] = { { .metric = AMEBA_M_MEM_REF, .nr_ranges = 1, .ranges = range,
						.per_thread = 1 } };
		struct ameba_experiment e = { .nr_counters = 1, .counters = c };
		uint64_t sum = 0;

		CHECK(o != NULL);
		if (o) {
			range[0] = o->start;
			range[1] = o->end;
		}
		CHECK(p->ops->experiment(p, &e, 20, NULL, &res) == 0);
		target_cmd(&t, "threads", "spawned", N, -1);
		CHECK(p->ops->experiment(p, &e, 20, NULL, &res) == 0);
		printf("rows: provider: %u threads in the result, %" PRIu64 " accesses\n",
		       res.r.nr_threads, res.r.values[0]);
		CHECK(res.r.nr_threads == N && res.r.thread_ids && res.r.per_thread &&
		      res.r.per_thread[0]);
		for (uint32_t k = 0; res.r.thread_ids && res.r.per_thread && k < res.r.nr_threads; k++) {
			CHECK(res.r.thread_ids[k] >= spawned_first + N);
			CHECK_EQ_U64(res.r.per_thread[0][k], 20);
			sum += res.r.per_thread[0][k];
		}
		CHECK_EQ_U64(sum, 20 * N);
		CHECK_EQ_U64(res.r.values[0], 20 * N);
		phase(&t, 1);
		CHECK(p->ops->experiment(p, &e, 20, NULL, &res) == 0);
		printf("rows: provider, after a phase: %u threads in the result\n", res.r.nr_threads);
		CHECK_EQ_U64(res.r.nr_threads, 0);
		CHECK_EQ_U64(res.r.values[0], 0);
	}
	p->ops->close(p);
	quit(&t, &qa, &qb);
}

/* The world's live blocks of churn_block's bin: how many, and whether
 * two share a start (the same block known twice). */
static uint32_t churn_objects(const struct agent_world *w, int *dup)
{
	uint32_t n = 0;

	*dup = 0;
	for (uint32_t i = 0; i < w->nr_objects; i++) {
		const struct ameba_object *o = &w->objects[i];

		if (!o->name || strncmp(o->name, "churn_block@mri_target.c:", 25))
			continue;
		n++;
		*dup |= i > 0 && w->objects[i - 1].start == o->start;
	}
	return n;
}

static void scenario_provider_fold(const char *instr)
{
	char out[300], msg[512] = "";
	struct agent_provider *p;
	struct agent_world w;
	struct target t;
	uint32_t n;
	long qa, qb;
	int err = 0, dup;

	snprintf(out, sizeof(out), "%s/run.out", tmpdir);
	spawn(&t, instr, out, NULL);
	p = agent_provider_mri_open(t.pid, "sim", 10000, 0, NULL, NULL, NULL, &err, msg, sizeof(msg));
	CHECK(p != NULL);
	if (!p) {
		fprintf(stderr, "provider: %d %s\n", err, msg);
		return;
	}
	CHECK(p->ops->refresh(p, &w) == 0);
	churn(&t, 5000, 500);	/* 10 kept; the other records recycled */
	CHECK(p->ops->refresh(p, &w) == 0);
	n = churn_objects(&w, &dup);
	printf("provider_fold: %u kept blocks listed after the first churn\n", n);
	CHECK_EQ_U64(n, 10);
	/* 10 more kept, most of them in ids recycled below the listing's end:
	 * only the sweep (every tenth refresh) can learn them */
	churn(&t, 5000, 500);
	for (int i = 0; i < 25; i++)
		CHECK(p->ops->refresh(p, &w) == 0);
	n = churn_objects(&w, &dup);
	printf("provider_fold: %u kept blocks listed after the second churn%s\n", n,
	       dup ? " (one twice)" : "");
	CHECK_EQ_U64(n, 20);
	CHECK(!dup);
	p->ops->close(p);
	quit(&t, &qa, &qb);
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: %s count|killed|exit|mark|provider_exit|replace_exit|fold|provider_fold|rows INSTRUMENTED NATIVE\n", argv[0]);
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	if (!mkdtemp(tmpdir))
		die("mkdtemp");
	atexit(cleanup);
	if (!strcmp(argv[1], "count"))
		scenario_count(argv[2], argv[3]);
	else if (!strcmp(argv[1], "killed"))
		scenario_killed(argv[2], argv[3]);
	else if (!strcmp(argv[1], "exit"))
		scenario_exit(argv[2]);
	else if (!strcmp(argv[1], "mark"))
		scenario_mark(argv[2]);
	else if (!strcmp(argv[1], "provider_exit"))
		scenario_provider_exit(argv[2]);
	else if (!strcmp(argv[1], "replace_exit"))
		scenario_replace_exit(argv[2]);
	else if (!strcmp(argv[1], "fold"))
		scenario_fold(argv[2]);
	else if (!strcmp(argv[1], "provider_fold"))
		scenario_provider_fold(argv[2]);
	else if (!strcmp(argv[1], "rows"))
		scenario_rows(argv[2]);
	else
		return 2;
	return check_done();
}
