/* cmd_topo.c: `trainsim topo`: describe a cluster's topology as built:
 * hosts, GPUs, switches and cables per tier, ports in use, oversubscription,
 * bisection bandwidth (max-flow on the built links), diameter and ECMP paths;
 * optionally a Graphviz drawing. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "common/fileio.h"
#include "common/table.h"
#include "common/units.h"
#include "topo/topo.h"

static const char *const tier_key[4] = { "intra_host", "tier1", "tier2", "tier3" };
static const char *const tier_label[4] = { "in host", "1 (leaf/edge)", "2 (spine/agg)",
					   "3 (core/super-spine)" };

static void usage(FILE *out)
{
	const char *const *p = topo_preset_names();
	fprintf(out,
		"usage: trainsim topo --cluster NAME|FILE [--nodes N] [--placement P] [--json]\n"
		"                     [--dot FILE]\n"
		"\n"
		"Builds the cluster's topology graph and reports hosts, GPUs, switches and\n"
		"cables per tier, ports in use per switch, oversubscription per tier, the\n"
		"bisection bandwidth (max-flow between the first and second half of the hosts\n"
		"on the built links), the diameter in hops (GPU to GPU) and the most\n"
		"equal-cost paths between the first and the last host.\n"
		"\n"
		"  --cluster NAME|FILE  a preset or a cluster JSON file (see README, Cluster files)\n"
		"  --nodes N            number of nodes (overrides the preset or file)\n"
		"  --placement P        linear | round-robin | random | a GPU list \"0,2,1,3,...\"\n"
		"  --json               the same content as JSON\n"
		"  --dot FILE           also write the graph as Graphviz (up to %d graph nodes)\n"
		"  --help               this text\n"
		"\n"
		"presets:\n",
		TOPO_DOT_MAX_NODES);
	for (; *p; p++)
		fprintf(out, "  %-26s %s\n", *p, topo_preset_summary(*p));
}

static cJSON *tier_object(const double *v, int from, bool skip_zero)
{
	cJSON *o = cJSON_CreateObject();
	for (int k = from; o && k <= 3; k++) {
		if (skip_zero && v[k] == 0)
			continue;
		cJSON_AddNumberToObject(o, tier_key[k], v[k]);
	}
	return o;
}

static int print_json(const struct topo *t, const struct topo_summary *s)
{
	cJSON *root = cJSON_CreateObject(), *o;
	double sw[4], ln[4], pmax[4], pmin[4];
	if (!root)
		return cli_print_json(NULL);
	for (int k = 0; k < 4; k++) {
		sw[k] = s->switches_by_tier[k];
		ln[k] = (double)s->links_by_tier[k];
		pmax[k] = s->ports_max[k];
		pmin[k] = s->ports_min[k];
	}
	cJSON_AddStringToObject(root, "cluster", t->cl.name);
	cJSON_AddStringToObject(root, "source", t->cl.source);
	cJSON_AddStringToObject(root, "fabric", topo_fabric_name(t->cl.fabric.kind));
	cJSON_AddBoolToObject(root, "rails", t->cl.fabric.rails);
	cJSON_AddStringToObject(root, "routing", topo_routing_names[t->cl.fabric.routing]);
	cJSON_AddStringToObject(root, "placement", topo_placement_name(t->cl.placement));
	cJSON_AddNumberToObject(root, "hosts", s->hosts);
	cJSON_AddNumberToObject(root, "gpus", s->gpus);
	cJSON_AddNumberToObject(root, "gpus_per_node", t->cl.node.gpus);
	cJSON_AddNumberToObject(root, "nics_per_node", t->cl.node.nics);
	/* what the table's header lines say too (found by review) */
	cJSON_AddStringToObject(root, "gpu", t->cl.gpu.name);
	cJSON_AddStringToObject(root, "intra_node",
				t->cl.node.intra == TOPO_INTRA_NVSWITCH ? "nvswitch" : "pcie");
	cJSON_AddStringToObject(root, "cpu", topo_cpu_name(t->cl.node.cpu));
	cJSON_AddNumberToObject(root, "nic_bandwidth_gbps", t->cl.node.nic_Bps * 8 / 1e9);
	cJSON_AddStringToObject(root, "transport",
				t->cl.fabric.transport == TOPO_TRANSPORT_TCP ? "tcp" : "rdma");
	cJSON_AddNumberToObject(root, "mtu_bytes", t->cl.fabric.mtu_bytes);
	cJSON_AddNumberToObject(root, "packet_overhead_bytes", t->cl.fabric.overhead_bytes);
	o = cJSON_AddObjectToObject(root, "switches");
	if (o) {
		cJSON_AddNumberToObject(o, "total", s->switches_total);
		cJSON_AddItemToObject(o, "by_tier", tier_object(sw, 1, false));
		cJSON_AddItemToObject(o, "ports_max", tier_object(pmax, 1, false));
		cJSON_AddItemToObject(o, "ports_min", tier_object(pmin, 1, false));
	}
	o = cJSON_AddObjectToObject(root, "links");
	if (o) {
		cJSON_AddNumberToObject(o, "total", (double)s->links_total);
		cJSON_AddItemToObject(o, "by_tier", tier_object(ln, 0, false));
	}
	cJSON_AddNumberToObject(root, "bisection_gbps", bw_to_gbps(s->bisection_Bps));
	cJSON_AddItemToObject(root, "oversubscription", tier_object(s->oversubscription, 1, true));
	cJSON_AddNumberToObject(root, "diameter_hops", s->diameter_hops);
	cJSON_AddNumberToObject(root, "ecmp_paths_max", (double)s->ecmp_paths_max);
	return cli_print_json(root);
}

static int print_table(const struct topo *t, const struct topo_summary *s)
{
	static const char *const head[] = { "tier", ">switches", ">ports max", ">ports min",
					    ">cables", ">oversubscription" };
	const struct topo_cluster *c = &t->cl;
	struct table tb;
	char a[32];
	printf("cluster    %s\n", c->name);
	printf("source     %s\n", c->source);
	printf("fabric     %s%s, %s, MTU %d B + %d B per packet\n", topo_fabric_name(c->fabric.kind),
	       c->fabric.rails ? " (rail-optimised)" : "",
	       c->fabric.transport == TOPO_TRANSPORT_TCP ? "tcp" : "rdma", c->fabric.mtu_bytes,
	       c->fabric.overhead_bytes);
	printf("nodes      %d x %d %s (%s), %d NIC%s of %s each, %s CPUs\n", s->hosts, c->node.gpus,
	       c->gpu.name, c->node.intra == TOPO_INTRA_NVSWITCH ? "NVSwitch" : "PCIe",
	       c->node.nics, c->node.nics == 1 ? "" : "s", units_fmt_bw(c->node.nic_Bps, a, sizeof(a)),
	       topo_cpu_name(c->node.cpu));
	printf("gpus       %d\n", s->gpus);
	printf("placement  %s\n\n", topo_placement_name(c->placement));
	table_init(&tb, 6, head);
	for (int k = 0; k <= 3; k++) {
		if (k && !s->switches_by_tier[k])
			continue;
		table_cell(&tb, "%s", tier_label[k]);
		if (k) {
			table_cell(&tb, "%d", s->switches_by_tier[k]);
			table_cell(&tb, "%d", s->ports_max[k]);
			table_cell(&tb, "%d", s->ports_min[k]);
		} else {
			table_cell(&tb, "-");
			table_cell(&tb, "-");
			table_cell(&tb, "-");
		}
		table_cell(&tb, "%lld", (long long)s->links_by_tier[k]);
		if (k && s->oversubscription[k] > 0)
			table_cell(&tb, "%.2f:1", s->oversubscription[k]);
		else
			table_cell(&tb, "-");
	}
	if (tb.oom) {
		table_release(&tb);
		fprintf(stderr, "trainsim: error: out of memory\n");
		return 2;
	}
	table_print(&tb, stdout);
	table_release(&tb);
	printf("\nswitches   %d, cables %lld\n", s->switches_total, (long long)s->links_total);
	printf("bisection  %.0f Gb/s (%.1f GB/s), max-flow between the two halves of the hosts\n",
	       bw_to_gbps(s->bisection_Bps), bw_to_GBps(s->bisection_Bps));
	printf("diameter   %d hops GPU to GPU\n", s->diameter_hops);
	printf("ecmp       %lld equal-cost paths at most, first to last host\n",
	       (long long)s->ecmp_paths_max);
	printf("routing    %s\n", topo_routing_names[c->fabric.routing]);
	return 0;
}

int cmd_topo(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "cluster", required_argument, NULL, 'c' }, { "nodes", required_argument, NULL, 'n' },
		{ "placement", required_argument, NULL, 'p' }, { "json", no_argument, NULL, 'j' },
		{ "dot", required_argument, NULL, 'd' },       { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	const char *cluster = NULL, *placement = NULL, *dot = NULL;
	long long nodes = 0;
	bool json = false;
	struct topo_cluster c;
	struct topo t;
	struct topo_summary s;
	struct afile dot_file = AFILE_INIT;
	struct ts_error err = TS_ERROR_INIT;
	int o, rc;

	while ((o = getopt_long(argc, argv, "c:n:p:jd:h", opts, NULL)) != -1) {
		switch (o) {
		case 'c':
			if (cli_once("topo", "--cluster", &cluster, optarg))
				return 2;
			break;
		case 'n':
			if (cli_parse_long("topo", "--nodes", optarg, 1, TOPO_MAX_NODES, &nodes))
				return 2;
			break;
		case 'p':
			if (cli_once("topo", "--placement", &placement, optarg))
				return 2;
			break;
		case 'j':
			json = true;
			break;
		case 'd':
			if (cli_once("topo", "--dot", &dot, optarg))
				return 2;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			return cli_bad_option("topo", argv);
		}
	}
	if (optind < argc)
		return cli_usage("topo", "takes no arguments (got '%s')", argv[optind]);
	if (!cluster)
		return cli_usage("topo", "needs --cluster NAME|FILE");
	{
		const char *in = topo_cluster_names_file(cluster) ? cluster : NULL;
		if (cli_out_not_input("topo", "--dot", dot, &in, 1))
			return 2;
	}
	if (topo_cluster_load(&c, cluster, (int)nodes, &err))
		return cli_fail(&err);
	if (placement && topo_placement_parse(&c, placement, &err)) {
		topo_cluster_release(&c);
		return cli_usage("topo", "--placement: %s", err.msg);
	}
	rc = topo_build(&t, &c, &err);
	topo_cluster_release(&c);
	if (rc)
		return cli_fail(&err);
	if (topo_summarize(&t, &s, &err)) {
		topo_release(&t);
		return cli_fail(&err);
	}
	/* the graph is written, not yet in place, before the report: a report
	 * that cannot be written leaves no graph and a file there before
	 * untouched (found by an audit, 2026-12-06: stdout on a full disk left
	 * the whole .dot; then by review: removing it afterwards removed a
	 * file the run had replaced, or the symbolic link to it) */
	if (dot && topo_write_dot(&t, dot, &dot_file, &err)) {
		topo_release(&t);
		return cli_fail(&err);
	}
	rc = json ? print_json(&t, &s) : print_table(&t, &s);
	if (!rc)
		rc = cli_flush_stdout();
	if (!rc && dot && afile_commit(&dot_file, &err))
		rc = cli_fail(&err);
	afile_abort(&dot_file);
	topo_release(&t);
	return rc;
}
