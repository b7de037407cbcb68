/*
 * cmd_calibrate.c — `abacus calibrate`: times the protocol's reference workload (docs/PROTOCOL.md, "Machine
 * speed index") on this machine now, with the threads of a hardware id, and compares it with the speed
 * index of the predictor's training data. Pass the result to `predict --calib` to scale time predictions
 * to how fast this machine is today. With --out FILE it measures the whole machine profile instead
 * (collector/machine_profile.py: one rate per kind of work the time model prices, about a minute) and
 * writes it for `abacus predict --machine FILE` and `abacus eval --protocol lomachine`.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

static const char description[] =
	"Times the reference workload of docs/PROTOCOL.md (20 × a 256×256 matrix product and one convolution, median\n"
	"of 7 runs, the median of three such medians) with the threads of --hw (cpu1: 1, cpu2: 2) and the\n"
	"protocol's environment, and compares it with the median speed index of the predictor's training data\n"
	"for that hardware id. Give the result to 'abacus predict --calib SECONDS'.\n"
	"\n"
	"With --out FILE: measures this machine's profile (docs/MACHINES.md): dense, im2col and depthwise\n"
	"convolutions, square, thin and batched matrix products, element-wise traffic in cache and from\n"
	"memory, the fixed cost of a kernel and of a view, weight streaming, the optimizer step's traffic and\n"
	"tensors, a recurrent step, batch-norm rows, costly activations and the reference workload, each\n"
	"forward + backward through PyTorch, --runs passes (default 5, about a minute), and writes the median\n"
	"rates with their spread. The file names the machine id (collector/machine.py) it was measured on;\n"
	"when FILE is a directory the profile is written to FILE/<machine id>.machine.\n";

/* collector/worker.py of the source tree the binary was built in (build/<mode>/abacus → ../../). */
static int find_worker(char *buf, size_t len)
{
	if (cli_beside_exe(buf, len, "../../collector/worker.py") == 0)
		return 0;
	snprintf(buf, len, "collector/worker.py");
	return access(buf, R_OK) == 0 ? 0 : -1;
}

/* The environment variables of an ISA cap (docs/PROTOCOL.md, "Emulated older CPUs"), as `env` arguments. */
static void cap_env(char *buf, size_t len, const cli_isa_cap *cap)
{
	buf[0] = '\0';
	for (int i = 0; cap && i < 3; i++)
		snprintf(buf + strlen(buf), len - strlen(buf), "%s=%s ", cap->env[i][0], cap->env[i][1]);
}

/* Runs the worker's --profile, checks what it wrote with the library, writes it to `out` (through a
 * temporary file and rename, so a failed run leaves no half profile) and prints the rates. */
static int write_profile(const char *cmd, const char *out, cli_format fmt)
{
	FILE *f = popen(cmd, "r");
	if (!f) {
		fprintf(stderr, "abacus: cannot run the profile's microbenchmarks: %s\n", strerror(errno));
		return CLI_FAIL;
	}
	char *text = NULL;
	size_t len = 0, cap = 0;
	char chunk[4096];
	size_t n;
	while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
		if (len + n + 1 > cap) {
			cap = (len + n + 1) * 2;
			char *t = realloc(text, cap);
			if (!t) {
				free(text);
				pclose(f);
				fprintf(stderr, "abacus: out of memory\n");
				return CLI_FAIL;
			}
			text = t;
		}
		memcpy(text + len, chunk, n);
		len += n;
	}
	int st = pclose(f);
	abacus_machine *m = NULL;
	abacus_error err;
	if (st != 0 || !text) {
		free(text);
		fprintf(stderr, "abacus: the profile's microbenchmarks failed (exit status %d); run '%s' to see why\n", st, cmd);
		return CLI_FAIL;
	}
	if (abacus_machine_load(&m, text, len, &err)) {
		free(text);
		fprintf(stderr, "abacus: the worker wrote a profile this abacus cannot read: %s\n", err.msg);
		return CLI_FAIL;
	}
	/* A directory gets the file named after the machine: DIR/<id>.machine. */
	char path[PATH_MAX + 128];
	struct stat sb;
	if (stat(out, &sb) == 0 && S_ISDIR(sb.st_mode))
		snprintf(path, sizeof path, "%s/%s.machine", out, abacus_machine_id(m));
	else
		snprintf(path, sizeof path, "%s", out);
	out = path;
	int wr = cli_write_file(out, text, len);
	free(text);
	if (wr != CLI_OK) {
		abacus_machine_free(m);
		return wr;
	}
	if (fmt == FMT_JSON) {
		printf("{\"machine\": \"%s\", \"threads\": %d, \"runtime\": \"%s\", \"file\": ", abacus_machine_id(m),
		       abacus_machine_threads(m), abacus_machine_runtime(m));
		json_str(stdout, out);
		printf(", \"seconds\": %.1f, \"rates\": {", abacus_machine_seconds(m));
		for (size_t i = 0; i < abacus_machine_n_rates(); i++) {
			double sp, v = abacus_machine_rate(m, abacus_machine_rate_name(i), &sp);
			printf("%s\"%s\": {\"seconds\": %.6g, \"spread\": %.4f}", i ? ", " : "", abacus_machine_rate_name(i), v, sp);
		}
		printf("}}\n");
	} else {
		printf("machine %s (%d thread%s, %s): profile written to %s in %.0f s\n", abacus_machine_id(m),
		       abacus_machine_threads(m), abacus_machine_threads(m) > 1 ? "s" : "", abacus_machine_runtime(m), out,
		       abacus_machine_seconds(m));
		printf("  %-18s %14s %8s\n", "rate", "s per unit", "spread");
		for (size_t i = 0; i < abacus_machine_n_rates(); i++) {
			double sp, v = abacus_machine_rate(m, abacus_machine_rate_name(i), &sp);
			printf("  %-18s %14.4e %7.1f%%\n", abacus_machine_rate_name(i), v, 100 * sp);
		}
	}
	abacus_machine_free(m);
	return CLI_OK;
}

int cmd_calibrate(int argc, char **argv)
{
	const char *hw = "cpu1", *model = NULL, *python = "/usr/bin/python3", *worker = NULL;
	const char *out = NULL;
	const cli_isa_cap *isa_cap = NULL;
	int64_t runs = 5;
	cli_format fmt = FMT_TABLE;
	const cli_opt_spec specs[] = {
		CLI_OPT(CLI_OPT_STRING, "--hw", "ID", &hw, "cpuN: N threads (default cpu1)"),
		CLI_OPT(CLI_OPT_STRING, "--out", "FILE", &out, "measure the machine profile into FILE (or FILE/<machine id>.machine)"),
		CLI_OPT(CLI_OPT_FUNC, "--isa-cap", "none|sse41|avx2", &isa_cap,
		        "emulate an older CPU (sse41, avx2), as 'abacus profile --isa-cap' does", .func = cli_isa_cap_opt),
		CLI_OPT(CLI_OPT_I64, "--runs", "N", &runs, "passes over the microbenchmarks (1-50, default 5)", .min = 1, .max = 50),
		CLI_OPT(CLI_OPT_STRING, "--model", "FILE", &model, "the predictor whose training data's speed index is compared"),
		CLI_OPT(CLI_OPT_STRING, "--python", "PATH", &python, "the interpreter (default /usr/bin/python3)"),
		CLI_OPT(CLI_OPT_STRING, "--worker", "FILE", &worker, "the collector's worker.py (default: the source tree's)"),
		CLI_OPT(CLI_OPT_FUNC, "--format", "table|json", &fmt, "table (default) or json", .func = cli_format_opt),
		CLI_OPT_TABLE_END
	};
	int prc = cli_opt_parse(specs, "calibrate", description, argc, argv);
	if (prc)
		return prc < 0 ? CLI_OK : prc;
	int64_t threads;
	if (strncmp(hw, "cpu", 3) || cli_parse_i64(&threads, hw + 3, 1, 1024))
		return cli_usage("calibrate", "--hw takes cpuN (N threads), got '%s'", hw);
	char wpath[PATH_MAX + 64], mpath[PATH_MAX + 64];
	if (!worker) {
		if (find_worker(wpath, sizeof wpath)) {
			fprintf(stderr, "abacus: cannot find collector/worker.py; give --worker FILE\n");
			return CLI_FAIL;
		}
		worker = wpath;
	}
	for (const char *p = worker; *p; p++)
		if (*p == '\'')
			return cli_usage("calibrate", "--worker path must not contain a quote");
	for (const char *p = python; *p; p++)
		if (*p == '\'')
			return cli_usage("calibrate", "--python path must not contain a quote");
	if (out && strchr(out, '\''))
		return cli_usage("calibrate", "--out path must not contain a quote");
	char cmd[4 * PATH_MAX + 512], caps[256];
	cap_env(caps, sizeof caps, isa_cap);
	/* The protocol's environment (docs/PROTOCOL.md) for T threads; the cap's variables only from --isa-cap. */
	/* collector/ is a package: PYTHONPATH is the directory above the worker's (the repository root). */
	char root[sizeof wpath];
	cli_worker_root(root, sizeof root, worker);
	snprintf(cmd, sizeof cmd,
	         "env -u ONEDNN_MAX_CPU_ISA -u ATEN_CPU_CAPABILITY -u OPENBLAS_CORETYPE %s"
	         "OMP_NUM_THREADS=%lld MKL_NUM_THREADS=%lld OPENBLAS_NUM_THREADS=%lld MALLOC_MMAP_MAX_=0 "
	         "MALLOC_MMAP_THRESHOLD_=33554432 MALLOC_TRIM_THRESHOLD_=68719476736 MALLOC_TOP_PAD_=536870912 "
	         "PYTHONNOUSERSITE=1 PYTHONPATH='%s' '%s' '%s' %s --threads %lld --runs %lld",
	         caps, (long long)threads, (long long)threads, (long long)threads, root, python, worker,
	         out ? "--profile" : "--calibrate", (long long)threads, (long long)runs);
	if (out)
		return write_profile(cmd, out, fmt);
	FILE *f = popen(cmd, "r");
	char line[512] = "";
	int ok = f && fgets(line, sizeof line, f) != NULL;
	int st = f ? pclose(f) : -1;
	double calib = -1;
	const char *p = strstr(line, "\"calib_s\":");
	if (!ok || st != 0 || !p || !((calib = strtod(p + 10, NULL)) > 0)) {
		fprintf(stderr, "abacus: the reference workload did not run (%s %s --calibrate): is python3-torch installed?\n",
		        python, worker);
		return CLI_FAIL;
	}
	/* The training data's speed index for this hardware id, when a predictor is at hand. */
	double train = -1;
	abacus_error err;
	abacus_predictor *pr = NULL;
	if (!model) {
		cli_default_model(mpath, sizeof mpath);
		model = mpath;
	}
	if (abacus_predictor_load_file(&pr, model, &err) == 0)
		train = abacus_predictor_calib(pr, hw);
	abacus_predictor_free(pr);
	if (fmt == FMT_JSON) {
		printf("{\"hw\": \"%s\", \"threads\": %lld, \"calib_s\": %.6g, \"training_calib_s\": ", hw, (long long)threads,
		       calib);
		if (train > 0)
			printf("%.6g, \"relative_speed\": %.4f}\n", train, train / calib);
		else
			printf("null, \"relative_speed\": null}\n");
	} else {
		printf("reference workload on %s (%lld thread%s): %.4g s\n", hw, (long long)threads, threads > 1 ? "s" : "", calib);
		if (train > 0)
			printf("training data's median for %s: %.4g s: this machine is %.2f× as fast now\n"
			       "use: abacus predict GRAPH --hw %s --calib %.4g\n",
			       hw, train, train / calib, hw, calib);
		else
			printf("(no predictor with hardware id %s to compare with: %s)\n", hw, model);
	}
	return CLI_OK;
}
