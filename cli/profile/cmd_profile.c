/*
 * cmd_profile.c — `abacus profile`: measure ground truth on this machine under docs/PROTOCOL.md.
 *
 * Expands the grid (networks x input sizes x batches x optimizers x hardware ids x repeat indices), drops the
 * configurations the output CSV already has, and measures the rest in Python workers (worker.c),
 * one group per worker: the configurations of one network on one hardware id and one repeat index share a
 * worker, so `import torch` is paid once per group while repeats always come from separate processes.
 * A configuration that fails, times out or kills its worker becomes a row with a status; the worker is
 * replaced before the next one. Rows are appended and fsynced one at a time (csv.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../cli.h"
#include "profile.h"

static const char description[] =
	"Measures training iterations under docs/PROTOCOL.md and appends one CSV row per configuration\n"
	"(columns: docs/DATASET.md). Each configuration runs in a worker process of the runtime asked for\n"
	"(--runtime: Debian's python3 with python3-torch by default, or a pinned virtual environment that\n"
	"scripts/setup.sh makes in .runtimes/NAME); configurations the output already has are skipped, so an\n"
	"interrupted run continues where it stopped. The graph-only ONNX of each network and input size is\n"
	"exported to --graphs when missing. Progress (count, rate, ETA) is shown on a terminal.\n"
	"SIGINT/SIGTERM stop the worker and exit; rows written so far stay, and rerunning the same command\n"
	"continues.\n";

#define MAX_LIST 64
#define MAX_SIZES 64
#define STARTUP_TIMEOUT_S 300.0
/* The measurement protocol version every row records (docs/PROTOCOL.md; 2: machine and runtime in every row). */
#define PROFILE_PROTOCOL "2"

static volatile sig_atomic_t g_stop;

static void on_signal(int sig)
{
	g_stop = sig;
}

typedef struct zoo_net {
	char *name;
	int tokens; /* kind: 0 image, 1 tokens */
	int64_t channels;
	int64_t sizes[MAX_SIZES];
	int n_sizes;
} zoo_net;

typedef struct config {
	const zoo_net *net;
	int64_t size, batch, repeat;
	const char *optimizer, *hw;
	const char *machine; /* the machine id of hw (run_ctx.machine), set once the workers have said it */
	size_t hw_index;     /* into opts.hw */
	int threads;
	char shape[96];
	char graph_file[256];
} config;

/* The runtimes `abacus profile` can measure (docs/PROTOCOL.md, one section each): the interpreter is
 * /usr/bin/python3 for Debian's torch, else .runtimes/NAME/bin/python under the repository root (made by
 * scripts/setup.sh from collector/runtimes/NAME.txt); `worker` is the collector's worker module for it. The
 * first is the default. A runtime measured here need not be priced by the library yet (abacus_parse_runtime
 * lists those). */
typedef struct profile_runtime {
	const char *name, *worker;
	int tf; /* TensorFlow's environment and one worker per configuration (docs/PROTOCOL.md) */
} profile_runtime;

static const profile_runtime profile_runtimes[] = {
	{ "torch-1.13.1", "collector/worker.py", 0 },
	{ "torch-2.15.0", "collector/worker.py", 0 },
	{ "tf-2.21.0", "collector/tf_worker.py", 1 },
};
#define N_PROFILE_RUNTIMES (sizeof profile_runtimes / sizeof profile_runtimes[0])

typedef struct opts {
	const char *out, *models, *graphs, *python, *worker, *tracker, *log;
	const profile_runtime *runtime; /* --runtime; NULL: not given (the default, or whatever --python runs) */
	const cli_isa_cap *isa_cap; /* NULL: none */
	const char *machines; /* the machines table; NULL: machines.jsonl beside out */
	int64_t batch[MAX_LIST];
	size_t n_batch;
	int64_t size[MAX_LIST], seq[MAX_LIST];
	size_t n_size, n_seq;
	int size_all, seq_all, size_given, seq_given;
	const char *optimizer[2];
	size_t n_opt;
	char *hw[MAX_LIST];
	int threads[MAX_LIST];
	size_t n_hw;
	int64_t repeat, timeout_s, mem_limit;
	int64_t repeat_pct;          /* repeats beyond the first only for this share of configurations */
	double max_iter_s;
	int wait_quiet, fresh, dry_run, any_size;
} opts;

/* ---- option parsing -------------------------------------------------------------------------------- */

/* "1,2,4" → values; "all" sets *all to 1 and "min" (each network's smallest valid size) to 2 when allowed;
 * "L128" is accepted for lengths. */
static int parse_int_list(int64_t *out, size_t *n, int *all, const char *text)
{
	*n = 0;
	if (all && (!strcmp(text, "all") || !strcmp(text, "min"))) {
		*all = text[0] == 'a' ? 1 : 2;
		return 0;
	}
	const char *p = text;
	while (*p) {
		if (*n == MAX_LIST)
			return -1;
		if (*p == 'L' || *p == 'l')
			p++;
		char *end;
		errno = 0;
		long long v = strtoll(p, &end, 10);
		if (errno || end == p || v < 1 || v > ((int64_t)1 << 31))
			return -1;
		out[(*n)++] = v;
		p = end;
		if (*p == ',')
			p++;
		else if (*p)
			return -1;
	}
	return *n ? 0 : -1;
}

/* The list-valued options, as option-table parsers into the opts (opt.h). */
static int batch_opt(void *target, const char *v, const char *cmd)
{
	opts *o = target;
	if (parse_int_list(o->batch, &o->n_batch, NULL, v))
		return cli_usage(cmd, "--batch needs positive integers separated by commas, got '%s'", v), -2;
	return 0;
}

static int size_opt(void *target, const char *v, const char *cmd)
{
	opts *o = target;
	o->size_given = 1;
	if (parse_int_list(o->size, &o->n_size, &o->size_all, v))
		return cli_usage(cmd, "--size needs image sides separated by commas, 'all' or 'min', got '%s'", v), -2;
	return 0;
}

static int seq_opt(void *target, const char *v, const char *cmd)
{
	opts *o = target;
	o->seq_given = 1;
	if (parse_int_list(o->seq, &o->n_seq, &o->seq_all, v))
		return cli_usage(cmd, "--seq needs sequence lengths separated by commas, 'all' or 'min', got '%s'", v), -2;
	return 0;
}

static int optimizer_opt(void *target, const char *v, const char *cmd)
{
	opts *o = target;
	if (strcmp(v, "sgd") && strcmp(v, "adam") && strcmp(v, "sgd,adam") && strcmp(v, "adam,sgd"))
		return cli_usage(cmd, "--optimizer must be sgd, adam or sgd,adam, got '%s'", v), -2;
	o->n_opt = 0;
	if (strstr(v, "sgd"))
		o->optimizer[o->n_opt++] = "sgd";
	if (strstr(v, "adam"))
		o->optimizer[o->n_opt++] = "adam";
	return 0;
}

static int runtime_opt(void *target, const char *v, const char *cmd)
{
	const profile_runtime **rt = target;
	char known[256] = "";
	for (size_t i = 0; i < N_PROFILE_RUNTIMES; i++) {
		if (!strcmp(v, profile_runtimes[i].name)) {
			*rt = &profile_runtimes[i];
			return 0;
		}
		snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", i ? ", " : "", profile_runtimes[i].name);
	}
	return cli_usage(cmd, "--runtime: unknown runtime '%s': abacus profile measures %s", v, known), -2;
}

static int hw_opt(void *target, const char *v, const char *cmd)
{
	opts *o = target;
	/* argv strings are writable: the list is split in place and the ids point into it. */
	char *save = NULL;
	o->n_hw = 0;
	for (char *tok = strtok_r((char *)v, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int64_t t;
		if (strncmp(tok, "cpu", 3) || cli_parse_i64(&t, tok + 3, 1, 1024) || o->n_hw == MAX_LIST)
			return cli_usage(cmd, "--hw takes cpu1, cpu2 (cpuN: N threads), got '%s'", tok), -2;
		o->hw[o->n_hw] = tok;
		o->threads[o->n_hw++] = (int)t;
	}
	if (!o->n_hw)
		return cli_usage(cmd, "--hw needs a value such as cpu1"), -2;
	return 0;
}

/* Returns 0, 1 when --help was printed, -1 on a usage error (printed). */
static int parse_opts(opts *o, int argc, char **argv)
{
	static char default_hw[] = "cpu1";
	memset(o, 0, sizeof *o);
	o->models = "all";
	o->repeat = 1;
	o->repeat_pct = 100;
	o->timeout_s = 1800;
	o->batch[0] = 1;
	o->n_batch = 1;
	o->optimizer[0] = "sgd";
	o->n_opt = 1;
	o->hw[0] = default_hw;
	o->threads[0] = 1;
	o->n_hw = 1;
	const cli_opt_spec specs[] = {
		CLI_OPT(CLI_OPT_STRING, "--out", "FILE.csv", &o->out,
		        "the CSV to append to (created with a header; a different header is refused)", .flags = CLI_OPT_REQUIRED),
		CLI_OPT(CLI_OPT_STRING, "--models", "all|a,b", &o->models,
		        "zoo networks, comma-separated, or all (default); see 'python3 -m collector.worker --list'"),
		CLI_OPT(CLI_OPT_FUNC, "--batch", "LIST", o, "batch sizes, e.g. 1,8 (default 1)", .func = batch_opt),
		CLI_OPT(CLI_OPT_FUNC, "--size", "LIST|all|min", o,
		        "image sides, e.g. 64,128 (only each network's valid sizes are measured);\n"
		        "min: each network's smallest valid side", .func = size_opt),
		CLI_OPT(CLI_OPT_FUNC, "--seq", "LIST|all|min", o,
		        "sequence lengths of token networks (--input is a synonym)\n"
		        "with neither --size nor --seq every valid size of every network is measured;\n"
		        "with only one of them, networks of the other kind are left out", .func = seq_opt),
		CLI_OPT(CLI_OPT_FUNC, "--input", "LIST|all|min", o, NULL, .func = seq_opt, .flags = CLI_OPT_NO_USAGE),
		CLI_OPT(CLI_OPT_SWITCH, "--any-size", NULL, &o->any_size,
		        "also measure asked-for sizes that the zoo does not list as valid for a network"),
		CLI_OPT(CLI_OPT_FUNC, "--optimizer", "LIST", o, "sgd and/or adam (default sgd)", .func = optimizer_opt),
		CLI_OPT(CLI_OPT_FUNC, "--hw", "LIST", o, "cpu1 and/or cpu2: cpuN runs the worker with N threads (default cpu1)",
		        .func = hw_opt),
		CLI_OPT(CLI_OPT_FUNC, "--isa-cap", "none|sse41|avx2", &o->isa_cap,
		        "emulate an older CPU: sse41 caps oneDNN, ATen and OpenBLAS at SSE4.1, avx2 at AVX2\n"
		        "(docs/PROTOCOL.md); the cap is part of the machine id every row records", .func = cli_isa_cap_opt),
		CLI_OPT(CLI_OPT_STRING, "--machines", "FILE", &o->machines,
		        "the machines table: one JSON line per machine id with its full descriptor,\n"
		        "appended when a run meets a new id (default: machines.jsonl beside --out)"),
		CLI_OPT(CLI_OPT_I64, "--repeat", "N", &o->repeat,
		        "measure every configuration N times, each in its own worker (repeat 0..N-1)", .min = 1, .max = 1000),
		CLI_OPT(CLI_OPT_I64, "--repeat-percent", "P", &o->repeat_pct,
		        "repeats 1..N-1 only for a fixed, hash-chosen P % of the configurations", .min = 0, .max = 100),
		CLI_OPT(CLI_OPT_STRING, "--graphs", "DIR", &o->graphs, "where graphs are read and exported (default data/graphs;\n"
		        "data/graphs/tf for tf-* runtimes)"),
		CLI_OPT(CLI_OPT_I64, "--timeout", "S", &o->timeout_s,
		        "seconds one configuration may take before it is killed (default 1800)", .min = 1, .max = 2592000),
		CLI_OPT(CLI_OPT_DOUBLE, "--max-iter-seconds", "S", &o->max_iter_s,
		        "skip (a 'skipped' row) configurations whose iteration takes longer than S,\n"
		        "judged on the first two iterations", .min = 0, .max = 1e9),
		CLI_OPT(CLI_OPT_BYTES, "--mem-limit", "BYTES", &o->mem_limit,
		        "address-space limit of each worker (RLIMIT_AS)\n" CLI_BYTES_UNITS),
		CLI_OPT(CLI_OPT_SWITCH, "--wait-quiet", NULL, &o->wait_quiet,
		        "before each configuration, wait (up to 10 min) until other processes use less\n"
		        "than 10% of the machine's CPU; a configuration whose timed iterations still\n"
		        "shared the machine (busy_other > 0.1) is measured again, at most twice"),
		CLI_OPT(CLI_OPT_SWITCH, "--fresh", NULL, &o->fresh, "one worker per configuration (slower: import torch each time)"),
		CLI_OPT(CLI_OPT_SWITCH, "--dry-run", NULL, &o->dry_run, "print the configurations that would be measured, measure nothing"),
		CLI_OPT(CLI_OPT_FUNC, "--runtime", "NAME", &o->runtime,
		        "the framework to measure: torch-1.13.1 (default: Debian's /usr/bin/python3),\n"
		        "torch-2.15.0 or tf-2.21.0 (the virtual environment .runtimes/NAME that\n"
		        "'bash scripts/setup.sh' makes; tf-* runs collector/tf_worker.py, one worker per\n"
		        "configuration); every row records it in its runtime column", .func = runtime_opt),
		CLI_OPT(CLI_OPT_STRING, "--python", "PATH", &o->python,
		        "the interpreter (default: the runtime's; /usr/bin/python3 for torch-1.13.1)"),
		CLI_OPT(CLI_OPT_STRING, "--worker", "FILE", &o->worker,
		        "the worker (default: the runtime's, collector/worker.py or collector/tf_worker.py,\n"
		        "found beside the abacus binary's source tree)"),
		CLI_OPT(CLI_OPT_STRING, "--tracker", "FILE", &o->tracker, "libabacus_tracker.so (default: beside the abacus binary)"),
		CLI_OPT(CLI_OPT_STRING, "--log", "FILE", &o->log, "append the workers' stderr to FILE"),
		CLI_OPT_TABLE_END
	};
	int rc = cli_opt_parse(specs, "profile", description, argc, argv);
	if (rc)
		return rc < 0 ? 1 : -1;
	if (!o->size_given && !o->seq_given)
		o->size_all = o->seq_all = 1;
	/* TensorFlow keeps per-process state that a worker's earlier configurations change (a second
	 * configuration in a worker read 0.2-0.8 % other memory than a fresh worker): one worker each. */
	if (o->runtime && o->runtime->tf)
		o->fresh = 1;
	/* A Keras network's graph is not torchvision's: TensorFlow's graphs live apart (collector/tf_export.py). */
	if (!o->graphs)
		o->graphs = o->runtime && o->runtime->tf ? "data/graphs/tf" : "data/graphs";
	return 0;
}

/* ---- paths --------------------------------------------------------------------------------------- */

static int file_exists(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static int mkdir_p(const char *path)
{
	char tmp[PATH_MAX];
	if (snprintf(tmp, sizeof tmp, "%s", path) >= (int)sizeof tmp)
		return -1;
	for (char *p = tmp + 1; *p; p++)
		if (*p == '/') {
			*p = '\0';
			if (mkdir(tmp, 0755) && errno != EEXIST)
				return -1;
			*p = '/';
		}
	return mkdir(tmp, 0755) && errno != EEXIST ? -1 : 0;
}

/* ---- the zoo --------------------------------------------------------------------------------------- */

static void zoo_free(zoo_net *z, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(z[i].name);
	free(z);
}

/* Asks a started worker for the zoo ({"cmd": "list"}): one JSON object per network, then {"listed": N}. */
static int load_zoo(zoo_net **out, size_t *n_out, worker *w, char *err, size_t errlen)
{
	zoo_net *z = NULL;
	size_t n = 0, cap = 0;
	if (worker_send(w, "{\"cmd\": \"list\"}")) {
		snprintf(err, errlen, "the worker went away before listing the zoo");
		return -1;
	}
	for (;;) {
		jobj o;
		char perr[256];
		worker_result r = worker_read(w, &o, STARTUP_TIMEOUT_S, &g_stop, perr, sizeof perr);
		if (r != WR_OK) {
			char last[300], how[80];
			worker_last_err(w, last, sizeof last);
			worker_describe_status(w->status, how, sizeof how);
			snprintf(err, errlen, "listing the zoo failed (%s)%s%s", r == WR_TIMEOUT ? "timed out"
			         : r == WR_INTERRUPTED ? "interrupted" : r == WR_DIED ? how : perr, *last ? ": " : "", last);
			zoo_free(z, n);
			return -1;
		}
		if (jobj_get(&o, "listed", NULL)) {
			jobj_free(&o);
			break;
		}
		const char *name = jobj_get(&o, "name", NULL), *kind = jobj_get(&o, "kind", NULL);
		jv_type st;
		const char *sizes = jobj_get(&o, "sizes", &st);
		if (name && kind && sizes && st == JV_RAW) {
			if (n == cap) {
				size_t nc = cap ? cap * 2 : 64;
				zoo_net *nz = realloc(z, nc * sizeof *nz);
				if (!nz) {
					jobj_free(&o);
					zoo_free(z, n);
					snprintf(err, errlen, "out of memory");
					return -1;
				}
				z = nz;
				cap = nc;
			}
			zoo_net *e = &z[n];
			memset(e, 0, sizeof *e);
			e->name = strdup(name);
			e->tokens = !strcmp(kind, "tokens");
			e->channels = 3;
			(void)jobj_int(&o, "channels", &e->channels);
			int k = json_int_array(sizes, e->sizes, MAX_SIZES);
			e->n_sizes = k < 0 ? 0 : k > MAX_SIZES ? MAX_SIZES : k;
			if (e->name)
				n++;
		}
		jobj_free(&o);
	}
	if (n == 0) {
		snprintf(err, errlen, "the zoo is empty (collector/zoo.py)");
		return -1;
	}
	*out = z;
	*n_out = n;
	return 0;
}

/* ---- the grid -------------------------------------------------------------------------------------- */

static int in_list(const int64_t *v, size_t n, int64_t x)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == x)
			return 1;
	return 0;
}

/* The sizes of network `z` to measure: all its valid ones, or those asked for that are valid (any of them
 * with --any-size). Counts the ones left out in *dropped (and remembers the first). */
static int sizes_of(int64_t *out, const opts *o, const zoo_net *z, size_t *dropped, const zoo_net **ex_net,
                    int64_t *ex_size)
{
	int all = z->tokens ? o->seq_all : o->size_all;
	const int64_t *req = z->tokens ? o->seq : o->size;
	size_t n_req = z->tokens ? o->n_seq : o->n_size;
	int n = 0;
	if (all == 2 && z->n_sizes) {
		out[0] = z->sizes[0];
		for (int i = 1; i < z->n_sizes; i++)
			if (z->sizes[i] < out[0])
				out[0] = z->sizes[i];
		return 1;
	}
	if (all) {
		memcpy(out, z->sizes, (size_t)z->n_sizes * sizeof *out);
		return z->n_sizes;
	}
	for (size_t i = 0; i < n_req; i++) {
		if (o->any_size || in_list(z->sizes, (size_t)z->n_sizes, req[i])) {
			out[n++] = req[i];
		} else {
			if (!*dropped) {
				*ex_net = z;
				*ex_size = req[i];
			}
			++*dropped;
		}
	}
	return n;
}

/* Whether a configuration is in the deterministic subset that gets repeat indices ≥ 1: an FNV-1a hash of
 * network, input shape, optimizer and hardware id, so the choice is stable across runs and spread over
 * every network, batch and size. */
static int in_repeat_subset(const config *e, int64_t pct)
{
	if (pct >= 100)
		return 1;
	char key[512];
	int n = snprintf(key, sizeof key, "%s|%s|%s|%s", e->net->name, e->shape, e->optimizer, e->hw);
	uint64_t h = 1469598103934665603ULL;
	for (int i = 0; i < n && i < (int)sizeof key; i++) {
		h ^= (unsigned char)key[i];
		h *= 1099511628211ULL;
	}
	return (int64_t)(h % 100) < pct;
}

/* Expands the grid for the selected networks (in the order given). */
static int expand(config **out, size_t *n_out, const opts *o, const zoo_net **nets, size_t n_nets)
{
	size_t n = 0, cap = 0, dropped = 0;
	config *c = NULL;
	const zoo_net *ex_net = NULL;
	int64_t ex_size = 0;
	for (size_t ni = 0; ni < n_nets; ni++) {
		const zoo_net *z = nets[ni];
		int64_t sizes[MAX_SIZES + MAX_LIST];
		int n_sizes = sizes_of(sizes, o, z, &dropped, &ex_net, &ex_size);
		for (size_t h = 0; h < o->n_hw; h++)
			for (int64_t r = 0; r < o->repeat; r++)
				for (int si = 0; si < n_sizes; si++) {
					int64_t s = sizes[si];
					for (size_t b = 0; b < o->n_batch; b++)
						for (size_t k = 0; k < o->n_opt; k++) {
							if (n == cap) {
								size_t nc = cap ? cap * 2 : 256;
								config *nw = realloc(c, nc * sizeof *nw);
								if (!nw) {
									free(c);
									return -1;
								}
								c = nw;
								cap = nc;
							}
							config *e = &c[n++];
							memset(e, 0, sizeof *e);
							e->net = z;
							e->size = s;
							e->batch = o->batch[b];
							e->repeat = r;
							e->optimizer = o->optimizer[k];
							e->hw = o->hw[h];
							e->hw_index = h;
							e->threads = o->threads[h];
							if (z->tokens) {
								snprintf(e->shape, sizeof e->shape, "%lldx%lld", (long long)e->batch, (long long)s);
								snprintf(e->graph_file, sizeof e->graph_file, "%s-L%lld.onnx", z->name, (long long)s);
							} else {
								snprintf(e->shape, sizeof e->shape, "%lldx%lldx%lldx%lld", (long long)e->batch,
								         (long long)z->channels, (long long)s, (long long)s);
								snprintf(e->graph_file, sizeof e->graph_file, "%s-%lld.onnx", z->name, (long long)s);
							}
							if (r > 0 && !in_repeat_subset(e, o->repeat_pct))
								n--;
						}
				}
	}
	if (dropped) {
		char valid[512] = "";
		size_t k = 0;
		for (int i = 0; i < ex_net->n_sizes && k < sizeof valid - 24; i++)
			k += (size_t)snprintf(valid + k, sizeof valid - k, "%s%lld", i ? "," : "", (long long)ex_net->sizes[i]);
		fprintf(stderr, "abacus profile: note: %zu (network, size) pair(s) left out because the zoo does not list the "
		        "size as valid (e.g. %s at %lld; its sizes: %s); --any-size tries them anyway\n", dropped, ex_net->name,
		        (long long)ex_size, valid);
	}
	*out = c;
	*n_out = n;
	return 0;
}

static csv_key key_of(const config *c)
{
	csv_key k = { c->net->name, c->shape, c->optimizer, c->hw, c->machine, c->batch, c->repeat };
	return k;
}

/* Configurations that share a worker: same network, hardware id and repeat index. */
static int same_group(const config *a, const config *b)
{
	return a->net == b->net && !strcmp(a->hw, b->hw) && a->repeat == b->repeat;
}

/* ---- machine facts ----------------------------------------------------------------------------------- */

static void cpu_model(char *buf, size_t len)
{
	snprintf(buf, len, "unknown");
	FILE *f = fopen("/proc/cpuinfo", "r");
	if (!f)
		return;
	char line[512];
	while (fgets(line, sizeof line, f)) {
		if (strncmp(line, "model name", 10))
			continue;
		char *colon = strchr(line, ':');
		if (!colon)
			break;
		char *s = colon + 1;
		while (*s == ' ' || *s == '\t')
			s++;
		s[strcspn(s, "\n")] = '\0';
		snprintf(buf, len, "%s", s);
		break;
	}
	fclose(f);
}

/* Non-idle and total jiffies of the whole machine (first line of /proc/stat). */
static int proc_stat(unsigned long long *busy, unsigned long long *total)
{
	FILE *f = fopen("/proc/stat", "r");
	if (!f)
		return -1;
	unsigned long long v[8] = { 0 };
	int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6],
	               &v[7]);
	fclose(f);
	if (n < 4)
		return -1;
	*total = v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
	*busy = *total - v[3] - v[4]; /* minus idle and iowait */
	return 0;
}

static void sleep_s(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };
	while (nanosleep(&ts, &ts) && errno == EINTR && !g_stop)
		;
}

/* Waits until other processes use < 10 % of the machine over a 2 s window (at most 10 minutes). */
static void wait_quiet(int tty)
{
	double start = now_monotonic();
	while (!g_stop && now_monotonic() - start < 600) {
		unsigned long long b0, t0, b1, t1;
		if (proc_stat(&b0, &t0))
			return;
		for (int i = 0; i < 8 && !g_stop; i++)
			sleep_s(0.25);
		if (proc_stat(&b1, &t1) || t1 <= t0)
			return;
		double busy = (double)(b1 - b0) / (double)(t1 - t0);
		if (busy < 0.10)
			return;
		if (tty)
			fprintf(stderr, "\r\033[Kwaiting for a quiet machine: %.0f%% busy (%.0f s)", busy * 100,
			        now_monotonic() - start);
	}
}

/* ---- rows -------------------------------------------------------------------------------------------- */

typedef struct run_ctx {
	const opts *o;
	csv_out csv;
	char graphs_abs[PATH_MAX];
	char repo_root[PATH_MAX];
	char cpu[256];
	char cores[16];
	char torch_version[64], torchvision_version[64];
	char blas[64]; /* the BLAS library torch loaded (the speed of matrix products and 1x1 convolutions) */
	char runtime[64];           /* "torch-1.13.1", from the worker */
	char machine[MAX_LIST][96]; /* the machine id of each opts.hw, from a worker started with its threads */
	char worker_machine[96];    /* what the last worker started said */
	char machines_path[PATH_MAX];
	char python[PATH_MAX]; /* the interpreter: --python, or the runtime's */
	size_t by_status[5]; /* rows written in this run: ok, oom, error, timeout, skipped */
	int last_status;     /* index into statuses of the last row written, -1 for none */
} run_ctx;

static const char *const statuses[5] = { "ok", "oom", "error", "timeout", "skipped" };

/* The graph column: the file relative to the repository when it is inside it, else absolute; empty when the
 * file does not exist (its export failed or has not happened). */
static void graph_column(const run_ctx *x, const config *c, char *buf, size_t len)
{
	char abs[PATH_MAX + 256];
	snprintf(abs, sizeof abs, "%s/%s", x->graphs_abs, c->graph_file);
	buf[0] = '\0';
	if (!file_exists(abs))
		return;
	size_t rl = strlen(x->repo_root);
	if (rl && !strncmp(abs, x->repo_root, rl) && abs[rl] == '/')
		snprintf(buf, len, "%s", abs + rl + 1);
	else
		snprintf(buf, len, "%s", abs);
}

/* Writes one row; `res` (may be NULL) is the worker's result, status/error override it when non-NULL. */
static int write_row(run_ctx *x, const config *c, const jobj *res, const char *status, const char *error)
{
	const char *f[N_COLS] = { 0 };
	char graph[PATH_MAX + 256], batch[32], threads[16], repeat[32], stamp[32], errbuf[1024];
	graph_column(x, c, graph, sizeof graph);
	snprintf(batch, sizeof batch, "%lld", (long long)c->batch);
	snprintf(threads, sizeof threads, "%d", c->threads);
	snprintf(repeat, sizeof repeat, "%lld", (long long)c->repeat);
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &tm);
	f[COL_NETWORK] = c->net->name;
	f[COL_GRAPH] = graph;
	f[COL_INPUT_SHAPE] = c->shape;
	f[COL_BATCH] = batch;
	f[COL_OPTIMIZER] = c->optimizer;
	f[COL_HW] = c->hw;
	f[COL_THREADS] = threads;
	f[COL_REPEAT] = repeat;
	f[COL_TORCH_VERSION] = x->torch_version;
	f[COL_TORCHVISION_VERSION] = x->torchvision_version;
	f[COL_CPU_MODEL] = x->cpu;
	f[COL_CORES] = x->cores;
	f[COL_BLAS] = x->blas;
	f[COL_PROTOCOL] = PROFILE_PROTOCOL;
	f[COL_MACHINE] = c->machine;
	f[COL_RUNTIME] = x->runtime;
	f[COL_TIMESTAMP] = stamp;
	if (res) {
		static const struct { int col; const char *key; } nums[] = {
			{ COL_TIME_S, "time_s" }, { COL_TIME_MIN_S, "time_min_s" }, { COL_TIME_P90_S, "time_p90_s" },
			{ COL_TIME_CV, "time_cv" }, { COL_ITERATIONS, "iterations" }, { COL_CALIB_S, "calib_s" },
			{ COL_MEMORY_BYTES, "memory_bytes" }, { COL_PERSISTENT_BYTES, "persistent_bytes" },
			{ COL_PARAMS, "params" }, { COL_BUSY_OTHER, "busy_other" },
		};
		for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) {
			jv_type t;
			const char *v = jobj_get(res, nums[i].key, &t);
			if (v && t == JV_NUMBER)
				f[nums[i].col] = v;
		}
		const char *st = jobj_get(res, "status", NULL);
		f[COL_STATUS] = st;
		f[COL_ERROR] = jobj_get(res, "error", NULL);
		const char *gs = jobj_get(res, "graph_status", NULL), *ge = jobj_get(res, "graph_error", NULL);
		if (st && !strcmp(st, "ok") && gs && !strcmp(gs, "failed")) {
			snprintf(errbuf, sizeof errbuf, "graph export failed: %s", ge ? ge : "");
			f[COL_ERROR] = errbuf;
		}
	}
	if (status)
		f[COL_STATUS] = status;
	if (error)
		f[COL_ERROR] = error;
	/* One line per row whatever the error text holds (quoting would allow more, readers like it simpler). */
	if (f[COL_ERROR] && strpbrk(f[COL_ERROR], "\r\n")) {
		snprintf(errbuf, sizeof errbuf, "%s", f[COL_ERROR]);
		for (char *p = errbuf; *p; p++)
			if (*p == '\n' || *p == '\r')
				*p = ' ';
		f[COL_ERROR] = errbuf;
	}
	char err[512];
	if (csv_append(&x->csv, f, err, sizeof err)) {
		fprintf(stderr, "abacus: %s (%s)\n", err, x->o->out);
		return -1;
	}
	x->last_status = -1;
	for (int i = 0; i < 5; i++)
		if (f[COL_STATUS] && !strcmp(f[COL_STATUS], statuses[i])) {
			x->by_status[i]++;
			x->last_status = i;
		}
	return 0;
}

/* A configuration that was too slow (skipped) or ran out of memory at some batch will do so at every larger
 * batch of the same network, input size, optimizer and hardware: those get a `skipped` row at once instead
 * of a worker building the network again only to find out. */
typedef struct limit {
	const zoo_net *net;
	int64_t size, batch;
	const char *optimizer, *hw;
	int status;
} limit;

static const limit *find_limit(const limit *l, size_t n, const config *c)
{
	for (size_t i = 0; i < n; i++)
		if (l[i].net == c->net && l[i].size == c->size && l[i].batch < c->batch && !strcmp(l[i].optimizer, c->optimizer) &&
		    !strcmp(l[i].hw, c->hw))
			return &l[i];
	return NULL;
}

/* ---- the run ----------------------------------------------------------------------------------------- */

static void progress(size_t done, size_t total, double elapsed, const config *c)
{
	fprintf(stderr, "\r\033[K[%zu/%zu] %s %s %s %s r%lld", done + 1, total, c->net->name, c->shape, c->optimizer, c->hw,
	        (long long)c->repeat);
	if (done > 0 && elapsed > 0) {
		char eta[32];
		double rate = (double)done / elapsed;
		fmt_duration(eta, sizeof eta, (double)(total - done) / rate);
		fprintf(stderr, " | %.2f configurations/min | ETA %s", rate * 60, eta);
	}
}

/* Appends the descriptor of machine `id` to the machines table unless a line already names it. The table is
 * JSON lines, {"id": ID, <the descriptor's fields>}, written with one write() and fsync() like the rows. */
static int machines_table_add(const char *path, const char *id, const char *descriptor, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	if (f) {
		char *line = NULL;
		size_t cap = 0;
		int found = 0;
		while (!found && getline(&line, &cap, f) > 0) {
			jobj o;
			char perr[128];
			if (jobj_parse(&o, line, perr, sizeof perr))
				continue; /* a damaged line does not hide an id: the id is written again below */
			const char *have = jobj_get(&o, "id", NULL);
			found = have && !strcmp(have, id);
			jobj_free(&o);
		}
		free(line);
		fclose(f);
		if (found)
			return 0;
	}
	if (descriptor[0] != '{') {
		snprintf(err, errlen, "the worker's machine descriptor is not a JSON object");
		return -1;
	}
	char *rec = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&rec, &len);
	if (!m) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	fprintf(m, "{\"id\": ");
	json_str(m, id);
	const char *rest = descriptor + 1;
	while (*rest == ' ')
		rest++;
	fprintf(m, "%s%s\n", *rest == '}' ? "" : ", ", rest);
	if (fclose(m)) {
		free(rec);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0644);
	int rc = 0;
	if (fd < 0 || write(fd, rec, len) != (ssize_t)len || fsync(fd)) {
		snprintf(err, errlen, "cannot write the machines table %.200s: %s", path, strerror(errno));
		rc = -1;
	}
	if (fd >= 0)
		close(fd);
	free(rec);
	return rc;
}

/* Starts a worker with `threads` threads and waits for its ready line. 0 ok, -1 fatal (message printed),
 * 1 interrupted. */
static int start_worker(run_ctx *x, worker *w, const worker_spec *base, int threads)
{
	worker_spec s = *base;
	s.threads = threads;
	char err[512];
	if (worker_start(w, &s, err, sizeof err)) {
		fprintf(stderr, "abacus: %s\n", err);
		return -1;
	}
	jobj o;
	worker_result r = worker_read(w, &o, STARTUP_TIMEOUT_S, &g_stop, err, sizeof err);
	if (r == WR_INTERRUPTED) {
		worker_stop(w, 0);
		return 1;
	}
	if (r != WR_OK) {
		char last[300], how[80];
		worker_last_err(w, last, sizeof last);
		worker_describe_status(w->status, how, sizeof how);
		worker_stop(w, 0);
		fprintf(stderr, "abacus: the worker did not start (%s)%s%s; try '%s %s --list', and check that %s\n",
		        r == WR_TIMEOUT ? "no ready line within 300 s" : r == WR_DIED ? how : err, *last ? ": " : "", last,
		        s.python, s.script, s.tf_env || (x->o->runtime && x->o->runtime != &profile_runtimes[0])
		        ? "'bash scripts/setup.sh' installed the runtime's virtual environment"
		        : "Debian's python3-torch, python3-torchvision and python3-onnx are installed");
		return -1;
	}
	const char *tv = jobj_get(&o, "torch_version", NULL), *tvv = jobj_get(&o, "torchvision_version", NULL);
	jv_type tt;
	const char *tracker = jobj_get(&o, "tracker", &tt);
	snprintf(x->torch_version, sizeof x->torch_version, "%s", tv ? tv : "");
	snprintf(x->torchvision_version, sizeof x->torchvision_version, "%s", tvv ? tvv : "");
	const char *blas = jobj_get(&o, "blas", NULL);
	snprintf(x->blas, sizeof x->blas, "%s", blas ? blas : "");
	int ok = tracker && !strcmp(tracker, "true");
	/* Every row names its machine (docs/PROTOCOL.md, version 2): a worker that cannot say it measures nothing. */
	const char *mid = jobj_get(&o, "machine", NULL), *rt = jobj_get(&o, "runtime", NULL);
	const char *desc = jobj_get(&o, "machine_descriptor", NULL);
	if (!mid || !*mid || strlen(mid) >= sizeof x->worker_machine || !rt || !*rt || !desc) {
		jobj_free(&o);
		worker_stop(w, 0);
		fprintf(stderr, "abacus: the worker did not say which machine and runtime it runs on (%s is older than "
		        "this abacus?); rows without a machine are not written\n", s.script);
		return -1;
	}
	if (x->o->runtime && strcmp(rt, x->o->runtime->name)) {
		fprintf(stderr, "abacus: --runtime %s, but the worker (%s %s) runs %s; give the runtime's interpreter or "
		        "leave out --python\n", x->o->runtime->name, s.python, s.script, rt);
		jobj_free(&o);
		worker_stop(w, 0);
		return -1;
	}
	/* A TensorFlow worker checks its own instrument (collector/tf_worker.py): refuse to measure when a 256 MiB
	 * tensor did not show in the tracker's live bytes or was not given back. */
	jv_type stt;
	const char *selftest = jobj_get(&o, "tracker_selftest", &stt);
	if (ok && selftest && stt == JV_BOOL && strcmp(selftest, "true")) {
		const char *rise = jobj_get(&o, "tracker_selftest_rise", NULL), *left = jobj_get(&o, "tracker_selftest_left", NULL);
		fprintf(stderr, "abacus: the worker's allocator self-test failed (a 256 MiB tensor raised the tracker's live "
		        "bytes by %s and left %s behind): its memory would not be measured (docs/PROTOCOL.md, runtime %s)\n",
		        rise ? rise : "?", left ? left : "?", rt);
		jobj_free(&o);
		worker_stop(w, 0);
		return -1;
	}
	snprintf(x->worker_machine, sizeof x->worker_machine, "%s", mid);
	snprintf(x->runtime, sizeof x->runtime, "%s", rt);
	if (!x->o->dry_run && machines_table_add(x->machines_path, mid, desc, err, sizeof err)) {
		jobj_free(&o);
		worker_stop(w, 0);
		fprintf(stderr, "abacus: %s\n", err);
		return -1;
	}
	jobj_free(&o);
	if (!ok) {
		worker_stop(w, 0);
		fprintf(stderr, "abacus: the allocator tracker is not active in the worker (LD_PRELOAD=%s); build it with "
		        "'make' or give --tracker\n", s.tracker);
		return -1;
	}
	return 0;
}

/* The configuration as one JSON line for the worker. */
static char *request_line(const run_ctx *x, const config *c, size_t id)
{
	char *line = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&line, &len);
	if (!m)
		return NULL;
	char graph[PATH_MAX + 256];
	snprintf(graph, sizeof graph, "%s/%s", x->graphs_abs, c->graph_file);
	fprintf(m, "{\"id\": %zu, \"network\": ", id);
	json_str(m, c->net->name);
	fprintf(m, ", \"size\": %lld, \"batch\": %lld, \"optimizer\": \"%s\", \"graph\": ", (long long)c->size,
	        (long long)c->batch, c->optimizer);
	json_str(m, graph);
	fprintf(m, ", \"export\": true, \"max_iter_seconds\": %.17g}", x->o->max_iter_s);
	if (fclose(m)) {
		free(line);
		return NULL;
	}
	return line;
}

/* Whether the worker's stderr says it ran out of memory (for workers that die of it). */
static int mentions_memory(const worker *w)
{
	static const char *const words[] = { "bad_alloc", "MemoryError", "Cannot allocate memory", "can't allocate memory",
		                                 "out of memory" };
	for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
		if (strstr(w->err_tail, words[i]))
			return 1;
	return 0;
}

/* Measures one configuration on the worker (starting one if needed) and writes its row.
 * Returns 0, 1 when interrupted, -1 on a fatal error. *w_alive tells whether the worker may be reused. */
/* With --wait-quiet, an `ok` result whose timed iterations shared the machine with more than
 * ABACUS_BUSY_OTHER_LIMIT of other work is measured again (at most BUSY_RETRIES times) instead of written: its time would measure the
 * contention (with two threads, a busy second core makes the median up to 30x slower). */
#define BUSY_RETRIES 2

/* Returns 0 when a row was written, 2 when the result was busy and the configuration must be measured
 * again (only with `may_retry`), 1 when interrupted, -1 on a write error. */
static int measure_one(run_ctx *x, worker *w, int *w_alive, const worker_spec *base, const config *c, size_t id,
                       int may_retry)
{
	if (!*w_alive) {
		int r = start_worker(x, w, base, c->threads);
		if (r)
			return r;
		*w_alive = 1;
		if (strcmp(x->worker_machine, c->machine)) {
			fprintf(stderr, "abacus: the machine changed during the run: %s was %s, a new worker says %s; rerun to "
			        "measure on the new machine\n", c->hw, c->machine, x->worker_machine);
			return -1;
		}
	}
	char *line = request_line(x, c, id);
	if (!line) {
		fprintf(stderr, "abacus: out of memory\n");
		return -1;
	}
	char err[512], text[1024];
	jobj res = { 0 };
	worker_result r = worker_send(w, line) ? WR_DIED : WR_OK;
	free(line);
	if (r == WR_OK)
		r = worker_read(w, &res, (double)x->o->timeout_s, &g_stop, err, sizeof err);
	int rc = 0;
	switch (r) {
	case WR_OK: {
		int64_t rid = -1;
		const char *st = jobj_get(&res, "status", NULL);
		if (jobj_int(&res, "id", &rid) || rid != (int64_t)id || !st ||
		    (strcmp(st, "ok") && strcmp(st, "oom") && strcmp(st, "error") && strcmp(st, "skipped"))) {
			rc = write_row(x, c, NULL, "error", "the worker answered out of turn (protocol error)");
			worker_stop(w, 0);
			*w_alive = 0;
		} else {
			const char *busy = jobj_get(&res, "busy_other", NULL);
			if (may_retry && !strcmp(st, "ok") && busy && strtod(busy, NULL) > ABACUS_BUSY_OTHER_LIMIT) {
				fprintf(stderr, "%sabacus profile: %s %s (batch %lld, %s, %s) was timed on a busy machine "
				        "(busy_other %s): measuring it again\n", isatty(2) ? "\r\033[K" : "", c->net->name,
				        c->shape, (long long)c->batch, c->optimizer, c->hw, busy);
				jobj_free(&res);
				return 2;
			}
			rc = write_row(x, c, &res, NULL, NULL);
			/* After a failure the worker's state is suspect: the next configuration gets a fresh one. */
			if (strcmp(st, "ok") && strcmp(st, "skipped")) {
				worker_stop(w, 5);
				*w_alive = 0;
			}
		}
		jobj_free(&res);
		break;
	}
	case WR_TIMEOUT:
		worker_stop(w, 0);
		*w_alive = 0;
		snprintf(text, sizeof text, "exceeded --timeout %lld s", (long long)x->o->timeout_s);
		rc = write_row(x, c, NULL, "timeout", text);
		break;
	case WR_DIED: {
		char how[80], last[300];
		worker_stop(w, 5);
		*w_alive = 0;
		worker_describe_status(w->status, how, sizeof how);
		worker_last_err(w, last, sizeof last);
		snprintf(text, sizeof text, "worker %s%s%s", how, *last ? ": " : "", last);
		rc = write_row(x, c, NULL, x->o->mem_limit && mentions_memory(w) ? "oom" : "error", text);
		break;
	}
	case WR_BADLINE:
		worker_stop(w, 0);
		*w_alive = 0;
		snprintf(text, sizeof text, "the worker sent a malformed line (%s)", err);
		rc = write_row(x, c, NULL, "error", text);
		break;
	case WR_INTERRUPTED:
		worker_stop(w, 0);
		*w_alive = 0;
		return 1;
	}
	return rc ? -1 : 0;
}

/* Measures `todo` in order. `w` may come in alive (the worker that listed the zoo, with `w_threads` threads):
 * it is used for the first group when the threads match. */
static int run(run_ctx *x, const worker_spec *base, config *todo, size_t n, worker *wp, int w_alive, int w_threads)
{
	const opts *o = x->o;
	int tty = isatty(2);
	worker w = *wp;
	int rc = 0;
	size_t done = 0;
	double t0 = now_monotonic();
	const config *group = NULL; /* the last configuration this worker measured; NULL: none yet */
	limit *limits = NULL;
	size_t n_limits = 0;
	for (size_t i = 0; i < n && !g_stop; i++) {
		const config *c = &todo[i];
		const limit *lim = find_limit(limits, n_limits, c);
		if (lim) {
			char why[160];
			snprintf(why, sizeof why, "batch %lld already %s", (long long)lim->batch,
			         lim->status == 1 ? "ran out of memory" : "exceeded --max-iter-seconds");
			if (write_row(x, c, NULL, "skipped", why)) {
				rc = -1;
				break;
			}
			done++;
			continue;
		}
		if (w_alive && (c->threads != w_threads || (group && (o->fresh || !same_group(group, c))))) {
			worker_stop(&w, 10);
			w_alive = 0;
		}
		if (!w_alive)
			group = NULL;
		x->last_status = -1;
		for (int attempt = 0;; attempt++) {
			if (o->wait_quiet)
				wait_quiet(tty);
			if (g_stop) {
				rc = 1;
				break;
			}
			if (tty)
				progress(done, n, now_monotonic() - t0, c);
			rc = measure_one(x, &w, &w_alive, base, c, i, o->wait_quiet && attempt < BUSY_RETRIES);
			if (rc != 2)
				break;
		}
		if (rc)
			break;
		if (x->last_status == 1 || x->last_status == 4) {
			limit *nl = realloc(limits, (n_limits + 1) * sizeof *nl);
			if (nl) {
				limits = nl;
				limits[n_limits++] = (limit){ c->net, c->size, c->batch, c->optimizer, c->hw, x->last_status };
			}
		}
		w_threads = c->threads;
		group = w_alive ? c : NULL;
		done++;
	}
	free(limits);
	if (w_alive)
		worker_stop(&w, 10);
	if (tty)
		fprintf(stderr, "\r\033[K");
	if (rc < 0)
		return CLI_FAIL;
	if (g_stop || rc > 0) {
		fprintf(stderr, "abacus: interrupted by %s after %zu of %zu configurations; rows so far are in %s, rerun the "
		        "same command to continue\n", g_stop == SIGTERM ? "SIGTERM" : "SIGINT", done, n, o->out);
		return CLI_FAIL;
	}
	if (tty) {
		fprintf(stderr, "abacus profile: %zu configurations in %.0f s (", done, now_monotonic() - t0);
		for (int i = 0, first = 1; i < 5; i++)
			if (x->by_status[i]) {
				fprintf(stderr, "%s%zu %s", first ? "" : ", ", x->by_status[i], statuses[i]);
				first = 0;
			}
		fprintf(stderr, "); %zu rows in %s\n", x->csv.rows, o->out);
	}
	return CLI_OK;
}

/* The worker, the tracker, the interpreter, the repository root and the graphs directory: given, or found from
 * the binary's place in the tree (build/<mode>/abacus: collector/worker.py two levels up, the tracker beside
 * the binary). 0, or -1 with the reason printed. */
static int locate(const opts *o, run_ctx *x, char worker_abs[PATH_MAX], char tracker_abs[PATH_MAX])
{
	char dir[PATH_MAX], worker_path[PATH_MAX], tracker_path[PATH_MAX];
	/* Where the worker and the tracker are: given, or found from the binary's place in the tree
	 * (build/<mode>/abacus → collector/worker.py two levels up; the tracker beside the binary). */
	int have_dir = cli_exe_dir(dir, sizeof dir) == 0;
	const char *module = o->runtime ? o->runtime->worker : profile_runtimes[0].worker;
	if (o->worker) {
		snprintf(worker_path, sizeof worker_path, "%s", o->worker);
	} else {
		worker_path[0] = '\0';
		if (have_dir)
			snprintf(worker_path, sizeof worker_path, "%.*s/../../%s", PATH_MAX - 64, dir, module);
		if (!have_dir || !file_exists(worker_path))
			snprintf(worker_path, sizeof worker_path, "%s", module);
	}
	if (o->tracker)
		snprintf(tracker_path, sizeof tracker_path, "%s", o->tracker);
	else
		snprintf(tracker_path, sizeof tracker_path, "%.*s/libabacus_tracker.so", PATH_MAX - 40, have_dir ? dir : ".");
	if (!realpath(worker_path, worker_abs)) {
		fprintf(stderr, "abacus: cannot find the collector's worker (%s); give --worker collector/worker.py\n", worker_path);
		return -1;
	}
	if (!realpath(tracker_path, tracker_abs)) {
		fprintf(stderr, "abacus: cannot find the allocator tracker (%s); build it with 'make' or give --tracker\n",
		        tracker_path);
		return -1;
	}
	cli_worker_root(x->repo_root, sizeof x->repo_root, worker_abs);
	/* The interpreter: --python, else the runtime's (Debian's for the default, else its virtual environment
	 * inside the repository, which scripts/setup.sh makes). */
	if (o->python)
		snprintf(x->python, sizeof x->python, "%s", o->python);
	else if (!o->runtime || o->runtime == &profile_runtimes[0])
		snprintf(x->python, sizeof x->python, "/usr/bin/python3");
	else if (snprintf(x->python, sizeof x->python, "%s/.runtimes/%s/bin/python", x->repo_root, o->runtime->name) >=
	         (int)sizeof x->python) {
		fprintf(stderr, "abacus: the repository's path is too long\n");
		return -1;
	}
	if (access(x->python, X_OK)) {
		if (o->runtime && !o->python && o->runtime != &profile_runtimes[0])
			fprintf(stderr, "abacus: runtime %s is not installed (%s is missing); run 'bash scripts/setup.sh', which "
			        "makes .runtimes/%s from collector/runtimes/%s.txt (or give --python)\n", o->runtime->name,
			        x->python, o->runtime->name, o->runtime->name);
		else
			fprintf(stderr, "abacus: cannot execute %s; install Debian's python3 with python3-torch (or give --python)\n",
			        x->python);
		return -1;
	}
	if (o->dry_run && !realpath(o->graphs, x->graphs_abs)) {
		snprintf(x->graphs_abs, sizeof x->graphs_abs, "%s", o->graphs);
	} else if (!o->dry_run && (mkdir_p(o->graphs) || !realpath(o->graphs, x->graphs_abs))) {
		fprintf(stderr, "abacus: cannot create the graphs directory %s: %s\n", o->graphs, strerror(errno));
		return -1;
	}
	return 0;
}

/* SIGINT and SIGTERM stop the run between rows (on_signal); SIGPIPE is ignored, and so is SIGXFSZ: a
 * file-size limit (ulimit -f) then fails write() with EFBIG, reported like a full disk, instead of killing
 * the collector in the middle of a row. */
static void install_signals(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal; /* no SA_RESTART: poll() and sleeps return early */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
	sigaction(SIGXFSZ, &sa, NULL);
}

/* The machine id of each hardware id: the first worker (`w`, already started) said it for its thread count, a
 * short-lived worker says it for each other one (the id covers the threads and what only the framework knows,
 * e.g. its ISA). 0, or -1 after saying why. */
static int machine_ids(run_ctx *x, const worker_spec *base, const opts *o)
{
	snprintf(x->machine[0], sizeof x->machine[0], "%s", x->worker_machine);
	for (size_t h = 1; h < o->n_hw; h++) {
		size_t same = 0;
		while (same < h && o->threads[same] != o->threads[h])
			same++;
		if (same < h) {
			snprintf(x->machine[h], sizeof x->machine[h], "%s", x->machine[same]);
			continue;
		}
		worker probe;
		int sr = start_worker(x, &probe, base, o->threads[h]);
		if (sr) {
			if (sr > 0)
				fprintf(stderr, "abacus: interrupted\n");
			return -1;
		}
		worker_stop(&probe, 10);
		snprintf(x->machine[h], sizeof x->machine[h], "%s", x->worker_machine);
	}
	return 0;
}

/* The networks `models` names ("all", or a comma-separated list), in the order asked for, each once; *nets is
 * the caller's to free. CLI_OK, CLI_USAGE for a name the zoo lacks, CLI_FAIL when out of memory. */
static int select_nets(const zoo_net ***nets, size_t *n_nets, const zoo_net *zoo, size_t n_zoo, const char *models,
                       const char *module)
{
	*n_nets = 0;
	if (!(*nets = calloc(n_zoo ? n_zoo : 1, sizeof **nets))) {
		fprintf(stderr, "abacus: out of memory\n");
		return CLI_FAIL;
	}
	if (!strcmp(models, "all")) {
		for (size_t i = 0; i < n_zoo; i++)
			(*nets)[(*n_nets)++] = &zoo[i];
		return CLI_OK;
	}
	char *list = strdup(models);
	if (!list) {
		fprintf(stderr, "abacus: out of memory\n");
		return CLI_FAIL;
	}
	int rc = CLI_OK;
	for (char *tok = strtok(list, ","); tok && rc == CLI_OK; tok = strtok(NULL, ",")) {
		size_t i = 0, k = 0;
		while (i < n_zoo && strcmp(zoo[i].name, tok))
			i++;
		if (i == n_zoo) {
			rc = cli_usage("profile", "'%s' is not in the zoo; 'python3 -m %s --list' lists it", tok, module);
			break;
		}
		while (k < *n_nets && (*nets)[k] != &zoo[i])
			k++;
		if (k == *n_nets && *n_nets < n_zoo)
			(*nets)[(*n_nets)++] = &zoo[i];
	}
	free(list);
	return rc;
}

int cmd_profile(int argc, char **argv)
{
	opts o;
	run_ctx x;
	zoo_net *zoo = NULL;
	size_t n_zoo = 0, n_cfg = 0, n_nets = 0;
	config *cfg = NULL;
	const zoo_net **nets = NULL;
	char err[1024];
	int rc = CLI_FAIL;
	FILE *log = NULL;
	worker w;
	int w_alive = 0;

	int pr = parse_opts(&o, argc, argv);
	if (pr)
		return pr > 0 ? CLI_OK : CLI_USAGE;
	memset(&x, 0, sizeof x);
	x.o = &o;
	x.csv.fd = -1;

	char worker_abs[PATH_MAX], tracker_abs[PATH_MAX];
	if (locate(&o, &x, worker_abs, tracker_abs))
		return CLI_FAIL;
	cpu_model(x.cpu, sizeof x.cpu);
	snprintf(x.cores, sizeof x.cores, "%ld", sysconf(_SC_NPROCESSORS_ONLN));

	install_signals();

	if (o.log && !(log = fopen(o.log, "a"))) {
		fprintf(stderr, "abacus: cannot open %s: %s\n", o.log, strerror(errno));
		return CLI_FAIL;
	}
	/* What the output already has (first: a wrong file is refused before anything slow happens). */
	if (o.dry_run ? csv_read_keys(&x.csv, o.out, err, sizeof err) : csv_open(&x.csv, o.out, err, sizeof err)) {
		fprintf(stderr, "abacus: %s\n", err);
		goto out;
	}
	if (x.csv.repaired_bytes)
		fprintf(stderr, "abacus profile: %s: removed an incomplete last line (%zu bytes) left by an interrupted run; "
		        "that configuration is measured again\n", o.out, x.csv.repaired_bytes);
	if (o.machines) {
		snprintf(x.machines_path, sizeof x.machines_path, "%s", o.machines);
	} else {
		const char *slash = strrchr(o.out, '/');
		snprintf(x.machines_path, sizeof x.machines_path, "%.*smachines.jsonl", slash ? (int)(slash - o.out + 1) : 0,
		         o.out);
	}
	worker_spec base = { x.python, worker_abs, x.repo_root, tracker_abs, 1, (uint64_t)o.mem_limit, log, o.isa_cap,
		                 o.runtime && o.runtime->tf };
	/* The first worker also lists the zoo, so a run pays for one interpreter start less. */
	int sr = start_worker(&x, &w, &base, o.threads[0]);
	if (sr) {
		if (sr > 0)
			fprintf(stderr, "abacus: interrupted\n");
		goto out;
	}
	w_alive = 1;
	if (machine_ids(&x, &base, &o))
		goto out;
	if (load_zoo(&zoo, &n_zoo, &w, err, sizeof err)) {
		fprintf(stderr, "abacus: %s\n", err);
		goto out;
	}

	if ((rc = select_nets(&nets, &n_nets, zoo, n_zoo, o.models,
	                      o.runtime && o.runtime->tf ? "collector.tf_worker" : "collector.worker")) != CLI_OK)
		goto out;
	rc = CLI_FAIL;
	size_t left_out = 0;
	for (size_t i = 0; i < n_nets; i++)
		left_out += nets[i]->tokens ? !o.seq_given && !o.seq_all : !o.size_given && !o.size_all;
	if (left_out)
		fprintf(stderr, "abacus profile: note: %zu network(s) of the other input kind left out (give --%s too)\n",
		        left_out, o.size_given ? "seq" : "size");
	if (expand(&cfg, &n_cfg, &o, nets, n_nets))
		goto nomem;

	size_t n_todo = 0;
	for (size_t i = 0; i < n_cfg; i++)
		cfg[i].machine = x.machine[cfg[i].hw_index];
	for (size_t i = 0; i < n_cfg; i++) {
		csv_key k = key_of(&cfg[i]);
		if (!csv_has(&x.csv, &k))
			cfg[n_todo++] = cfg[i];
	}
	if (o.dry_run) {
		printf("network,input_shape,batch,optimizer,hw,repeat,graph,machine,runtime\n");
		for (size_t i = 0; i < n_todo; i++)
			printf("%s,%s,%lld,%s,%s,%lld,%s,%s,%s\n", cfg[i].net->name, cfg[i].shape, (long long)cfg[i].batch,
			       cfg[i].optimizer, cfg[i].hw, (long long)cfg[i].repeat, cfg[i].graph_file, cfg[i].machine, x.runtime);
		fprintf(stderr, "abacus profile: %zu configurations in the grid, %zu already in %s, %zu to measure\n", n_cfg,
		        n_cfg - n_todo, o.out, n_todo);
		rc = CLI_OK;
		goto out;
	}
	if (isatty(2))
		fprintf(stderr, "abacus profile: %zu configurations in the grid, %zu already in %s, %zu to measure\n", n_cfg,
		        n_cfg - n_todo, o.out, n_todo);
	rc = run(&x, &base, cfg, n_todo, &w, w_alive, o.threads[0]);
	w_alive = 0; /* run() stops it */
	goto out;
nomem:
	fprintf(stderr, "abacus: out of memory\n");
	rc = CLI_FAIL;
out:
	if (w_alive)
		worker_stop(&w, 10);
	csv_close(&x.csv);
	if (log)
		fclose(log);
	free(cfg);
	free(nets);
	zoo_free(zoo, n_zoo);
	return rc;
}
