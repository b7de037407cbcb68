/*
 * cmd_calibrate.c — `abacus calibrate`: times the protocol's reference workload (PROTOCOL.md, "Machine
 * speed index") on this machine now, with the threads of a hardware id, and compares it with the speed
 * index of the predictor's training data. Pass the result to `predict --calib` to scale time predictions
 * to how fast this machine is today.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static const char help[] =
	"usage: abacus calibrate [--hw ID] [--model FILE] [--python PATH] [--worker FILE] [--format table|json]\n"
	"\n"
	"Times the reference workload of PROTOCOL.md (20 × a 256×256 matrix product and one convolution, median\n"
	"of 7 runs, the median of three such medians) with the threads of --hw (cpu1: 1, cpu2: 2) and the\n"
	"protocol's environment, and compares it with the median speed index of the predictor's training data\n"
	"for that hardware id. Give the result to 'abacus predict --calib SECONDS'.\n";

/* collector/worker.py of the source tree the binary was built in (build/<mode>/abacus → ../../). */
static int find_worker(char *buf, size_t len)
{
	if (cli_beside_exe(buf, len, "../../collector/worker.py") == 0)
		return 0;
	snprintf(buf, len, "collector/worker.py");
	return access(buf, R_OK) == 0 ? 0 : -1;
}

int cmd_calibrate(int argc, char **argv)
{
	const char *hw = "cpu1", *model = NULL, *python = "/usr/bin/python3", *worker = NULL;
	cli_format fmt = FMT_TABLE;
	for (int i = 1; i < argc; i++) {
		const char *v;
		int r;
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(help, stdout);
			return CLI_OK;
		}
		const char **slot = NULL;
		if ((r = cli_opt(argc, argv, &i, "--hw", &v)))
			slot = &hw;
		else if ((r = cli_opt(argc, argv, &i, "--model", &v)))
			slot = &model;
		else if ((r = cli_opt(argc, argv, &i, "--python", &v)))
			slot = &python;
		else if ((r = cli_opt(argc, argv, &i, "--worker", &v)))
			slot = &worker;
		else if ((r = cli_opt(argc, argv, &i, "--format", &v))) {
			if (r < 0 || cli_parse_format(&fmt, v, 0))
				return cli_usage("calibrate", "--format must be table or json");
			continue;
		}
		if (!slot)
			return cli_usage("calibrate", "unknown argument '%s'", argv[i]);
		if (r < 0)
			return cli_usage("calibrate", "%s needs a value", argv[i]);
		*slot = v;
	}
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
	char cmd[3 * PATH_MAX];
	/* The protocol's environment (PROTOCOL.md) for T threads. */
	snprintf(cmd, sizeof cmd,
	         "env OMP_NUM_THREADS=%lld MKL_NUM_THREADS=%lld OPENBLAS_NUM_THREADS=%lld MALLOC_MMAP_MAX_=0 "
	         "MALLOC_MMAP_THRESHOLD_=33554432 MALLOC_TRIM_THRESHOLD_=68719476736 MALLOC_TOP_PAD_=536870912 "
	         "PYTHONNOUSERSITE=1 '%s' '%s' --calibrate --threads %lld",
	         (long long)threads, (long long)threads, (long long)threads, python, worker, (long long)threads);
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
