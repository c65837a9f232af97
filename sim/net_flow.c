/* net_flow.c: the flow model: max-min fair sharing of link capacity.
 *
 * A transfer is a flow along a fixed path. While it moves data its rate is
 * its max-min fair share (progressive filling / water-filling, Bertsekas &
 * Gallager "Data Networks" §6.5.2; SimGrid's LMM solver without weights,
 * network_simulators.md §4.2). A link's capacity is its line rate times the
 * payload fraction mtu/(mtu+overhead) (hardware.md "Packets and MTU").
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
 * there (an unsaturated link couples nobody; a slower flow on a saturated
 * link is bottlenecked elsewhere); other links on those flows' paths enter
 * as boundary links with the capacity the outside flows leave. If the new rates
 * saturate a boundary link on which an outside flow is faster than the
 * component's flows there, that link joins fully and the part is solved
 * again, so every flow keeps a bottleneck (exact max-min).
 * Completion events are cancelled and reinserted (by handle) only for
 * flows whose rate changed.
 *
 * Invariants: a flow is on the per-link lists of its path exactly while it
 * is ACTIVE; rem_bytes is exact at time last_ps; the solve event is pending
 * iff ndirty > 0 or the flag solve_pending is set. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim_int.h"

enum { F_FREE, F_WAIT, F_ACTIVE, F_ARRIVING };

struct flow {
	double bytes;                  /* payload, bytes */
	double rem_bytes;              /* not yet sent at last_ps, bytes */
	double rate_Bps;               /* current rate, bytes/s */
	double old_Bps;                /* rate before the current solve, bytes/s */
	double cap_Bps;                /* own rate limit (TCP host copy), 0 = none */
	simtime_ps last_ps;            /* when rem_bytes was exact, ps */
	simtime_ps prop_ps;            /* path latency, ps */
	sim_event_id ev;               /* pending event of this flow */
	sim_xfer_done done;            /* callback */
	void *ctx;                     /* callback context (not owned) */
	uint64_t arg;                  /* callback argument */
	int32_t ipath[TOPO_MAX_HOPS];  /* link ids (paths of up to TOPO_MAX_HOPS) */
	int32_t ilpos[TOPO_MAX_HOPS];  /* position in each link's flow list */
	int32_t *xpath;                /* longer paths (coupled rings): hops link ids,
	                                * then hops positions; owned, else NULL */
	int32_t hops;                  /* path length, links */
	uint8_t state;                 /* F_* */
	uint32_t mark;                 /* component epoch */
	uint32_t fixed;                /* water-filling generation that fixed it */
	int32_t loc;                   /* index in the current solve's flow list */
	int32_t next_free;             /* free list */
};

struct lflows {
	int32_t *f;                    /* flow ids on this link */
	int32_t *h;                    /* for each, the hop of its path that is this link */
	int32_t n, cap, caph;          /* count, allocated (f, h) */
};

/* A flow's path and its back-pointers into the links' flow lists. */
static inline int32_t *fpath(struct flow *f) { return f->xpath ? f->xpath : f->ipath; }
static inline int32_t *flpos(struct flow *f) { return f->xpath ? f->xpath + f->hops : f->ilpos; }
static inline const int32_t *cfpath(const struct flow *f)
{
	return f->xpath ? f->xpath : f->ipath;
}

struct hent {
	double share;                  /* remaining capacity / unfixed flows, bytes/s */
	int32_t link;                  /* link id */
	uint32_t ver;                  /* link version when pushed */
};

/* Everything the solver keeps per link, together (one or two cache lines
 * per link visited instead of one per array). */
struct lstate {
	double cap_Bps;                /* usable capacity, bytes/s */
	double rem_Bps;                /* scratch: unallocated capacity, bytes/s */
	double load_Bps;               /* sum of its flows' rates, bytes/s */
	double csum_Bps;               /* scratch: component flows' old rates, bytes/s */
	int32_t nunf;                  /* scratch: unfixed flows */
	int32_t ncomp;                 /* scratch: component flows on it */
	uint32_t lver;                 /* heap entry version */
	uint32_t lmark;                /* component epoch */
	uint32_t lfull;                /* epoch it joined with all its flows */
	uint32_t ltouch;               /* filling level that last changed it */
	struct lflows on;              /* active flows */
};

struct sim_flow_state {
	struct lstate *L;              /* per link */
	struct flow *fl;               /* flow pool */
	int32_t nfl, capfl, free_head; /* used slots, allocated, free list */
	int32_t nactive;               /* ACTIVE flows, count */
	int32_t *touched;              /* links changed in the current level */
	int32_t ntouched, captouched;  /* count, allocated */
	uint32_t level;                /* filling level counter */
	bool scan;                     /* small solve: find the bottleneck by scanning, no heap */
	int32_t *uf;                   /* union-find over the solve's flows */
	int32_t *lgrp;                 /* per solve link: a flow (loc) on it, then its group */
	int32_t *cnt;                  /* per group: counting-sort offsets */
	int32_t *sflows, *slinks;      /* flows and links sorted by group */
	int32_t capuf, caplg, capcnt, capsf, capsl; /* allocated */
	int32_t *dirty;                /* links changed since the last solve */
	int32_t ndirty, capdirty;      /* count, allocated */
	uint32_t epoch;                /* BFS epoch, count */
	bool solve_pending;            /* a solve event is queued */
	int32_t *qlinks, *qflows;      /* component links (full + boundary), flows */
	int32_t nql, nqf, capql, capqf;/* counts, allocated */
	int32_t *qfull;                /* component links whose flows all joined */
	int32_t nqfull, capqfull;      /* count, allocated */
	uint32_t fixgen;               /* water-filling generation, count */
	struct hent *heap;             /* water-filling heap */
	int32_t nheap, capheap;        /* entries, allocated */
	bool oom;                      /* an allocation failed inside an event */
};

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

int simf_init(struct sim_net *n, struct ts_error *err)
{
	struct sim_flow_state *s = calloc(1, sizeof(*s));
	int32_t L = n->nlinks ? n->nlinks : 1, i;
	if (!s)
		return ts_error_set(err, TS_ENOMEM, "out of memory for the flow model");
	n->flow = s;
	s->free_head = -1;
	s->L = calloc((size_t)L, sizeof(*s->L));
	if (!s->L)
		return ts_error_set(err, TS_ENOMEM, "out of memory for the flow model");
	for (i = 0; i < n->nlinks; i++)
		s->L[i].cap_Bps = n->links[i].bw_Bps * simn_payload_eff(&n->links[i]);
	return 0;
}

void simf_release(struct sim_net *n)
{
	struct sim_flow_state *s = n->flow;
	int32_t i;
	if (!s)
		return;
	if (s->L)
		for (i = 0; i < n->nlinks; i++)
{
			free(s->L[i].on.f);
			free(s->L[i].on.h);
		}
	for (i = 0; s->fl && i < s->nfl; i++)
		free(s->fl[i].xpath);
	free(s->L);
	free(s->touched);
	free(s->uf);
	free(s->lgrp);
	free(s->cnt);
	free(s->sflows);
	free(s->slinks);
	free(s->qfull);
	free(s->dirty);
	free(s->qlinks);
	free(s->qflows);
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
		s->free_head = s->fl[id].next_free;
		return id;
	}
	if (s->nfl == s->capfl) {
		int32_t nc = s->capfl ? s->capfl * 2 : 256;
		struct flow *p = realloc(s->fl, (size_t)nc * sizeof(*p));
		if (!p)
			return -1;
		s->fl = p;
		s->capfl = nc;
	}
	return s->nfl++;
}

static void flow_free(struct sim_flow_state *s, int32_t id)
{
	free(s->fl[id].xpath);
	s->fl[id].xpath = NULL;
	s->fl[id].state = F_FREE;
	s->fl[id].next_free = s->free_head;
	s->free_head = id;
}

static void mark_dirty(struct sim_net *n, int32_t l);
static void solve_ev(struct sim_engine *e, void *ctx, uint64_t arg);

static void queue_solve(struct sim_net *n)
{
	struct sim_flow_state *s = n->flow;
	if (s->solve_pending)
		return;
	if (!sim_at(n->eng, n->eng->now, solve_ev, n, 0)) {
		s->oom = true;
		return;
	}
	s->solve_pending = true;
}

static void mark_dirty(struct sim_net *n, int32_t l)
{
	struct sim_flow_state *s = n->flow;
	if (grow_i32(&s->dirty, &s->capdirty, s->ndirty + 1)) {
		s->oom = true;
		return;
	}
	s->dirty[s->ndirty++] = l;
	queue_solve(n);
}

static void activate(struct sim_net *n, int32_t id)
{
	struct sim_flow_state *s = n->flow;
	struct flow *f = &s->fl[id];
	int32_t *path = fpath(f), *lpos = flpos(f), h;
	f->state = F_ACTIVE;
	f->last_ps = n->eng->now;
	f->rate_Bps = 0;
	f->fixed = 0;
	f->ev = 0;
	for (h = 0; h < f->hops; h++) {
		struct lflows *lf = &s->L[path[h]].on;
		if (grow_i32(&lf->f, &lf->cap, lf->n + 1) || grow_i32(&lf->h, &lf->caph, lf->n + 1)) {
			s->oom = true;
			lpos[h] = -1;
			continue;
		}
		lpos[h] = lf->n;
		lf->h[lf->n] = h;
		lf->f[lf->n++] = id;
		mark_dirty(n, path[h]);
	}
	s->nactive++;
}

static void deactivate(struct sim_net *n, int32_t id)
{
	struct sim_flow_state *s = n->flow;
	struct flow *f = &s->fl[id];
	int32_t *path = fpath(f), *lpos = flpos(f), h;
	for (h = 0; h < f->hops; h++) {
		struct lflows *lf = &s->L[path[h]].on;
		int32_t pos = lpos[h], last;
		if (pos < 0)
			continue;
		s->L[path[h]].load_Bps -= f->rate_Bps;
		if (lf->n == 1)
			s->L[path[h]].load_Bps = 0; /* no drift on an idle link */
		last = --lf->n;
		if (pos != last) {
			/* the last entry fills the hole; fix its back-pointer (O(1):
			 * entries know their hop, even on a path that crosses this
			 * link several times) */
			lf->f[pos] = lf->f[last];
			lf->h[pos] = lf->h[last];
			flpos(&s->fl[lf->f[pos]])[lf->h[pos]] = pos;
		}
		mark_dirty(n, path[h]);
	}
	s->nactive--;
}

static void deliver_ev(struct sim_engine *e, void *ctx, uint64_t arg)
{
	struct sim_net *n = ctx;
	struct sim_flow_state *s = n->flow;
	struct flow *f = &s->fl[arg];
	sim_xfer_done done = f->done;
	void *dctx = f->ctx;
	uint64_t darg = f->arg;
	n->st.bytes_delivered += f->bytes;
	n->st.xfers_done++;
	flow_free(s, (int32_t)arg);
	if (done)
		done(dctx, darg);
}

static void sent_ev(struct sim_engine *e, void *ctx, uint64_t arg)
{
	struct sim_net *n = ctx;
	struct flow *f = &n->flow->fl[arg];
	f->rem_bytes = 0;
	deactivate(n, (int32_t)arg);
	f->state = F_ARRIVING;
	f->ev = sim_after(e, f->prop_ps, deliver_ev, n, arg);
	if (!f->ev)
		n->flow->oom = true;
}

static void start_ev(struct sim_engine *e, void *ctx, uint64_t arg)
{
	activate(ctx, (int32_t)arg);
}

int simf_send(struct sim_net *n, const int32_t *path, int hops, double bytes,
	      simtime_ps start_delay_ps, sim_xfer_done done, void *ctx, uint64_t arg,
	      int32_t *id_out)
{
	struct sim_flow_state *s = n->flow;
	int32_t id = flow_alloc(s), *fp;
	struct flow *f;
	int h;
	if (id < 0)
		return TS_ENOMEM;
	f = &s->fl[id];
	memset(f, 0, sizeof(*f));
	if (hops > TOPO_MAX_HOPS) {
		f->xpath = malloc((size_t)hops * 2 * sizeof(int32_t));
		if (!f->xpath) {
			flow_free(s, id);
			return TS_ENOMEM;
		}
	}
	if (id_out)
		*id_out = id;
	f->bytes = bytes;
	f->rem_bytes = bytes;
	f->done = done;
	f->ctx = ctx;
	f->arg = arg;
	f->hops = hops;
	fp = fpath(f);
	for (h = 0; h < hops; h++) {
		fp[h] = path[h];
		f->prop_ps += n->links[path[h]].lat_ps;
	}
	if (n->par.tcp && n->par.tcp_byte_s > 0)
		f->cap_Bps = 1.0 / n->par.tcp_byte_s; /* host copy cost per byte */
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
		f->ev = sim_after(n->eng, start_delay_ps, start_ev, n, (uint64_t)id);
		return f->ev ? 0 : TS_ENOMEM;
	}
	activate(n, id);
	return s->oom ? TS_ENOMEM : 0;
}

/* ---- water-filling ------------------------------------------------------- */

static void hpush(struct sim_flow_state *s, double share, int32_t link)
{
	int32_t i;
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
	i = s->nheap++;
	while (i > 0) {
		int32_t p = (i - 1) / 2;
		if (s->heap[p].share < share || (s->heap[p].share == share && s->heap[p].link <= link))
			break;
		s->heap[i] = s->heap[p];
		i = p;
	}
	s->heap[i].share = share;
	s->heap[i].link = link;
	s->heap[i].ver = s->L[link].lver;
}

static struct hent hpop(struct sim_flow_state *s)
{
	struct hent top = s->heap[0], last = s->heap[--s->nheap];
	int32_t i = 0;
	for (;;) {
		int32_t c = 2 * i + 1;
		if (c >= s->nheap)
			break;
		if (c + 1 < s->nheap &&
		    (s->heap[c + 1].share < s->heap[c].share ||
		     (s->heap[c + 1].share == s->heap[c].share && s->heap[c + 1].link < s->heap[c].link)))
			c++;
		if (last.share < s->heap[c].share ||
		    (last.share == s->heap[c].share && last.link <= s->heap[c].link))
			break;
		s->heap[i] = s->heap[c];
		i = c;
	}
	if (s->nheap > 0)
		s->heap[i] = last;
	return top;
}

static bool saturated(const struct sim_flow_state *s, int32_t l)
{
	return s->L[l].load_Bps >= s->L[l].cap_Bps * (1 - 1e-7);
}

/* Add link l to the solve. full (a dirty link, or one found to need it):
 * all its flows join. A saturated link: the flows bottlenecked on it (the
 * fastest there) join; slower ones are bottlenecked elsewhere and keep
 * their rates unless the check after filling says otherwise. Any other
 * link is a boundary: its flows keep their rates (an unsaturated link
 * couples nobody). */
static int take_link(struct sim_flow_state *s, int32_t l, uint32_t ep, bool full)
{
	if (s->L[l].lmark == ep && (s->L[l].lfull == ep || !full))
		return 0;
	if (s->L[l].lmark != ep) {
		s->L[l].lmark = ep;
		s->L[l].ncomp = 0;
		s->L[l].csum_Bps = 0;
		if (grow_i32(&s->qlinks, &s->capql, s->nql + 1))
			return TS_ENOMEM;
		s->qlinks[s->nql++] = l;
		if (!full && saturated(s, l)) {
			if (grow_i32(&s->qfull, &s->capqfull, s->nqfull + 1))
				return TS_ENOMEM;
			s->qfull[s->nqfull++] = l; /* partial: lfull stays != ep */
		}
	}
	if (full) {
		s->L[l].lfull = ep;
		if (grow_i32(&s->qfull, &s->capqfull, s->nqfull + 1))
			return TS_ENOMEM;
		s->qfull[s->nqfull++] = l;
	}
	return 0;
}

/* Grow the component: the flows of full and saturated links (see
 * take_link), and their links. */
static int expand(struct sim_flow_state *s, uint32_t ep, int32_t *qi, simtime_ps now)
{
	for (; *qi < s->nqfull; (*qi)++) {
		int32_t l = s->qfull[*qi];
		struct lflows *lf = &s->L[l].on;
		bool all = s->L[l].lfull == ep;
		double mx = 0;
		int32_t i;
		if (!all)
			for (i = 0; i < lf->n; i++)
				if (s->fl[lf->f[i]].rate_Bps > mx)
					mx = s->fl[lf->f[i]].rate_Bps;
		for (i = 0; i < lf->n; i++) {
			struct flow *f = &s->fl[lf->f[i]];
			int h;
			if (f->mark == ep)
				continue;
			if (!all && f->rate_Bps < mx * (1 - 1e-9))
				continue; /* bottlenecked elsewhere */
			f->mark = ep;
			if (grow_i32(&s->qflows, &s->capqf, s->nqf + 1))
				return TS_ENOMEM;
			s->qflows[s->nqf++] = lf->f[i];
			/* bring remaining bytes up to now at the old rate */
			f->rem_bytes -= f->rate_Bps * time_to_s(now - f->last_ps);
			if (f->rem_bytes < 0)
				f->rem_bytes = 0;
			f->last_ps = now;
			f->old_Bps = f->rate_Bps;
			for (h = 0; h < f->hops; h++) {
				int32_t k = fpath(f)[h];
				if (take_link(s, k, ep, false))
					return TS_ENOMEM;
				s->L[k].ncomp++;
				s->L[k].csum_Bps += f->old_Bps;
			}
		}
	}
	return 0;
}

/* Fix flow f at rate r: take r from every link of its path; the links'
 * new shares enter the heap once per level (flush_level). */
static void fix_flow(struct sim_flow_state *s, struct flow *f, double r, uint32_t fx)
{
	const int32_t *path = fpath(f);
	int32_t k;
	f->fixed = fx;
	f->rate_Bps = r;
	for (k = 0; k < f->hops; k++) {
		int32_t l = path[k];
		s->L[l].rem_Bps -= r;
		if (s->L[l].rem_Bps < 0)
			s->L[l].rem_Bps = 0;
		s->L[l].nunf--;
		s->L[l].lver++;
		if (s->L[l].ltouch != s->level) {
			s->L[l].ltouch = s->level;
			if (grow_i32(&s->touched, &s->captouched, s->ntouched + 1)) {
				s->oom = true;
				continue;
			}
			s->touched[s->ntouched++] = l;
		}
	}
}

static void flush_level(struct sim_flow_state *s)
{
	int32_t i;
	for (i = 0; s->scan ? 0 : i < s->ntouched; i++) {
		int32_t l = s->touched[i];
		s->L[l].lver++;
		if (s->L[l].nunf > 0)
			hpush(s, s->L[l].rem_Bps / s->L[l].nunf, l);
	}
	s->ntouched = 0;
	s->level++;
}

/* Progressive filling over the component on residual capacities: links
 * lose what flows outside the component use; repeatedly the link with the
 * smallest fair share is saturated and its unfixed flows fixed at that
 * share; a flow's own cap (TCP host copy) acts as a private link. */
static void water_fill(struct sim_flow_state *s, uint32_t ep, uint32_t fx)
{
	int32_t qi, i, ncapped = 0;
	s->nheap = 0;
	s->ntouched = 0;
	s->level++;
	/* Small solves: a linear scan per level (at most one level per flow)
	 * beats heap upkeep. */
	s->scan = (int64_t)s->nql * s->nqf <= 65536;
	for (qi = 0; qi < s->nql; qi++) {
		int32_t l = s->qlinks[qi];
		/* flows outside the component keep their rates */
		double bg = s->L[l].load_Bps - s->L[l].csum_Bps;
		if (bg < 0)
			bg = 0;
		s->L[l].nunf = s->L[l].ncomp;
		s->L[l].rem_Bps = s->L[l].cap_Bps - bg;
		if (s->L[l].rem_Bps < 0)
			s->L[l].rem_Bps = 0;
		s->L[l].lver++;
		if (s->L[l].nunf > 0 && !s->scan)
			hpush(s, s->L[l].rem_Bps / s->L[l].nunf, l);
	}
	for (i = 0; i < s->nqf; i++)
		if (s->fl[s->qflows[i]].cap_Bps > 0)
			ncapped++;
	for (;;) {
		double mincap = INFINITY;
		if (ncapped > 0)
			for (i = 0; i < s->nqf; i++) {
				const struct flow *f = &s->fl[s->qflows[i]];
				if (f->fixed != fx && f->cap_Bps > 0 && f->cap_Bps < mincap)
					mincap = f->cap_Bps;
			}
		if (s->scan) {
			/* the smallest share, ties to the lower link id (the heap's order) */
			s->nheap = 0;
			for (qi = 0; qi < s->nql; qi++) {
				int32_t l = s->qlinks[qi];
				double sh;
				if (s->L[l].nunf <= 0)
					continue;
				sh = s->L[l].rem_Bps / s->L[l].nunf;
				if (s->nheap == 0 || sh < s->heap[0].share ||
				    (sh == s->heap[0].share && l < s->heap[0].link)) {
					if (s->capheap == 0) {
						hpush(s, sh, l); /* allocates the first slot */
						continue;
					}
					s->heap[0].share = sh;
					s->heap[0].link = l;
					s->heap[0].ver = s->L[l].lver;
					s->nheap = 1;
				}
			}
		} else {
			while (s->nheap > 0 && s->heap[0].ver != s->L[s->heap[0].link].lver)
				(void)hpop(s);
		}
		if (s->nheap > 0 && s->heap[0].share <= mincap) {
			struct hent h = hpop(s);
			struct lflows *lf = &s->L[h.link].on;
			for (i = 0; i < lf->n; i++) {
				struct flow *f = &s->fl[lf->f[i]];
				if (f->mark != ep || f->fixed == fx)
					continue;
				if (f->cap_Bps > 0)
					ncapped--;
				fix_flow(s, f, h.share, fx);
			}
			flush_level(s);
		} else if (ncapped > 0 && mincap < INFINITY) {
			for (i = 0; i < s->nqf; i++) {
				struct flow *f = &s->fl[s->qflows[i]];
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
	int32_t *qf = s->qflows, *ql = s->qlinks, *lend;
	int32_t f0 = 0, l0 = 0;
	if (nf < 64) {
		water_fill(s, ep, fx);
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
		const struct lflows *lf = &s->L[ql[i]].on;
		int32_t first = -1;
		for (j = 0; j < lf->n; j++) {
			const struct flow *f = &s->fl[lf->f[j]];
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
			s->slinks[lend[s->lgrp[i]]++] = ql[i];
	for (g = 0; g < nf && !s->oom; g++) {
		int32_t f1 = s->cnt[g], l1 = lend[g];
		if (f1 == f0)
			continue;
		s->qflows = s->sflows + f0;
		s->nqf = f1 - f0;
		s->qlinks = s->slinks + l0;
		s->nql = l1 - l0;
		water_fill(s, ep, fx);
		f0 = f1;
		l0 = l1;
	}
	s->qflows = qf;
	s->nqf = nf;
	s->qlinks = ql;
	s->nql = nl;
}

static void solve_ev(struct sim_engine *e, void *ctx, uint64_t arg)
{
	struct sim_net *n = ctx;
	struct sim_flow_state *s = n->flow;
	int32_t qi = 0, i, d;
	uint32_t ep, fx;
	bool again;
	s->solve_pending = false;
	if (s->ndirty == 0)
		return;
	n->st.recomputes++;
	ep = ++s->epoch;
	s->nql = s->nqf = s->nqfull = 0;
	/* 1. the component: dirty links, their flows, and onward through
	 * saturated links only */
	for (d = 0; d < s->ndirty; d++)
		if (take_link(s, s->dirty[d], ep, true))
			goto oom;
	s->ndirty = 0;
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
			int32_t l = s->qlinks[i], j;
			struct lflows *lf = &s->L[l].on;
			double mx = 0, outmax = 0;
			if (s->L[l].lfull == ep || s->L[l].rem_Bps > s->L[l].cap_Bps * 1e-7)
				continue;
			for (j = 0; j < lf->n; j++) {
				const struct flow *f = &s->fl[lf->f[j]];
				if (f->mark == ep) {
					if (f->rate_Bps > mx)
						mx = f->rate_Bps;
				} else if (f->rate_Bps > outmax) {
					outmax = f->rate_Bps;
				}
			}
			if (outmax > mx * (1 + 1e-9)) {
				if (take_link(s, l, ep, true))
					goto oom;
				again = true;
			}
		}
	} while (again);
	n->st.solve_flows += (uint64_t)s->nqf;
	n->st.solve_links += (uint64_t)s->nql;
	if ((uint64_t)s->nqf > n->st.solve_max_flows)
		n->st.solve_max_flows = (uint64_t)s->nqf;
	/* 4. commit: link loads, and completions whose time changed */
	for (i = 0; i < s->nqf; i++) {
		int32_t id = s->qflows[i];
		struct flow *f = &s->fl[id];
		simtime_ps t;
		int k;
		TS_ASSERT(f->rate_Bps > 0);
		if (f->rate_Bps != f->old_Bps)
			for (k = 0; k < f->hops; k++)
				s->L[fpath(f)[k]].load_Bps += f->rate_Bps - f->old_Bps;
		if (f->ev && f->rate_Bps == f->old_Bps)
			continue; /* same rate: the pending completion stands */
		t = e->now + simn_ps_for(f->rem_bytes, f->rate_Bps);
		if (f->ev)
			sim_cancel(e, f->ev); /* an ACTIVE flow's event is its send-complete */
		f->ev = sim_at(e, t, sent_ev, n, (uint64_t)id);
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

double simf_headroom_Bps(const struct sim_net *n, const int32_t *path, int hops)
{
	const struct sim_flow_state *s = n->flow;
	double m = INFINITY;
	int h;
	for (h = 0; h < hops; h++) {
		double fr = s->L[path[h]].cap_Bps - s->L[path[h]].load_Bps;
		if (fr < m)
			m = fr;
	}
	return m < 0 ? 0 : m;
}

int32_t sim_net_active_flows(const struct sim_net *n)
{
	return n->flow ? n->flow->nactive : 0;
}

int sim_net_check_maxmin(const struct sim_net *n, double rel_tol, struct ts_error *err)
{
	const struct sim_flow_state *s = n->flow;
	int32_t l, i;
	double *load;
	if (!s)
		return ts_error_set(err, TS_EINPUT, "not a flow-level network");
	if (s->ndirty > 0)
		return ts_error_set(err, TS_EINPUT, "rates are stale: a solve is pending");
	load = calloc((size_t)(n->nlinks ? n->nlinks : 1), sizeof(double));
	if (!load)
		return ts_error_set(err, TS_ENOMEM, "out of memory");
	for (l = 0; l < n->nlinks; l++)
		for (i = 0; i < s->L[l].on.n; i++)
			load[l] += s->fl[s->L[l].on.f[i]].rate_Bps;
	for (l = 0; l < n->nlinks; l++)
		if (load[l] > s->L[l].cap_Bps * (1 + rel_tol)) {
			ts_error_set(err, TS_EINPUT, "link %d over capacity: %.6g > %.6g B/s", (int)l,
				     load[l], s->L[l].cap_Bps);
			goto fail;
		}
	/* fairness: every active flow has a bottleneck link (saturated, and no
	 * flow on it faster) or runs at its own cap */
	for (i = 0; i < s->nfl; i++) {
		const struct flow *f = &s->fl[i];
		int h, ok = 0;
		if (f->state != F_ACTIVE)
			continue;
		if (f->cap_Bps > 0 && f->rate_Bps >= f->cap_Bps * (1 - rel_tol))
			ok = 1;
		for (h = 0; h < f->hops && !ok; h++) {
			int32_t lk = cfpath(f)[h], j;
			double mx = 0;
			if (load[lk] < s->L[lk].cap_Bps * (1 - rel_tol))
				continue;
			for (j = 0; j < s->L[lk].on.n; j++)
				if (s->fl[s->L[lk].on.f[j]].rate_Bps > mx)
					mx = s->fl[s->L[lk].on.f[j]].rate_Bps;
			if (f->rate_Bps >= mx * (1 - rel_tol))
				ok = 1;
		}
		if (!ok) {
			ts_error_set(err, TS_EINPUT, "flow %d (%.6g B/s) has no bottleneck: not max-min fair",
				     (int)i, f->rate_Bps);
			goto fail;
		}
	}
	free(load);
	return 0;
fail:
	free(load);
	return TS_EINPUT;
}
