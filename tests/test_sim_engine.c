/* test_sim_engine.c: the event engine: ordering, ties, cancellation by
 * handle, time monotonicity, determinism, and the radix queue against a
 * reference ordering by (time, insertion sequence). */
#include <stdlib.h>
#include <string.h>

#include "common/rng.h"
#include "sim/sim.h"
#include "testutil.h"

struct rec {
	int log[64];        /* args in firing order */
	simtime_ps at[64];  /* times in firing order */
	int n;              /* fired */
};

static void rec_h(struct sim_engine *e, void *ctx, uint64_t arg)
{
	struct rec *r = ctx;
	ck_assert_int_lt(r->n, 64);
	r->at[r->n] = sim_now(e);
	r->log[r->n++] = (int)arg;
}

/* Table-driven: schedule (time, id) pairs, expect firing order. */
static const struct {
	int n;
	simtime_ps t[6];
	int want[6];
} order_cases[] = {
	{ 3, { 30, 10, 20 }, { 1, 2, 0 } },
	{ 4, { 5, 5, 5, 5 }, { 0, 1, 2, 3 } },             /* ties: insertion order */
	{ 5, { 7, 3, 7, 3, 0 }, { 4, 1, 3, 0, 2 } },
	{ 6, { 1, 0, 1, 0, 1, 0 }, { 1, 3, 5, 0, 2, 4 } },
};

START_TEST(engine_order)
{
	struct sim_engine e;
	struct rec r = { { 0 }, { 0 }, 0 };
	int i;
	sim_engine_init(&e);
	for (i = 0; i < order_cases[_i].n; i++)
		ck_assert(sim_at(&e, order_cases[_i].t[i], rec_h, &r, (uint64_t)i) != 0);
	ck_assert_uint_eq(sim_run(&e, TS_SIMTIME_MAX), (unsigned)order_cases[_i].n);
	ck_assert_int_eq(r.n, order_cases[_i].n);
	for (i = 0; i < r.n; i++) {
		ck_assert_int_eq(r.log[i], order_cases[_i].want[i]);
		ck_assert_int_eq(r.at[i], order_cases[_i].t[order_cases[_i].want[i]]);
	}
	sim_engine_release(&e);
}
END_TEST

START_TEST(engine_cancel)
{
	struct sim_engine e;
	struct rec r = { { 0 }, { 0 }, 0 };
	sim_event_id a, b, c, d;
	sim_engine_init(&e);
	a = sim_at(&e, 10, rec_h, &r, 1);
	b = sim_at(&e, 20, rec_h, &r, 2);
	c = sim_at(&e, 30, rec_h, &r, 3);
	ck_assert(sim_cancel(&e, b));
	ck_assert(!sim_cancel(&e, b)); /* already cancelled */
	ck_assert(!sim_cancel(&e, 0));
	/* b's slot is reused by d: the stale handle b must not cancel d */
	d = sim_at(&e, 25, rec_h, &r, 4);
	ck_assert(!sim_cancel(&e, b));
	sim_run(&e, TS_SIMTIME_MAX);
	ck_assert_int_eq(r.n, 3);
	ck_assert_int_eq(r.log[0], 1);
	ck_assert_int_eq(r.log[1], 4);
	ck_assert_int_eq(r.log[2], 3);
	ck_assert(!sim_cancel(&e, a)); /* fired: stale */
	ck_assert(!sim_cancel(&e, c));
	ck_assert(!sim_cancel(&e, d));
	sim_engine_release(&e);
}
END_TEST

START_TEST(engine_until_and_stop)
{
	struct sim_engine e;
	struct rec r = { { 0 }, { 0 }, 0 };
	sim_engine_init(&e);
	sim_at(&e, 10, rec_h, &r, 1);
	sim_at(&e, 20, rec_h, &r, 2);
	ck_assert_uint_eq(sim_run(&e, 15), 1);
	ck_assert_int_eq(sim_pending(&e), 1);
	ck_assert_uint_eq(sim_run(&e, TS_SIMTIME_MAX), 1);
	ck_assert_int_eq(sim_now(&e), 20);
	sim_engine_release(&e);
}
END_TEST

/* Random storm: handlers schedule and cancel more events; time must never
 * go backwards and the same seed gives the same trace. */
struct storm {
	struct rng g;          /* seeded */
	simtime_ps last;       /* previous firing time, ps */
	uint64_t hash;         /* hash of the trace */
	int budget;            /* events still allowed to be created */
	sim_event_id ids[32];  /* some handles to cancel */
	int backwards;         /* violations seen */
};

static void storm_h(struct sim_engine *e, void *ctx, uint64_t arg)
{
	struct storm *s = ctx;
	int k;
	if (sim_now(e) < s->last)
		s->backwards++;
	s->last = sim_now(e);
	s->hash = rng_hash2(s->hash, (uint64_t)sim_now(e) * 1315423911u + arg);
	for (k = 0; k < 2 && s->budget > 0; k++) {
		simtime_ps d = (simtime_ps)rng_below(&s->g, 5); /* many ties */
		s->budget--;
		s->ids[rng_below(&s->g, 32)] = sim_after(e, d, storm_h, s, (uint64_t)s->budget);
	}
	if (rng_below(&s->g, 4) == 0)
		sim_cancel(e, s->ids[rng_below(&s->g, 32)]);
}

static uint64_t storm_run(uint64_t seed, uint64_t *fired)
{
	struct sim_engine e;
	struct storm s;
	memset(&s, 0, sizeof(s));
	ck_assert_int_eq(rng_init(&s.g, seed), 0);
	s.budget = 200000;
	sim_engine_init(&e);
	sim_at(&e, 0, storm_h, &s, 0);
	*fired = sim_run(&e, TS_SIMTIME_MAX);
	ck_assert_int_eq(s.backwards, 0);
	ck_assert_int_eq(sim_pending(&e), 0);
	sim_engine_release(&e);
	rng_release(&s.g);
	return s.hash;
}

START_TEST(engine_storm_deterministic)
{
	uint64_t f1, f2, f3;
	uint64_t h1 = storm_run(7, &f1), h2 = storm_run(7, &f2), h3 = storm_run(8, &f3);
	ck_assert_uint_gt(f1, 100000);
	ck_assert_uint_eq(h1, h2);
	ck_assert_uint_eq(f1, f2);
	ck_assert(h1 != h3 || f1 != f3);
}
END_TEST

/* The queue against a reference: a flat list of pending events whose next
 * is found by a linear scan for the smallest (time, insertion sequence).
 * Handlers schedule events at delays of 0, a few ps, up to 2^20 ps and up
 * to 2^40 ps (times cross high bit boundaries, so events move between many
 * buckets), cancel live and stale handles, and the driver runs in slices
 * (sim_run with `until`) and schedules between slices at times before the
 * next pending event, which a monotone queue must accept. */
struct refev {
	simtime_ps t;          /* fire time, ps */
	uint64_t seq;          /* insertion sequence */
	sim_event_id h;        /* engine handle */
	bool live;             /* pending in the reference */
};

struct cmp {
	struct sim_engine *e;  /* engine under test */
	struct rng g;          /* seeded */
	struct refev *ev;      /* every event ever scheduled, by id */
	int n, cap;            /* events scheduled, allocated */
	int *pend;             /* ids pending in the reference */
	int npend;             /* count */
	uint64_t seq;          /* next insertion sequence */
	int budget;            /* events still allowed to be created */
	simtime_ps until;      /* the current slice's limit, ps */
	int bad;               /* mismatches seen */
	uint64_t cancels;      /* successful cancels */
};

static int cmp_next(const struct cmp *c)
{
	int k, best = -1;
	for (k = 0; k < c->npend; k++) {
		const struct refev *x = &c->ev[c->pend[k]];
		if (best < 0 || x->t < c->ev[best].t ||
		    (x->t == c->ev[best].t && x->seq < c->ev[best].seq))
			best = c->pend[k];
	}
	return best;
}

static void cmp_drop(struct cmp *c, int id)
{
	int k;
	for (k = 0; k < c->npend; k++)
		if (c->pend[k] == id) {
			c->pend[k] = c->pend[--c->npend];
			break;
		}
	c->ev[id].live = false;
}

static simtime_ps cmp_delay(struct rng *g)
{
	switch (rng_below(g, 4)) {
	case 0:
		return 0;
	case 1:
		return (simtime_ps)rng_below(g, 5);
	case 2:
		return (simtime_ps)rng_below(g, (uint64_t)1 << 20);
	default:
		return (simtime_ps)rng_below(g, (uint64_t)1 << 40);
	}
}

static void cmp_h(struct sim_engine *e, void *ctx, uint64_t arg);

static void cmp_schedule(struct cmp *c, simtime_ps t)
{
	struct refev *x;
	if (c->n == c->cap) {
		c->cap = c->cap ? 2 * c->cap : 1024;
		c->ev = realloc(c->ev, (size_t)c->cap * sizeof(*c->ev));
		c->pend = realloc(c->pend, (size_t)c->cap * sizeof(*c->pend));
		ck_assert(c->ev && c->pend);
	}
	x = &c->ev[c->n];
	x->t = t;
	x->seq = c->seq++;
	x->live = true;
	x->h = sim_at(c->e, t, cmp_h, c, (uint64_t)c->n);
	ck_assert(x->h != 0);
	c->pend[c->npend++] = c->n++;
}

/* Cancel a pending event, or any event ever scheduled (mostly stale). */
static void cmp_cancel_some(struct cmp *c)
{
	int id = rng_below(&c->g, 2) && c->npend > 0
			 ? c->pend[rng_below(&c->g, (uint64_t)c->npend)]
			 : (int)rng_below(&c->g, (uint64_t)c->n);
	bool want = c->ev[id].live;
	if (sim_cancel(c->e, c->ev[id].h) != want)
		c->bad++;
	if (want) {
		cmp_drop(c, id);
		c->cancels++;
	}
}

static void cmp_h(struct sim_engine *e, void *ctx, uint64_t arg)
{
	struct cmp *c = ctx;
	int want = cmp_next(c), k;
	if (want != (int)arg || c->ev[arg].t != sim_now(e) || sim_now(e) > c->until)
		c->bad++;
	cmp_drop(c, (int)arg);
	/* about 1.5 children per event while fewer than 512 are pending */
	for (k = (int)rng_below(&c->g, c->npend < 512 ? 4 : 2); k > 0 && c->budget > 0; k--, c->budget--)
		cmp_schedule(c, sim_now(e) + cmp_delay(&c->g));
	if (rng_below(&c->g, 3) == 0)
		cmp_cancel_some(c);
}

static void cmp_run(uint64_t seed, simtime_ps start)
{
	struct sim_engine e;
	struct cmp c;
	int k, slices = 0;
	memset(&c, 0, sizeof(c));
	ck_assert_int_eq(rng_init(&c.g, seed), 0);
	sim_engine_init(&e);
	c.e = &e;
	c.budget = 30000;
	/* start near a high bit boundary: the first pops cross it */
	sim_at(&e, start, rec_h, &(struct rec){ { 0 }, { 0 }, 0 }, 0);
	ck_assert_uint_eq(sim_run(&e, TS_SIMTIME_MAX), 1);
	for (k = 0; k < 64; k++)
		cmp_schedule(&c, sim_now(&e) + cmp_delay(&c.g));
	while (c.npend > 0) {
		int nx = cmp_next(&c);
		uint64_t fired;
		ck_assert_int_eq(sim_next_time(&e), c.ev[nx].t);
		/* a quarter of the slices stop before the next event (nothing
		 * fires, nothing may move), the rest run past it */
		if (c.ev[nx].t > sim_now(&e) && rng_below(&c.g, 4) == 0)
			c.until = sim_now(&e) + (simtime_ps)rng_below(&c.g, (uint64_t)(c.ev[nx].t - sim_now(&e)));
		else
			c.until = c.ev[nx].t + (simtime_ps)rng_below(&c.g, (uint64_t)1 << 16);
		fired = sim_run(&e, c.until);
		ck_assert((fired > 0) == (c.until >= c.ev[nx].t));
		slices++;
		ck_assert_int_eq((int)sim_pending(&e), c.npend);
		nx = cmp_next(&c);
		ck_assert_int_eq(sim_next_time(&e), nx < 0 ? TS_SIMTIME_MAX : c.ev[nx].t);
		if (nx >= 0)
			ck_assert_int_gt(c.ev[nx].t, c.until);
		/* schedule between now and the next pending event */
		if (nx >= 0 && c.budget > 0 && rng_below(&c.g, 2) == 0) {
			simtime_ps gap = c.ev[nx].t - sim_now(&e);
			cmp_schedule(&c, sim_now(&e) + (simtime_ps)rng_below(&c.g, (uint64_t)gap));
			c.budget--;
		}
		if (nx >= 0 && rng_below(&c.g, 4) == 0)
			cmp_cancel_some(&c);
	}
	ck_assert_int_eq(c.bad, 0);
	ck_assert_int_eq(c.budget, 0);
	ck_assert_uint_gt(c.cancels, 1000);
	ck_assert_int_gt(slices, 100);
	ck_assert_int_eq((int)sim_pending(&e), 0);
	ck_assert_int_eq(sim_next_time(&e), TS_SIMTIME_MAX);
	sim_engine_release(&e);
	rng_release(&c.g);
	free(c.ev);
	free(c.pend);
}

static const struct {
	uint64_t seed;
	simtime_ps start;      /* first event time, ps */
} cmp_cases[] = {
	{ 1, 0 },
	{ 2, ((simtime_ps)1 << 20) - 3 },
	{ 3, ((simtime_ps)1 << 40) - 1 },
	{ 4, ((simtime_ps)1 << 61) - 12345 },
};

START_TEST(engine_matches_reference_order)
{
	cmp_run(cmp_cases[_i].seed, cmp_cases[_i].start);
}
END_TEST

/* sim_peek_next names the event that fires next only when it is due now
 * and runs the given handler. */
struct peek {
	int n;                 /* handled */
	int seen[8];           /* per handled event: peeked argument + 1, or 0 */
};

static void peek_h(struct sim_engine *e, void *ctx, uint64_t arg)
{
	struct peek *p = ctx;
	uint64_t a = 99;
	ck_assert_int_lt(p->n, 8);
	p->seen[p->n++] = sim_peek_next(e, peek_h, &a) ? (int)a + 1 : 0;
	if (!p->seen[p->n - 1])
		ck_assert_uint_eq(a, 99); /* untouched when false */
	(void)arg;
}

static void peek_h2(struct sim_engine *e, void *ctx, uint64_t arg)
{
	peek_h(e, ctx, arg);
}

START_TEST(engine_peek_next)
{
	struct sim_engine e;
	struct peek p = { 0, { 0 } };
	uint64_t a;
	sim_engine_init(&e);
	ck_assert(!sim_peek_next(&e, peek_h, &a));
	sim_at(&e, 10, peek_h, &p, 1);
	sim_at(&e, 10, peek_h, &p, 2);  /* due with 1: seen from 1 */
	sim_at(&e, 10, peek_h2, &p, 3); /* another handler: not seen from 2 */
	sim_at(&e, 20, peek_h, &p, 4);  /* not due at 10: not seen from 3 */
	sim_at(&e, 20, peek_h, &p, 5);  /* due with 4 */
	sim_run(&e, TS_SIMTIME_MAX);
	ck_assert_int_eq(p.n, 5);
	ck_assert_int_eq(p.seen[0], 3);
	ck_assert_int_eq(p.seen[1], 0);
	ck_assert_int_eq(p.seen[2], 0);
	ck_assert_int_eq(p.seen[3], 6);
	ck_assert_int_eq(p.seen[4], 0);
	sim_engine_release(&e);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("sim_engine");
	TCase *tc = tcase_create("engine");
	tcase_add_loop_test(tc, engine_order, 0, (int)TS_ARRAY_LEN(order_cases));
	tcase_add_test(tc, engine_cancel);
	tcase_add_test(tc, engine_until_and_stop);
	tcase_add_test(tc, engine_storm_deterministic);
	tcase_add_loop_test(tc, engine_matches_reference_order, 0, (int)TS_ARRAY_LEN(cmp_cases));
	tcase_add_test(tc, engine_peek_next);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run(suite());
}
