/*
 * cmd_train.c — `abacus train DATA.csv... --out FILE`: fits the predictor on measured rows and writes a
 * versioned bundle. Deterministic for a given --seed.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static const char description[] =
	"Trains the time and memory predictors (XGBoost, one booster per target, hardware as a feature) on the\n"
	"'ok' rows of the given datasets and writes a bundle: boosters, feature schema, hardware ids,\n"
	"training-data digest and residual quantiles for 90 % intervals. Graph paths in the CSV are read\n"
	"relative to --root (default: the current directory).\n";

int cmd_train(int argc, char **argv)
{
	abacus_train_opts o = ABACUS_TRAIN_OPTS_INIT;
	const char *machines_arg = NULL, *out = NULL, *families_arg = NULL;
	cli_families fams = { 0 };
	abacus_machine **machines = NULL;
	size_t n_machines = 0;
	cli_args files = { 0 };
	const cli_opt_spec specs[] = {
		CLI_OPT(CLI_OPT_ARGS, "DATA.csv", NULL, &files,
		        "measured rows (abacus profile, docs/DATASET.md)", .flags = CLI_OPT_REQUIRED),
		CLI_OPT(CLI_OPT_STRING, "--out", "FILE", &out,
		        "where the bundle is written", .flags = CLI_OPT_REQUIRED),
		CLI_OPT(CLI_OPT_STRING, "--machines", "LIST", &machines_arg,
		        "machine profiles (abacus calibrate --out; files or directories of *.machine,\n"
		        "comma-separated): the bundle also gets the profile-mode time model, trained on the\n"
		        "rows of those machines, which prices any machine from its profile\n"
		        "('abacus predict --machine FILE'), and a hardware id that borrows a recurrent rate\n"
		        "takes it at its machine's measured speed"),
		CLI_OPT(CLI_OPT_STRING, "--families", "FILE", &families_arg,
		        "each network's family (network<TAB>family; default data/families.tsv where it\n"
		        "exists, 'none' for no file): the 90 % intervals are then calibrated on whole\n"
		        "families held out as well as single networks, so that they widen for a network\n"
		        "unlike any trained on"),
		CLI_TRAIN_OPT_SPECS(o),
		CLI_OPT_TABLE_END
	};
	int rc = cli_opt_parse(specs, "train", description, argc, argv);
	if (rc)
		return rc < 0 ? CLI_OK : rc;
	char **file_list = files.v;
	size_t n_files = files.n;
	if (!families_arg && access("data/families.tsv", R_OK) == 0)
		families_arg = "data/families.tsv";
	if (families_arg && strcmp(families_arg, "none") && (rc = cli_read_families(&fams, families_arg)))
		goto out;
	o.family_of = (const char *const *)fams.pairs;
	o.n_family_of = fams.n;
	if (machines_arg && (rc = cli_load_machines(&machines, &n_machines, machines_arg)))
		goto out;
	o.machines = (const abacus_machine *const *)machines;
	o.n_machines = n_machines;
	abacus_dataset **sets;
	size_t n;
	if ((rc = cli_load_datasets(&sets, &n, file_list, n_files)))
		goto out;
	abacus_error err;
	abacus_predictor *p = NULL;
	cli_progress pg;
	cli_progress_attach(&pg, &o, "train", "fit");
	int trc = abacus_train(&p, sets, n, &o, &err);
	cli_progress_clear(&pg);
	if (trc || abacus_predictor_save_file(p, out, &err)) {
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
	cli_free_families(&fams);
	free(files.v);
	return rc;
}
