/* cmd_model.c: `trainsim model`: parameters by part and FLOPs per token. */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/table.h"
#include "models/models.h"

static void usage(FILE *out)
{
	const char *const *names = model_builtin_names();
	fprintf(out,
		"usage: trainsim model --model M [--seq-len S] [--image-size HxW] [--json]\n"
		"\n"
		"Parameters of a model by part (total and active per token) and FLOPs per\n"
		"token: forward, and training (forward + backward = 3x forward).\n"
		"\n"
		"  --model M          built-in name or a Hugging Face config.json path\n"
		"  --seq-len S        sequence length for the attention term (default 4096, or\n"
		"                     the model's learned positions when fewer)\n"
		"  --image-size HxW   image for the vision FLOPs (default 448x448)\n"
		"  --json             JSON: params_total, params_active, params_by_part,\n"
		"                     flops_per_token_fwd, flops_per_token_train, ...\n"
		"\n"
		"built-in models:");
	for (int i = 0; names[i]; i++)
		fprintf(out, " %s", names[i]);
	fprintf(out, "\n");
}

static double as_d(int64_t v)
{
	return (double)v;
}

/* "235.7 B", "160.5 M", "774.1 K": a parameter count at a readable scale. */
static void cell_count(struct table *t, int64_t v)
{
	double d = (double)v;
	if (d >= 1e9)
		table_cell(t, "%.4g B", d / 1e9);
	else if (d >= 1e6)
		table_cell(t, "%.4g M", d / 1e6);
	else
		table_cell(t, "%.4g K", d / 1e3);
}

int cmd_model(int argc, char **argv)
{
	static const struct option opts[] = { { "model", required_argument, NULL, 'm' },
					      { "seq-len", required_argument, NULL, 's' },
					      { "image-size", required_argument, NULL, 'i' },
					      { "json", no_argument, NULL, 'j' },
					      { "help", no_argument, NULL, 'h' },
					      { NULL, 0, NULL, 0 } };
	const char *name = NULL;
	long long seq = 4096;
	bool seq_given = false;
	int img_h = 448, img_w = 448, c;
	bool img_given = false;
	bool json = false;
	struct model m;
	struct model_params mp;
	struct ts_error err = TS_ERROR_INIT;
	double fwd, patches = 0, tokens = 0, vfl = 0, rh = 0, rw = 0;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'm':
			if (cli_once("model", "--model", &name, optarg))
				return 2;
			break;
		case 's':
			seq_given = true;
			if (cli_parse_long("model", "--seq-len", optarg, 1, 1 << 24, &seq))
				return 2;
			break;
		case 'i': {
			/* (strtol, not sscanf's %d, which wraps past INT_MAX: found by
			 * review, 4294967744x448 was read as 448x448) */
			char *x, *end;
			const char *v = optarg;
			long hh = -1, ww = -1;
			errno = 0;
			/* white space may stand around it, as around a number
			 * (found by review) */
			while (isspace((unsigned char)*v))
				v++;
			if (*v == '+' && isdigit((unsigned char)v[1])) /* as strtol takes it */
				v++;
			if (isdigit((unsigned char)v[0])) {
				hh = strtol(v, &x, 10);
				if (*x == 'x' && isdigit((unsigned char)x[1])) {
					ww = strtol(x + 1, &end, 10);
					while (isspace((unsigned char)*end))
						end++;
					if (*end)
						ww = -1;
				}
			}
			if (errno || hh < 1 || ww < 1 || hh > 65536 || ww > 65536)
				return cli_usage("model", "--image-size needs HxW in pixels (each 1 to "
						 "65536), got '%s'", optarg);
			/* (the Qwen-VL processors refuse these: smart_resize's
			 * MAX_RATIO) */
			if (hh > 200 * ww || ww > 200 * hh)
				return cli_usage("model", "--image-size '%s': the sides' ratio is above "
						 "200, which the image processor refuses", optarg);
			img_h = (int)hh;
			img_w = (int)ww;
			img_given = true;
			break;
		}
		case 'j': json = true; break;
		case 'h': usage(stdout); return 0;
		default: return cli_bad_option("model", argv);
		}
	}
	if (optind < argc)
		return cli_usage("model", "unexpected argument '%s'", argv[optind]);
	if (!name)
		return cli_usage("model", "needs --model");
	if (model_load(&m, name, &err))
		return cli_fail(&err);
	/* learned positions bound the sequence (predict refuses longer ones) */
	if (m.max_pos > 0 && seq > m.max_pos) {
		if (seq_given)
			return cli_usage("model", "--seq-len %lld exceeds the model's %d learned positions",
					 seq, m.max_pos);
		seq = m.max_pos;
	}
	/* as predict refuses images for a model without a vision encoder
	 * (found by review: the size was ignored) */
	if (img_given && !m.has_vision)
		return cli_usage("model", "--image-size: model '%s' has no vision encoder", m.name);
	model_count_params(&m, &mp);
	fwd = model_flops_per_token_fwd(&m, (int)seq);
	if (m.has_vision) {
		model_image_tokens(&m, img_h, img_w, &patches, &tokens);
		model_image_resize(&m, img_h, img_w, &rh, &rw);
		vfl = model_vision_flops_fwd(&m, patches);
	}
	if (json) {
		cJSON *root = cJSON_CreateObject(), *parts = cJSON_CreateObject();
		cJSON_AddStringToObject(root, "model", m.name);
		cJSON_AddStringToObject(root, "source", m.source);
		if (m.note[0])
			cJSON_AddStringToObject(root, "note", m.note);
		cJSON_AddNumberToObject(root, "seq_len", (double)seq);
		cJSON_AddNumberToObject(root, "params_total", as_d(mp.sum_total));
		cJSON_AddNumberToObject(root, "params_active", as_d(mp.sum_active));
		for (int p = 0; p < MODEL_PART_COUNT; p++) {
			cJSON *o = cJSON_CreateObject();
			cJSON_AddNumberToObject(o, "total", as_d(mp.total[p]));
			cJSON_AddNumberToObject(o, "active", as_d(mp.active[p]));
			cJSON_AddItemToObject(parts, model_part_name((enum model_part)p), o);
		}
		cJSON_AddItemToObject(root, "params_by_part", parts);
		cJSON_AddNumberToObject(root, "flops_per_token_fwd", fwd);
		cJSON_AddNumberToObject(root, "flops_per_token_train", 3 * fwd);
		if (m.has_vision) {
			/* the image the vision figures are for, as the table
			 * says (found by review) */
			cJSON_AddNumberToObject(root, "image_height", img_h);
			cJSON_AddNumberToObject(root, "image_width", img_w);
			/* and what the processor makes of it, which the
			 * patches come from (found by an audit) */
			cJSON_AddNumberToObject(root, "image_resized_height", rh);
			cJSON_AddNumberToObject(root, "image_resized_width", rw);
			cJSON_AddNumberToObject(root, "image_patches", patches);
			cJSON_AddNumberToObject(root, "image_tokens", tokens);
			cJSON_AddNumberToObject(root, "vision_flops_per_image_fwd", vfl);
		}
		return cli_print_json(root);
	}
	{
		static const char *const head[] = { "part", ">params", ">active", ">% of total" };
		struct table t;
		table_init(&t, 4, head);
		for (int p = 0; p < MODEL_PART_COUNT; p++) {
			if (!mp.total[p])
				continue;
			table_cell(&t, "%s", model_part_name((enum model_part)p));
			cell_count(&t, mp.total[p]);
			cell_count(&t, mp.active[p]);
			table_cell(&t, "%.2f", 100.0 * as_d(mp.total[p]) / as_d(mp.sum_total));
		}
		table_cell(&t, "total");
		cell_count(&t, mp.sum_total);
		cell_count(&t, mp.sum_active);
		table_cell(&t, "100.00");
		printf("model %s (%s)\n", m.name, m.source);
		if (m.note[0])
			printf("note: %s\n", m.note);
		printf("\n");
		table_print(&t, stdout);
		table_release(&t);
		printf("\nparameters: %lld total, %lld active per token\n", (long long)mp.sum_total,
		       (long long)mp.sum_active);
		printf("FLOPs per token at seq_len %lld: forward %.4g, training %.4g (3x forward)\n",
		       seq, fwd, 3 * fwd);
		if (m.has_vision)
			printf("vision: a %dx%d image (resized to %.0fx%.0f) is %.0f patches -> %.0f "
			       "tokens, %.4g FLOPs forward\n",
			       img_h, img_w, rh, rw, patches, tokens, vfl);
	}
	return 0;
}
