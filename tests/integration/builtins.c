/*
 * builtins.c - the constructs gcc and clang like to expand inline, past the
 * ThreadSanitizer instrumentation: bzero, bcopy, explicit_bzero, mem* and
 * str* calls of constant and variable size, __builtin_memset/memcpy,
 * aggregate copies and zero-initialisers, structs returned and passed by
 * value, wide-character fills.
 *
 * Two tests use it (tests/integration/builtins.cmake):
 *   - cc_builtins_norep_*: no rep movs/stos (or any other x86 string
 *     instruction) in this file's functions, for gcc and clang at -O0/-O2;
 *   - cc_builtins_oracle_*: the oracle counts of every target object equal
 *     the values worked out by hand in builtins.expect.
 *
 * Every target is a 64-byte aligned global touched by one construct only,
 * on the main thread (T0), so its count follows from the counting rules of
 * docs/oracle.md alone: one access per 64-byte line of each range read or
 * written. The comment at each target gives the figure builtins.expect
 * checks; "+1 read" is the checksum's read at the end.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <wchar.h>

#define NOINLINE __attribute__((noinline))
#define LINE __attribute__((aligned(64)))

#define STR50 "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWX"
#define STR100 STR50 STR50

struct big { long v[64]; };	/* 512 bytes: 8 lines */
struct huge { long v[512]; };	/* 4096 bytes: 64 lines */

char z_const[4096] LINE;	/* bzero 4096, 3 times: 192 writes; 3 reads by use(); +1 read */
char z_small[64] LINE;		/* bzero 24: 1 write */
char z_var[1024] LINE;		/* bzero of a run-time 1000: 16 writes */
char z_expl[128] LINE;		/* explicit_bzero 128: 2 writes */
char bc_src[256] LINE = STR100;	/* bcopy 256: 4 reads */
char bc_dst[256] LINE;		/* 4 writes; +1 read */
char ms_const[512] LINE;	/* memset 512: 8 writes */
char ms_builtin[512] LINE;	/* __builtin_memset 512: 8 writes */
char mc_src[256] LINE = STR100;	/* memcpy 256: 4 reads */
char mc_dst[256] LINE;		/* 4 writes; +1 read */
char bmc_src[320] LINE = STR100; /* __builtin_memcpy 300: 5 reads */
char bmc_dst[320] LINE;		/* 5 writes */
char mm_buf[256] LINE = STR100;	/* memmove(mm_buf, mm_buf + 64, 192): 3 reads, 3 writes; +1 read */
char mp_src[128] LINE = STR100;	/* mempcpy 128: 2 reads */
char mp_dst[128] LINE;		/* 2 writes; +1 read */
char sc_dst[128] LINE;		/* strcpy of 100 chars (101 bytes): 2 writes; +1 read */
char sp_dst[128] LINE;		/* stpcpy of 100 chars: 2 writes */
char cat_dst[128] LINE;		/* strcpy "" (1 write), strcat 50 chars (1 read, 1 write); +1 read */
char nc_dst[128] LINE;		/* strncpy "abc" into 100 bytes: 2 writes; +1 read */
wchar_t wm_buf[64] LINE;	/* wmemset 64 wide chars (256 bytes): 4 writes; +1 read */
struct big sb_a LINE;		/* sb_a = sb_b: 8 writes; +1 read */
struct big sb_b LINE = { { 1, 2, 3, 4, 5, 6, 7 } };	/* 8 reads */
struct big sb_zero LINE;	/* sb_zero = (struct big){0}: 8 writes */
struct big sp_a LINE;		/* *d = *s through pointers: 8 writes */
struct big sp_b LINE = { { 9, 8, 7 } };	/* 8 reads */
struct huge hb_a LINE;		/* hb_a = hb_b: 64 writes; +1 read */
struct huge hb_b LINE = { { 11, 12, 13 } };	/* 64 reads; 64 more in ret_huge() */

/* Not counted in builtins.expect (stack, or compiler-dependent); there for
 * the disassembly check. */
struct huge byval_src LINE = { { 5, 6 } };
volatile size_t var_len = 1000;
volatile int sink;

NOINLINE static void copy_big(struct big *d, const struct big *s)
{
	*d = *s;
}

NOINLINE static void use(const void *p)
{
	sink = *(const volatile char *)p;
}

/* A large local zero-initialised and handed to another function. */
NOINLINE static void local_zero(void)
{
	char buf[1000] = { 0 };
	struct big b = { 0 };

	use(buf);
	use(&b);
}

/* A struct returned by value and a local copy of a global. */
NOINLINE static struct huge ret_huge(int k)
{
	struct huge r = hb_b;

	r.v[k] = k;
	return r;
}

#ifndef __clang__
/* clang copies a large struct argument with rep movs in its call lowering,
 * below the instrumentation (docs/ameba-cc.md, LIMITATIONS). */
NOINLINE static long take_huge(struct huge h)
{
	return ((volatile long *)h.v)[1];
}
#endif

NOINLINE static void constructs(void)
{
	for (int i = 0; i < 3; i++) {
		bzero(z_const, sizeof(z_const));
		use(z_const + i);	/* else clang drops the repeated fills */
	}
	bzero(z_small, 24);
	bzero(z_var, var_len);
	explicit_bzero(z_expl, sizeof(z_expl));
	bcopy(bc_src, bc_dst, 256);
	memset(ms_const, 1, sizeof(ms_const));
	__builtin_memset(ms_builtin, 2, sizeof(ms_builtin));
	memcpy(mc_dst, mc_src, 256);
	__builtin_memcpy(bmc_dst, bmc_src, 300);
	memmove(mm_buf, mm_buf + 64, 192);
	mempcpy(mp_dst, mp_src, 128);
	strcpy(sc_dst, STR100);
	stpcpy(sp_dst, STR100);
	strcpy(cat_dst, "");
	strcat(cat_dst, STR50);
	strncpy(nc_dst, "abc", 100);
	wmemset(wm_buf, L'w', 64);
	sb_a = sb_b;
	sb_zero = (struct big){ 0 };
	copy_big(&sp_a, &sp_b);
	hb_a = hb_b;
}

int main(void)
{
	struct huge r;
	unsigned long sum = 0;

	constructs();
	local_zero();
	r = ret_huge(3);
	sum += (unsigned long)((volatile long *)r.v)[3];
#ifndef __clang__
	sum += (unsigned long)take_huge(byval_src);
#else
	sum += 6;
#endif
	/* the checksum: one read of each object marked "+1 read" */
	sum += *(volatile char *)&z_const[100];
	sum += *(volatile char *)&bc_dst[3];
	sum += *(volatile char *)&mc_dst[7];
	sum += *(volatile char *)&mm_buf[0];
	sum += *(volatile char *)&mp_dst[127];
	sum += *(volatile char *)&sc_dst[50];
	sum += *(volatile char *)&cat_dst[10];
	sum += *(volatile char *)&nc_dst[2];
	sum += (unsigned long)*(volatile wchar_t *)&wm_buf[63];
	sum += (unsigned long)*(volatile long *)&sb_a.v[5];
	sum += (unsigned long)*(volatile long *)&hb_a.v[2];
	printf("builtins: sum=%lu\n", sum);
	return 0;
}
