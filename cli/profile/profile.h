/*
 * profile.h — the pieces of `abacus profile` (cmd_profile.c), the collector's supervisor, which has this
 * folder to itself: the measurement CSV (csv.c), the one-line JSON objects the Python workers speak
 * (json.c) and the worker processes (worker.c). Process spawning lives here in the CLI, never in the
 * library.
 */
#ifndef ABACUS_PROFILE_H
#define ABACUS_PROFILE_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* ---- JSON lines ---------------------------------------------------------------------------------- */

/* One flat JSON object. Strings are unescaped; numbers, true/false/null, arrays and nested objects keep
 * their raw text (so numbers go to the CSV exactly as the worker wrote them). */
typedef enum { JV_STRING, JV_NUMBER, JV_BOOL, JV_NULL, JV_RAW } jv_type;
typedef struct jfield {
	char *key;
	char *val;
	jv_type type;
} jfield;
typedef struct jobj {
	jfield *f;
	size_t n;
} jobj;

/* Parses one object from `text` (trailing whitespace allowed). 0 or -1 with a message in `err`. */
int jobj_parse(jobj *o, const char *text, char *err, size_t errlen);
void jobj_free(jobj *o);
/* The value of `key`, or NULL; with `type` non-NULL also its type. */
const char *jobj_get(const jobj *o, const char *key, jv_type *type);
/* Integer value of `key` (a JSON number without fraction); -1 if missing or not an integer. */
int jobj_int(const jobj *o, const char *key, int64_t *out);
/* Parses a raw JSON array of integers ("[32, 48]"); returns the count or -1; at most `cap` kept. */
int json_int_array(const char *raw, int64_t *out, size_t cap);

/* ---- the measurement CSV ------------------------------------------------------------------------- */

enum {
	COL_NETWORK, COL_GRAPH, COL_INPUT_SHAPE, COL_BATCH, COL_OPTIMIZER, COL_HW, COL_THREADS, COL_REPEAT,
	COL_STATUS, COL_ERROR, COL_TIME_S, COL_TIME_MIN_S, COL_TIME_P90_S, COL_TIME_CV, COL_ITERATIONS,
	COL_CALIB_S, COL_MEMORY_BYTES, COL_PERSISTENT_BYTES, COL_PARAMS, COL_TORCH_VERSION,
	COL_TORCHVISION_VERSION, COL_CPU_MODEL, COL_CORES, COL_PROTOCOL, COL_TIMESTAMP, COL_BUSY_OTHER, COL_BLAS,
	COL_MACHINE, COL_RUNTIME, N_COLS
};
extern const char *const csv_columns[N_COLS];

/* The key that makes a row unique: network, input shape, batch, optimizer, hardware id, repeat index, machine. */
typedef struct csv_key {
	const char *network, *input_shape, *optimizer, *hw, *machine;
	int64_t batch, repeat;
} csv_key;

typedef struct csv_out {
	int fd;
	char *path;  /* what was opened: a row is written only while `path` still names that file (csv.c) */
	char **keys; /* sorted canonical key strings of the rows present */
	size_t n_keys, cap_keys;
	size_t rows;          /* data rows already in the file */
	size_t repaired_bytes; /* bytes of an incomplete last line removed at open */
} csv_out;

/* Opens (creating if needed) `path` for appending rows: takes an exclusive lock, checks the header
 * (refusing a different one), removes an incomplete last record left by a killed run, and loads the keys of
 * the rows present. Returns 0, or -1 with a message in `err`. */
int csv_open(csv_out *c, const char *path, char *err, size_t errlen);
/* Only reads the keys (a missing file has none): no lock, no repair, no header written. */
int csv_read_keys(csv_out *c, const char *path, char *err, size_t errlen);
void csv_close(csv_out *c);
int csv_has(const csv_out *c, const csv_key *k);
/* Appends one row (N_COLS fields, NULL = empty), quoting per RFC 4180, then fsync; adds its key. */
int csv_append(csv_out *c, const char *const fields[N_COLS], char *err, size_t errlen);

/* ---- worker processes ---------------------------------------------------------------------------- */

typedef struct worker_spec {
	const char *python;  /* interpreter (Debian's /usr/bin/python3) */
	const char *script;  /* collector/worker.py */
	const char *root;    /* the repository root above it (cli_worker_root): the workers' PYTHONPATH */
	const char *tracker; /* absolute path of libabacus_tracker.so, preloaded */
	int threads;
	uint64_t mem_limit;  /* RLIMIT_AS in bytes; 0 = none */
	FILE *log;           /* worker stderr is appended here when non-NULL */
	const struct cli_isa_cap *isa_cap; /* NULL, or the emulated older CPU of docs/PROTOCOL.md (cli.h) */
	int tf_env;          /* TensorFlow's protocol environment (TF_NUM_INTRAOP_THREADS=T, ...; worker.c) */
} worker_spec;

typedef struct worker {
	pid_t pid;
	int in_fd, out_fd, err_fd;
	char *out;            /* stdout bytes not yet consumed */
	size_t out_len, out_cap;
	char err_tail[2048];  /* the last bytes of stderr, for error rows */
	size_t err_len;
	FILE *log;
	int status;           /* wait status once reaped */
	int reaped;
} worker;

typedef enum {
	WR_OK,          /* a line was read into the object */
	WR_TIMEOUT,     /* the deadline passed (the worker is still running) */
	WR_DIED,        /* the worker exited or was killed; w->status holds the wait status */
	WR_INTERRUPTED, /* *stop became non-zero */
	WR_BADLINE      /* a line that is not a JSON object */
} worker_result;

/* Starts a worker (fork + exec) with the protocol's environment; 0 or -1 with a message. */
int worker_start(worker *w, const worker_spec *s, char *err, size_t errlen);
/* Writes one line (a newline is added). 0 or -1 (the worker has gone). */
int worker_send(worker *w, const char *line);
/* Waits up to `timeout_s` for the next JSON line on the worker's stdout. */
worker_result worker_read(worker *w, jobj *o, double timeout_s, volatile sig_atomic_t *stop, char *err, size_t errlen);
/* Closes stdin and lets the worker exit (up to `grace_s`), then kills its process group. Reaps it. */
void worker_stop(worker *w, double grace_s);
/* The last non-empty line of the worker's stderr, or "" (for error texts). */
void worker_last_err(const worker *w, char *buf, size_t len);
/* "killed by signal 9 (SIGKILL)" / "exited with status 1" */
void worker_describe_status(int status, char *buf, size_t len);

double now_monotonic(void);

#endif
