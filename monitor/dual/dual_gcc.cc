/*
 * dual_gcc.cc - the dual path for gcc 12 (docs/dual-path.md): a plugin pass
 * right after gcc's own tsan pass copies each instrumented function's body
 * inside the function, deletes the hooks from the copy (the clean path) and
 * puts a test of __ameba_path at the entry: non-zero, the instrumented body
 * (today's code, hook for hook); zero, the clean one, which the rest of the
 * pipeline (the vectoriser included) optimises as if no hook was ever there.
 *
 * Notes:
 * - The instrumented body is left as gcc's tsan pass made it, so the
 *   oracle's counts, the hooks' kinds and their return addresses (sites,
 *   source lines) are those of the single path.
 * - Both bodies share the frame: parameters and locals are the same
 *   declarations, and the SSA names the copy defines are registered as new
 *   definitions of the originals' (gimple_duplicate_bb), so update_ssa
 *   renames the copy's uses and puts merge PHIs wherever the two bodies
 *   meet. Loops are copied with their loop structures (duplicate_loop), so
 *   what the front end said about a loop (ivdep, unroll, safelen) holds in
 *   the clean body too.
 * - A function is left as it is (one path) when it has EH landing pads, a
 *   nonlocal label, setjmp, abnormal edges, `omp simd` loops, no hooks at
 *   all, or more than max-blocks blocks: copying those would need more
 *   than this pass does, and they are seldom where the time goes.
 * - Plugin arguments: -fplugin-arg-ameba_dual_gcc-max-blocks=N (default 20000),
 *   -fplugin-arg-ameba_dual_gcc-verbose (a note per function on stderr).
 */
#include "gcc-plugin.h"
#include "plugin-version.h"
#include "tree.h"
#include "gimple.h"
#include "tree-pass.h"
#include "ssa.h"
#include "cgraph.h"
#include "gimple-iterator.h"
#include "tree-cfg.h"
#include "cfgloop.h"
#include "cfgloopmanip.h"
#include "tree-into-ssa.h"
#include "tree-ssanames.h"
#include "stringpool.h"
#include "varasm.h"
#include "except.h"
#include "diagnostic-core.h"
#include "context.h"

int plugin_is_GPL_compatible;

static int max_blocks = 20000;
static bool verbose;
static tree path_decl;

/* The runtime's switch: extern volatile int __ameba_path (monitor/rt.c). */
static tree path_var(void)
{
	if (!path_decl) {
		tree type = build_qualified_type(integer_type_node, TYPE_QUAL_VOLATILE);
		tree d = build_decl(UNKNOWN_LOCATION, VAR_DECL, get_identifier("__ameba_path"),
				    type);

		TREE_PUBLIC(d) = 1;
		DECL_EXTERNAL(d) = 1;
		TREE_THIS_VOLATILE(d) = 1;
		TREE_SIDE_EFFECTS(d) = 1;
		DECL_ARTIFICIAL(d) = 1;
		varpool_node::get_create(d);
		path_decl = d;
	}
	return path_decl;
}

/* A call of one of the access or function hooks (not the atomics: they
 * perform the operation). */
static bool is_hook(const gimple *g)
{
	tree fn;

	if (!is_gimple_call(g) || !(fn = gimple_call_fndecl(g)) ||
	    !fndecl_built_in_p(fn, BUILT_IN_NORMAL))
		return false;
	switch (DECL_FUNCTION_CODE(fn)) {
	case BUILT_IN_TSAN_FUNC_ENTRY:
	case BUILT_IN_TSAN_FUNC_EXIT:
	case BUILT_IN_TSAN_VPTR_UPDATE:
	case BUILT_IN_TSAN_READ1:
	case BUILT_IN_TSAN_READ2:
	case BUILT_IN_TSAN_READ4:
	case BUILT_IN_TSAN_READ8:
	case BUILT_IN_TSAN_READ16:
	case BUILT_IN_TSAN_WRITE1:
	case BUILT_IN_TSAN_WRITE2:
	case BUILT_IN_TSAN_WRITE4:
	case BUILT_IN_TSAN_WRITE8:
	case BUILT_IN_TSAN_WRITE16:
	case BUILT_IN_TSAN_READ_RANGE:
	case BUILT_IN_TSAN_WRITE_RANGE:
	case BUILT_IN_TSAN_VOLATILE_READ1:
	case BUILT_IN_TSAN_VOLATILE_READ2:
	case BUILT_IN_TSAN_VOLATILE_READ4:
	case BUILT_IN_TSAN_VOLATILE_READ8:
	case BUILT_IN_TSAN_VOLATILE_READ16:
	case BUILT_IN_TSAN_VOLATILE_WRITE1:
	case BUILT_IN_TSAN_VOLATILE_WRITE2:
	case BUILT_IN_TSAN_VOLATILE_WRITE4:
	case BUILT_IN_TSAN_VOLATILE_WRITE8:
	case BUILT_IN_TSAN_VOLATILE_WRITE16:
		return true;
	default:
		return false;
	}
}

/* Why fn stays one path (NULL: it can have two). */
static const char *single_why(function *fn)
{
	basic_block bb;
	int hooks = 0;

	if (fn->has_nonlocal_label || fn->calls_setjmp || fn->has_simduid_loops)
		return "nonlocal label, setjmp or omp simd";
	if (fn->eh && vec_safe_length(fn->eh->lp_array) > 1)
		return "EH landing pads";
	if (n_basic_blocks_for_fn(fn) - NUM_FIXED_BLOCKS > max_blocks)
		return "too many blocks";
	FOR_EACH_BB_FN(bb, fn) {
		edge e;
		edge_iterator ei;

		FOR_EACH_EDGE(e, ei, bb->succs)
			if (e->flags & (EDGE_ABNORMAL | EDGE_EH))
				return "abnormal or EH edges";
		for (gimple_stmt_iterator gsi = gsi_start_bb(bb); !gsi_end_p(gsi); gsi_next(&gsi))
			hooks += is_hook(gsi_stmt(gsi));
	}
	return hooks ? NULL : "no hooks";
}

/* Deletes the hooks of bb; how many. */
static int strip(basic_block bb)
{
	int n = 0;

	for (gimple_stmt_iterator gsi = gsi_start_bb(bb); !gsi_end_p(gsi);) {
		gimple *g = gsi_stmt(gsi);

		if (!is_hook(g)) {
			gsi_next(&gsi);
			continue;
		}
		unlink_stmt_vdef(g);
		gsi_remove(&gsi, true);
		release_defs(g);
		n++;
	}
	return n;
}

/* Copies every loop under from (the tree's root) with its subloops, so that
 * copy_bbs puts each copied block in its loop's copy. */
static void copy_loops(class loop *root)
{
	auto_vec<class loop *> top;

	for (class loop *l = root->inner; l; l = l->next)
		top.safe_push(l);
	for (unsigned i = 0; i < top.length(); i++) {
		class loop *c = duplicate_loop(top[i], root);

		duplicate_subloops(top[i], c);
	}
}

/*
 * Ends block x, which has one successor, with a test of __ameba_path: its
 * edge is kept when the word is set (keep_when_set) or clear, with
 * probability keep_p, and the other case goes to `to`, the other body's copy
 * of that edge's destination, whose PHIs take what the destination's take on
 * the kept edge - the original names still: update_ssa resolves each use to
 * the value of the body x is in, and merges the two bodies' values at `to`.
 */
static void add_test(function *fn, basic_block x, basic_block to, bool keep_when_set,
		     profile_probability keep_p)
{
	tree t = make_ssa_name(integer_type_node);
	gimple *ld = gimple_build_assign(t, path_var());
	gimple_stmt_iterator gsi = gsi_last_bb(x);
	edge keep = single_succ_edge(x), other;
	basic_block dest = keep->dest;

	gimple_set_vuse(ld, gimple_vop(fn));
	gsi_insert_after(&gsi, ld, GSI_NEW_STMT);
	gsi_insert_after(&gsi, gimple_build_cond(NE_EXPR, t, integer_zero_node, NULL_TREE, NULL_TREE),
			 GSI_NEW_STMT);
	keep->flags &= ~EDGE_FALLTHRU;
	keep->flags |= keep_when_set ? EDGE_TRUE_VALUE : EDGE_FALSE_VALUE;
	keep->probability = keep_p;
	other = make_edge(x, to, keep_when_set ? EDGE_FALSE_VALUE : EDGE_TRUE_VALUE);
	other->probability = keep_p.invert();
	for (gphi_iterator pd = gsi_start_phis(dest), pt = gsi_start_phis(to);
	     !gsi_end_p(pd) && !gsi_end_p(pt); gsi_next(&pd), gsi_next(&pt))
		add_phi_arg(pt.phi(), PHI_ARG_DEF_FROM_EDGE(pd.phi(), keep), other,
			    gimple_phi_arg_location_from_edge(pd.phi(), keep));
}

/*
 * The switch inside a loop nest: edge e (into the clean body's loop header:
 * an entry, or a back edge) is split, and the new block goes to the
 * instrumented body's copy of the header, h_i, when __ameba_path is set.
 * Only outermost loops get tests: an edge into an inner loop of the
 * instrumented body from outside its outer loop would make that loop
 * irreducible. And only clean -> instrumented: edges both ways would make
 * the two bodies one irreducible cycle; the way back is the next call.
 */
static void add_check(function *fn, edge e, basic_block h_i)
{
	add_test(fn, split_edge(e), h_i, false, profile_probability::very_likely());
}

/* A top-level loop of the instrumented body and its clean copy. */
struct loop_pair {
	basic_block h_i, h_c;
	class loop *c;
	bool inner;		/* it has loops inside: tests on its back edges too */
};

static unsigned int dual_execute(function *fn)
{
	const char *why = single_why(fn);
	auto_vec<basic_block> bbs;
	basic_block bb, first, first_c, disp;
	basic_block *copy;
	edge e;
	unsigned n, stripped = 0, checks = 0;
	auto_vec<loop_pair> pairs;

	if (why) {
		if (verbose)
			fprintf(stderr, "ameba dual: %s: one path (%s)\n", function_name(fn), why);
		return 0;
	}
	FOR_EACH_BB_FN(bb, fn)
		bbs.safe_push(bb);
	n = bbs.length();
	if (!can_copy_bbs_p(bbs.address(), n)) {
		if (verbose)
			fprintf(stderr, "ameba dual: %s: one path (blocks gcc cannot copy)\n",
				function_name(fn));
		return 0;
	}
	e = single_succ_edge(ENTRY_BLOCK_PTR_FOR_FN(fn));
	first = e->dest;

	initialize_original_copy_tables();
	if (current_loops) {
		set_loop_copy(current_loops->tree_root, current_loops->tree_root);
		copy_loops(current_loops->tree_root);
	}
	copy = XNEWVEC(basic_block, n);
	free_dominance_info(CDI_DOMINATORS);
	copy_bbs(bbs.address(), n, copy, NULL, 0, NULL,
		 current_loops ? current_loops->tree_root : NULL,
		 EXIT_BLOCK_PTR_FOR_FN(fn)->prev_bb, false);
	add_phi_args_after_copy(copy, n, NULL);
	first_c = get_bb_copy(first);
	if (current_loops)
		for (class loop *l = current_loops->tree_root->inner; l; l = l->next) {
			class loop *c = get_loop_copy(l);

			if (c && c != l)
				pairs.safe_push({ l->header, c->header, c, l->inner != NULL });
		}
	free_original_copy_tables();

	/* the dispatch: ENTRY -> disp -> first (instrumented) or first_c (a
	 * function that begins with a loop: first_c's PHIs take what first's
	 * take on the edge from disp) */
	disp = split_edge(e);
	add_test(fn, disp, first_c, true, profile_probability::even());

	/* the tests at the clean body's outermost loops: on entry, and on
	 * each back edge of a loop that holds others (a back edge of an
	 * innermost loop would be a second exit, and gcc vectorises only
	 * loops with one) */
	for (unsigned i = 0; i < pairs.length(); i++) {
		auto_vec<edge> in;
		edge pe;
		edge_iterator ei;

		FOR_EACH_EDGE(pe, ei, pairs[i].h_c->preds) {
			bool back = flow_bb_inside_loop_p(pairs[i].c, pe->src);

			if (pe->src != disp && (!back || pairs[i].inner))
				in.safe_push(pe);
		}
		for (unsigned k = 0; k < in.length(); k++, checks++)
			add_check(fn, in[k], pairs[i].h_i);
	}
	for (unsigned i = 0; i < n; i++)
		stripped += strip(copy[i]);
	XDELETEVEC(copy);

	mark_virtual_operands_for_renaming(fn);
	update_ssa(TODO_update_ssa);
	if (current_loops)
		loops_state_set(LOOPS_NEED_FIXUP);
	if (verbose)
		fprintf(stderr, "ameba dual: %s: two paths, %u blocks, %u hooks left out, %u loop tests\n",
			function_name(fn), n, stripped, checks);
	return TODO_cleanup_cfg;
}

namespace {

const pass_data dual_data = {
	GIMPLE_PASS,		/* type */
	"ameba_dual",		/* name */
	OPTGROUP_NONE,		/* optinfo_flags */
	TV_NONE,		/* tv_id */
	PROP_ssa | PROP_cfg,	/* properties_required */
	0,			/* properties_provided */
	0,			/* properties_destroyed */
	0,			/* todo_flags_start */
	0,			/* todo_flags_finish */
};

class dual_pass : public gimple_opt_pass {
public:
	dual_pass(gcc::context *ctx) : gimple_opt_pass(dual_data, ctx) {}
	bool gate(function *) final override { return flag_sanitize & SANITIZE_THREAD; }
	unsigned int execute(function *fn) final override { return dual_execute(fn); }
};

} /* namespace */

int plugin_init(struct plugin_name_args *info, struct plugin_gcc_version *version)
{
	struct register_pass_info pass;

	if (!plugin_default_version_check(version, &gcc_version)) {
		error("ameba dual: built for gcc %s, loaded by gcc %s", gcc_version.basever,
		      version->basever);
		return 1;
	}
	for (int i = 0; i < info->argc; i++) {
		if (!strcmp(info->argv[i].key, "max-blocks") && info->argv[i].value)
			max_blocks = atoi(info->argv[i].value);
		else if (!strcmp(info->argv[i].key, "verbose"))
			verbose = true;
		else
			warning(0, "ameba dual: unknown argument %s", info->argv[i].key);
	}
	pass.pass = new dual_pass(g);
	pass.reference_pass_name = "tsan";
	pass.ref_pass_instance_number = 1;
	pass.pos_op = PASS_POS_INSERT_AFTER;
	register_callback(info->base_name, PLUGIN_PASS_MANAGER_SETUP, NULL, &pass);
	return 0;
}
