/* cmd_collective.c: `trainsim collective`: one collective (or G concurrent
 * groups of it) per size on a cluster, printed like nccl-tests' out-of-place
 * columns. A client of sim/sim.h: engine + network + sim_coll_start. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/rng.h"
#include "sim/sim.h"
#include "topo/topo.h"

#define CMD "collective"
#define MAX_SIZES 64
#define MAX_BYTES 1125899906842624.0 /* 2^50 */

static void usage(FILE *out)
{
	fprintf(out,
		"usage: trainsim collective --cluster NAME|FILE [--nodes N] --op OP [--ranks N]\n"
		"                           [--concurrent G] -b MIN -e MAX [-f FACTOR] [--algo A]\n"
		"                           [--proto P] [--fidelity F] [--placement P] [--seed S]\n"
		"                           [--channels K] [--routing R] [--flow-coalesce F]\n"
		"                           [--json]\n"
		"\n"
		"Simulates a collective on the cluster for sizes MIN, MIN*FACTOR, ... MAX and\n"
		"prints nccl-tests' table in its column positions (time, algbw, busbw with\n"
		"nccl-tests' busbw factors, GB = 1e9; #wrong N/A; the in-place group repeats\n"
		"the out-of-place one), then the algorithm and protocol, and '# Avg bus\n"
		"bandwidth'.\n"
		"\n"
		"  --cluster NAME|FILE  a preset or a cluster JSON file\n"
		"  --nodes N            number of nodes (overrides the preset or file)\n"
		"  --op OP              allreduce | reducescatter | allgather | alltoall |\n"
		"                       broadcast | reduce | sendrecv\n"
		"  --ranks N            ranks per group (default: all GPUs / G)\n"
		"  --concurrent G       G disjoint groups at once; group g holds ranks\n"
		"                       g, g+G, g+2G, ... (data-parallel groups) (default 1)\n"
		"  -b, --minbytes MIN   smallest size, e.g. 8, 1M, 1G (nccl-tests: K M G binary)\n"
		"  -e, --maxbytes MAX   largest size (at most 2^50)\n"
		"  -f, --stepfactor F   size multiplier between rows (default 2)\n"
		"  --algo A             auto | ring | tree | rhd | direct | hier | ps | nvls |\n"
		"                       nvlstree\n"
		"  --proto P            auto | LL | LL128 | Simple\n"
		"  --fidelity F         analytic | flow | packet (default flow)\n"
		"  --placement P        linear | round-robin | random | a GPU list \"0,2,1,...\"\n"
		"  --seed S             seed for ECMP hashing and random placement (default:\n"
		"                       the cluster file's seed, else 1)\n"
		"  --channels K         ring channels (default: one per GPU of a node in the\n"
		"                       group on multi-node groups, else 1)\n"
		"  --routing R          ecmp: one equal-cost path per connection by hash;\n"
		"                       spray: every transfer spread evenly over the\n"
		"                       equal-cost paths (adaptive routing); dmodk: each\n"
		"                       destination's static route (InfiniBand's fat-tree\n"
		"                       routing; structured fabrics). Default: the cluster's\n"
		"                       \"routing\", else ecmp\n"
		"  --flow-coalesce F    flow: an all-to-all flow's end re-rates the flows it\n"
		"                       leaves up to F of its own time later (ends close\n"
		"                       together share one max-min solve); 0 = exact at every\n"
		"                       instant (default 0.002)\n"
		"  --json               the same content as JSON\n"
		"  --help               this text\n"
		"\n"
		"'auto' picks, per size, the algorithm and protocol of least predicted time\n"
		"by NCCL's cost model (ring, tree, nvls, nvlstree); alltoall and sendrecv go direct,\n"
		"LL for sends of at most 16 KiB and Simple above, as NCCL's point-to-point.\n");
}

struct opts {
	const char *cluster;       /* preset or file */
	const char *placement;     /* NULL: the cluster's */
	long long nodes;           /* 0: the cluster's */
	int op;                    /* enum sim_op */
	long long ranks;           /* per group, 0: all / G */
	long long groups;          /* concurrent groups */
	double minb, maxb, factor; /* sizes, bytes */
	int algo, proto;           /* enum sim_algo / sim_proto */
	int fid;                   /* enum sim_fidelity */
	long long seed;            /* ECMP / placement seed, -1: the cluster's (default 1) */
	long long channels;        /* 0 = automatic */
	bool json;                 /* --json */
	int routing;               /* --routing (enum topo_routing), -1: the cluster's */
	double coalesce;           /* --flow-coalesce */
};

struct row {
	double size_bytes;         /* nccl-tests size, bytes */
	double time_us;            /* simulated, µs */
	double algbw, busbw;       /* GB/s */
	enum sim_algo algo;        /* chosen */
	enum sim_proto proto;      /* chosen */
};

struct run_ctx {
	int ndone;                 /* collectives finished */
	simtime_ps last_ps;        /* latest end, ps */
};

static void on_done(void *ctx, struct sim_coll *c)
{
	struct run_ctx *r = ctx;
	r->ndone++;
	if (sim_coll_end_time(c) > r->last_ps)
		r->last_ps = sim_coll_end_time(c);
}

static int beyond(double t, struct ts_error *err)
{
	return ts_error_set(err, TS_EINPUT,
			    "the collective would end at %.3g s of simulated time, beyond the "
			    "simulator's horizon of %.0e s (absurd bandwidths or sizes?)",
			    t, SIM_HORIZON_S);
}

/* Simulate one size; fills row->time_us. */
static int run_size(const struct topo *t, const struct opts *o, struct sim_coll_spec *specs,
		    int ng, struct row *row, struct ts_error *err)
{
	struct sim_engine eng;
	struct sim_net net;
	struct sim_coll **cs = NULL;
	struct run_ctx rc_ = { 0, 0 };
	int g, rc;
	bool spray = t->cl.fabric.routing == TOPO_ROUTING_SPRAY; /* the cluster's or --routing's */
	if (o->fid == SIM_ANALYTIC) {
		double ts;
		rc = sim_coll_analytic_groups(t, specs, ng, spray, &ts, err);
		if (!rc && !(ts <= SIM_HORIZON_S))
			return beyond(ts, err);
		if (!rc)
			row->time_us = ts * 1e6;
		return rc;
	}
	{
		/* beyond the horizon by the closed form: refused before the
		 * event times overflow (found by review: a 1 MB/s fabric at
		 * 2^50 bytes aborted at flow level) */
		double ts;
		rc = sim_coll_analytic_groups(t, specs, ng, spray, &ts, err);
		if (rc)
			return rc;
		if (!(ts <= SIM_HORIZON_S))
			return beyond(ts, err);
	}
	sim_engine_init(&eng);
	rc = sim_net_init_topo(&net, &eng, (enum sim_fidelity)o->fid, t, err);
	if (rc) {
		sim_engine_release(&eng);
		return rc;
	}
	net.par.spray = spray;
	net.par.coalesce = o->coalesce;
	cs = calloc((size_t)ng, sizeof(*cs));
	if (!cs) {
		rc = ts_error_set(err, TS_ENOMEM, "out of memory");
		goto out;
	}
	for (g = 0; g < ng; g++) {
		rc = sim_coll_start(&net, t, &specs[g], on_done, &rc_, &cs[g], err);
		if (rc)
			goto out;
	}
	sim_run(&eng, TS_SIMTIME_MAX);
	for (g = 0; g < ng; g++)
		if ((rc = sim_coll_error(cs[g]))) {
			rc = ts_error_set(err, rc, "%s while simulating the collective",
					  rc == TS_ENOMEM ? "out of memory" : "a failure");
			goto out;
		}
	if (rc_.ndone != ng) {
		rc = ts_error_set(err, TS_EINPUT, "simulation ended with %d of %d collectives unfinished",
				  ng - rc_.ndone, ng);
		goto out;
	}
	if (!(time_to_s(rc_.last_ps) <= SIM_HORIZON_S)) {
		rc = beyond(time_to_s(rc_.last_ps), err);
		goto out;
	}
	row->time_us = time_to_us(rc_.last_ps);
out:
	if (cs)
		for (g = 0; g < ng; g++)
			sim_coll_free(cs[g]);
	free(cs);
	sim_net_release(&net);
	sim_engine_release(&eng);
	return rc;
}

static bool has_redop(int op)
{
	return op == SIM_OP_ALLREDUCE || op == SIM_OP_REDUCESCATTER || op == SIM_OP_REDUCE;
}

static int parse_opts(int argc, char **argv, struct opts *o, bool *help)
{
	static const struct option lo[] = {
		{ "cluster", required_argument, NULL, 'C' },
		{ "nodes", required_argument, NULL, 'N' },
		{ "op", required_argument, NULL, 'o' },
		{ "ranks", required_argument, NULL, 'r' },
		{ "concurrent", required_argument, NULL, 'G' },
		{ "minbytes", required_argument, NULL, 'b' },
		{ "maxbytes", required_argument, NULL, 'e' },
		{ "stepfactor", required_argument, NULL, 'f' },
		{ "algo", required_argument, NULL, 'a' },
		{ "proto", required_argument, NULL, 'p' },
		{ "fidelity", required_argument, NULL, 'F' },
		{ "placement", required_argument, NULL, 'P' },
		{ "seed", required_argument, NULL, 's' },
		{ "channels", required_argument, NULL, 'c' },
		{ "json", no_argument, NULL, 'j' },
		{ "routing", required_argument, NULL, 'R' },
		{ "flow-coalesce", required_argument, NULL, 'K' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int ch;
	bool have_b = false, have_e = false;
	memset(o, 0, sizeof(*o));
	o->op = -1;
	o->groups = 1;
	o->factor = 2;
	o->fid = SIM_FLOW;
	o->seed = -1;
	o->routing = -1;
	o->coalesce = SIM_FLOW_COALESCE;
	optind = 1;
	while ((ch = getopt_long(argc, argv, ":b:e:f:h", lo, NULL)) != -1) {
		switch (ch) {
		case 'C':
			if (cli_once(CMD, "--cluster", &o->cluster, optarg))
				return 2;
			break;
		case 'N':
			if (cli_parse_long(CMD, "--nodes", optarg, 1, TOPO_MAX_NODES, &o->nodes))
				return 2;
			break;
		case 'o':
			o->op = sim_op_parse(optarg);
			if (o->op < 0)
				return cli_usage(CMD, "unknown operation '%s' (allreduce, reducescatter, "
						 "allgather, alltoall, broadcast, reduce, sendrecv)", optarg);
			break;
		case 'r':
			if (cli_parse_long(CMD, "--ranks", optarg, 1, 100000000, &o->ranks))
				return 2;
			break;
		case 'G':
			if (cli_parse_long(CMD, "--concurrent", optarg, 1, 100000000, &o->groups))
				return 2;
			break;
		case 'b':
			if (cli_parse_bytes(CMD, "-b", optarg, 1, MAX_BYTES, &o->minb))
				return 2;
			have_b = true;
			break;
		case 'e':
			if (cli_parse_bytes(CMD, "-e", optarg, 1, MAX_BYTES, &o->maxb))
				return 2;
			have_e = true;
			break;
		case 'f':
			if (cli_parse_double(CMD, "-f", optarg, 1.0001, 1e6, &o->factor))
				return 2;
			break;
		case 'a':
			o->algo = sim_algo_parse(optarg);
			if (o->algo < 0)
				return cli_usage(CMD, "unknown algorithm '%s' (auto, ring, tree, rhd, "
						 "direct, hier, ps, nvls, nvlstree)", optarg);
			break;
		case 'p':
			o->proto = sim_proto_parse(optarg);
			if (o->proto < 0)
				return cli_usage(CMD, "unknown protocol '%s' (auto, LL, LL128, Simple)",
						 optarg);
			break;
		case 'F':
			if (!strcmp(optarg, "analytic"))
				o->fid = SIM_ANALYTIC;
			else if (!strcmp(optarg, "flow"))
				o->fid = SIM_FLOW;
			else if (!strcmp(optarg, "packet"))
				o->fid = SIM_PACKET;
			else
				return cli_usage(CMD, "unknown fidelity '%s' (analytic, flow, packet)",
						 optarg);
			break;
		case 'P':
			if (cli_once(CMD, "--placement", &o->placement, optarg))
				return 2;
			break;
		case 's':
			if (cli_parse_long(CMD, "--seed", optarg, 0, RNG_SEED_MAX, &o->seed))
				return 2;
			break;
		case 'c':
			if (cli_parse_long(CMD, "--channels", optarg, 1, 64, &o->channels))
				return 2;
			break;
		case 'j':
			o->json = true;
			break;
		case 'R':
			if (cli_parse_routing(CMD, optarg, &o->routing))
				return 2;
			break;
		case 'K':
			if (cli_parse_double(CMD, "--flow-coalesce", optarg, 0, 0.5, &o->coalesce))
				return 2;
			break;
		case 'h':
			*help = true;
			return 0;
		default:
			return cli_bad_option(CMD, argv);
		}
	}
	if (optind < argc)
		return cli_usage(CMD, "unexpected argument '%s'", argv[optind]);
	if (!o->cluster)
		return cli_usage(CMD, "--cluster is required");
	if (o->op < 0)
		return cli_usage(CMD, "--op is required");
	if (!have_b && !have_e)
		return cli_usage(CMD, "-b (and -e) are required");
	if (!have_b)
		o->minb = o->maxb;
	if (!have_e)
		o->maxb = o->minb;
	if (o->maxb < o->minb)
		return cli_usage(CMD, "-e (%.0f) is smaller than -b (%.0f)", o->maxb, o->minb);
	return 0;
}


/* nccl-tests' count column: its paramcount, the elements per rank for the
 * ops whose size is the whole buffer (found by review: size / 4 was
 * printed for every op, 8 x too many for an all-gather on 8 ranks). */
static bool per_rank(const struct opts *o)
{
	return o->op == SIM_OP_ALLGATHER || o->op == SIM_OP_REDUCESCATTER ||
	       o->op == SIM_OP_ALLTOALL;
}

static double row_count(const struct opts *o, int n, double size_bytes)
{
	return floor(size_bytes / 4 / (per_rank(o) ? n : 1));
}

/* The rows' sizes, MIN, MIN*FACTOR, ... MAX, at most MAX_SIZES, into S;
 * returns how many. nccl-tests: a buffer holds whole floats, and
 * AG/RS/alltoall buffers a multiple of n floats, rounded down (found by
 * review: the other ops kept -b 1001 as 1001 bytes, 250 floats, and their
 * bandwidths counted the extra byte). A size below one float (per rank),
 * or one that rounds onto the previous row's, gives no row of its own. */
static int row_sizes(const struct opts *o, int n, double *S)
{
	double per = per_rank(o) ? n : 1, size;
	int k = 0;
	for (size = o->minb; size <= o->maxb * (1 + 1e-12) && k < MAX_SIZES; size *= o->factor) {
		double b = floor(size / (4.0 * per)) * 4.0 * per;
		if (b < 4.0 * per || (k > 0 && b == S[k - 1]))
			continue;
		S[k++] = b;
		if (o->minb == o->maxb)
			break;
	}
	return k;
}

/* nccl-tests' root column: broadcast's and reduce's root, -1 for the rest. */
static int op_root(const struct opts *o)
{
	return o->op == SIM_OP_BROADCAST || o->op == SIM_OP_REDUCE ? 0 : -1;
}

static void print_table(const struct topo *t, const struct opts *o, int n, int ng,
			const struct row *rows, int nrows, double avg)
{
	int i;
	printf("# trainsim collective: %s on %s (%d GPUs), %d group%s of %d rank%s, fidelity %s, "
	       "routing %s, seed %lld\n",
	       sim_op_name((enum sim_op)o->op), t->cl.name, (int)t->ngpus, ng, ng > 1 ? "s" : "", n,
	       n > 1 ? "s" : "", o->fid == SIM_ANALYTIC ? "analytic" : o->fid == SIM_FLOW ? "flow" : "packet",
	       topo_routing_names[t->cl.fabric.routing], o->seed);
	printf("#\n");
	/* nccl-tests' columns, so its parsers read the table: #wrong is N/A
	 * (nothing is checked, as nccl-tests prints with -c 0) and the in-place
	 * group repeats the out-of-place one (the simulation does not tell them
	 * apart); the algorithm and protocol follow (found by review: they sat
	 * where #wrong belongs) */
	printf("#                                                              out-of-place"
	       "                       in-place\n");
	printf("#       size         count      type   redop    root     time   algbw   busbw"
	       " #wrong     time   algbw   busbw #wrong  algo      proto\n");
	printf("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)"
	       "            (us)  (GB/s)  (GB/s)\n");
	for (i = 0; i < nrows; i++) {
		const struct row *r = &rows[i];
		printf("%12.0f  %12.0f  %8s  %6s  %6d  %7.2f  %6.2f  %6.2f  %5s  %7.2f  %6.2f  %6.2f  "
		       "%5s  %-8s  %s\n",
		       r->size_bytes, row_count(o, n, r->size_bytes), "float",
		       has_redop(o->op) ? "sum" : "none", op_root(o), r->time_us, r->algbw, r->busbw, "N/A",
		       r->time_us, r->algbw, r->busbw, "N/A", sim_algo_name(r->algo),
		       sim_proto_name(r->proto));
	}
	printf("# Out of bounds values : 0 OK\n");
	printf("# Avg bus bandwidth    : %g \n", avg);
	printf("#\n");
}

static int print_json(const struct topo *t, const struct opts *o, int n, int ng,
		      const struct row *rows, int nrows, double avg)
{
	cJSON *root = cJSON_CreateObject(), *arr;
	int i;
	if (!root)
		return cli_print_json(NULL);
	cJSON_AddStringToObject(root, "cluster", t->cl.name);
	cJSON_AddStringToObject(root, "op", sim_op_name((enum sim_op)o->op));
	cJSON_AddStringToObject(root, "fidelity",
				o->fid == SIM_ANALYTIC ? "analytic" : o->fid == SIM_FLOW ? "flow" : "packet");
	cJSON_AddNumberToObject(root, "ranks", n);
	cJSON_AddNumberToObject(root, "groups", ng);
	cJSON_AddNumberToObject(root, "gpus", t->ngpus);
	{
		/* in full: cJSON prints 15 significant digits where they compare
		 * equal within its epsilon (found by review: 2^53 came out as
		 * 9.00719925474099e+15) */
		char sd[24];
		snprintf(sd, sizeof(sd), "%lld", o->seed);
		cJSON_AddRawToObject(root, "seed", sd);
	}
	cJSON_AddStringToObject(root, "routing", topo_routing_names[t->cl.fabric.routing]);
	/* the table's type, redop and root columns (found by review) */
	cJSON_AddStringToObject(root, "type", "float");
	cJSON_AddStringToObject(root, "redop", has_redop(o->op) ? "sum" : "none");
	cJSON_AddNumberToObject(root, "root", op_root(o));
	cJSON_AddStringToObject(root, "algo", sim_algo_name(rows[nrows - 1].algo));
	cJSON_AddStringToObject(root, "proto", sim_proto_name(rows[nrows - 1].proto));
	arr = cJSON_AddArrayToObject(root, "rows");
	for (i = 0; arr && i < nrows; i++) {
		cJSON *r = cJSON_CreateObject();
		if (!r)
			break;
		/* whole numbers in full, as the seed (found by an audit,
		 * 2026-12-06: 1 PB came out as 1e+15) */
		char sz[32], ct[32];
		snprintf(sz, sizeof(sz), "%.0f", rows[i].size_bytes);
		snprintf(ct, sizeof(ct), "%.0f", row_count(o, n, rows[i].size_bytes));
		cJSON_AddRawToObject(r, "size_bytes", sz);
		cJSON_AddRawToObject(r, "count", ct);
		cJSON_AddNumberToObject(r, "time_us", rows[i].time_us);
		cJSON_AddNumberToObject(r, "algbw_GBps", rows[i].algbw);
		cJSON_AddNumberToObject(r, "busbw_GBps", rows[i].busbw);
		cJSON_AddStringToObject(r, "algo", sim_algo_name(rows[i].algo));
		cJSON_AddStringToObject(r, "proto", sim_proto_name(rows[i].proto));
		cJSON_AddItemToArray(arr, r);
	}
	cJSON_AddNumberToObject(root, "avg_busbw_GBps", avg);
	return cli_print_json(root);
}

int cmd_collective(int argc, char **argv)
{
	struct opts o;
	struct topo_cluster cl;
	struct topo t;
	struct ts_error err = TS_ERROR_INIT;
	struct sim_coll_spec *specs = NULL;
	int32_t *ranks = NULL;
	struct row rows[MAX_SIZES];
	bool help = false, have_cl = false, have_t = false;
	int rc, nrows = 0, nsizes, g, n, ng, status = 2;
	double sizes[MAX_SIZES], avg = 0;
	memset(&t, 0, sizeof(t));
	rc = parse_opts(argc, argv, &o, &help);
	if (rc)
		return rc;
	if (help) {
		usage(stdout);
		return 0;
	}
	if (topo_cluster_load(&cl, o.cluster, (int)o.nodes, &err))
		return cli_fail(&err);
	have_cl = true;
	/* --seed when given, else the cluster file's (found by review: its
	 * "seed" was always replaced by the flag's default) */
	if (o.seed >= 0)
		cl.seed = (uint64_t)o.seed;
	o.seed = (long long)cl.seed;
	if (cli_apply_routing(&cl, o.routing, &err))
		goto fail;
	if (o.placement && topo_placement_parse(&cl, o.placement, &err))
		goto fail;
	if (topo_build(&t, &cl, &err))
		goto fail;
	have_t = true;
	ng = (int)o.groups;
	if (o.groups > t.ngpus) {
		ts_error_set(&err, TS_EINPUT, "--concurrent %lld groups but '%s' has %d GPUs", o.groups,
			     t.cl.name, (int)t.ngpus);
		goto fail;
	}
	n = o.ranks ? (int)o.ranks : (int)(t.ngpus / ng);
	if (o.ranks > t.ngpus || (long long)n * ng > t.ngpus) {
		ts_error_set(&err, TS_EINPUT, "%d group%s of %lld ranks need %lld GPUs but '%s' has %d",
			     ng, ng > 1 ? "s" : "", (long long)n, (long long)n * ng, t.cl.name,
			     (int)t.ngpus);
		goto fail;
	}
	nsizes = row_sizes(&o, n, sizes);
	if (o.fid == SIM_PACKET) {
		/* every packet is an event per hop: bound the work (found by
		 * review: -e 1PB ran for days), over the rows the loop below runs,
		 * at the fabric's payload per packet */
		double mtu = cli_packet_mtu(&t), pk = 0, s_est;
		for (int k = 0; k < nsizes; k++)
			pk += ceil(sizes[k] * sim_busbw_factor((enum sim_op)o.op, n) / mtu) * n * ng;
		s_est = cli_packet_s(&t, pk);
		if (s_est > PACKET_MAX_S) {
			ts_error_set(&err, TS_EINPUT, "--fidelity packet: these sizes move about %.2g "
				     "packets of %.0f B, some %.0f minutes of simulation here (the bound "
				     "is %.0f); use --fidelity flow or a smaller -e", pk, mtu, s_est / 60,
				     PACKET_MAX_S / 60);
			goto fail;
		}
	}
	{
		/* a direct plan's transfers, all groups together: refused before
		 * any plan is built (a 1 GB all-to-all over 8,192 ranks at flow
		 * level, refused only after NCCL's choice had priced each
		 * protocol analytically, took 143 s; now at once; --algo direct
		 * on another op still prices them) */
		struct sim_coll_spec s;
		sim_coll_spec_init(&s);
		s.op = (enum sim_op)o.op;
		s.nranks = n;
		s.algo = (enum sim_algo)o.algo;
		/* (another algorithm given: sim_coll_check says whether it can
		 * run the op at all, found by review: ring said 'a direct
		 * alltoall ... is' for an alltoall it cannot run) */
		if ((s.algo == SIM_ALGO_AUTO || s.algo == SIM_ALGO_DIRECT) &&
		    sim_coll_size_check(&s, ng, o.fid != SIM_ANALYTIC, &err))
			goto fail;
	}
	specs = calloc((size_t)ng, sizeof(*specs));
	ranks = malloc((size_t)ng * (size_t)n * sizeof(int32_t));
	if (!specs || !ranks) {
		ts_error_set(&err, TS_ENOMEM, "out of memory");
		goto fail;
	}
	for (g = 0; g < ng; g++) {
		int j;
		for (j = 0; j < n; j++)
			ranks[(size_t)g * n + j] = g + j * ng;
		sim_coll_spec_init(&specs[g]);
		specs[g].op = (enum sim_op)o.op;
		specs[g].nranks = n;
		specs[g].ranks = ranks + (size_t)g * n;
		specs[g].channels = (int32_t)o.channels;
		specs[g].hash = rng_hash2((uint64_t)o.seed, (uint64_t)g);
	}
	for (nrows = 0; nrows < nsizes; nrows++) {
		struct row *r = &rows[nrows];
		double S = sizes[nrows];
		enum sim_algo a;
		enum sim_proto p;
		for (g = 0; g < ng; g++) {
			specs[g].size_bytes = S;
			specs[g].algo = (enum sim_algo)o.algo;
			specs[g].proto = (enum sim_proto)o.proto;
		}
		if (sim_coll_choose(&t, &specs[0], &a, &p, &err))
			goto fail;
		for (g = 0; g < ng; g++) {
			specs[g].algo = a;
			specs[g].proto = p;
		}
		r->size_bytes = S;
		r->algo = a;
		r->proto = p;
		if (run_size(&t, &o, specs, ng, r, &err))
			goto fail;
		r->algbw = S / (r->time_us * 1e-6) / 1e9;
		r->busbw = r->algbw * sim_busbw_factor((enum sim_op)o.op, n);
		avg += r->busbw;
	}
	if (nrows == 0) {
		if (per_rank(&o))
			status = cli_usage("collective",
					   "-b/-e: no size from %.0f to %.0f holds one float per rank "
					   "(%d bytes for %d ranks)",
					   o.minb, o.maxb, 4 * n, n);
		else
			status = cli_usage("collective",
					   "-b/-e: no size from %.0f to %.0f holds one float (4 bytes)",
					   o.minb, o.maxb);
		goto out;
	}
	avg /= nrows;
	if (o.json)
		status = print_json(&t, &o, n, ng, rows, nrows, avg);
	else {
		print_table(&t, &o, n, ng, rows, nrows, avg);
		status = 0;
	}
	goto out;
fail:
	status = cli_fail(&err);
out:
	free(specs);
	free(ranks);
	if (have_t)
		topo_release(&t);
	if (have_cl)
		topo_cluster_release(&cl);
	return status;
}
