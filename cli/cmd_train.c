/*
 * cmd_train.c — `abacus train DATA.csv... --out FILE`: fits the predictor on measured rows and writes a
 * versioned bundle. Deterministic for a given --seed.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char help[] =
	"usage: abacus train DATA.csv... --out FILE [--machines FILE|DIR,...] [--seed N] [--rounds N] [--depth N]\n"
	"                    [--eta X] [--root DIR]\n"
	"\n"
	"Trains the time and memory predictors (XGBoost, one booster per target, hardware as a feature) on the\n"
	"'ok' rows of the given datasets and writes a bundle: boosters, feature schema, hardware ids,\n"
	"training-data digest and residual quantiles for 90 % intervals. Graph paths in the CSV are read\n"
	"relative to --root (default: the current directory).\n"
	"  --seed N     shuffling and sampling seed (default 1): the same data and seed give the same bundle\n"
	"  --rounds N   boosting rounds (default 400)    --depth N  tree depth (default 6)\n"
	"  --eta X      learning rate (default 0.05)\n"
	"  --machines LIST  machine profiles (abacus calibrate --out; files or directories of *.machine): the\n"
	"               bundle also gets the profile-mode time model, trained on the rows of those machines,\n"
	"               which prices any machine from its profile ('abacus predict --machine FILE')\n";

int cmd_train(int argc, char **argv)
{
	abacus_train_opts o = ABACUS_TRAIN_OPTS_INIT;
	const char *machines_arg = NULL;
	abacus_machine **machines = NULL;
	size_t n_machines = 0;
	const char *out = NULL;
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
		if ((r = cli_train_opt(&o, "train", argc, argv, &i)) != 0) {
			if (r < 0)
				goto out;
			continue;
		}
		if ((r = cli_opt(argc, argv, &i, "--out", &v))) {
			if (r < 0) {
				cli_usage("train", "--out needs a file name");
				goto out;
			}
			out = v;
			continue;
		}
		if ((r = cli_opt(argc, argv, &i, "--machines", &v))) {
			if (r < 0) {
				cli_usage("train", "--machines needs profile files or directories");
				goto out;
			}
			machines_arg = v;
			continue;
		}
		if (argv[i][0] == '-' && argv[i][1]) {
			cli_usage("train", "unknown option '%s'", argv[i]);
			goto out;
		}
		files[n_files++] = argv[i];
	}
	if (!n_files || !out) {
		cli_usage("train", "needs at least one DATA.csv and --out FILE");
		goto out;
	}
	if (machines_arg && (rc = cli_load_machines(&machines, &n_machines, machines_arg)))
		goto out;
	o.machines = (const abacus_machine *const *)machines;
	o.n_machines = n_machines;
	abacus_dataset **sets;
	size_t n;
	if ((rc = cli_load_datasets(&sets, &n, files, n_files)))
		goto out;
	abacus_error err;
	abacus_predictor *p = NULL;
	if (abacus_train(&p, sets, n, &o, &err) || abacus_predictor_save_file(p, out, &err)) {
		rc = cli_fail(&err);
	} else {
		fprintf(stderr, "abacus: wrote %s (hardware:", out);
		for (size_t h = 0; h < abacus_predictor_n_hw(p); h++)
			fprintf(stderr, " %s", abacus_predictor_hw(p, h));
		fprintf(stderr, ")%s\n", abacus_predictor_has_profile(p) ? ", with the profile-mode time model" : "");
		rc = CLI_OK;
	}
	abacus_predictor_free(p);
	for (size_t k = 0; k < n; k++)
		abacus_dataset_free(sets[k]);
	free(sets);
out:
	cli_free_machines(machines, n_machines);
	free(files);
	return rc;
}
