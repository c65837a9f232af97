/* build.c: cluster description -> directed graph of GPUs, NICs, PCIe
 * switches, NVSwitches and network switches; rank placement.
 *
 * Cost: O(nodes + links). Only the leaves and pods the node count needs are
 * built (32 DGX on a k=64 fabric build one pod, not 64). */
#include <stdlib.h>
#include <string.h>

#include "common/rng.h"
#include "topo/topo_priv.h"

/* PCIe transaction layer packets: 256 B max payload and about 24 B of
 * header, sequence number, LCRC and framing per TLP (assumption: typical
 * server setting; PCIe base spec values vary with the platform). */
#define PCIE_MTU 256
#define PCIE_OVERHEAD 24
/* NVLink: the protocol overhead NCCL sees (about 20%, nccl.md §2.3) is
 * modelled by the protocol factors in sim/, so the links carry no per-packet
 * overhead here. */
#define NVLINK_MTU 4096
#define NVLINK_OVERHEAD 0

struct gb {                      /* growing graph under construction */
	struct topo *t;
	int32_t cap_links;       /* allocated directed links */
};

static int add_node(struct topo *t, int32_t id, uint8_t kind, uint8_t tier, int32_t host)
{
	struct topo_node *n = &t->nodes[id];
	n->kind = kind;
	n->tier = tier;
	n->host = host;
	n->ports = 0;
	return id;
}

/* One cable: two directed links, a->b then b->a. Returns the a->b id, or -1
 * when out of memory. lat_ab is the latency of a->b (propagation plus the
 * switch latency of b if b is a switch), likewise lat_ba. */
static int32_t add_cable(struct gb *g, int32_t a, int32_t b, uint8_t kind, uint8_t tier,
			 double bw_Bps, double lat_ab_s, double lat_ba_s, int mtu, int ovh)
{
	struct topo *t = g->t;
	int32_t id = t->nlinks;
	if (t->nlinks + 2 > g->cap_links) {
		int32_t cap = g->cap_links ? g->cap_links * 2 : 1024;
		struct topo_link *nl = realloc(t->links, (size_t)cap * sizeof(*nl));
		if (!nl)
			return -1;
		t->links = nl;
		g->cap_links = cap;
	}
	for (int d = 0; d < 2; d++) {
		struct topo_link *l = &t->links[id + d];
		l->from = d ? b : a;
		l->to = d ? a : b;
		l->rev = id + 1 - d;
		l->kind = kind;
		l->tier = tier;
		l->bw_Bps = bw_Bps;
		l->lat_ps = time_from_s(d ? lat_ba_s : lat_ab_s);
		l->mtu_bytes = mtu;
		l->overhead_bytes = ovh;
	}
	t->nodes[a].ports++;
	t->nodes[b].ports++;
	t->nlinks += 2;
	return id;
}

static int32_t *alloc_ids(size_t n)
{
	int32_t *p = malloc((n ? n : 1) * sizeof(int32_t));
	if (p)
		for (size_t i = 0; i < n; i++)
			p[i] = -1;
	return p;
}

static int32_t nic_leaf_index(const struct topo_rs *rs, int nics, int32_t host, int nic)
{
	if (rs->rails)
		return (host / rs->hpl) * nics + nic;
	return (int32_t)(((int64_t)host * nics + nic) / rs->hpl);
}

/* Layered Clos parameters from the fabric spec (validated before). */
static void clos_params(const struct topo_cluster *c, struct topo_rs *rs)
{
	const struct topo_fabric_spec *f = &c->fabric;
	rs->rails = f->rails;
	rs->u = rs->v = 1;
	rs->C = 0;
	switch (f->kind) {
	case TOPO_FABRIC_SWITCH:
		rs->tiers = 1;
		rs->hpl = c->nodes * c->node.nics;
		rs->lpp = 1;
		rs->S = 0;
		rs->rails = 0;
		break;
	case TOPO_FABRIC_FAT_TREE:
		rs->tiers = f->tiers;
		rs->hpl = f->k / 2;
		rs->S = f->k / 2;
		rs->lpp = f->tiers == 2 ? f->k : f->k / 2;
		rs->C = f->tiers == 3 ? f->k / 2 : 0;
		break;
	case TOPO_FABRIC_LEAF_SPINE:
	case TOPO_FABRIC_CLOS3:
		rs->tiers = f->kind == TOPO_FABRIC_CLOS3 ? 3 : 2;
		rs->hpl = f->hosts_per_leaf;
		rs->lpp = f->leaves;
		rs->S = f->spines;
		rs->u = f->uplinks_per_leaf / f->spines;
		if (rs->tiers == 3) {
			rs->C = f->super_spines / f->spines;
			rs->v = f->spine_uplinks / rs->C;
		}
		break;
	default:
		rs->tiers = 0;
		break;
	}
}

static int build_network(struct gb *g, struct ts_error *err)
{
	struct topo *t = g->t;
	struct topo_rs *rs = topo_rs(t);
	const struct topo_cluster *c = &t->cl;
	const struct topo_fabric_spec *f = &c->fabric;
	int nics = c->node.nics;
	int32_t nnics = t->nhosts * nics;
	double sl = f->switch_lat_s, pl = f->link_lat_s;
	int mtu = f->mtu_bytes, ovh = f->overhead_bytes;

	if (rs->explicit_fabric) {
		for (int i = 0; i < f->nxlinks; i++) {
			const struct topo_xlink *x = &f->xlinks[i];
			int32_t a = x->a >= 0 ? rs->first_sw + x->a : t->first_nic + (-x->a - 1);
			int32_t b = x->b >= 0 ? rs->first_sw + x->b : t->first_nic + (-x->b - 1);
			int ta = x->a >= 0 ? f->xswitches[x->a].tier : 0;
			int tb = x->b >= 0 ? f->xswitches[x->b].tier : 0;
			uint8_t tier = (uint8_t)(x->a < 0 || x->b < 0 ? 1 : (ta > tb ? ta : tb));
			int32_t id = add_cable(g, a, b, TOPO_L_NET, tier, x->bw_Bps,
					       x->lat_s + (x->b >= 0 ? sl : 0),
					       x->lat_s + (x->a >= 0 ? sl : 0), mtu, ovh);
			if (id < 0)
				return TS_ENOMEM;
			if (x->a < 0 && rs->nic_up[-x->a - 1] < 0) {
				rs->nic_up[-x->a - 1] = id;
				t->nic_leaf[-x->a - 1] = b;
			}
			if (x->b < 0 && rs->nic_up[-x->b - 1] < 0) {
				rs->nic_up[-x->b - 1] = id + 1;
				t->nic_leaf[-x->b - 1] = a;
			}
		}
		for (int32_t n = 0; n < nnics; n++)
			if (rs->nic_up[n] < 0)
				return ts_error_set(err, TS_EINPUT,
						    "cluster '%s': fabric.links: host%d/nic%d is not "
						    "cabled to any switch", c->name, n / nics, n % nics);
		return 0;
	}

	if (rs->tiers == 0) /* fabric "none": the NICs stay unconnected */
		return 0;
	/* NIC -> leaf */
	for (int32_t n = 0; n < nnics; n++) {
		int32_t leaf = nic_leaf_index(rs, nics, n / nics, n % nics);
		int32_t id = add_cable(g, t->first_nic + n, rs->first_leaf + leaf, TOPO_L_NET, 1,
				       c->node.nic_Bps, pl + sl, pl, mtu, ovh);
		if (id < 0)
			return TS_ENOMEM;
		rs->nic_up[n] = id;
		t->nic_leaf[n] = rs->first_leaf + leaf;
	}
	/* leaf -> spine of its pod, u cables each */
	if (rs->first_spine >= 0)
		for (int32_t l = 0; l < rs->nleaves; l++) {
			int pod = l / rs->lpp;
			for (int s = 0; s < rs->S; s++)
				for (int k = 0; k < rs->u; k++) {
					int32_t sp = rs->first_spine + pod * rs->S + s;
					int32_t id = add_cable(g, rs->first_leaf + l, sp, TOPO_L_NET, 2,
							       f->link_Bps, pl + sl, pl + sl, mtu, ovh);
					if (id < 0)
						return TS_ENOMEM;
					rs->leaf_up[(size_t)l * rs->S * rs->u + s * rs->u + k] = id;
				}
		}
	/* spine s of pod p -> the C cores of plane s, v cables each */
	if (rs->first_core >= 0)
		for (int p = 0; p < rs->npods; p++)
			for (int s = 0; s < rs->S; s++)
				for (int j = 0; j < rs->C; j++)
					for (int k = 0; k < rs->v; k++) {
						int32_t sp = rs->first_spine + p * rs->S + s;
						int32_t co = rs->first_core + s * rs->C + j;
						int32_t id = add_cable(g, sp, co, TOPO_L_NET, 3, f->link_Bps,
								       pl + sl, pl + sl, mtu, ovh);
						if (id < 0)
							return TS_ENOMEM;
						rs->spine_up[((size_t)p * rs->S + s) * rs->C * rs->v +
							     j * rs->v + k] = id;
					}
	return 0;
}

static int build_csr(struct topo *t)
{
	t->out_off = calloc((size_t)t->nnodes + 1, sizeof(int32_t));
	t->out = malloc(((size_t)t->nlinks + 1) * sizeof(int32_t));
	if (!t->out_off || !t->out)
		return TS_ENOMEM;
	for (int32_t l = 0; l < t->nlinks; l++)
		t->out_off[t->links[l].from + 1]++;
	for (int32_t v = 0; v < t->nnodes; v++)
		t->out_off[v + 1] += t->out_off[v];
	{
		int32_t *fill = malloc(((size_t)t->nnodes + 1) * sizeof(int32_t));
		if (!fill)
			return TS_ENOMEM;
		memcpy(fill, t->out_off, (size_t)t->nnodes * sizeof(int32_t));
		for (int32_t l = 0; l < t->nlinks; l++)
			t->out[fill[t->links[l].from]++] = l;
		free(fill);
	}
	return 0;
}

static int build_placement(struct topo *t, struct ts_error *err)
{
	const struct topo_cluster *c = &t->cl;
	int32_t n = t->ngpus, nh = t->nhosts, gpn = c->node.gpus;
	t->rank_gpu = malloc((size_t)n * sizeof(int32_t));
	t->gpu_rank = malloc((size_t)n * sizeof(int32_t));
	if (!t->rank_gpu || !t->gpu_rank)
		return TS_ENOMEM;
	switch (c->placement) {
	case TOPO_PLACE_LINEAR:
		for (int32_t r = 0; r < n; r++)
			t->rank_gpu[r] = r;
		break;
	case TOPO_PLACE_ROUND_ROBIN:
		for (int32_t r = 0; r < n; r++)
			t->rank_gpu[r] = (r % nh) * gpn + r / nh;
		break;
	case TOPO_PLACE_RANDOM: {
		struct rng g = RNG_INIT;
		if (rng_init(&g, c->seed))
			return TS_ENOMEM;
		for (int32_t r = 0; r < n; r++)
			t->rank_gpu[r] = r;
		for (int32_t i = n - 1; i > 0; i--) { /* Fisher-Yates */
			int32_t j = (int32_t)rng_below(&g, (uint64_t)i + 1), x = t->rank_gpu[i];
			t->rank_gpu[i] = t->rank_gpu[j];
			t->rank_gpu[j] = x;
		}
		rng_release(&g);
		break;
	}
	case TOPO_PLACE_LIST:
		if (c->place_len != n)
			return ts_error_set(err, TS_EINPUT, "cluster '%s': placement: the list has %d "
					    "entries, the cluster has %d GPUs", c->name, c->place_len, n);
		memcpy(t->rank_gpu, c->place_list, (size_t)n * sizeof(int32_t));
		break;
	}
	for (int32_t g = 0; g < n; g++)
		t->gpu_rank[g] = -1;
	for (int32_t r = 0; r < n; r++) {
		if (t->rank_gpu[r] < 0 || t->rank_gpu[r] >= n || t->gpu_rank[t->rank_gpu[r]] >= 0)
			return ts_error_set(err, TS_EINPUT, "cluster '%s': placement: not a "
					    "permutation of the %d GPUs", c->name, n);
		t->gpu_rank[t->rank_gpu[r]] = r;
	}
	return 0;
}

int topo_build(struct topo *t, const struct topo_cluster *c, struct ts_error *err)
{
	struct gb g = { t, 0 };
	struct topo_rs *rs;
	int rc;
	int32_t id, nh, gpn, nics, nnics, npsw;

	memset(t, 0, sizeof(*t));
	if ((rc = topo_cluster_check(c, err)))
		return rc;
	if ((rc = topo_cluster_copy(&t->cl, c, err)))
		return rc;
	rc = TS_ENOMEM;
	rs = calloc(1, sizeof(*rs));
	if (!rs)
		goto fail;
	t->route_state = rs;
	c = &t->cl;
	nh = t->nhosts = c->nodes;
	gpn = c->node.gpus;
	nics = c->node.nics;
	t->ngpus = nh * gpn;
	nnics = nh * nics;
	rs->ppsw = nics > 0 ? nics : 1;
	npsw = nh * rs->ppsw;
	rs->explicit_fabric = c->fabric.kind == TOPO_FABRIC_EXPLICIT;
	clos_params(c, rs);

	/* node ids */
	id = t->ngpus;
	t->first_nic = id;
	id += nnics;
	rs->first_psw = id;
	id += npsw;
	rs->first_root = -1;
	if (c->node.intra == TOPO_INTRA_PCIE && rs->ppsw > 1) {
		rs->first_root = id;
		id += nh;
	}
	rs->first_nvs = -1;
	if (c->node.intra == TOPO_INTRA_NVSWITCH) {
		rs->first_nvs = id;
		id += nh;
	}
	rs->first_sw = rs->first_leaf = rs->first_spine = rs->first_core = -1;
	if (rs->explicit_fabric) {
		rs->first_sw = id;
		id += c->fabric.nxswitches;
	} else if (rs->tiers >= 1) {
		int32_t last = nic_leaf_index(rs, nics, nh - 1, nics - 1);
		rs->nleaves = last + 1;
		if (!rs->rails)
			rs->nleaves = (int32_t)(((int64_t)nnics + rs->hpl - 1) / rs->hpl);
		rs->npods = (rs->nleaves + rs->lpp - 1) / rs->lpp;
		rs->first_sw = rs->first_leaf = id;
		id += rs->nleaves;
		t->nswitch_by_tier[1] = rs->nleaves;
		if (rs->tiers >= 2 && rs->nleaves > 1) {
			rs->first_spine = id;
			id += rs->npods * rs->S;
			t->nswitch_by_tier[2] = rs->npods * rs->S;
		}
		if (rs->tiers >= 3 && rs->npods > 1) {
			rs->first_core = id;
			id += rs->S * rs->C;
			t->nswitch_by_tier[3] = rs->S * rs->C;
		}
	}
	t->nnodes = id;
	t->nodes = calloc((size_t)t->nnodes, sizeof(*t->nodes));
	t->gpu_nic = alloc_ids((size_t)t->ngpus);
	t->nic_leaf = alloc_ids((size_t)nnics);
	rs->nic_up = alloc_ids((size_t)nnics);
	rs->gpu_psw = alloc_ids((size_t)t->ngpus);
	rs->gpu_nvs = alloc_ids((size_t)t->ngpus);
	rs->psw_nic = alloc_ids((size_t)npsw);
	rs->psw_root = alloc_ids((size_t)npsw);
	rs->leaf_up = alloc_ids((size_t)rs->nleaves * rs->S * rs->u);
	rs->spine_up = alloc_ids((size_t)rs->npods * rs->S * rs->C * rs->v);
	if (!t->nodes || !t->gpu_nic || !t->nic_leaf || !rs->nic_up || !rs->gpu_psw ||
	    !rs->gpu_nvs || !rs->psw_nic || !rs->psw_root || !rs->leaf_up || !rs->spine_up)
		goto fail;
	for (int32_t v = 0; v < t->ngpus; v++)
		add_node(t, v, TOPO_N_GPU, 0, v / gpn);
	for (int32_t n = 0; n < nnics; n++)
		add_node(t, t->first_nic + n, TOPO_N_NIC, 0, n / (nics ? nics : 1));
	for (int32_t p = 0; p < npsw; p++)
		add_node(t, rs->first_psw + p, TOPO_N_PCIE, 0, p / rs->ppsw);
	for (int32_t h = 0; rs->first_root >= 0 && h < nh; h++)
		add_node(t, rs->first_root + h, TOPO_N_PCIE, 0, h);
	for (int32_t h = 0; rs->first_nvs >= 0 && h < nh; h++)
		add_node(t, rs->first_nvs + h, TOPO_N_NVSWITCH, 0, h);
	for (int32_t v = rs->first_sw; v >= 0 && v < t->nnodes; v++) {
		uint8_t tier = 1;
		if (rs->explicit_fabric)
			tier = (uint8_t)c->fabric.xswitches[v - rs->first_sw].tier;
		else if (rs->first_core >= 0 && v >= rs->first_core)
			tier = 3;
		else if (rs->first_spine >= 0 && v >= rs->first_spine)
			tier = 2;
		add_node(t, v, TOPO_N_SWITCH, tier, -1);
	}
	if (rs->explicit_fabric)
		for (int i = 0; i < c->fabric.nxswitches; i++)
			t->nswitch_by_tier[c->fabric.xswitches[i].tier]++;

	/* inside each host */
	for (int32_t gpu = 0; gpu < t->ngpus; gpu++) {
		int32_t h = gpu / gpn, psw = topo_gpu_psw(t, gpu);
		double pcie_lat = c->node.pcie_lat_s;
		int32_t l = add_cable(&g, gpu, rs->first_psw + psw, TOPO_L_PCIE, 0, c->node.pcie_Bps,
				      pcie_lat, pcie_lat, PCIE_MTU, PCIE_OVERHEAD);
		if (l < 0)
			goto fail;
		rs->gpu_psw[gpu] = l;
		if (rs->first_nvs >= 0) {
			double half = c->node.nvlink_lat_s / 2;
			l = add_cable(&g, gpu, rs->first_nvs + h, TOPO_L_NVLINK, 0, c->gpu.nvlink_Bps,
				      half, half, NVLINK_MTU, NVLINK_OVERHEAD);
			if (l < 0)
				goto fail;
			rs->gpu_nvs[gpu] = l;
		}
		if (nics)
			t->gpu_nic[gpu] = t->first_nic + psw; /* one NIC per PCIe switch */
	}
	for (int32_t p = 0; p < npsw; p++) {
		double pcie_lat = c->node.pcie_lat_s;
		int32_t l;
		if (nics) {
			l = add_cable(&g, rs->first_psw + p, t->first_nic + p, TOPO_L_PCIE, 0,
				      c->node.pcie_Bps, pcie_lat, pcie_lat, PCIE_MTU, PCIE_OVERHEAD);
			if (l < 0)
				goto fail;
			rs->psw_nic[p] = l;
		}
		if (rs->first_root >= 0) {
			l = add_cable(&g, rs->first_psw + p, rs->first_root + p / rs->ppsw, TOPO_L_PCIE,
				      0, c->node.pcie_Bps, pcie_lat, pcie_lat, PCIE_MTU, PCIE_OVERHEAD);
			if (l < 0)
				goto fail;
			rs->psw_root[p] = l;
		}
	}
	if ((rc = build_network(&g, err)))
		goto fail;
	rc = TS_ENOMEM;
	if (build_csr(t))
		goto fail;
	if ((rc = build_placement(t, err)))
		goto fail;
	return 0;
fail:
	if (rc == TS_ENOMEM)
		ts_error_set(err, TS_ENOMEM, "out of memory building cluster '%s'", c->name);
	topo_release(t);
	return rc;
}

void topo_release(struct topo *t)
{
	struct topo_rs *rs = topo_rs(t);
	if (rs) {
		free(rs->leaf_up);
		free(rs->spine_up);
		free(rs->nic_up);
		free(rs->gpu_psw);
		free(rs->gpu_nvs);
		free(rs->psw_nic);
		free(rs->psw_root);
		free(rs);
	}
	topo_cluster_release(&t->cl);
	free(t->nodes);
	free(t->links);
	free(t->out_off);
	free(t->out);
	free(t->gpu_nic);
	free(t->nic_leaf);
	free(t->rank_gpu);
	free(t->gpu_rank);
	memset(t, 0, sizeof(*t));
}
