/* net_packet.c: the packet model.
 *
 * Each transfer is cut into packets of the path MTU (the smallest MTU of
 * the links on its path that carry per-packet headers). Every directed link is an output port with a FIFO queue;
 * a packet is serialised at the line rate (payload + the link's per-packet
 * overhead: htsim's queue serialisation, network_simulators.md §4.1), then
 * arrives at the next port after the link latency (store and forward).
 * Paths are fixed per transfer (per-flow ECMP: the same path the flow model
 * uses).
 *
 * RDMA (lossless): a port reserves room in the next port's queue before it
 * starts a packet; when that queue holds more than pfc_bytes the port pauses
 * (head of line, like PFC pausing a priority) and resumes when it drains.
 * TCP (lossy): packets arriving at a full queue (buffer_bytes) are dropped
 * (drop-tail). The sender learns of a loss as fast retransmit does (RFC
 * 5681), from the third duplicate ACK: the ACK of the third packet sent
 * after the lost one (packets carry their number) to arrive, or after the
 * retransmission timeout when fewer follow (a tail loss, a whole window).
 * Drops before that third packet arrives join the episode; later ones start
 * another. Then the lost packets leave the window, are sent again first,
 * and the window halves, once per window of losses (NewReno's recovery
 * point: no halving again for a loss of a packet sent before the last
 * halving); it grows by one packet per window of ACKs (AIMD). (Found by
 * review: the bytes were sent again at the sender's next chance, before it
 * could know of the loss; then, in a first fix, packets ahead of the loss
 * counted as duplicate ACKs, so with deep queues it was found early.)
 * ACKs are not simulated as packets: one path latency after a packet is
 * delivered its window slot is returned (assumption: ACKs are tiny and ride
 * an uncongested reverse path).
 *
 * Senders keep window_pkts packets in flight and inject as fast as their
 * first port takes them, so one transfer fills its link.
 *
 * Events: one per packet and hop ("transmitted": the link is free again and
 * the packet joins the next port's queue, usable one link latency later).
 * A port that is idle when a packet joins it needs a second event, a
 * wake-up when the packet has arrived, only where a decision waits for that
 * moment: under RDMA, reserving room at the following port. Where there is
 * none to take (TCP, or the packet's last hop) the port's transmission is
 * certain (FIFO, idle, nothing can overtake the head) and its "transmitted"
 * event is scheduled at once for arrival + serialisation. The destination
 * needs no event of its own: arrival is the last "transmitted" plus the
 * link latency, known then; only the packet that completes a transfer
 * schedules its arrival (done() fires then). ACKs return one path latency
 * after arrival, in order, into a per-flow FIFO of times that is read
 * lazily (every use of the window first retires the ACKs due by now); an
 * engine event for the head is armed only while the window is what stops
 * the sender, or to free a finished flow's slot after its last ACK. The
 * engine holds O(flows + ports) events, not O(packets in flight). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim_int.h"

/* Packets one flow may keep in its first port's queue: the NIC interleaves
 * its connections' packets instead of draining one flow first
 * (assumption: per-QP round robin at packet granularity). */
#define SENDER_QUEUE_PKTS 4

/* A packet lives by value in the queue of the port it waits at or crosses,
 * and moves to the next port's queue when transmitted: a port reads its
 * queue in order, 4 packets to a cache line, instead of chasing a pool. */
struct pkt {
	simtime_ps ready_ps;       /* when it has fully arrived at its current port, ps */
	uint32_t fh;               /* owning transfer (low 24 bits), hop index (high 8) */
	uint32_t bs;               /* payload bytes (low PKT_BYTES_BITS), the transfer's
	                            * packet number mod PKT_SEQ_MOD (the rest) */
};

/* A packet's payload is at most the path MTU, below 2^21 (cluster files keep
 * it at most 1 MiB); its number mod 2048 tells the packets sent after it
 * from those before, as long as a transfer has fewer than 1024 in flight
 * (window_pkts, checked at init). */
#define PKT_BYTES_BITS 21
#define PKT_SEQ_MOD 2048u

/* Transfers a packet model may hold at once (24 bits of struct pkt.fh). */
#define MAX_FLOWS (1 << 24)

static inline int32_t pkt_flow(const struct pkt *k) { return (int32_t)(k->fh & 0xffffffu); }
static inline int32_t pkt_hop(const struct pkt *k) { return (int32_t)(k->fh >> 24); }
static inline int32_t pkt_bytes(const struct pkt *k)
{
	return (int32_t)(k->bs & ((1u << PKT_BYTES_BITS) - 1));
}
static inline uint32_t pkt_seq(const struct pkt *k) { return k->bs >> PKT_BYTES_BITS; }

struct port {
	struct pkt *q;             /* FIFO ring of packets, qcap entries (a power of two), owned */
	uint32_t qhead, qlen, qcap;/* first entry, entries, allocated */
	int32_t overhead_bytes;    /* the link's per-packet header, bytes (a copy: one line per hop) */
	int64_t occ_bytes;         /* queued + reserved + being sent, wire bytes */
	simtime_ps lat_ps;         /* the link's latency, ps (a copy) */
	simtime_ps ser_ps;         /* serialisation time of ser_wire bytes at the link's rate, ps (a cache) */
	int32_t ser_wire;          /* wire bytes of the last serialisation computed, bytes */
	int32_t nwait;             /* ports and senders waiting for room here (see struct portw) */
	bool busy;                 /* serialising a packet, or committed to (see port_kick) */
	bool paused;               /* waiting for room downstream */
	bool wake_pending;         /* a wake-up for a packet still on the wire is queued */
};

/* A port's wait list, apart from the hot fields. */
struct portw {
	int32_t *wait;             /* ports (>=0) and senders (~flow) waiting for room, owned */
	int32_t capwait;           /* allocated */
};

struct pflow {
	/* what every hop reads first, together */
	int8_t hops;               /* path length */
	bool waiting;              /* on a port's wait list */
	bool live;                 /* slot in use */
	bool notified;             /* done() has been called */
	int32_t q0;                /* packets waiting in the first port's queue */
	int32_t path[TOPO_MAX_HOPS];/* link ids */
	double bytes;              /* payload, bytes */
	double queued_bytes;       /* payload cut into packets so far, bytes */
	double delivered_bytes;    /* payload through its last hop (arrived or on the last wire), bytes */
	double retx_bytes;         /* payload waiting to be sent again, bytes */
	uint32_t sent_n;           /* packets injected so far: the next one's number */
	uint32_t recover_n;        /* NewReno's recovery point: losses of packets numbered
	                            * below it do not halve the window again */
	bool recovering;           /* recover_n is set */
	int32_t nep;               /* loss episodes the sender has not acted on */
	struct tcp_loss {
		uint32_t id;       /* unique (sim_pkt_state.loss_ids): events name it */
		uint32_t first;    /* number of its first lost packet */
		int32_t n;         /* its lost packets */
		int32_t dup;       /* packets numbered after the first that arrived */
		double bytes;      /* their payload, bytes */
		bool open;         /* drops still join it (its third duplicate ACK not yet) */
	} ep[4];
	double cwnd;               /* window, packets */
	int32_t inflight;          /* packets sent and not yet acknowledged */
	int32_t mtu;               /* path MTU, bytes */
	simtime_ps prop_ps;        /* path latency (ACK delay), ps */
	sim_xfer_done done;        /* callback */
	sim_xfer_done left;        /* when the last packet is off the first link
	                            * (sim_net.on_left), then cleared; or NULL */
	void *ctx;                 /* callback context (not owned) */
	uint64_t arg;              /* callback argument */
	int32_t next_free;         /* free list */
	simtime_ps *ackq;          /* ACK times not yet retired (FIFO ring, window_pkts entries), owned */
	int32_t ack_head, ack_n;   /* ring start, entries */
	bool ack_armed;            /* an ack_ev is queued */
	bool pump_on_ack;          /* the next ACK may let the sender go on: the last pump
	                            * stopped on the window, or a drop gave it data again */
	double pace_s;             /* TCP between hosts: the host copy's seconds per byte (the
	                            * sender injects no faster), 0 none */
	simtime_ps pace_ps;        /* when the pacer lets the next packet go, ps */
	bool pace_armed;           /* a pace_ev is queued */
};

struct sim_pkt_state {
	struct port *ports;        /* one per link */
	struct portw *pw;          /* their wait lists */
	struct pflow *fl;          /* transfer pool */
	int32_t nfl, capfl, fl_free;/* used, allocated, free list */
	bool oom;                  /* an allocation failed inside an event */
	uint32_t loss_ids;         /* loss episodes so far: ids unique across reused slots */
};

int simp_init(struct sim_net *n, struct ts_error *err)
{
	struct sim_pkt_state *s;
	int32_t i;
	/* a transfer's packets in flight are told apart by their number mod
	 * PKT_SEQ_MOD (struct pkt) */
	TS_ASSERT(n->par.window_pkts >= 1 && (uint32_t)n->par.window_pkts < PKT_SEQ_MOD / 2);
	s = calloc(1, sizeof(*s));
	if (!s)
		return ts_error_set(err, TS_ENOMEM, "out of memory for the packet model");
	n->pkt = s;
	s->fl_free = -1;
	s->ports = calloc((size_t)(n->nlinks ? n->nlinks : 1), sizeof(*s->ports));
	s->pw = calloc((size_t)(n->nlinks ? n->nlinks : 1), sizeof(*s->pw));
	if (!s->ports || !s->pw)
		return ts_error_set(err, TS_ENOMEM, "out of memory for the packet model");
	for (i = 0; i < n->nlinks; i++) {
		s->ports[i].overhead_bytes = n->links[i].overhead_bytes;
		s->ports[i].lat_ps = n->links[i].lat_ps;
	}
	if (n->par.buffer_bytes <= 0 || n->par.pfc_bytes <= 0 || n->par.window_pkts <= 0)
		return ts_error_set(err, TS_EINPUT, "packet model: buffer, pause threshold and "
				    "window must be positive");
	return 0;
}

void simp_release(struct sim_net *n)
{
	struct sim_pkt_state *s = n->pkt;
	int32_t i;
	if (!s)
		return;
	if (s->ports)
		for (i = 0; i < n->nlinks; i++) {
			free(s->ports[i].q);
			if (s->pw)
				free(s->pw[i].wait);
		}
	free(s->pw);
	for (i = 0; s->fl && i < s->nfl; i++)
		free(s->fl[i].ackq);
	free(s->ports);
	free(s->fl);
	free(s);
	n->pkt = NULL;
}

/* Append packet k to port l's queue (the ring doubles when full; on
 * failure the packet is lost and s->oom set). */
static void enqueue(struct sim_pkt_state *s, int32_t l, const struct pkt *k)
{
	struct port *p = &s->ports[l];
	if (p->qlen == p->qcap) {
		uint32_t nc = p->qcap ? 2 * p->qcap : 16, i;
		struct pkt *q;
		if (nc <= p->qcap || !(q = malloc((size_t)nc * sizeof(*q)))) {
			s->oom = true;
			return;
		}
		for (i = 0; i < p->qlen; i++)
			q[i] = p->q[(p->qhead + i) & (p->qcap - 1)];
		free(p->q);
		p->q = q;
		p->qhead = 0;
		p->qcap = nc;
	}
	p->q[(p->qhead + p->qlen++) & (p->qcap - 1)] = *k;
}

static inline struct pkt *q_head(struct port *p)
{
	return &p->q[p->qhead];
}

static inline struct pkt q_pop(struct port *p)
{
	struct pkt k = p->q[p->qhead];
	p->qhead = (p->qhead + 1) & (p->qcap - 1);
	p->qlen--;
	return k;
}

static inline int64_t wire_bytes(const struct port *p, int32_t payload)
{
	return (int64_t)payload + p->overhead_bytes;
}

static void port_kick(struct sim_net *n, int32_t l);
static void flow_pump(struct sim_net *n, int32_t f);
static void pace_ev(struct sim_engine *e, void *ctx, uint64_t arg);

static void add_waiter(struct sim_pkt_state *s, int32_t l, int32_t who)
{
	struct port *p = &s->ports[l];
	struct portw *pw = &s->pw[l];
	if (p->nwait == pw->capwait) {
		int32_t nc = pw->capwait ? pw->capwait * 2 : 8;
		int32_t *w = realloc(pw->wait, (size_t)nc * sizeof(*w));
		if (!w) {
			s->oom = true;
			return;
		}
		pw->wait = w;
		pw->capwait = nc;
	}
	pw->wait[p->nwait++] = who;
}

/* Room appeared at port l: retry everyone waiting on it, in arrival order. */
static void wake(struct sim_net *n, int32_t l)
{
	struct sim_pkt_state *s = n->pkt;
	struct port *p = &s->ports[l];
	int32_t k, cnt = p->nwait;
	int32_t buf[64], *w = buf;
	if (cnt == 0)
		return;
	if (cnt > 64) {
		w = malloc((size_t)cnt * sizeof(*w));
		if (!w) {
			s->oom = true;
			return;
		}
	}
	memcpy(w, s->pw[l].wait, (size_t)cnt * sizeof(*w));
	p->nwait = 0;
	for (k = 0; k < cnt; k++) {
		if (w[k] >= 0) {
			s->ports[w[k]].paused = false;
			port_kick(n, w[k]);
		} else {
			s->fl[~w[k]].waiting = false;
			flow_pump(n, ~w[k]);
		}
	}
	if (w != buf)
		free(w);
}

static void tx_done_ev(struct sim_engine *e, void *ctx, uint64_t arg);
static void arrive_ev(struct sim_engine *e, void *ctx, uint64_t arg);
static void wake_ev(struct sim_engine *e, void *ctx, uint64_t arg);
static void ack_ev(struct sim_engine *e, void *ctx, uint64_t arg);
static void loss_ev(struct sim_engine *e, void *ctx, uint64_t arg);

/* The duplicate ACKs that tell a TCP sender of a loss (RFC 5681). */
#define DUPACK_THRESHOLD 3

/* The number of a packet of f from its number mod PKT_SEQ_MOD: the latest
 * sent that has it (fewer than PKT_SEQ_MOD / 2 are in flight). */
static uint32_t pkt_number(const struct pflow *f, const struct pkt *k)
{
	return f->sent_n - 1 - ((f->sent_n - 1 - pkt_seq(k)) % PKT_SEQ_MOD);
}

/* Serialisation time of wire bytes w on link l, ps (cached per port: most
 * packets are full MTU). */
static inline simtime_ps ser_time(struct sim_net *n, struct port *p, int32_t l, int64_t w)
{
	if (p->ser_wire != w) {
		p->ser_wire = (int32_t)w;
		p->ser_ps = simn_ps_for((double)w, n->links[l].bw_Bps);
	}
	return p->ser_ps;
}

/* Start the head of port l's queue if the port is free. A head still on
 * the incoming wire (ready later) is started now for its ready time when
 * nothing can change the outcome (no room to reserve downstream: TCP or its
 * last hop; the port is idle and FIFO, so nothing overtakes it); otherwise a
 * wake-up is set for its ready time. */
static void port_kick(struct sim_net *n, int32_t l)
{
	struct sim_pkt_state *s = n->pkt;
	struct port *p = &s->ports[l];
	struct pkt *k;
	struct pflow *f;
	simtime_ps start;
	if (p->busy || p->paused || p->qlen == 0)
		return;
	k = q_head(p);
	f = &s->fl[pkt_flow(k)];
	start = n->eng->now;
	if (!n->par.tcp && pkt_hop(k) + 1 < f->hops) {
		/* lossless: reserve room downstream or pause, when the packet is there */
		int32_t nl = f->path[pkt_hop(k) + 1];
		struct port *np = &s->ports[nl];
		if (k->ready_ps > start) {
			if (!p->wake_pending) {
				p->wake_pending = true;
				if (!sim_at(n->eng, k->ready_ps, wake_ev, n, (uint64_t)l))
					s->oom = true;
			}
			return;
		}
		if (np->occ_bytes >= n->par.pfc_bytes) {
			p->paused = true;
			n->st.pauses++;
			add_waiter(s, nl, l);
			return;
		}
		np->occ_bytes += wire_bytes(np, pkt_bytes(k));
	} else if (k->ready_ps > start) {
		start = k->ready_ps;
	}
	p->busy = true;
	if (!sim_at(n->eng, start + ser_time(n, p, l, wire_bytes(p, pkt_bytes(k))), tx_done_ev,
		    n, (uint64_t)l))
		s->oom = true;
}

static void wake_ev(struct sim_engine *e, void *ctx, uint64_t arg)
{
	struct sim_net *n = ctx;
	n->pkt->ports[arg].wake_pending = false;
	port_kick(n, (int32_t)arg);
}

static void forward(struct sim_net *n, struct pkt *k, simtime_ps ready_ps);
static void last_hop(struct sim_net *n, const struct pkt *k, simtime_ps arrive_ps);
static void flow_left(struct sim_net *n, int32_t fi);

static void tx_done_ev(struct sim_engine *e, void *ctx, uint64_t arg)
{
	struct sim_net *n = ctx;
	struct sim_pkt_state *s = n->pkt;
	int32_t l = (int32_t)arg, fi;
	struct port *p = &s->ports[l];
	struct pkt k;
	uint64_t na;
	bool first;
	if (sim_peek_next(e, tx_done_ev, &na)) {
		/* the next event is another port's transmit end, due now: start
		 * fetching its port and head packet (cache misses dominate) */
		const struct port *pn = &s->ports[na];
		__builtin_prefetch(pn);
		__builtin_prefetch(&pn->q[pn->qhead]);
	}
	k = q_pop(p);
	fi = pkt_flow(&k);
	p->busy = false;
	p->occ_bytes -= wire_bytes(p, pkt_bytes(&k));
	n->st.pkt_hops++;
	first = pkt_hop(&k) == 0; /* (forward moves k on) */
	if (first) {
		/* the sender's NIC serves its connections round-robin: a flow
		 * refills its share of the first queue as its packets leave */
		s->fl[fi].q0--;
		if (!s->fl[fi].waiting)
			flow_pump(n, fi);
	}
	if (pkt_hop(&k) + 1 < s->fl[fi].hops) {
		/* straight into the next port's queue, usable after the link
		 * latency: no event unless that port is idle (one event per hop) */
		forward(n, &k, e->now + p->lat_ps);
	} else {
		last_hop(n, &k, e->now + p->lat_ps);
	}
	if (p->nwait > 0 && p->occ_bytes < (n->par.tcp ? n->par.buffer_bytes : n->par.pfc_bytes))
		wake(n, l);
	port_kick(n, l);
	if (first)
		flow_left(n, fi);
}

/* Tell the owner once the last packet is off the first link, all of the
 * payload cut into packets and none waiting to be sent again (a loss found
 * later is sent again beside the connection's next transfer), or at the
 * latest when all of it is through its last hop (same GPU; flow_notify).
 * The owner may start transfers, so no pflow pointer is held across the
 * call. */
static void flow_left(struct sim_net *n, int32_t fi)
{
	struct pflow *f = &n->pkt->fl[fi];
	sim_xfer_done left = f->left;
	if (!left || (f->delivered_bytes < f->bytes &&
		      (f->q0 > 0 || f->queued_bytes < f->bytes || f->retx_bytes > 0)))
		return;
	f->left = NULL;
	left(f->ctx, f->arg);
}

/* The last byte arrived: tell the owner (once). */
static void flow_notify(struct sim_net *n, int32_t fi)
{
	struct pflow *f = &n->pkt->fl[fi];
	sim_xfer_done done;
	if (f->notified || f->delivered_bytes < f->bytes)
		return;
	flow_left(n, fi); /* (all of it arrived: it has left) */
	f = &n->pkt->fl[fi];
	done = f->done;
	f->notified = true;
	n->st.bytes_delivered += f->bytes;
	n->st.xfers_done++;
	if (done)
		done(f->ctx, f->arg);
}

/* Free the slot once done() ran and every window slot came back. */
static void flow_gc(struct sim_net *n, int32_t fi)
{
	struct sim_pkt_state *s = n->pkt;
	struct pflow *f = &s->fl[fi];
	if (!f->notified || f->inflight > 0 || !f->live)
		return;
	f->live = false;
	f->next_free = s->fl_free;
	s->fl_free = fi;
}

/* Retire the ACKs of flow f due by now, in order: each returns a window
 * slot and, under TCP, grows the window (additive increase). */
static void acks_due(struct sim_net *n, struct pflow *f)
{
	simtime_ps now = n->eng->now;
	while (f->ack_n > 0 && f->ackq[f->ack_head] <= now) {
		f->ack_head = f->ack_head + 1 == n->par.window_pkts ? 0 : f->ack_head + 1;
		f->ack_n--;
		f->inflight--;
		if (n->par.tcp && f->cwnd < n->par.window_pkts)
			f->cwnd += 1.0 / f->cwnd;
	}
}

/* Queue an ack_ev at time t unless one is queued. */
static void ack_arm(struct sim_net *n, int32_t fi, simtime_ps t)
{
	struct pflow *f = &n->pkt->fl[fi];
	if (f->ack_armed)
		return;
	f->ack_armed = true;
	if (!sim_at(n->eng, t, ack_ev, n, (uint64_t)fi))
		n->pkt->oom = true;
}

/* A finished flow frees its slot after its last ACK. */
static void flow_finish(struct sim_net *n, int32_t fi)
{
	struct pflow *f = &n->pkt->fl[fi];
	acks_due(n, f);
	if (f->ack_n > 0)
		ack_arm(n, fi, f->ackq[(f->ack_head + f->ack_n - 1) % n->par.window_pkts]);
	else
		flow_gc(n, fi);
}

/* The packet that completes a transfer has arrived. */
static void arrive_ev(struct sim_engine *e, void *ctx, uint64_t arg)
{
	struct sim_net *n = ctx;
	flow_notify(n, (int32_t)arg);
	flow_finish(n, (int32_t)arg);
}

/* Packet k left its last link; it arrives at arrive_ps. Its ACK comes
 * back one path latency later, in order behind the flow's earlier ones. */
static void last_hop(struct sim_net *n, const struct pkt *k, simtime_ps arrive_ps)
{
	struct sim_pkt_state *s = n->pkt;
	int32_t fi = pkt_flow(k);
	struct pflow *f = &s->fl[fi];
	f->delivered_bytes += pkt_bytes(k);
	TS_ASSERT(f->ack_n < n->par.window_pkts && f->ack_n < f->inflight);
	f->ackq[(f->ack_head + f->ack_n++) % n->par.window_pkts] = arrive_ps + f->prop_ps;
	if (f->nep > 0 && f->ep[f->nep - 1].open) {
		/* a packet sent after the episode's first loss: a duplicate
		 * ACK; the third closes the episode, and the sender learns of it
		 * when that ACK is back */
		struct tcp_loss *e = &f->ep[f->nep - 1];
		if ((int32_t)(pkt_number(f, k) - e->first) > 0 && ++e->dup == DUPACK_THRESHOLD) {
			e->open = false;
			if (!sim_at(n->eng, arrive_ps + f->prop_ps, loss_ev, n,
				    (uint64_t)fi | (uint64_t)e->id << 32))
				s->oom = true;
		}
	}
	if (f->pump_on_ack)
		ack_arm(n, fi, f->ackq[f->ack_head]);
	if (f->delivered_bytes >= f->bytes && !sim_at(n->eng, arrive_ps, arrive_ev, n, (uint64_t)fi))
		s->oom = true;
}

/* Packet k leaves its port for the next one on its path, where it is
 * usable from ready_ps (after the link latency). */
static void forward(struct sim_net *n, struct pkt *k, simtime_ps ready_ps)
{
	struct sim_pkt_state *s = n->pkt;
	int32_t fi = pkt_flow(k);
	struct pflow *f = &s->fl[fi];
	int32_t l;
	struct port *p;
	int64_t w;
	k->fh += 1u << 24; /* next hop */
	k->ready_ps = ready_ps;
	l = f->path[pkt_hop(k)];
	p = &s->ports[l];
	w = wire_bytes(p, pkt_bytes(k));
	if (n->par.tcp) {
		if (p->occ_bytes + w > n->par.buffer_bytes) {
			/* drop-tail: the sender learns of it from duplicate ACKs
			 * or after the timeout (see the file comment); the
			 * timeout runs from the episode's first loss */
			n->st.drops++;
			if ((f->nep == 0 || !f->ep[f->nep - 1].open) &&
			    f->nep < (int32_t)TS_ARRAY_LEN(f->ep)) {
				/* a new episode (with every slot taken, the drop
				 * joins the latest: rare, and found with it) */
				struct tcp_loss *e = &f->ep[f->nep++];
				e->id = ++s->loss_ids;
				e->first = pkt_number(f, k);
				e->n = 0;
				e->dup = 0;
				e->bytes = 0;
				e->open = true;
				if (!sim_at(n->eng, ready_ps + n->par.rto_ps, loss_ev, n,
					    (uint64_t)fi | (uint64_t)e->id << 32))
					s->oom = true;
			}
			f->ep[f->nep - 1].n++;
			f->ep[f->nep - 1].bytes += pkt_bytes(k);
			return;
		}
		p->occ_bytes += w;
	}
	/* RDMA: room was reserved by the upstream port */
	enqueue(s, l, k);
	port_kick(n, l);
}

static void ack_ev(struct sim_engine *e, void *ctx, uint64_t arg)
{
	struct sim_net *n = ctx;
	int32_t fi = (int32_t)arg;
	struct pflow *f = &n->pkt->fl[fi];
	f->ack_armed = false;
	if (f->notified)
		flow_finish(n, fi);
	else
		flow_pump(n, fi);
}

/* The sender of flow arg's low half learns of the losses of episode arg's
 * high half, at its third duplicate ACK or its timeout, whichever comes
 * first: ACKs due first (time order); the lost packets leave the window
 * and wait to be sent again; the window halves, once per round trip
 * (multiplicative decrease). */
static void loss_ev(struct sim_engine *e, void *ctx, uint64_t arg)
{
	struct sim_net *n = ctx;
	int32_t fi = (int32_t)(arg & 0xffffffffu), i;
	struct pflow *f = &n->pkt->fl[fi];
	struct tcp_loss lo;
	(void)e;
	if (!f->live)
		return;
	for (i = 0; i < f->nep && f->ep[i].id != (uint32_t)(arg >> 32); i++)
		;
	if (i == f->nep)
		return; /* acted on already (its other signal) */
	lo = f->ep[i];
	memmove(&f->ep[i], &f->ep[i + 1], (size_t)(f->nep - i - 1) * sizeof(f->ep[0]));
	f->nep--;
	acks_due(n, f);
	f->retx_bytes += lo.bytes;
	f->inflight -= lo.n;
	/* one halving per window of losses (NewReno's recovery point: the
	 * packets sent when the last halving came) */
	if (!f->recovering || (int32_t)(lo.first - f->recover_n) >= 0) {
		f->cwnd = f->cwnd / 2 < 1 ? 1 : f->cwnd / 2;
		f->recover_n = f->sent_n;
		f->recovering = true;
	}
	flow_pump(n, fi);
}

/* Inject packets of flow fi while its window and its first port allow. */
static void flow_pump(struct sim_net *n, int32_t fi)
{
	struct sim_pkt_state *s = n->pkt;
	struct pflow *f = &s->fl[fi];
	int32_t l0 = f->path[0];
	int64_t limit = n->par.tcp ? n->par.buffer_bytes : n->par.pfc_bytes;
	if (f->waiting)
		return;
	acks_due(n, f);
	f->pump_on_ack = false;
	while (f->q0 < SENDER_QUEUE_PKTS && (f->retx_bytes > 0 || f->queued_bytes < f->bytes)) {
		struct port *p = &s->ports[l0];
		struct pkt k;
		int32_t b;
		double left;
		if (f->inflight >= (int32_t)f->cwnd) {
			/* the window stops the sender: wake it with the next ACK */
			f->pump_on_ack = true;
			if (f->ack_n > 0)
				ack_arm(n, fi, f->ackq[f->ack_head]);
			return;
		}
		if (p->occ_bytes >= limit) {
			f->waiting = true;
			add_waiter(s, l0, ~fi);
			return;
		}
		if (f->pace_s > 0 && n->eng->now < f->pace_ps) {
			/* the host copy paces the sender (TCP between hosts) */
			if (!f->pace_armed) {
				f->pace_armed = true;
				if (!sim_at(n->eng, f->pace_ps, pace_ev, n, (uint64_t)fi))
					s->oom = true;
			}
			return;
		}
		if (f->retx_bytes > 0) {
			left = f->retx_bytes;
			b = left < f->mtu ? (int32_t)ceil(left) : f->mtu;
			f->retx_bytes -= b;
			if (f->retx_bytes < 0)
				f->retx_bytes = 0;
		} else {
			left = f->bytes - f->queued_bytes;
			b = left < f->mtu ? (int32_t)ceil(left) : f->mtu;
			f->queued_bytes += b;
		}
		k.ready_ps = n->eng->now;
		k.fh = (uint32_t)fi; /* hop 0 */
		k.bs = (uint32_t)b | (f->sent_n++ % PKT_SEQ_MOD) << PKT_BYTES_BITS;
		if (f->pace_s > 0)
			f->pace_ps = (f->pace_ps > n->eng->now ? f->pace_ps : n->eng->now) +
				     time_from_s(b * f->pace_s);
		p->occ_bytes += wire_bytes(p, b);
		f->inflight++;
		f->q0++;
		enqueue(s, l0, &k);
		port_kick(n, l0);
	}
}

static void start_ev(struct sim_engine *e, void *ctx, uint64_t arg)
{
	flow_pump(ctx, (int32_t)arg);
}

static void pace_ev(struct sim_engine *e, void *ctx, uint64_t arg)
{
	struct sim_net *n = ctx;
	(void)e;
	n->pkt->fl[arg].pace_armed = false;
	flow_pump(n, (int32_t)arg);
}

static void direct_done_ev(struct sim_engine *e, void *ctx, uint64_t arg)
{
	struct sim_net *n = ctx;
	struct pflow *f = &n->pkt->fl[arg];
	f->delivered_bytes = f->bytes;
	flow_notify(n, (int32_t)arg);
	flow_gc(n, (int32_t)arg);
}

int simp_send(struct sim_net *n, const int32_t *path, int hops, double bytes,
	      simtime_ps start_delay_ps, sim_xfer_done done, void *ctx, uint64_t arg)
{
	struct sim_pkt_state *s = n->pkt;
	struct pflow *f;
	int32_t fi, h, mtu = INT32_MAX, mtu_any = INT32_MAX;
	if (s->fl_free >= 0) {
		fi = s->fl_free;
		s->fl_free = s->fl[fi].next_free;
	} else {
		if (s->nfl == MAX_FLOWS)
			return TS_ENOMEM;
		if (s->nfl == s->capfl) {
			int32_t nc = s->capfl ? s->capfl * 2 : 256;
			struct pflow *p = realloc(s->fl, (size_t)nc * sizeof(*p));
			if (!p)
				return TS_ENOMEM;
			s->fl = p;
			s->capfl = nc;
		}
		fi = s->nfl++;
		s->fl[fi].ackq = NULL;
	}
	f = &s->fl[fi];
	{
		/* a reused slot keeps its ACK ring */
		simtime_ps *q = f->ackq;
		memset(f, 0, sizeof(*f));
		f->ackq = q;
	}
	if (!f->ackq) {
		f->ackq = malloc((size_t)n->par.window_pkts * sizeof(simtime_ps));
		if (!f->ackq) {
			f->next_free = s->fl_free; /* the slot goes back */
			s->fl_free = fi;
			return TS_ENOMEM;
		}
	}
	f->live = true;
	f->bytes = bytes;
	f->done = done;
	f->left = n->on_left;
	f->ctx = ctx;
	f->arg = arg;
	f->hops = (int8_t)hops;
	f->cwnd = n->par.window_pkts;
	/* TCP's host copy cost per byte, as the flow model's rate cap */
	if (n->par.tcp_byte_s > 0 && simn_tcp_path(n, path, hops))
		f->pace_s = n->par.tcp_byte_s;
	for (h = 0; h < hops; h++) {
		const struct sim_link *l = &n->links[path[h]];
		f->path[h] = path[h];
		f->prop_ps += l->lat_ps;
		/* Packets are cut at the MTU of the network's links (or of links
		 * that carry headers); NVLink and PCIe, whose overhead
		 * sim_net_init_topo folds into their rate, re-segment internally
		 * at no cost (found by review: a fabric of packet_overhead_bytes
		 * 0 had its packets cut at PCIe's 256 B, slower than at 1 B) */
		if (l->mtu_bytes > 0 && (l->net || l->overhead_bytes > 0) && l->mtu_bytes < mtu)
			mtu = l->mtu_bytes;
		if (l->mtu_bytes > 0 && l->mtu_bytes < mtu_any)
			mtu_any = l->mtu_bytes;
	}
	if (mtu == INT32_MAX)
		mtu = mtu_any;
	f->mtu = mtu == INT32_MAX ? 4096 : mtu; /* assumption: 4 KiB without an MTU */
	TS_ASSERT(f->mtu < (1 << PKT_BYTES_BITS));
	n->st.bytes_sent += bytes;
	n->st.xfers_started++;
	if (hops == 0)
		return sim_after(n->eng, start_delay_ps, direct_done_ev, n, (uint64_t)fi) ? 0 : TS_ENOMEM;
	if (start_delay_ps > 0)
		return sim_after(n->eng, start_delay_ps, start_ev, n, (uint64_t)fi) ? 0 : TS_ENOMEM;
	flow_pump(n, fi);
	return s->oom ? TS_ENOMEM : 0;
}
