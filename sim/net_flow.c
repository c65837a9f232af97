/* net_flow.c: the flow model: max-min fair sharing of link capacity.
 *
 * A transfer is a flow along a fixed path. While it moves data its rate is
 * its max-min fair share (progressive filling / water-filling,
 * Bertsekas & Gallager "Data Networks" §6.5.2; SimGrid's LMM solver,
 * network_simulators.md §4.2). A link's capacity is its line rate times
 * the payload fraction mtu/(mtu+overhead) (hardware.md "Packets and MTU").
 * A spread flow (sim_net_send_paths, simf_send_spread: a transfer sprayed evenly over
 * several paths) lists each link once with a coefficient, the fraction of
 * its paths that cross it: at rate r it loads that link with c x r, and
 * the water-filling counts it there as c flows (a linear max-min
 * with coefficients; every path moves the same share, as packets sprayed
 * round-robin do).
 *
 * Timeline of one flow: start delay (software latency) -> data moves at its
 * current rate -> the last byte arrives one path latency (sum of link
 * latencies: pipelined, first byte latency) after it left -> done().
 *
 * Rates are recomputed when a flow starts or ends, only for the part of
 * the fabric that can feel it, and at most once per instant: changes mark
 * links dirty and one solve event is queued at the current time, after the
 * events already queued for it. The part re-solved: the flows of the dirty
 * links, then onward through saturated links to the flows bottlenecked
 * there (an unsaturated link couples nobody; a slower flow on a
 * saturated link is bottlenecked elsewhere); other links on
 * those flows' paths enter as boundary links with the capacity the outside
 * flows leave. If the new rates saturate a boundary link on which an
 * outside flow is faster than the
 * component's flows there, that link joins fully and the part is solved
 * again, so every flow keeps a bottleneck (exact max-min).
 * Completion events are cancelled and reinserted (by handle) only for
 * flows whose rate changed. Shortcuts that give the same rates: a flow
 * that starts alone on every link of its path gets the smallest capacity
 * there at once (nothing else to re-rate), and a link that a flow leaves
 * empty is not marked dirty (nobody to re-rate through it). A spread flow
 * crosses hundreds of links, mostly unsaturated, and marking them all
 * pulled all their flows into each solve, so it does less: its end marks
 * only the links it leaves saturated (on an unsaturated link no flow is
 * bottlenecked, so no rate can grow there), its solve queued at its time
 * all the same (coalesced ends' marked links are re-rated then), and its
 * start marks none: it joins the solve by itself (join_flow), its links
 * enter as any joining flow's do (a saturated one brings the flows
 * bottlenecked there), and the exactness check brings any faster flow on
 * a link it fills (the sprayed 16,384-GPU benchmark plan took 56 s, now
 * 17 s, the same iteration time). A single-path flow still marks every
 * link it enters and leaves: the end rule is as exact there, but saves
 * about 10 % (a 64-node tree all-reduce) and reorders ties among the
 * events of an instant, which moves chunked pipelines within their
 * numerical noise (a 128-rank LL128 tree at 64 MiB 515.06 -> 512.61 us,
 * as a 1-5 ps shift of every completion does: 512.28-515.00 us) and
 * figures quoted at their fifth digit (the quick start 12.031236 ->
 * 12.031364 s).
 *
 * Memory layout (the model is bound by cache misses on large fabrics: a
 * 16k-GPU fat-tree has 197k links and millions of flows pass through):
 * each link's persistent state is one 64-byte line that holds its
 * capacity, load, latency and its first two flow entries (longer lists
 * move to the heap); a solve keeps its working values per link in a dense
 * array (struct qlk) indexed by the link's place in the solve; a flow keeps
 * what the solver reads in its first cache line, then its path as (link,
 * position in that link's list) pairs. Flows that start at the same
 * instant after the same delay share one start event (a batch).
 *
 * Invariants: a flow is on the per-link lists of its path exactly while it
 * is ACTIVE; rem_bytes is exact at time last_ps; the solve event is pending
 * iff ndirty > 0, nseed > 0 or the flag solve_pending is set; load_Bps of a link is
 * the sum of the rates of the flows on it (each crossing counted; a spread
 * flow's times its coefficient there) up to rounding. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim_int.h"

enum { F_FREE, F_WAIT, F_ACTIVE, F_ARRIVING };

struct fhop {
	int32_t link;                  /* link id */
	int32_t pos;                   /* its index in that link's flow list while ACTIVE
	                                * (-1: not listed, after a failed allocation) */
};

struct flow {
	/* first cache line: what the solver reads */
	_Alignas(64) double rate_Bps;  /* current rate, bytes/s */
	double old_Bps;                /* rate before the current solve, bytes/s */
	double rem_bytes;              /* not yet sent at last_ps, bytes */
	double cap_Bps;                /* own rate limit (TCP host copy), 0 = none */
	simtime_ps last_ps;            /* when rem_bytes was exact, ps */
	sim_event_id ev;               /* pending send-complete or delivery event (0: none) */
	uint32_t mark;                 /* component epoch */
	uint32_t fixed;                /* water-filling generation that fixed it */
	int32_t loc;                   /* index in the current solve's flow list */
	int32_t hops;                  /* path length, links */
	/* second line on */
	struct fhop *xp;               /* the path when longer than TOPO_MAX_HOPS
	                                * (coupled rings) or spread (its coefficients
	                                * follow it: fcoef), owned; else NULL */
	uint8_t state;                 /* F_* */
	uint8_t coal;                  /* its end may be coalesced (sim_net.coalesce_sends), flag */
	uint8_t spread;                /* its links carry coefficients (after the path in xp) */
	int32_t next;                  /* free list, or the next flow of its start batch */
	struct fhop ip[TOPO_MAX_HOPS]; /* the path (up to TOPO_MAX_HOPS links) */
	/* cold: at the start and the end only */
	double bytes;                  /* payload, bytes */
	simtime_ps prop_ps;            /* path latency, ps (set when it starts moving) */
	sim_xfer_done done;            /* callback */
	sim_xfer_done left;            /* when the last byte has left (sim_net.on_left), or NULL */
	void *ctx;                     /* callback context (not owned) */
	uint64_t arg;                  /* callback argument */
};

/* A flow's path. */
static inline struct fhop *fhops(struct flow *f) { return f->xp ? f->xp : f->ip; }
static inline const struct fhop *cfhops(const struct flow *f) { return f->xp ? f->xp : f->ip; }
/* A spread flow's coefficients per hop (stored after its path), or NULL:
 * every hop 1. */
static inline const double *fcoef(const struct flow *f)
{
	return f->spread ? (const double *)(const void *)(f->xp + f->hops) : NULL;
}

/* Warm a flow's first lines (scalars, the start of its path) before use. */
static inline void prefetch_flow(const struct flow *f)
{
	__builtin_prefetch(f, 1);
	__builtin_prefetch((const char *)f + 64, 1);
	__builtin_prefetch((const char *)f + 128, 1);
}

struct lent {
	int32_t f;                     /* flow id */
	int32_t h;                     /* the hop of its path that is this link */
};

#define LINL 2 /* flow entries kept inside a link's line */

/* A link's persistent state: one cache line. */
struct lstate {
	double cap_Bps;                /* usable capacity, bytes/s */
	double load_Bps;               /* sum of its flows' rates, bytes/s */
	simtime_ps lat_ps;             /* latency, ps */
	struct lent *on;               /* active flows: inl, or owned when ncap > LINL */
	int32_t n, ncap;               /* entries in on, allocated (count) */
	uint32_t lmark;                /* solve epoch that took it */
	int32_t loc;                   /* its index in that solve's link array */
	struct lent inl[LINL];         /* the first entries */
};

/* A link's working values during one solve (dense: the water-filling
 * loops touch these, not the fabric-wide link array). */
struct qlk {
	double cap_Bps;                /* usable capacity, bytes/s */
	double load_Bps;               /* load before the solve, bytes/s */
	double csum_Bps;               /* component flows' old rates (per crossing), bytes/s */
	double rem_Bps;                /* unallocated capacity, bytes/s */
	double fsum_Bps;               /* rates fixed on it in this fill (per crossing), bytes/s */
	int32_t link;                  /* link id */
	int32_t ncomp;                 /* component flows on it (per crossing), count */
	int32_t nunf;                  /* of those, not yet fixed, count */
	double wcomp, wunf;            /* their coefficients' sums (= the counts when
	                                * no spread flow is among them) */
	uint32_t touch;                /* filling level that last changed it */
	int32_t hpos;                  /* its entry in the heap, -1 none */
	bool full;                     /* joined with all its flows */
};

struct hent {
	double share;                  /* remaining capacity / unfixed flows' coefficients, bytes/s */
	int32_t link;                  /* link id (ties: the lower first) */
	int32_t loc;                   /* its index in the solve's link array */
};

struct sim_flow_state {
	struct lstate *L;              /* per link, 64-byte aligned */
	struct flow *fl;               /* flow pool, 64-byte aligned */
	int32_t nfl, capfl, free_head; /* used slots, allocated, free list */
	int32_t nactive;               /* ACTIVE flows, count */
	simtime_ps bt;                 /* start time of the open start batch, ps */
	int32_t bhead, btail;          /* its first and last flow, -1 when none is open */
	struct qlk *Q;                 /* the solve's links (component and boundary) */
	int32_t nql, capQ;             /* count, allocated */
	int32_t *qflows;               /* the solve's flows */
	int32_t nqf, capqf;            /* count, allocated */
	int32_t *qfull;                /* links (Q index) whose flows are to join */
	int32_t nqfull, capqfull;      /* count, allocated */
	int32_t *touched;              /* links (Q index) changed in the current level */
	int32_t ntouched, captouched;  /* count, allocated */
	uint32_t level;                /* filling level counter */
	bool scan;                     /* small fill: find the bottleneck by scanning, no heap */
	int32_t *act;                  /* scanning: links (Q index) with unfixed flows */
	int32_t capact;                /* allocated */
	int32_t *uf;                   /* union-find over the solve's flows */
	int32_t *lgrp;                 /* per solve link: a flow (loc) on it, then its group */
	int32_t *cnt;                  /* per group: counting-sort offsets */
	int32_t *sflows, *slinks;      /* flows (ids) and links (Q index) sorted by group */
	int32_t capuf, caplg, capcnt, capsf, capsl; /* allocated */
	int32_t *dirty;                /* links changed since the last solve */
	int32_t ndirty, capdirty;      /* count, allocated */
	int32_t *seed;                 /* spread flows started since the last solve */
	int32_t nseed, capseed;        /* count, allocated */
	uint32_t epoch;                /* solve epoch, count */
	bool solve_pending;            /* a solve event is queued */
	simtime_ps solve_t;            /* when, ps */
	sim_event_id solve_id;         /* its event */
	uint32_t fixgen;               /* water-filling generation, count */
	struct hent *heap;             /* water-filling heap */
	int32_t nheap, capheap;        /* entries, allocated */
	bool oom;                      /* an allocation failed inside an event */
};

_Static_assert(sizeof(struct lstate) == 64, "a link's state is one cache line");
_Static_assert(sizeof(struct flow) % 64 == 0, "flows start on cache lines");

static int grow_i32(int32_t **a, int32_t *cap, int32_t need)
{
	int32_t nc;
	int32_t *p;
	if (need <= *cap)
		return 0;
	nc = *cap ? *cap : 16;
	while (nc < need)
		nc *= 2;
	p = realloc(*a, (size_t)nc * sizeof(**a));
	if (!p)
		return TS_ENOMEM;
	*a = p;
	*cap = nc;
	return 0;
}

/* Room for one more entry on link l's list. */
static int lgrow(struct lstate *l)
{
	int32_t nc = l->ncap * 2;
	struct lent *p;
	if (l->on == l->inl) {
		p = malloc((size_t)nc * sizeof(*p));
		if (p)
			memcpy(p, l->inl, sizeof(l->inl));
	} else {
		p = realloc(l->on, (size_t)nc * sizeof(*p));
	}
	if (!p)
		return TS_ENOMEM;
	l->on = p;
	l->ncap = nc;
	return 0;
}

int simf_init(struct sim_net *n, struct ts_error *err)
{
	struct sim_flow_state *s = calloc(1, sizeof(*s));
	int32_t L = n->nlinks ? n->nlinks : 1, i;
	if (!s)
		return ts_error_set(err, TS_ENOMEM, "out of memory for the flow model");
	n->flow = s;
	s->free_head = -1;
	s->bhead = s->btail = -1;
	s->L = aligned_alloc(64, (size_t)L * sizeof(*s->L));
	if (!s->L)
		return ts_error_set(err, TS_ENOMEM, "out of memory for the flow model");
	memset(s->L, 0, (size_t)L * sizeof(*s->L));
	for (i = 0; i < L; i++) {
		s->L[i].on = s->L[i].inl;
		s->L[i].ncap = LINL;
	}
	for (i = 0; i < n->nlinks; i++) {
		s->L[i].cap_Bps = n->links[i].bw_Bps * simn_payload_eff(&n->links[i]);
		s->L[i].lat_ps = n->links[i].lat_ps;
	}
	return 0;
}

void simf_release(struct sim_net *n)
{
	struct sim_flow_state *s = n->flow;
	int32_t i;
	if (!s)
		return;
	for (i = 0; s->L && i < n->nlinks; i++)
		if (s->L[i].on != s->L[i].inl)
			free(s->L[i].on);
	for (i = 0; s->fl && i < s->nfl; i++)
		free(s->fl[i].xp);
	free(s->L);
	free(s->Q);
	free(s->qflows);
	free(s->qfull);
	free(s->touched);
	free(s->act);
	free(s->uf);
	free(s->lgrp);
	free(s->cnt);
	free(s->sflows);
	free(s->slinks);
	free(s->dirty);
	free(s->seed);
	free(s->heap);
	free(s->fl);
	free(s);
	n->flow = NULL;
}

static int32_t flow_alloc(struct sim_flow_state *s)
{
	int32_t id;
	if (s->free_head >= 0) {
		id = s->free_head;
		s->free_head = s->fl[id].next;
		return id;
	}
	if (s->nfl == s->capfl) {
		int32_t nc = s->capfl ? s->capfl * 2 : 256;
		struct flow *p = aligned_alloc(64, (size_t)nc * sizeof(*p));
		if (!p)
			return -1;
		if (s->nfl)
			memcpy(p, s->fl, (size_t)s->nfl * sizeof(*p));
		free(s->fl);
		s->fl = p;
		s->capfl = nc;
	}
	return s->nfl++;
}

static void flow_free(struct sim_flow_state *s, int32_t id)
{
	free(s->fl[id].xp);
	s->fl[id].xp = NULL;
	s->fl[id].state = F_FREE;
	s->fl[id].next = s->free_head;
	s->free_head = id;
}

static void solve_ev(struct sim_engine *e, void *ctx, uint64_t arg);

/* Queue a solve at time t >= now (once: one queued earlier or at t
 * stands; a later one moves to t), after the events already queued for
 * that instant. */
static void queue_solve_at(struct sim_net *n, simtime_ps t)
{
	struct sim_flow_state *s = n->flow;
	if (s->solve_pending) {
		if (s->solve_t <= t)
			return;
		sim_cancel(n->eng, s->solve_id);
	}
	s->solve_id = sim_at(n->eng, t, solve_ev, n, 0);
	if (!s->solve_id) {
		s->oom = true;
		return;
	}
	s->solve_pending = true;
	s->solve_t = t;
}

/* Queue the solve of the current instant. */
static void queue_solve(struct sim_net *n)
{
	queue_solve_at(n, n->eng->now);
}

/* Link l changed: re-rate through it at time t. */
static void mark_dirty_at(struct sim_net *n, int32_t l, simtime_ps t)
{
	struct sim_flow_state *s = n->flow;
	if (s->ndirty == s->capdirty && grow_i32(&s->dirty, &s->capdirty, s->ndirty + 1)) {
		s->oom = true;
		return;
	}
	s->dirty[s->ndirty++] = l;
	queue_solve_at(n, t);
}

static void mark_dirty(struct sim_net *n, int32_t l)
{
	mark_dirty_at(n, l, n->eng->now);
}

static void sent_ev(struct sim_engine *e, void *ctx, uint64_t arg);

static void activate(struct sim_net *n, int32_t id)
{
	struct sim_flow_state *s = n->flow;
	struct flow *f = &s->fl[id];
	struct fhop *hp = fhops(f);
	const double *xc = fcoef(f);
	simtime_ps prop = 0;
	double r = INFINITY, pspread = 0;
	bool alone = true;
	int32_t h;
	f->state = F_ACTIVE;
	f->last_ps = n->eng->now;
	f->rate_Bps = 0;
	f->fixed = 0;
	f->ev = 0;
	for (h = 0; h < f->hops; h++)
		__builtin_prefetch(&s->L[hp[h].link], 1); /* the misses overlap */
	for (h = 0; h < f->hops; h++) {
		struct lstate *l = &s->L[hp[h].link];
		double c = xc ? xc[h] : 1;
		prop += l->lat_ps;
		pspread += (double)l->lat_ps * c;
		if (l->n == l->ncap && lgrow(l)) {
			s->oom = true;
			hp[h].pos = -1;
			alone = false;
			continue;
		}
		hp[h].pos = l->n;
		l->on[l->n].f = id;
		l->on[l->n].h = h;
		l->n++;
		alone = alone && l->n == 1;
		if (l->cap_Bps / c < r)
			r = l->cap_Bps / c;
	}
	/* a spread flow's last byte arrives after its paths' mean latency */
	f->prop_ps = xc ? (simtime_ps)llround(pspread) : prop;
	s->nactive++;
	if (alone) {
		/* Alone on every link of its path (none crossed twice): its
		 * max-min rate is the smallest capacity there, or its own cap,
		 * and no other flow's rate changes: nothing to solve. The
		 * instant's solve is still queued, so that an event queued
		 * after this start sees the rates after every start of the
		 * instant (sim_int.h, simf_rate_Bps); one that reaches this
		 * flow gives it the same rate. */
		if (f->cap_Bps > 0 && f->cap_Bps < r)
			r = f->cap_Bps;
		f->rate_Bps = f->old_Bps = r;
		for (h = 0; h < f->hops; h++)
			s->L[hp[h].link].load_Bps = xc ? r * xc[h] : r;
		f->ev = sim_after(n->eng, simn_ps_for(f->rem_bytes, r), sent_ev, n,
			       (uint64_t)id);
		if (!f->ev)
			s->oom = true;
		queue_solve(n);
		return;
	}
	if (xc && !s->oom) {
		/* a spread flow joins the solve by itself (join_flow): its links
		 * enter as any joining flow's do, so only saturated ones bring
		 * their flows, and the exactness check brings the faster flows
		 * on a link it fills */
		if (s->nseed == s->capseed && grow_i32(&s->seed, &s->capseed, s->nseed + 1)) {
			s->oom = true;
			return;
		}
		s->seed[s->nseed++] = id;
		queue_solve(n);
		return;
	}
	for (h = 0; h < f->hops; h++)
		if (hp[h].pos >= 0)
			mark_dirty(n, hp[h].link);
}

/* Take flow id off its links; the flows left there are re-rated at time
 * t (now, or later when ends are coalesced). */
static void deactivate(struct sim_net *n, int32_t id, simtime_ps t)
{
	struct sim_flow_state *s = n->flow;
	struct flow *f = &s->fl[id];
	const struct fhop *hp = fhops(f);
	const double *xc = fcoef(f);
	int32_t h;
	bool left = false;             /* it leaves flows on a link it does not mark */
	for (h = 0; h < f->hops; h++)
		__builtin_prefetch(&s->L[hp[h].link], 1);
	for (h = 0; h < f->hops; h++) {
		struct lstate *l = &s->L[hp[h].link];
		int32_t pos = hp[h].pos, last;
		bool mark;
		if (pos < 0)
			continue;
		/* a spread flow re-rates through the links it leaves saturated
		 * only (take_link's test); a single-path one through all */
		mark = !xc || l->load_Bps >= l->cap_Bps * (1 - 1e-7);
		l->load_Bps -= xc ? f->rate_Bps * xc[h] : f->rate_Bps;
		if (l->n == 1)
			l->load_Bps = 0; /* no drift on an idle link */
		last = --l->n;
		if (pos != last) {
			/* the last entry fills the hole; fix its back-pointer (O(1):
			 * entries know their hop, even on a path that crosses this
			 * link several times) */
			struct lent m = l->on[last];
			l->on[pos] = m;
			fhops(&s->fl[m.f])[m.h].pos = pos;
		}
		if (l->n > 0 && mark)
			mark_dirty_at(n, hp[h].link, t); /* an idle link re-rates nobody */
		else if (l->n > 0)
			left = true;
	}
	/* the solve at t stands all the same: it is when the links that
	 * other coalesced ends marked for later are re-rated too (found by
	 * review: without it those ends kept their whole delay, and in its
	 * random harness the last end came out 1e-4 later at the default
	 * window) */
	if (left)
		queue_solve_at(n, t);
	s->nactive--;
}

static void deliver_ev(struct sim_engine *e, void *ctx, uint64_t arg)
{
	struct sim_net *n = ctx;
	struct sim_flow_state *s = n->flow;
	struct flow *f = &s->fl[arg];
	sim_xfer_done done = f->done, left = f->left;
	void *dctx = f->ctx;
	uint64_t darg = f->arg;
	(void)e;
	n->st.bytes_delivered += f->bytes;
	n->st.xfers_done++;
	flow_free(s, (int32_t)arg);
	if (left)
		left(dctx, darg); /* same GPU: nothing left before */
	if (done)
		done(dctx, darg);
}

static void sent_ev(struct sim_engine *e, void *ctx, uint64_t arg)
{
	struct sim_net *n = ctx;
	struct flow *f = &n->flow->fl[arg];
	uint64_t nx;
	if (sim_peek_next(e, sent_ev, &nx))
		prefetch_flow(&n->flow->fl[nx]); /* flows often end together */
	f->rem_bytes = 0;
	{
		/* coalesce (sim.h): re-rate the others a fraction of this flow's
		 * own time later, so ends close together share one solve */
		simtime_ps t = e->now;
		if (f->coal && n->par.coalesce > 0 && f->rate_Bps > 0)
			t += time_from_s(n->par.coalesce * f->bytes / f->rate_Bps);
		deactivate(n, (int32_t)arg, t);
	}
	f->state = F_ARRIVING;
	f->ev = sim_after(e, f->prop_ps, deliver_ev, n, arg);
	if (!f->ev)
		n->flow->oom = true;
	if (f->left) {
		/* the last byte has left: the connection's next transfer may
		 * start (it may add flows, so f is not used after) */
		sim_xfer_done left = f->left;
		f->left = NULL;
		left(f->ctx, f->arg);
	}
}

/* A start batch: arg is its first flow; the flows are linked by next. */
static void start_ev(struct sim_engine *e, void *ctx, uint64_t arg)
{
	struct sim_net *n = ctx;
	struct sim_flow_state *s = n->flow;
	int32_t id = (int32_t)arg;
	(void)e;
	if (s->bhead == id)
		s->bhead = s->btail = -1; /* closed: later sends start a new batch */
	while (id >= 0) {
		int32_t nx = s->fl[id].next;
		if (nx >= 0)
			prefetch_flow(&s->fl[nx]);
		activate(n, id);
		id = nx;
	}
}

int simf_send(struct sim_net *n, const int32_t *path, int hops, double bytes,
	      simtime_ps start_delay_ps, sim_xfer_done done, void *ctx, uint64_t arg,
	      int32_t *id_out)
{
	return simf_send_spread(n, path, NULL, hops, bytes, start_delay_ps, done, ctx, arg, id_out);
}

int simf_send_spread(struct sim_net *n, const int32_t *path, const double *coef, int hops,
		     double bytes, simtime_ps start_delay_ps, sim_xfer_done done, void *ctx,
		     uint64_t arg, int32_t *id_out)
{
	struct sim_flow_state *s = n->flow;
	int32_t id = flow_alloc(s);
	struct flow *f;
	struct fhop *hp;
	simtime_ps t;
	int h;
	if (id < 0)
		return TS_ENOMEM;
	f = &s->fl[id];
	f->xp = NULL;
	f->spread = 0;
	if (hops > TOPO_MAX_HOPS || coef) {
		/* the coefficients follow the path (fcoef) */
		f->xp = malloc((size_t)hops * (sizeof(*f->xp) + (coef ? sizeof(double) : 0)));
		if (!f->xp) {
			flow_free(s, id);
			return TS_ENOMEM;
		}
		if (coef) {
			memcpy(f->xp + hops, coef, (size_t)hops * sizeof(double));
			f->spread = 1;
		}
	}
	if (id_out)
		*id_out = id;
	f->rate_Bps = f->old_Bps = 0;
	f->rem_bytes = bytes;
	f->cap_Bps = 0;
	f->last_ps = 0;
	f->ev = 0;
	f->mark = f->fixed = 0;
	f->loc = 0;
	f->hops = hops;
	f->next = -1;
	f->bytes = bytes;
	f->coal = n->coalesce_sends;
	f->prop_ps = 0;
	f->done = done;
	f->left = n->on_left;
	f->ctx = ctx;
	f->arg = arg;
	hp = fhops(f);
	for (h = 0; h < hops; h++) {
		hp[h].link = path[h];
		hp[h].pos = -1;
	}
	if (n->par.tcp_byte_s > 0 && simn_tcp_path(n, path, hops))
		f->cap_Bps = 1 / n->par.tcp_byte_s; /* host copy cost per byte */
	n->st.bytes_sent += bytes;
	n->st.xfers_started++;
	if (hops == 0) {
		/* same GPU: nothing crosses a link */
		f->state = F_ARRIVING;
		f->ev = sim_after(n->eng, start_delay_ps, deliver_ev, n, (uint64_t)id);
		return f->ev ? 0 : TS_ENOMEM;
	}
	f->state = F_WAIT;
	if (start_delay_ps > 0) {
		/* Join the open batch when it starts at the same time (the
		 * transfers of one collective step do): one event for all. The
		 * flows activate in the order they were sent, at the place of
		 * the batch's first; activation only queues the instant's solve,
		 * which runs after all of them either way. */
		t = n->eng->now + start_delay_ps;
		if (s->bhead >= 0 && s->bt == t) {
			s->fl[s->btail].next = id;
			s->btail = id;
			return 0;
		}
		if (!sim_at(n->eng, t, start_ev, n, (uint64_t)id))
			return TS_ENOMEM;
		s->bt = t;
		s->bhead = s->btail = id;
		return 0;
	}
	activate(n, id);
	return s->oom ? TS_ENOMEM : 0;
}

/* ---- water-filling ------------------------------------------------------- */

static bool hless(double sa, int32_t la, double sb, int32_t lb)
{
	return sa < sb || (sa == sb && la < lb);
}

/* The water-filling heap holds at most one entry per link of the fill,
 * kept at its current share (an indexed heap: Q[j].hpos is its place), so
 * a change of share moves the entry instead of adding a stale one. */
static void hset(struct sim_flow_state *s, int32_t i, struct hent e)
{
	s->heap[i] = e;
	s->Q[e.loc].hpos = i;
}

static void hsift_up(struct sim_flow_state *s, int32_t i, struct hent e)
{
	while (i > 0) {
		int32_t p = (i - 1) / 2;
		if (!hless(e.share, e.link, s->heap[p].share, s->heap[p].link))
			break;
		hset(s, i, s->heap[p]);
		i = p;
	}
	hset(s, i, e);
}

static void hsift_down(struct sim_flow_state *s, int32_t i, struct hent e)
{
	for (;;) {
		int32_t c = 2 * i + 1;
		if (c >= s->nheap)
			break;
		if (c + 1 < s->nheap &&
		    hless(s->heap[c + 1].share, s->heap[c + 1].link, s->heap[c].share, s->heap[c].link))
			c++;
		if (!hless(s->heap[c].share, s->heap[c].link, e.share, e.link))
			break;
		hset(s, i, s->heap[c]);
		i = c;
	}
	hset(s, i, e);
}

/* Put e at place i, then up or down to where it belongs. */
static void hplace(struct sim_flow_state *s, int32_t i, struct hent e)
{
	if (i > 0 && hless(e.share, e.link, s->heap[(i - 1) / 2].share, s->heap[(i - 1) / 2].link))
		hsift_up(s, i, e);
	else
		hsift_down(s, i, e);
}

/* Link j (Q index) enters the heap at share, or moves there. */
static void hpush(struct sim_flow_state *s, double share, int32_t j)
{
	struct hent e = { share, s->Q[j].link, j };
	if (s->Q[j].hpos >= 0) {
		hplace(s, s->Q[j].hpos, e);
		return;
	}
	if (s->nheap == s->capheap) {
		int32_t nc = s->capheap ? s->capheap * 2 : 256;
		struct hent *p = realloc(s->heap, (size_t)nc * sizeof(*p));
		if (!p) {
			s->oom = true;
			return;
		}
		s->heap = p;
		s->capheap = nc;
	}
	hsift_up(s, s->nheap++, e);
}

/* Take link j (Q index) out of the heap, if there. */
static void hremove(struct sim_flow_state *s, int32_t j)
{
	int32_t i = s->Q[j].hpos;
	struct hent last;
	if (i < 0)
		return;
	s->Q[j].hpos = -1;
	last = s->heap[--s->nheap];
	if (i < s->nheap)
		hplace(s, i, last);
}

/* Add link l to the solve; returns its index in Q, or -1 when memory ran
 * out. full (a dirty link, or one found to need it): all its flows join.
 * A saturated link: the flows bottlenecked on it (the fastest there)
 * join; slower ones are bottlenecked elsewhere and keep their rates unless the
 * check after filling says otherwise. Any other link is a boundary: its
 * flows keep their rates (an unsaturated link couples nobody). */
static int32_t take_link(struct sim_flow_state *s, int32_t l, uint32_t ep, bool full)
{
	struct lstate *ls = &s->L[l];
	struct qlk *q;
	int32_t j;
	if (ls->lmark == ep) {
		j = ls->loc;
		if (!full || s->Q[j].full)
			return j;
	} else {
		if (s->nql == s->capQ) {
			int32_t nc = s->capQ ? s->capQ * 2 : 256;
			struct qlk *p = realloc(s->Q, (size_t)nc * sizeof(*p));
			if (!p)
				return -1;
			s->Q = p;
			s->capQ = nc;
		}
		j = s->nql++;
		ls->lmark = ep;
		ls->loc = j;
		q = &s->Q[j];
		q->cap_Bps = ls->cap_Bps;
		q->load_Bps = ls->load_Bps;
		q->csum_Bps = 0;
		q->rem_Bps = q->cap_Bps;
		q->fsum_Bps = 0;
		q->link = l;
		q->ncomp = q->nunf = 0;
		q->wcomp = q->wunf = 0;
		q->touch = 0;
		q->hpos = -1;
		q->full = false;
		if (!full && ls->load_Bps >= ls->cap_Bps * (1 - 1e-7)) {
			/* saturated: partial (full stays false) */
			if (grow_i32(&s->qfull, &s->capqfull, s->nqfull + 1))
				return -1;
			s->qfull[s->nqfull++] = j;
		}
	}
	if (full) {
		s->Q[j].full = true;
		if (grow_i32(&s->qfull, &s->capqfull, s->nqfull + 1))
			return -1;
		s->qfull[s->nqfull++] = j;
	}
	return j;
}

/* Flow id joins the solve: its remaining bytes brought up to now at its
 * old rate, its links taken (take_link, not full). */
static int join_flow(struct sim_flow_state *s, int32_t id, uint32_t ep, simtime_ps now)
{
	struct flow *f = &s->fl[id];
	const struct fhop *hp = cfhops(f);
	const double *xc = fcoef(f);
	int h;
	f->mark = ep;
	if (s->nqf == s->capqf && grow_i32(&s->qflows, &s->capqf, s->nqf + 1))
		return TS_ENOMEM;
	s->qflows[s->nqf++] = id;
	f->rem_bytes -= f->rate_Bps * time_to_s(now - f->last_ps);
	if (f->rem_bytes < 0)
		f->rem_bytes = 0;
	f->last_ps = now;
	f->old_Bps = f->rate_Bps;
	for (h = 0; h < f->hops; h++)
		__builtin_prefetch(&s->L[hp[h].link], 1);
	for (h = 0; h < f->hops; h++) {
		int32_t j = take_link(s, hp[h].link, ep, false);
		double c = xc ? xc[h] : 1;
		if (j < 0)
			return TS_ENOMEM;
		s->Q[j].ncomp++;
		s->Q[j].wcomp += c;
		s->Q[j].csum_Bps += f->old_Bps * c;
	}
	return 0;
}

/* Grow the component: the flows of full and saturated links (see
 * take_link), and their links. */
static int expand(struct sim_flow_state *s, uint32_t ep, int32_t *qi, simtime_ps now)
{
	for (; *qi < s->nqfull; (*qi)++) {
		int32_t jl = s->qfull[*qi];
		const struct lstate *ls = &s->L[s->Q[jl].link];
		bool all = s->Q[jl].full;
		double mx = 0;
		int32_t i;
		if (!all)
			for (i = 0; i < ls->n; i++) {
				const struct flow *g = &s->fl[ls->on[i].f];
				if (g->rate_Bps > mx)
					mx = g->rate_Bps;
			}
		for (i = 0; i < ls->n; i++) {
			int32_t id = ls->on[i].f;
			const struct flow *f = &s->fl[id];
			if (f->mark == ep)
				continue;
			if (!all && f->rate_Bps < mx * (1 - 1e-9))
				continue; /* bottlenecked elsewhere */
			if (join_flow(s, id, ep, now))
				return TS_ENOMEM;
		}
	}
	return 0;
}

/* Fix flow f at rate r: take r from every link of its path; the links'
 * new shares enter the heap once per level (flush_level). */
static void fix_flow(struct sim_flow_state *s, struct flow *f, double r, uint32_t fx)
{
	const struct fhop *hp = cfhops(f);
	const double *xc = fcoef(f);
	int32_t k;
	f->fixed = fx;
	f->rate_Bps = r;
	for (k = 0; k < f->hops; k++) {
		int32_t j = s->L[hp[k].link].loc;
		struct qlk *q = &s->Q[j];
		double c = xc ? xc[k] : 1;
		q->rem_Bps -= r * c;
		if (q->rem_Bps < 0)
			q->rem_Bps = 0;
		q->fsum_Bps += r * c;
		q->nunf--;
		q->wunf = q->nunf > 0 ? q->wunf - c : 0;
		if (!s->scan && q->touch != s->level) {
			q->touch = s->level;
			if (s->ntouched == s->captouched &&
			    grow_i32(&s->touched, &s->captouched, s->ntouched + 1)) {
				s->oom = true;
				continue;
			}
			s->touched[s->ntouched++] = j;
		}
	}
}

/* The links a level changed: a link's share only grows as flows on it
 * are fixed (a flow is fixed at the smallest share, at most this link's,
 * so it takes no more than its part), so a link already in the heap keeps
 * its entry, now a lower bound, and water_fill re-places an entry whose
 * share has grown when it reaches the top (lazy keys: the order of the
 * links taken is the same as with every key kept exact). Rounding can
 * make a share a hair smaller: such an entry moves at once. */
static void flush_level(struct sim_flow_state *s)
{
	int32_t i;
	for (i = 0; i < s->ntouched; i++) { /* none when scanning */
		int32_t j = s->touched[i];
		struct qlk *q = &s->Q[j];
		if (q->nunf > 0) {
			double sh = q->rem_Bps / q->wunf;
			if (q->hpos < 0 || sh < s->heap[q->hpos].share)
				hpush(s, sh, j);
		} else {
			hremove(s, j);
		}
	}
	s->ntouched = 0;
	s->level++;
}

/* Progressive filling over the links ql (Q indices; NULL: all nql from 0)
 * and flows qf of one part of the solve, on residual capacities: links
 * lose what flows outside the component use; repeatedly the link with the
 * smallest fair share is saturated and its unfixed flows fixed at that
 * share; a flow's own cap (TCP host copy) acts as a private link. */
static void water_fill(struct sim_flow_state *s, uint32_t ep, uint32_t fx, const int32_t *ql,
		       int32_t nql, const int32_t *qf, int32_t nqf)
{
	int32_t qi, i, ncapped = 0, nact = 0;
	s->nheap = 0;
	s->ntouched = 0;
	s->level++;
	/* Small fills: a linear scan per level (at most one level per flow)
	 * over the links that still have unfixed flows beats heap upkeep. */
	s->scan = (int64_t)nql * nqf <= 65536;
	if (s->scan && grow_i32(&s->act, &s->capact, nql)) {
		s->oom = true;
		return;
	}
	for (qi = 0; qi < nql; qi++) {
		int32_t j = ql ? ql[qi] : qi;
		struct qlk *q = &s->Q[j];
		/* flows outside the component keep their rates */
		double bg = q->load_Bps - q->csum_Bps;
		if (bg < 0)
			bg = 0;
		q->nunf = q->ncomp;
		q->wunf = q->wcomp;
		q->rem_Bps = q->cap_Bps - bg;
		if (q->rem_Bps < 0)
			q->rem_Bps = 0;
		q->fsum_Bps = 0;
		q->hpos = -1;
		if (q->nunf <= 0)
			continue;
		if (s->scan)
			s->act[nact++] = j;
		else
			hpush(s, q->rem_Bps / q->wunf, j);
	}
	for (i = 0; i < nqf; i++)
		if (s->fl[qf[i]].cap_Bps > 0)
			ncapped++;
	for (;;) {
		double mincap = INFINITY;
		struct hent h = { 0, 0, 0 };
		bool have = false;
		if (ncapped > 0)
			for (i = 0; i < nqf; i++) {
				const struct flow *f = &s->fl[qf[i]];
				if (f->fixed != fx && f->cap_Bps > 0 && f->cap_Bps < mincap)
					mincap = f->cap_Bps; /* the share at which it caps */
			}
		if (s->scan) {
			/* the smallest share, ties to the lower link id (the heap's
			 * order); links left without unfixed flows drop out */
			for (qi = 0; qi < nact;) {
				int32_t j = s->act[qi];
				const struct qlk *q = &s->Q[j];
				double sh;
				if (q->nunf <= 0) {
					s->act[qi] = s->act[--nact];
					continue;
				}
				sh = q->rem_Bps / q->wunf;
				if (!have || hless(sh, q->link, h.share, h.link)) {
					h.share = sh;
					h.link = q->link;
					h.loc = j;
					have = true;
				}
				qi++;
			}
		} else {
			/* the top's share as it is now (flush_level's lazy keys) */
			while (s->nheap > 0) {
				const struct qlk *q = &s->Q[s->heap[0].loc];
				double sh = q->rem_Bps / q->wunf;
				if (!(sh > s->heap[0].share))
					break;
				hplace(s, 0, (struct hent){ sh, q->link, s->heap[0].loc });
			}
			have = s->nheap > 0;
			if (have)
				h = s->heap[0];
		}
		if (have && h.share <= mincap) {
			const struct lstate *ls = &s->L[h.link];
			if (!s->scan)
				hremove(s, h.loc);
			for (i = 0; i < ls->n; i++) {
				struct flow *f = &s->fl[ls->on[i].f];
				if (f->mark != ep || f->fixed == fx)
					continue;
				if (f->cap_Bps > 0)
					ncapped--;
				fix_flow(s, f, h.share, fx);
			}
			flush_level(s);
		} else if (ncapped > 0 && mincap < INFINITY) {
			for (i = 0; i < nqf; i++) {
				struct flow *f = &s->fl[qf[i]];
				if (f->fixed == fx || !(f->cap_Bps > 0) || f->cap_Bps > mincap)
					continue;
				ncapped--;
				fix_flow(s, f, f->cap_Bps, fx);
			}
			flush_level(s);
		} else {
			break;
		}
		if (s->oom)
			return;
	}
}

static int32_t uf_find(int32_t *uf, int32_t x)
{
	while (uf[x] != x) {
		uf[x] = uf[uf[x]];
		x = uf[x];
	}
	return x;
}

/* Water-fill each independent part of the solve on its own: flows that
 * share no link of the solve do not interact, and many small fills (a
 * linear scan each) are much cheaper than one big heap (synchronised
 * steps of thousands of rings end at the same instant). */
static void fill_parts(struct sim_flow_state *s, uint32_t ep, uint32_t fx)
{
	int32_t nf = s->nqf, nl = s->nql, i, j, g;
	int32_t *qf = s->qflows, *lend;
	int32_t f0 = 0, l0 = 0;
	if (nf < 64) {
		water_fill(s, ep, fx, NULL, nl, qf, nf);
		return;
	}
	if (grow_i32(&s->uf, &s->capuf, 2 * nf + 1) || grow_i32(&s->lgrp, &s->caplg, nl) ||
	    grow_i32(&s->cnt, &s->capcnt, nf + 1) || grow_i32(&s->sflows, &s->capsf, nf) ||
	    grow_i32(&s->slinks, &s->capsl, nl)) {
		s->oom = true;
		return;
	}
	for (i = 0; i < nf; i++) {
		s->uf[i] = i;
		s->fl[qf[i]].loc = i;
	}
	for (i = 0; i < nl; i++) {
		const struct lstate *ls = &s->L[s->Q[i].link];
		int32_t first = -1;
		for (j = 0; j < ls->n; j++) {
			const struct flow *f = &s->fl[ls->on[j].f];
			int32_t a, b;
			if (f->mark != ep)
				continue;
			if (first < 0) {
				first = f->loc;
				continue;
			}
			a = uf_find(s->uf, first);
			b = uf_find(s->uf, f->loc);
			if (a != b)
				s->uf[a < b ? b : a] = a < b ? a : b;
		}
		s->lgrp[i] = first; /* -1: no flow of the solve on it: ignored */
	}
	/* counting sort of flows by group root; afterwards cnt[r] = end of r */
	memset(s->cnt, 0, ((size_t)nf + 1) * sizeof(int32_t));
	for (i = 0; i < nf; i++)
		s->cnt[uf_find(s->uf, i) + 1]++;
	for (i = 0; i < nf; i++)
		s->cnt[i + 1] += s->cnt[i];
	for (i = 0; i < nf; i++)
		s->sflows[s->cnt[uf_find(s->uf, i)]++] = qf[i];
	/* the same for links (group of a link = group of a flow on it) */
	for (i = 0; i < nl; i++)
		if (s->lgrp[i] >= 0)
			s->lgrp[i] = uf_find(s->uf, s->lgrp[i]);
	lend = s->uf + nf; /* uf[0..nf) holds the roots; the rest is free */
	memset(lend, 0, ((size_t)nf + 1) * sizeof(int32_t));
	for (i = 0; i < nl; i++)
		if (s->lgrp[i] >= 0)
			lend[s->lgrp[i] + 1]++;
	for (i = 0; i < nf; i++)
		lend[i + 1] += lend[i];
	for (i = 0; i < nl; i++)
		if (s->lgrp[i] >= 0)
			s->slinks[lend[s->lgrp[i]]++] = i;
	for (g = 0; g < nf && !s->oom; g++) {
		int32_t f1 = s->cnt[g], l1 = lend[g];
		if (f1 == f0)
			continue;
		water_fill(s, ep, fx, s->slinks + l0, l1 - l0, s->sflows + f0, f1 - f0);
		f0 = f1;
		l0 = l1;
	}
}

static void solve_ev(struct sim_engine *e, void *ctx, uint64_t arg)
{
	struct sim_net *n = ctx;
	struct sim_flow_state *s = n->flow;
	int32_t qi = 0, i, d;
	uint32_t ep, fx;
	bool again;
	(void)arg;
	s->solve_pending = false;
	if (s->ndirty == 0 && s->nseed == 0)
		return;
	n->st.recomputes++;
	ep = ++s->epoch;
	s->nql = s->nqf = s->nqfull = 0;
	/* 1. the component: dirty links, their flows, and onward through
	 * saturated links only */
	for (d = 0; d < s->ndirty; d++)
		if (take_link(s, s->dirty[d], ep, true) < 0)
			goto oom;
	s->ndirty = 0;
	for (d = 0; d < s->nseed; d++) {
		struct flow *f = &s->fl[s->seed[d]];
		if (f->state == F_ACTIVE && f->mark != ep && join_flow(s, s->seed[d], ep, e->now))
			goto oom;
	}
	s->nseed = 0;
	do {
		if (expand(s, ep, &qi, e->now))
			goto oom;
		/* 2. water-fill the component */
		fx = ++s->fixgen;
		n->st.solve_passes++;
		fill_parts(s, ep, fx);
		if (s->oom)
			goto oom;
		/* 3. exactness: a boundary link the component now saturates must
		 * not carry an outside flow faster than the component's flows
		 * there (that flow would have to yield): take such links fully
		 * and solve again */
		again = false;
		for (i = 0; i < s->nql; i++) {
			const struct lstate *ls;
			double mx = 0, outmax = 0;
			int32_t j;
			if (s->Q[i].full || s->Q[i].rem_Bps > s->Q[i].cap_Bps * 1e-7)
				continue;
			ls = &s->L[s->Q[i].link];
			for (j = 0; j < ls->n; j++) {
				const struct flow *f = &s->fl[ls->on[j].f];
				if (f->mark == ep) {
					if (f->rate_Bps > mx)
						mx = f->rate_Bps;
				} else if (f->rate_Bps > outmax) {
					outmax = f->rate_Bps;
				}
			}
			if (outmax > mx * (1 + 1e-9)) {
				if (take_link(s, s->Q[i].link, ep, true) < 0)
					goto oom;
				again = true;
			}
		}
	} while (again);
	n->st.solve_flows += (uint64_t)s->nqf;
	n->st.solve_links += (uint64_t)s->nql;
	if ((uint64_t)s->nqf > n->st.solve_max_flows)
		n->st.solve_max_flows = (uint64_t)s->nqf;
	/* 4. commit: link loads (outside flows' load + the rates fixed on
	 * it), and completions whose time changed */
	for (i = 0; i < s->nql; i++) {
		const struct qlk *q = &s->Q[i];
		double bg;
		if (q->ncomp == 0)
			continue;
		bg = q->load_Bps - q->csum_Bps;
		s->L[q->link].load_Bps = (bg > 0 ? bg : 0) + q->fsum_Bps;
	}
	for (i = 0; i < s->nqf; i++) {
		int32_t id = s->qflows[i];
		struct flow *f = &s->fl[id];
		TS_ASSERT(f->rate_Bps > 0);
		if (f->ev && f->rate_Bps == f->old_Bps)
			continue; /* same rate: the pending completion stands */
		if (f->ev)
			sim_cancel(e, f->ev); /* an ACTIVE flow's event is its send-complete */
		f->ev = sim_after(e, simn_ps_for(f->rem_bytes, f->rate_Bps), sent_ev, n, (uint64_t)id);
		if (!f->ev)
			goto oom;
	}
	return;
oom:
	s->oom = true;
	TS_BUG("out of memory inside the flow model's solver");
}

double simf_rate_Bps(const struct sim_net *n, int32_t id)
{
	const struct flow *f = &n->flow->fl[id];
	return f->state == F_ACTIVE ? f->rate_Bps : 0;
}

simtime_ps simf_prop_ps(const struct sim_net *n, int32_t id)
{
	return n->flow->fl[id].prop_ps;
}

void simf_bottleneck(const struct sim_net *n, const int32_t *path, int hops, double *cap_Bps,
		     double *load_Bps)
{
	const struct sim_flow_state *s = n->flow;
	double m = INFINITY;
	*cap_Bps = *load_Bps = 0;
	for (int h = 0; h < hops; h++) {
		double fr = s->L[path[h]].cap_Bps - s->L[path[h]].load_Bps;
		if (fr < m) {
			m = fr;
			*cap_Bps = s->L[path[h]].cap_Bps;
			*load_Bps = s->L[path[h]].load_Bps;
		}
	}
}

int32_t sim_net_active_flows(const struct sim_net *n)
{
	return n->flow ? n->flow->nactive : 0;
}

int sim_maxmin_verify(const double *cap_Bps, int32_t nlinks, const struct sim_mm_flow *fl,
		      int32_t nfl, double rel_tol, struct ts_error *err)
{
	double *load = calloc((size_t)(nlinks > 0 ? nlinks : 1), 2 * sizeof(double)), *mx;
	int32_t l, i;
	int h;
	if (!load)
		return ts_error_set(err, TS_ENOMEM, "out of memory");
	mx = load + (nlinks > 0 ? nlinks : 1); /* per link: its fastest flow's rate */
	for (i = 0; i < nfl; i++)
		for (h = 0; h < fl[i].hops; h++) {
			l = fl[i].links[h];
			if (l < 0 || l >= nlinks) {
				ts_error_set(err, TS_EINPUT, "flow %d crosses link %d of %d",
					     (int)fl[i].id, (int)l, (int)nlinks);
				goto fail;
			}
			load[l] += fl[i].coef ? fl[i].rate_Bps * fl[i].coef[h] : fl[i].rate_Bps;
			if (fl[i].rate_Bps > mx[l])
				mx[l] = fl[i].rate_Bps;
		}
	for (l = 0; l < nlinks; l++)
		if (load[l] > cap_Bps[l] * (1 + rel_tol)) {
			ts_error_set(err, TS_EINPUT, "link %d over capacity: %.6g > %.6g B/s", (int)l,
				     load[l], cap_Bps[l]);
			goto fail;
		}
	/* fairness: every flow has a bottleneck link (saturated, and no flow
	 * on it faster) or runs at its own cap */
	for (i = 0; i < nfl; i++) {
		int ok = fl[i].cap_Bps > 0 && fl[i].rate_Bps >= fl[i].cap_Bps * (1 - rel_tol);
		for (h = 0; h < fl[i].hops && !ok; h++) {
			l = fl[i].links[h];
			ok = load[l] >= cap_Bps[l] * (1 - rel_tol) && fl[i].rate_Bps >= mx[l] * (1 - rel_tol);
		}
		if (!ok) {
			ts_error_set(err, TS_EINPUT, "flow %d (%.6g B/s) has no bottleneck: not max-min fair",
				     (int)fl[i].id, fl[i].rate_Bps);
			goto fail;
		}
	}
	free(load);
	return 0;
fail:
	free(load);
	return TS_EINPUT;
}

int sim_net_check_maxmin(const struct sim_net *n, double rel_tol, struct ts_error *err)
{
	const struct sim_flow_state *s = n->flow;
	struct sim_mm_flow *fl;
	int32_t *links, nfl = 0, nh = 0, i;
	double *cap;
	int rc;
	if (!s)
		return ts_error_set(err, TS_EINPUT, "not a flow-level network");
	if (s->ndirty > 0 || s->nseed > 0)
		return ts_error_set(err, TS_EINPUT, "rates are stale: a solve is pending");
	/* (after a failed allocation a hop may be off its link's list, and the
	 * rates are not a whole solve's: found by review) */
	if (s->oom)
		return ts_error_set(err, TS_ENOMEM, "an allocation failed: the rates are not a solve's");
	/* the active flows: those on the links' lists (the invariant above) */
	for (i = 0; i < s->nfl; i++)
		if (s->fl[i].state == F_ACTIVE)
			nh += s->fl[i].hops;
	fl = malloc((size_t)(s->nfl > 0 ? s->nfl : 1) * sizeof(*fl));
	links = malloc((size_t)(nh > 0 ? nh : 1) * sizeof(*links));
	cap = malloc((size_t)(n->nlinks > 0 ? n->nlinks : 1) * sizeof(*cap));
	if (!fl || !links || !cap) {
		free(fl);
		free(links);
		free(cap);
		return ts_error_set(err, TS_ENOMEM, "out of memory");
	}
	for (i = 0; i < n->nlinks; i++)
		cap[i] = s->L[i].cap_Bps;
	nh = 0;
	for (i = 0; i < s->nfl; i++) {
		const struct flow *f = &s->fl[i];
		if (f->state != F_ACTIVE)
			continue;
		fl[nfl++] = (struct sim_mm_flow){ links + nh, fcoef(f), f->hops, f->rate_Bps,
						  f->cap_Bps, i };
		for (int h = 0; h < f->hops; h++)
			links[nh++] = cfhops(f)[h].link;
	}
	rc = sim_maxmin_verify(cap, n->nlinks, fl, nfl, rel_tol, err);
	free(fl);
	free(links);
	free(cap);
	return rc;
}
