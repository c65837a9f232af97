/* cli.h: the command-line front end, `trainsim <subcommand> [options]`.
 *
 * Each subcommand lives in cli/cmd_<name>.c and returns the process exit
 * status: 0 success, 1 a plan that ran but is infeasible, 2 bad input or
 * usage (with one line on stderr). Shared option parsing and output helpers
 * are here so that every subcommand behaves the same way. */
#ifndef TS_CLI_H
#define TS_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "common/error.h"

struct cli_cmd {
	const char *name;                   /* subcommand word */
	int (*run)(int argc, char **argv);  /* argv[0] is the subcommand name */
	const char *summary;                /* one line for `trainsim --help` */
};

int cmd_topo(int argc, char **argv);
int cmd_collective(int argc, char **argv);
int cmd_model(int argc, char **argv);
int cmd_memory(int argc, char **argv);
int cmd_predict(int argc, char **argv);

extern const struct cli_cmd cli_commands[];
/* Packet fidelity: the longest run allowed (collective, predict). */
#define PACKET_MAX_S 600.0
struct topo;
/* The payload per packet on t's fabric (4096 B without a network: its
 * packets are NVLink's or PCIe's), bytes. */
double cli_packet_mtu(const struct topo *t);
/* Seconds the packet model takes here for that many packets on t's
 * fabric, at the fastest rate it reaches (a lower bound). */
double cli_packet_s(const struct topo *t, double packets);

int cli_main(int argc, char **argv);

/* The run of a planned command that is not built yet (search, fabric, hw,
 * calibrate, validate): --help says so (exit 0), anything else is refused
 * with one line (exit 2); `trainsim --help` lists them apart. */
int cli_planned(int argc, char **argv);
/* Print err as one line and return its exit status. */
int cli_fail(const struct ts_error *err);
/* Usage error for subcommand cmd: one line naming the problem and the
 * --help to read; returns 2. */
int cli_usage(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Take an option that names one file or value once: *slot = val, or exit
 * status 2 when it was given before (only one could be used). */
int cli_once(const char *cmd, const char *opt, const char **slot, const char *val);
/* Flush standard output: 0, or 2 after saying (once) that it could not be
 * written (a full disk, a closed pipe): the report was lost. */
int cli_flush_stdout(void);
/* Refuse output file out (option opt) when it is one of the n input files
 * in (NULL entries are skipped: a preset or built-in name is passed as
 * NULL): writing it would replace that input. Returns 2 or 0. */
int cli_out_not_input(const char *cmd, const char *opt, const char *out, const char *const *in,
		      int n);
/* The message for an unknown option or a missing argument after getopt_long
 * returned '?' or ':' (opterr must be 0); returns 2. */
int cli_bad_option(const char *cmd, char **argv);

/* Strict number parsing of option values: the whole string must be used,
 * finite and in range; otherwise a usage error naming the option. */
int cli_parse_long(const char *cmd, const char *opt, const char *val, long long min,
		   long long max, long long *out);
int cli_parse_double(const char *cmd, const char *opt, const char *val, double min,
		     double max, double *out);
/* --routing's value: "ecmp", "spray" or "dmodk" (enum topo_routing, as the
 * cluster key "routing"); otherwise a usage error. */
int cli_parse_routing(const char *cmd, const char *val, int *out);
struct topo_cluster;
/* Put --routing's value (routing >= 0; -1 keeps the cluster's) on cl; an
 * error naming the flag where the fabric cannot route so (dmodk on an
 * explicit fabric). */
int cli_apply_routing(struct topo_cluster *cl, int routing, struct ts_error *err);
/* A byte size: "1048576", "8M", "1G", "64KiB", "1.5GB" (nccl-tests style: K M G
 * are binary). */
int cli_parse_bytes(const char *cmd, const char *opt, const char *val, double min,
		    double max, double *out);

/* Print root as formatted JSON on stdout and free it. Returns 0, or 2 when
 * root is NULL (an allocation failed while building it). */
int cli_print_json(cJSON *root);
/* Write root to path atomically (temp + rename); does not free root. */
int cli_write_json(const char *path, const cJSON *root, struct ts_error *err);

#endif
