/*
 * atomics_stress_cxx.cpp - std::atomic under the tsan ABI, from 4 threads.
 *
 * The C++ face of atomics_stress.c: std::atomic<uintN_t> members and
 * operators with every memory order, compare_exchange_strong/weak loops,
 * a 16-byte trivially copyable struct in std::atomic (g++ lowers it to
 * __tsan_atomic128_*; clang++ 14 calls libatomic for it), std::atomic_flag
 * and std::atomic_thread_fence. Every total is computed independently and
 * checked; the program prints `name: value` lines and exits 1 on a mismatch.
 */
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <thread>
#include <vector>

namespace {

constexpr int nr_threads = 4;
constexpr int nr_iters = 6024;	// a multiple of 6 (orders)

int nr_failures;

void expect(const char *name, uint64_t got, uint64_t want)
{
	std::printf("%s: %llu\n", name, (unsigned long long)got);
	if (got != want) {
		std::fprintf(stderr, "MISMATCH %s: got %llu want %llu\n", name,
			     (unsigned long long)got, (unsigned long long)want);
		nr_failures++;
	}
}

const std::memory_order rmw_orders[] = {
	std::memory_order_relaxed, std::memory_order_consume, std::memory_order_acquire,
	std::memory_order_release, std::memory_order_acq_rel, std::memory_order_seq_cst,
};
const std::memory_order load_orders[] = {
	std::memory_order_relaxed, std::memory_order_consume, std::memory_order_acquire,
	std::memory_order_seq_cst,
};

/*
 * One width: the counters every thread hammers, and what each thread saw.
 * The memory orders come from tables indexed by the iteration, so the
 * compilers see non-constant orders here (clang expands a switch, gcc
 * passes the value through to the hook).
 */
template <typename T>
struct width_test {
	std::atomic<T> add{ 0 }, sub{ 0 }, orr{ 0 }, andd{ T(~T(0)) }, xorr{ 0 };
	std::atomic<T> xchg{ 0 }, cas_strong{ 0 }, cas_weak{ 0 }, ops{ 0 };
	uint64_t xchg_sum[nr_threads] = {};
	int or_new[nr_threads] = {}, and_cleared[nr_threads] = {};

	static constexpr int bits = 8 * sizeof(T);

	static T xchg_value(int t, int i) { return T(uint64_t(t + 1) * 0x9e3779b97f4a7c15ull + uint64_t(i) * 2654435761u); }
	static T xor_value(int t, int i) { return T(uint64_t(i + 1) * uint64_t(t + 3) * 0xbf58476d1ce4e5b9ull ^ uint64_t(t) << (i % 50)); }
	static int or_bit(int t, int i) { return (t * 5 + i * 3) % bits; }
	static int and_bit(int t, int i) { return (t * 3 + i) % (bits - 1); }

	void run(int t)
	{
		for (int i = 0; i < nr_iters; i++) {
			std::memory_order mo = rmw_orders[i % 6];

			add.fetch_add(T(t + 1), mo);
			sub.fetch_sub(T(2 * t + 1), mo);
			xchg_sum[t] += xchg.exchange(xchg_value(t, i), mo);
			T bit = T(T(1) << or_bit(t, i));
			or_new[t] += !(orr.fetch_or(bit, mo) & bit);
			bit = T(T(1) << and_bit(t, i));
			and_cleared[t] += !!(andd.fetch_and(T(~bit), mo) & bit);
			xorr.fetch_xor(xor_value(t, i), mo);

			T e = cas_strong.load(load_orders[i % 4]);
			while (!cas_strong.compare_exchange_strong(e, T(e + 1), mo))
				;
			e = cas_weak.load(std::memory_order_relaxed);
			while (!cas_weak.compare_exchange_weak(e, T(e + 1), std::memory_order_acq_rel,
							       std::memory_order_relaxed))
				;
			ops++;		// operators: seq_cst read-modify-writes
			ops += T(2);
			--ops;
		}
	}

	void check(const char *w)
	{
		uint64_t xs = xchg.load(), xs_want = 0;
		T or_want = 0, and_want = T(~T(0)), xor_want = 0;
		int on = 0, ac = 0;
		char name[64];

		for (int t = 0; t < nr_threads; t++) {
			xs += xchg_sum[t];
			on += or_new[t];
			ac += and_cleared[t];
			for (int i = 0; i < nr_iters; i++) {
				xs_want += xchg_value(t, i);
				or_want = T(or_want | T(T(1) << or_bit(t, i)));
				and_want = T(and_want & T(~T(T(1) << and_bit(t, i))));
				xor_want = T(xor_want ^ xor_value(t, i));
			}
		}
		std::snprintf(name, sizeof(name), "%s fetch_add", w);
		expect(name, add.load(), T(nr_iters * 10));
		std::snprintf(name, sizeof(name), "%s fetch_sub", w);
		expect(name, sub.load(), T(0 - uint64_t(nr_iters) * 16));
		std::snprintf(name, sizeof(name), "%s exchange_conserved", w);
		expect(name, xs, xs_want);
		std::snprintf(name, sizeof(name), "%s fetch_or", w);
		expect(name, orr.load(), or_want);
		std::snprintf(name, sizeof(name), "%s fetch_or_new_bits", w);
		expect(name, on, __builtin_popcountll(or_want));
		std::snprintf(name, sizeof(name), "%s fetch_and", w);
		expect(name, andd.load(), and_want);
		std::snprintf(name, sizeof(name), "%s fetch_and_cleared_bits", w);
		expect(name, ac, bits - __builtin_popcountll(and_want));
		std::snprintf(name, sizeof(name), "%s fetch_xor", w);
		expect(name, xorr.load(), xor_want);
		std::snprintf(name, sizeof(name), "%s cas_strong_loop", w);
		expect(name, cas_strong.load(), T(nr_threads * nr_iters));
		std::snprintf(name, sizeof(name), "%s cas_weak_loop", w);
		expect(name, cas_weak.load(), T(nr_threads * nr_iters));
		std::snprintf(name, sizeof(name), "%s operators", w);
		expect(name, ops.load(), T(2 * nr_threads * nr_iters));
	}
};

/*
 * 16 bytes: the two halves move together, so any torn load or lost update
 * shows as hi != 3 * lo or as a wrong total.
 */
struct alignas(16) pair16 {
	uint64_t lo, hi;
};

std::atomic<pair16> pair_cas{ pair16{ 0, 0 } }, pair_store{ pair16{ 0, 0 } };
int pair_torn[nr_threads];

void run_pair(int t)
{
	for (int i = 0; i < nr_iters; i++) {
		pair16 e = pair_cas.load(std::memory_order_acquire), d;

		do {
			d = pair16{ e.lo + 1, e.hi + 3 };
		} while (!(i % 2 ? pair_cas.compare_exchange_weak(e, d, std::memory_order_acq_rel,
								  std::memory_order_acquire)
				 : pair_cas.compare_exchange_strong(e, d)));
		uint64_t v = uint64_t(t) << 32 | uint64_t(i);

		pair_store.store(pair16{ v, 3 * v }, i % 3 ? std::memory_order_release
							   : std::memory_order_seq_cst);
		pair16 seen = pair_store.load(std::memory_order_acquire);
		pair_torn[t] += seen.hi != 3 * seen.lo;
		pair16 old = pair_store.exchange(pair16{ v + 1, 3 * (v + 1) });
		pair_torn[t] += old.hi != 3 * old.lo;
	}
}

std::atomic_flag spin = ATOMIC_FLAG_INIT;
uint64_t under_spin;

void run_spinlock(int t)
{
	for (int i = 0; i < nr_iters; i++) {
		while (spin.test_and_set(std::memory_order_acquire))
			std::this_thread::yield();
		under_spin += uint64_t(t) + 1;
		spin.clear(std::memory_order_release);
		std::atomic_thread_fence(std::memory_order_seq_cst);
		std::atomic_signal_fence(std::memory_order_acq_rel);
	}
}

width_test<uint8_t> w8;
width_test<uint16_t> w16;
width_test<uint32_t> w32;
width_test<uint64_t> w64;

} // namespace

int main()
{
	std::vector<std::thread> threads;

	for (int t = 0; t < nr_threads; t++)
		threads.emplace_back([t] {
			w8.run(t);
			w16.run(t);
			w32.run(t);
			w64.run(t);
			run_pair(t);
			run_spinlock(t);
		});
	for (auto &th : threads)
		th.join();

	w8.check("w8");
	w16.check("w16");
	w32.check("w32");
	w64.check("w64");

	pair16 p = pair_cas.load();
	expect("pair16 cas_lo", p.lo, uint64_t(nr_threads) * nr_iters);
	expect("pair16 cas_hi", p.hi, uint64_t(nr_threads) * nr_iters * 3);
	int torn = 0;
	for (int t = 0; t < nr_threads; t++)
		torn += pair_torn[t];
	expect("pair16 torn", torn, 0);
	expect("atomic_flag_lock_plain", under_spin, uint64_t(nr_iters) * (1 + 2 + 3 + 4));

	if (nr_failures) {
		std::fprintf(stderr, "atomics_stress_cxx: %d mismatches\n", nr_failures);
		return 1;
	}
	return 0;
}
