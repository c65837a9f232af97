/* test_sim_engine.c: the event engine: ordering, ties, cancellation by
 * handle, time monotonicity, determinism. */
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

static Suite *suite(void)
{
	Suite *s = suite_create("sim_engine");
	TCase *tc = tcase_create("engine");
	tcase_add_loop_test(tc, engine_order, 0, (int)TS_ARRAY_LEN(order_cases));
	tcase_add_test(tc, engine_cancel);
	tcase_add_test(tc, engine_until_and_stop);
	tcase_add_test(tc, engine_storm_deterministic);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run(suite());
}
