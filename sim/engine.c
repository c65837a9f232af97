/* engine.c: the discrete-event core.
 *
 * A binary min-heap of pool slots keyed by (time ps, insertion sequence), so
 * equal times fire in insertion order and runs are deterministic (git's
 * prio-queue; htsim's picosecond clock). Events live in a pool that grows
 * by doubling and is reused through a free list (htsim's PacketDB idea):
 * no malloc per event.
 *
 * Invariants: heap[i]'s event has pos == i; a free slot has pos ==
 * SLOT_FREE; a handle is (generation << 32 | slot) and the generation of a
 * slot changes every time it is freed, so stale handles are detected.
 * Cost: schedule and cancel O(log n), fire O(log n). */
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"

#define SLOT_FREE UINT32_MAX

struct sim_event {
	simtime_ps t;         /* fire time, ps */
	uint64_t seq;         /* insertion sequence, count */
	sim_handler h;        /* handler */
	void *ctx;            /* handler context (not owned) */
	uint64_t arg;         /* handler argument */
	uint32_t pos;         /* heap index, or SLOT_FREE (free list link in next) */
	uint32_t gen;         /* generation of this slot, count */
	uint32_t next;        /* free list */
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

static inline bool ev_less(const struct sim_event *a, const struct sim_event *b)
{
	return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static void heap_up(struct sim_engine *e, uint32_t i)
{
	uint32_t s = e->heap[i];
	while (i > 0) {
		uint32_t p = (i - 1) / 2;
		if (!ev_less(&e->ev[s], &e->ev[e->heap[p]]))
			break;
		e->heap[i] = e->heap[p];
		e->ev[e->heap[i]].pos = i;
		i = p;
	}
	e->heap[i] = s;
	e->ev[s].pos = i;
}

static void heap_down(struct sim_engine *e, uint32_t i)
{
	uint32_t s = e->heap[i];
	for (;;) {
		uint32_t c = 2 * i + 1;
		if (c >= e->len)
			break;
		if (c + 1 < e->len && ev_less(&e->ev[e->heap[c + 1]], &e->ev[e->heap[c]]))
			c++;
		if (!ev_less(&e->ev[e->heap[c]], &e->ev[s]))
			break;
		e->heap[i] = e->heap[c];
		e->ev[e->heap[i]].pos = i;
		i = c;
	}
	e->heap[i] = s;
	e->ev[s].pos = i;
}

static int grow(struct sim_engine *e)
{
	uint32_t ncap = e->cap ? e->cap * 2 : 1024, i;
	struct sim_event *ev;
	uint32_t *heap;
	if (ncap <= e->cap || ncap > (1u << 30))
		return TS_ENOMEM;
	ev = realloc(e->ev, (size_t)ncap * sizeof(*ev));
	if (!ev)
		return TS_ENOMEM;
	e->ev = ev;
	heap = realloc(e->heap, (size_t)ncap * sizeof(*heap));
	if (!heap)
		return TS_ENOMEM;
	e->heap = heap;
	/* New slots go on the free list in index order (deterministic reuse). */
	for (i = ncap; i-- > e->cap;) {
		ev[i].pos = SLOT_FREE;
		ev[i].gen = 1;
		ev[i].next = e->free_head;
		e->free_head = i;
	}
	e->cap = ncap;
	return 0;
}

sim_event_id sim_at(struct sim_engine *e, simtime_ps t, sim_handler h, void *ctx, uint64_t arg)
{
	uint32_t s;
	struct sim_event *v;
	TS_ASSERT(t >= e->now);
	TS_ASSERT(h != NULL);
	if (e->free_head == UINT32_MAX && grow(e))
		return 0;
	s = e->free_head;
	v = &e->ev[s];
	e->free_head = v->next;
	v->t = t;
	v->seq = e->seq++;
	v->h = h;
	v->ctx = ctx;
	v->arg = arg;
	e->heap[e->len] = s;
	v->pos = e->len++;
	heap_up(e, v->pos);
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
	v->pos = SLOT_FREE;
	v->gen++;
	if (v->gen == 0)
		v->gen = 1;
	v->next = e->free_head;
	e->free_head = s;
}

static void heap_remove_at(struct sim_engine *e, uint32_t i)
{
	uint32_t last = e->heap[--e->len];
	if (i == e->len)
		return;
	e->heap[i] = last;
	e->ev[last].pos = i;
	heap_down(e, i);
	heap_up(e, e->ev[last].pos);
}

bool sim_cancel(struct sim_engine *e, sim_event_id id)
{
	uint32_t s = (uint32_t)(id & 0xffffffffu), gen = (uint32_t)(id >> 32);
	if (id == 0 || s >= e->cap || e->ev[s].gen != gen || e->ev[s].pos == SLOT_FREE)
		return false;
	heap_remove_at(e, e->ev[s].pos);
	slot_free(e, s);
	return true;
}

simtime_ps sim_next_time(const struct sim_engine *e)
{
	return e->len ? e->ev[e->heap[0]].t : TS_SIMTIME_MAX;
}

void sim_stop(struct sim_engine *e)
{
	e->stop = true;
}

uint64_t sim_run(struct sim_engine *e, simtime_ps until)
{
	uint64_t n = 0;
	e->stop = false;
	while (e->len > 0 && !e->stop) {
		uint32_t s = e->heap[0];
		struct sim_event v = e->ev[s];
		if (v.t > until)
			break;
		TS_ASSERT(v.t >= e->now); /* time never goes backwards */
		heap_remove_at(e, 0);
		slot_free(e, s);
		e->now = v.t; /* set before the handler runs */
		v.h(e, v.ctx, v.arg);
		n++;
	}
	e->fired += n;
	return n;
}
