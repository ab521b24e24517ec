/*
 * dual_llvm.cc - the dual path for clang 14 (docs/dual-path.md), an LLVM
 * pass plugin that `ameba cc` loads with -fpass-plugin.
 *
 * clang runs ThreadSanitizer at the end of its optimisation pipeline, after
 * the vectoriser, from an OptimizerLast callback it registers after the
 * plugins'. So this plugin's own callback comes first and, for each function
 * clang would instrument, does it all:
 *   1. runs clang's ThreadSanitizer pass on it (today's instrumented body,
 *      hook for hook, with the same -mllvm -tsan-* options);
 *   2. copies the body inside the function, deletes the access and function
 *      hooks from the copy (the clean path: the optimised code minus the
 *      calls, so vectorised as without ameba) and dispatches on
 *      __ameba_path at the entry;
 *   3. adds tests of __ameba_path on loop edges in both bodies: in the
 *      clean one, to the instrumented copy of the loop header when the word
 *      is set; in the instrumented one, back to the clean copy when it is
 *      clear. A loop's back edges (and an outermost loop's entries) first
 *      join into one block, so that each loop has one test per body;
 *   4. marks the function disable_sanitizer_instrumentation, so that
 *      clang's own ThreadSanitizer pass, which runs next, leaves it be.
 *
 * Notes:
 * - Both bodies share the frame: the entry's static allocas move to the
 *   dispatch block and are not copied. A value one body uses across a loop
 *   test gets merge PHIs (SSAUpdaterBulk) wherever the other body's
 *   definition can now reach it.
 * - Which loop edges test (AMEBA_DUAL_CHECKS): "outer" - the entries of
 *   outermost loops and the back edges of loops that hold others; "all"
 *   (the default) - also the back edges of innermost loops, but for those
 *   whose trip count is known at compile time to be at most SHORT_TRIPS
 *   (the loop around them tests soon enough); "every" - those too.
 *   The tests are added after vectorisation, so a loop that was vectorised
 *   stays so; the test costs a load and a branch per iteration of the
 *   vector loop (measured in docs/dual-path.md). Edges both ways make the
 *   two bodies' copies of a loop one irreducible cycle, which is harmless
 *   this late: only code generation follows, and each copy's own loop
 *   keeps its single header.
 * - Atomic operations stay calls of the runtime's __tsan_atomic* in both
 *   bodies: those calls perform the operation.
 * - A function keeps one path when it calls setjmp (returns_twice), has
 *   indirect branches, asm goto, token values (funclets, coroutines), a
 *   block whose address is taken, no hooks, or more than
 *   AMEBA_DUAL_MAX_BLOCKS (default 20000) blocks.
 * - AMEBA_DUAL_VERBOSE=1 prints a line per function on stderr. (Plugins
 *   loaded by -fpass-plugin cannot take -mllvm options: clang parses those
 *   before it loads them.)
 */
#include "llvm/ADT/SmallVector.h"
#include "llvm/Analysis/LoopInfo.h"
#include "llvm/Analysis/ScalarEvolution.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/MDBuilder.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassManager.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Passes/PassPlugin.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Transforms/Instrumentation/ThreadSanitizer.h"
#include "llvm/Transforms/Utils/BasicBlockUtils.h"
#include "llvm/Transforms/Utils/Cloning.h"
#include "llvm/Transforms/Utils/Local.h"
#include "llvm/Transforms/Utils/SSAUpdaterBulk.h"
#include "llvm/Transforms/Utils/ValueMapper.h"

#include <cstdlib>
#include <cstring>

using namespace llvm;

namespace {

/* An innermost loop that runs at most this many iterations (its trip count
 * known at compile time) has no test of its own: the loop around it, or the
 * next call, tests soon enough. */
const unsigned SHORT_TRIPS = 4096;

struct Options {
	unsigned max_blocks = 20000;
	bool verbose = false;
	bool all_back_edges = true;	/* innermost loops too, unless short */
	bool short_too = false;		/* short innermost loops too */

	Options()
	{
		const char *e;

		if ((e = getenv("AMEBA_DUAL_MAX_BLOCKS")) && *e)
			max_blocks = (unsigned)strtoul(e, nullptr, 10);
		if ((e = getenv("AMEBA_DUAL_VERBOSE")) && *e && strcmp(e, "0"))
			verbose = true;
		if ((e = getenv("AMEBA_DUAL_CHECKS")) && !strcmp(e, "outer"))
			all_back_edges = false;
		else if (e && !strcmp(e, "every"))
			short_too = true;
	}
};

const Options &opts()
{
	static const Options o;
	return o;
}

/* A call of one of the access or function hooks (not the atomics, nor the
 * memory functions: those calls perform the operation). */
bool is_hook(const Instruction &I)
{
	const auto *c = dyn_cast<CallInst>(&I);
	const Function *f = c ? c->getCalledFunction() : nullptr;
	StringRef n;

	if (!f || !f->getName().startswith("__tsan_"))
		return false;
	n = f->getName().drop_front(7);
	if (n == "func_entry" || n == "func_exit" || n == "vptr_update" || n == "vptr_read" ||
	    n == "read_range" || n == "write_range")
		return true;
	n.consume_front("unaligned_") || n.consume_front("volatile_");
	if (!(n.consume_front("read_write") || n.consume_front("read") || n.consume_front("write")))
		return false;
	return n == "1" || n == "2" || n == "4" || n == "8" || n == "16";
}

/* Why F stays one path (nullptr: it can have two). */
const char *single_why(Function &F)
{
	unsigned hooks = 0;

	if (F.size() > opts().max_blocks)
		return "too many blocks";
	for (BasicBlock &BB : F) {
		if (BB.hasAddressTaken())
			return "a block's address is taken";
		for (Instruction &I : BB) {
			if (I.getType()->isTokenTy())
				return "token values";
			if (isa<IndirectBrInst>(I) || isa<CallBrInst>(I))
				return "indirect branch or asm goto";
			if (const auto *cb = dyn_cast<CallBase>(&I))
				if (cb->hasFnAttr(Attribute::ReturnsTwice))
					return "setjmp";
			hooks += is_hook(I);
		}
	}
	return hooks ? nullptr : "no hooks";
}

/* Ends block x (one successor, dest) with a test of __ameba_path: the edge
 * to dest is kept when the word is set (keep_when_set) or clear, and the
 * other case goes to `to`, the other body's copy of dest, whose PHIs take on
 * the new edge what dest's take from x. */
void add_test(BasicBlock *x, BasicBlock *to, bool keep_when_set, GlobalVariable *path,
	      MDNode *weights)
{
	BranchInst *br = cast<BranchInst>(x->getTerminator());
	BasicBlock *dest = br->getSuccessor(0);
	IRBuilder<> b(br);
	LoadInst *on = b.CreateLoad(b.getInt32Ty(), path, true, "ameba.path");
	auto pd = dest->phis().begin(), pt = to->phis().begin();

	Value *set = b.CreateICmpNE(on, b.getInt32(0));

	if (keep_when_set)
		b.CreateCondBr(set, dest, to, weights);
	else
		b.CreateCondBr(set, to, dest, weights);
	br->eraseFromParent();
	for (; pd != dest->phis().end() && pt != to->phis().end(); ++pd, ++pt)
		pt->addIncoming(pd->getIncomingValueForBlock(x), x);
}

/* One block between preds and h that all their edges into h go through. */
BasicBlock *join(BasicBlock *h, ArrayRef<BasicBlock *> preds)
{
	if (preds.size() == 1 && count(successors(preds[0]), h) == 1)
		return SplitEdge(preds[0], h);
	return SplitBlockPredecessors(h, preds, ".ameba");
}

struct Stats {
	unsigned blocks = 0, stripped = 0, tests = 0, merges = 0;
};

void make_dual(Function &F, LoopInfo &li, ScalarEvolution &se, Stats &st)
{
	LLVMContext &ctx = F.getContext();
	Module &M = *F.getParent();
	BasicBlock &entry = F.getEntryBlock();
	SmallVector<BasicBlock *, 64> orig, clean;
	/* a loop header and the predecessors whose edges into it test (its
	 * entries or its back edges: each group joins into one block first) */
	struct group {
		BasicBlock *h;
		SmallVector<BasicBlock *, 4> preds;
	};
	SmallVector<group, 16> edges;
	SmallVector<Instruction *, 256> defs;
	ValueToValueMapTy vm;
	GlobalVariable *path;
	MDBuilder mdb(ctx);

	path = cast<GlobalVariable>(M.getOrInsertGlobal("__ameba_path", Type::getInt32Ty(ctx)));

	/* the loop edges that will test, found in the original body */
	{
		SmallVector<Loop *, 16> work(li.begin(), li.end());

		while (!work.empty()) {
			Loop *l = work.pop_back_val();
			BasicBlock *h = l->getHeader();
			unsigned trips = l->isInnermost() ? se.getSmallConstantMaxTripCount(l) : 0;
			bool back = !l->isInnermost() ||
				    (opts().all_back_edges &&
				     (opts().short_too || trips == 0 || trips > SHORT_TRIPS));

			if (h->isEHPad())
				continue;
			group entry{ h, {} }, latch{ h, {} };

			for (BasicBlock *p : predecessors(h)) {
				group &g = l->contains(p) ? latch : entry;
				const Instruction *t = p->getTerminator();

				if ((isa<BranchInst>(t) || isa<SwitchInst>(t)) && !is_contained(g.preds, p))
					g.preds.push_back(p);
			}
			if (!entry.preds.empty() && l->getParentLoop() == nullptr)
				edges.push_back(entry);
			if (!latch.preds.empty() && back)
				edges.push_back(latch);
			work.append(l->begin(), l->end());
		}
	}

	/* the dispatch block, ahead of the entry; the frame's static allocas
	 * move into it, so that both bodies use them */
	BasicBlock *disp = BasicBlock::Create(ctx, "ameba.dispatch", &F, &entry);
	{
		SmallVector<AllocaInst *, 16> allocas;

		for (Instruction &I : entry)
			if (auto *ai = dyn_cast<AllocaInst>(&I))
				if (ai->isStaticAlloca())
					allocas.push_back(ai);
		for (AllocaInst *ai : allocas)
			ai->moveBefore(*disp, disp->end());
		BranchInst::Create(&entry, disp);
	}

	for (BasicBlock &BB : F)
		if (&BB != disp) {
			orig.push_back(&BB);
			for (Instruction &I : BB)
				if (!I.getType()->isVoidTy() && !I.use_empty())
					defs.push_back(&I);
		}
	for (BasicBlock *bb : orig) {
		BasicBlock *c = CloneBasicBlock(bb, vm, ".clean", &F);

		vm[bb] = c;
		clean.push_back(c);
	}
	remapInstructionsInBlocks(clean, vm);
	st.blocks = orig.size();

	add_test(disp, cast<BasicBlock>(vm[&entry]), true, path, nullptr);

	/* the loop tests: clean -> instrumented when the word is set, and the
	 * way back, instrumented -> clean when it is clear */
	for (group &g : edges) {
		BasicBlock *hc = cast<BasicBlock>(vm[g.h]);
		SmallVector<BasicBlock *, 4> pc;

		for (BasicBlock *p : g.preds)
			pc.push_back(cast<BasicBlock>(vm[p]));
		add_test(join(hc, pc), g.h, false, path, mdb.createBranchWeights(1, 1 << 20));
		add_test(join(g.h, g.preds), hc, true, path, mdb.createBranchWeights(1 << 20, 1));
		st.tests++;
	}

	/* each body can now be entered from the other at loop headers: a value
	 * defined before such a header and used after it is merged with the
	 * other body's copy of it */
	if (!edges.empty()) {
		DominatorTree dt(F);
		SSAUpdaterBulk bulk;	/* all values at once: one walk per value
					 * with SSAUpdater cost a minute on sqlite3.c */

		for (Instruction *d : defs) {
			Instruction *c = cast<Instruction>(vm[d]);
			unsigned var = 0;
			bool any = false;

			for (Instruction *v : { d, c })
				for (Use &u : v->uses()) {
					if (dt.dominates(v, u))
						continue;
					if (!any) {
						var = bulk.AddVariable(d->getName(), d->getType());
						bulk.AddAvailableValue(var, d->getParent(), d);
						bulk.AddAvailableValue(var, c->getParent(), c);
						any = true;
						st.merges++;
					}
					bulk.AddUse(var, &u);
				}
		}
		bulk.RewriteAllUses(&dt);
	}

	for (BasicBlock *bb : clean)
		for (Instruction &I : make_early_inc_range(*bb)) {
			if (!is_hook(I))
				continue;
			SmallVector<Value *, 4> args(cast<CallInst>(I).args());

			I.eraseFromParent();
			st.stripped++;
			for (Value *v : args)
				RecursivelyDeleteTriviallyDeadInstructions(v);
		}
}

struct DualPass : PassInfoMixin<DualPass> {
	PreservedAnalyses run(Function &F, FunctionAnalysisManager &fam)
	{
		const char *why;
		Stats st;

		if (F.isDeclaration() || !F.hasFnAttribute(Attribute::SanitizeThread) ||
		    F.hasFnAttribute(Attribute::DisableSanitizerInstrumentation) ||
		    F.hasFnAttribute(Attribute::Naked))
			return PreservedAnalyses::all();
		ThreadSanitizerPass().run(F, fam);
		fam.invalidate(F, PreservedAnalyses::none());
		F.addFnAttr(Attribute::DisableSanitizerInstrumentation);
		if ((why = single_why(F))) {
			if (opts().verbose)
				errs() << "ameba dual: " << F.getName() << ": one path (" << why << ")\n";
			return PreservedAnalyses::none();
		}
		make_dual(F, fam.getResult<LoopAnalysis>(F), fam.getResult<ScalarEvolutionAnalysis>(F),
			  st);
		if (opts().verbose) {
			errs() << "ameba dual: " << F.getName() << ": two paths, " << st.blocks
			       << " blocks, " << st.stripped << " hooks left out, " << st.tests
			       << " loop tests, " << st.merges << " merged values\n";
			if (verifyFunction(F, &errs()))
				report_fatal_error("ameba dual: broken function after the copy");
		}
		return PreservedAnalyses::none();
	}
	static bool isRequired() { return true; }
};

} /* namespace */

extern "C" LLVM_ATTRIBUTE_WEAK PassPluginLibraryInfo llvmGetPassPluginInfo()
{
	return { LLVM_PLUGIN_API_VERSION, "ameba-dual", "1", [](PassBuilder &pb) {
			pb.registerOptimizerLastEPCallback([](ModulePassManager &mpm, OptimizationLevel) {
				mpm.addPass(createModuleToFunctionPassAdaptor(DualPass()));
			});
		} };
}
