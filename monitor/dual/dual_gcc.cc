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
 *   -fplugin-arg-ameba_dual_gcc-verbose (a note per function on stderr),
 *   -no-strip-mine (flat loops switch at the next call), -no-way-back
 *   (the instrumented body's loops do not test to go back).
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
#include "gimplify.h"
#include "gimplify-me.h"
#include "tree-ssa-loop.h"
#include "tree-ssa-loop-niter.h"
#include "tree-scalar-evolution.h"
#include "dominance.h"
#include "cfgcleanup.h"

int plugin_is_GPL_compatible;

static int max_blocks = 20000;
static bool verbose, mine = true, way_back = true;
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
 * irreducible. The way back (instrumented -> clean, dual_execute) is only
 * on the back edges of outermost loops that hold others: the two copies of
 * such a loop become one irreducible cycle, which gcc's loop passes leave
 * alone, but the loops inside stay natural and are vectorised as before; a
 * flat loop's two copies would be that cycle themselves.
 */
static void add_check(function *fn, edge e, basic_block h_i)
{
	add_test(fn, split_edge(e), h_i, false, profile_probability::very_likely());
}

/*
 * Strip-mining (docs/dual-path.md, "Switches in loops"): a top-level
 * innermost loop has no back edge where the clean body could test
 * __ameba_path without a second exit, which gcc 12's vectoriser does not
 * take. So before the copy, such a loop whose trip count gcc can compute
 * and may exceed STRIP_CHUNK becomes a nest: an inner loop of at most
 * STRIP_CHUNK iterations with one exit, a counter's (the vectoriser's
 * own kind), inside an outer loop over the chunks, whose back edge gets
 * the test like any loop that holds others. With N the latch's executions:
 *
 *   B0:  k0 = min(N, CHUNK - 1); r0 = N - k0
 *   H2:  k = PHI<k0, kn>; r = PHI<r0, rn>; v2 = PHI<v0, v_latch>...  (outer)
 *   h:   kk = PHI<k, kk - 1>; v = PHI<v2, v_latch>  ...  x: kk != 0 ? latch : C0
 *   C0:  r == 0 ? exit : C1
 *   C1:  r1 = r - 1; kn = min(r1, CHUNK - 1); rn = r1 - kn; -> H2
 *
 * The original exit test is replaced by the counter's: gcc's niter
 * analysis says it is taken after exactly N back edges. Both bodies are
 * made so (the copy follows); the instrumented one's hooks are unchanged.
 */
#define STRIP_CHUNK 4096

static tree build_min_minus1(gimple_stmt_iterator *gsi, tree v)
{
	tree t = TREE_TYPE(v), m = make_ssa_name(t);

	gsi_insert_after(gsi, gimple_build_assign(m, MIN_EXPR, v, build_int_cst(t, STRIP_CHUNK - 1)),
			 GSI_NEW_STMT);
	return m;
}

static tree build_bin(gimple_stmt_iterator *gsi, enum tree_code code, tree a, tree b)
{
	tree r = make_ssa_name(TREE_TYPE(a));

	gsi_insert_after(gsi, gimple_build_assign(r, code, a, b), GSI_NEW_STMT);
	return r;
}

/* For a loop of `iters` iterations (a constant), a chunk length that
 * divides it: a multiple of 16 (any vector length) from 1,024 to 16,384,
 * the nearest to STRIP_CHUNK; 0 when none. */
static unsigned chunk_of(unsigned HOST_WIDE_INT iters)
{
	for (unsigned d = STRIP_CHUNK; d >= 1024; d -= 16)
		if (iters % d == 0 && iters > d)
			return d;
	for (unsigned d = STRIP_CHUNK + 16; d <= 16384; d += 16)
		if (iters % d == 0 && iters > d)
			return d;
	return 0;
}

/* A loop strip_mine changed: what unmine needs to restore it in the
 * instrumented body. */
struct mined {
	basic_block h2, c1;	/* the outer loop's header and latch */
	basic_block x, c0;	/* the exit test's block; the chunk's end */
	enum tree_code code;	/* the original exit test */
	tree lhs, rhs;
};

static bool strip_mine(class loop *l, mined *m)
{
	auto_vec<edge> exits = get_loop_exit_edges(l);
	basic_block h = l->header, latch = l->latch, x, b0, h2, c0, c1;
	tree_niter_desc desc;
	edge ex, pe = NULL, e, cont, out, back;
	edge_iterator ei;
	gimple *last;
	gimple_stmt_iterator gsi;
	tree ut, n, k0, r0, kk, kdec, kh, rh, r1, kn, rn;
	gphi *kphi, *rphi, *kkphi;
	bool exit_on_true;
	unsigned whole = 0;	/* a known count: its chunks' length */

	if (l->inner || !latch || latch == h || exits.length() != 1)
		return false;
	ex = exits[0];
	x = ex->src;
	if (!single_pred_p(latch) || single_pred(latch) != x || !single_succ_p(latch) ||
	    !gimple_seq_empty_p(bb_seq(latch)) || !gimple_seq_empty_p(phi_nodes(latch)) ||
	    EDGE_COUNT(x->succs) != 2 || (ex->flags & (EDGE_ABNORMAL | EDGE_EH)))
		return false;
	last = last_stmt(x);
	if (!last || gimple_code(last) != GIMPLE_COND)
		return false;
	FOR_EACH_EDGE(e, ei, h->preds)
		if (e->src != latch) {
			if (pe)
				return false;	/* two entries */
			pe = e;
		}
	if (!pe || (pe->flags & (EDGE_ABNORMAL | EDGE_EH)))
		return false;
	if (!number_of_iterations_exit(l, ex, &desc, false) || !desc.niter ||
	    integer_nonzerop(desc.may_be_zero) || !integer_nonzerop(desc.assumptions) ||
	    wi::leu_p(desc.max, STRIP_CHUNK) || !INTEGRAL_TYPE_P(TREE_TYPE(desc.niter)) ||
	    !TYPE_UNSIGNED(TREE_TYPE(desc.niter)))
		return false;
	exit_on_true = ex->flags & EDGE_TRUE_VALUE;
	cont = ex == EDGE_SUCC(x, 0) ? EDGE_SUCC(x, 1) : EDGE_SUCC(x, 0);
	if (cont->dest != latch)
		return false;
	ut = TREE_TYPE(desc.niter);
	if (TREE_CODE(desc.niter) == INTEGER_CST && integer_zerop(desc.may_be_zero)) {
		/* a known count: chunks that divide it, so that the inner loop's
		 * count is a constant too (gcc -O2's very cheap cost model
		 * vectorises only such loops: no epilogue); none, no strip */
		if (!tree_fits_uhwi_p(desc.niter))
			return false;
		whole = chunk_of(tree_to_uhwi(desc.niter) + 1);
		if (!whole)
			return false;
	}

	/* B0 and H2 on the entry */
	b0 = split_edge(pe);
	h2 = split_edge(single_succ_edge(b0));
	gsi = gsi_last_bb(b0);
	n = force_gimple_operand_gsi(&gsi, unshare_expr(desc.niter), true, NULL_TREE, false,
				     GSI_CONTINUE_LINKING);
	if (!integer_zerop(desc.may_be_zero)) {
		/* the latch not run at all when it holds */
		tree z = force_gimple_operand_gsi(&gsi, unshare_expr(desc.may_be_zero), true,
						  NULL_TREE, false, GSI_CONTINUE_LINKING);
		tree m = make_ssa_name(ut);

		gsi = gsi_last_bb(b0);
		gsi_insert_after(&gsi, gimple_build_assign(m, COND_EXPR, z, build_zero_cst(ut), n),
				 GSI_NEW_STMT);
		n = m;
	}
	gsi = gsi_last_bb(b0);
	k0 = whole ? build_int_cst(ut, whole - 1) : build_min_minus1(&gsi, n);
	r0 = build_bin(&gsi, MINUS_EXPR, n, k0);

	/* C0 on the exit, C1 after it: the next chunk */
	c0 = split_edge(ex);
	c1 = create_empty_bb(c0);
	add_bb_to_loop(c1, loop_outer(l));
	c1->count = c0->count;
	out = single_succ_edge(c0);
	out->flags &= ~EDGE_FALLTHRU;
	out->flags |= EDGE_TRUE_VALUE;
	out->probability = profile_probability::guessed_always().apply_scale(1, 2);
	e = make_edge(c0, c1, EDGE_FALSE_VALUE);
	e->probability = out->probability.invert();
	back = make_edge(c1, h2, EDGE_FALLTHRU);
	back->probability = profile_probability::always();

	/* the outer PHIs: the chunk counters, and each header value */
	kphi = whole ? NULL : create_phi_node(make_ssa_name(ut), h2);
	rphi = create_phi_node(make_ssa_name(ut), h2);
	kh = kphi ? gimple_phi_result(kphi) : k0;
	rh = gimple_phi_result(rphi);
	gsi = gsi_start_bb(c1);
	r1 = make_ssa_name(ut);
	gsi_insert_before(&gsi, gimple_build_assign(r1, MINUS_EXPR, rh, build_int_cst(ut, 1)),
			  GSI_NEW_STMT);
	kn = whole ? k0 : build_min_minus1(&gsi, r1);
	rn = build_bin(&gsi, MINUS_EXPR, r1, kn);
	if (kphi) {
		add_phi_arg(kphi, k0, single_succ_edge(b0), UNKNOWN_LOCATION);
		add_phi_arg(kphi, kn, back, UNKNOWN_LOCATION);
	}
	add_phi_arg(rphi, r0, single_succ_edge(b0), UNKNOWN_LOCATION);
	add_phi_arg(rphi, rn, back, UNKNOWN_LOCATION);
	for (gphi_iterator pi = gsi_start_phis(h); !gsi_end_p(pi); gsi_next(&pi)) {
		gphi *p = pi.phi(), *q;
		edge in = single_succ_edge(h2);
		tree res = gimple_phi_result(p);

		q = create_phi_node(copy_ssa_name(res), h2);
		add_phi_arg(q, PHI_ARG_DEF_FROM_EDGE(p, in), single_succ_edge(b0),
			    gimple_phi_arg_location_from_edge(p, in));
		add_phi_arg(q, PHI_ARG_DEF_FROM_EDGE(p, single_succ_edge(latch)), back,
			    gimple_phi_arg_location_from_edge(p, single_succ_edge(latch)));
		SET_PHI_ARG_DEF(p, in->dest_idx, gimple_phi_result(q));
	}

	/* the inner counter and its test, in place of the original one */
	kkphi = create_phi_node(make_ssa_name(ut), h);
	kk = gimple_phi_result(kkphi);
	gsi = gsi_for_stmt(last);
	kdec = make_ssa_name(ut);
	gsi_insert_before(&gsi, gimple_build_assign(kdec, MINUS_EXPR, kk, build_int_cst(ut, 1)),
			  GSI_SAME_STMT);
	add_phi_arg(kkphi, kh, single_succ_edge(h2), UNKNOWN_LOCATION);
	add_phi_arg(kkphi, kdec, single_succ_edge(latch), UNKNOWN_LOCATION);
	m->x = x;
	m->c0 = c0;
	m->code = gimple_cond_code(last);
	m->lhs = gimple_cond_lhs(last);
	m->rhs = gimple_cond_rhs(last);
	gimple_cond_set_condition(as_a<gcond *>(last), exit_on_true ? EQ_EXPR : NE_EXPR, kk,
				  build_zero_cst(ut));
	update_stmt(last);

	/* C0: the loop's end, or the next chunk */
	gsi = gsi_last_bb(c0);
	gsi_insert_after(&gsi, gimple_build_cond(EQ_EXPR, rh, build_zero_cst(ut), NULL_TREE, NULL_TREE),
			 GSI_NEW_STMT);
	l->nb_iterations = NULL_TREE;
	m->h2 = h2;
	m->c1 = c1;
	return true;
}

/* Strip-mines the function's top-level innermost loops (strip_mine) into
 * done; the new outer loops enter the loop tree. */
static void strip_mine_all(auto_vec<mined> &done)
{
	auto_vec<class loop *> todo;

	if (!current_loops)
		return;
	for (class loop *l = current_loops->tree_root->inner; l; l = l->next)
		if (!l->inner)
			todo.safe_push(l);
	if (todo.is_empty())
		return;
	/* preheaders and simple latches, as the loop passes have them (niter
	 * analysis wants them); the loop passes make them again */
	loop_optimizer_init(LOOPS_NORMAL);
	calculate_dominance_info(CDI_DOMINATORS);
	scev_initialize();
	for (unsigned i = 0; i < todo.length(); i++) {
		class loop *o;
		mined m;

		if (!strip_mine(todo[i], &m))
			continue;
		done.safe_push(m);
		scev_reset_htab();
		free_dominance_info(CDI_DOMINATORS);
		calculate_dominance_info(CDI_DOMINATORS);
		o = alloc_loop();
		o->header = m.h2;
		o->latch = m.c1;
		add_loop(o, loop_outer(todo[i]));
	}
	scev_finalize();
	loop_optimizer_finalize();
	free_dominance_info(CDI_DOMINATORS);
}

/*
 * After the copy: the instrumented body's loop gets its own exit test back
 * and leaves through it, past the chunk's end (left unreachable, with the
 * counters: dead code). Only the clean body needs the chunks, and carried
 * through the instrumented loop, whose hook calls clobber the caller-saved
 * registers, the counters took callee-saved ones that the clean loop then
 * lacked: a scalar loop reloaded its pointer and factor from the stack,
 * 1.48x slower dormant (measured, fb.c fvar -O2).
 */
static void unmine(const mined &m)
{
	gcond *g = as_a<gcond *>(last_stmt(m.x));
	edge e = find_edge(m.x, m.c0), out = NULL, e2;
	edge_iterator ei;

	FOR_EACH_EDGE(out, ei, m.c0->succs)
		if (out->flags & EDGE_TRUE_VALUE)	/* r == 0: the loop's exit */
			break;
	if (!e || !out)
		return;
	gimple_cond_set_condition(g, m.code, m.lhs, m.rhs);
	update_stmt(g);
	e2 = redirect_edge_and_branch(e, out->dest);
	for (gphi_iterator pi = gsi_start_phis(out->dest); !gsi_end_p(pi); gsi_next(&pi))
		add_phi_arg(pi.phi(), PHI_ARG_DEF_FROM_EDGE(pi.phi(), out), e2,
			    gimple_phi_arg_location_from_edge(pi.phi(), out));
}

/* A top-level loop of the instrumented body and its clean copy. */
struct loop_pair {
	basic_block h_i, h_c;
	class loop *i, *c;
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
	auto_vec<mined> mines;
	auto_vec<loop_pair> pairs;

	if (why) {
		if (verbose)
			fprintf(stderr, "ameba dual: %s: one path (%s)\n", function_name(fn), why);
		return 0;
	}
	if (mine)
		strip_mine_all(mines);
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
				pairs.safe_push({ l->header, c->header, l, c, l->inner != NULL });
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
		/* the way back: each back edge of an instrumented loop that
		 * holds others goes to the clean header when the word is
		 * clear (not a strip-mined one's: unmine takes its back edge) */
		bool back = pairs[i].inner && way_back;

		for (unsigned k = 0; k < mines.length() && back; k++)
			back = mines[k].h2 != pairs[i].h_i;
		if (!back)
			continue;
		in.truncate(0);
		FOR_EACH_EDGE(pe, ei, pairs[i].h_i->preds)
			if (flow_bb_inside_loop_p(pairs[i].i, pe->src))
				in.safe_push(pe);
		for (unsigned k = 0; k < in.length(); k++, checks++)
			add_test(fn, split_edge(in[k]), pairs[i].h_c, true,
				 profile_probability::very_likely());
	}
	for (unsigned i = 0; i < n; i++)
		stripped += strip(copy[i]);
	for (unsigned i = 0; i < mines.length(); i++)
		unmine(mines[i]);
	if (!mines.is_empty())
		delete_unreachable_blocks();	/* the chunks' ends, before update_ssa */
	XDELETEVEC(copy);

	mark_virtual_operands_for_renaming(fn);
	update_ssa(TODO_update_ssa);
	if (current_loops)
		loops_state_set(LOOPS_NEED_FIXUP);
	if (verbose)
		fprintf(stderr, "ameba dual: %s: two paths, %u blocks, %u hooks left out, %u loop tests, "
			"%u loops strip-mined\n", function_name(fn), n, stripped, checks, mines.length());
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
		else if (!strcmp(info->argv[i].key, "no-strip-mine"))
			mine = false;
		else if (!strcmp(info->argv[i].key, "no-way-back"))
			way_back = false;
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
