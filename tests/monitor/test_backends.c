/*
 * test_backends.c - the runtime's side of the backend table (mri/common.c,
 * issue 21): every runtime row resolves to ops in rt.c whose metrics are
 * the row's, agent rows and unknown names do not resolve, the MRI lists the
 * runtime rows in table order, and a runtime row activates.
 *
 * Notes:
 *  - Linked with the runtime's objects (like test_cond), not instrumented:
 *    the hidden mon_ functions are reachable and no access is delivered.
 *  - AMEBA_SIM_ASM=0 picks the sim backend's C line entry: another ops
 *    table under the same row, so the row check covers it too.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "mon.h"
#include "mri.h"

static uint64_t ops_mask(const struct mon_backend_ops *b)
{
	uint64_t mask = 0;

	for (int i = 0; i < b->nr_metrics; i++)
		mask |= AMEBA_M_BIT(b->metrics[i]);
	return mask;
}

int main(void)
{
	const struct ameba_backend_info *row;
	const struct mon_backend_ops *b;
	struct mri_backend_info info;
	struct mri_session *s = NULL;
	char names[128], want[128] = "";
	uint32_t nr_rt = 0;
	int rc;

	mon_init();
	for (int i = 0; (row = ameba_backend_info(i)); i++) {
		b = mon_backend_by_name(row->name);
		if (row->where != AMEBA_BACKEND_RUNTIME) {
			CHECK(b == NULL);
			CHECK(mon_activate(row->name) == AMEBA_ENOENT);
			continue;
		}
		nr_rt++;
		snprintf(want + strlen(want), sizeof(want) - strlen(want), "%s%s",
			 want[0] ? ", " : "", row->name);
		CHECK(b != NULL);
		if (!b)
			continue;
		CHECK_STR(b->name, row->name);
		CHECK_EQ_U64(ops_mask(b), row->metrics);
		CHECK_EQ_U64(b->nr_metrics, __builtin_popcountll(row->metrics));
	}
	CHECK_EQ_U64(nr_rt, 2);
	CHECK(mon_backend_by_name("no-such-backend") == NULL);
	CHECK(mon_backend_by_name(NULL) == NULL);
	CHECK(mon_backend_by_name("count") == &mon_backend_count);
	CHECK(mon_backend_by_name("sim") == &mon_backend_sim);
	setenv("AMEBA_SIM_ASM", "0", 1);
	b = mon_backend_by_name("sim");
	CHECK(b == &mon_backend_sim_c);
	if (b)
		CHECK_EQ_U64(ops_mask(b), ameba_backend_by_name("sim")->metrics);
	unsetenv("AMEBA_SIM_ASM");

	/* the names an unknown AMEBA_BACKEND is told about */
	CHECK_EQ_U64(mon_backend_names(names, sizeof(names)), strlen(want));
	CHECK_STR(names, want);
	CHECK_STR(names, "count, sim");
	CHECK_EQ_U64(mon_backend_names(names, 4), 3);
	CHECK_STR(names, "cou");

	/* the MRI's backends: the same rows, in table order; then one starts */
	rc = mri_open_local(&s);
	CHECK_EQ_U64(rc, 0);
	if (!rc) {
		CHECK_EQ_U64(mri_backend(s, &info), 0);
		CHECK_EQ_U64(info.nr_backends, nr_rt);
		for (uint32_t i = 0, k = 0; (row = ameba_backend_info((int)i)); i++)
			if (row->where == AMEBA_BACKEND_RUNTIME && k < info.nr_backends)
				CHECK_STR(info.backends[k++], row->name);
		CHECK(mri_attach(s, "watch") == AMEBA_ENOENT);
		CHECK_EQ_U64(mri_attach(s, "count"), 0);
		CHECK_EQ_U64(mri_backend(s, &info), 0);
		CHECK_STR(info.name, "count");
		mri_close(s);
	}
	return check_done();
}
