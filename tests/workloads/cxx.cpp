/*
 * cxx - a C++ program: new/delete, virtual calls, std::vector, std::thread
 * and std::atomic, with false sharing hidden in a std::vector of atomics.
 *
 * Bottleneck: four std::thread workers walk their quarter of `shapes` (a
 * std::vector<Shape *> of 200,000 objects allocated one by one with new,
 * 3 classes, virtual area()) 6 times and count per worker with
 * tally[id].fetch_add(..., relaxed). `tally` is a
 * std::vector<std::atomic<uint64_t>> of 4 elements: 32 bytes, all in one
 * line (the block comes from operator new inside std::vector, called from
 * make_tally() in cxx.cpp). Every worker writes only its own 8 bytes: false
 * sharing.
 *
 *   object    the 32 B storage block of the vector `tally`, allocated by
 *             std::allocator (operator new) on behalf of make_tally()
 *             (cxx.cpp): its first instrumented frame is the inlined
 *             allocate() in <bits/new_allocator.h>, the first frame in
 *             cxx.cpp is make_tally. (The vector object itself, 24 B, is
 *             the `new Tally` in make_tally(): read once per worker.)
 *   threads   the four workers
 *   expected  300,000 fetch_adds per worker on one line: up to 1.2 M
 *             coherence misses, all false sharing (disjoint 8-byte words).
 *             The shapes themselves (200,000 blocks of 16-32 B from the
 *             3 new expressions in make_shapes()) are read-only in the
 *             walks: no coherence misses. Natively the packed tally costs
 *             ~3x (27-31 ms vs 9-11 ms for the walks).
 *
 * Fixed twin (-DWL_FIXED=1): the tally is a std::vector of
 * `struct alignas(64) Slot { std::atomic<uint64_t> n; }` -- one line per
 * worker, allocated with the aligned operator new (C++17): no coherence
 * misses. Same output.
 *
 * SCALE multiplies the walks (6 x SCALE). Native: ~40 ms in all.
 */
#include <atomic>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <thread>
#include <vector>

#include "wl.h"

namespace {

constexpr int kWorkers = 4;
constexpr size_t kShapes = 200000;

struct Shape {
	virtual ~Shape() = default;
	virtual uint64_t area() const = 0;
};

struct Rect final : Shape {
	uint64_t w, h;
	Rect(uint64_t w_, uint64_t h_) : w(w_), h(h_) {}
	uint64_t area() const override { return w * h; }
};

struct Circle final : Shape {
	uint64_t r;
	explicit Circle(uint64_t r_) : r(r_) {}
	uint64_t area() const override { return 3 * r * r; } /* integer pi, on purpose */
};

struct Triangle final : Shape {
	uint64_t b, h, tag;
	Triangle(uint64_t b_, uint64_t h_, uint64_t t_) : b(b_), h(h_), tag(t_) {}
	uint64_t area() const override { return b * h / 2 + (tag & 1); }
};

#ifdef WL_FIXED
struct alignas(WL_LINE_SIZE) Slot {
	std::atomic<uint64_t> n{0};
};
using Tally = std::vector<Slot>;
uint64_t add(Slot *s, uint64_t v)
{
	return s->n.fetch_add(v, std::memory_order_relaxed);
}
uint64_t get(const Tally &t, int id)
{
	return t[id].n.load();
}
#else
using Tally = std::vector<std::atomic<uint64_t>>;
uint64_t add(std::atomic<uint64_t> *a, uint64_t v)
{
	return a->fetch_add(v, std::memory_order_relaxed);
}
uint64_t get(const Tally &t, int id)
{
	return t[id].load();
}
#endif

__attribute__((noinline)) Tally *make_tally()
{
	return new Tally(kWorkers);
}

__attribute__((noinline)) std::vector<Shape *> make_shapes()
{
	std::vector<Shape *> v;

	v.reserve(kShapes);
	for (size_t i = 0; i < kShapes; i++) {
		uint64_t a = wl_mix(21, i) & 1023, b = wl_mix(22, i) & 1023;

		switch (i % 3) {
		case 0: v.push_back(new Rect(a, b)); break;
		case 1: v.push_back(new Circle(a)); break;
		default: v.push_back(new Triangle(a, b, i)); break;
		}
	}
	return v;
}

/* The atomics are compiler barriers: take the vectors' data pointers once,
 * so that the loop's only shared accesses are the fetch_adds and the reads
 * of the (read-only) shapes. */
void walk(const std::vector<Shape *> &shapes, Tally &tally, int id, unsigned long nr_walks)
{
	size_t per = shapes.size() / kWorkers, first = per * (size_t)id;
	Shape *const *mine = shapes.data() + first;
	auto *slot = &tally[(size_t)id];

	for (unsigned long w = 0; w < nr_walks; w++)
		for (size_t i = 0; i < per; i++)
			add(slot, mine[i]->area() + w);
}

} // namespace

int main(int argc, char **argv)
{
	unsigned long scale = wl_scale(argc, argv, 1000);
	unsigned long nr_walks = 6 * scale;
	std::vector<Shape *> shapes = make_shapes();
	std::unique_ptr<Tally> tally(make_tally());
	std::vector<std::thread> workers;
	uint64_t t0 = wl_now_ns(), sum = 0;

	for (int id = 0; id < kWorkers; id++)
		workers.emplace_back(walk, std::cref(shapes), std::ref(*tally), id, nr_walks);
	for (auto &t : workers)
		t.join();
	wl_report_time("cxx", t0);

	std::printf("cxx: workers %d shapes %zu walks %lu\n", kWorkers, shapes.size(), nr_walks);
	for (int id = 0; id < kWorkers; id++) {
		std::printf("tally %d %" PRIu64 "\n", id, get(*tally, id));
		sum = wl_mix(sum, get(*tally, id));
	}
	std::printf("checksum %016" PRIx64 "\n", sum);
	for (Shape *s : shapes)
		delete s;
	return 0;
}
