/* net.c: the network layer's common part: links from a topology, transport
 * parameters, and dispatch of transfers to the flow or packet model. */
#include <stdlib.h>
#include <string.h>

#include "sim/sim_int.h"

void sim_net_params_default(struct sim_net_params *p)
{
	memset(p, 0, sizeof(*p));
	p->tcp = false;
	p->buffer_bytes = 1 << 20;          /* assumption, see sim.h */
	p->pfc_bytes = 3 << 18;             /* 3/4 of the buffer: assumption */
	p->window_pkts = 256;               /* assumption, see sim.h */
	p->rto_ps = 100 * TS_PS_PER_US;     /* assumption */
	p->ring_coupled_above = 64;         /* see sim.h: coupled rings */
}

double sim_nvlink_eff(int sm_arch)
{
	/* NCCL's per-link NVLink speed (nccl.md §1.5: SM80_NVLINK_BW 20.0,
	 * SM90_NVLINK_BW 20.6, SM100_NVLINK_BW 40.1 GB/s) over the per-link
	 * line rate per direction (hardware.md: NVLink 3/4 50 GB/s both
	 * directions per link = 25 each way; NVLink 5 1800/18/2 = 50). For
	 * 18 H100 links this is 18 x 20.6 = 370.8 GB/s of 450: the "about
	 * 20% protocol overhead" the maintainers quote (nccl.md §2.3). */
	if (sm_arch >= 100)
		return 40.1 / 50.0;
	if (sm_arch >= 90)
		return 20.6 / 25.0;
	return 20.0 / 25.0;
}

int sim_net_init(struct sim_net *n, struct sim_engine *e, enum sim_fidelity kind,
		 const struct sim_link *links, int32_t nlinks, const struct sim_net_params *p,
		 struct ts_error *err)
{
	int32_t i;
	int rc;
	memset(n, 0, sizeof(*n));
	n->eng = e;
	n->kind = kind;
	if (p)
		n->par = *p;
	else
		sim_net_params_default(&n->par);
	if (nlinks < 0)
		return ts_error_set(err, TS_EINPUT, "negative link count");
	for (i = 0; i < nlinks; i++) {
		if (!(links[i].bw_Bps > 0) || links[i].lat_ps < 0 || links[i].mtu_bytes < 0 ||
		    links[i].overhead_bytes < 0)
			return ts_error_set(err, TS_EINPUT,
					    "link %d: capacity must be positive and latency, mtu, "
					    "overhead non-negative", (int)i);
	}
	n->links = malloc((size_t)(nlinks ? nlinks : 1) * sizeof(*n->links));
	if (!n->links)
		return ts_error_set(err, TS_ENOMEM, "out of memory for %d links", (int)nlinks);
	if (nlinks)
		memcpy(n->links, links, (size_t)nlinks * sizeof(*links));
	n->nlinks = nlinks;
	if (kind == SIM_FLOW)
		rc = simf_init(n, err);
	else if (kind == SIM_PACKET)
		rc = simp_init(n, err);
	else
		rc = 0;
	if (rc)
		goto fail;
	return 0;
fail:
	sim_net_release(n);
	return rc;
}

void sim_link_of_topo(const struct topo *t, int32_t i, struct sim_link *l)
{
	const struct topo_link *tl = &t->links[i];
	l->bw_Bps = tl->bw_Bps;
	l->lat_ps = tl->lat_ps;
	l->mtu_bytes = tl->mtu_bytes;
	l->overhead_bytes = tl->overhead_bytes;
	l->net = tl->kind == TOPO_L_NET;
	if (l->net)
		l->mtu_bytes = sim_payload_mtu(t->cl.fabric.transport, l->mtu_bytes);
	if (tl->kind == TOPO_L_NVLINK) {
		/* NCCL's effective speed covers all NVLink protocol
		 * overhead, so no per-packet header on top. */
		l->bw_Bps = tl->bw_Bps * sim_nvlink_eff(t->cl.gpu.sm_arch);
		l->overhead_bytes = 0;
	} else if (tl->kind == TOPO_L_PCIE) {
		/* PCIe's TLP framing (topo/build.c: 24 B per 256 B
		 * payload) taken from the rate, packets kept whole: the
		 * ~32/64 GB/s of a Gen4/Gen5 x16 link is the rate after
		 * line encoding, before the transaction layer (found by
		 * review: the headers were assumed inside it, a 1 GiB
		 * all-reduce on the PCIe preset at 31.98 GB/s busbw,
		 * above 32 x 256/280) */
		if (tl->mtu_bytes > 0 && tl->overhead_bytes > 0)
			l->bw_Bps = tl->bw_Bps * tl->mtu_bytes /
				    (tl->mtu_bytes + tl->overhead_bytes);
		l->overhead_bytes = 0;
	}
}

double sim_link_cap_topo(const struct topo *t, int32_t i)
{
	struct sim_link l;
	sim_link_of_topo(t, i, &l);
	return l.bw_Bps * simn_payload_eff(&l);
}

int sim_net_init_topo(struct sim_net *n, struct sim_engine *e, enum sim_fidelity kind,
		      const struct topo *t, struct ts_error *err)
{
	struct sim_net_params p;
	struct sim_link *l;
	int32_t i;
	int rc;
	l = malloc((size_t)(t->nlinks ? t->nlinks : 1) * sizeof(*l));
	if (!l)
		return ts_error_set(err, TS_ENOMEM, "out of memory for %d links", (int)t->nlinks);
	for (i = 0; i < t->nlinks; i++)
		sim_link_of_topo(t, i, &l[i]);
	sim_net_params_default(&p);
	p.tcp = t->cl.fabric.transport == TOPO_TRANSPORT_TCP;
	p.tcp_byte_s = t->cl.fabric.tcp_byte_s;
	p.tcp_msg_s = t->cl.fabric.tcp_msg_s;
	rc = sim_net_init(n, e, kind, l, t->nlinks, &p, err);
	free(l);
	return rc;
}

void sim_net_release(struct sim_net *n)
{
	simf_release(n);
	simp_release(n);
	free(n->links);
	n->links = NULL;
	n->nlinks = 0;
}

/* A link's first slot in simn_send_paths' open-addressing table. */
static inline uint32_t link_slot(int32_t l, uint32_t mask)
{
	return ((uint32_t)l * 2654435761u) & mask;
}

int simn_send_paths(struct sim_net *n, const int32_t *links, int nl, int parts, double bytes,
		    simtime_ps start_delay_ps, sim_xfer_done done, void *ctx, uint64_t arg,
		    int32_t *id_out)
{
	/* distinct links in order of first appearance, counted through an
	 * open-addressing table of indices into u (-1: empty) */
	enum { ON_STACK = SIM_SPRAY_MAX_PATHS * TOPO_MAX_HOPS };
	int32_t su[ON_STACK], st[2 * ON_STACK], *u = su, *tab = st;
	double sc[ON_STACK], *coef = sc;
	uint32_t mask = 1;
	int i, m = 0, rc;
	TS_ASSERT(n->kind == SIM_FLOW && parts >= 1 && bytes > 0);
	if (nl <= 0)
		return TS_EINPUT;
	while (mask + 1 < 2 * (uint32_t)nl)
		mask = mask * 2 + 1;
	if (nl > ON_STACK) {
		u = malloc((size_t)nl * sizeof(*u));
		coef = malloc((size_t)nl * sizeof(*coef));
		tab = malloc(((size_t)mask + 1) * sizeof(*tab));
		if (!u || !coef || !tab) {
			rc = TS_ENOMEM;
			goto out;
		}
	}
	memset(tab, 0xff, ((size_t)mask + 1) * sizeof(*tab));
	/* the first link outside the loop (nl > 0): GCC 12 at -O3 does not
	 * see that the loop writes u and coef, and warned at the call below
	 * (-Wmaybe-uninitialized: an error with TRAINSIM_WERROR) */
	TS_ASSERT(links[0] >= 0 && links[0] < n->nlinks);
	tab[link_slot(links[0], mask)] = 0;
	u[0] = links[0];
	coef[0] = 1;
	m = 1;
	for (i = 1; i < nl; i++) {
		int32_t l = links[i];
		uint32_t k = link_slot(l, mask);
		TS_ASSERT(l >= 0 && l < n->nlinks);
		while (tab[k] >= 0 && u[tab[k]] != l)
			k = (k + 1) & mask;
		if (tab[k] >= 0) {
			coef[tab[k]] += 1;
			continue;
		}
		tab[k] = m;
		u[m] = l;
		coef[m++] = 1;
	}
	for (i = 0; i < m; i++)
		coef[i] /= parts; /* the fraction of the paths that cross it */
	rc = simf_send_spread(n, u, coef, m, bytes, start_delay_ps, done, ctx, arg, id_out);
out:
	if (u != su) {
		free(u);
		free(coef);
		free(tab);
	}
	return rc;
}

int sim_net_send_paths(struct sim_net *n, const int32_t *links, int nl, int parts, double bytes,
		       simtime_ps start_delay_ps, sim_xfer_done done, void *ctx, uint64_t arg)
{
	TS_ASSERT(start_delay_ps >= 0);
	if (nl > 0 && simn_tcp_path(n, links, nl))
		start_delay_ps += time_from_s(n->par.tcp_msg_s); /* per-message host cost */
	return simn_send_paths(n, links, nl, parts, bytes, start_delay_ps, done, ctx, arg, NULL);
}

int sim_net_send(struct sim_net *n, const int32_t *path, int hops, double bytes,
		 simtime_ps start_delay_ps, sim_xfer_done done, void *ctx, uint64_t arg)
{
	int i;
	TS_ASSERT((bytes > 0 || (hops == 0 && bytes == 0)) && hops >= 0 && hops <= TOPO_MAX_HOPS && start_delay_ps >= 0);
	for (i = 0; i < hops; i++)
		TS_ASSERT(path[i] >= 0 && path[i] < n->nlinks);
	if (simn_tcp_path(n, path, hops))
		start_delay_ps += time_from_s(n->par.tcp_msg_s); /* per-message host cost */
	if (n->kind == SIM_FLOW)
		return simf_send(n, path, hops, bytes, start_delay_ps, done, ctx, arg, NULL);
	if (n->kind == SIM_PACKET)
		return simp_send(n, path, hops, bytes, start_delay_ps, done, ctx, arg);
	TS_BUG("sim_net_send on an analytic network");
}
