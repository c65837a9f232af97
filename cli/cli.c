/* cli.c: subcommand dispatch and the helpers every subcommand shares. */
#include "cli/cli.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/fileio.h"
#include "common/units.h"
#include "sim/sim.h"
#include "topo/topo.h"

#ifndef TRAINSIM_VERSION
#define TRAINSIM_VERSION "dev"
#endif

const struct cli_cmd cli_commands[] = {
	{ "topo", cmd_topo, "describe a cluster's topology: tiers, bisection, oversubscription, ECMP" },
	{ "collective", cmd_collective, "simulate a collective like nccl-tests (size, time, algbw, busbw)" },
	{ "model", cmd_model, "parameters and FLOPs of a model, by part" },
	{ "memory", cmd_memory, "memory per GPU of a model under a parallel plan" },
	{ "predict", cmd_predict, "predict the iteration time of a plan on a cluster" },
	{ "search", cli_planned, "search parallel plans for the fastest that fits" },
	{ "fabric", cli_planned, "compare cluster fabrics for a workload: time and cost" },
	{ "hw", cli_planned, "run a plan's operations on real GPUs (NCCL) or CPU ranks (MPI)" },
	{ "calibrate", cli_planned, "fit model parameters to measurements or nccl-tests logs" },
	{ "validate", cli_planned, "compare predictions with measurements" },
	{ NULL, NULL, NULL }
};

static void print_help(FILE *out)
{
	fprintf(out,
		"usage: trainsim <command> [options]\n"
		"\n"
		"Predicts the iteration time of large-model training on GPU clusters and\n"
		"checks it on real hardware.\n"
		"\n"
		"commands:\n");
	for (int i = 0; cli_commands[i].name; i++)
		if (cli_commands[i].run != cli_planned)
			fprintf(out, "  %-11s %s\n", cli_commands[i].name, cli_commands[i].summary);
	fprintf(out, "\nplanned, not implemented in this version:\n");
	for (int i = 0; cli_commands[i].name; i++)
		if (cli_commands[i].run == cli_planned)
			fprintf(out, "  %-11s %s\n", cli_commands[i].name, cli_commands[i].summary);
	fprintf(out,
		"\n"
		"Every command takes --help (or: trainsim help COMMAND) and --json. Exit\n"
		"status: 0 success, 1 infeasible plan (e.g. out of memory), 2 bad input or\n"
		"usage. trainsim --version prints the version.\n");
}

static int run_command(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "trainsim: error: no command given (see 'trainsim --help')\n");
		return 2;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help") ||
	    !strcmp(argv[1], "--version")) {
		bool ver = !strcmp(argv[1], "--version");
		if (argc == 3 && !ver &&
		    (!strcmp(argv[2], "help") || !strcmp(argv[2], "--help") || !strcmp(argv[2], "-h")))
			argc = 2; /* help help: this help */
		if (argc == 3 && !ver)
			for (int i = 0; cli_commands[i].name; i++)
				if (!strcmp(argv[2], cli_commands[i].name)) {
					/* help COMMAND: the command's own --help */
					char opt[] = "--help";
					char *av[] = { argv[2], opt, NULL };
					optind = 1;
					opterr = 0;
					return cli_commands[i].run(2, av);
				}
		if (argc > 2) { /* (found by an audit, 2026-12-06: ignored) */
			char extra[80];
			/* (the argument in excess: found by review, help predict x
			 * named 'predict') */
			snprintf(extra, sizeof(extra), "%s", argv[ver ? 2 : argc > 3 ? 3 : 2]);
			ts_one_line(extra);
			if (ver || argc > 3)
				fprintf(stderr, "trainsim: error: %s takes %s, got '%s'\n", argv[1],
					ver ? "no arguments" : "at most a command", extra);
			else
				fprintf(stderr, "trainsim: error: unknown command '%s' (see 'trainsim "
						"--help')\n", extra);
			return 2;
		}
		if (ver)
			printf("trainsim %s\n", TRAINSIM_VERSION);
		else
			print_help(stdout);
		return 0;
	}
	for (int i = 0; cli_commands[i].name; i++)
		if (!strcmp(argv[1], cli_commands[i].name)) {
			optind = 1;
			opterr = 0;
			return cli_commands[i].run(argc - 1, argv + 1);
		}
	{
		char name[80];
		snprintf(name, sizeof(name), "%s", argv[1]);
		ts_one_line(name);
		fprintf(stderr, "trainsim: error: unknown command '%s' (see 'trainsim --help')\n",
			name);
	}
	return 2;
}

int cli_main(int argc, char **argv)
{
	int rc = run_command(argc, argv);
	/* output that could not be written fails the run (found by review:
	 * a full disk or closed pipe lost the report with exit 0), and
	 * decides the status: a plan that does not fit (1) whose report is
	 * lost is a failed run (2), as its second line says */
	int wrc = cli_flush_stdout();
	return wrc ? wrc : rc;
}

int cli_planned(int argc, char **argv)
{
	const char *summary = "";
	for (int i = 0; cli_commands[i].name; i++)
		if (!strcmp(cli_commands[i].name, argv[0]))
			summary = cli_commands[i].summary;
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			printf("trainsim %s: %s\n(planned; not implemented in this version)\n", argv[0],
			       summary);
			return 0;
		}
	fprintf(stderr, "trainsim: error: '%s' is not implemented in this version\n", argv[0]);
	return 2;
}

int cli_fail(const struct ts_error *err)
{
	ts_error_print(err);
	return ts_error_exit_status(err->code ? err->code : TS_EINPUT);
}

int cli_once(const char *cmd, const char *opt, const char **slot, const char *val)
{
	if (*slot)
		return cli_usage(cmd, "%s given twice ('%s', '%s')", opt, *slot, val);
	*slot = val;
	return 0;
}

int cli_flush_stdout(void)
{
	static bool said;
	int e;
	errno = 0;
	if (fflush(stdout) == 0 && !ferror(stdout))
		return 0;
	e = errno;
	if (!said)
		fprintf(stderr, "trainsim: error: cannot write the output: %s\n",
			e ? strerror(e) : "write error");
	said = true;
	return 2;
}

int cli_out_not_input(const char *cmd, const char *opt, const char *out, const char *const *in,
		      int n)
{
	struct stat st;
	if (!out)
		return 0;
	for (int i = 0; i < n; i++)
		if (in[i] && stat(in[i], &st) == 0 && S_ISREG(st.st_mode) && fileio_same_file(out, in[i]))
			return cli_usage(cmd, "%s '%s' is an input file ('%s'); writing it would replace it",
					 opt, out, in[i]);
	return 0;
}

int cli_usage(const char *cmd, const char *fmt, ...)
{
	char msg[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* one line whatever the values quoted (found by review: a flag's
	 * value with a line break split the message) */
	ts_one_line(msg);
	fprintf(stderr, "trainsim: error: %s %s (see 'trainsim %s --help')\n", cmd, msg, cmd);
	return 2;
}

int cli_bad_option(const char *cmd, char **argv)
{
	const char *opt = optind > 0 ? argv[optind - 1] : NULL;
	if (opt && !strncmp(opt, "--", 2)) {
		/* a long option: its name as typed (optopt is its internal code) */
		int n = (int)strcspn(opt, "=");
		return cli_usage(cmd, "option '%.*s' is unknown or needs a value", n > 64 ? 64 : n,
				 opt);
	}
	if (optopt > ' ' && optopt < 127 && optopt != '?')
		return cli_usage(cmd, "option '-%c' is unknown or needs a value", optopt);
	return cli_usage(cmd, "option '%.64s' is unknown or needs a value", opt ? opt : "?");
}

/* val without trailing white space, in buf when it has some: a number
 * takes white space on either side, as strtod takes it before (found by
 * review: ' 4' was taken and '4 ' refused) */
static const char *trim_end(const char *val, char *buf, size_t n)
{
	size_t len = strlen(val);
	if (!len || !isspace((unsigned char)val[len - 1]) || len >= n)
		return val;
	while (len && isspace((unsigned char)val[len - 1]))
		len--;
	memcpy(buf, val, len);
	buf[len] = '\0';
	return buf;
}

int cli_parse_long(const char *cmd, const char *opt, const char *val, long long min,
		   long long max, long long *out)
{
	char *end, buf[128];
	const char *t = trim_end(val, buf, sizeof(buf));
	long long v;
	errno = 0;
	v = strtoll(t, &end, 10);
	if (end == t || *end || errno)
		return cli_usage(cmd, "%s needs an integer, got '%s'", opt, val);
	if (v < min || v > max)
		return cli_usage(cmd, "%s must be between %lld and %lld (got %lld)", opt, min, max, v);
	*out = v;
	return 0;
}

int cli_parse_double(const char *cmd, const char *opt, const char *val, double min, double max,
		     double *out)
{
	char buf[128];
	double v;
	if (units_parse_decimal(trim_end(val, buf, sizeof(buf)), &v))
		return cli_usage(cmd, "%s needs a number, got '%s'", opt, val);
	if (v < min || v > max)
		return cli_usage(cmd, "%s must be between %g and %g (got %g)", opt, min, max, v);
	*out = v;
	return 0;
}

int cli_parse_routing(const char *cmd, const char *val, int *out)
{
	for (int i = 0; topo_routing_names[i]; i++)
		if (!strcmp(val, topo_routing_names[i])) {
			*out = i;
			return 0;
		}
	return cli_usage(cmd, "unknown routing '%s' (ecmp, spray, dmodk)", val);
}

int cli_apply_routing(struct topo_cluster *cl, int routing, struct ts_error *err)
{
	if (routing < 0)
		return 0;
	if (routing == TOPO_ROUTING_DMODK && cl->fabric.kind == TOPO_FABRIC_EXPLICIT)
		return ts_error_set(err, TS_EINPUT,
				    "--routing dmodk needs a structured fabric (switch, fat-tree, "
				    "leaf-spine or clos3); cluster '%s' has an explicit one",
				    cl->name);
	cl->fabric.routing = (enum topo_routing)routing;
	return 0;
}

int cli_parse_bytes(const char *cmd, const char *opt, const char *val, double min, double max,
		    double *out)
{
	char *end, buf[128];
	const char *t = trim_end(val, buf, sizeof(buf));
	double v;
	errno = 0;
	v = strtod(t, &end);
	if (end == t || errno || !isfinite(v) || strpbrk(t, "xX"))
		return cli_usage(cmd, "%s needs a size such as 8M or 1G, got '%s'", opt, val);
	if (*end) {
		const char *why;
		double b;
		if (units_parse(t, TS_QTY_SIZE, &b, &why))
			return cli_usage(cmd, "%s: bad size '%s': %s", opt, val, why);
		v = b;
	}
	if (v < min || v > max)
		return cli_usage(cmd, "%s must be between %.0f and %.0f bytes (got '%s')", opt, min,
				 max, val);
	if (v != floor(v)) /* (found by review: 1.5 ran as a count-0 row) */
		return cli_usage(cmd, "%s must be a whole number of bytes (got '%s' = %g)", opt, val, v);
	*out = v;
	return 0;
}

int cli_print_json(cJSON *root)
{
	char *s;
	if (!root) {
		fprintf(stderr, "trainsim: error: out of memory while building JSON output\n");
		return 2;
	}
	s = cJSON_Print(root);
	cJSON_Delete(root);
	if (!s) {
		fprintf(stderr, "trainsim: error: out of memory while printing JSON output\n");
		return 2;
	}
	fputs(s, stdout);
	fputc('\n', stdout);
	free(s);
	return 0;
}

int cli_write_json(const char *path, const cJSON *root, struct ts_error *err)
{
	char *s = cJSON_Print(root);
	int rc;
	if (!s)
		return ts_error_set(err, TS_ENOMEM, "out of memory while writing '%s'", path);
	size_t n = strlen(s);
	s[n] = '\0';
	rc = fileio_write_atomic(path, s, n, err);
	free(s);
	return rc;
}

/* The packet model's rates measured on the 2-core development machine
 * (2026-12-03): a 1 GiB all-reduce over 16 H100s on dgx-h100-ndr (RDMA,
 * 4096 B) moves 7.9 M packets in 0.76-0.96 s; over the 4 GPUs of
 * pcie-2x2-tcp (TCP, 1448 B), 4.4 M in 1.57 s. */
#define PACKETS_PER_S_RDMA 8e6
#define PACKETS_PER_S_TCP 2.5e6

double cli_packet_mtu(const struct topo *t)
{
	double mtu = sim_payload_mtu(t->cl.fabric.transport, t->cl.fabric.mtu_bytes);
	return mtu > 0 ? mtu : 4096;
}

double cli_packet_s(const struct topo *t, double packets)
{
	return packets / (t->cl.fabric.transport == TOPO_TRANSPORT_RDMA ? PACKETS_PER_S_RDMA
									 : PACKETS_PER_S_TCP);
}
