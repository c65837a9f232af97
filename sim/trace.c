/* trace.c: traces of a prediction's timeline: Chrome trace-event JSON
 * (the "JSON Array/Object Format" Perfetto and chrome://tracing open: "X"
 * complete events with ts/dur in microseconds, pid per representative,
 * tid per stream, "M" metadata events naming them) and an SVG timeline.
 * Both written atomically. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "common/fileio.h"
#include "models/workload.h"
#include "sim/exec.h"

static int need_tl(const struct sim_prediction *out, struct ts_error *err)
{
	if (!out->tl)
		return ts_error_set(err, TS_EUSAGE, "no timeline kept (opts.timeline was off)");
	return 0;
}

/* Which tracks have slices (a stream a plan never uses, such as the MoE
 * dispatch stream of a dense model, gets no row). NULL when out of memory. */
static bool *used_tracks(const struct sim_timeline *tl)
{
	bool *u = calloc((size_t)(tl->ntracks > 0 ? tl->ntracks : 1), sizeof(*u));
	if (!u)
		return NULL;
	for (int32_t i = 0; i < tl->n; i++)
		if (tl->s[i].track >= 0 && tl->s[i].track < tl->ntracks)
			u[tl->s[i].track] = true;
	return u;
}

/* The timeline's length: the iteration, or longer where it shows the step
 * that synchronises (local SGD, SSP, async report the mean step). */
static double timeline_span(const struct sim_prediction *out)
{
	double span = out->iteration_time_s > 0 ? out->iteration_time_s : 1e-9;
	for (int32_t i = 0; i < out->tl->n; i++)
		if (out->tl->s[i].t1_s > span)
			span = out->tl->s[i].t1_s;
	return span;
}

/* Whether the timeline (of length span) is longer than the iteration: the
 * step that synchronises, where iteration_time_s is the mean step. */
static bool shows_sync_step(const struct sim_prediction *out, double span)
{
	return span > out->iteration_time_s * (1 + 1e-9);
}

/* Whether a track of track i's representative before i has slices. */
static bool used_before(const bool *used, int32_t i)
{
	for (int32_t k = i - i % SIM_TL_PER; k < i; k++)
		if (used[k])
			return true;
	return false;
}

/* A slice's category: GPU compute, host offload work or communication. */
static const char *slice_cat(const struct sim_slice *s)
{
	switch (s->track % SIM_TL_PER) {
	case WL_S_COMPUTE: return "compute";
	case SIM_TL_HOST: return "host";
	default: return "comm";
	}
}

/* A number of microseconds for the trace: nanoseconds, the precision
 * Perfetto keeps (durations as the difference of rounded ends, so that
 * adjacent slices meet exactly; found by review). */
static double trace_ns(double s)
{
	return round(s * 1e9);
}

static double trace_us(double s)
{
	return trace_ns(s) / 1e3;
}

/* Whether a send's slice is too short for an arrow (under 2 ns, as with
 * --free-comm: its ends could not lie inside it in the right order). */
static bool flow_too_short(const struct sim_slice *s)
{
	return trace_us(s->t1_s) - trace_us(s->t0_s) < 2e-3;
}

/* A send that gets an arrow to its receive: its flow id and slice. */
struct arrow {
	int64_t id;
	int32_t send;
};

static int cmp_arrow(const void *a, const void *b)
{
	int64_t x = ((const struct arrow *)a)->id, y = ((const struct arrow *)b)->id;
	return (x > y) - (x < y);
}

/* The sends with arrows (not flow_too_short), sorted by flow id, for the
 * JSON's flow events and the SVG's lines alike (*n of them; NULL when out
 * of memory). */
static struct arrow *arrows(const struct sim_timeline *tl, int32_t *n)
{
	struct arrow *v = malloc((size_t)(tl->n > 0 ? tl->n : 1) * sizeof(*v));
	*n = 0;
	if (!v)
		return NULL;
	for (int32_t i = 0; i < tl->n; i++)
		if (tl->s[i].flow && tl->s[i].track % SIM_TL_PER == WL_S_PP_SEND &&
		    !flow_too_short(&tl->s[i]))
			v[(*n)++] = (struct arrow){ tl->s[i].flow, i };
	qsort(v, (size_t)*n, sizeof(*v), cmp_arrow);
	return v;
}

/* The arrow of flow id, or NULL (no flow, or a send too short). */
static const struct arrow *arrow_of(const struct arrow *v, int32_t n, int64_t id)
{
	struct arrow key = { id, -1 };
	return id ? bsearch(&key, v, (size_t)n, sizeof(*v), cmp_arrow) : NULL;
}

/* Events go to the file one at a time, each a small cJSON object printed
 * and freed: the document as one cJSON tree held every event twice over
 * (a GPT of 8 layers at 2,000 micro-batches, 3.0 M slices: 4.6 GB and 33 s
 * to write its 412 MB trace; measured 2026-12-04). The bytes are those of
 * the whole tree printed unformatted. */
struct evw {
	FILE *f;
	bool first;       /* no event written yet, flag */
	char buf[1024];   /* an event's text (a longer one is printed apart) */
};

/* Print event e (taken, freed) after a comma where one came before.
 * Non-zero when out of memory. */
static int put_event(struct evw *w, cJSON *e)
{
	char *t;
	if (!e)
		return 1;
	t = cJSON_PrintPreallocated(e, w->buf, (int)sizeof(w->buf), false) ? w->buf
									     : cJSON_PrintUnformatted(e);
	cJSON_Delete(e);
	if (!t)
		return 1;
	if (!w->first)
		fputc(',', w->f);
	w->first = false;
	fputs(t, w->f);
	if (t != w->buf)
		cJSON_free(t);
	return 0;
}

/* The flow event (an arrow in Perfetto and chrome://tracing) from a send's
 * slice to its receive's: "s" 1 ns into the send, "f" 1 ns before the
 * receive ends (the data's arrival; the receive's slice starts where it was
 * posted), each inside the slice it binds to and "s" no later than "f"
 * (found by review: midpoints put "f" first under --free-comm; sends too
 * short for that get no arrow). Non-zero when out of memory. */
static int add_flow(struct evw *w, const struct sim_slice *s)
{
	bool send = s->track % SIM_TL_PER == WL_S_PP_SEND;
	cJSON *f = cJSON_CreateObject();
	if (!f)
		return 1;
	cJSON_AddStringToObject(f, "name", "p2p");
	cJSON_AddStringToObject(f, "cat", "p2p");
	cJSON_AddStringToObject(f, "ph", send ? "s" : "f");
	if (!send)
		cJSON_AddStringToObject(f, "bp", "e");
	cJSON_AddNumberToObject(f, "id", (double)s->flow);
	cJSON_AddNumberToObject(f, "ts", send ? trace_us(s->t0_s) + 1e-3
					      : fmax(trace_us(s->t0_s), trace_us(s->t1_s) - 1e-3));
	cJSON_AddNumberToObject(f, "pid", s->track / SIM_TL_PER);
	cJSON_AddNumberToObject(f, "tid", s->track % SIM_TL_PER);
	return put_event(w, f);
}

/* The metadata event naming a representative (what "process_name") or one
 * of its streams ("thread_name"). */
static cJSON *name_event(const char *what, int pid, int tid, const char *name)
{
	cJSON *m = cJSON_CreateObject(), *a = cJSON_CreateObject();
	if (!m || !a) {
		cJSON_Delete(m);
		cJSON_Delete(a);
		return NULL;
	}
	cJSON_AddStringToObject(m, "name", what);
	cJSON_AddStringToObject(m, "ph", "M");
	cJSON_AddNumberToObject(m, "pid", pid);
	cJSON_AddNumberToObject(m, "tid", tid);
	cJSON_AddStringToObject(a, "name", name);
	cJSON_AddItemToObject(m, "args", a);
	return m;
}

/* The "X" event of slice s. */
static cJSON *slice_event(const struct sim_slice *s)
{
	cJSON *e = cJSON_CreateObject(), *a = cJSON_CreateObject();
	if (!e || !a) {
		cJSON_Delete(e);
		cJSON_Delete(a);
		return NULL;
	}
	cJSON_AddStringToObject(e, "name", s->name ? s->name : "op");
	cJSON_AddStringToObject(e, "cat", slice_cat(s));
	cJSON_AddStringToObject(e, "ph", "X");
	cJSON_AddNumberToObject(e, "ts", trace_us(s->t0_s));
	/* (whole nanoseconds subtracted, then scaled: the difference of
	 * the two scaled times printed as 6.99600000000001; found by
	 * review) */
	cJSON_AddNumberToObject(e, "dur", (trace_ns(s->t1_s) - trace_ns(s->t0_s)) / 1e3);
	cJSON_AddNumberToObject(e, "pid", s->track / SIM_TL_PER);
	cJSON_AddNumberToObject(e, "tid", s->track % SIM_TL_PER);
	/* (-1: not of a micro-batch or layer, such as the optimizer step) */
	if (s->micro >= 0)
		cJSON_AddNumberToObject(a, "micro", s->micro);
	if (s->layer >= 0)
		cJSON_AddNumberToObject(a, "layer", s->layer);
	if (s->recompute)
		cJSON_AddBoolToObject(a, "recompute", true);
	/* of the slice, the wait for the host's dispatch before the GPU
	 * work (whole nanoseconds, as dur) */
	if (s->host_wait_s > 0)
		cJSON_AddNumberToObject(a, "host_wait_us", round(s->host_wait_s * 1e9) / 1e3);
	if (s->dim >= 0) {
		cJSON_AddStringToObject(a, "group", wl_dim_name((enum wl_dim)s->dim));
		cJSON_AddStringToObject(a, "collective", wl_coll_name((enum wl_coll)s->coll));
		cJSON_AddNumberToObject(a, "bytes", s->bytes);
		if (s->algo > 0) {
			cJSON_AddStringToObject(a, "algorithm", sim_algo_name((enum sim_algo)s->algo));
			cJSON_AddStringToObject(a, "protocol", sim_proto_name((enum sim_proto)s->proto));
		}
	}
	cJSON_AddItemToObject(e, "args", a);
	return e;
}

/* The members after "traceEvents": the display unit and the format's free
 * metadata (the iteration, and under local SGD, SSP and async what the
 * timeline is; found by review: its span differed from iteration_time_s
 * without a word, as the SVG says), printed as an object. */
static char *trace_tail(const struct sim_prediction *out, const char *title)
{
	cJSON *root = cJSON_CreateObject(), *od;
	double span = timeline_span(out);
	char *text;
	if (!root)
		return NULL;
	cJSON_AddStringToObject(root, "displayTimeUnit", "ms");
	od = cJSON_AddObjectToObject(root, "otherData");
	if (!od) {
		cJSON_Delete(root);
		return NULL;
	}
	if (title && title[0]) {
		/* its lines joined by "; " (a metadata string, one line) */
		size_t len = strlen(title), nl = 0;
		for (size_t i = 0; i < len; i++)
			nl += title[i] == '\n';
		char *one = malloc(len + nl + 1);
		if (!one) {
			cJSON_Delete(root);
			return NULL;
		}
		for (size_t i = 0, j = 0; i <= len; i++) {
			if (title[i] == '\n') {
				one[j++] = ';';
				one[j++] = ' ';
			} else {
				one[j++] = title[i];
			}
		}
		cJSON_AddStringToObject(od, "run", one);
		free(one);
	}
	cJSON_AddNumberToObject(od, "iteration_time_s", out->iteration_time_s);
	cJSON_AddNumberToObject(od, "timeline_s", span);
	if (shows_sync_step(out, span))
		cJSON_AddStringToObject(od, "timeline",
					"the step that synchronises; iteration_time_s is the "
					"mean step");
	text = cJSON_PrintUnformatted(root);
	cJSON_Delete(root);
	return text;
}

int sim_trace_write_json(const struct sim_prediction *out, const char *path, const char *title,
			 struct afile *keep, struct ts_error *err)
{
	const struct sim_timeline *tl = out->tl;
	struct afile own = AFILE_INIT, *af = keep ? keep : &own;
	struct evw w;
	bool *used = NULL;
	struct arrow *arr = NULL;
	int32_t narr = 0;
	char *tail = NULL;
	int rc;
	if ((rc = need_tl(out, err)))
		return rc;
	used = used_tracks(tl);
	arr = arrows(tl, &narr);
	tail = trace_tail(out, title);
	if (!used || !arr || !tail)
		goto oom;
	if ((rc = afile_open(af, path, err)))
		goto out;
	w.f = af->f;
	w.first = true;
	fputs("{\"traceEvents\":[", w.f);
	for (int32_t i = 0; i < tl->ntracks; i++) {
		if (!used[i])
			continue;
		/* the representative's name, once, before its first track
		 * (found by review: Perfetto showed "Process 0") */
		if (!used_before(used, i) &&
		    put_event(&w, name_event("process_name", i / SIM_TL_PER, 0,
					     tl->proc[i / SIM_TL_PER])))
			goto oom;
		if (put_event(&w, name_event("thread_name", i / SIM_TL_PER, i % SIM_TL_PER,
					     tl->track[i])))
			goto oom;
	}
	for (int32_t i = 0; i < tl->n; i++) {
		const struct sim_slice *s = &tl->s[i];
		if (put_event(&w, slice_event(s)))
			goto oom;
		if (arrow_of(arr, narr, s->flow) && add_flow(&w, s))
			goto oom;
	}
	/* the tail object's members after the array ("{" becomes ",") */
	fputs("],", w.f);
	fputs(tail + 1, w.f);
	rc = keep ? afile_finish(af, err) : afile_commit(af, err);
	if (keep && !rc)
		goto done; /* (the caller commits or aborts it) */
	goto out;
oom:
	rc = ts_error_set(err, TS_ENOMEM, "out of memory writing '%s'", path);
out:
	afile_abort(af);
done:
	free(used);
	free(arr);
	cJSON_free(tail);
	return rc;
}

static void xml_text_n(FILE *f, const char *s, size_t n)
{
	for (size_t i = 0; i < n && s[i]; i++) {
		switch (s[i]) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		case '"': fputs("&quot;", f); break;
		default: fputc(s[i], f);
		}
	}
}

static void xml_text(FILE *f, const char *s) { xml_text_n(f, s, strlen(s)); }

static const char *color_of(const char *name, int stream)
{
	if (stream == SIM_TL_HOST)
		return "#17becf";
	if (stream == WL_S_COMPUTE) {
		if (strstr(name, "optimizer") || strstr(name, "top-k") || strstr(name, "error"))
			return "#9467bd";
		if (strstr(name, "bwd") || strstr(name, "grad"))
			return "#ff7f0e";
		if (strstr(name, "vit"))
			return "#2ca02c";
		return "#1f77b4";
	}
	if (strstr(name, "moe")) /* the dispatcher's own: counts, tokens, probabilities */
		return "#8c564b";
	if (strstr(name, "tp"))
		return "#d62728";
	if (strstr(name, "ep"))
		return "#8c564b";
	if (strstr(name, "cp"))
		return "#e377c2";
	if (strstr(name, "pp"))
		return "#7f7f7f";
	return "#bcbd22";
}

/* One slice as a rect of width w px (at least 0.2) at x0, y, its title
 * the op, micro-batch, layer, collective and duration. */
static void svg_slice(FILE *f, const struct sim_slice *s, double x0, double y, double w, double h)
{
	fprintf(f, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.3f\" height=\"%.0f\" fill=\"%s\"><title>",
		x0, y, w < 0.2 ? 0.2 : w, h, color_of(s->name ? s->name : "", s->track % SIM_TL_PER));
	xml_text(f, s->name ? s->name : "op");
	if (s->micro >= 0)
		fprintf(f, " micro %d", s->micro);
	if (s->layer >= 0)
		fprintf(f, " layer %d", s->layer);
	if (s->recompute)
		fputs(" (recompute)", f);
	if (s->dim >= 0) {
		fprintf(f, " (%s %s, %.0f bytes", wl_dim_name((enum wl_dim)s->dim),
			wl_coll_name((enum wl_coll)s->coll), s->bytes);
		if (s->algo > 0)
			fprintf(f, ", %s %s", sim_algo_name((enum sim_algo)s->algo),
				sim_proto_name((enum sim_proto)s->proto));
		fputc(')', f);
	}
	fprintf(f, ": %.3f us", (s->t1_s - s->t0_s) * 1e6);
	if (s->host_wait_s > 0)
		fprintf(f, ", of it %.3f us waiting for the host", s->host_wait_s * 1e6);
	fputs("</title></rect>\n", f);
}

/* Slices of one track under a pixel wide, back to back within half a
 * pixel, drawn as one rect while they span under a pixel: a track shows
 * about a pixel's worth of detail, and a timeline of millions of kernels
 * stays an SVG a browser opens (3.0 M slices, a GPT of 8 layers at 2,000
 * micro-batches: 416 MB with a rect each). The rect takes the colour that
 * holds most of the run's time; its title says how many ops it holds
 * ("N ops"), the first and last, and their time. */
struct svg_run {
	const struct sim_slice *first, *last;
	int32_t n;                  /* slices, count */
	double x0, x1;              /* extent, px */
	double busy_s;              /* the slices' durations, s */
	double host_s;              /* of busy_s, the waits for the host's dispatch, s */
	const char *col[16];        /* colours (color_of's strings) */
	double col_s[16];           /* time of each, s */
	int ncol;
};

static void run_flush(FILE *f, struct svg_run *r, double y, double h)
{
	int best = 0;
	if (r->n == 0)
		return;
	if (r->n == 1) {
		svg_slice(f, r->first, r->x0, y, r->x1 - r->x0, h);
		r->n = 0;
		return;
	}
	for (int k = 1; k < r->ncol; k++)
		if (r->col_s[k] > r->col_s[best])
			best = k;
	fprintf(f, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.3f\" height=\"%.0f\" fill=\"%s\">"
		   "<title>%d ops, ",
		r->x0, y, r->x1 - r->x0 < 0.2 ? 0.2 : r->x1 - r->x0, h, r->col[best], r->n);
	xml_text(f, r->first->name ? r->first->name : "op");
	fputs(" .. ", f);
	xml_text(f, r->last->name ? r->last->name : "op");
	fprintf(f, ": %.3f us busy in %.3f us", r->busy_s * 1e6,
		(r->last->t1_s - r->first->t0_s) * 1e6);
	if (r->host_s > 0)
		fprintf(f, ", of it %.3f us waiting for the host", r->host_s * 1e6);
	fputs("</title></rect>\n", f);
	r->n = 0;
}

static void run_add(struct svg_run *r, const struct sim_slice *s, double x0, double x1)
{
	const char *c = color_of(s->name ? s->name : "", s->track % SIM_TL_PER);
	int k;
	if (r->n == 0) {
		r->first = s;
		r->x0 = x0;
		r->busy_s = 0;
		r->host_s = 0;
		r->ncol = 0;
	}
	r->last = s;
	r->x1 = x1;
	r->n++;
	r->busy_s += s->t1_s - s->t0_s;
	r->host_s += s->host_wait_s;
	for (k = 0; k < r->ncol && r->col[k] != c; k++)
		;
	if (k == r->ncol && k < 16) {
		r->col[k] = c;
		r->col_s[k] = 0;
		r->ncol++;
	}
	if (k < 16)
		r->col_s[k] += s->t1_s - s->t0_s;
}

struct svg_key {
	int32_t track, i;
	double t0;
};

static int cmp_svg_key(const void *a, const void *b)
{
	const struct svg_key *x = a, *y = b;
	if (x->track != y->track)
		return x->track < y->track ? -1 : 1;
	if (x->t0 != y->t0)
		return x->t0 < y->t0 ? -1 : 1;
	return (x->i > y->i) - (x->i < y->i);
}

/* The slices as rects, track by track in time order (span s over width px
 * from left; rows of row px). Non-zero when out of memory. */
static int svg_slices(FILE *f, const struct sim_timeline *tl, const int32_t *rowof, double left,
		      double width, double span, double row, double top)
{
	struct svg_key *k = malloc((size_t)(tl->n > 0 ? tl->n : 1) * sizeof(*k));
	struct svg_run r;
	double px = width / span;
	if (!k)
		return 1;
	for (int32_t i = 0; i < tl->n; i++) {
		k[i].track = tl->s[i].track;
		k[i].i = i;
		k[i].t0 = tl->s[i].t0_s;
	}
	qsort(k, (size_t)tl->n, sizeof(*k), cmp_svg_key);
	r.n = 0;
	for (int32_t j = 0; j < tl->n; j++) {
		const struct sim_slice *s = &tl->s[k[j].i];
		double y = top + row * rowof[s->track], x0 = left + px * s->t0_s,
		       x1 = left + px * s->t1_s;
		if (r.n > 0 && (r.first->track != s->track || x1 - x0 >= 1 || x0 - r.x1 >= 0.5 ||
				x1 - r.x0 >= 1))
			run_flush(f, &r, top + row * rowof[r.first->track], row - 3);
		if (x1 - x0 >= 1)
			svg_slice(f, s, x0, y, x1 - x0, row - 3);
		else
			run_add(&r, s, x0, x1);
	}
	if (r.n > 0)
		run_flush(f, &r, top + row * rowof[r.first->track], row - 3);
	free(k);
	return 0;
}

int sim_trace_write_svg(const struct sim_prediction *out, const char *path, const char *title,
			struct afile *keep, struct ts_error *err)
{
	const struct sim_timeline *tl = out->tl;
	struct afile own = AFILE_INIT, *a = keep ? keep : &own;
	const double W = 1600, left = 220, row = 18;
	/* the title's lines above the iteration's */
	int tlines = 0;
	if (title && title[0]) {
		tlines = 1;
		for (const char *c = title; *c; c++)
			tlines += *c == '\n' && c[1];
	}
	const double top = 40 + 16 * tlines, y1 = top - 24;
	double span, H;
	int32_t *rowof, nrows = 0;
	bool *used;
	int rc;
	if ((rc = need_tl(out, err)))
		return rc;
	span = timeline_span(out);
	/* one row per track with slices, in track order */
	used = used_tracks(tl);
	rowof = malloc((size_t)(tl->ntracks > 0 ? tl->ntracks : 1) * sizeof(*rowof));
	if (!used || !rowof) {
		free(used);
		free(rowof);
		return ts_error_set(err, TS_ENOMEM, "out of memory writing '%s'", path);
	}
	for (int32_t i = 0; i < tl->ntracks; i++)
		rowof[i] = used[i] ? nrows++ : -1;
	H = top + row * nrows + 20;
	if ((rc = afile_open(a, path, err))) {
		free(used);
		free(rowof);
		return rc;
	}
	fprintf(a->f,
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
		"viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"11\">\n",
		W, H, W, H);
	for (int k = 0; k < tlines; k++) {
		const char *from = title, *to;
		for (int j = 0; j < k; j++)
			from = strchr(from, '\n') + 1;
		to = strchr(from, '\n');
		fprintf(a->f, "<text x=\"4\" y=\"%d\">", 16 + 16 * k);
		xml_text_n(a->f, from, to ? (size_t)(to - from) : strlen(from));
		fputs("</text>\n", a->f);
	}
	/* local SGD, SSP and async report the mean step; the timeline is the
	 * step that synchronises (found by review: shown without saying so) */
	if (shows_sync_step(out, span))
		fprintf(a->f,
			"<text x=\"4\" y=\"%.0f\">one iteration: %.6f s per step on average; the "
			"timeline shows the step that synchronises (time axis 0 .. %.6f s)</text>\n",
			y1, out->iteration_time_s, span);
	else
		fprintf(a->f,
			"<text x=\"4\" y=\"%.0f\">one iteration: %.6f s (time axis 0 .. %.6f s)</text>\n",
			y1, out->iteration_time_s, span);
	for (int32_t i = 0; i < tl->ntracks; i++) {
		if (rowof[i] < 0)
			continue;
		fprintf(a->f, "<text x=\"4\" y=\"%.1f\">", top + row * rowof[i] + 12);
		xml_text(a->f, tl->track[i]);
		fputs("</text>\n", a->f);
	}
	if (svg_slices(a->f, tl, rowof, left, W - left - 10, span, row, top)) {
		afile_abort(a);
		free(used);
		free(rowof);
		return ts_error_set(err, TS_ENOMEM, "out of memory writing '%s'", path);
	}
	/* an arrow from each pipeline send's start to its receive's end (the
	 * data's arrival), as the JSON trace's flow events */
	{
		int32_t na;
		double xs = (W - left - 10) / span;
		struct arrow *arr = arrows(tl, &na);
		if (!arr) {
			afile_abort(a);
			free(used);
			free(rowof);
			return ts_error_set(err, TS_ENOMEM, "out of memory writing '%s'", path);
		}
		for (int32_t i = 0; i < tl->n; i++) {
			const struct sim_slice *s = &tl->s[i], *from;
			const struct arrow *w = arrow_of(arr, na, s->flow);
			if (!w || s->track % SIM_TL_PER != WL_S_PP_RECV)
				continue;
			from = &tl->s[w->send];
			fprintf(a->f,
				"<line x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\" "
				"stroke=\"#555\" stroke-width=\"0.5\"/>\n",
				left + xs * from->t0_s, top + row * rowof[from->track] + (row - 3) / 2,
				left + xs * s->t1_s, top + row * rowof[s->track] + (row - 3) / 2);
		}
		free(arr);
	}
	fputs("</svg>\n", a->f);
	free(used);
	free(rowof);
	return keep ? afile_finish(a, err) : afile_commit(a, err);
}
