/*
 * abi_constructs_cxx.cpp - C++ constructs under the tsan ABI: virtual calls
 * and vtable pointer stores (__tsan_vptr_update / __tsan_vptr_read),
 * multiple and virtual inheritance, dynamic_cast, exceptions unwinding
 * through instrumented frames (__tsan_func_exit in landing pads),
 * templates, the standard containers, shared_ptr (atomic reference counts),
 * std::atomic of several widths, std::thread / std::mutex, function-local
 * statics (guard variables), thread_local objects with constructors, and
 * lambdas / std::function.
 *
 * Built through `ameba c++` with g++ and clang++ at -O0..-O3; every build
 * must print exactly tests/monitor/abi_constructs_cxx.expected.
 */
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

static void section(const char *name, uint64_t value)
{
	std::printf("%s: %llu\n", name, (unsigned long long)value);
}

static unsigned opaque(unsigned v)
{
	static volatile unsigned sink;

	sink = v;
	return sink;
}

/* ---- virtual dispatch, inheritance, RTTI ---- */

struct shape {
	virtual ~shape() = default;
	virtual uint64_t area() const = 0;
	virtual const char *kind() const { return "shape"; }
};

struct rect : shape {
	uint64_t w, h;
	rect(uint64_t w_, uint64_t h_) : w(w_), h(h_) {}
	uint64_t area() const override { return w * h; }
	const char *kind() const override { return "rect"; }
};

struct square final : rect {
	explicit square(uint64_t s) : rect(s, s) {}
	const char *kind() const override { return "square"; }
};

struct named {
	virtual ~named() = default;
	virtual std::string name() const { return "anon"; }
};

struct tri : shape, named {
	uint64_t b, h;
	tri(uint64_t b_, uint64_t h_) : b(b_), h(h_) {}
	uint64_t area() const override { return b * h / 2; }
	std::string name() const override { return "tri" + std::to_string(b); }
};

struct vbase { virtual ~vbase() = default; uint64_t base_val = 5; };
struct vleft : virtual vbase { uint64_t l = 1; };
struct vright : virtual vbase { uint64_t r = 2; };
struct diamond : vleft, vright { uint64_t d = 3; };

static uint64_t virtuals()
{
	std::vector<std::unique_ptr<shape>> shapes;
	uint64_t sum = 0;

	for (unsigned i = 0; i < opaque(30); i++) {
		switch (i % 3) {
		case 0: shapes.emplace_back(new rect(i, i + 1)); break;
		case 1: shapes.emplace_back(new square(i)); break;
		default: shapes.emplace_back(new tri(i, 4)); break;
		}
	}
	for (auto &s : shapes) {
		sum += s->area() + std::string(s->kind()).size();
		if (auto *n = dynamic_cast<named *>(s.get()))
			sum += n->name().size();
		if (dynamic_cast<square *>(s.get()))
			sum += 1000;
	}
	diamond d;
	vbase *vb = &d;
	sum += vb->base_val + d.l + d.r + d.d + (dynamic_cast<diamond *>(vb) == &d);
	return sum;
}

/* ---- exceptions through instrumented frames ---- */

struct guard {
	uint64_t *counter;
	explicit guard(uint64_t *c) : counter(c) {}
	~guard() { ++*counter; }
};

static uint64_t unwound;

static uint64_t thrower(int depth)
{
	guard g(&unwound);

	if (depth == 0)
		throw std::runtime_error("depth reached");
	return thrower(depth - 1) + 1;
}

static uint64_t exceptions()
{
	uint64_t caught = 0;

	for (int i = 0; i < (int)opaque(20); i++) {
		try {
			thrower(i % 7);
		} catch (const std::runtime_error &e) {
			caught += std::string(e.what()).size();
		}
	}
	try {
		std::vector<int> v(3);
		(void)v.at(opaque(10));
	} catch (const std::out_of_range &) {
		caught += 100;
	}
	return caught + unwound;
}

/* ---- templates, containers, algorithms, lambdas ---- */

template <typename T, int N>
struct ring {
	T slots[N];
	int head = 0;
	void push(T v) { slots[head++ % N] = v; }
	T total() const { return std::accumulate(slots, slots + N, T{}); }
};

template <typename T>
static T dot(const std::vector<T> &a, const std::vector<T> &b)
{
	T s{};
	for (size_t i = 0; i < a.size(); i++)
		s += a[i] * b[i];
	return s;
}

static uint64_t templates_and_containers()
{
	ring<uint64_t, 8> r{};
	ring<uint16_t, 5> r16{};
	std::map<std::string, uint64_t> m;
	std::vector<uint32_t> v;
	uint64_t sum = 0;

	for (unsigned i = 0; i < opaque(100); i++) {
		r.push(i);
		r16.push((uint16_t)(i * 3));
		m["k" + std::to_string(i % 13)] += i;
		v.push_back((i * 7919u) % 1013u);
	}
	std::sort(v.begin(), v.end(), [](uint32_t a, uint32_t b) { return a > b; });
	std::function<uint64_t(uint64_t)> f = [&sum](uint64_t x) { return x + sum % 7; };
	for (auto &kv : m)
		sum += kv.second + kv.first.size();
	sum += r.total() + r16.total() + v.front() + v.back() + f(3);
	std::vector<double> a(64, 1.5), b(64, 2.0);
	sum += (uint64_t)dot(a, b) + dot(std::vector<int>{ 1, 2, 3 }, std::vector<int>{ 4, 5, 6 });
	return sum;
}

/* ---- shared_ptr, std::atomic, threads, mutex, statics, thread_local ---- */

struct tl_state {
	uint64_t value;
	tl_state() : value(42) {}
};

static thread_local tl_state tl;
static std::atomic<uint8_t> a8{ 0 };
static std::atomic<uint16_t> a16{ 0 };
static std::atomic<uint32_t> a32{ 0 };
static std::atomic<uint64_t> a64{ 0 };
static std::atomic<bool> flag{ false };
static std::mutex mtx;
static uint64_t under_mutex;

static uint64_t &lazy_static()
{
	static uint64_t v = opaque(7);	/* guarded initialisation */
	return v;
}

static uint64_t concurrency()
{
	auto shared = std::make_shared<std::vector<uint64_t>>(100, 1);
	std::vector<std::thread> threads;
	std::atomic<uint64_t> results{ 0 };

	for (int t = 0; t < 4; t++)
		threads.emplace_back([shared, t, &results] {
			std::shared_ptr<std::vector<uint64_t>> copy = shared;
			uint64_t local = 0;

			for (int i = 0; i < 5000; i++) {
				a8.fetch_add(1, std::memory_order_relaxed);
				a16 += 3;
				a32.fetch_or(1u << (i % 32));
				uint64_t e = a64.load(std::memory_order_acquire);
				while (!a64.compare_exchange_weak(e, e + 2, std::memory_order_acq_rel))
					;
				std::lock_guard<std::mutex> lk(mtx);
				under_mutex += (uint64_t)t + 1;
			}
			for (auto x : *copy)
				local += x;
			tl.value += (uint64_t)t;
			results += local + tl.value + lazy_static();
			flag.store(true, std::memory_order_release);
		});
	for (auto &th : threads)
		th.join();
	return results.load() + a8.load() + a16.load() + a32.load() + a64.load() + under_mutex +
	       (uint64_t)flag.load() + (uint64_t)shared.use_count() + tl.value;
}

int main()
{
	section("virtuals_rtti", virtuals());
	section("exceptions", exceptions());
	section("templates_containers_lambdas", templates_and_containers());
	section("shared_ptr_atomics_threads_statics", concurrency());
	return 0;
}
