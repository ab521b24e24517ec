/*
 * check.h - a minimal test harness for ameba's C tests.
 *
 *   CHECK(cond)                    records a failure with file:line when cond is false
 *   CHECK_EQ_U64(got, want)        compares two unsigned values, printing both
 *   CHECK_STR(got, want)           compares two strings (NULL-safe)
 *   CHECK_NEAR(got, want)          two doubles within 1e-9 of |want| + 1
 *   CHECK_HAS(text, needle)        text (NULL-safe) contains needle
 *   return check_done();           prints "N passed, N failed" and returns the exit code
 *
 * Table-driven tests pass the row's __LINE__ through CHECK_AT(line, cond).
 */
#ifndef AMEBA_TEST_CHECK_H
#define AMEBA_TEST_CHECK_H

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* one pair for the whole test program, however many files record into it
 * (weak: each file that includes this defines them, the linker keeps one) */
__attribute__((weak)) int check_nr_pass, check_nr_fail;

static inline void check_record(int ok, const char *file, int line, const char *what)
{
	if (ok) {
		check_nr_pass++;
		return;
	}
	check_nr_fail++;
	fprintf(stderr, "%s:%d: check failed: %s\n", file, line, what);
}

#define CHECK(c) check_record(!!(c), __FILE__, __LINE__, #c)
#define CHECK_AT(line, c) check_record(!!(c), __FILE__, (line), #c)
#define CHECK_EQ_U64(got, want)                                                          \
	do {                                                                             \
		unsigned long long g_ = (unsigned long long)(got);                       \
		unsigned long long w_ = (unsigned long long)(want);                      \
		if (g_ != w_)                                                            \
			fprintf(stderr, "%s:%d: %s = %llu, want %llu\n", __FILE__,       \
				__LINE__, #got, g_, w_);                                  \
		check_record(g_ == w_, __FILE__, __LINE__, #got " == " #want);           \
	} while (0)
#define CHECK_STR(got, want)                                                             \
	do {                                                                             \
		const char *g_ = (got), *w_ = (want);                                    \
		int ok_ = (g_ && w_) ? strcmp(g_, w_) == 0 : g_ == w_;                    \
		if (!ok_)                                                                \
			fprintf(stderr, "%s:%d: %s = \"%s\", want \"%s\"\n", __FILE__,  \
				__LINE__, #got, g_ ? g_ : "(null)", w_ ? w_ : "(null)");  \
		check_record(ok_, __FILE__, __LINE__, #got " == " #want);                \
	} while (0)

#define CHECK_NEAR(got, want)                                                            \
	do {                                                                             \
		double g_ = (got), w_ = (want);                                          \
		int ok_ = fabs(g_ - w_) <= 1e-9 * (fabs(w_) + 1);                        \
		if (!ok_)                                                                \
			fprintf(stderr, "%s:%d: %s = %.12g, want %.12g\n", __FILE__,      \
				__LINE__, #got, g_, w_);                                  \
		check_record(ok_, __FILE__, __LINE__, #got " ~= " #want);                \
	} while (0)
#define CHECK_HAS(text, needle)                                                          \
	do {                                                                             \
		const char *t_ = (text), *n_ = (needle);                                 \
		int ok_ = t_ && strstr(t_, n_);                                          \
		if (!ok_)                                                                \
			fprintf(stderr, "%s:%d: \"%s\" lacks \"%s\"\n", __FILE__, __LINE__, \
				t_ ? t_ : "(null)", n_);                                   \
		check_record(ok_, __FILE__, __LINE__, #text " has " #needle);            \
	} while (0)

static inline int check_done(void)
{
	printf("%d passed, %d failed\n", check_nr_pass, check_nr_fail);
	return check_nr_fail ? 1 : 0;
}

#endif
