/*
 * sim.h - the cache-hierarchy simulator behind the `sim` backend.
 *
 * A simulator (struct mon_sim) is built from a geometry (struct mri_geom):
 * per simulated core a private L1D and L2 and an L1/L2 dTLB, a shared LLC
 * per NUMA node, a directory that keeps the private caches coherent (MESI,
 * invalidation based), and a page table that places pages on NUMA nodes.
 * The modelling assumptions are listed in the Notes block of sim.c.
 *
 * Threading: each simulated core (struct mon_sim_core) is normally driven by
 * one thread (see mon_sim_core_get for cores shared by threads). The shared parts (LLC sets, directory buckets, page table)
 * are striped or lock-free: cores run truly in parallel and never serialise
 * on one global lock. The simulator allocates nothing on the access path and
 * never calls malloc: its memory comes from anonymous mappings made when the
 * simulator or a core is created (see the Notes for the one exception).
 *
 * The geometry itself (presets, config files, validation, printing) is
 * vocabulary the simulator shares with the agent: mri/geom.h.
 *
 * Errors: 0 or a negative AMEBA_E* code; functions that take an `err` buffer
 * also write one line naming the culprit.
 */
#ifndef AMEBA_MON_SIM_H
#define AMEBA_MON_SIM_H

#include <stddef.h>
#include <stdint.h>

#include "ameba/ameba.h"
#include "geom.h"	/* struct mri_geom: what a simulator simulates */

/* The geometry's limits are the simulator's (geom.h checks them). */
#define MON_SIM_MAX_CORES MRI_GEOM_MAX_CORES	/* directory sharer sets are 64-bit masks */
#define MON_SIM_MAX_NODES MRI_GEOM_MAX_NODES

/* ---- the simulator (sim.c) ---- */

struct mon_sim;
struct mon_sim_core;

/* Builds a simulator; g must pass mri_geom_check(). NULL on failure. */
struct mon_sim *mon_sim_new(const struct mri_geom *g);
/* Frees everything; no core may be in use. */
void mon_sim_destroy(struct mon_sim *s);
const struct mri_geom *mon_sim_geom_of(const struct mon_sim *s);

/*
 * Attaches thread `tid` to the core with id `core_id % nr_cores`, creating
 * it (caches allocated) on first use; returns it, or NULL when out of
 * memory. Not for the access path: call it when a thread starts. A core is
 * owned by the first tid attached; when a different tid attaches while the
 * owner has not called mon_sim_core_put(), the core becomes shared for good:
 * its users then serialise on a per-core lock (one membarrier() call at the
 * transition; without membarrier support every core locks). Calling it
 * again with the owner's tid changes nothing. `tid` also becomes the
 * core's current thread: the first-touch owner of the pages it places.
 */
struct mon_sim_core *mon_sim_core_get(struct mon_sim *s, uint32_t core_id, uint32_t tid);
/* Thread tid stops using c (e.g. it exits); a later thread may own c. */
void mon_sim_core_put(struct mon_sim_core *c, uint32_t tid);
uint32_t mon_sim_core_id(const struct mon_sim_core *c);
uint32_t mon_sim_core_node(const struct mon_sim_core *c);

/*
 * The line filter (docs/simulator.md, "The line filter"): a direct-mapped
 * table of the L1 lines a core accessed last, each with where it sits in
 * the L1 (its key index and key word then) and the caller's two words for
 * it (c->cur_tag's: the sim backend's object and counter vector). While
 * the core runs solo on the lean path with no TLB model, its owner's
 * access within such a line whose key word is still the entry's - a read,
 * or a write when the line is M and dirty - is an L1 hit whose only change
 * to the simulator is the LRU stamp (mon_sim_lf_touch): the caller makes
 * it and counts the hit without entering the simulator. Every access the
 * simulator takes writes its line's entry. An entry is valid until the
 * filter forgets every entry (mon_sim_core_lf_forget: when the core's tags
 * are forgotten, it gets a new owner, the program forks, the mode changes,
 * and with the core held when the core stops running solo, which turns
 * `on` off for good). Read and written by the core's owner thread only,
 * but for that last forgetting (ordered by a membarrier before the
 * owner's next access).
 */
struct mon_sim_lf_ent {
	uint64_t line;		/* L1 line; UINT64_MAX: none; | MON_SIM_LF_SPLIT:
				 * the tag's object holds bytes lo..hi-1 of it
				 * only (the hooks' hit never matches it) */
	uint64_t want;		/* its L1 key word when written */
	uint32_t i;		/* its L1 key index */
	uint8_t lo, hi;		/* a split entry's bytes of the line */
	uint16_t pad0;
	uint32_t wok;		/* a write: 0 misses; 1 hits (the line is M and
				 * dirty); MON_SIM_LF_UPGRADE hits, making it M
				 * and dirty (E, private, untracked, no L2) */
	uint32_t pad;
	uintptr_t tag[2];	/* the line's tag (never 0 0 in a valid entry) */
	uint64_t pad2[2];	/* one host line an entry: its index a shift, and
				 * a hit reads one line, not two (48 bytes: every
				 * other entry straddled two) */
};
#define MON_SIM_LF_BITS 8	/* 256 entries: 16 KiB of the host's L1 */
/* An entry's line with this bit: a split entry (mon_sim_lf_split_hit). A
 * line number is an address >> 6, below it */
#define MON_SIM_LF_SPLIT (1ull << 63)
/* The first tag word of a line to be written as a split entry, or'ed in
 * (the caller's words are aligned pointers) */
#define MON_SIM_LF_TAG_SPLIT 1u
#define MON_SIM_LF_UPGRADE 2
#define MON_SIM_META_BYTES 24	/* the L1's metadata per line (sim_core.h) */
struct mon_sim_lf {
	struct mon_sim_lf_ent *ent;	/* [1 << MON_SIM_LF_BITS] (mon_sim_lf_slot);
					 * NULL: no filter */
	int on;				/* atomic: entries may be used (not 0:
					 * MON_SIM_LF_ON, or on_as) */
	uint8_t split_lo, split_hi;	/* the caller's: the bytes of a split entry
					 * (sim_lf_write_key) */
	uint8_t on_as;			/* what on is set to when it is switched on
					 * (mon_sim_lf_install) */
	uint8_t pf_run;			/* the hook's misses in a row on the line
					 * after the last's, up to 2 (a walk:
					 * backend_sim.h mon_sim_lf_miss_on) */
	uint64_t *key;			/* the L1's key words (stamps at + assoc); the
					 * L1's clock and the memo of the last line
					 * are the core's (struct mon_sim_core's lf) */
	void *thread;			/* the caller's: the owner thread, the one
					 * whose pointer to the filter is set */
	uint64_t assoc;			/* the L1's ways */
	const void *user;		/* the caller's (the backend that installed it);
					 * NULL once the filter is off for good */
	uint64_t clock0;		/* the caller's: the L1's clock at the last look */
	uint64_t notes;			/* entries written (the simulator's accesses)
					 * since then; the hits through the filter are
					 * the clock's steps less these (a hit counts
					 * nothing of its own: one store less) */
	uint32_t tick, window;		/* the caller's: when it looks next; its period */
	uint8_t *dirty;			/* line i's dirty byte: dirty[i * MON_SIM_META_BYTES] */
	const char *llc_pf;		/* where the hook prefetches a miss's LLC set: */
	uint64_t llc_pf_mask;		/* llc_pf + (line & llc_pf_mask) * MON_SIM_LF_LLC_SET
					 * (SIM_LEAN_FIT_8_16_64's LLC sets; else one
					 * line of the caller's and 0) */
	/* the caller's assembly miss's memo of the objects of its misses
	 * (backend_sim_x86.c), the more recently found first: the whole
	 * lines [lo, hi) of a live object (its bytes rounded in to lines),
	 * the object and the owner's counter vector of it; hi 0: empty.
	 * Forgotten with the entries (mon_sim_core_lf_forget: a fold, a mode
	 * switch, a new owner ...) and when its object dies (the caller's) */
	struct mon_sim_lf_memo {
		uintptr_t lo, hi;
		const void *obj;
		uint64_t *v;
	} memo[2];
	uint64_t pf_line;		/* the line of the hook's last miss (a hint
					 * for its prefetch: backend_sim.h
					 * mon_sim_lf_miss_on) */
};
/* the bytes of an LLC set where the filter's miss is in assembly
 * (SIM_LLC16_STRIDE words: a k32 set, one host line) */
#define MON_SIM_LF_LLC_SET 64
/* how many lines ahead of a walk's miss the hook prefetches the program's
 * own line (16: stream's time 0.6 of none's, as 32; 8 gave 0.7) */
#define MON_SIM_LF_WALK_AHEAD 16
/* The entry of L1 line `line`: its low byte plus that of the line 4 MiB
 * up (line >> 16), so that consecutive lines take consecutive entries and
 * arrays 4 MiB apart (mmap'd blocks: bench/sim_validate's dense, all in
 * one entry by the low bits alone) spread. A sum, not a xor: two adjacent
 * lines never share an entry (line + 1's is 1 or 2 past line's), which
 * the hooks' hit relies on - it looks up the entry of an access's first
 * line and compares it with its last (backend_sim.h mon_sim_lf_access);
 * with a xor, line 0x7fffff and 0x800000 shared one. (A xor of the high
 * part shifted up by one would do too, but cost jacobi ~7% of its time
 * against this: its four streams' entries no longer walked in order.) */
static inline uint64_t mon_sim_lf_slot(uint64_t line)
{
	return (line + (line >> 16)) & ((1u << MON_SIM_LF_BITS) - 1);
}
/* The byte offset of address addr's entry (64-byte lines, 64-byte
 * entries): mon_sim_lf_slot(addr >> 6) * 64 from the address itself -
 * addr >> 16 with its low 6 bits cleared is the line 4 MiB up times 64,
 * and adding it to addr carries nothing out of the offset in the line
 * (the hooks' hit: a shift, two masks and an add) */
static inline uint64_t mon_sim_lf_slot_off(uint64_t addr)
{
	return (addr + ((addr >> 16) & ~(uint64_t)63)) &
	       (((1u << MON_SIM_LF_BITS) - 1) << 6);
}
/* The values of an on filter's on: MON_SIM_LF_ON_ASM when the caller's
 * assembly miss may take its misses (backend_sim_x86.c sim_lf_miss_x86:
 * the caller said it may, and the core is of the lean kind it simulates,
 * SIM_LEAN_FIT_8_16_64) - one test there for what were four: the filter
 * on, the core solo (on implies it: the switches that end solo turn the
 * filter off with the core held), its kind, the assembly allowed */
#define MON_SIM_LF_ON 1
#define MON_SIM_LF_ON_ASM 3
/* c's line filter for its owner thread tid, user the caller's word for it
 * (set in it), when c has one and it is on; else NULL. asm: whether the
 * caller's assembly miss may serve it (then on is MON_SIM_LF_ON_ASM where
 * c's kind is the assembly's, from now on whenever the filter is on) */
struct mon_sim_lf *mon_sim_lf_install(struct mon_sim_core *c, uint32_t tid, const void *user,
				      int asm_ok);
/* Every entry of c's filter invalid from now on (the caller: c's owner,
 * as when it forgets the tags of c's remembered lines) */
void mon_sim_core_lf_forget(struct mon_sim_core *c);
/* mon_sim_lf_enable(s, 0): cores created later have no line filter */
void mon_sim_lf_enable(struct mon_sim *s, int on);

enum mon_sim_coh {
	MON_SIM_COH_NONE,
	MON_SIM_COH_TRUE,	/* coherence miss touching words another core wrote */
	MON_SIM_COH_FALSE,	/* coherence miss on words no other core wrote */
};

enum mon_sim_3c {
	MON_SIM_3C_NONE,	/* L1 hit, coherence miss, or 3C off */
	MON_SIM_3C_COMPULSORY,
	MON_SIM_3C_CAPACITY,
	MON_SIM_3C_CONFLICT,
};

/*
 * What one access did. Miss flags count at most one miss per level per
 * access even when the access spans two simulator lines (as cachegrind).
 */
struct mon_sim_events {
	uint8_t l1_miss, l2_miss;	/* l2_miss: missed the private hierarchy */
	uint8_t llc_miss;		/* served by memory (== mem_local + mem_remote) */
	uint8_t mem_local, mem_remote;
	uint8_t tlb1_miss;		/* missed the L1 dTLB */
	uint8_t tlb_miss;		/* page walk: missed the last TLB level */
	uint8_t coh;			/* enum mon_sim_coh */
	uint8_t cls3c;			/* enum mon_sim_3c */
	uint8_t intervention;		/* served dirty by another core's cache */
	uint16_t inval_sent;		/* invalidation messages this access sent */
	uint16_t inval_recv;		/* invalidations this core received before it */
	uint16_t nr_wb;			/* dirty lines written back (any level) */
	uint32_t est_cycles;		/* latency model */
	uint32_t est_stall_cycles;	/* est_cycles - l1_hit */
};

/*
 * Simulates one data access [addr, addr + size) of core c (size >= 1; an
 * access may span any number of lines but is normally within one 64-byte
 * line). is_write: 0 read, 1 write (an atomic RMW is a write). cookie is the
 * caller's tag for what was accessed (e.g. the object id): it is stored with
 * the line and handed back when the line is invalidated (mon_sim_core_recv).
 * Fills *ev. Returns 0 when the access was a plain L1 hit (*ev all zero but
 * est_cycles, the l1_hit latency), else 1 (look at *ev). Call it from a
 * thread attached to c (mon_sim_core_get). No allocation, no system call,
 * no lock on an owned core, no global lock.
 */
int mon_sim_access(struct mon_sim_core *c, uintptr_t addr, uint32_t size, int is_write,
		   uint32_t cookie, struct mon_sim_events *ev);
/* mon_sim_access for an access that sim_hit (sim_core.h, the inline L1 hit
 * path) has just declined: the same result, without trying that again. */
int mon_sim_access_rest(struct mon_sim_core *c, uintptr_t addr, uint32_t size, int is_write,
			uint32_t cookie, struct mon_sim_events *ev);
/* mon_sim_access_rest that also gives the access's L1 line, when it ends
 * up among the lines the core remembers (sim_core.h, c->l0), the caller's
 * two words tag0, tag1 (0 0: none), handed back by the inline hit path
 * to a caller on the core's thread. */
int mon_sim_access_tagged(struct mon_sim_core *c, uintptr_t addr, uint32_t size, int is_write,
			  uint32_t cookie, struct mon_sim_events *ev, uintptr_t tag0, uintptr_t tag1);
/* mon_sim_access_tagged for a caller that holds c already (sim_core.h:
 * sim_core_try_enter succeeded), tried c's remembered lines for this
 * access (sim_l0_find) and stored the line's two words in c->cur_tag; the
 * access lies within one L1 line. Leaves the core (sim_core_exit) before
 * it returns. No enter and leave again between the failed try and the
 * miss path, and two arguments less (random kernel, per L1 miss). */
int mon_sim_access_held(struct mon_sim_core *c, uintptr_t addr, uint32_t size, int is_write,
			uint32_t cookie, struct mon_sim_events *ev);
/* mon_sim_access_held's lean twin (issue 24), for a core whose geometry
 * fits it (sim_core.h: c->lean): one L1 line, no events struct - returns
 * the outcome (sim_core.h: SIM_LEAN_*, whose est_cycles are c->lean_cyc),
 * or -1 having changed nothing, the core still held, when the access
 * needs mon_sim_access_held (then call that). */
int mon_sim_access_lean(struct mon_sim_core *c, uintptr_t addr, uint32_t size, int is_write,
			uint32_t cookie);
/* mon_sim_access_lean for ordered mode's merger (the core not held, and
 * perhaps not solo: then only a line of a page private to the core, and a
 * victim without directory entry, in the SIM_LEAN_FIT_8_16_64 geometry):
 * the outcome, the core left, the merger's filter entry written (as
 * sim_mf_note); or -1 having changed nothing, the core not held (then the
 * general path, and sim_mf_note) */
int mon_sim_access_lean_coh(struct mon_sim_core *c, uintptr_t addr, uint32_t size, int is_write,
			    uint32_t cookie);
/* Whether cores created from now on may take the lean path (default 1;
 * 0 for the general path alone: tests compare the two). */
void mon_sim_lean(struct mon_sim *s, int on);
/* Whether the L1's victim may be chosen with SSE4.1's pminsd (default 1;
 * used only where the host has it; the same victim either way: tests
 * compare the two) */
void mon_sim_sse41(int on);

/* Whether the line of addr is in the LLC of another node than c's: a
 * lookup that changes nothing (the what-if of a parallel first touch). */
int mon_sim_llc_elsewhere(struct mon_sim_core *c, uintptr_t addr);

#define MON_SIM_NO_COOKIE UINT32_MAX

/* One invalidation a core received: the line it hit and the cookie of the
 * core's last access to that line. */
struct mon_sim_recv {
	uintptr_t line_addr;	/* first byte of the coherence line */
	uint32_t cookie;
};

/*
 * Invalidations core c received (applied at the start of its accesses) and
 * not yet collected: moves up to max of them into out (oldest first) and
 * returns how many. Invalidations that found no cached copy, or did not fit
 * in the buffer (SIM ring capacity), are only counted in
 * mon_sim_stats.inval_recv_lost. Call from a thread attached to c.
 */
uint32_t mon_sim_core_recv(struct mon_sim_core *c, struct mon_sim_recv *out, uint32_t max);

/*
 * Applies pending invalidations / downgrades to core c without an access
 * (e.g. before reading statistics of a quiescent simulator). c's thread.
 */
void mon_sim_core_sync(struct mon_sim_core *c, struct mon_sim_events *ev);

/* Per-page placement: the home node and the first toucher of addr's page. */
struct mon_sim_page {
	uint32_t node;
	uint32_t first_core;
	uint32_t first_tid;
};
/* 0, or AMEBA_ENOENT when no core has touched the page (or it was not recorded). */
int mon_sim_page_info(struct mon_sim *s, uintptr_t addr, struct mon_sim_page *out);

/*
 * In the child of fork(): only the forking thread survives, and it was not
 * inside the simulator. Releases every lock and core the other threads
 * held and makes every core reconcile with the directory.
 */
void mon_sim_after_fork(struct mon_sim *s);

/*
 * Sampled mode (on 1): an LLC miss that fills a way never filled before
 * (the set is not full: the simulator has not seen enough of the program
 * there to know) is settled by the core's miss ratio in full sets, 0 while
 * it has fewer than 1,024 such references: between bursts the program ran
 * natively, and a line it used then is in the real LLC but was never in
 * the simulated one (docs/simulator.md, "Cold LLC sets"). Off (0), the
 * default, every miss counts: the exact mode's compulsory misses.
 */
void mon_sim_settle_cold(struct mon_sim *s, int on);

/* Counters of the simulator's own health (never on the per-access path). */
struct mon_sim_stats {
	uint64_t ring_overflows;	/* mailbox full: a core resynchronised */
	uint64_t dir_overflows;		/* directory full: a line went untracked */
	uint64_t page_overflows;	/* page table full: a page was not recorded */
	uint64_t seen_overflows;	/* 3C first-reference set full */
	uint64_t inval_recv_lost;	/* received invalidations without a cookie */
};
void mon_sim_get_stats(struct mon_sim *s, struct mon_sim_stats *out);

/*
 * Checks the coherence invariants of a quiescent simulator (no access in
 * flight, every core synced): each valid private line is in the directory
 * with the right sharer/owner, and the directory holds nothing else.
 * Returns 0 or AMEBA_EPROTO with a description in err. For tests.
 */
int mon_sim_verify(struct mon_sim *s, char *err, size_t errlen);

/* Adds b into a (counts summed, flags OR-ed) - for tests and benches. */
struct mon_sim_totals {
	uint64_t accesses, l1_miss, l2_miss, llc_miss, mem_local, mem_remote;
	uint64_t tlb1_miss, tlb_miss, coh_true, coh_false, compulsory, capacity, conflict;
	uint64_t intervention, inval_sent, inval_recv, nr_wb, est_cycles, est_stall_cycles;
};
void mon_sim_totals_add(struct mon_sim_totals *t, const struct mon_sim_events *ev);

/* ---- the runtime backend (backend_sim.c) ---- */
/* The active simulator's geometry as config text (see mri_geom_format);
 * 0 when the sim backend is not active. */
size_t mon_backend_sim_geometry(char *buf, size_t len);
/* In a forked child (rt.c's atfork handler): see mon_sim_after_fork. */
void mon_backend_sim_after_fork(void);

#endif /* AMEBA_MON_SIM_H */
