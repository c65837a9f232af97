/* engine.c: the discrete-event core.
 *
 * Events fire in (time ps, insertion order): equal times fire in the order
 * they were scheduled, so runs are deterministic (git's prio-queue contract;
 * htsim's picosecond clock). The queue is a radix heap (Ahuja, Mehlhorn,
 * Orlin and Tarjan 1990; the one-level, XOR-bucket form of Mehlhorn and
 * Sanders, "Algorithms and Data Structures: The Basic Toolbox", §10.5): a
 * monotone priority queue for integer keys, which a simulator clock is
 * (nothing is ever scheduled before now).
 *
 * Invariants:
 *   - every pending event is in exactly one bucket (bit j of nonempty is set
 *     iff bucket j holds events; head/tail are meaningful only then): bucket 0 if its time
 *     equals now, else bucket bitlen(t XOR now) (1..63); so every time in
 *     bucket j is smaller than every time in bucket j' > j;
 *   - each bucket is a FIFO list in insertion order. An event enters a
 *     bucket's tail when scheduled; when bucket 0 runs dry, the lowest
 *     non-empty bucket i is emptied into the buckets below i relative to its
 *     minimum time, which becomes now. Those buckets are empty at that
 *     moment and everything moved is older than anything scheduled later,
 *     so list order stays insertion order, and bucket 0 (all at time now)
 *     fires first-in first-out: the (time, insertion sequence) order of a
 *     heap with a sequence tie-break, without storing sequences;
 *   - events (handler, context, argument; time and links apart) live in a pool that
 *     grows by doubling and is reused through a free list (htsim's PacketDB
 *     idea): no malloc per event, and no allocation inside sim_run (buckets
 *     are intrusive doubly linked lists through the pool);
 *   - a handle is (generation << 32 | slot); a slot's generation changes
 *     whenever it is freed, so a stale handle never matches.
 * Cost: schedule O(1); cancel O(1) (unlinked at once, slot freed); an event
 * is moved at most 63 times between buckets over its life (its bucket index
 * only decreases), in practice one or two times (events are scheduled a
 * few µs ahead: times differ from now in their ~20 low bits); each bucket
 * keeps its minimum, so a redistribution is one pass over its list (two
 * when a cancel took the minimum out). */
#include <stdlib.h>

#include "sim/sim.h"

#define SLOT_NONE UINT32_MAX

struct sim_event {
	sim_handler h;        /* handler, NULL while the slot is free */
	void *ctx;            /* handler context (not owned) */
	uint64_t arg;         /* handler argument */
	uint32_t gen;         /* generation of this slot, count */
};

/* The queue side of a pool slot, apart from the payload so that walking a
 * bucket touches 16 bytes per event. */
struct sim_qlink {
	simtime_ps t;         /* fire time, ps */
	uint32_t next;        /* next in its bucket, or in the free list (SLOT_NONE at the end) */
	uint32_t prev;        /* previous in its bucket (SLOT_NONE at the head) */
};

void sim_engine_init(struct sim_engine *e)
{
	struct sim_engine z = SIM_ENGINE_INIT;
	*e = z;
}

void sim_engine_release(struct sim_engine *e)
{
	free(e->ev);
	free(e->lk);
	sim_engine_init(e);
}

/* The bucket of time t relative to base (t >= base): 0 when equal, else the
 * bit length of t XOR base. */
static inline int bucket_of(simtime_ps t, simtime_ps base)
{
	uint64_t x = (uint64_t)t ^ (uint64_t)base;
	return x ? 64 - __builtin_clzll(x) : 0;
}

static inline bool b_empty(const struct sim_engine *e, int j)
{
	return !(e->nonempty & ((uint64_t)1 << j));
}

static inline void b_append(struct sim_engine *e, int j, uint32_t s)
{
	struct sim_qlink *v = &e->lk[s];
	v->next = SLOT_NONE;
	if (b_empty(e, j)) {
		v->prev = SLOT_NONE;
		e->head[j] = s;
		e->bmin[j] = v->t;
		e->nonempty |= (uint64_t)1 << j;
	} else {
		v->prev = e->tail[j];
		e->lk[e->tail[j]].next = s;
		if (v->t < e->bmin[j])
			e->bmin[j] = v->t;
	}
	e->tail[j] = s;
}

static inline void b_unlink(struct sim_engine *e, int j, uint32_t s)
{
	struct sim_qlink *v = &e->lk[s];
	if (v->prev != SLOT_NONE)
		e->lk[v->prev].next = v->next;
	else
		e->head[j] = v->next;
	if (v->next != SLOT_NONE)
		e->lk[v->next].prev = v->prev;
	else
		e->tail[j] = v->prev;
	if (v->prev == SLOT_NONE && v->next == SLOT_NONE) {
		e->nonempty &= ~((uint64_t)1 << j);
		e->bmin_stale &= ~((uint64_t)1 << j);
	} else if (v->t == e->bmin[j])
		e->bmin_stale |= (uint64_t)1 << j; /* recomputed when needed */
}

static int grow(struct sim_engine *e)
{
	uint32_t ncap = e->cap ? e->cap * 2 : 1024, i;
	struct sim_event *ev;
	struct sim_qlink *lk;
	if (ncap <= e->cap || ncap > (1u << 30))
		return TS_ENOMEM;
	ev = realloc(e->ev, (size_t)ncap * sizeof(*ev));
	if (!ev)
		return TS_ENOMEM;
	e->ev = ev;   /* larger than cap until lk follows: harmless */
	lk = realloc(e->lk, (size_t)ncap * sizeof(*lk));
	if (!lk)
		return TS_ENOMEM;
	e->lk = lk;
	/* New slots go on the free list in index order (deterministic reuse);
	 * the list is empty here (every slot was in use). */
	for (i = ncap; i-- > e->cap;) {
		ev[i].h = NULL;
		ev[i].gen = 1;
		lk[i].next = i + 1 < ncap ? i + 1 : SLOT_NONE;
	}
	e->free_head = e->cap;
	e->cap = ncap;
	return 0;
}

sim_event_id sim_at(struct sim_engine *e, simtime_ps t, sim_handler h, void *ctx, uint64_t arg)
{
	uint32_t s;
	struct sim_event *v;
	TS_ASSERT(t >= e->now);
	TS_ASSERT(h != NULL);
	if (e->len == e->cap && grow(e)) /* every slot in use: the free list is empty */
		return 0;
	s = e->free_head;
	v = &e->ev[s];
	e->free_head = e->lk[s].next;
	v->h = h;
	v->ctx = ctx;
	v->arg = arg;
	e->lk[s].t = t;
	b_append(e, bucket_of(t, e->now), s);
	e->len++;
	return ((uint64_t)v->gen << 32) | s;
}

sim_event_id sim_after(struct sim_engine *e, simtime_ps delay, sim_handler h, void *ctx,
		       uint64_t arg)
{
	TS_ASSERT(delay >= 0);
	/* saturating: past the largest time it stays there (callers refuse
	 * such runs as beyond their horizon) */
	return sim_at(e, delay > TS_SIMTIME_MAX - e->now ? TS_SIMTIME_MAX : e->now + delay, h, ctx,
		      arg);
}

static void slot_free(struct sim_engine *e, uint32_t s)
{
	struct sim_event *v = &e->ev[s];
	v->h = NULL;
	v->gen++;
	if (v->gen == 0)
		v->gen = 1;
	e->lk[s].next = e->free_head;
	e->free_head = s;
	e->len--;
}

bool sim_cancel(struct sim_engine *e, sim_event_id id)
{
	uint32_t s = (uint32_t)(id & 0xffffffffu), gen = (uint32_t)(id >> 32);
	if (id == 0 || s >= e->cap || e->ev[s].gen != gen || e->ev[s].h == NULL)
		return false;
	b_unlink(e, bucket_of(e->lk[s].t, e->now), s);
	slot_free(e, s);
	return true;
}

/* Smallest time in bucket j (non-empty), ps: kept on append, rescanned
 * after a cancel took the minimum out. */
static simtime_ps bucket_min(const struct sim_engine *e, int j)
{
	simtime_ps m = TS_SIMTIME_MAX;
	uint32_t s;
	if (!(e->bmin_stale & ((uint64_t)1 << j)))
		return e->bmin[j];
	for (s = e->head[j]; s != SLOT_NONE; s = e->lk[s].next)
		if (e->lk[s].t < m)
			m = e->lk[s].t;
	return m;
}

simtime_ps sim_next_time(const struct sim_engine *e)
{
	uint64_t rest;
	if (e->len == 0)
		return TS_SIMTIME_MAX;
	if (!b_empty(e, 0))
		return e->now;
	rest = e->nonempty & ~(uint64_t)1;
	return bucket_min(e, __builtin_ctzll(rest));
}

/* Bucket 0 is empty and events are pending: empty the lowest non-empty
 * bucket into the ones below relative to its minimum, which becomes now.
 * Returns false, changing nothing, when that minimum is after until. */
static bool settle(struct sim_engine *e, simtime_ps until)
{
	int i = __builtin_ctzll(e->nonempty & ~(uint64_t)1);
	simtime_ps m = bucket_min(e, i);
	uint32_t s;
	if (m > until)
		return false;
	TS_ASSERT(m >= e->now); /* time never goes backwards */
	s = e->head[i];
	e->nonempty &= ~((uint64_t)1 << i);
	e->bmin_stale &= ~((uint64_t)1 << i);
	while (s != SLOT_NONE) {
		uint32_t nx = e->lk[s].next;
		b_append(e, bucket_of(e->lk[s].t, m), s);
		s = nx;
	}
	TS_ASSERT(!b_empty(e, 0)); /* m was an event's time */
	e->now = m; /* set before the handler runs */
	return true;
}

bool sim_peek_next(const struct sim_engine *e, sim_handler h, uint64_t *arg)
{
	const struct sim_event *v;
	if (b_empty(e, 0))
		return false;
	v = &e->ev[e->head[0]];
	if (v->h != h)
		return false;
	*arg = v->arg;
	return true;
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
		uint32_t s;
		struct sim_event *v;
		sim_handler h;
		void *ctx;
		uint64_t arg;
		if (b_empty(e, 0)) {
			if (!settle(e, until))
				break;
		} else if (e->now > until) {
			break;
		}
		s = e->head[0];
		v = &e->ev[s];
		h = v->h;
		ctx = v->ctx;
		arg = v->arg;
		e->head[0] = e->lk[s].next;
		if (e->head[0] != SLOT_NONE)
			e->lk[e->head[0]].prev = SLOT_NONE;
		else
			e->nonempty &= ~(uint64_t)1;
		slot_free(e, s);
		h(e, ctx, arg);
		n++;
	}
	e->fired += n;
	return n;
}
