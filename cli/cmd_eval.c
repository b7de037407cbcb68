/*
 * cmd_eval.c — `abacus eval DATA.csv... --protocol random|lomo|cross-hw`: the predictor's error against
 * measured rows, beside the analytic and FLOPs-proportional baselines and the noise floor.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int cli_load_datasets(abacus_dataset ***out, size_t *n, char **files, size_t n_files);
int cli_train_opt(abacus_train_opts *o, const char *cmd, int argc, char **argv, int *i);

static const char help[] =
	"usage: abacus eval DATA.csv... [--protocol random|lomo|cross-hw] [--format table|json] [--seed N]\n"
	"                   [--rounds N] [--depth N] [--eta X] [--root DIR]\n"
	"\n"
	"Scores the predictor on measured rows: random = 5-fold cross-validation over configurations;\n"
	"lomo = leave-one-model-out (each network predicted by a model that never saw it); cross-hw = train on\n"
	"one hardware id, test on the others. Prints MRE, median and 90th percentile relative error for time\n"
	"and memory, the analytic and FLOPs-proportional baselines, the noise floor of repeated measurements,\n"
	"and per-network errors.\n";

/* JSON has no NaN: a statistic over no rows (e.g. no repeated measurements) is null. */
static void num(double v)
{
	if (isfinite(v))
		printf("%.6g", v);
	else
		printf("null");
}

static void json_fields(const abacus_eval_stats *s)
{
	printf("\"mre\": ");
	num(s->mre);
	printf(", \"median\": ");
	num(s->median);
	printf(", \"p90\": ");
	num(s->p90);
	printf(", \"n\": %zu", s->n);
}

static void json_stats(const char *name, const abacus_eval_stats *s, int last)
{
	printf("    \"%s\": {", name);
	json_fields(s);
	printf("}%s\n", last ? "" : ",");
}

static void row(const char *name, const abacus_eval_stats *s)
{
	printf("  %-34s %8.2f%% %8.2f%% %8.2f%% %7zu\n", name, 100 * s->mre, 100 * s->median, 100 * s->p90, s->n);
}

int cmd_eval(int argc, char **argv)
{
	abacus_train_opts o = ABACUS_TRAIN_OPTS_INIT;
	abacus_eval_protocol proto = ABACUS_EVAL_RANDOM;
	cli_format fmt = FMT_TABLE;
	char **files = calloc((size_t)argc, sizeof *files);
	size_t n_files = 0;
	int rc = CLI_USAGE;
	if (!files)
		return CLI_FAIL;
	for (int i = 1; i < argc; i++) {
		const char *v;
		int r;
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(help, stdout);
			free(files);
			return CLI_OK;
		}
		if ((r = cli_train_opt(&o, "eval", argc, argv, &i)) != 0) {
			if (r < 0)
				goto out;
			continue;
		}
		if ((r = cli_opt(argc, argv, &i, "--protocol", &v))) {
			if (r < 0 || (strcmp(v, "random") && strcmp(v, "lomo") && strcmp(v, "cross-hw"))) {
				cli_usage("eval", "--protocol must be random, lomo or cross-hw");
				goto out;
			}
			proto = !strcmp(v, "random") ? ABACUS_EVAL_RANDOM : !strcmp(v, "lomo") ? ABACUS_EVAL_LOMO : ABACUS_EVAL_CROSS_HW;
			continue;
		}
		if ((r = cli_opt(argc, argv, &i, "--format", &v))) {
			if (r < 0 || cli_parse_format(&fmt, v, 0)) {
				cli_usage("eval", "--format must be table or json");
				goto out;
			}
			continue;
		}
		if (argv[i][0] == '-' && argv[i][1]) {
			cli_usage("eval", "unknown option '%s'", argv[i]);
			goto out;
		}
		files[n_files++] = argv[i];
	}
	if (!n_files) {
		cli_usage("eval", "needs at least one DATA.csv");
		goto out;
	}
	abacus_dataset **sets;
	size_t n;
	if ((rc = cli_load_datasets(&sets, &n, files, n_files)))
		goto out;
	abacus_error err;
	abacus_eval *ev = NULL;
	if (abacus_evaluate(&ev, sets, n, proto, &o, &err)) {
		rc = cli_fail(&err);
		goto free_sets;
	}
	const char *pname = proto == ABACUS_EVAL_RANDOM ? "random" : proto == ABACUS_EVAL_LOMO ? "lomo" : "cross-hw";
	size_t nn;
	const abacus_eval_net *nets = abacus_eval_networks(ev, &nn);
	if (fmt == FMT_JSON) {
		printf("{\n  \"protocol\": \"%s\",\n  \"time\": {", pname);
		json_fields(abacus_eval_get(ev, ABACUS_EVAL_TIME));
		printf(",\n");
		json_stats("raw", abacus_eval_get(ev, ABACUS_EVAL_TIME_RAW), 0);
		json_stats("analytic", abacus_eval_get(ev, ABACUS_EVAL_ANALYTIC_TIME), 0);
		json_stats("flops_proportional", abacus_eval_get(ev, ABACUS_EVAL_FLOPS_TIME), 0);
		json_stats("noise_floor_raw", abacus_eval_get(ev, ABACUS_EVAL_NOISE_TIME), 0);
		json_stats("noise_floor", abacus_eval_get(ev, ABACUS_EVAL_NOISE_TIME_ADJUSTED), 1);
		printf("  },\n  \"memory\": {");
		json_fields(abacus_eval_get(ev, ABACUS_EVAL_MEMORY));
		printf(",\n");
		json_stats("analytic", abacus_eval_get(ev, ABACUS_EVAL_ANALYTIC_MEMORY), 0);
		json_stats("noise_floor", abacus_eval_get(ev, ABACUS_EVAL_NOISE_MEMORY), 1);
		printf("  },\n  \"networks\": [\n");
		for (size_t i = 0; i < nn; i++) {
			printf("    {\"network\": ");
			json_str(stdout, nets[i].network);
			printf(", \"time_mre\": ");
			num(nets[i].time_mre);
			printf(", \"memory_mre\": ");
			num(nets[i].memory_mre);
			printf(", \"n\": %zu}%s\n", nets[i].n, i + 1 < nn ? "," : "");
		}
		printf("  ]\n}\n");
	} else {
		printf("protocol %s\n\n  %-34s %9s %9s %9s %7s\n", pname, "", "MRE", "median", "p90", "n");
		row("time (speed-adjusted)", abacus_eval_get(ev, ABACUS_EVAL_TIME));
		row("time (raw)", abacus_eval_get(ev, ABACUS_EVAL_TIME_RAW));
		row("time, analytic baseline", abacus_eval_get(ev, ABACUS_EVAL_ANALYTIC_TIME));
		row("time, FLOPs-proportional baseline", abacus_eval_get(ev, ABACUS_EVAL_FLOPS_TIME));
		row("time noise floor (speed-adjusted)", abacus_eval_get(ev, ABACUS_EVAL_NOISE_TIME_ADJUSTED));
		row("time noise floor (raw)", abacus_eval_get(ev, ABACUS_EVAL_NOISE_TIME));
		row("memory", abacus_eval_get(ev, ABACUS_EVAL_MEMORY));
		row("memory, analytic baseline", abacus_eval_get(ev, ABACUS_EVAL_ANALYTIC_MEMORY));
		row("memory noise floor", abacus_eval_get(ev, ABACUS_EVAL_NOISE_MEMORY));
		printf("\n  %-34s %9s %9s %7s\n", "network", "time MRE", "mem MRE", "rows");
		for (size_t i = 0; i < nn; i++)
			printf("  %-34.34s %8.2f%% %8.2f%% %7zu\n", nets[i].network, 100 * nets[i].time_mre,
			       100 * nets[i].memory_mre, nets[i].n);
	}
	rc = CLI_OK;
	abacus_eval_free(ev);
free_sets:
	for (size_t k = 0; k < n; k++)
		abacus_dataset_free(sets[k]);
	free(sets);
out:
	free(files);
	return rc;
}
