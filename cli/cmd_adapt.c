/*
 * cmd_adapt.c — `abacus adapt`: few-shot for a new machine. K rows measured on the machine a profile
 * describes fit the one factor that so few rows can support across the zoo (the median ratio of measured
 * to predicted time, weighed against the bundle's prior that a machine priced from its profile needs none:
 * abacus_predictor_shot_factor; the profile already prices each kind of work) and become the profile's shots, which
 * correct the configurations near them (machine.c ab_shot_correction); both are saved in the profile and
 * applied by `abacus predict --machine`. With --measure K it first measures K configurations chosen to cover the
 * kinds of network in the zoo (through `abacus profile`).
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"


static const char description[] =
	"Few-shot for a machine: the 'ok' rows of ROWS.csv measured on the machine the profile describes\n"
	"(its machine id) fit one time factor, the median of measured / predicted time shrunk toward 1 by how\n"
	"far the bundle's training machines scattered around their profiles' prices (the 'adapt' line), and\n"
	"become the profile's shots ('shot' lines): 'abacus predict --machine FILE' applies the factor, and\n"
	"corrects a configuration near a shot (the same network at another batch or optimizer, or one of the\n"
	"same make-up) by what that shot was off beyond it. Written into the profile (or --out); an earlier\n"
	"adaptation is replaced. Prints the rows' error before and after and how long adapting took. The predictor must have the profile-mode\n"
	"time model (abacus train --machines). Instead of ROWS.csv, --measure K --rows OUT.csv measures K\n"
	"configurations here first.\n";

/* The networks --measure takes, in order: each next one is a kind of network the earlier ones are not. */
static const char *const coverage[] = {
	"resnet18", "mlp", "mobilenet_v2", "transformer_enc", "lstm_lm", "vgg11", "efficientnet_b0", "squeezenet1_1",
	"gpt_small", "convmixer", "shufflenet_v2_x1_0", "densenet121", "gru_lm", "unet_small", "mnasnet1_0",
	"regnet_x_400mf", "textcnn", "mlp_mixer", "wavenet_small", "vit_b_32",
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Runs `abacus profile` for the first k coverage networks on the profile's thread count. */
static int measure(int k, int threads, const char *rows, const char *cap)
{
	char exe[PATH_MAX], models[1024] = "", hw[32], *argv[32];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n <= 0) {
		fprintf(stderr, "abacus: cannot find the abacus binary to run 'abacus profile'\n");
		return CLI_FAIL;
	}
	exe[n] = '\0';
	for (int i = 0; i < k; i++)
		snprintf(models + strlen(models), sizeof models - strlen(models), "%s%s", i ? "," : "", coverage[i]);
	snprintf(hw, sizeof hw, "cpu%d", threads);
	int a = 0;
	argv[a++] = exe;
	argv[a++] = "profile";
	argv[a++] = "--models";
	argv[a++] = models;
	argv[a++] = "--size";
	argv[a++] = "min";
	argv[a++] = "--seq";
	argv[a++] = "min";
	argv[a++] = "--batch";
	argv[a++] = "4";
	argv[a++] = "--hw";
	argv[a++] = hw;
	argv[a++] = "--max-iter-seconds";
	argv[a++] = "3";
	argv[a++] = "--out";
	argv[a++] = (char *)rows;
	if (cap) {
		argv[a++] = "--isa-cap";
		argv[a++] = (char *)cap;
	}
	argv[a] = NULL;
	fprintf(stderr, "abacus adapt: measuring %d configuration%s: abacus profile --models %s --size min --seq min "
	        "--batch 4 --hw %s%s%s --out %s\n", k, k > 1 ? "s" : "", models, hw, cap ? " --isa-cap " : "",
	        cap ? cap : "", rows);
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "abacus: cannot start 'abacus profile': %s\n", strerror(errno));
		return CLI_FAIL;
	}
	if (pid == 0) {
		execv(exe, argv);
		_exit(127);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		fprintf(stderr, "abacus: 'abacus profile' failed; the rows it wrote stay in %s, rerun to continue\n", rows);
		return CLI_FAIL;
	}
	return CLI_OK;
}

/* Makes every ok row measured on machine m a shot of its profile (m must be unadapted): lr[i] =
 * log(measured / predicted by the bare profile), before[i] its relative error; *k rows, *other rows of
 * other machines (one named in *other_id). 0, or -1 with the failing row's error printed. */
static int shoot_rows(double *lr, double *before, size_t *k, size_t *other, const char **other_id,
                        abacus_dataset **sets, size_t n_sets, const abacus_predictor *p, abacus_machine *m,
                        const char *root)
{
	abacus_error err;
	for (size_t s = 0; s < n_sets; s++)
		for (size_t i = 0; i < abacus_dataset_n_rows(sets[s]); i++) {
			const abacus_row *r = abacus_dataset_row(sets[s], i);
			if (strcmp(r->status, "ok"))
				continue;
			if (strcmp(r->machine, abacus_machine_id(m))) {
				(*other)++;
				*other_id = r->machine;
				continue;
			}
			char path[PATH_MAX + 256];
			snprintf(path, sizeof path, "%s%s%s", r->graph[0] == '/' ? "" : root, r->graph[0] == '/' ? "" : "/", r->graph);
			abacus_graph *g = NULL;
			abacus_analysis *a = NULL;
			abacus_config cfg = ABACUS_CONFIG_INIT;
			cfg.batch = r->batch;
			int bad = abacus_parse_optimizer(&cfg.optimizer, r->optimizer, &err) ||
			          abacus_graph_load_file(&g, path, &err) || abacus_analyze(&a, g, &cfg, &err) ||
			          abacus_machine_add_shot(m, p, a, r->time_s, r->calib_s > 0 ? r->calib_s : 0, &lr[*k], &err);
			abacus_analysis_free(a);
			abacus_graph_free(g);
			if (bad) {
				fprintf(stderr, "abacus: row at line %zu (%s): %s\n", r->line, r->network, err.msg);
				return -1;
			}
			before[*k] = fabs(exp(-lr[*k]) - 1); /* |bare − T| / T with bare = T / exp(lr) */
			(*k)++;
		}
	return 0;
}

/* The one time factor a few rows support: the median of measured / predicted shrunk toward 1 by the bundle's
 * prior (abacus_predictor_shot_factor; lr[i] is its log for row i, before[i] the row's relative error;
 * before is reused as scratch). *mre0 and *mre1: the rows' mean relative error before and after
 * (in-sample); *prior: the prior's weight in rows. */
static double fit_factor(const abacus_predictor *p, int threads, const double *lr, double *before, size_t k,
                         double *mre0, double *mre1, double *prior)
{
	*mre0 = *mre1 = 0;
	for (size_t i = 0; i < k; i++)
		*mre0 += before[i];
	memcpy(before, lr, k * sizeof *lr);
	double f = abacus_predictor_shot_factor(p, before, k, threads, prior);
	for (size_t i = 0; i < k; i++)
		*mre1 += fabs(exp(lr[i]) - f) / exp(lr[i]); /* |f·pred − T| / T with pred = T / exp(lr) */
	return f;
}

int cmd_adapt(int argc, char **argv)
{
	const char *machine = NULL, *model = NULL, *out = NULL, *root = ".", *rows_out = NULL;
	const cli_isa_cap *cap = NULL;
	int64_t k_measure = 0;
	char mpath[PATH_MAX];
	cli_args rows_in = { 0 };
	const cli_opt_spec specs[] = {
		CLI_OPT(CLI_OPT_ARGS, "ROWS.csv", NULL, &rows_in, "rows measured on the machine the profile describes"),
		CLI_OPT(CLI_OPT_STRING, "--machine", "FILE", &machine, "the machine's profile ('abacus calibrate --out FILE')",
		        .flags = CLI_OPT_REQUIRED),
		CLI_OPT(CLI_OPT_STRING, "--model", "FILE", &model, "a predictor bundle (default: the bundled one)"),
		CLI_OPT(CLI_OPT_STRING, "--out", "FILE", &out, "write the adapted profile here (default: over --machine)"),
		CLI_OPT(CLI_OPT_STRING, "--root", "DIR", &root, "directory the rows' graph paths are relative to (default .)"),
		CLI_OPT(CLI_OPT_I64, "--measure", "K", &k_measure,
		        "first measure K configurations (at most 20) chosen to cover the zoo's kinds of network\n"
		        "(MLP, ResNet, MobileNet, VGG, LSTM, Transformer, ...: smallest input, batch 4, sgd) with\n"
		        "'abacus profile' into --rows, then adapt on them",
		        .min = 1, .max = (double)(sizeof coverage / sizeof coverage[0])),
		CLI_OPT(CLI_OPT_STRING, "--rows", "OUT.csv", &rows_out, "with --measure: where the measured rows go"),
		CLI_OPT(CLI_OPT_FUNC, "--isa-cap", "none|sse41|avx2", &cap,
		        "with --measure: the ISA cap the profile was measured under", .func = cli_isa_cap_opt),
		CLI_OPT_TABLE_END
	};
	int rc = cli_opt_parse(specs, "adapt", description, argc, argv);
	if (rc)
		return rc < 0 ? CLI_OK : rc;
	char **files = rows_in.v;
	size_t n_files = rows_in.n;
	rc = CLI_USAGE;
	if (k_measure && !rows_out) {
		cli_usage("adapt", "--measure needs --rows OUT.csv for the rows it measures");
		goto out;
	}
	if (!k_measure && !n_files) {
		cli_usage("adapt", "needs ROWS.csv measured on the machine, or --measure K --rows OUT.csv");
		goto out;
	}
	abacus_error err;
	abacus_machine *m = NULL;
	abacus_predictor *p = NULL;
	abacus_dataset **sets = NULL;
	size_t n_sets = 0;
	double *lr = NULL, *before = NULL;
	rc = CLI_FAIL;
	if (abacus_machine_load_file(&m, machine, &err)) {
		rc = cli_fail(&err);
		goto done;
	}
	if (k_measure) {
		if (measure((int)k_measure, abacus_machine_threads(m), rows_out, cap ? cap->name : NULL) != CLI_OK)
			goto done;
		files[n_files++] = (char *)rows_out;
	}
	double t0 = now_s();
	if (!model) {
		cli_default_model(mpath, sizeof mpath);
		model = mpath;
	}
	if (abacus_predictor_load_file(&p, model, &err)) {
		rc = cli_fail(&err);
		goto done;
	}
	if ((rc = cli_load_datasets(&sets, &n_sets, files, n_files)))
		goto done;
	rc = CLI_FAIL;
	size_t total = 0, k = 0, other = 0;
	for (size_t s = 0; s < n_sets; s++)
		total += abacus_dataset_n_rows(sets[s]);
	lr = malloc((total ? total : 1) * sizeof *lr);
	before = malloc((total ? total : 1) * sizeof *before);
	if (!lr || !before) {
		fprintf(stderr, "abacus: out of memory\n");
		goto done;
	}
	const char *other_id = NULL;
	abacus_machine_unadapt(m); /* adapt from the bare profile: an earlier factor and shots are replaced */
	if (shoot_rows(lr, before, &k, &other, &other_id, sets, n_sets, p, m, root))
		goto done;
	if (!k) {
		fprintf(stderr, "abacus: no ok row was measured on machine %s (%zu ok rows of other machines%s%s); measure "
		        "some here with 'abacus adapt --machine %s --measure 10 --rows here.csv'\n", abacus_machine_id(m), other,
		        other_id ? ", e.g. " : "", other_id ? other_id : "", machine);
		goto done;
	}
	double mre0, mre1, prior, f = fit_factor(p, abacus_machine_threads(m), lr, before, k, &mre0, &mre1, &prior);
	if (abacus_machine_adapt(m, f, (int)k, &err)) {
		rc = cli_fail(&err);
		goto done;
	}
	double loo = 0;
	for (size_t i = 0; i < k; i++)
		loo += abacus_machine_shot_loo(m, i);
	char *text = NULL;
	size_t len = 0;
	if (abacus_machine_save(&text, &len, m, &err)) {
		rc = cli_fail(&err);
		goto done;
	}
	double took = now_s() - t0;
	const char *dest = out ? out : machine;
	int wr = cli_write_file(dest, text, len);
	abacus_buffer_free(text);
	if (wr != CLI_OK)
		goto done;
	printf("machine %s: %zu row%s measured here%s; time factor %.4f (measured / predicted: the median, weighed "
	       "against the bundle's prior of %.1f rows that a machine's factor is 1)\n",
	       abacus_machine_id(m), k, k > 1 ? "s" : "", other ? " (rows of other machines ignored)" : "", f, prior);
	printf("  time MRE on those rows: %.2f %% from the profile alone, %.2f %% adapted (in-sample)\n",
	       100 * mre0 / (double)k, 100 * mre1 / (double)k);
	printf("  each row predicted from the factor and the other rows (leave-one-out, local correction): %.2f %%\n",
	       100 * loo / (double)k);
	printf("  adapting took %.3f s; the factor and the %zu rows (shots) are saved in %s\n", took, k, dest);
	rc = CLI_OK;
done:
	free(lr);
	free(before);
	for (size_t s = 0; s < n_sets; s++)
		abacus_dataset_free(sets[s]);
	free(sets);
	abacus_predictor_free(p);
	abacus_machine_free(m);
out:
	free(files);
	return rc;
}
