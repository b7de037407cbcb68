/*
 * cli.h — shared pieces of the command-line tool. The CLI only calls the public API (abacus.h); these
 * helpers parse options, print errors in the house format and write JSON safely.
 */
#ifndef ABACUS_CLI_H
#define ABACUS_CLI_H

#include <stdio.h>

#include "abacus.h"
#include "opt.h"

/* Exit codes. */
enum { CLI_OK = 0, CLI_FAIL = 1, CLI_USAGE = 2 };

typedef enum { FMT_TABLE, FMT_CSV, FMT_JSON } cli_format;

/* Prints "abacus: <msg> (<where>)" to stderr and returns CLI_FAIL. */
int cli_fail(const abacus_error *err);
/* Loads the machine profiles named in `list`: files, or directories whose *.machine files are read (sorted),
 * comma-separated. CLI_OK, or an error printed and its exit code. Free with cli_free_machines. */
int cli_load_machines(abacus_machine ***out, size_t *n, const char *list);
void cli_free_machines(abacus_machine **ms, size_t n);
/* Writes `len` bytes to `path` through `path`.tmp and rename, so that a failed write leaves the old file
 * (or none), never half of one. CLI_OK, or CLI_FAIL with the reason printed. */
int cli_write_file(const char *path, const char *data, size_t len);

/* The emulated older CPUs of docs/PROTOCOL.md (`--isa-cap`): the variables each sets before the interpreter
 * starts. collector/machine.py knows the same caps by these values. */
typedef struct cli_isa_cap {
	const char *name;
	const char *env[3][2];
} cli_isa_cap;
/* `v` is none, sse41 or avx2: 0 and *out the cap (NULL for none); -1 for anything else. */
int cli_parse_isa_cap(const cli_isa_cap **out, const char *v);
/* The same as an option table's parser (opt.h) into a const cli_isa_cap *. */
int cli_isa_cap_opt(void *target, const char *v, const char *cmd);
/* Prints "abacus <cmd>: <msg>" and a hint to run --help; returns CLI_USAGE. */
int cli_usage(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

int cli_parse_format(cli_format *out, const char *text, int allow_csv);
int cli_parse_i64(int64_t *out, const char *text, int64_t min, int64_t max);
/* A byte count, as every command reads one (plan --mem, profile --mem-limit): a number with an optional
 * unit, case-insensitive, meaning what it says: KB, MB, GB, TB are SI (10^3 ...), KiB, MiB, GiB, TiB are
 * IEC (2^10 ...), and a bare K, M, G, T is IEC too (as `sort -h` and ulimit read them); "1000000" is
 * bytes. 0 and *out, or -1 (not positive, unknown unit, or beyond int64). */
int cli_parse_bytes(int64_t *out, const char *text);
/* The help lines that say so (a byte-size option's help ends with them). */
#define CLI_BYTES_UNITS                                                          \
	"units: KB MB GB TB are SI (2.5GB = 2.5e9 bytes); KiB MiB GiB TiB and a bare\n" \
	"K M G T are binary (2GiB = 2G = 2 x 2^30 bytes)"

/* The options that every graph-reading command shares. */
typedef struct cli_graph_opts {
	const char *file;
	abacus_config cfg;
	abacus_input_shape inputs[16];
	size_t n_inputs;
	cli_format fmt;
	const char *model, *hw, *svg;  /* --model, --hw, --svg where the command accepts them */
	cli_args files;                /* the positional arguments, while parsing */
	int64_t threads_opt;           /* --threads (0: not given) */
	const char *isa_opt;           /* --isa (NULL: not given) */
	char model_path[4096];         /* the bundled predictor's path when --model is not given */
} cli_graph_opts;

/* Parsers of the graph commands' shared options, for their option tables (opt.h): --input NAME=DIMS into a
 * cli_graph_opts, --optimizer into an abacus_optimizer, --runtime into a const char *, --format into a
 * cli_format (table|json, or table|csv|json). */
int cli_input_opt(void *target, const char *v, const char *cmd);
int cli_optimizer_opt(void *target, const char *v, const char *cmd);
int cli_runtime_opt(void *target, const char *v, const char *cmd);
/* The whole file, NUL-terminated, in *buf (the caller frees it); -1 with errno set when it cannot be read. */
int cli_read_file(const char *path, char **buf, size_t *len);
/* A families file (network<TAB>family per line, '#' comments; scripts/families.py writes data/families.tsv):
 * its bytes, and pairs[2i] = network, pairs[2i + 1] = family pointing into them. */
typedef struct cli_families {
	char *buf;
	char **pairs;
	size_t n;
} cli_families;
int cli_read_families(cli_families *t, const char *path);
void cli_free_families(cli_families *t);
int cli_format_opt(void *target, const char *v, const char *cmd);
int cli_format_csv_opt(void *target, const char *v, const char *cmd);
/* The options every graph command shares, as entries of its table: the graph file, --batch, --input,
 * --optimizer, --runtime, --strict. A command that chooses the batch itself (plan) lists the graph file,
 * its own --batch entry and CLI_GRAPH_CONFIG_SPECS instead. */
#define CLI_GRAPH_OPT_SPECS(o) CLI_GRAPH_FILE_SPEC(o), CLI_GRAPH_BATCH_SPEC(o), CLI_GRAPH_CONFIG_SPECS(o)
#define CLI_GRAPH_FILE_SPEC(o)                                                                                  \
	CLI_OPT(CLI_OPT_ARGS, "GRAPH", NULL, &(o).files, "an ONNX graph (weights may be stripped: dims and types are enough)", \
	        .flags = CLI_OPT_REQUIRED | CLI_OPT_SINGLE)
#define CLI_GRAPH_BATCH_SPEC(o)                                                                                 \
	CLI_OPT(CLI_OPT_I64, "--batch", "N", &(o).cfg.batch, "value of every dynamic batch dimension (default 1)", \
	        .min = 1, .max = 1099511627776.0)
#define CLI_GRAPH_CONFIG_SPECS(o)                                                                               \
	CLI_OPT(CLI_OPT_FUNC, "--input", "NAME=DIMS", &(o),                                                         \
	        "shape of a graph input, e.g. input=1x3x96x96 (NAME= may be omitted for the first)",                 \
	        .func = cli_input_opt),                                                                             \
	CLI_OPT(CLI_OPT_FUNC, "--optimizer", "sgd|adam", &(o).cfg.optimizer,                                        \
	        "sgd (SGD with momentum, default) or adam: sets the optimizer state in memory", .func = cli_optimizer_opt), \
	CLI_OPT(CLI_OPT_FUNC, "--runtime", "NAME", &(o).cfg.runtime,                                                \
	        "the runtime whose kernels and training step are priced: torch-1.13.1 (default),\n"               \
	        "torch-2.15.0 or tf-2.21.0", .func = cli_runtime_opt),                                              \
	CLI_OPT(CLI_OPT_I64, "--threads", "N", &(o).threads_opt,                                                    \
	        "intra-op threads of the machine (default: --hw's or --machine's, else 1)", .min = 1, .max = 4096),  \
	CLI_OPT(CLI_OPT_STRING, "--isa", "NAME", &(o).isa_opt,                                                      \
	        "widest vector ISA its kernels may use: avx512, avx2, sse41, sse (default: --hw's or\n"           \
	        "--machine's; else an AVX machine): without AVX, convolutions' backward holds more memory"),       \
	CLI_OPT(CLI_OPT_SWITCH, "--strict", NULL, &(o).cfg.strict,                                                  \
	        "fail on ops that are not in the op table instead of counting them as 'other'")
/* Parses `cmd GRAPH [options]` with `specs` (which include CLI_GRAPH_OPT_SPECS(*o)). Returns -1 when the
 * command should go on, else the exit code to return (CLI_OK after --help, CLI_USAGE after a usage error,
 * already printed). A table with --model and no --model given: o->model is the bundled predictor. */
/* The machine a configuration runs on, where its memory depends on it: threads and ISA from a hardware or
 * machine id (abacus_config_hw; NULL: none), then --threads and --isa where given. */
void cli_graph_machine(cli_graph_opts *o, const char *hw);
int cli_graph_parse(cli_graph_opts *o, const cli_opt_spec *specs, const char *cmd, const char *description, int argc,
                    char **argv);
/* Loads o->file and analyses it at o->cfg; on failure prints the error, frees what it made and returns
 * CLI_FAIL. */
int cli_analyze(abacus_graph **g, abacus_analysis **a, const cli_graph_opts *o);
void cli_graph_opts_init(cli_graph_opts *o);


void json_str(FILE *f, const char *s);
void fmt_dims(char *buf, size_t len, int rank, const int64_t *dims);
/* 1234567 → "1.23M" style (for tables only; JSON and CSV carry exact integers). */
void fmt_si(char *buf, size_t len, double v);
void fmt_bytes(char *buf, size_t len, double v);
/* A duration in the unit people read it in: 850 µs, 34.7 ms, 6.26 s, 41 min, 2.9 h, 3.2 days (3 digits). */
void fmt_duration(char *buf, size_t len, double seconds);
/* The printf field width that shows `s` in `w` columns: w plus its UTF-8 continuation bytes (µ is two bytes,
 * one column). */
int cli_width(const char *s, int w);

/* Prints the k layers with the largest share of compute (or of `time_s`, attributed by FLOPs, when it is
 * positive) and of saved activation memory: a table, or two JSON members ("top_time_layers",
 * "top_activation_layers") without surrounding braces. */
/* The top k layers by time and by saved activations. shares (NULL: FLOPs) and step_share come from
 * abacus_predictor_layer_shares; time_s > 0 turns shares into seconds. */
void cli_top_layers(const abacus_analysis *a, size_t k, double time_s, const double *shares, double step_share,
                    int json);
/* The step of the simulated iteration where memory peaks (the first of equal peaks; its index in *at), or NULL
 * without steps; its label ("backward of /layer1/Conv (Conv)", "the loss", "the optimizer step"); and the JSON
 * member "peak_step": {"index": ..., "phase": ..., "layer": name or null}, without a trailing comma. */
const abacus_memory_step *cli_peak_step(const abacus_analysis *a, size_t *at);
/* The layer of a forward or backward step; NULL for the loss and the optimizer step. */
const abacus_layer *cli_step_layer(const abacus_analysis *a, const abacus_memory_step *e);
void cli_step_label(char *buf, size_t cap, const abacus_analysis *a, const abacus_memory_step *e);
void cli_json_peak_step(FILE *f, const abacus_analysis *a);

/* The progress line of a long library call (progress.c): cli_progress_attach points o->progress at it when
 * stderr is a terminal and leaves o alone otherwise; cli_progress_clear erases the line once the call has
 * returned (before its results or error are printed). `what` names the command ("eval"), `unit` the unit of
 * work the library counts ("fold", "fit"). */
typedef struct cli_progress {
	const char *what, *unit;
	double t0;
	int drawn;
} cli_progress;
void cli_progress_attach(cli_progress *p, abacus_train_opts *o, const char *what, const char *unit);
void cli_progress_clear(cli_progress *p);
/* The line for `done` of `total` units after `elapsed` seconds (for the tests): "eval: fold 4/10, 41.2 s
 * elapsed, about 1.33 min left". */
void cli_progress_line(char *buf, size_t len, const char *what, const char *unit, size_t done, size_t total,
                       double elapsed);

/* The directory of the running binary (e.g. .../build/release) into buf; 0, or -1 when unknown. */
int cli_exe_dir(char *buf, size_t len);
/* buf = "<directory of the running abacus>/<rel>"; 0 when that file is readable. */
int cli_beside_exe(char *buf, size_t len, const char *rel);
/* The repository root of a collector worker script (collector/worker.py): the directory two levels above
 * it, the one PYTHONPATH must hold for the collector package ("." or ".." for relative paths without
 * enough directories). */
void cli_worker_root(char *buf, size_t len, const char *worker);
/* The bundled predictor: $ABACUS_MODEL, else data/predictor.abacus of the build tree, else the installed one. */
int cli_default_model(char *buf, size_t len);
/* Loads each CSV of `files` (train, eval, adapt): CLI_OK and *out (free each with abacus_dataset_free, then
 * the array with free), or the first error printed and its exit code. */
int cli_load_datasets(abacus_dataset ***out, size_t *n, char **files, size_t n_files);
/* The training options train and eval share, as entries of their option tables (opt.h). */
#define CLI_TRAIN_OPT_SPECS(o)                                                                                \
	CLI_OPT(CLI_OPT_U64, "--seed", "N", &(o).seed,                                                            \
	        "shuffling and sampling seed (default 1): the same data and seed give the same bundle", .min = 0, \
	        .max = 9.3e18),                                                                                   \
	CLI_OPT(CLI_OPT_INT, "--rounds", "N", &(o).rounds, "boosting rounds per target (default 400)", .min = 1,  \
	        .max = 100000),                                                                                   \
	CLI_OPT(CLI_OPT_INT, "--depth", "N", &(o).max_depth, "tree depth (default 6)", .min = 1, .max = 20),      \
	CLI_OPT(CLI_OPT_DOUBLE, "--eta", "X", &(o).eta, "learning rate (default 0.05)", .min = 0, .max = 1),      \
	CLI_OPT(CLI_OPT_STRING, "--root", "DIR", &(o).graph_root,                                                 \
	        "the directory the rows' graph paths are relative to (default: the current one)")

int cli_main(int argc, char **argv);
int cmd_inspect(int argc, char **argv);
int cmd_features(int argc, char **argv);
int cmd_predict(int argc, char **argv);
int cmd_train(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);
int cmd_adapt(int argc, char **argv);
int cmd_profile(int argc, char **argv);

#endif
