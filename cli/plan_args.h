/* plan_args.h: the plan flags that `memory`, `predict` (and later `search`)
 * share: --plan, --deepspeed and Megatron-style flags (--tp, --pp, ...).
 * Flags are remembered while parsing and applied after the plan file and
 * the DeepSpeed config, so that flags win whatever their order. */
#ifndef TS_CLI_PLAN_ARGS_H
#define TS_CLI_PLAN_ARGS_H

#include <getopt.h>
#include <stddef.h>

#include "common/error.h"
#include "models/models.h"

/* getopt_long ids of the plan options start here; commands keep theirs below. */
#define CLI_PLAN_OPT_BASE 1000
#define CLI_PLAN_MAX_FLAGS 64

/* Usage text of the plan options, for each command's --help. */
extern const char cli_plan_help[];

struct cli_plan_args {
	const char *cmd;                     /* subcommand name, for messages */
	const char *plan_path;               /* --plan, or NULL */
	const char *ds_path;                 /* --deepspeed, or NULL */
	int n;                               /* remembered flags, count */
	struct {
		int id;                      /* option id */
		const char *val;             /* its argument (argv-owned), or NULL */
	} flag[CLI_PLAN_MAX_FLAGS];
};

void cli_plan_args_init(struct cli_plan_args *a, const char *cmd);
/* Concatenate a command's own options (NULL-terminated) and the plan
 * options into out (cap entries, NULL-terminated). */
void cli_plan_options(const struct option *own, struct option *out, size_t cap);
/* Take getopt's result c: 1 when it was a plan option (remembered), 0 when
 * it is the command's own, 2 after a usage error was printed. */
int cli_plan_args_take(struct cli_plan_args *a, int c, const char *optarg);
/* plan_init, then the plan file, the DeepSpeed config and the flags.
 * Returns 0; 2 after a usage error was printed; or a TS_E* code with err
 * set for a bad file. */
int cli_plan_args_apply(const struct cli_plan_args *a, struct plan *p, struct ts_error *err);

/* A plan (before plan_resolve) that needs more GPUs than the cluster's
 * ngpus is valid but cannot run there: TS_EINFEASIBLE (exit 1) with the
 * product, else 0. cname names the cluster. */
int cli_plan_check_gpus(const struct plan *p, long long ngpus, const char *cname,
			struct ts_error *err);

#endif
