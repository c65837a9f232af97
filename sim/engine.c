/* engine.c: the discrete-event core.
 *
 * A binary min-heap keyed by (time ps, insertion sequence), so equal times
 * fire in insertion order and runs are deterministic (git's prio-queue;
 * htsim's picosecond clock). The keys live in the heap entries themselves
 * (no indirection through the pool while sifting: the pop is the hottest
 * code of the packet model). Events (handler, context, argument) live in a
 * pool that grows by doubling and is reused through a free list (htsim's
 * PacketDB idea): no malloc per event.
 *
 * Cancellation is lazy: sim_cancel frees the pool slot (its generation
 * changes) and leaves the heap entry, which is dropped when it reaches the
 * top (Redis-style delete mark, here the generation). Invariants: a heap
 * entry is live iff its generation equals its slot's and the slot is in
 * use; heap[0] is live whenever hlen > 0 (stale tops are dropped at once);
 * len counts the live entries; a handle is (generation << 32 | slot).
 * Cost: schedule O(log n), fire O(log n), cancel O(1) plus the later pop
 * of its entry. */
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"

#define SLOT_FREE UINT32_MAX

struct sim_event {
	sim_handler h;        /* handler, NULL while the slot is free */
	void *ctx;            /* handler context (not owned) */
	uint64_t arg;         /* handler argument */
	uint32_t gen;         /* generation of this slot, count */
	uint32_t next;        /* free list link (SLOT_FREE at the end) */
};

struct sim_hent {
	simtime_ps t;         /* fire time, ps */
	uint64_t seq;         /* insertion sequence, count */
	uint32_t slot;        /* pool slot */
	uint32_t gen;         /* the slot's generation when scheduled */
};

void sim_engine_init(struct sim_engine *e)
{
	struct sim_engine z = SIM_ENGINE_INIT;
	*e = z;
}

void sim_engine_release(struct sim_engine *e)
{
	free(e->ev);
	free(e->heap);
	sim_engine_init(e);
}

static inline bool h_less(const struct sim_hent *a, const struct sim_hent *b)
{
	return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static inline bool h_live(const struct sim_engine *e, const struct sim_hent *x)
{
	const struct sim_event *v = &e->ev[x->slot];
	return v->h != NULL && v->gen == x->gen;
}

static void heap_up(struct sim_hent *hp, uint32_t i, struct sim_hent x)
{
	while (i > 0) {
		uint32_t p = (i - 1) / 2;
		if (!h_less(&x, &hp[p]))
			break;
		hp[i] = hp[p];
		i = p;
	}
	hp[i] = x;
}

/* Remove heap[0]. */
static void heap_pop(struct sim_engine *e)
{
	struct sim_hent *hp = e->heap, x;
	uint32_t n = --e->hlen, i = 0;
	if (n == 0)
		return;
	x = hp[n];
	for (;;) {
		uint32_t c = 2 * i + 1;
		if (c >= n)
			break;
		if (c + 1 < n && h_less(&hp[c + 1], &hp[c]))
			c++;
		if (!h_less(&hp[c], &x))
			break;
		hp[i] = hp[c];
		i = c;
	}
	hp[i] = x;
}

/* Drop cancelled entries from the top (keeps heap[0] live). */
static void heap_clean_top(struct sim_engine *e)
{
	while (e->hlen > 0 && !h_live(e, &e->heap[0]))
		heap_pop(e);
}

static int grow(struct sim_engine *e)
{
	uint32_t ncap = e->cap ? e->cap * 2 : 1024, i;
	struct sim_event *ev;
	if (ncap <= e->cap || ncap > (1u << 30))
		return TS_ENOMEM;
	ev = realloc(e->ev, (size_t)ncap * sizeof(*ev));
	if (!ev)
		return TS_ENOMEM;
	e->ev = ev;
	/* New slots go on the free list in index order (deterministic reuse). */
	for (i = ncap; i-- > e->cap;) {
		ev[i].h = NULL;
		ev[i].gen = 1;
		ev[i].next = e->free_head;
		e->free_head = i;
	}
	e->cap = ncap;
	return 0;
}

static int grow_heap(struct sim_engine *e)
{
	uint32_t nc = e->hcap ? e->hcap * 2 : 1024;
	struct sim_hent *hp;
	if (nc <= e->hcap || nc > (1u << 31))
		return TS_ENOMEM;
	hp = realloc(e->heap, (size_t)nc * sizeof(*hp));
	if (!hp)
		return TS_ENOMEM;
	e->heap = hp;
	e->hcap = nc;
	return 0;
}

sim_event_id sim_at(struct sim_engine *e, simtime_ps t, sim_handler h, void *ctx, uint64_t arg)
{
	uint32_t s;
	struct sim_event *v;
	struct sim_hent x;
	TS_ASSERT(t >= e->now);
	TS_ASSERT(h != NULL);
	if (e->free_head == SLOT_FREE && grow(e))
		return 0;
	if (e->hlen == e->hcap && grow_heap(e))
		return 0;
	s = e->free_head;
	v = &e->ev[s];
	e->free_head = v->next;
	v->h = h;
	v->ctx = ctx;
	v->arg = arg;
	x.t = t;
	x.seq = e->seq++;
	x.slot = s;
	x.gen = v->gen;
	heap_up(e->heap, e->hlen++, x);
	e->len++;
	return ((uint64_t)v->gen << 32) | s;
}

sim_event_id sim_after(struct sim_engine *e, simtime_ps delay, sim_handler h, void *ctx,
		       uint64_t arg)
{
	TS_ASSERT(delay >= 0);
	return sim_at(e, e->now + delay, h, ctx, arg);
}

static void slot_free(struct sim_engine *e, uint32_t s)
{
	struct sim_event *v = &e->ev[s];
	v->h = NULL;
	v->gen++;
	if (v->gen == 0)
		v->gen = 1;
	v->next = e->free_head;
	e->free_head = s;
	e->len--;
}

bool sim_cancel(struct sim_engine *e, sim_event_id id)
{
	uint32_t s = (uint32_t)(id & 0xffffffffu), gen = (uint32_t)(id >> 32);
	if (id == 0 || s >= e->cap || e->ev[s].gen != gen || e->ev[s].h == NULL)
		return false;
	slot_free(e, s);
	heap_clean_top(e);
	return true;
}

simtime_ps sim_next_time(const struct sim_engine *e)
{
	return e->hlen ? e->heap[0].t : TS_SIMTIME_MAX;
}

void sim_stop(struct sim_engine *e)
{
	e->stop = true;
}

uint64_t sim_run(struct sim_engine *e, simtime_ps until)
{
	uint64_t n = 0;
	e->stop = false;
	while (e->hlen > 0 && !e->stop) {
		struct sim_hent x = e->heap[0];
		struct sim_event *v = &e->ev[x.slot];
		sim_handler h = v->h;
		void *ctx = v->ctx;
		uint64_t arg = v->arg;
		if (x.t > until)
			break;
		TS_ASSERT(x.t >= e->now); /* time never goes backwards */
		heap_pop(e);
		slot_free(e, x.slot);
		heap_clean_top(e);
		e->now = x.t; /* set before the handler runs */
		h(e, ctx, arg);
		n++;
	}
	e->fired += n;
	return n;
}
