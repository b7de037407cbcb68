/*
 * common.c — option parsing, error printing and formatting helpers shared by the commands.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <unistd.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int cli_fail(const abacus_error *err)
{
	if (err->where[0] && !strstr(err->msg, err->where))
		fprintf(stderr, "abacus: %s (%s)\n", err->msg, err->where);
	else
		fprintf(stderr, "abacus: %s\n", err->msg);
	return CLI_FAIL;
}

int cli_usage(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "abacus %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nrun 'abacus %s --help' for usage\n", cmd);
	return CLI_USAGE;
}

int cli_parse_format(cli_format *out, const char *text, int allow_csv)
{
	if (!strcmp(text, "table"))
		*out = FMT_TABLE;
	else if (!strcmp(text, "json"))
		*out = FMT_JSON;
	else if (allow_csv && !strcmp(text, "csv"))
		*out = FMT_CSV;
	else
		return -1;
	return 0;
}

int cli_parse_i64(int64_t *out, const char *text, int64_t min, int64_t max)
{
	char *end;
	errno = 0;
	long long v = strtoll(text, &end, 10);
	if (errno || end == text || *end || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

void cli_graph_opts_init(cli_graph_opts *o)
{
	abacus_config init = ABACUS_CONFIG_INIT;
	memset(o, 0, sizeof *o);
	o->cfg = init;
}

int cli_input_opt(void *target, const char *v, const char *cmd)
{
	cli_graph_opts *o = target;
	abacus_error err;
	if (o->n_inputs == sizeof o->inputs / sizeof o->inputs[0])
		return cli_usage(cmd, "too many --input options"), -2;
	/* argv strings are writable: NAME=DIMS is split in place, so the name outlives the command. */
	char *w = (char *)v, *eq = strchr(w, '=');
	abacus_input_shape *in = &o->inputs[o->n_inputs];
	if (eq)
		*eq = '\0';
	if (abacus_parse_dims(in, eq ? eq + 1 : w, &err))
		return cli_usage(cmd, "--input %s: %s", eq ? eq + 1 : w, err.msg), -2;
	in->name = eq ? w : NULL;
	o->n_inputs++;
	o->cfg.inputs = o->inputs;
	o->cfg.n_inputs = o->n_inputs;
	return 0;
}

int cli_optimizer_opt(void *target, const char *v, const char *cmd)
{
	abacus_error err;
	(void)cmd;
	return abacus_parse_optimizer(target, v, &err) ? -1 : 0;
}

int cli_runtime_opt(void *target, const char *v, const char *cmd)
{
	abacus_error err;
	if (abacus_parse_runtime((const char **)target, v, &err))
		return cli_usage(cmd, "--runtime: %s", err.msg), -2;
	return 0;
}

int cli_format_opt(void *target, const char *v, const char *cmd)
{
	(void)cmd;
	return cli_parse_format(target, v, 0) ? -1 : 0;
}

int cli_format_csv_opt(void *target, const char *v, const char *cmd)
{
	(void)cmd;
	return cli_parse_format(target, v, 1) ? -1 : 0;
}

void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

void fmt_dims(char *buf, size_t len, int rank, const int64_t *dims)
{
	size_t n = 0;
	buf[0] = '\0';
	for (int i = 0; i < rank && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s%lld", i ? "x" : "", (long long)dims[i]);
	if (rank == 0)
		snprintf(buf, len, "scalar");
}

void fmt_si(char *buf, size_t len, double v)
{
	const char *u[] = { "", "K", "M", "G", "T", "P", "E" };
	int k = 0;
	while (v >= 1000 && k < 6) {
		v /= 1000;
		k++;
	}
	if (k == 0)
		snprintf(buf, len, "%.0f", v);
	else
		snprintf(buf, len, "%.2f%s", v, u[k]);
}

void fmt_bytes(char *buf, size_t len, double v)
{
	const char *u[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	int k = 0;
	while (v >= 1024 && k < 6) {
		v /= 1024;
		k++;
	}
	if (k == 0)
		snprintf(buf, len, "%.0f B", v);
	else
		snprintf(buf, len, "%.2f %s", v, u[k]);
}

void fmt_duration(char *buf, size_t len, double s)
{
	if (!(s >= 0) || !isfinite(s))
		snprintf(buf, len, "?");
	else if (s < 1e-3)
		snprintf(buf, len, "%.3g µs", s * 1e6);
	else if (s < 1)
		snprintf(buf, len, "%.3g ms", s * 1e3);
	else if (s < 60)
		snprintf(buf, len, "%.3g s", s);
	else if (s < 3600)
		snprintf(buf, len, "%.3g min", s / 60);
	else if (s < 2 * 86400)
		snprintf(buf, len, "%.3g h", s / 3600);
	else
		snprintf(buf, len, "%.3g days", s / 86400);
}

int cli_width(const char *s, int w)
{
	for (; *s; s++)
		w += ((unsigned char)*s & 0xC0) == 0x80;
	return w;
}

/* The k largest of v[0..n) (positive ones only), largest first, into idx; returns how many (k is small:
 * insertion is fine). */
static size_t top_k(const double *v, size_t n, size_t *idx, size_t k)
{
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		if (!(v[i] > 0))
			continue;
		size_t pos = m < k ? m++ : k;
		while (pos > 0 && v[idx[pos - 1]] < v[i]) {
			if (pos < k)
				idx[pos] = idx[pos - 1];
			pos--;
		}
		if (pos < k)
			idx[pos] = i;
	}
	return m;
}

const abacus_layer *cli_step_layer(const abacus_analysis *a, const abacus_memory_step *e)
{
	return e->layer >= 0 ? abacus_analysis_layer(a, (size_t)e->layer) : NULL;
}

const abacus_memory_step *cli_peak_step(const abacus_analysis *a, size_t *at)
{
	const abacus_memory_step *best = NULL;
	for (size_t i = 0; i < abacus_analysis_n_memory_steps(a); i++) {
		const abacus_memory_step *e = abacus_analysis_memory_step(a, i);
		if (!best || e->peak > best->peak) {
			best = e;
			*at = i;
		}
	}
	return best;
}

void cli_step_label(char *buf, size_t cap, const abacus_analysis *a, const abacus_memory_step *e)
{
	const abacus_layer *l = cli_step_layer(a, e);
	if (l)
		snprintf(buf, cap, "%s of %s (%s)", abacus_phase_name(e->phase), l->name, l->op);
	else
		snprintf(buf, cap, "%s", e->phase == ABACUS_PHASE_LOSS ? "the loss" : "the optimizer step");
}

void cli_json_peak_step(FILE *f, const abacus_analysis *a)
{
	size_t at = 0;
	const abacus_memory_step *pk = cli_peak_step(a, &at);
	if (!pk)
		return;
	const abacus_layer *l = cli_step_layer(a, pk);
	fprintf(f, "\"peak_step\": {\"index\": %zu, \"phase\": \"%s\", \"layer\": ", at, abacus_phase_name(pk->phase));
	if (l)
		json_str(f, l->name);
	else
		fprintf(f, "null");
	fprintf(f, "}");
}

void cli_top_layers(const abacus_analysis *a, size_t k, double time_s, const double *shares, double step_share,
                    int json)
{
	size_t n, idx[64];
	n = abacus_analysis_n_layers(a);
	if (k > 64)
		k = 64;
	double *v = malloc((n ? n : 1) * sizeof *v);
	if (!v) {
		fprintf(stderr, "abacus: out of memory\n");
		return;
	}
	for (int by_saved = 0; by_saved < 2; by_saved++) {
		/* Time: the predictor's per-layer shares when given, else FLOPs; memory: saved activations. */
		double total = 0;
		for (size_t i = 0; i < n; i++) {
			v[i] = by_saved ? (double)abacus_analysis_layer(a, i)->saved_bytes
			       : shares ? shares[i] : (double)abacus_analysis_layer(a, i)->forward_flops + (double)abacus_analysis_layer(a, i)->backward_flops;
			total += v[i];
		}
		if (!by_saved && shares)
			total = 1; /* shares are of the whole step, optimizer included */
		size_t m = top_k(v, n, idx, k);
		if (json) {
			printf("%s\"%s\": [", by_saved ? ", " : "", by_saved ? "top_activation_layers" : "top_time_layers");
			for (size_t j = 0; j < m; j++) {
				const abacus_layer *l = abacus_analysis_layer(a, idx[j]);
				double share = v[idx[j]] / total;
				printf("%s{\"name\": ", j ? ", " : "");
				json_str(stdout, l->name);
				printf(", \"op\": \"%s\", \"share\": %.6g", l->op, share);
				if (by_saved)
					printf(", \"saved_bytes\": %lld}", (long long)l->saved_bytes);
				else if (time_s > 0)
					printf(", \"time_s\": %.6g}", share * time_s);
				else
					printf(", \"flops\": %lld}", (long long)(l->forward_flops + l->backward_flops));
			}
			printf("]");
			if (!by_saved && shares)
				printf(", \"optimizer_step_share\": %.6g", step_share);
			continue;
		}
		printf("\ntop layers by share of %s:\n",
		       by_saved ? "saved activation memory"
		       : shares ? "time (the predictor's rates per kind of layer)"
		       : time_s > 0 ? "time (attributed by FLOPs)" : "compute (fwd+bwd FLOPs)");
		for (size_t j = 0; j < m; j++) {
			const abacus_layer *l = abacus_analysis_layer(a, idx[j]);
			char b[32];
			double share = v[idx[j]] / total;
			if (by_saved)
				fmt_bytes(b, sizeof b, (double)l->saved_bytes);
			else if (time_s > 0)
				fmt_duration(b, sizeof b, share * time_s);
			else
				fmt_si(b, sizeof b, (double)l->forward_flops + (double)l->backward_flops);
			printf("  %5.1f%%  %-*s %-40.40s %s\n", 100 * share, cli_width(b, 12), b, l->name, l->op);
		}
		if (!by_saved && shares) {
			char b[32] = "";
			if (time_s > 0)
				fmt_duration(b, sizeof b, step_share * time_s);
			printf("  %5.1f%%  %-*s %s\n", 100 * step_share, cli_width(b, 12), b, "(the optimizer step, outside any layer)");
		}
	}
	free(v);
}

void cli_graph_machine(cli_graph_opts *o, const char *hw)
{
	abacus_config_hw(&o->cfg, hw);
	if (o->threads_opt)
		o->cfg.threads = (int)o->threads_opt;
	if (o->isa_opt)
		o->cfg.isa = o->isa_opt;
}

int cli_graph_parse(cli_graph_opts *o, const cli_opt_spec *specs, const char *cmd, const char *description, int argc,
                    char **argv)
{
	int rc = cli_opt_parse(specs, cmd, description, argc, argv);
	if (rc)
		return rc < 0 ? CLI_OK : rc;
	/* The table's GRAPH entry is required and single: exactly one file. */
	o->file = o->files.v[0];
	free(o->files.v);
	o->files.v = NULL;
	cli_graph_machine(o, o->hw);
	/* A command that takes --model predicts with the bundled predictor when it is not given. */
	for (const cli_opt_spec *s = specs; s->type != CLI_OPT_END; s++)
		if (s->name && !strcmp(s->name, "--model") && !o->model) {
			cli_default_model(o->model_path, sizeof o->model_path);
			o->model = o->model_path;
		}
	return -1;
}

int cli_analyze(abacus_graph **g, abacus_analysis **a, const cli_graph_opts *o)
{
	abacus_error err;
	*g = NULL;
	*a = NULL;
	if (abacus_graph_load_file(g, o->file, &err) || abacus_analyze(a, *g, &o->cfg, &err)) {
		abacus_graph_free(*g);
		*g = NULL;
		return cli_fail(&err);
	}
	return CLI_OK;
}

int cli_exe_dir(char *buf, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	char *slash = strrchr(buf, '/');
	if (!slash)
		return -1;
	*slash = '\0';
	return 0;
}

int cli_beside_exe(char *buf, size_t len, const char *rel)
{
	char exe[PATH_MAX];
	if (cli_exe_dir(exe, sizeof exe))
		return -1;
	snprintf(buf, len, "%s/%s", exe, rel);
	return access(buf, R_OK) == 0 ? 0 : -1;
}

static int cmp_str_ptr(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Loads the profiles named in `list` (files, or directories whose *.machine files are read, sorted). */
int cli_load_machines(abacus_machine ***out, size_t *n, const char *list)
{
	*out = NULL;
	*n = 0;
	char *copy = strdup(list);
	size_t cap = 0;
	abacus_machine **ms = NULL;
	if (!copy)
		return CLI_FAIL;
	int rc = CLI_OK;
	for (char *save = NULL, *tok = strtok_r(copy, ",", &save); tok && rc == CLI_OK; tok = strtok_r(NULL, ",", &save)) {
		char **paths = NULL;
		size_t np = 0;
		DIR *d = opendir(tok);
		if (d) {
			struct dirent *e;
			while ((e = readdir(d))) {
				size_t l = strlen(e->d_name);
				if (l < 9 || strcmp(e->d_name + l - 8, ".machine"))
					continue;
				char **np2 = realloc(paths, (np + 1) * sizeof *paths);
				if (!np2)
					break;
				paths = np2;
				size_t pl = strlen(tok) + l + 2;
				if (!(paths[np] = malloc(pl)))
					break;
				snprintf(paths[np++], pl, "%s/%s", tok, e->d_name);
			}
			closedir(d);
			qsort(paths, np, sizeof *paths, cmp_str_ptr);
		} else {
			paths = malloc(sizeof *paths);
			if (paths && (paths[0] = strdup(tok)))
				np = 1;
		}
		for (size_t k = 0; k < np; k++) {
			if (rc == CLI_OK) {
				abacus_error err;
				abacus_machine *m = NULL;
				if (abacus_machine_load_file(&m, paths[k], &err)) {
					rc = cli_fail(&err);
				} else {
					if (*n == cap) {
						cap = cap ? cap * 2 : 8;
						abacus_machine **g = realloc(ms, cap * sizeof *ms);
						if (!g) {
							abacus_machine_free(m);
							rc = CLI_FAIL;
							free(paths[k]);
							continue;
						}
						ms = g;
					}
					ms[(*n)++] = m;
				}
			}
			free(paths[k]);
		}
		free(paths);
	}
	free(copy);
	*out = ms;
	return rc;
}

void cli_free_machines(abacus_machine **ms, size_t n)
{
	for (size_t k = 0; k < n; k++)
		abacus_machine_free(ms[k]);
	free(ms);
}

int cli_write_file(const char *path, const char *data, size_t len)
{
	char tmp[PATH_MAX + 16];
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	FILE *f = fopen(tmp, "w");
	int ok = f && fwrite(data, 1, len, f) == len;
	ok = (f && fclose(f) == 0) && ok;
	if (!ok || rename(tmp, path)) {
		fprintf(stderr, "abacus: cannot write %s: %s\n", path, strerror(errno));
		remove(tmp);
		return CLI_FAIL;
	}
	return CLI_OK;
}

static const cli_isa_cap isa_caps[] = {
	{ "sse41", { { "ONEDNN_MAX_CPU_ISA", "SSE41" }, { "ATEN_CPU_CAPABILITY", "default" }, { "OPENBLAS_CORETYPE", "Nehalem" } } },
	{ "avx2", { { "ONEDNN_MAX_CPU_ISA", "AVX2" }, { "ATEN_CPU_CAPABILITY", "avx2" }, { "OPENBLAS_CORETYPE", "Haswell" } } },
};

int cli_parse_isa_cap(const cli_isa_cap **out, const char *v)
{
	*out = NULL;
	if (!strcmp(v, "none"))
		return 0;
	for (size_t i = 0; i < sizeof isa_caps / sizeof isa_caps[0]; i++)
		if (!strcmp(v, isa_caps[i].name)) {
			*out = &isa_caps[i];
			return 0;
		}
	return -1;
}

int cli_isa_cap_opt(void *target, const char *v, const char *cmd)
{
	if (cli_parse_isa_cap(target, v) == 0)
		return 0;
	return cli_usage(cmd, "--isa-cap must be none, sse41 or avx2 (got '%s')", v), -2;
}

int cli_parse_bytes(int64_t *out, const char *s)
{
	char *end;
	double v = strtod(s, &end);
	if (end == s || !(v > 0) || !isfinite(v))
		return -1;
	while (*end == ' ')
		end++;
	double mul = 1;
	char u[8] = "";
	size_t n = strlen(end);
	if (n >= sizeof u)
		return -1;
	for (size_t i = 0; i <= n; i++)
		u[i] = (char)toupper((unsigned char)end[i]);
	if (!strcmp(u, "") || !strcmp(u, "B")) mul = 1;
	else if (!strcmp(u, "K") || !strcmp(u, "KIB")) mul = 1024.0;
	else if (!strcmp(u, "M") || !strcmp(u, "MIB")) mul = 1048576.0;
	else if (!strcmp(u, "G") || !strcmp(u, "GIB")) mul = 1073741824.0;
	else if (!strcmp(u, "T") || !strcmp(u, "TIB")) mul = 1099511627776.0;
	else if (!strcmp(u, "KB")) mul = 1e3;
	else if (!strcmp(u, "MB")) mul = 1e6;
	else if (!strcmp(u, "GB")) mul = 1e9;
	else if (!strcmp(u, "TB")) mul = 1e12;
	else return -1;
	v *= mul;
	if (!(v < 9.2e18)) /* int64's range, as the library's AB_I64_DOUBLE_MAX */
		return -1;
	*out = (int64_t)v;
	return 0;
}

void cli_worker_root(char *buf, size_t len, const char *worker)
{
	snprintf(buf, len, "%s", worker);
	for (int up = 0; up < 2; up++) {
		char *slash = strrchr(buf, '/');
		if (slash)
			*slash = '\0';
		else
			snprintf(buf, len, "%s", strcmp(buf, ".") ? "." : ".."); /* a name in ".", or "." itself */
	}
}

/* The bundled predictor: $ABACUS_MODEL, else data/predictor.abacus beside the build tree, else the
 * installed copy. */
int cli_default_model(char *buf, size_t len)
{
	const char *env = getenv("ABACUS_MODEL");
	if (env && *env) {
		snprintf(buf, len, "%s", env);
		return 0;
	}
	if (cli_beside_exe(buf, len, "../../data/predictor.abacus") == 0 ||
	    cli_beside_exe(buf, len, "../share/abacus/predictor.abacus") == 0)
		return 0;
	snprintf(buf, len, "data/predictor.abacus");
	return 0;
}

int cli_load_datasets(abacus_dataset ***out, size_t *n, char **files, size_t n_files)
{
	abacus_error err;
	abacus_dataset **sets = calloc(n_files ? n_files : 1, sizeof *sets);
	if (!sets)
		return CLI_FAIL;
	for (size_t i = 0; i < n_files; i++) {
		if (abacus_dataset_load_file(&sets[i], files[i], &err)) {
			for (size_t k = 0; k < i; k++)
				abacus_dataset_free(sets[k]);
			free(sets);
			return cli_fail(&err);
		}
	}
	*out = sets;
	*n = n_files;
	return CLI_OK;
}

int cli_read_file(const char *path, char **buf, size_t *len)
{
	FILE *f = fopen(path, "rb");
	size_t cap = 4096, n = 0;
	char *b = f ? malloc(cap) : NULL;
	while (b) {
		n += fread(b + n, 1, cap - 1 - n, f);
		if (n < cap - 1)
			break;
		char *nb = realloc(b, cap *= 2);
		if (!nb) {
			free(b);
			b = NULL;
			errno = ENOMEM;
		}
		b = nb;
	}
	int bad = !b || ferror(f);
	if (f)
		fclose(f);
	if (bad) {
		free(b);
		return -1;
	}
	b[n] = '\0';
	*buf = b;
	*len = n;
	return 0;
}

int cli_read_families(cli_families *t, const char *path)
{
	size_t len = 0, cap = 0, line = 0;
	if (cli_read_file(path, &t->buf, &len)) {
		fprintf(stderr, "abacus: cannot read the families file '%s': %s\n", path, strerror(errno));
		return CLI_FAIL;
	}
	for (char *p = t->buf, *next; p && *p; p = next) {
		line++;
		next = strchr(p, '\n');
		if (next)
			*next++ = '\0';
		if (*p == '#' || !*p)
			continue;
		char *tab = strchr(p, '\t');
		if (!tab || tab == p || !tab[1] || strchr(tab + 1, '\t')) {
			fprintf(stderr, "abacus: %s:%zu: expected 'network<TAB>family'\n", path, line);
			return CLI_FAIL;
		}
		*tab = '\0';
		if (t->n == cap) {
			cap = cap ? 2 * cap : 256;
			char **np = realloc(t->pairs, 2 * cap * sizeof *np);
			if (!np) {
				fprintf(stderr, "abacus: out of memory\n");
				return CLI_FAIL;
			}
			t->pairs = np;
		}
		t->pairs[2 * t->n] = p;
		t->pairs[2 * t->n + 1] = tab + 1;
		t->n++;
	}
	return CLI_OK;
}

void cli_free_families(cli_families *t)
{
	free(t->buf);
	free(t->pairs);
	memset(t, 0, sizeof *t);
}
