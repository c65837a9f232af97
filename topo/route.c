/* route.c: equal-cost shortest paths between GPUs and the seeded ECMP
 * choice among them.
 *
 * Structured fabrics: a route is computed from the layered Clos tables in
 * O(hops) with no per-pair state: up to the lowest common tier (same leaf,
 * same pod's spines, or the cores), choosing the uplinks by the path index,
 * then down deterministically. Path i of the N equal-cost ones is decoded
 * from i as a mixed-radix number, so topo_route_nth enumerates every path
 * exactly once and topo_route picks i = hash(seed, flow) mod N, or under
 * "dmodk" routing the destination's static route (clos_dmodk).
 *
 * Explicit fabrics: a breadth-first search from the destination NIC over the
 * network (switches forward, NICs do not), counting shortest paths per node;
 * path i is decoded by walking down the count DAG. O(V+E) per query: these
 * fabrics are small by construction. */
#include <stdlib.h>
#include <string.h>

#include "common/rng.h"
#include "topo/topo_priv.h"

/* ---- structured ------------------------------------------------------------------- */

/* Number of fabric paths between two NIC indices (1 if on the same leaf). */
static int64_t clos_count(const struct topo *t, int32_t na, int32_t nb)
{
	const struct topo_rs *rs = topo_rs(t);
	int32_t la = t->nic_leaf[na] - rs->first_leaf, lb = t->nic_leaf[nb] - rs->first_leaf;
	int64_t S = rs->S, u = rs->u, C = rs->C, v = rs->v;
	if (la == lb)
		return 1;
	if (rs->tiers < 3 || la / rs->lpp == lb / rs->lpp)
		return S * u * u;
	return S * u * C * v * v * u;
}

/* Append the fabric part of path i (0 <= i < clos_count) between NICs. */
static int clos_path(const struct topo *t, int32_t na, int32_t nb, int64_t i, int32_t *out)
{
	const struct topo_rs *rs = topo_rs(t);
	int32_t la = t->nic_leaf[na] - rs->first_leaf, lb = t->nic_leaf[nb] - rs->first_leaf;
	int64_t S = rs->S, u = rs->u, C = rs->C, v = rs->v;
	int n = 0;
	out[n++] = rs->nic_up[na];
	if (la != lb) {
		const int32_t *upa = rs->leaf_up + (size_t)la * S * u;
		const int32_t *upb = rs->leaf_up + (size_t)lb * S * u;
		int pa = la / rs->lpp, pb = lb / rs->lpp;
		if (rs->tiers < 3 || pa == pb) {
			int64_t cd = i % u, cu = (i / u) % u, s = i / (u * u);
			out[n++] = upa[s * u + cu];
			out[n++] = t->links[upb[s * u + cd]].rev;
		} else {
			int64_t cd = i % u, cv2 = (i / u) % v, cv1 = (i / (u * v)) % v;
			int64_t j = (i / (u * v * v)) % C, cu = (i / (u * v * v * C)) % u;
			int64_t s = i / (u * v * v * C * u);
			const int32_t *spa = rs->spine_up + ((size_t)pa * S + s) * C * v;
			const int32_t *spb = rs->spine_up + ((size_t)pb * S + s) * C * v;
			out[n++] = upa[s * u + cu];
			out[n++] = spa[j * v + cv1];
			out[n++] = t->links[spb[j * v + cv2]].rev;
			out[n++] = t->links[upb[s * u + cd]].rev;
		}
	}
	out[n++] = t->links[rs->nic_up[nb]].rev;
	return n;
}

/* D-mod-K (destination-based static routing, as InfiniBand's fat-tree
 * routing engine computes it; Zahavi et al., "Optimized InfiniBand fat-tree
 * routing for shift all-to-all communication patterns", 2010), on the
 * Clos seen as an extended generalised fat tree whose level-2 switches are
 * the (spine, cable) pairs of a leaf's S*u uplinks: destination NIC d,
 * numbered leaf by leaf in port order, goes up from every leaf on uplink
 * q = d mod (S*u) (spines first, then their cables) and, across pods, from
 * that spine on one of the w = C*v/u uplinks that cable q's share holds,
 * (d / (S*u)) mod w. Down it takes the cables its up route took, so each
 * down cable serves the destinations of one port index, and on a
 * non-blocking fabric a shift permutation puts one route on each link
 * (tests/test_topo.c). Where u does not divide C*v (an oversubscribed
 * spine) the spine's uplink is (cu + u*(d / (S*u))) mod (C*v), still
 * static. Returns clos_path's index. */
static int64_t clos_dmodk(const struct topo *t, int32_t na, int32_t nb)
{
	const struct topo_rs *rs = topo_rs(t);
	int32_t la = t->nic_leaf[na] - rs->first_leaf, lb = t->nic_leaf[nb] - rs->first_leaf;
	int64_t S = rs->S, u = rs->u, C = rs->C, v = rs->v, K = S * u, d, q, s, cu, p2, j, cv;
	int nics = t->cl.node.nics;
	if (la == lb)
		return 0;
	/* the destination's port on its leaf (build.c's nic_leaf_index) */
	d = (int64_t)lb * rs->hpl + (rs->rails ? (nb / nics) % rs->hpl : nb % rs->hpl);
	q = d % K;
	s = q % S;
	cu = q / S;
	if (rs->tiers < 3 || la / rs->lpp == lb / rs->lpp)
		return cu + u * (cu + u * s);
	if ((C * v) % u == 0)
		p2 = cu * (C * v / u) + (d / K) % (C * v / u);
	else /* (the cable still spreads them: found by review, d/K alone put
	      * a spine's u cables' destinations on one uplink) */
		p2 = (cu + u * (d / K)) % (C * v);
	j = p2 % C;
	cv = p2 / C;
	return cu + u * (cv + v * (cv + v * (j + C * (cu + u * s))));
}

/* ---- explicit: BFS from the destination ---------------------------------------------- */

struct xbfs {
	int32_t *dist;   /* [nnodes] hops to the destination NIC, -1 unreached */
	int64_t *cnt;    /* [nnodes] shortest paths to the destination (saturating) */
	int32_t *queue;  /* [nnodes] */
};

static bool net_forwards(const struct topo *t, int32_t v)
{
	return t->nodes[v].kind == TOPO_N_SWITCH;
}

/* Distances and path counts to NIC node dst over NET links; a node forwards
 * only if it is a switch (so paths are NIC, switches..., NIC). */
static int xbfs_run(const struct topo *t, int32_t dst, struct xbfs *b)
{
	int32_t head = 0, tail = 0;
	size_t n = (size_t)t->nnodes;
	b->dist = malloc(n * sizeof(int32_t));
	b->cnt = calloc(n, sizeof(int64_t));
	b->queue = malloc(n * sizeof(int32_t));
	if (!b->dist || !b->cnt || !b->queue)
		return TS_ENOMEM;
	for (size_t v = 0; v < n; v++)
		b->dist[v] = -1;
	b->dist[dst] = 0;
	b->cnt[dst] = 1;
	b->queue[tail++] = dst;
	while (head < tail) {
		int32_t w = b->queue[head++];
		if (w != dst && !net_forwards(t, w))
			continue; /* a NIC other than dst is a dead end */
		/* predecessors: links v -> w are the reverses of w's out links */
		for (int32_t k = t->out_off[w]; k < t->out_off[w + 1]; k++) {
			const struct topo_link *l = &t->links[t->out[k]];
			int32_t v = l->to;
			if (l->kind != TOPO_L_NET)
				continue;
			if (b->dist[v] < 0) {
				b->dist[v] = b->dist[w] + 1;
				b->queue[tail++] = v;
			}
			if (b->dist[v] == b->dist[w] + 1) {
				int64_t s = b->cnt[v] + b->cnt[w];
				b->cnt[v] = s < 0 || s > ((int64_t)1 << 60) ? ((int64_t)1 << 60) : s;
			}
		}
	}
	return 0;
}

static void xbfs_free(struct xbfs *b)
{
	free(b->dist);
	free(b->cnt);
	free(b->queue);
}

/* Fabric paths NIC na -> NIC nb: count, and path i when out != NULL. */
static int64_t xpath(const struct topo *t, int32_t na, int32_t nb, int64_t i, int32_t *out,
		     int *nout)
{
	struct xbfs b = { 0 };
	int32_t src = t->first_nic + na, dst = t->first_nic + nb, v = src;
	int64_t count;
	int n = 0;
	if (xbfs_run(t, dst, &b)) {
		xbfs_free(&b);
		return TS_ENOMEM;
	}
	count = b.dist[src] < 0 ? 0 : b.cnt[src];
	if (out && count > 0) {
		if (b.dist[src] > TOPO_MAX_HOPS - 4) { /* 4 hops inside the hosts */
			xbfs_free(&b);
			return TS_EINPUT;
		}
		i %= count;
		while (v != dst) {
			for (int32_t k = t->out_off[v]; k < t->out_off[v + 1]; k++) {
				int32_t lid = t->out[k], w = t->links[lid].to;
				if (t->links[lid].kind != TOPO_L_NET || b.dist[w] != b.dist[v] - 1)
					continue;
				if (w != dst && !net_forwards(t, w))
					continue;
				if (i < b.cnt[w]) {
					out[n++] = lid;
					v = w;
					break;
				}
				i -= b.cnt[w];
			}
		}
	}
	if (nout)
		*nout = n;
	xbfs_free(&b);
	return count;
}

/* ---- the host part -------------------------------------------------------------------- */

/* Path inside one host (GPUs a != b on the same host). */
static int intra_path(const struct topo *t, int32_t a, int32_t b, int32_t *out)
{
	const struct topo_rs *rs = topo_rs(t);
	int32_t pa, pb;
	if (rs->gpu_nvs[a] >= 0) {
		out[0] = rs->gpu_nvs[a];
		out[1] = t->links[rs->gpu_nvs[b]].rev;
		return 2;
	}
	pa = topo_gpu_psw(t, a);
	pb = topo_gpu_psw(t, b);
	if (pa == pb) {
		out[0] = rs->gpu_psw[a];
		out[1] = t->links[rs->gpu_psw[b]].rev;
		return 2;
	}
	out[0] = rs->gpu_psw[a];
	out[1] = rs->psw_root[pa];
	out[2] = t->links[rs->psw_root[pb]].rev;
	out[3] = t->links[rs->gpu_psw[b]].rev;
	return 4;
}

static int path_nth(const struct topo *t, int32_t a, int32_t b, int64_t i, int32_t *out)
{
	const struct topo_rs *rs = topo_rs(t);
	int32_t na, nb;
	int n = 0, m = 0;
	if (a < 0 || b < 0 || a >= t->ngpus || b >= t->ngpus)
		return TS_EINPUT;
	if (a == b)
		return 0;
	if (topo_gpu_host(t, a) == topo_gpu_host(t, b))
		return intra_path(t, a, b, out);
	na = topo_gpu_nic_index(t, a);
	nb = topo_gpu_nic_index(t, b);
	if (na < 0 || nb < 0)
		return TS_EINPUT;
	out[n++] = rs->gpu_psw[a];
	out[n++] = rs->psw_nic[topo_gpu_psw(t, a)];
	if (rs->explicit_fabric) {
		int64_t c = xpath(t, na, nb, i, out + n, &m);
		if (c <= 0)
			return c < 0 ? (int)c : TS_EINPUT;
	} else {
		m = clos_path(t, na, nb, i, out + n);
	}
	n += m;
	out[n++] = t->links[rs->psw_nic[topo_gpu_psw(t, b)]].rev;
	out[n++] = t->links[rs->gpu_psw[b]].rev;
	return n;
}

int64_t topo_route_count(const struct topo *t, int32_t a, int32_t b)
{
	const struct topo_rs *rs = topo_rs(t);
	int32_t na, nb;
	if (a < 0 || b < 0 || a >= t->ngpus || b >= t->ngpus)
		return TS_EINPUT;
	if (a == b || topo_gpu_host(t, a) == topo_gpu_host(t, b))
		return 1;
	na = topo_gpu_nic_index(t, a);
	nb = topo_gpu_nic_index(t, b);
	if (na < 0 || nb < 0)
		return 0;
	if (rs->explicit_fabric)
		return xpath(t, na, nb, 0, NULL, NULL);
	return clos_count(t, na, nb);
}

int topo_route_nth(const struct topo *t, int32_t a, int32_t b, int64_t i, int32_t *links)
{
	int64_t c = topo_route_count(t, a, b);
	if (c <= 0)
		return c < 0 ? (int)c : TS_EINPUT;
	if (i < 0 || i >= c)
		return TS_EINPUT;
	return path_nth(t, a, b, i, links);
}

int topo_route(const struct topo *t, int32_t a, int32_t b, uint64_t hash, int32_t *links)
{
	int64_t c;
	if (a < 0 || b < 0 || a >= t->ngpus || b >= t->ngpus)
		return TS_EINPUT;
	if (a == b || topo_gpu_host(t, a) == topo_gpu_host(t, b))
		return path_nth(t, a, b, 0, links);
	if (topo_rs(t)->explicit_fabric) /* count inside the one BFS */
		return path_nth(t, a, b, (int64_t)(rng_hash2(t->cl.seed, hash) >> 1), links);
	c = topo_route_count(t, a, b);
	if (c <= 0)
		return c < 0 ? (int)c : TS_EINPUT;
	if (t->cl.fabric.routing == TOPO_ROUTING_DMODK)
		return path_nth(t, a, b,
				clos_dmodk(t, topo_gpu_nic_index(t, a), topo_gpu_nic_index(t, b)),
				links);
	return path_nth(t, a, b, (int64_t)(rng_hash2(t->cl.seed, hash) % (uint64_t)c), links);
}

/* ---- independent BFS (tests, diameter) ------------------------------------------------- */

/* States: node v with flag 1 once the path has come down out of the network
 * into a host (it may not go up again: hosts do not forward); GPUs other
 * than src do not forward; NICs do not forward between switches. Fills
 * dist[2 * nnodes] (-1 unreached) using q[2 * nnodes] as the queue. */
void topo_bfs_all(const struct topo *t, int32_t src, int32_t *dist, int32_t *q)
{
	int32_t head = 0, tail = 0;
	size_t n = (size_t)t->nnodes * 2;
	for (size_t v = 0; v < n; v++)
		dist[v] = -1;
	dist[src * 2] = 0;
	q[tail++] = src * 2;
	while (head < tail) {
		int32_t s = q[head++], v = s / 2, down = s % 2;
		if (t->nodes[v].kind == TOPO_N_GPU && v != src)
			continue;
		for (int32_t k = t->out_off[v]; k < t->out_off[v + 1]; k++) {
			const struct topo_link *l = &t->links[t->out[k]];
			int nd = down;
			if (l->kind == TOPO_L_NET) {
				if (down)
					continue; /* came down into a host: no way back up */
				if (t->nodes[l->to].kind == TOPO_N_NIC)
					nd = 1;   /* NICs do not forward between switches */
			}
			if (dist[l->to * 2 + nd] >= 0)
				continue;
			dist[l->to * 2 + nd] = dist[s] + 1;
			q[tail++] = l->to * 2 + nd;
		}
	}
}

int topo_bfs_hops(const struct topo *t, int32_t src, int32_t dst)
{
	size_t n = (size_t)t->nnodes * 2;
	int32_t *dist, *q, d0, d1;
	if (src < 0 || dst < 0 || src >= t->ngpus || dst >= t->ngpus)
		return TS_EINPUT;
	dist = malloc(n * sizeof(int32_t));
	q = malloc(n * sizeof(int32_t));
	if (!dist || !q) {
		free(dist);
		free(q);
		return TS_ENOMEM;
	}
	topo_bfs_all(t, src, dist, q);
	d0 = dist[dst * 2];
	d1 = dist[dst * 2 + 1];
	free(dist);
	free(q);
	return d0 < 0 ? d1 : (d1 < 0 || d0 < d1 ? d0 : d1);
}
