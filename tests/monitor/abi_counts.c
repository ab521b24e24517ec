/*
 * abi_counts.c - the access kinds the atomic hooks deliver, counted exactly
 * by the real runtime (count backend, AMEBA_ORACLE) and compared with
 * abi_counts.expect.
 *
 * Each object below is touched by one kind of operation only, from the main
 * thread (T0) and one worker (T1), so its read and write counts name the
 * flags the hook delivered: a load is a read, a store a write, a
 * read-modify-write and a successful compare-exchange one access that reads
 * and writes, a failed compare-exchange a read. 16-byte atomics go through
 * cmpxchg16b in the runtime but must count like the narrow ones. Accesses
 * between __tsan_ignore_thread_begin/end are not counted. Every object is
 * 64-byte aligned so that no access straddles a cache line. The final
 * printf adds one plain read to each object it prints. No operation is an
 * identity (and with ~0, or with 0): compilers may turn those into loads.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

void __tsan_ignore_thread_begin(void);
void __tsan_ignore_thread_end(void);

#define OBJ __attribute__((aligned(64)))

uint32_t cnt_load OBJ;			/* T0: 10 loads */
uint16_t cnt_store OBJ;			/* T0: 10 stores */
uint64_t cnt_rmw OBJ;			/* T0: 7 RMW of each of 6 kinds = 42; T1: 5 */
uint8_t cnt_casok OBJ;			/* T0: 10 successful CAS (strong, weak, val) */
uint32_t cnt_casfail OBJ;		/* T0: 10 failed CAS (strong, weak, val) */
unsigned __int128 cnt_x128 OBJ;		/* T0: 4 exchanges, 3 fetch_add, 2 CAS ok, 1 CAS fail */
unsigned __int128 cnt_l128 OBJ;		/* T0: 6 loads, 2 stores */
uint64_t cnt_ignored OBJ;		/* T0: 3 counted RMW, 20 ignored */

static void *worker(void *arg)
{
	for (int i = 0; i < 5; i++)
		__atomic_fetch_add(&cnt_rmw, 1, __ATOMIC_RELAXED);
	return arg;
}

int main(void)
{
	uint64_t sum = 0;
	pthread_t tid;

	for (int i = 0; i < 10; i++)
		sum += __atomic_load_n(&cnt_load, __ATOMIC_ACQUIRE);
	for (int i = 0; i < 10; i++)
		__atomic_store_n(&cnt_store, (uint16_t)i, __ATOMIC_RELEASE);
	for (int i = 0; i < 7; i++) {
		sum += __atomic_fetch_add(&cnt_rmw, 3, __ATOMIC_SEQ_CST);
		sum += __atomic_fetch_sub(&cnt_rmw, 1, __ATOMIC_ACQ_REL);
		sum += __atomic_fetch_or(&cnt_rmw, 8, __ATOMIC_RELAXED);
		sum += __atomic_fetch_xor(&cnt_rmw, 8, __ATOMIC_RELAXED);
		sum += __atomic_fetch_and(&cnt_rmw, ~(uint64_t)16, __ATOMIC_ACQUIRE);
		sum += __atomic_exchange_n(&cnt_rmw, (uint64_t)i, __ATOMIC_RELEASE);
	}
	for (uint8_t i = 0; i < 10; i++) {
		uint8_t e = i;

		if (i % 3 == 0)
			sum += __atomic_compare_exchange_n(&cnt_casok, &e, (uint8_t)(i + 1), 0,
							   __ATOMIC_SEQ_CST, __ATOMIC_RELAXED);
		else if (i % 3 == 1)
			/* x86 never fails a weak CAS spuriously; one attempt each */
			sum += __atomic_compare_exchange_n(&cnt_casok, &e, (uint8_t)(i + 1), 1,
							   __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
		else
			sum += __sync_val_compare_and_swap(&cnt_casok, e, (uint8_t)(i + 1));
	}
	for (uint32_t i = 0; i < 10; i++) {
		uint32_t e = 1000 + i;	/* never the value held (0) */

		if (i % 3 == 0)
			sum += __atomic_compare_exchange_n(&cnt_casfail, &e, 7, 0,
							   __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
		else if (i % 3 == 1)
			sum += __atomic_compare_exchange_n(&cnt_casfail, &e, 7, 1,
							   __ATOMIC_RELAXED, __ATOMIC_RELAXED);
		else
			sum += __sync_val_compare_and_swap(&cnt_casfail, e, 7);
	}
	for (int i = 0; i < 4; i++)
		sum += (uint64_t)__atomic_exchange_n(&cnt_x128, (unsigned __int128)i << 64,
						     __ATOMIC_SEQ_CST);
	for (int i = 0; i < 3; i++)
		sum += (uint64_t)__atomic_fetch_add(&cnt_x128, 1, __ATOMIC_SEQ_CST);
	{
		unsigned __int128 e = (unsigned __int128)3 << 64 | 3, bad = 5;

		sum += __atomic_compare_exchange_n(&cnt_x128, &e, 9, 0, __ATOMIC_SEQ_CST,
						   __ATOMIC_SEQ_CST);
		e = 9;
		sum += __atomic_compare_exchange_n(&cnt_x128, &e, 10, 1, __ATOMIC_SEQ_CST,
						   __ATOMIC_SEQ_CST);
		sum += __atomic_compare_exchange_n(&cnt_x128, &bad, 11, 0, __ATOMIC_SEQ_CST,
						   __ATOMIC_SEQ_CST);
	}
	for (int i = 0; i < 6; i++)
		sum += (uint64_t)__atomic_load_n(&cnt_l128, __ATOMIC_ACQUIRE);
	for (int i = 0; i < 2; i++)
		__atomic_store_n(&cnt_l128, (unsigned __int128)i, __ATOMIC_RELEASE);

	for (int i = 0; i < 3; i++)
		__atomic_fetch_add(&cnt_ignored, 1, __ATOMIC_RELAXED);
	__tsan_ignore_thread_begin();
	for (int i = 0; i < 20; i++)
		__atomic_fetch_add(&cnt_ignored, 1, __ATOMIC_RELAXED);
	__tsan_ignore_thread_end();

	if (pthread_create(&tid, NULL, worker, NULL))
		return 2;
	pthread_join(tid, NULL);

	/* the values themselves (one more plain read each): every operation happened */
	printf("cnt_rmw: %llu\n", (unsigned long long)cnt_rmw);
	printf("cnt_casok: %u\n", cnt_casok);
	printf("cnt_casfail: %u\n", cnt_casfail);
	printf("cnt_x128: %llu\n", (unsigned long long)cnt_x128);
	printf("cnt_ignored: %llu\n", (unsigned long long)cnt_ignored);
	printf("sum: %llu\n", (unsigned long long)sum);
	return 0;
}
