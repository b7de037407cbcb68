/*
 * cmd_predict.c — `abacus predict GRAPH`: time per training iteration and peak memory, each with a 90 %
 * interval, from the bundled predictor (or --model FILE).
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static const char description[] =
	"Predicts the time of one training iteration and its peak memory, each with a 90 % interval from\n"
	"cross-validated residuals. Without --model it uses the bundled predictor (data/predictor.abacus,\n"
	"trained on the committed dataset; $ABACUS_MODEL overrides it).\n";

int cmd_predict(int argc, char **argv)
{
	cli_graph_opts o;
	struct {
		double calib;
		const char *machine;
	} x = { 0, NULL };
	cli_graph_opts_init(&o);
	const cli_opt_spec specs[] = {
		CLI_GRAPH_OPT_SPECS(o),
		CLI_OPT(CLI_OPT_STRING, "--hw", "ID", &o.hw,
		        "hardware id the predictor was trained on (cpu1 = 1 thread, cpu2 = 2 threads)"),
		CLI_OPT(CLI_OPT_STRING, "--machine", "FILE", &x.machine,
		        "a machine profile (abacus calibrate --out FILE): time priced from that machine's\n"
		        "measured rates by the predictor's profile-mode model (and its 'abacus adapt'\n"
		        "factor), for any machine, also one no training row came from; replaces --hw"),
		CLI_OPT(CLI_OPT_STRING, "--model", "FILE", &o.model, "a predictor bundle (abacus train; default: the bundled one)"),
		CLI_OPT(CLI_OPT_DOUBLE, "--calib", "SECONDS", &x.calib,
		        "this machine's speed index now (docs/PROTOCOL.md reference workload); default: the\n"
		        "training data's median for --hw, or with --machine the profile's own", .min = 0, .max = 1e6),
		CLI_OPT(CLI_OPT_FUNC, "--format", "table|json", &o.fmt, "table (default) or json", .func = cli_format_opt),
		CLI_OPT_TABLE_END
	};
	int rc = cli_graph_parse(&o, specs, "predict", description, argc, argv);
	if (rc >= 0)
		return rc;
	double calib = x.calib;
	abacus_machine *mach = NULL;
	cli_format fmt = o.fmt;
	const char *model = o.model, *hw = o.hw;
	abacus_error err;
	abacus_predictor *p = NULL;
	abacus_graph *g = NULL;
	abacus_analysis *a = NULL;
	abacus_prediction pr;
	double *shares = NULL, step_share = 0;
	rc = CLI_FAIL;
	if (x.machine && abacus_machine_load_file(&mach, x.machine, &err)) {
		rc = cli_fail(&err);
		goto out;
	}
	if (mach) { /* its threads, and the ISA its id names */
		o.cfg.threads = abacus_machine_threads(mach);
		cli_graph_machine(&o, abacus_machine_id(mach));
	}
	if (abacus_predictor_load_file(&p, model, &err) || abacus_graph_load_file(&g, o.file, &err) ||
	    abacus_analyze(&a, g, &o.cfg, &err) ||
	    (mach ? abacus_predict_machine(&pr, p, a, mach, calib, &err) : abacus_predict(&pr, p, a, hw, calib, &err))) {
		rc = cli_fail(&err);
		goto out;
	}
	/* Which layers cost the most: the shares of the hardware id with the machine's thread count (the
	 * profile prices the whole, the shares only split it). */
	const char *share_hw = pr.hw;
	char mhw[32];
	if (mach) {
		snprintf(mhw, sizeof mhw, "cpu%d", abacus_machine_threads(mach));
		share_hw = abacus_predictor_calib(p, mhw) > 0 ? mhw : NULL;
	}
	size_t n_layers = abacus_analysis_n_layers(a);
	shares = malloc((n_layers ? n_layers : 1) * sizeof *shares);
	if (!shares || abacus_predictor_layer_shares(shares, n_layers, &step_share, p, a, share_hw, &err)) {
		rc = shares ? cli_fail(&err) : CLI_FAIL;
		if (!shares)
			fprintf(stderr, "abacus: out of memory\n");
		goto out;
	}
	const abacus_memory *m = abacus_analysis_memory(a);
	/* The breakdown: the simulation's components, and the learned correction that makes them add up
	 * to the predicted total (allocator, framework and library buffers the simulation does not see). */
	int64_t corr = pr.memory_bytes - m->peak;
	if (fmt == FMT_JSON) {
		printf("{\"graph\": ");
		json_str(stdout, o.file);
		printf(", \"batch\": %lld, \"optimizer\": \"%s\", \"hw\": ", (long long)o.cfg.batch,
		       abacus_optimizer_name(o.cfg.optimizer));
		json_str(stdout, pr.hw);
		printf(", \"time_s\": %.6g, \"time_lo_s\": %.6g, \"time_hi_s\": %.6g, \"memory_bytes\": %lld, "
		       "\"memory_lo_bytes\": %lld, \"memory_hi_bytes\": %lld, \"calib_s\": %.6g, \"time_analytic_s\": %.6g, "
		       "\"novelty\": %.4g,\n",
		       pr.time_s, pr.time_lo_s, pr.time_hi_s, (long long)pr.memory_bytes, (long long)pr.memory_lo_bytes,
		       (long long)pr.memory_hi_bytes, pr.calib_s, pr.time_analytic_s, pr.novelty);
		printf(" \"memory_breakdown\": {\"weights\": %lld, \"buffers\": %lld, \"gradients\": %lld, \"optimizer\": %lld, "
		       "\"inputs\": %lld, \"activations\": %lld, \"workspace\": %lld, \"learned_correction\": %lld},\n ",
		       (long long)m->weights, (long long)m->buffers, (long long)m->gradients, (long long)m->optimizer,
		       (long long)m->inputs, (long long)m->activations, (long long)m->workspace, (long long)corr);
		if (abacus_analysis_n_memory_steps(a)) {
			cli_json_peak_step(stdout, a);
			printf(",\n ");
		}
		cli_top_layers(a, 10, pr.time_s, shares, step_share, 1);
		printf("}\n");
	} else {
		char m1[32], m2[32], m3[32];
		fmt_bytes(m1, sizeof m1, (double)pr.memory_bytes);
		fmt_bytes(m2, sizeof m2, (double)pr.memory_lo_bytes);
		fmt_bytes(m3, sizeof m3, (double)pr.memory_hi_bytes);
		printf("%s, batch %lld, %s, %s\n", o.file, (long long)o.cfg.batch, abacus_optimizer_name(o.cfg.optimizer), pr.hw);
		char t[32], lo[32], hi[32];
		fmt_duration(t, sizeof t, pr.time_s);
		fmt_duration(lo, sizeof lo, pr.time_lo_s);
		fmt_duration(hi, sizeof hi, pr.time_hi_s);
		printf("  time per iteration  %s   (90 %% interval %s – %s)\n", t, lo, hi);
		printf("  peak memory         %s   (90 %% interval %s – %s)\n", m1, m2, m3);
		if (pr.novelty > 0) /* bundles of version 17 and later (0 for a network they were trained on) */
			printf("  distance from the training graphs %.3f%s\n", pr.novelty,
			       pr.novelty >= 0.2 ? " (unlike the networks the predictor learned from: wider intervals)" : "");
		const struct { const char *name; int64_t v; } rows[] = {
			{ "weights", m->weights }, { "buffers", m->buffers }, { "gradients", m->gradients },
			{ "optimizer state", m->optimizer }, { "inputs + targets", m->inputs },
			{ "saved activations", m->activations }, { "transient workspace", m->workspace },
		};
		size_t at = 0;
		const abacus_memory_step *pk = cli_peak_step(a, &at);
		char where[512] = "";
		if (pk)
			cli_step_label(where, sizeof where, a, pk);
		printf("\nmemory at the peak%s%s%s:\n", pk ? " (simulated: in the " : "", where, pk ? ")" : "");
		for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
			fmt_bytes(m1, sizeof m1, (double)rows[i].v);
			printf("  %-22s %12s  %5.1f%%\n", rows[i].name, m1, 100.0 * (double)rows[i].v / (double)pr.memory_bytes);
		}
		fmt_bytes(m1, sizeof m1, (double)(corr < 0 ? -corr : corr));
		printf("  %-22s %s%11s  %5.1f%%\n", "learned correction", corr < 0 ? "-" : "+", m1,
		       100.0 * (double)corr / (double)pr.memory_bytes);
		cli_top_layers(a, 10, pr.time_s, shares, step_share, 0);
	}
	rc = CLI_OK;
out:
	free(shares);
	abacus_machine_free(mach);
	abacus_analysis_free(a);
	abacus_graph_free(g);
	abacus_predictor_free(p);
	return rc;
}
