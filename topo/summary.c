/* summary.c: what `trainsim topo` reports, computed on the built graph:
 * counts per tier, ports in use, oversubscription per tier, bisection
 * bandwidth (max-flow), diameter (breadth-first search), ECMP paths; and the
 * Graphviz writer.
 *
 * Bisection: Dinic's max-flow from the NICs of hosts [0, n/2) to those of
 * [n/2, n) over the directed network links with their capacities. Hosts are
 * numbered leaf by leaf and pod by pod, so this split is the one that cuts
 * the fabric in the middle (the worst case for a tree). O(E·sqrt(V)) in
 * practice on these layered graphs; about a second for 65,536 hosts. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/fileio.h"
#include "topo/topo_priv.h"

/* ---- Dinic's max-flow ------------------------------------------------------------- */

struct mf {
	int32_t n;         /* vertices */
	int64_t m;         /* arcs (each with its residual twin at m ^ 1) */
	int32_t *head;     /* [n+1] CSR offsets after build */
	int32_t *to;       /* [m] */
	double *cap;       /* [m] residual capacity, bytes/s */
	int32_t *arc;      /* [m] arc ids in CSR order */
	int32_t *level;    /* [n] */
	int32_t *it;       /* [n] current arc */
	int32_t *q;        /* [n] */
};

#define MF_EPS 1e-3    /* bytes/s: below this a residual capacity is zero */

static bool mf_bfs(struct mf *f, int32_t s, int32_t t)
{
	int32_t h = 0, tl = 0;
	for (int32_t v = 0; v < f->n; v++)
		f->level[v] = -1;
	f->level[s] = 0;
	f->q[tl++] = s;
	while (h < tl) {
		int32_t v = f->q[h++];
		for (int32_t k = f->head[v]; k < f->head[v + 1]; k++) {
			int32_t a = f->arc[k];
			if (f->cap[a] > MF_EPS && f->level[f->to[a]] < 0) {
				f->level[f->to[a]] = f->level[v] + 1;
				f->q[tl++] = f->to[a];
			}
		}
	}
	return f->level[t] >= 0;
}

/* Depth is bounded by the BFS level of t (a few hops), so recursion is fine. */
static double mf_dfs(struct mf *f, int32_t v, int32_t t, double push)
{
	if (v == t)
		return push;
	for (; f->it[v] < f->head[v + 1]; f->it[v]++) {
		int32_t a = f->arc[f->it[v]], w = f->to[a];
		if (f->cap[a] > MF_EPS && f->level[w] == f->level[v] + 1) {
			double got = mf_dfs(f, w, t, push < f->cap[a] ? push : f->cap[a]);
			if (got > MF_EPS) {
				f->cap[a] -= got;
				f->cap[a ^ 1] += got;
				return got;
			}
		}
	}
	return 0;
}

double topo_bisection_Bps(const struct topo *t, struct ts_error *err)
{
	struct mf f = { 0 };
	int32_t *idx = NULL, nnet = 0, S, T, half = t->nhosts / 2;
	int32_t nics = t->cl.node.nics;
	int64_t m = 0, cap_arcs;
	int32_t *deg = NULL;
	double flow = -1, inf = 0;

	if (t->nhosts < 2 || nics < 1)
		return 0;
	idx = malloc((size_t)t->nnodes * sizeof(int32_t));
	if (!idx)
		goto oom;
	for (int32_t v = 0; v < t->nnodes; v++) {
		uint8_t k = t->nodes[v].kind;
		idx[v] = (k == TOPO_N_NIC || k == TOPO_N_SWITCH) ? nnet++ : -1;
	}
	S = nnet;
	T = nnet + 1;
	f.n = nnet + 2;
	cap_arcs = 2 * ((int64_t)t->nlinks + (int64_t)t->nhosts * nics);
	f.to = malloc((size_t)cap_arcs * sizeof(int32_t));
	f.cap = malloc((size_t)cap_arcs * sizeof(double));
	f.arc = malloc((size_t)cap_arcs * sizeof(int32_t));
	f.head = calloc((size_t)f.n + 1, sizeof(int32_t));
	f.level = malloc((size_t)f.n * sizeof(int32_t));
	f.it = malloc((size_t)f.n * sizeof(int32_t));
	f.q = malloc((size_t)f.n * sizeof(int32_t));
	deg = calloc((size_t)f.n + 1, sizeof(int32_t));
	if (!f.to || !f.cap || !f.arc || !f.head || !f.level || !f.it || !f.q || !deg)
		goto oom;
	for (int32_t l = 0; l < t->nlinks; l++)
		if (t->links[l].kind == TOPO_L_NET)
			inf += t->links[l].bw_Bps;
	inf = inf * 2 + 1;
#define ADD_ARC(a, b, c)                      \
	do {                                  \
		f.to[m] = (b);                \
		f.cap[m] = (c);               \
		f.to[m + 1] = (a);            \
		f.cap[m + 1] = 0;             \
		deg[(a)]++;                   \
		deg[(b)]++;                   \
		m += 2;                       \
	} while (0)
	for (int32_t l = 0; l < t->nlinks; l++) {
		const struct topo_link *k = &t->links[l];
		if (k->kind != TOPO_L_NET)
			continue;
		ADD_ARC(idx[k->from], idx[k->to], k->bw_Bps);
	}
	for (int32_t n = 0; n < t->nhosts * nics; n++) {
		int32_t v = idx[t->first_nic + n];
		if (n / nics < half)
			ADD_ARC(S, v, inf);
		else
			ADD_ARC(v, T, inf);
	}
#undef ADD_ARC
	/* CSR of arcs by tail: arc a's tail is to[a ^ 1] */
	for (int32_t v = 0; v < f.n; v++)
		f.head[v + 1] = f.head[v] + deg[v];
	memcpy(deg, f.head, (size_t)f.n * sizeof(int32_t));
	for (int64_t a = 0; a < m; a++)
		f.arc[deg[f.to[a ^ 1]]++] = (int32_t)a;
	f.m = m;
	flow = 0;
	while (mf_bfs(&f, S, T)) {
		double got;
		memcpy(f.it, f.head, (size_t)f.n * sizeof(int32_t));
		while ((got = mf_dfs(&f, S, T, inf)) > MF_EPS)
			flow += got;
	}
	goto done;
oom:
	ts_error_set(err, TS_ENOMEM, "out of memory computing the bisection of '%s'", t->cl.name);
	flow = TS_ENOMEM;
done:
	free(idx);
	free(deg);
	free(f.to);
	free(f.cap);
	free(f.arc);
	free(f.head);
	free(f.level);
	free(f.it);
	free(f.q);
	return flow;
}

/* ---- diameter ------------------------------------------------------------------------ */

/* Largest distance from src to any GPU (topo_bfs_all's rules); a GPU may
 * be reached in both states: its distance is the nearer one. */
static int max_hops_from(const struct topo *t, int32_t src, int32_t *dist, int32_t *q)
{
	int32_t best = 0;
	topo_bfs_all(t, src, dist, q);
	for (int32_t g = 0; g < t->ngpus; g++) {
		int32_t d0 = dist[g * 2], d1 = dist[g * 2 + 1];
		int32_t d = d0 < 0 ? d1 : (d1 < 0 || d0 < d1 ? d0 : d1);
		if (d > best)
			best = d;
	}
	return best;
}

static int diameter(const struct topo *t, struct ts_error *err)
{
	size_t n = (size_t)t->nnodes * 2;
	int32_t *dist = malloc(n * sizeof(int32_t)), *q = malloc(n * sizeof(int32_t));
	int best = 0, gpn = t->cl.node.gpus;
	if (!dist || !q) {
		free(dist);
		free(q);
		return ts_error_set(err, TS_ENOMEM, "out of memory computing the diameter");
	}
	/* Structured fabrics look the same from every host up to the partial
	 * last leaf/pod, so the GPUs of the first and last hosts see the worst
	 * pair; explicit fabrics (any shape) are searched from every GPU. */
	for (int32_t g = 0; g < t->ngpus; g++) {
		int h = g / gpn, d;
		if (!topo_rs(t)->explicit_fabric && h != 0 && h != t->nhosts - 1)
			continue;
		d = max_hops_from(t, g, dist, q);
		if (d > best)
			best = d;
	}
	free(dist);
	free(q);
	return best;
}

/* ---- the summary ---------------------------------------------------------------------- */

int topo_summarize(const struct topo *t, struct topo_summary *s, struct ts_error *err)
{
	int gpn = t->cl.node.gpus;
	memset(s, 0, sizeof(*s));
	s->hosts = t->nhosts;
	s->gpus = t->ngpus;
	for (int k = 1; k <= 3; k++) {
		s->switches_by_tier[k] = t->nswitch_by_tier[k];
		s->switches_total += t->nswitch_by_tier[k];
		s->ports_min[k] = INT32_MAX;
	}
	for (int32_t l = 0; l < t->nlinks; l++) {
		const struct topo_link *k = &t->links[l];
		if (k->rev < l)
			continue; /* count cables, not directions */
		s->links_by_tier[k->kind == TOPO_L_NET ? k->tier : 0]++;
		s->links_total++;
	}
	for (int32_t v = 0; v < t->nnodes; v++) {
		const struct topo_node *nv = &t->nodes[v];
		double dn = 0, upc = 0;
		if (nv->kind != TOPO_N_SWITCH)
			continue;
		if (nv->ports > s->ports_max[nv->tier])
			s->ports_max[nv->tier] = nv->ports;
		if (nv->ports < s->ports_min[nv->tier])
			s->ports_min[nv->tier] = nv->ports;
		for (int32_t k = t->out_off[v]; k < t->out_off[v + 1]; k++) {
			const struct topo_link *l = &t->links[t->out[k]];
			const struct topo_node *w = &t->nodes[l->to];
			if (w->kind == TOPO_N_SWITCH && w->tier > nv->tier)
				upc += l->bw_Bps;
			else if (w->kind != TOPO_N_SWITCH || w->tier < nv->tier)
				dn += l->bw_Bps;
		}
		if (upc > 0 && dn / upc > s->oversubscription[nv->tier])
			s->oversubscription[nv->tier] = dn / upc;
	}
	for (int k = 1; k <= 3; k++)
		if (s->ports_min[k] == INT32_MAX)
			s->ports_min[k] = 0;
	s->bisection_Bps = topo_bisection_Bps(t, err);
	if (s->bisection_Bps < 0)
		return (int)s->bisection_Bps;
	s->diameter_hops = diameter(t, err);
	if (s->diameter_hops < 0)
		return s->diameter_hops;
	/* ECMP: between the first and the last host (the farthest apart in
	 * host order), the most paths over their GPU pairs */
	s->ecmp_paths_max = 1;
	if (t->nhosts > 1 && t->cl.node.nics > 0)
		for (int a = 0; a < gpn; a++)
			for (int b = 0; b < gpn; b++) {
				int64_t c = topo_route_count(t, a, (t->nhosts - 1) * gpn + b);
				if (c < 0)
					return ts_error_set(err, (int)c, "out of memory counting paths");
				if (c > s->ecmp_paths_max)
					s->ecmp_paths_max = c;
			}
	return 0;
}

/* ---- Graphviz ------------------------------------------------------------------------- */

static void dot_name(const struct topo *t, int32_t v, char *buf, size_t n)
{
	const struct topo_node *nv = &t->nodes[v];
	static const char *const kind[] = { "gpu", "nic", "pcie", "nvswitch", "sw" };
	if (nv->kind == TOPO_N_SWITCH)
		snprintf(buf, n, "sw%d_t%d", (int)v, nv->tier);
	else
		snprintf(buf, n, "h%d_%s%d", (int)nv->host, kind[nv->kind], (int)v);
}

int topo_write_dot(const struct topo *t, const char *path, struct afile *keep, struct ts_error *err)
{
	struct afile own = AFILE_INIT, *a = keep ? keep : &own;
	char na[48], nb[48];
	int rc;
	if (t->nnodes > TOPO_DOT_MAX_NODES)
		return ts_error_set(err, TS_EINPUT,
				    "'%s': %d graph nodes is too many to draw (limit %d); use fewer "
				    "--nodes", path, (int)t->nnodes, TOPO_DOT_MAX_NODES);
	if ((rc = afile_open(a, path, err)))
		return rc;
	/* the name as a DOT string: '"' and '\\' escaped (found by review: a
	 * quote in the cluster's name wrote an invalid file) */
	fputs("graph \"", a->f);
	for (const char *q = t->cl.name; *q; q++) {
		if (*q == '"' || *q == '\\')
			fputc('\\', a->f);
		fputc(*q, a->f);
	}
	fputs("\" {\n  overlap=false;\n", a->f);
	for (int32_t v = 0; v < t->nnodes; v++) {
		static const char *const shape[] = { "box", "ellipse", "diamond", "hexagon",
						     "doubleoctagon" };
		dot_name(t, v, na, sizeof(na));
		fprintf(a->f, "  %s [shape=%s];\n", na, shape[t->nodes[v].kind]);
	}
	for (int32_t l = 0; l < t->nlinks; l++) {
		const struct topo_link *k = &t->links[l];
		char bw[32];
		if (k->rev < l)
			continue;
		dot_name(t, k->from, na, sizeof(na));
		dot_name(t, k->to, nb, sizeof(nb));
		fprintf(a->f, "  %s -- %s [label=\"%s\"];\n", na, nb,
			units_fmt_bw(k->bw_Bps, bw, sizeof(bw)));
	}
	fprintf(a->f, "}\n");
	return keep ? afile_finish(a, err) : afile_commit(a, err);
}
