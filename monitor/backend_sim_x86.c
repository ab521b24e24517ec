/*
 * backend_sim_x86.c - the sim backend's line entry in x86-64 assembly
 * (sim_line_fast_x86): the L1 hit of backend_sim.c's C line entry
 * (mon_sim_line_fast_c), which it falls back on for anything else.
 */
#include <stddef.h>

#include "mon.h"
#include "sim/sim_core.h"
#include "backend_sim.h"

#if defined(__x86_64__) && defined(__GNUC__)
/*
 * The line entry in assembly (x86-64): mon_sim_line_fast_c's L1 hit -
 * sim_l0_hit_at with no_calls, line_hit and mon_sim_count_l1_hit - and nothing
 * else; any other case jumps to mon_sim_line_fast_c with the arguments as
 * they came, having changed nothing (or undone what it changed: in_rt and
 * busy), and that takes it from the top.
 *
 * Why: gcc (and clang) keep a dozen values of the C hit in registers,
 * save five callee-saved registers for them and spill six more on the
 * stack, ~40 of the ~130 instructions of a non-MRU hit, whatever shape the
 * C is given (docs/simulator.md, "Assembly line entry"). This version
 * keeps t, the core, the line and the entry in four registers, parks the
 * three arguments only the fallback needs (pc, addr, wfs) and the cookie
 * in the red zone (a leaf: signal frames skip it), reloads what it can
 * from the core, and needs no frame.
 *
 * The order of the stores is C's: in_rt, busy, then the simulator's
 * state, busy cleared, the counters, in_rt (the membarrier protocol of
 * sim_core_try_enter relies on program order only). Offsets and constants
 * come from the C declarations through the asserts below; the build fails
 * when a structure moves. AMEBA_SIM_ASM=0 selects the C entry (the tests
 * run both and compare the oracles).
 */
#define A_T_IN_RT 12
#define A_T_BACKEND_DATA 216
#define A_C_BUSY 64
#define A_C_SHARED 68
#define A_C_MAIL 72
#define A_C_SOLO 236
#define A_C_L0_LINE 256
#define A_C_L0_PAGE 320
#define A_C_L0_IDX 384
#define A_C_L0_TIDX 416
#define A_C_L0_TAG 456
#define A_C_L0_LO 592
#define A_C_LAST_LINE 624
#define A_C_LAST_I 632
#define A_C_LAST_J 640
#define A_C_MEMO_PAGE 664
#define A_C_MEMO_TIDX 672
#define A_C_MEMO_SHADOW 680
#define A_C_THREE_C 688
#define A_C_L1_HIT_CYCLES 692
#define A_C_L1_KEY 696
#define A_C_L1_META 712
#define A_C_L1_CLOCK 720
#define A_C_L1_ASSOC 744
#define A_C_L1_LINE_SHIFT 748
#define A_C_L1_REPL 753
#define A_C_TLB1_KEY 856
#define A_C_TLB1_CLOCK 880
#define A_C_TLB1_ASSOC 904
#define A_C_HAS_L2 1024
#define A_C_LEAN 1248
#define A_C_LF_ENT 1304
#define A_C_LF_ON 1312
#define A_C_LF_NOTES 1360
#define A_M_COOKIE 8
#define A_M_DIRTY 20
#define A_M_TRACK 21
#define A_M_PRIV 22
#define A_O_IDX 0
#define A_O_FLAGS 5

/* field at offset off, of size sz, as the assembly below assumes */
#define A_FIELD(type, field, off, sz)                                                    \
	_Static_assert(offsetof(type, field) == (off) && sizeof(((type *)0)->field) == (sz), \
		       "sim_line_fast_x86: " #type "." #field " moved or resized")
A_FIELD(struct mon_thread, in_rt, A_T_IN_RT, 4);
A_FIELD(struct mon_thread, backend_data, A_T_BACKEND_DATA, 8);
A_FIELD(struct mon_sim_core, busy, A_C_BUSY, 4);
A_FIELD(struct mon_sim_core, shared, A_C_SHARED, 4);
A_FIELD(struct mon_sim_core, mail, A_C_MAIL, 4);
A_FIELD(struct mon_sim_core, solo, A_C_SOLO, 4);
A_FIELD(struct mon_sim_core, l0.line, A_C_L0_LINE, 64);
A_FIELD(struct mon_sim_core, l0.page, A_C_L0_PAGE, 64);
A_FIELD(struct mon_sim_core, l0.idx, A_C_L0_IDX, 32);
A_FIELD(struct mon_sim_core, l0.tidx, A_C_L0_TIDX, 32);
A_FIELD(struct mon_sim_core, l0.tag, A_C_L0_TAG, 128);
A_FIELD(struct mon_sim_core, l0.lo, A_C_L0_LO, 32);
A_FIELD(struct mon_sim_core, last_line, A_C_LAST_LINE, 8);
A_FIELD(struct mon_sim_core, last_i, A_C_LAST_I, 8);
A_FIELD(struct mon_sim_core, last_j, A_C_LAST_J, 4);
A_FIELD(struct mon_sim_core, memo_page, A_C_MEMO_PAGE, 8);
A_FIELD(struct mon_sim_core, memo_tidx, A_C_MEMO_TIDX, 8);
A_FIELD(struct mon_sim_core, memo_shadow, A_C_MEMO_SHADOW, 8);
A_FIELD(struct mon_sim_core, three_c, A_C_THREE_C, 4);
A_FIELD(struct mon_sim_core, l1_hit_cycles, A_C_L1_HIT_CYCLES, 4);
A_FIELD(struct mon_sim_core, l1.key, A_C_L1_KEY, 8);
A_FIELD(struct mon_sim_core, l1.meta, A_C_L1_META, 8);
A_FIELD(struct mon_sim_core, l1.clock, A_C_L1_CLOCK, 8);
A_FIELD(struct mon_sim_core, l1.assoc, A_C_L1_ASSOC, 4);
A_FIELD(struct mon_sim_core, l1.line_shift, A_C_L1_LINE_SHIFT, 4);
A_FIELD(struct mon_sim_core, l1.repl, A_C_L1_REPL, 1);
A_FIELD(struct mon_sim_core, tlb1.key, A_C_TLB1_KEY, 8);
A_FIELD(struct mon_sim_core, tlb1.clock, A_C_TLB1_CLOCK, 8);
A_FIELD(struct mon_sim_core, tlb1.assoc, A_C_TLB1_ASSOC, 4);
A_FIELD(struct mon_sim_core, has_l2, A_C_HAS_L2, 4);
A_FIELD(struct mon_sim_core, lean, A_C_LEAN, 4);
A_FIELD(struct mon_sim_core, lf.ent, A_C_LF_ENT, 8);
A_FIELD(struct mon_sim_core, lf.on, A_C_LF_ON, 4);
A_FIELD(struct mon_sim_core, lf.notes, A_C_LF_NOTES, 8);
A_FIELD(struct mon_sim_lf_ent, line, 0, 8);
A_FIELD(struct mon_sim_lf_ent, want, 8, 8);
A_FIELD(struct mon_sim_lf_ent, i, 16, 4);
A_FIELD(struct mon_sim_lf_ent, wok, 24, 4);
A_FIELD(struct mon_sim_lf_ent, tag, 32, 16);
_Static_assert(sizeof(struct mon_sim_lf_ent) == 64, "sim_line_fast_x86: struct mon_sim_lf_ent resized");
_Static_assert(MON_SIM_LF_BITS == 8, "sim_line_fast_x86: the line filter resized (movzbl)");
A_FIELD(struct sim_meta, cookie, A_M_COOKIE, 4);
A_FIELD(struct sim_meta, dirty, A_M_DIRTY, 1);
A_FIELD(struct sim_meta, track, A_M_TRACK, 1);
A_FIELD(struct sim_meta, priv, A_M_PRIV, 1);
A_FIELD(struct mon_obj, idx, A_O_IDX, 4);
A_FIELD(struct mon_obj, flags, A_O_FLAGS, 1);
_Static_assert(A_C_L0_LO % 16 == 0, "sim_line_fast_x86: l0.lo not 16-byte aligned");
_Static_assert(sizeof(struct sim_meta) == 24, "sim_line_fast_x86: struct sim_meta resized");
_Static_assert(SIM_L0 == 8 && MON_LINE_SHIFT == 6 && MRI_GEOM_LRU == 0 && MON_OBJF_LIVE == 1 &&
		       MON_ACC_READ == 1 && MON_ACC_WRITE == 2 && SIM_I == 0 && SIM_S == 1 &&
		       SIM_E == 2 && SIM_M == 3 && SLOT_MEM_REF == 0 && SLOT_READS == 1 &&
		       SLOT_WRITES == 2 && SLOT_EST_CYCLES == 24,
	       "sim_line_fast_x86: a constant changed");
_Static_assert(SIM_KEY(1) == 8, "sim_line_fast_x86: SIM_KEY(line) is (line + 1) * 4");
#undef A_FIELD

#define A_S_(x) #x
#define A_S(x) A_S_(x)

/*
 * The L1 hit of a remembered line, shared by the single entry and the
 * batch's loop: from the line in r9 (the core in r8, t in rdi) to the
 * hit's state changes done and wfs in edx; MISS and OUT are where to go
 * when it is no hit (having changed nothing): the miss half with the
 * core held, or the C entry. WFS8, WFS32: where wfs is (byte, dword);
 * SAVE_COOKIE puts the object's index (rax: the object) where COOKIE
 * reads it. NOT_LEAN: the tests a lean core (c->lean, checked by the
 * caller: an LRU L1, no 3C) never needs - A_NOT_LEAN, or nothing.
 */
#define A_NOT_LEAN(x) x
#define A_LEAN(x)
#define A_HIT(MISS, OUT, WFS8, WFS32, SAVE_COOKIE, COOKIE, NOT_LEAN) \
	/* sim_l0_find: the last line (mru), else the first entry holding it */ \
	"	cmp	" A_S(A_C_LAST_LINE) "(%r8), %r9\n" \
	"	jne	3f\n" \
	"	mov	" A_S(A_C_LAST_J) "(%r8), %r10d\n" \
	"	mov	" A_S(A_C_LAST_I) "(%r8), %rcx\n" \
	"	jmp	4f\n" \
	"3:\n" \
	/* the low halves of all eight entries against the line's at once \
	 * (SSE2): the first match, if its whole line is ours, is \
	 * sim_l0_search's entry; a first match that is not (a line 2^32 \
	 * lines away) goes the full way, which is always right */ \
	"	movd	%r9d, %xmm0\n" \
	"	pshufd	$0, %xmm0, %xmm0\n" \
	"	movdqa	" A_S(A_C_L0_LO) "(%r8), %xmm1\n" \
	"	pcmpeqd	%xmm0, %xmm1\n" \
	"	pcmpeqd	" A_S(A_C_L0_LO) "+16(%r8), %xmm0\n" \
	"	packssdw	%xmm0, %xmm1\n"		/* entry j: bytes 2j, 2j + 1 */ \
	"	pmovmskb	%xmm1, %eax\n" \
	"	test	%eax, %eax\n" \
	"	jz	" MISS "\n" \
	"	bsf	%eax, %r10d\n" \
	"	shr	$1, %r10d\n" \
	"	cmp	" A_S(A_C_L0_LINE) "(%r8,%r10,8), %r9\n" \
	"	jne	" MISS "\n" \
	"	mov	" A_S(A_C_L0_IDX) "(%r8,%r10,4), %ecx\n"	/* i */ \
	"4:\n" \
	/* line_hit: the entry's tag names a live object; its index is the cookie */ \
	"	mov	%r10, %rax\n" \
	"	shl	$4, %rax\n" \
	"	mov	" A_S(A_C_L0_TAG) "(%r8,%rax), %rax\n" \
	"	test	%rax, %rax\n" \
	"	jz	" OUT "\n" \
	"	testb	$1, " A_S(A_O_FLAGS) "(%rax)\n" \
	"	jz	" OUT "\n" \
	SAVE_COOKIE \
	/* sim_l0_hit_at: the key is the line's, state not I */ \
	"	mov	" A_S(A_C_L1_KEY) "(%r8), %rsi\n" \
	"	lea	4(,%r9,4), %rax\n"		/* SIM_KEY(line) */ \
	"	xor	(%rsi,%rcx,8), %rax\n"		/* the state, if the tag matches */ \
	"	cmp	$3, %rax\n" \
	"	ja	" MISS "\n" \
	"	test	%eax, %eax\n" \
	"	jz	" MISS "\n" \
	"	lea	(%rcx,%rcx,2), %r11\n" \
	"	shl	$3, %r11\n" \
	"	add	" A_S(A_C_L1_META) "(%r8), %r11\n"	/* m */ \
	/* a write needs M untracked, or E private without an L2 */ \
	"	testb	$2, " WFS8 "\n" \
	"	jz	5f\n" \
	"	cmp	$3, %eax\n" \
	"	jne	6f\n" \
	"	cmpb	$0, " A_S(A_M_TRACK) "(%r11)\n" \
	"	je	5f\n" \
	"6:\n" \
	"	cmp	$2, %eax\n" \
	"	jne	" MISS "\n" \
	"	cmpb	$0, " A_S(A_M_PRIV) "(%r11)\n" \
	"	je	" MISS "\n" \
	"	cmpl	$0, " A_S(A_C_HAS_L2) "(%r8)\n" \
	"	jne	" MISS "\n" \
	"5:\n" \
	/* mru: the line, its page and shadow are most recently used already */ \
	"	cmp	" A_S(A_C_LAST_LINE) "(%r8), %r9\n" \
	"	je	8f\n" \
	NOT_LEAN("	cmpb	$0, " A_S(A_C_L1_REPL) "(%r8)\n"	/* PLRU L1: C touches it */ \
		 "	jne	" MISS "\n") \
	"	mov	" A_S(A_C_L0_PAGE) "(%r8,%r10,8), %rax\n" \
	"	cmp	" A_S(A_C_MEMO_PAGE) "(%r8), %rax\n" \
	"	je	7f\n" \
	/* another page: it must still be in the L1 TLB where the entry says */ \
	"	mov	" A_S(A_C_L0_TIDX) "(%r8,%r10,4), %esi\n" \
	"	mov	" A_S(A_C_TLB1_KEY) "(%r8), %rdx\n" \
	"	lea	5(,%rax,4), %rax\n"		/* SIM_KEY(page) | SIM_S */ \
	"	cmp	%rax, (%rdx,%rsi,8)\n" \
	"	jne	" MISS "\n" \
	NOT_LEAN("	cmpl	$0, " A_S(A_C_THREE_C) "(%r8)\n" \
		 "	je	10f\n" \
		 "	cmp	" A_S(A_C_MEMO_SHADOW) "(%r8), %r9\n" \
		 "	jne	" MISS "\n"			/* the shadow needs a call */ \
		 "10:\n") \
	"	mov	" A_S(A_C_TLB1_CLOCK) "(%r8), %rax\n" \
	"	add	$1, %rax\n" \
	"	mov	%rax, " A_S(A_C_TLB1_CLOCK) "(%r8)\n" \
	"	mov	%rsi, " A_S(A_C_MEMO_TIDX) "(%r8)\n" \
	"	add	" A_S(A_C_TLB1_ASSOC) "(%r8), %esi\n" \
	"	mov	%rax, (%rdx,%rsi,8)\n"		/* the L1 TLB is LRU */ \
	"	mov	" A_S(A_C_L0_PAGE) "(%r8,%r10,8), %rax\n" \
	"	mov	%rax, " A_S(A_C_MEMO_PAGE) "(%r8)\n" \
	"	jmp	11f\n" \
	"7:\n" \
	NOT_LEAN("	cmpl	$0, " A_S(A_C_THREE_C) "(%r8)\n" \
		 "	je	11f\n" \
		 "	cmp	" A_S(A_C_MEMO_SHADOW) "(%r8), %r9\n" \
		 "	jne	" MISS "\n") \
	"11:\n" \
	/* sim_touch_at (LRU), and the line becomes the last */ \
	"	mov	" A_S(A_C_L1_CLOCK) "(%r8), %rax\n" \
	"	add	$1, %rax\n" \
	"	mov	%rax, " A_S(A_C_L1_CLOCK) "(%r8)\n" \
	"	mov	" A_S(A_C_L1_ASSOC) "(%r8), %esi\n" \
	"	add	%rcx, %rsi\n" \
	"	mov	" A_S(A_C_L1_KEY) "(%r8), %rdx\n" \
	"	mov	%rax, (%rdx,%rsi,8)\n" \
	"	mov	%r9, " A_S(A_C_LAST_LINE) "(%r8)\n" \
	"	mov	%rcx, " A_S(A_C_LAST_I) "(%r8)\n" \
	"	mov	%r10d, " A_S(A_C_LAST_J) "(%r8)\n" \
	"8:\n" \
	/* the hit: M on a write, the cookie, the dirty bit */ \
	"	mov	" WFS32 ", %edx\n"		/* wfs */ \
	"	test	$2, %dl\n" \
	"	jz	12f\n" \
	"	mov	" A_S(A_C_L1_KEY) "(%r8), %rsi\n" \
	"	orq	$3, (%rsi,%rcx,8)\n"		/* E -> M, or M already */ \
	"	orb	$1, " A_S(A_M_DIRTY) "(%r11)\n" \
	"12:\n" \
	"	mov	" COOKIE ", %eax\n" \
	"	mov	%eax, " A_S(A_M_COOKIE) "(%r11)\n" \
	/* sim_lf_note: the line's entry in the line filter, with the \
	 * remembered line's tag; a write hits through the filter once the \
	 * line is M and dirty */ \
	"	cmpl	$0, " A_S(A_C_LF_ON) "(%r8)\n" \
	"	je	13f\n" \
	"	addq	$1, " A_S(A_C_LF_NOTES) "(%r8)\n" \
	"	mov	%r9, %rax\n"				/* mon_sim_lf_slot */ \
	"	shr	$16, %rax\n" \
	"	xor	%r9, %rax\n" \
	"	movzbl	%al, %eax\n" \
	"	shl	$6, %rax\n"				/* 64 bytes an entry */ \
	"	add	" A_S(A_C_LF_ENT) "(%r8), %rax\n" \
	"	mov	%r9, (%rax)\n"				/* line */ \
	"	mov	" A_S(A_C_L1_KEY) "(%r8), %rsi\n" \
	"	mov	(%rsi,%rcx,8), %rsi\n" \
	"	mov	%rsi, 8(%rax)\n"			/* want: the key word */ \
	"	mov	%ecx, 16(%rax)\n"			/* i */ \
	"	and	$3, %esi\n" \
	"	cmp	$3, %esi\n" \
	"	sete	%sil\n" \
	"	and	" A_S(A_M_DIRTY) "(%r11), %sil\n" \
	"	movzbl	%sil, %esi\n" \
	"	mov	%esi, 24(%rax)\n"			/* wok */ \
	"	mov	%r10, %rsi\n" \
	"	shl	$4, %rsi\n" \
	"	mov	" A_S(A_C_L0_TAG) "(%r8,%rsi), %r11\n" \
	"	mov	%r11, 32(%rax)\n" \
	"	mov	" A_S(A_C_L0_TAG) "+8(%r8,%rsi), %r11\n" \
	"	mov	%r11, 40(%rax)\n" \
	"13:\n"

/* mon_sim_count_l1_hit into the remembered line's counter vector (wfs in edx;
 * entry j in r10, the core in r8) */
#define A_COUNT \
	"	shl	$4, %r10\n" \
	"	mov	" A_S(A_C_L0_TAG) "+8(%r8,%r10), %rax\n" \
	"	addq	$1, (%rax)\n"			/* SLOT_MEM_REF */ \
	"	mov	%edx, %esi\n" \
	"	and	$1, %esi\n" \
	"	add	%rsi, 8(%rax)\n"		/* SLOT_READS */ \
	"	shr	$1, %edx\n" \
	"	and	$1, %edx\n" \
	"	add	%rdx, 16(%rax)\n"		/* SLOT_WRITES */ \
	"	mov	" A_S(A_C_L1_HIT_CYCLES) "(%r8), %esi\n" \
	"	add	%rsi, 192(%rax)\n"		/* SLOT_EST_CYCLES */

/*
 * Registers: rdi t (kept), r8 the core, r9 the line, r10 the entry j, rcx
 * the L1 key index i, r11 the way's metadata; rax, rdx, rsi scratch. Red
 * zone: -8 pc, -16 addr, -24 wfs, -32 the cookie.
 */
__asm__(
	"	.pushsection .text\n"
	"	.p2align 4\n"
	"	.globl	sim_line_fast_x86\n"
	"	.hidden	sim_line_fast_x86\n"
	"	.type	sim_line_fast_x86, @function\n"
	"sim_line_fast_x86:\n"
	"	.cfi_startproc\n"
	"	mov	" A_S(A_T_BACKEND_DATA) "(%rdi), %r8\n"
	"	test	%r8, %r8\n"
	"	jz	.Lslf_c\n"
	"	mov	%rcx, -8(%rsp)\n"
	"	mov	" A_S(A_C_L1_LINE_SHIFT) "(%r8), %ecx\n"
	"	cmp	$6, %ecx\n"			/* L1 line < 64 bytes: C tests crossing */
	"	jb	.Lslf_pc\n"
	"	mov	%rsi, -16(%rsp)\n"
	"	mov	%edx, -24(%rsp)\n"
	"	mov	%rsi, %r9\n"
	"	shr	%cl, %r9\n"			/* line */
	"	addl	$1, " A_S(A_T_IN_RT) "(%rdi)\n"	/* mon_rt_enter */
	"	movl	$1, " A_S(A_C_BUSY) "(%r8)\n"	/* sim_core_try_enter */
	"	cmpl	$0, " A_S(A_C_SHARED) "(%r8)\n"
	"	jne	.Lslf_out\n"
	"	cmpl	$0, " A_S(A_C_SOLO) "(%r8)\n"
	"	jne	2f\n"
	"	cmpl	$0, " A_S(A_C_MAIL) "(%r8)\n"
	"	jne	.Lslf_miss\n"
	"2:\n"
	A_HIT(".Lslf_miss", ".Lslf_out", "-24(%rsp)", "-24(%rsp)",
	      "	mov	" A_S(A_O_IDX) "(%rax), %eax\n"
	      "	mov	%eax, -32(%rsp)\n"
	      , "-32(%rsp)", A_NOT_LEAN)
	/* sim_core_exit, mon_sim_count_l1_hit into the entry's counter vector, mon_rt_leave */
	"	movl	$0, " A_S(A_C_BUSY) "(%r8)\n"
	A_COUNT
	"	subl	$1, " A_S(A_T_IN_RT) "(%rdi)\n"
	"	ret\n"
	/* no hit of a remembered line: the C miss half, the core still held */
	".Lslf_miss:\n"
	"	mov	-16(%rsp), %rsi\n"
	"	mov	-24(%rsp), %edx\n"
	"	mov	-8(%rsp), %rcx\n"
	"	jmp	mon_sim_line_miss_c\n"
	/* the core shared, or the entry's tag stale: undo, and the C entry */
	".Lslf_out:\n"
	"	movl	$0, " A_S(A_C_BUSY) "(%r8)\n"
	"	subl	$1, " A_S(A_T_IN_RT) "(%rdi)\n"
	"	mov	-16(%rsp), %rsi\n"
	"	mov	-24(%rsp), %edx\n"
	".Lslf_pc:\n"
	"	mov	-8(%rsp), %rcx\n"
	".Lslf_c:\n"
	"	jmp	mon_sim_line_fast_c\n"
	"	.cfi_endproc\n"
	"	.size	sim_line_fast_x86, .-sim_line_fast_x86\n"
	"	.popsection\n");

/*
 * The batch's hits (batch.c): sim_line_fast_x86's L1 hit as a loop over
 * records (address, wfs) [p, e) of t, the core c held and in_rt raised
 * once for the run of hits rather than around each. Returns the first
 * record it did not take (e when it took them all), having changed nothing
 * for it, with the core and in_rt as they came: the caller sends that
 * record through the line entry. A miss goes to the miss half
 * (mon_sim_line_miss_c), called from here with the core held and in_rt
 * raised, as the single entry's jump does; the loop then enters again.
 * Only for a solo core on the lean path whose L1 lines are 64 bytes (the
 * caller checks the shift; the core's solo and lean flags are checked
 * here, held: the hit then needs no PLRU or 3C test), and records within
 * one 64-byte line (the hooks append no other). Registers as sim_line_fast_x86's, and rbx the record, r12
 * the end, r13 wfs, r14 the cookie, r15 t (rdi across the call).
 */
__asm__(
	"	.pushsection .text\n"
	"	.p2align 4\n"
	"	.globl	sim_batch_hits_x86\n"
	"	.hidden	sim_batch_hits_x86\n"
	"	.type	sim_batch_hits_x86, @function\n"
	"sim_batch_hits_x86:\n"
	"	.cfi_startproc\n"
	"	push	%rbx\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	.cfi_rel_offset %rbx, 0\n"
	"	push	%r12\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	.cfi_rel_offset %r12, 0\n"
	"	push	%r13\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	.cfi_rel_offset %r13, 0\n"
	"	push	%r14\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	.cfi_rel_offset %r14, 0\n"
	"	push	%r15\n"				/* five: rsp 16-aligned for the call */
	"	.cfi_adjust_cfa_offset 8\n"
	"	.cfi_rel_offset %r15, 0\n"
	"	mov	%rdi, %r15\n"
	"	mov	%rsi, %r8\n"
	"	mov	%rdx, %rbx\n"
	"	mov	%rcx, %r12\n"
	"	addl	$1, " A_S(A_T_IN_RT) "(%rdi)\n"	/* mon_rt_enter */
	"	movl	$1, " A_S(A_C_BUSY) "(%r8)\n"	/* sim_core_try_enter */
	"	cmpl	$0, " A_S(A_C_SHARED) "(%r8)\n"
	"	jne	.Lbh_out\n"
	"	cmpl	$0, " A_S(A_C_SOLO) "(%r8)\n"
	"	je	.Lbh_out\n"
	"	cmpl	$0, " A_S(A_C_LEAN) "(%r8)\n"
	"	je	.Lbh_out\n"
	".Lbh_loop:\n"
	"	cmp	%r12, %rbx\n"
	"	jae	.Lbh_out\n"
	"	mov	(%rbx), %r9\n"			/* the address */
	"	mov	8(%rbx), %r13d\n"		/* wfs */
	"	shr	$6, %r9\n"			/* line (the hook appends no crossing) */
	A_HIT(".Lbh_miss", ".Lbh_out", "%r13b", "%r13d",
	      "	mov	" A_S(A_O_IDX) "(%rax), %r14d\n", "%r14d", A_LEAN)
	A_COUNT
	"	add	$16, %rbx\n"
	"	jmp	.Lbh_loop\n"
	/* no hit of a remembered line: the miss half, the core held and
	 * in_rt raised (it leaves both), then in again for the next record */
	".Lbh_miss:\n"
	"	mov	%r15, %rdi\n"
	"	mov	(%rbx), %rsi\n"
	"	mov	%r13d, %edx\n"
	"	xor	%ecx, %ecx\n"
	"	call	mon_sim_line_miss_c\n"
	"	mov	%r15, %rdi\n"
	"	mov	" A_S(A_T_BACKEND_DATA) "(%rdi), %r8\n"
	"	add	$16, %rbx\n"
	"	cmp	%r12, %rbx\n"
	"	jae	.Lbh_done\n"
	"	addl	$1, " A_S(A_T_IN_RT) "(%rdi)\n"
	"	movl	$1, " A_S(A_C_BUSY) "(%r8)\n"
	"	cmpl	$0, " A_S(A_C_SHARED) "(%r8)\n"
	"	jne	.Lbh_out\n"
	"	cmpl	$0, " A_S(A_C_SOLO) "(%r8)\n"
	"	je	.Lbh_out\n"
	"	cmpl	$0, " A_S(A_C_LEAN) "(%r8)\n"
	"	je	.Lbh_out\n"
	"	jmp	.Lbh_loop\n"
	".Lbh_out:\n"
	"	movl	$0, " A_S(A_C_BUSY) "(%r8)\n"
	"	subl	$1, " A_S(A_T_IN_RT) "(%rdi)\n"
	".Lbh_done:\n"
	"	mov	%rbx, %rax\n"
	"	pop	%r15\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	pop	%r14\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	pop	%r13\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	pop	%r12\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	pop	%rbx\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	ret\n"
	"	.cfi_endproc\n"
	"	.size	sim_batch_hits_x86, .-sim_batch_hits_x86\n"
	"	.popsection\n");
#undef A_S
#undef A_S_
#endif
