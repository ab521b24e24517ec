/*
 * backend_sim_x86.c - the sim backend's line entry in x86-64 assembly
 * (sim_line_fast_x86): the L1 hit of backend_sim.c's C line entry
 * (mon_sim_line_fast_c), which it falls back on for anything else; the
 * batch's hits (sim_batch_hits_x86); and the line filter's usual miss
 * (sim_lf_miss_x86), which falls back on mon_sim_lf_miss; and the ordered
 * mode merger's L1 hits (sim_mf_hits_x86).
 */
#include <stddef.h>

#include "mon.h"
#include "sim/sim_core.h"
#include "backend_sim.h"
#include "seq_int.h"	/* struct seq_ent: sim_mf_hits_x86's log entries */

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
#define A_C_SHADOW_MAP 1128
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
/* the filter's miss (sim_lf_miss_x86) */
#define A_T_CACHE_START 56
#define A_T_CACHE_END 88
#define A_T_CACHE_OBJ 120
#define A_T_CACHE_COUNTS 152
#define A_T_CACHE_HINT 188
#define A_C_SIM 0
#define A_C_L1_SET_MASK 736
#define A_C_LF_TICK 1368
#define A_C_NR_LLC_WB 1488
#define A_C_LF_MEMO 1400
#define A_S_LLC 784
#define A_L_BLK 0
#define A_L_SET_MASK 24

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
A_FIELD(struct mon_sim_core, shadow.map, A_C_SHADOW_MAP, 8);
A_FIELD(struct sim_shadow_seg, line, 0, 64);
A_FIELD(struct sim_shadow_seg, stamp, 64, 16);
A_FIELD(struct sim_shadow_seg, clock, 112, 8);
_Static_assert(SIM_SHADOW_SEG == 8 && SIM_SHADOW_CLOCK_MAX == 0xffff,
	       "sim_line_fast_x86: the 3C shadow's segment changed");
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
A_FIELD(struct mon_thread, cache.start, A_T_CACHE_START, 32);
A_FIELD(struct mon_thread, cache.end, A_T_CACHE_END, 32);
A_FIELD(struct mon_thread, cache.obj, A_T_CACHE_OBJ, 32);
A_FIELD(struct mon_thread, cache.counts, A_T_CACHE_COUNTS, 32);
A_FIELD(struct mon_thread, cache.hint, A_T_CACHE_HINT, 4);
A_FIELD(struct mon_sim_core, sim, A_C_SIM, 8);
A_FIELD(struct mon_sim_core, l1.set_mask, A_C_L1_SET_MASK, 8);
A_FIELD(struct mon_sim_core, lf.tick, A_C_LF_TICK, 4);
A_FIELD(struct mon_sim_core, lf.memo, A_C_LF_MEMO, 64);
A_FIELD(struct mon_sim_lf_memo, lo, 0, 8);
A_FIELD(struct mon_sim_lf_memo, hi, 8, 8);
A_FIELD(struct mon_sim_lf_memo, obj, 16, 8);
A_FIELD(struct mon_sim_lf_memo, v, 24, 8);
A_FIELD(struct mon_sim_core, nr_llc_wb, A_C_NR_LLC_WB, 8);
A_FIELD(struct mon_sim, llc, A_S_LLC, 8);
A_FIELD(struct sim_llc, blk, A_L_BLK, 8);
A_FIELD(struct sim_llc, set_mask, A_L_SET_MASK, 8);
_Static_assert(MON_OBJCACHE_WAYS == 4 && SIM_LEAN_FIT_8_16_64 == 4 && SLOT_OUTCOME == 26 &&
		       SIM_LEAN_LLC == 1 && SIM_LEAN_MEM == 2 && MON_SIM_LF_UPGRADE == 2 &&
		       SIM_LLC16_STRIDE == 8 && SIM_LLC16_KEYS == 0,
	       "sim_lf_miss_x86: a constant changed");
A_FIELD(struct mon_obj, flags, A_O_FLAGS, 1);
_Static_assert(A_C_L0_LO % 16 == 0, "sim_line_fast_x86: l0.lo not 16-byte aligned");
_Static_assert(sizeof(struct sim_meta) == 24, "sim_line_fast_x86: struct sim_meta resized");
_Static_assert(SIM_L0 == 8 && MON_LINE_SHIFT == 6 && MRI_GEOM_LRU == 0 && MON_OBJF_LIVE == 1 &&
		       MON_ACC_READ == 1 && MON_ACC_WRITE == 2 && SIM_I == 0 && SIM_S == 1 &&
		       SIM_E == 2 && SIM_M == 3 && SLOT_MEM_REF == 0 && SLOT_READS == 1 &&
		       SLOT_WRITES == 2 && SLOT_EST_CYCLES == 24,
	       "sim_line_fast_x86: a constant changed");
_Static_assert(SIM_KEY(1) == 8, "sim_line_fast_x86: SIM_KEY(line) is (line + 1) * 4");

#define A_S_(x) #x
#define A_S(x) A_S_(x)

/*
 * The L1 hit of a remembered line, shared by the single entry and the
 * batch's loop: from the line in r9 (the core in r8, t in rdi) to the
 * hit's state changes done and wfs in edx; MISS and OUT are where to go
 * when it is no hit (having changed nothing): the miss half with the
 * core held, or the C entry. WFS8, WFS32: where wfs is (byte, dword);
 * SAVE_COOKIE puts the object's index (rax: the object) where COOKIE
 * reads it. NOT_LEAN: the tests a batch's core never needs - A_NOT_LEAN,
 * or nothing (the batch's: c->lean, an LRU L1, checked by the loop, and
 * no 3C, by mon_sim_batch_ok before any batch).
 */
/* one slot of the 3C shadow's segment (rax) against the line (r9): to 9f
 * with its number in edx */
#define A_SEG_CMP \
	"	cmp	(%rax,%rdx,8), %r9\n" \
	"	je	9f\n" \
	"	add	$1, %edx\n"
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
		 "	jne	" MISS "\n" \
		 /* 3C: the line in the shadow's front segment (sim_shadow_seg_touch) \
		  * or it needs a call. Stamped before the L1 TLB's test, which may \
		  * still send it to C: C's own use of the line then finds it most \
		  * recently used already, the same order */ \
		 "	cmpl	$0, " A_S(A_C_THREE_C) "(%r8)\n" \
		 "	je	10f\n" \
		 "	cmp	" A_S(A_C_MEMO_SHADOW) "(%r8), %r9\n" \
		 "	je	10f\n" \
		 "	mov	" A_S(A_C_SHADOW_MAP) "(%r8), %rax\n" \
		 "	xor	%edx, %edx\n" \
		 A_SEG_CMP A_SEG_CMP A_SEG_CMP A_SEG_CMP \
		 A_SEG_CMP A_SEG_CMP A_SEG_CMP A_SEG_CMP \
		 "	jmp	" MISS "\n" \
		 "9:\n"	/* a clock at its end: C renumbers the stamps */ \
		 "	mov	112(%rax), %rsi\n" \
		 "	add	$1, %rsi\n" \
		 "	cmp	$0xffff, %rsi\n" \
		 "	jae	" MISS "\n" \
		 "	mov	%rsi, 112(%rax)\n" \
		 "	mov	%si, 64(%rax,%rdx,2)\n" \
		 "	mov	%r9, " A_S(A_C_MEMO_SHADOW) "(%r8)\n" \
		 "10:\n") \
	"	mov	" A_S(A_C_L0_PAGE) "(%r8,%r10,8), %rax\n" \
	"	cmp	" A_S(A_C_MEMO_PAGE) "(%r8), %rax\n" \
	"	je	7f\n" \
	/* another page: it must still be in the L1 TLB where the entry says */ \
	"	mov	" A_S(A_C_L0_TIDX) "(%r8,%r10,4), %esi\n" \
	"	mov	" A_S(A_C_TLB1_KEY) "(%r8), %rdx\n" \
	"	lea	5(,%rax,4), %rax\n"		/* SIM_KEY(page) | SIM_S */ \
	"	cmp	%rax, (%rdx,%rsi,8)\n" \
	"	jne	" MISS "\n" \
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
	"	add	%r9, %rax\n" \
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
/*
 * The filter's miss (backend_sim.h mon_sim_lf_access, the filter on, its
 * tests passed): what mon_sim_lf_miss does for the usual case in the
 * usual geometry (SIM_LEAN_FIT_8_16_64: an 8-way LRU L1 and a 16-way LLC
 * of one node, 64-byte lines, no TLB model, no 3C) - the whole 64-byte
 * line in a live object of the object cache (the hint first:
 * lf_miss_whole, then the other ways: lf_miss_rest), an L1 miss, the
 * victim written back into the LLC when dirty, the LLC's reference, the
 * fill, the filter's entry, the count by outcome (sim_lean_body with
 * c64, solo, the tag in registers; count_outcome); and an L1 hit the
 * filter did not hold, E or M and untracked (its entry another line's).
 * Anything else jumps to mon_sim_lf_miss with the arguments as they came,
 * having changed nothing but the object cache's hint (a guess) or undone
 * what it changed (in_rt, busy): sampled mode's cold sets
 * (mon_sim_lf_cold), a core shared, or whose filter's on is not
 * MON_SIM_LF_ON_ASM (sim.h: one test for the filter off, a core not solo,
 * another lean kind, a host without SSE4.1 - pminsd, pblendvb, pinsrd -
 * and AMEBA_SIM_ASM=0), no such object, a way in I or S or tracked, a way
 * whose key's low half alone is the line's (a twin 2^30 lines away), a
 * stamp to renumber in the L1 (sim_lru_renumber). The object comes from the filter's memo of the
 * last two its misses found (sim.h), else from the object cache, which
 * then fills the memo.
 *
 * Why: gcc keeps t, the core, the line, the two sets, the object, its
 * vector, the way and the flags live across the whole miss, saves five
 * callee-saved registers and spills eight more (~40 of its ~190
 * instructions, gemm); this one needs no frame: a leaf, it keeps the core,
 * the line, the L1 set and the LLC set in general registers and parks what
 * it needs later in xmm8-xmm15, which the ABI lets a callee clobber and the
 * searches leave alone (xmm0-xmm4): no store and no load for them, where
 * the red zone took eight of each (gemm, chase, stream 1-2% less CPU time;
 * docs/simulator.md, "The filter's miss in assembly").
 *
 * Two copies (the macro lfm_miss): sim_lf_miss_x86_rd for the read hooks,
 * sim_lf_miss_x86_wr for the write and read-write ones (backend_sim.h
 * SIM_LF_MISS chooses: wfs is a constant in every hook). What differs is
 * known when it is assembled - the write's words, the key's state, the
 * metadata's dirty bit, the entry's rights, the count's slot - so neither
 * tests the access's kind (gemm, whose misses are reads: 150.6 -> 140.9
 * instructions a miss).
 *
 * Arguments: t, addr, wfs, pc as mon_sim_lf_miss's, then the core (r8)
 * and the LLC set (r9) the hook had at hand: with them the core's fields
 * and the set's lines are loaded without waiting on t->backend_data (which
 * must be the same core: else mon_sim_lf_miss at once) or on the four
 * loads from the core to the set (sim.c lf_init makes the hook's set the
 * LLC's while the core is of this kind).
 *
 * Registers: r8 the core, rsi the line, r10 the L1 set's keys, r9 the LLC
 * set (where the hook passed it), r11 the line's key (from the L1's
 * search on), rcx the victim's way (from its choice to the fill); rax,
 * rdx, rdi scratch. Parked: xmm8 t,
 * xmm9 addr, xmm10 pc, xmm11 wfs, xmm12 the object, xmm13 its counter
 * vector, xmm14 the set's first key index; xmm15 the victim's way where a
 * dirty victim's writeback or a write's words need rcx.
 */
/* sim_words for 4-byte words of a 64-byte line: the mask in OUT of the
 * words an access of SZ bytes at %rcx touches (rcx and SZ clobbered; SZ32
 * SZ's low half) */
#define A_WORDS64(SZ, SZ32, OUT) \
	"	lea	-1(%rcx," SZ "), " SZ "\n" \
	"	and	$63, " SZ32 "\n" \
	"	shr	$2, " SZ32 "\n"			/* the last word */ \
	"	and	$63, %ecx\n" \
	"	shr	$2, %ecx\n"				/* the first */ \
	"	mov	$-1, " OUT "\n" \
	"	shl	%cl, " OUT "\n" \
	"	mov	$63, %ecx\n" \
	"	sub	" SZ32 ", %ecx\n" \
	"	mov	$-1, " SZ "\n" \
	"	shr	%cl, " SZ "\n" \
	"	and	" SZ ", " OUT "\n"
/* LLC set block SET (8 words: a k32 set, one host line) of line LINE in
 * LLC: blk + (LINE & set_mask) * 64 */
#define A_LFM_LLC_SET(LLC, LINE, SET) \
	"	mov	" A_S(A_L_SET_MASK) "(" LLC "), " SET "\n" \
	"	and	" LINE ", " SET "\n" \
	"	shl	$6, " SET "\n" \
	"	add	" A_S(A_L_BLK) "(" LLC "), " SET "\n"
/* sim_llc32_find over set SET for the line whose key is WANT: the
 * position of the key k with (k | 2) == SIM_KEY32 | 3 in eax - four
 * compares of four keys - or a jump to NONE (rdx, xmm0-xmm5 clobbered) */
#define A_LFM_LLC_FIND(SET, WANT, NONE) \
	"	mov	" WANT ", %rdx\n" \
	"	shr	$12, %rdx\n"				/* SIM_KEY32's bits */ \
	"	or	$3, %edx\n" \
	"	movd	%edx, %xmm0\n" \
	"	pshufd	$0, %xmm0, %xmm0\n" \
	"	movdqa	.Llfm_two(%rip), %xmm5\n" \
	"	movdqa	%xmm5, %xmm1\n" \
	"	por	(" SET "), %xmm1\n" \
	"	pcmpeqd	%xmm0, %xmm1\n" \
	"	movdqa	%xmm5, %xmm2\n" \
	"	por	16(" SET "), %xmm2\n" \
	"	pcmpeqd	%xmm0, %xmm2\n" \
	"	movdqa	%xmm5, %xmm3\n" \
	"	por	32(" SET "), %xmm3\n" \
	"	pcmpeqd	%xmm0, %xmm3\n" \
	"	movdqa	%xmm5, %xmm4\n" \
	"	por	48(" SET "), %xmm4\n" \
	"	pcmpeqd	%xmm0, %xmm4\n" \
	"	packssdw	%xmm2, %xmm1\n" \
	"	packssdw	%xmm4, %xmm3\n" \
	"	packsswb	%xmm3, %xmm1\n" \
	"	pmovmskb	%xmm1, %eax\n" \
	"	test	%eax, %eax\n" \
	"	jz	" NONE "\n" \
	"	bsf	%eax, %eax\n"
__asm__(
	"	.pushsection .rodata\n"
	"	.p2align 4\n"
	".Llfm_not3:\n"
	"	.long	-4, -4, -4, -4\n"
	".Llfm_two:\n"				/* a k32 LLC key's state bits: | 2 */
	"	.long	2, 2, 2, 2\n"
	".Llfm_lanes:\n"			/* the positions of a k32 LLC set */
	"	.long	0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15\n"
	"	.popsection\n"
	/* one miss for reads (w 0), one for writes (w 1): the hook's write
	 * bit is a constant where it calls (SIM_LF_MISS) */
	"	.macro	lfm_miss name, w\n"
	"	.p2align 4\n"
	"	.globl	\\name\n"
	"	.hidden	\\name\n"
	"	.type	\\name, @function\n"
	"\\name:\n"
	"	.cfi_startproc\n"
	"	cmpl	$0, mon_sim_lf_cold(%rip)\n"	/* sampled mode's cold sets */
	"	jne	mon_sim_lf_miss\n"
	"	cmp	" A_S(A_T_BACKEND_DATA) "(%rdi), %r8\n"	/* t's core */
	"	jne	mon_sim_lf_miss\n"
	"	addl	$1, " A_S(A_T_IN_RT) "(%rdi)\n"	/* mon_rt_enter */
	"	movl	$1, " A_S(A_C_BUSY) "(%r8)\n"	/* sim_core_try_enter */
	"	cmpl	$0, " A_S(A_C_SHARED) "(%r8)\n"
	"	jne	.Llfm_out\\@\n"
	/* on, solo, SIM_LEAN_FIT_8_16_64, the assembly allowed (sim.h) */
	"	cmpl	$" A_S(MON_SIM_LF_ON_ASM) ", " A_S(A_C_LF_ON) "(%r8)\n"
	"	jne	.Llfm_out\\@\n"
	"	movq	%rdi, %xmm8\n"
	"	movq	%rsi, %xmm9\n"
	"	movq	%rcx, %xmm10\n"
	"	movd	%edx, %xmm11\n"
	/* the object: the memo's first entry (sim.h: an object whose whole
	 * lines hold the address's, and the owner's vector of it), else its
	 * second, else the object cache (both out of line) */
	"	cmp	" A_S(A_C_LF_MEMO) "(%r8), %rsi\n"
	"	jb	.Llfm_memo1\\@\n"
	"	cmp	" A_S(A_C_LF_MEMO) "+8(%r8), %rsi\n"
	"	jae	.Llfm_memo1\\@\n"
	"	mov	" A_S(A_C_LF_MEMO) "+16(%r8), %r10\n"
	"	mov	" A_S(A_C_LF_MEMO) "+24(%r8), %r11\n"
	".Llfm_obj_ok\\@:\n"
	"	movq	%r10, %xmm12\n"
	"	movq	%r11, %xmm13\n"
	"	shr	$6, %rsi\n"				/* the line */
	/* the LLC set (8 words: one host line) in r9, the hook's (which
	 * prefetched it) */
	/* the L1 set: eight keys, then eight stamps */
	"	mov	" A_S(A_C_L1_SET_MASK) "(%r8), %r10\n"
	"	and	%rsi, %r10\n"
	"	shl	$4, %r10\n"
	"	movq	%r10, %xmm14\n"
	"	shl	$3, %r10\n"
	"	add	" A_S(A_C_L1_KEY) "(%r8), %r10\n"
	/* sim_find_n: the ways whose key's low half, state cleared, is the
	 * line's (two mask bits a way): none, a miss */
	"	lea	4(,%rsi,4), %r11\n"			/* SIM_KEY(line), for the LLC too */
	"	movd	%r11d, %xmm0\n"
	"	pshufd	$0, %xmm0, %xmm0\n"
	"	movups	(%r10), %xmm1\n"
	"	movups	16(%r10), %xmm2\n"
	"	movups	32(%r10), %xmm3\n"
	"	movups	48(%r10), %xmm4\n"
	"	shufps	$0x88, %xmm2, %xmm1\n"
	"	shufps	$0x88, %xmm4, %xmm3\n"
	"	andps	.Llfm_not3(%rip), %xmm1\n"
	"	andps	.Llfm_not3(%rip), %xmm3\n"
	"	pcmpeqd	%xmm0, %xmm1\n"
	"	pcmpeqd	%xmm0, %xmm3\n"
	"	packssdw	%xmm3, %xmm1\n"
	"	pmovmskb	%xmm1, %eax\n"
	"	test	%eax, %eax\n"
	"	jnz	.Llfm_l1hit\\@\n"
	/* nothing to renumber: the L1's stamps below 2^31 (sim_lru_min8) */
	"	mov	" A_S(A_C_L1_CLOCK) "(%r8), %rax\n"
	"	cmp	sim_stamp_renumber_at(%rip), %rax\n"
	"	jae	.Llfm_back\\@\n"
	/* sim_lru_min8: the lowest-numbered way of the smallest stamp */
	"	movups	64(%r10), %xmm1\n"
	"	movups	80(%r10), %xmm2\n"
	"	movups	96(%r10), %xmm3\n"
	"	movups	112(%r10), %xmm4\n"
	"	shufps	$0x88, %xmm2, %xmm1\n"			/* ways 0-3 */
	"	shufps	$0x88, %xmm4, %xmm3\n"			/* ways 4-7 */
	"	movdqa	%xmm1, %xmm0\n"
	"	pminsd	%xmm3, %xmm0\n"
	"	pshufd	$0x4e, %xmm0, %xmm2\n"
	"	pminsd	%xmm2, %xmm0\n"
	"	pshufd	$0xb1, %xmm0, %xmm2\n"
	"	pminsd	%xmm2, %xmm0\n"
	"	pcmpeqd	%xmm0, %xmm1\n"
	"	pcmpeqd	%xmm0, %xmm3\n"
	"	packssdw	%xmm3, %xmm1\n"
	"	pmovmskb	%xmm1, %eax\n"
	"	bsf	%eax, %eax\n"
	"	shr	$1, %eax\n"				/* the victim's way: rcx */
	"	mov	%eax, %ecx\n"
	"	mov	(%r10,%rax,8), %rdx\n"			/* its key's state */
	"	and	$3, %edx\n"
	"	cmp	$3, %edx\n"				/* M: written back */
	"	je	.Llfm_dirty\\@\n"
	/* sim_llc32_ref: the line in its set (r9), its key in r11 */
	".Llfm_ref1\\@:\n"
	A_LFM_LLC_FIND("%r9", "%r11", ".Llfm_llc_miss\\@")
	/* an LLC hit at position eax (sim_llc32_front): to the front,
	 * positions 0 .. eax - 1 down one. Positions 0 and 1 (chase's hits:
	 * two lines a set) by a cmov: position 1 keeps its key or takes 0's */
	"	mov	(%r9,%rax,4), %edx\n"			/* the hit's key */
	"	cmp	$2, %eax\n"
	"	jae	5f\n"
	"	mov	(%r9), %edi\n"
	"	test	%eax, %eax\n"
	"	cmovz	4(%r9), %edi\n"
	"	mov	%edi, 4(%r9)\n"
	"	mov	%edx, (%r9)\n"
	"	jmp	6f\n"
	/* deeper, without a branch on the position: each quarter's keys
	 * one lane down (palignr takes the last of the quarter before), the
	 * hit's key into lane 0, the lanes past the position as they were
	 * (pblendvb by xmm0: lane > position); every quarter's load before
	 * the store over it */
	"5:\n"
	"	movd	%eax, %xmm7\n"
	"	pshufd	$0, %xmm7, %xmm7\n"
	"	movdqa	48(%r9), %xmm4\n"
	"	movdqa	32(%r9), %xmm3\n"
	"	movdqa	%xmm4, %xmm6\n"
	"	palignr	$12, %xmm3, %xmm6\n"
	"	movdqa	.Llfm_lanes+48(%rip), %xmm0\n"
	"	pcmpgtd	%xmm7, %xmm0\n"
	"	pblendvb	%xmm0, %xmm4, %xmm6\n"
	"	movdqa	%xmm6, 48(%r9)\n"
	"	movdqa	16(%r9), %xmm2\n"
	"	movdqa	%xmm3, %xmm6\n"
	"	palignr	$12, %xmm2, %xmm6\n"
	"	movdqa	.Llfm_lanes+32(%rip), %xmm0\n"
	"	pcmpgtd	%xmm7, %xmm0\n"
	"	pblendvb	%xmm0, %xmm3, %xmm6\n"
	"	movdqa	%xmm6, 32(%r9)\n"
	"	movdqa	(%r9), %xmm1\n"
	"	movdqa	%xmm2, %xmm6\n"
	"	palignr	$12, %xmm1, %xmm6\n"
	"	movdqa	.Llfm_lanes+16(%rip), %xmm0\n"
	"	pcmpgtd	%xmm7, %xmm0\n"
	"	pblendvb	%xmm0, %xmm2, %xmm6\n"
	"	movdqa	%xmm6, 16(%r9)\n"
	"	movdqa	%xmm1, %xmm6\n"
	"	pslldq	$4, %xmm6\n"
	"	pinsrd	$0, %edx, %xmm6\n"
	"	movdqa	.Llfm_lanes(%rip), %xmm0\n"
	"	pcmpgtd	%xmm7, %xmm0\n"
	"	pblendvb	%xmm0, %xmm1, %xmm6\n"
	"	movdqa	%xmm6, (%r9)\n"
	"6:\n"
	"	mov	$1, %edi\n"				/* SIM_LEAN_LLC */
	"	jmp	.Llfm_fill\\@\n"
	/* an LLC miss: every key down one, the last leaves, the line's key
	 * (S) at the front. The last is the first empty way when there is
	 * one: one node (SIM_LEAN_FIT_8_16_64), so no other node's
	 * invalidation leaves a hole, and a set's empty ways are its last */
	".Llfm_llc_miss\\@:\n"
	"	movdqu	(%r9), %xmm1\n"
	"	movdqu	16(%r9), %xmm2\n"
	"	movdqu	32(%r9), %xmm3\n"
	"	movdqu	44(%r9), %xmm4\n"
	"	movdqu	%xmm4, 48(%r9)\n"
	"	movdqu	%xmm3, 36(%r9)\n"
	"	movdqu	%xmm2, 20(%r9)\n"
	"	movdqu	%xmm1, 4(%r9)\n"
	"	mov	%r11, %rdx\n"
	"	shr	$12, %rdx\n"
	"	and	$-4, %edx\n"				/* SIM_KEY32 */
	"	or	$1, %edx\n"				/* | SIM_S */
	"	mov	%edx, (%r9)\n"
	"	mov	$2, %edi\n"				/* SIM_LEAN_MEM */
	".Llfm_fill\\@:\n"
	/* (a symbol for the tests: gdb stops here when this miss, not the C,
	 * filled a line - tests/sim/line_filter.sh) */
	"	.globl	\\name\\()_fill\n"
	"	.hidden	\\name\\()_fill\n"
	"\\name\\()_fill:\n"
	/* a write: the 4-byte words of the line it touches in r9
	 * (sim_lean_wmask; rcx, the victim's way, parked meanwhile); a read:
	 * none */
	"	.if	\\w\n"
	"	movq	%rcx, %xmm15\n"
	"	movq	%xmm9, %rcx\n"			/* addr */
	"	movd	%xmm11, %edx\n"
	"	shr	$16, %edx\n"				/* size */
	A_WORDS64("%rdx", "%edx", "%r9")
	"	movq	%xmm15, %rcx\n"
	"	.else\n"
	"	xor	%r9d, %r9d\n"
	"	.endif\n"
	/* the fill of way rcx: key E, or M for a write; the way's metadata
	 * private (sim_meta_fill_priv); the most recent stamp */
	"	add	$(2 + \\w), %r11\n"			/* the key: | E, | M */
	"	mov	%r11, (%r10,%rcx,8)\n"
	"	mov	" A_S(A_C_L1_CLOCK) "(%r8), %rax\n"
	"	add	$1, %rax\n"
	"	mov	%rax, " A_S(A_C_L1_CLOCK) "(%r8)\n"
	"	mov	%rax, 64(%r10,%rcx,8)\n"
	"	movq	%xmm14, %rax\n"
	"	add	%rcx, %rax\n"				/* i */
	"	lea	(%rax,%rax,2), %rcx\n"
	"	shl	$3, %rcx\n"
	"	add	" A_S(A_C_L1_META) "(%r8), %rcx\n"
	"	mov	%r9, (%rcx)\n"				/* wpub */
	"	movq	%xmm12, %r10\n"			/* the object */
	"	mov	" A_S(A_O_IDX) "(%r10), %r9d\n"
	"	mov	%r9, 8(%rcx)\n"			/* cookie; dent 0 */
	"	movabs	$(1 << 48 | \\w << 32), %r9\n"	/* priv; dirty */
	"	mov	%r9, 16(%rcx)\n"
	"	mov	$(2 - \\w), %r9d\n"			/* wok: 1, or UPGRADE */
	/* the filter's entry (sim_memo_lf): the line, its key word, its key
	 * index, a write's rights (r9d), the object and its vector; the memo
	 * of the last line forgotten. Then sim_core_exit, count_outcome (rdi
	 * the level), the tick on a miss (an L1 hit does not
	 * count, backend_sim_lf.c) and at 0 the look (mon_sim_lf_look_leave:
	 * the C's order), mon_rt_leave */
	".Llfm_entry\\@:\n"
	"	movq	$-1, " A_S(A_C_LAST_LINE) "(%r8)\n"
	"	addq	$1, " A_S(A_C_LF_NOTES) "(%r8)\n"
	"	mov	%rsi, %rcx\n"				/* mon_sim_lf_slot */
	"	shr	$16, %rcx\n"
	"	add	%rsi, %rcx\n"
	"	movzbl	%cl, %ecx\n"
	"	shl	$6, %rcx\n"
	"	add	" A_S(A_C_LF_ENT) "(%r8), %rcx\n"
	"	mov	%rsi, (%rcx)\n"				/* line */
	"	mov	%r11, 8(%rcx)\n"			/* want */
	"	mov	%eax, 16(%rcx)\n"			/* i */
	"	mov	%r9d, 24(%rcx)\n"			/* wok */
	"	movq	%xmm13, %rax\n"			/* the counter vector */
	"	mov	%r10, 32(%rcx)\n"
	"	mov	%rax, 40(%rcx)\n"
	"	movl	$0, " A_S(A_C_BUSY) "(%r8)\n"
	"	add	%edi, %edi\n"
	"	addq	$1, 208 + 8 * \\w(%rax,%rdi,8)\n"	/* SLOT_OUTCOME + out * 2 + write */
	"	cmpl	$2, %edi\n"				/* the level 0: CF */
	"	adcl	$-1, " A_S(A_C_LF_TICK) "(%r8)\n"
	"	movq	%xmm8, %rdi\n"
	"	jz	.Llfm_look\\@\n"
	"	subl	$1, " A_S(A_T_IN_RT) "(%rdi)\n"
	"	ret\n"
	".Llfm_look\\@:\n"
	"	mov	%r8, %rsi\n"
	"	jmp	mon_sim_lf_look_leave\n"
	/* the memo's second entry */
	".Llfm_memo1\\@:\n"
	"	cmp	" A_S(A_C_LF_MEMO) "+32(%r8), %rsi\n"
	"	jb	.Llfm_objc\\@\n"
	"	cmp	" A_S(A_C_LF_MEMO) "+40(%r8), %rsi\n"
	"	jae	.Llfm_objc\\@\n"
	"	mov	" A_S(A_C_LF_MEMO) "+48(%r8), %r10\n"
	"	mov	" A_S(A_C_LF_MEMO) "+56(%r8), %r11\n"
	"	jmp	.Llfm_obj_ok\\@\n"
	".Llfm_objc\\@:\n"
	/* the way of the object cache whose object holds the whole line: the
	 * hint, else the next ones (mon_objcache_way's order); a live object
	 * with a vector goes into the memo's first entry, that entry to its
	 * second */
	"	mov	%rsi, %r10\n"
	"	and	$-64, %r10\n"
	"	lea	64(%r10), %r11\n"
	"	mov	" A_S(A_T_CACHE_HINT) "(%rdi), %eax\n"
	"	cmp	" A_S(A_T_CACHE_START) "(%rdi,%rax,8), %r10\n"
	"	jb	1f\n"
	"	cmp	" A_S(A_T_CACHE_END) "(%rdi,%rax,8), %r11\n"
	"	jbe	.Llfm_obj\\@\n"
	"1:\n"
#define A_LFM_WAY \
	"	add	$1, %eax\n" \
	"	and	$3, %eax\n" \
	"	cmp	" A_S(A_T_CACHE_START) "(%rdi,%rax,8), %r10\n" \
	"	jb	1f\n" \
	"	cmp	" A_S(A_T_CACHE_END) "(%rdi,%rax,8), %r11\n" \
	"	jbe	.Llfm_hint\\@\n" \
	"1:\n"
	A_LFM_WAY A_LFM_WAY A_LFM_WAY
#undef A_LFM_WAY
	"	jmp	.Llfm_back\\@\n"
	".Llfm_hint\\@:\n"
	"	mov	%eax, " A_S(A_T_CACHE_HINT) "(%rdi)\n"
	".Llfm_obj\\@:\n"
	"	mov	" A_S(A_T_CACHE_OBJ) "(%rdi,%rax,8), %r10\n"
	"	testb	$1, " A_S(A_O_FLAGS) "(%r10)\n"	/* MON_OBJF_LIVE */
	"	jz	.Llfm_back\\@\n"
	"	mov	" A_S(A_T_CACHE_COUNTS) "(%rdi,%rax,8), %r11\n"
	"	test	%r11, %r11\n"
	"	jz	.Llfm_back\\@\n"
	"	movdqu	" A_S(A_C_LF_MEMO) "(%r8), %xmm0\n"
	"	movdqu	" A_S(A_C_LF_MEMO) "+16(%r8), %xmm1\n"
	"	movdqu	%xmm0, " A_S(A_C_LF_MEMO) "+32(%r8)\n"
	"	movdqu	%xmm1, " A_S(A_C_LF_MEMO) "+48(%r8)\n"
	"	mov	" A_S(A_T_CACHE_START) "(%rdi,%rax,8), %rcx\n"
	"	add	$63, %rcx\n"
	"	and	$-64, %rcx\n"				/* the first whole line */
	"	mov	%rcx, " A_S(A_C_LF_MEMO) "(%r8)\n"
	"	mov	" A_S(A_T_CACHE_END) "(%rdi,%rax,8), %rcx\n"
	"	and	$-64, %rcx\n"				/* past the last */
	"	mov	%rcx, " A_S(A_C_LF_MEMO) "+8(%r8)\n"
	"	mov	%r10, " A_S(A_C_LF_MEMO) "+16(%r8)\n"
	"	mov	%r11, " A_S(A_C_LF_MEMO) "+24(%r8)\n"
	"	jmp	.Llfm_obj_ok\\@\n"
	/* an L1 hit the filter did not hold (its entry taken by another
	 * line): the first candidate whose whole key is the line's, in E or M
	 * and untracked (sim_lean_body's hit), else the C. Registers as the
	 * miss's; rcx the way, r11 its key, rdi its metadata */
	".Llfm_l1hit\\@:\n"
	"	lea	4(,%rsi,4), %rdx\n"			/* SIM_KEY(line) */
	"7:\n"
	"	bsf	%eax, %ecx\n"
	"	shr	$1, %ecx\n"
	"	mov	(%r10,%rcx,8), %r11\n"
	"	mov	%r11, %rdi\n"
	"	and	$-4, %rdi\n"
	"	cmp	%rdx, %rdi\n"
	"	je	8f\n"
	"	lea	-1(%rax), %edi\n"			/* the way's two bits off */
	"	and	%edi, %eax\n"
	"	lea	-1(%rax), %edi\n"
	"	and	%edi, %eax\n"
	"	jnz	7b\n"
	"	jmp	.Llfm_back\\@\n"				/* a twin: the C */
	"8:\n"
	/* (for the tests: gdb stops here when this hit is found) */
	"	.globl	\\name\\()_hit\n"
	"	.hidden	\\name\\()_hit\n"
	"\\name\\()_hit:\n"
	"	mov	%r11d, %edi\n"
	"	and	$3, %edi\n"
	"	cmp	$2, %edi\n"				/* I or S: the C */
	"	jb	.Llfm_back\\@\n"
	"	movq	%xmm14, %rax\n"
	"	add	%rcx, %rax\n"				/* i */
	"	lea	(%rax,%rax,2), %rdi\n"
	"	shl	$3, %rdi\n"
	"	add	" A_S(A_C_L1_META) "(%r8), %rdi\n"
	"	cmpb	$0, " A_S(A_M_TRACK) "(%rdi)\n"	/* tracked: the C */
	"	jne	.Llfm_back\\@\n"
	/* E -> M on a write, the stamp, the cookie, the dirty bit */
	"	.if	\\w\n"
	"	or	$3, %r11\n"
	"	mov	%r11, (%r10,%rcx,8)\n"
	"	orb	$1, " A_S(A_M_DIRTY) "(%rdi)\n"
	"	.endif\n"
	"	mov	" A_S(A_C_L1_CLOCK) "(%r8), %r9\n"
	"	add	$1, %r9\n"
	"	mov	%r9, " A_S(A_C_L1_CLOCK) "(%r8)\n"
	"	mov	%r9, 64(%r10,%rcx,8)\n"
	"	movq	%xmm12, %r10\n"			/* the object */
	"	mov	" A_S(A_O_IDX) "(%r10), %r9d\n"
	"	mov	%r9d, " A_S(A_M_COOKIE) "(%rdi)\n"
	/* sim_lf_wok: M, its dirty bit; E, private: the silent upgrade */
	"	mov	%r11d, %r9d\n"
	"	and	$3, %r9d\n"
	"	cmp	$3, %r9d\n"
	"	jne	10f\n"
	"	cmpb	$0, " A_S(A_M_DIRTY) "(%rdi)\n"
	"	setne	%r9b\n"
	"	jmp	11f\n"
	"10:\n"
	"	cmpb	$0, " A_S(A_M_PRIV) "(%rdi)\n"
	"	setne	%r9b\n"
	"	add	%r9b, %r9b\n"			/* MON_SIM_LF_UPGRADE */
	"11:\n"
	"	movzbl	%r9b, %r9d\n"
	"	xor	%edi, %edi\n"				/* the level: an L1 hit */
	"	jmp	.Llfm_entry\\@\n"
	/* the victim M (rcx its key): sim_llc_writeback inline - into its
	 * LLC set, M, if it is there (no lock: the core solo, one node) */
	".Llfm_dirty\\@:\n"
	"	addq	$1, " A_S(A_C_NR_LLC_WB) "(%r8)\n"
	"	movq	%rcx, %xmm15\n"			/* the victim's way */
	"	mov	(%r10,%rcx,8), %rcx\n"			/* its key */
	"	mov	%rcx, %rdi\n"
	"	and	$-4, %rdi\n"				/* SIM_KEY(victim line) */
	"	shr	$2, %rcx\n"
	"	sub	$1, %rcx\n"				/* SIM_KEY_LINE */
	"	mov	" A_S(A_C_SIM) "(%r8), %rax\n"
	"	mov	" A_S(A_S_LLC) "(%rax), %rax\n"
	A_LFM_LLC_SET("%rax", "%rcx", "%r11")
	A_LFM_LLC_FIND("%r11", "%rdi", ".Llfm_ref\\@")
	"	orl	$3, (%r11,%rax,4)\n"			/* S or M -> M, in place */
	/* (for the tests: gdb stops here when a dirty victim was written
	 * back; no count shows it, the LLC's M state feeds none) */
	"	.globl	\\name\\()_wb\n"
	"	.hidden	\\name\\()_wb\n"
	"\\name\\()_wb:\n"
	"	jmp	.Llfm_ref\\@\n"
	/* back to the line's reference (the victim written back, or not in
	 * the LLC: nothing to write back), its key and the victim's way as
	 * the main path has them */
	".Llfm_ref\\@:\n"
	"	lea	4(,%rsi,4), %r11\n"
	"	movq	%xmm15, %rcx\n"
	"	jmp	.Llfm_ref1\\@\n"
	/* not the usual miss: undo, and the C */
	".Llfm_back\\@:\n"
	"	movq	%xmm8, %rdi\n"
	"	movq	%xmm9, %rsi\n"
	"	movq	%xmm10, %rcx\n"
	"	movd	%xmm11, %edx\n"
	".Llfm_out\\@:\n"
	"	movl	$0, " A_S(A_C_BUSY) "(%r8)\n"
	"	subl	$1, " A_S(A_T_IN_RT) "(%rdi)\n"
	"	jmp	mon_sim_lf_miss\n"
	"	.cfi_endproc\n"
	"	.size	\\name, .-\\name\n"
	"	.endm\n"
	"	.pushsection .text\n"
	"	lfm_miss sim_lf_miss_x86_rd, 0\n"
	"	lfm_miss sim_lf_miss_x86_wr, 1\n"
	"	.popsection\n"
	"	.purgem	lfm_miss\n");
#undef A_LFM_LLC_FIND
#undef A_LFM_LLC_SET

/*
 * The ordered mode merger's L1 hits (seq_merge.c merge_plain): the C loop
 * of mon_sim_seq_hit over the log entries ring[(n + k) % SEQ_RING], k <
 * max, with the core held (r: sim_mf_hold's copy of what a hit reads).
 * Returns the k at which it stopped - an entry not plain, or one the
 * merger's filter does not take - having changed nothing for that entry;
 * r->clock is the L1's clock after the k hits. Only for 64-byte L1 lines
 * (the caller checks r->shift). Why: gcc keeps the run's dozen values on
 * the stack across the loop (~65 instructions a hit in jacobi_2t; here
 * ~55, and no register to save: a run is often one hit, a read-modify-
 * write's write). A leaf in the caller-saved registers: rdi r (its fields
 * read where used), rsi ring, rdx n + k, rcx n + max (a write's state
 * test borrows it), rax the entry (then its counter vector), r8 the way's
 * metadata, r9 the filter's entry, r10 i, r11 the key. Red zone: -8 n,
 * -16 n + max.
 */
#define A_R_MF 0
#define A_R_KEY 8
#define A_R_STAMP 16
#define A_R_META 24
#define A_R_MAIL 32
#define A_R_CLOCK 40
#define A_R_CYCLES 52
#define A_R_E2M 56
#define A_R_TW 60
#define A_M_WPUB 0
#define A_E_ADDR 0
#define A_E_V 16
#define A_E_OBJ 24
#define A_E_FLAGS 28
#define A_E_KIND 29
#define A_E_SZ 30
A_FIELD(struct sim_mf_run, mf, A_R_MF, 8);
A_FIELD(struct sim_mf_run, key, A_R_KEY, 8);
A_FIELD(struct sim_mf_run, stamp, A_R_STAMP, 8);
A_FIELD(struct sim_mf_run, meta, A_R_META, 8);
A_FIELD(struct sim_mf_run, mail, A_R_MAIL, 8);
A_FIELD(struct sim_mf_run, clock, A_R_CLOCK, 8);
A_FIELD(struct sim_mf_run, cycles, A_R_CYCLES, 4);
A_FIELD(struct sim_mf_run, e2m, A_R_E2M, 4);
A_FIELD(struct sim_mf_run, tw, A_R_TW, 4);
A_FIELD(struct sim_meta, wpub, A_M_WPUB, 8);
A_FIELD(struct sim_mf_ent, line, 0, 8);
A_FIELD(struct sim_mf_ent, want, 8, 8);
A_FIELD(struct sim_mf_ent, i, 16, 8);
A_FIELD(struct seq_ent, addr, A_E_ADDR, 8);
A_FIELD(struct seq_ent, v, A_E_V, 8);
A_FIELD(struct seq_ent, obj_idx, A_E_OBJ, 4);
A_FIELD(struct seq_ent, flags, A_E_FLAGS, 1);
A_FIELD(struct seq_ent, kind, A_E_KIND, 1);
A_FIELD(struct seq_ent, sz, A_E_SZ, 2);
_Static_assert(sizeof(struct seq_ent) == 32 && SEQ_RING == 0x10000 && SEQ_PLAIN == 6 &&
		       sizeof(struct sim_mf_ent) == 24 && SIM_MF_BITS == 9 &&
		       sizeof(struct sim_meta) == 24 && MON_ACC_READ == 1 && MON_ACC_WRITE == 2,
	       "sim_mf_hits_x86: a log entry, the merger's filter or the metadata changed");

__asm__(
	"	.pushsection .text\n"
	"	.p2align 4\n"
	"	.globl	sim_mf_hits_x86\n"
	"	.hidden	sim_mf_hits_x86\n"
	"	.type	sim_mf_hits_x86, @function\n"
	"sim_mf_hits_x86:\n"
	"	.cfi_startproc\n"
	"	mov	%rdx, -8(%rsp)\n"
	"	add	%rdx, %rcx\n"				/* n + max */
	"	mov	%rcx, -16(%rsp)\n"
	"	cmp	%rdx, %rcx\n"
	"	je	.Lmfh_end\n"
	".Lmfh_loop:\n"
	"	mov	%edx, %eax\n"
	"	and	$0xffff, %eax\n"
	"	shl	$5, %rax\n"
	"	add	%rsi, %rax\n"				/* the entry */
	"	cmpb	$6, " A_S(A_E_KIND) "(%rax)\n"		/* SEQ_PLAIN */
	"	jne	.Lmfh_end\n"
	"	mov	" A_S(A_E_ADDR) "(%rax), %r8\n"
	"	movzwl	" A_S(A_E_SZ) "(%rax), %r9d\n"
	"	lea	-1(%r8,%r9), %r9\n"
	"	shr	$6, %r8\n"				/* the line */
	"	shr	$6, %r9\n"
	"	cmp	%r9, %r8\n"				/* within it */
	"	jne	.Lmfh_end\n"
	"	mov	%r8, %r9\n"				/* sim_mf_slot */
	"	shr	$16, %r9\n"
	"	xor	%r8, %r9\n"
	"	and	$0x1ff, %r9d\n"
	"	imul	$24, %r9, %r9\n"
	"	add	" A_S(A_R_MF) "(%rdi), %r9\n"		/* the filter's entry */
	"	cmp	(%r9), %r8\n"
	"	jne	.Lmfh_end\n"
	"	mov	16(%r9), %r10\n"			/* i */
	"	mov	" A_S(A_R_KEY) "(%rdi), %r11\n"
	"	mov	(%r11,%r10,8), %r11\n"			/* the key */
	"	cmp	8(%r9), %r11\n"				/* want */
	"	jne	.Lmfh_end\n"
	"	mov	" A_S(A_R_MAIL) "(%rdi), %r8\n"
	"	cmpl	$0, (%r8)\n"				/* mail pending */
	"	jne	.Lmfh_end\n"
	"	imul	$24, %r10, %r8\n"
	"	add	" A_S(A_R_META) "(%rdi), %r8\n"		/* the way's metadata */
	"	testb	$2, " A_S(A_E_FLAGS) "(%rax)\n"		/* a write: M untracked, M tracked, E */
	"	jz	2f\n"
	"	mov	%r11, %rcx\n"
	"	and	$3, %ecx\n"
	"	cmp	$3, %ecx\n"
	"	jne	1f\n"
	"	cmpb	$0, " A_S(A_M_TRACK) "(%r8)\n"
	"	je	3f\n"
	/* M tracked: the words it writes published already (write_owned's
	 * rule; sim_words for 4-byte words of the 64-byte line), else the
	 * run ends here and the general path takes the entry */
	"	cmpl	$3, " A_S(A_R_TW) "(%rdi)\n"
	"	jne	.Lmfh_end_c\n"
	"	mov	" A_S(A_E_ADDR) "(%rax), %rcx\n"
	"	movzwl	" A_S(A_E_SZ) "(%rax), %r9d\n"
	A_WORDS64("%r9", "%r9d", "%r11")			/* the words */
	"	mov	" A_S(A_M_WPUB) "(%r8), %r9\n"
	"	not	%r9\n"
	"	test	%r9, %r11\n"
	"	jnz	.Lmfh_end_c\n"
	"	.globl	sim_mf_hits_x86_tw\n"			/* for the tests' gdb */
	"	.hidden	sim_mf_hits_x86_tw\n"
	"sim_mf_hits_x86_tw:\n"
	"	jmp	3f\n"
	"1:\n"							/* or E, private, no L2: E -> M */
	"	cmp	$2, %ecx\n"
	"	jne	.Lmfh_end_c\n"
	"	cmpb	$0, " A_S(A_M_PRIV) "(%r8)\n"
	"	je	.Lmfh_end_c\n"
	"	cmpl	$0, " A_S(A_R_E2M) "(%rdi)\n"
	"	je	.Lmfh_end_c\n"
	"	.globl	sim_mf_hits_x86_e2m\n"			/* for the tests' gdb */
	"	.hidden	sim_mf_hits_x86_e2m\n"
	"sim_mf_hits_x86_e2m:\n"
	"	or	$3, %r11\n"
	"	mov	%r11, 8(%r9)\n"				/* the entry's word */
	"	mov	" A_S(A_R_KEY) "(%rdi), %r9\n"
	"	mov	%r11, (%r9,%r10,8)\n"			/* the key: M */
	"3:\n"
	"	mov	-16(%rsp), %rcx\n"
	"2:\n"
	"	mov	" A_S(A_R_CLOCK) "(%rdi), %r11\n"
	"	add	$1, %r11\n"
	"	mov	%r11, " A_S(A_R_CLOCK) "(%rdi)\n"
	"	mov	" A_S(A_R_STAMP) "(%rdi), %r9\n"
	"	mov	%r11, (%r9,%r10,8)\n"			/* the LRU stamp */
	"	mov	" A_S(A_E_OBJ) "(%rax), %r9d\n"
	"	mov	%r9d, " A_S(A_M_COOKIE) "(%r8)\n"
	"	movzbl	" A_S(A_E_FLAGS) "(%rax), %r9d\n"
	"	mov	" A_S(A_E_V) "(%rax), %rax\n"		/* mon_sim_count_plain */
	"	addq	$1, (%rax)\n"				/* SLOT_MEM_REF */
	"	mov	" A_S(A_R_CYCLES) "(%rdi), %r10d\n"
	"	add	%r10, 192(%rax)\n"			/* SLOT_EST_CYCLES */
	"	mov	%r9d, %r10d\n"
	"	and	$1, %r10d\n"
	"	add	%r10, 8(%rax)\n"			/* SLOT_READS */
	"	shr	$1, %r9d\n"
	"	and	$1, %r9d\n"
	"	add	%r9, 16(%rax)\n"			/* SLOT_WRITES */
	"	or	%r9b, " A_S(A_M_DIRTY) "(%r8)\n"
	"	add	$1, %rdx\n"
	"	cmp	%rdx, %rcx\n"
	"	jne	.Lmfh_loop\n"
	".Lmfh_end_c:\n"
	"	mov	-16(%rsp), %rcx\n"
	".Lmfh_end:\n"
	"	mov	%rdx, %rax\n"
	"	sub	-8(%rsp), %rax\n"
	"	ret\n"
	"	.cfi_endproc\n"
	"	.size	sim_mf_hits_x86, .-sim_mf_hits_x86\n"
	"	.popsection\n");
#undef A_WORDS64
#undef A_FIELD
#undef A_S
#undef A_S_
#endif
