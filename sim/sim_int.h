/* sim_int.h: declarations shared between the .c files of sim/ only (not
 * part of the module's face, sim.h). */
#ifndef TS_SIM_INT_H
#define TS_SIM_INT_H

#include "sim/sim.h"

/* Flow model (net_flow.c). simf_send takes paths of any length (a coupled
 * ring's path is all its edges; a link may repeat and then counts once per
 * crossing); sim_net_send limits paths to TOPO_MAX_HOPS. */
int simf_init(struct sim_net *n, struct ts_error *err);
void simf_release(struct sim_net *n);
int simf_send(struct sim_net *n, const int32_t *path, int hops, double bytes,
	      simtime_ps start_delay_ps, sim_xfer_done done, void *ctx, uint64_t arg,
	      int32_t *id_out);
/* The current rate of flow id (0 unless it is moving data), bytes/s;
 * valid after the solve of the current instant (an event queued after the
 * flow started), as simf_bottleneck's loads. */
double simf_rate_Bps(const struct sim_net *n, int32_t id);
/* simf_send of a spread flow: link h carries coef[h] x its rate (coef
 * NULL: 1 each); sim_net_send_paths builds one. The path latency of flow
 * id once it moves (a spread flow: its paths' mean), ps. */
int simf_send_spread(struct sim_net *n, const int32_t *path, const double *coef, int hops,
		     double bytes, simtime_ps start_delay_ps, sim_xfer_done done, void *ctx,
		     uint64_t arg, int32_t *id_out);
simtime_ps simf_prop_ps(const struct sim_net *n, int32_t id);
/* sim_net_send_paths without TCP's per-message cost, and with the flow's
 * id (simf_send's id_out). */
int simn_send_paths(struct sim_net *n, const int32_t *links, int nl, int parts, double bytes,
		    simtime_ps start_delay_ps, sim_xfer_done done, void *ctx, uint64_t arg,
		    int32_t *id_out);
/* The link of path with the least spare capacity at the current rates:
 * its capacity and load, bytes/s (0 and 0 for an empty path). */
void simf_bottleneck(const struct sim_net *n, const int32_t *path, int hops, double *cap_Bps,
		     double *load_Bps);

/* Packet model (net_packet.c). */
int simp_init(struct sim_net *n, struct ts_error *err);
void simp_release(struct sim_net *n);
int simp_send(struct sim_net *n, const int32_t *path, int hops, double bytes,
	      simtime_ps start_delay_ps, sim_xfer_done done, void *ctx, uint64_t arg);

/* The local index of the k-th GPU a ring's channel ch visits in the h-th
 * host (of len GPUs) it crosses: the host's GPUs rotated by ch, odd hosts
 * walked backwards (a snake), so a ring leaves a host and enters the next
 * through the same local GPU, its NIC rail (NCCL_CROSS_NIC=0). */
static inline int32_t sim_ring_local(int32_t h, int32_t k, int32_t ch, int32_t len)
{
	return h % 2 == 0 ? (k + ch) % len : ((ch - 1 - k) % len + 2 * len) % len;
}

/* Spraying spreads a transfer over at most this many of its equal-cost
 * paths (evenly strided). */
#define SIM_SPRAY_MAX_PATHS 64

/* The paths a transfer from GPU a to GPU b takes: 1 (its hashed ECMP
 * route), or, sprayed, an even share on each of up to SIM_SPRAY_MAX_PATHS
 * of its equal-cost paths. */
int64_t sim_spray_paths(const struct topo *t, int32_t a, int32_t b, bool spray);
/* The k-th of those np paths into path: the hashed route when np is 1,
 * else the k-th of a sample evenly strided from a per-connection offset
 * (so that connections do not all pick the same paths). Returns the hops
 * or a negative error. */
int sim_spray_route(const struct topo *t, int32_t a, int32_t b, uint64_t hash, int64_t np,
		    int64_t k, int32_t *path);

/* Flow level: send bytes from GPU a to GPU b spread over its np (> 1)
 * sprayed paths (sim_spray_route's, or sim_p2p_route's when p2p) as one
 * flow (sim_net_send_paths). Returns 0, a negative route error or
 * TS_ENOMEM. */
int sim_send_sprayed(struct sim_net *n, const struct topo *t, int32_t a, int32_t b, uint64_t hash,
		     int64_t np, bool p2p, double bytes, simtime_ps start_delay_ps, sim_xfer_done done,
		     void *ctx, uint64_t arg);

/* A transfer from GPU a to GPU b pays TCP's host costs in the analytic
 * models: TCP, between hosts (the flow and packet models: simn_tcp_path). */
static inline bool sim_tcp_hop(const struct topo *t, int32_t a, int32_t b)
{
	return t->cl.fabric.transport == TOPO_TRANSPORT_TCP &&
	       topo_gpu_host(t, a) != topo_gpu_host(t, b);
}

/* A transfer over path pays TCP's host costs: TCP, and the path leaves the
 * host (crosses a NIC or switch link; NVLink and PCIe inside a node do not
 * go through the kernel's TCP stack). */
static inline bool simn_tcp_path(const struct sim_net *n, const int32_t *path, int hops)
{
	if (!n->par.tcp)
		return false;
	for (int i = 0; i < hops; i++)
		if (n->links[path[i]].net)
			return true;
	return false;
}

/* Payload fraction of a link's line rate: mtu/(mtu+overhead), 1 without MTU. */
static inline double simn_payload_eff(const struct sim_link *l)
{
	if (l->mtu_bytes <= 0)
		return 1.0;
	return (double)l->mtu_bytes / (double)(l->mtu_bytes + l->overhead_bytes);
}

/* ps needed to move bytes at rate_Bps, rounded up (never 0 for bytes > 0). */
static inline simtime_ps simn_ps_for(double bytes, double rate_Bps)
{
	double ps = bytes / rate_Bps * 1e12;
	simtime_ps t;
	if (ps >= 9e18)
		return (simtime_ps)9e18;
	t = (simtime_ps)ps;
	if ((double)t < ps)
		t++;
	return t;
}

#endif
