/*
 * many_blocks - one million small heap blocks from three allocation sites,
 * interleaved in the heap and traversed as linked lists.
 *
 * Bottleneck: each node is its own malloc() block; the three kinds are
 * allocated interleaved (pattern P E P C P E P P E P, repeated 100,000
 * times), so the nodes of one list are scattered between nodes of the
 * others and every list walk drags in lines that mostly hold other
 * kinds' nodes and malloc headers. The lists are walked twice (a 45 MiB
 * heap, far larger than L2: every walk misses again).
 *
 *   bin (site)                                  blocks   size  list
 *   new_particle() (many_blocks.c)             600,000   32 B  particles (read + write)
 *   new_edge()                                 300,000   24 B  edges
 *   new_cell()                                 100,000   48 B  cells
 *
 *   expected  with glibc's chunk layout (chunks of 48, 32 and 64 B; one
 *             pattern of 10 blocks = 448 B = 7 lines; measured natively),
 *             one walk of the three lists touches 1.20 M distinct lines:
 *             particles 700 K (1.17 per node), edges 300 K (1.0 per node),
 *             cells 200 K (2.0 per node: a 48 B node at a 16 B offset in
 *             its chunk always straddles two lines). Shares of L1D/L2
 *             misses by bin: 58.3% / 25.0% / 16.7%; 2 walks = 2.4 M misses
 *             (an LRU model of a 48 KiB L1D / 2 MiB L2: 3.90 M L1D misses
 *             in the whole run, 1.5 M of them while building the lists).
 *             Every block is an object of its own: the object map holds
 *             1 M live heap blocks (3 bins) during the walks; all are
 *             freed at the end.
 *
 * Fixed twin (-DWL_FIXED=1): pooled allocation, one array per kind
 * (pool_particles(), pool_edges(), pool_cells(): 3 blocks of 19.2 MB,
 * 7.2 MB and 4.8 MB); the lists link the pool slots in the same order.
 * One walk touches 487.5 K lines (particles 0.5 per node, edges 0.375,
 * cells 0.75): 2.46x fewer misses; shares 61.5% / 23.1% / 15.4% (LRU
 * model: 1.46 M L1D misses in the whole run, exactly these shares). Same
 * output. Natively the walks are ~4x faster (27 vs 6.6 ns per node).
 *
 * SCALE multiplies the walks (2 x SCALE). Native: ~0.15 s in all, of which
 * allocation and frees ~0.1 s (fixed: ~0.03 s in all).
 */
#include "wl.h"

#define NR_PATTERNS 100000
#define NR_PARTICLES (6 * NR_PATTERNS)
#define NR_EDGES (3 * NR_PATTERNS)
#define NR_CELLS (1 * NR_PATTERNS)

struct particle {
	struct particle *next;
	uint64_t pos, vel, mass;
};

struct edge {
	struct edge *next;
	uint32_t a, b;
	uint64_t w;
};

struct cell {
	struct cell *next;
	uint64_t key;
	uint64_t val[4];
};

#ifdef WL_FIXED
static struct particle *particle_pool;
static struct edge *edge_pool;
static struct cell *cell_pool;
static size_t nr_particles, nr_edges, nr_cells;

__attribute__((noinline)) static void *pool_particles(void)
{
	return wl_check_alloc(malloc(NR_PARTICLES * sizeof(struct particle)), "particle pool");
}

__attribute__((noinline)) static void *pool_edges(void)
{
	return wl_check_alloc(malloc(NR_EDGES * sizeof(struct edge)), "edge pool");
}

__attribute__((noinline)) static void *pool_cells(void)
{
	return wl_check_alloc(malloc(NR_CELLS * sizeof(struct cell)), "cell pool");
}

static struct particle *new_particle(void)
{
	return &particle_pool[nr_particles++];
}

static struct edge *new_edge(void)
{
	return &edge_pool[nr_edges++];
}

static struct cell *new_cell(void)
{
	return &cell_pool[nr_cells++];
}
#else
__attribute__((noinline)) static struct particle *new_particle(void)
{
	return wl_check_alloc(malloc(sizeof(struct particle)), "particle");
}

__attribute__((noinline)) static struct edge *new_edge(void)
{
	return wl_check_alloc(malloc(sizeof(struct edge)), "edge");
}

__attribute__((noinline)) static struct cell *new_cell(void)
{
	return wl_check_alloc(malloc(sizeof(struct cell)), "cell");
}
#endif

int main(int argc, char **argv)
{
	static const char pattern[10] = { 'P', 'E', 'P', 'C', 'P', 'E', 'P', 'P', 'E', 'P' };
	unsigned long scale = wl_scale(argc, argv, 1000);
	unsigned long nr_walks = 2 * scale;
	struct particle *particles = NULL, **p_tail = &particles;
	struct edge *edges = NULL, **e_tail = &edges;
	struct cell *cells = NULL, **c_tail = &cells;
	uint64_t s_p = 0, s_e = 0, s_c = 0, t0;
	uint64_t n = 0;

#ifdef WL_FIXED
	particle_pool = pool_particles();
	edge_pool = pool_edges();
	cell_pool = pool_cells();
#endif
	for (size_t k = 0; k < NR_PATTERNS; k++) {
		for (int slot = 0; slot < 10; slot++, n++) {
			if (pattern[slot] == 'P') {
				struct particle *p = new_particle();

				p->pos = wl_mix(1, n);
				p->vel = n & 255;
				p->mass = 1 + (n & 7);
				*p_tail = p;
				p_tail = &p->next;
			} else if (pattern[slot] == 'E') {
				struct edge *e = new_edge();

				e->a = (uint32_t)n;
				e->b = (uint32_t)(n * 7);
				e->w = wl_mix(2, n);
				*e_tail = e;
				e_tail = &e->next;
			} else {
				struct cell *c = new_cell();

				c->key = n;
				for (int i = 0; i < 4; i++)
					c->val[i] = wl_mix(3, n + (uint64_t)i);
				*c_tail = c;
				c_tail = &c->next;
			}
		}
	}
	*p_tail = NULL;
	*e_tail = NULL;
	*c_tail = NULL;

	t0 = wl_now_ns();
	for (unsigned long t = 0; t < nr_walks; t++) {
		for (struct particle *p = particles; p; p = p->next) {
			p->vel += p->mass;
			s_p += p->pos ^ p->vel;
		}
		for (struct edge *e = edges; e; e = e->next)
			s_e += (e->a ^ e->b) + e->w;
		for (struct cell *c = cells; c; c = c->next)
			s_c += c->key + c->val[t & 3];
	}
	wl_report_time("many_blocks", t0);

#ifdef WL_FIXED
	free(particle_pool);
	free(edge_pool);
	free(cell_pool);
#else
	while (particles) {
		struct particle *next = particles->next;

		free(particles);
		particles = next;
	}
	while (edges) {
		struct edge *next = edges->next;

		free(edges);
		edges = next;
	}
	while (cells) {
		struct cell *next = cells->next;

		free(cells);
		cells = next;
	}
#endif
	printf("many_blocks: blocks %d walks %lu\n", NR_PARTICLES + NR_EDGES + NR_CELLS, nr_walks);
	printf("particles %016" PRIx64 "\nedges %016" PRIx64 "\ncells %016" PRIx64 "\n", s_p, s_e,
	       s_c);
	return 0;
}
