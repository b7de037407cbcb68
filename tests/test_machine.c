/*
 * test_machine.c — machine profiles (src/machine.c) and the leave-one-machine-out evaluation (src/eval.c):
 * a profile round-trips bit for bit, every kind of damage is an error naming the line, and on a synthetic
 * set of three machines whose speeds differ by known factors, lomachine predicts each from its profile
 * alone, and few-shot recovers a machine whose profile misses a factor.
 */
#include <math.h>
#include <stdlib.h>

#include "machine.h"
#include "model.h"
#include "runtime.h"
#include "tests.h"
#include "util.h"

#define SMALL "tests/data/small.csv"

/* A profile with every rate: the measured figures of this project's first profiled machine, each rate
 * except the reference workload times `scale`. */
static void profile_text(char *buf, size_t len, const char *id, double scale)
{
	static const double rates[] = { 9.29e-12, 1.05e-11, 4.03e-11, 1.01e-11, 3.77e-11, 1.29e-11, 4.26e-11, 1.25e-11,
		                            4.50e-06, 3.69e-06, 1.49e-10, 1.46e-10, 9.33e-11, 4.57e-06, 6.44e-05, 1.35e-11,
		                            1.15e-07, 1.30e-08, 7.46e-03 };
	size_t k = (size_t)snprintf(buf, len, "abacus-machine-profile 1\nmachine %s\nthreads 1\nruntime torch-1.13.1\n"
	                            "measured 2026-12-04T20:24:24Z\nseconds 38.5\nruns 5\n", id);
	CHECK_EQ_I64(abacus_machine_n_rates(), sizeof rates / sizeof rates[0]);
	for (size_t i = 0; i < abacus_machine_n_rates() && k < len; i++) {
		const char *name = abacus_machine_rate_name(i);
		double v = rates[i] * (strcmp(name, "reference") ? scale : 1.0);
		k += (size_t)snprintf(buf + k, len - k, "rate %s %.6e 0.0125\n", name, v);
	}
}

/* profile_text's profile of `id` in `buf`, loaded (NULL, a failed check, if it does not load). */
static abacus_machine *profile_machine(char *buf, size_t len, const char *id, double scale)
{
	abacus_machine *m = NULL;
	abacus_error err;
	profile_text(buf, len, id, scale);
	CHECK(abacus_machine_load(&m, buf, strlen(buf), &err) == 0);
	return m;
}

void test_machine_profile_roundtrip(void);
void test_machine_profile_roundtrip(void)
{
	char text[4096];
	profile_text(text, sizeof text, "amd-f25m17-avx512-t1-97a5599e", 1.0);
	abacus_error err;
	abacus_machine *m = NULL, *m2 = NULL;
	CHECK(abacus_machine_load(&m, text, strlen(text), &err) == 0);
	if (!m) {
		fprintf(stderr, "  %s\n", err.msg);
		return;
	}
	CHECK(!strcmp(abacus_machine_id(m), "amd-f25m17-avx512-t1-97a5599e"));
	CHECK_EQ_I64(abacus_machine_threads(m), 1);
	CHECK(!strcmp(abacus_machine_runtime(m), "torch-1.13.1"));
	double spread = 0;
	CHECK(abacus_machine_rate(m, "conv_dense", &spread) == 9.29e-12);
	CHECK(spread == 0.0125);
	CHECK(abacus_machine_rate(m, "reference", NULL) == 7.46e-03);
	CHECK(abacus_machine_rate(m, "no_such_rate", NULL) == -1);
	CHECK(abacus_machine_seconds(m) == 38.5);
	char *out = NULL;
	size_t len = 0;
	CHECK(abacus_machine_save(&out, &len, m, &err) == 0);
	CHECK(out != NULL);
	if (out)
		CHECK(abacus_machine_load(&m2, out, len, &err) == 0);
	for (size_t i = 0; m2 && i < abacus_machine_n_rates(); i++) {
		const char *name = abacus_machine_rate_name(i);
		double s1, s2;
		CHECK(abacus_machine_rate(m, name, &s1) == abacus_machine_rate(m2, name, &s2));
		CHECK(s1 == s2);
	}
	if (m2) {
		char *out2 = NULL;
		size_t len2 = 0;
		CHECK(abacus_machine_save(&out2, &len2, m2, &err) == 0);
		/* save ∘ load is the identity */
		CHECK_EQ_I64(len2, len);
		CHECK(out2 != NULL);
		if (out2 && len2 == len)
			CHECK(!memcmp(out, out2, len));
		abacus_buffer_free(out2);
	}
	abacus_buffer_free(out);
	abacus_machine_free(m);
	abacus_machine_free(m2);
	/* Allocation failure at every step of a load. */
	ab_alloc_fail_after(0);
	CHECK(abacus_machine_load(&m, text, strlen(text), &err) == 0);
	abacus_machine_free(m);
	long total = ab_alloc_fail_after(0);
	for (long n = 1; n <= total; n++) {
		ab_alloc_fail_after(n);
		m = NULL;
		int rc = abacus_machine_load(&m, text, strlen(text), &err);
		ab_alloc_fail_after(0);
		CHECK_EQ_I64(rc, ABACUS_ENOMEM);
		CHECK(m == NULL);
	}
}

/* Replaces the first occurrence of `from` in text (into out). */
static void edit(char *out, size_t len, const char *text, const char *from, const char *to)
{
	const char *p = strstr(text, from);
	CHECK(p != NULL);
	if (!p) {
		snprintf(out, len, "%s", text);
		return;
	}
	snprintf(out, len, "%.*s%s%s", (int)(p - text), text, to, p + strlen(from));
}

static void expect_error(const char *text, int code, const char *needle)
{
	abacus_error err;
	abacus_machine *m = NULL;
	int rc = abacus_machine_load(&m, text, strlen(text), &err);
	CHECK_EQ_I64(rc, code);
	CHECK(m == NULL);
	if (rc)
		CHECK_STR_CONTAINS(err.msg, needle);
	abacus_machine_free(m);
}

void test_machine_profile_corrupt(void);
void test_machine_profile_corrupt(void)
{
	char text[4096], bad[4200];
	profile_text(text, sizeof text, "m1", 1.0);
	expect_error("", ABACUS_EPARSE, "empty");
	expect_error("hello\n", ABACUS_EPARSE, "line 1: not a machine profile");
	edit(bad, sizeof bad, text, "abacus-machine-profile 1", "abacus-machine-profile 2");
	expect_error(bad, ABACUS_EUNSUPPORTED, "version 2");
	edit(bad, sizeof bad, text, "rate conv_dense", "rate conv_sparse");
	expect_error(bad, ABACUS_EUNSUPPORTED, "unknown rate 'conv_sparse'");
	edit(bad, sizeof bad, text, "rate dispatch 4.500000e-06", "rate dispatch -4.5e-06");
	expect_error(bad, ABACUS_EPARSE, "line 16: rate 'dispatch' must be a positive");
	edit(bad, sizeof bad, text, "rate dispatch 4.500000e-06", "rate dispatch nan");
	expect_error(bad, ABACUS_EPARSE, "'dispatch'");
	edit(bad, sizeof bad, text, "rate view 3.690000e-06 0.0125\n", "");
	expect_error(bad, ABACUS_EPARSE, "lacks rate 'view'");
	edit(bad, sizeof bad, text, "rate view 3.690000e-06 0.0125\n", "rate view 3.690000e-06 0.0125\nrate view 1e-6 0\n");
	expect_error(bad, ABACUS_EPARSE, "given twice");
	edit(bad, sizeof bad, text, "machine m1\n", "");
	expect_error(bad, ABACUS_EPARSE, "'machine'");
	edit(bad, sizeof bad, text, "machine m1", "machine two words");
	expect_error(bad, ABACUS_EPARSE, "line 2: bad value for 'machine'");
	edit(bad, sizeof bad, text, "threads 1", "threads 0");
	expect_error(bad, ABACUS_EPARSE, "line 3");
	edit(bad, sizeof bad, text, "runs 5", "colour blue");
	expect_error(bad, ABACUS_EPARSE, "line 7: unknown field 'colour'");
	edit(bad, sizeof bad, text, "rate norm_rows 1.150000e-07 0.0125", "rate norm_rows 1.15e-07");
	expect_error(bad, ABACUS_EPARSE, "'rate NAME SECONDS SPREAD'");
	/* Shot lines (abacus adapt): a log ratio, a batch >= 1 and exactly AB_COMP_DIM composition numbers. */
	{
		char shot[1024];
		size_t k = (size_t)snprintf(shot, sizeof shot, "runs 5\nshot 0.25 4");
		for (int j = 0; j < AB_COMP_DIM; j++)
			k += (size_t)snprintf(shot + k, sizeof shot - k, " 0.01");
		snprintf(shot + k, sizeof shot - k, "\n");
		edit(bad, sizeof bad, text, "runs 5\n", shot);
		abacus_machine *ok = NULL;
		abacus_error err;
		CHECK(abacus_machine_load(&ok, bad, strlen(bad), &err) == 0);
		CHECK(ok && abacus_machine_n_shots(ok) == 1);
		abacus_machine_free(ok);
		edit(bad, sizeof bad, text, "runs 5\n", "runs 5\nshot 0.25 4 0.1 0.2\n");
		expect_error(bad, ABACUS_EPARSE, "line 8: a shot line");
		edit(bad, sizeof bad, text, "runs 5\n", "runs 5\nshot 0.25 4 x\n");
		expect_error(bad, ABACUS_EPARSE, "line 8: a shot line");
		shot[strlen("runs 5\nshot 0.25 ")] = '0'; /* batch 0 */
		edit(bad, sizeof bad, text, "runs 5\n", shot);
		expect_error(bad, ABACUS_EPARSE, "batch >= 1");
	}
	/* Every prefix of a valid file loads or is a clear error, never a crash (ASan checks the reads). */
	for (size_t n = 0; n < strlen(text); n++) {
		abacus_error err;
		abacus_machine *m = NULL;
		int rc = abacus_machine_load(&m, text, n, &err);
		CHECK(rc == 0 || (m == NULL && err.msg[0]));
		abacus_machine_free(m);
	}
	/* A NUL byte inside is not a profile. */
	static const char nul[] = "abacus-machine-profile 1\nmachine m\0x\n";
	abacus_machine *mn = NULL;
	abacus_error en;
	CHECK(abacus_machine_load(&mn, nul, sizeof nul - 1, &en) == ABACUS_EPARSE);
	CHECK(mn == NULL);
	CHECK_STR_CONTAINS(en.msg, "NUL byte");
	abacus_error err;
	abacus_machine *m = NULL;
	CHECK(abacus_machine_load_file(&m, "/nonexistent/x.machine", &err) == ABACUS_EIO);
	CHECK_STR_CONTAINS(err.msg, "/nonexistent/x.machine");
}

/* small.csv's rows three times, as machines mA (as measured), mB (every time × 2) and mC (× 0.5). */
/* The three machines of three_machines: their ids and how much slower each runs than the rows of SMALL. */
static const char *const three_ids[] = { "mA", "mB", "mC" };
static const double three_factor[] = { 1.0, 2.0, 0.5 };

static int three_machines(abacus_dataset **out)
{
	abacus_error err;
	FILE *f = fopen(SMALL, "rb");
	if (!f)
		return -1;
	char *src = malloc(1 << 20);
	size_t n = src ? fread(src, 1, (1 << 20) - 1, f) : 0;
	fclose(f);
	if (!src)
		return -1;
	src[n] = '\0';
	size_t cap = 4 * n + 4096, k = 0;
	char *dst = malloc(cap);
	if (!dst) {
		free(src);
		return -1;
	}
	char *nl = strchr(src, '\n');
	k += (size_t)snprintf(dst + k, cap - k, "%.*s,machine\n", (int)(nl - src), src);
	for (int mi = 0; mi < 3; mi++) {
		for (char *line = nl + 1, *end; *line; line = end + 1) {
			end = strchr(line, '\n');
			if (!end)
				break;
			/* time_s is field 11 (1-based); scale it. */
			char *p = line;
			for (int c = 0; c < 10; c++)
				p = strchr(p, ',') + 1;
			char *q = strchr(p, ',');
			double t = strtod(p, NULL) * three_factor[mi];
			k += (size_t)snprintf(dst + k, cap - k, "%.*s%.10g%.*s,%s\n", (int)(p - line), line, t, (int)(end - q), q,
			                      three_ids[mi]);
		}
	}
	int rc = abacus_dataset_load(out, dst, k, "three.csv", &err);
	if (rc)
		fprintf(stderr, "  %s\n", err.msg);
	free(src);
	free(dst);
	return rc;
}

/* Profiles that price each of three_machines' machines exactly (their rates × its factor), texts in bufs. */
static void three_profiles(abacus_machine *ms[3], char bufs[3][4096])
{
	for (int i = 0; i < 3; i++)
		ms[i] = profile_machine(bufs[i], sizeof bufs[i], three_ids[i], three_factor[i]);
}

static const abacus_eval_machine *find_machine(const abacus_eval *ev, const char *id)
{
	size_t n;
	const abacus_eval_machine *ms = abacus_eval_machines(ev, &n);
	for (size_t i = 0; i < n; i++)
		if (!strcmp(ms[i].machine, id))
			return &ms[i];
	return NULL;
}

void test_eval_lomachine(void);
void test_eval_lomachine(void)
{
	abacus_dataset *d = NULL;
	CHECK(three_machines(&d) == 0);
	if (!d)
		return;
	char texts[3][4096];
	abacus_error err;
	abacus_machine *ms[3] = { NULL, NULL, NULL };
	three_profiles(ms, texts);
	abacus_train_opts o = ABACUS_TRAIN_OPTS_INIT;
	o.rounds = 40;
	o.machines = (const abacus_machine *const *)ms;
	o.n_machines = 3;
	abacus_eval *ev = NULL;
	/* Zero-shot: each machine's speeds differ from the others' only by what its profile says, so each is
	 * predicted from the others as well as from its own rows. */
	CHECK(abacus_evaluate(&ev, &d, 1, ABACUS_EVAL_LOMACHINE, &o, &err) == 0);
	if (ev) {
		const abacus_eval_stats *t = abacus_eval_get(ev, ABACUS_EVAL_TIME);
		CHECK_EQ_I64(t->n, 180);
		const char *ids[] = { "mA", "mB", "mC" };
		for (int i = 0; i < 3; i++) {
			const abacus_eval_machine *M = find_machine(ev, ids[i]);
			CHECK(M != NULL);
			if (!M)
				continue;
			if (getenv("ABACUS_TEST_VERBOSE"))
				printf("  %s: time mre %.4f coverage %.3f memory %.4f\n", ids[i], M->time.mre, M->coverage,
				       M->memory.mre);
			CHECK_EQ_I64(M->time.n, 60);
			CHECK(M->time.mre < 0.05);
			CHECK(M->coverage >= 0);
			CHECK(M->coverage <= 1);
			CHECK(M->shot_scale == 1);
		}
	}
	abacus_eval_free(ev);
	/* A profile that misses a factor of 2: zero-shot is 50 % off on mB, five of its rows recover it. */
	abacus_machine_free(ms[1]);
	ms[1] = NULL;
	ms[1] = profile_machine(texts[1], sizeof texts[1], "mB", 1.0);
	ev = NULL;
	CHECK(abacus_evaluate(&ev, &d, 1, ABACUS_EVAL_LOMACHINE, &o, &err) == 0);
	const abacus_eval_machine *B = ev ? find_machine(ev, "mB") : NULL;
	CHECK(B != NULL);
	if (B)
		CHECK(B->time.mre > 0.4);
	abacus_eval_free(ev);
	o.shots = 5;
	ev = NULL;
	CHECK(abacus_evaluate(&ev, &d, 1, ABACUS_EVAL_LOMACHINE, &o, &err) == 0);
	B = ev ? find_machine(ev, "mB") : NULL;
	CHECK(B != NULL);
	if (B) {
		if (getenv("ABACUS_TEST_VERBOSE"))
			printf("  mB with 5 shots: time mre %.4f, factor %.4f\n", B->time.mre, B->shot_scale);
		CHECK_EQ_I64(B->time.n, 55); /* the shots are not scored */
		CHECK(B->time.mre < 0.08);
		CHECK(fabs(B->shot_scale - 2.0) < 0.2);
	}
	abacus_eval_free(ev);
	/* Without profiles there is nothing to hold out by. */
	o.shots = 0;
	o.n_machines = 0;
	CHECK(abacus_evaluate(&ev, &d, 1, ABACUS_EVAL_LOMACHINE, &o, &err) == ABACUS_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "at least 2 machines");
	for (int i = 0; i < 3; i++)
		abacus_machine_free(ms[i]);
	abacus_dataset_free(d);
}

/* A bundle trained with profiles carries the profile-mode model through save and load; on two machines
 * whose every rate differs by 2× it predicts 2× the time and the same memory; adapt's factor multiplies. */
void test_predict_machine(void);
void test_predict_machine(void)
{
	abacus_dataset *d = NULL;
	CHECK(three_machines(&d) == 0);
	if (!d)
		return;
	char ta[4096], tb[4096];
	abacus_error err;
	abacus_machine *ms[2] = { NULL, NULL };
	ms[0] = profile_machine(ta, sizeof ta, "mA", 1.0);
	ms[1] = profile_machine(tb, sizeof tb, "mB", 2.0);
	abacus_train_opts o = ABACUS_TRAIN_OPTS_INIT;
	o.rounds = 30;
	abacus_predictor *plain = NULL, *p = NULL, *p2 = NULL;
	abacus_graph *g = NULL;
	abacus_analysis *a = NULL;
	CHECK(abacus_train(&plain, &d, 1, &o, &err) == 0);
	o.machines = (const abacus_machine *const *)ms;
	o.n_machines = 2;
	CHECK(abacus_train(&p, &d, 1, &o, &err) == 0);
	if (!p)
		fprintf(stderr, "  %s\n", err.msg);
	CHECK(abacus_graph_load_file(&g, "tests/data/graphs/resnet18-64.onnx", &err) == 0);
	abacus_config cfg = ABACUS_CONFIG_INIT;
	cfg.batch = 4;
	CHECK(g != NULL);
	if (g)
		CHECK(abacus_analyze(&a, g, &cfg, &err) == 0);
	if (!plain || !p || !a)
		goto out;
	abacus_prediction pa, pb, pc;
	CHECK(abacus_predictor_has_profile(p));
	CHECK(!abacus_predictor_has_profile(plain));
	CHECK(abacus_predict_machine(&pa, plain, a, ms[0], 0, &err) == ABACUS_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "trained without machine profiles");
	CHECK(abacus_predict_machine(&pa, p, a, ms[0], 0, &err) == 0);
	CHECK(abacus_predict_machine(&pb, p, a, ms[1], 0, &err) == 0);
	CHECK(fabs(pb.time_s / pa.time_s - 2.0) < 1e-9);
	CHECK(pb.memory_bytes == pa.memory_bytes);
	CHECK(pa.time_lo_s < pa.time_s);
	CHECK(pa.time_s < pa.time_hi_s);
	CHECK(!strcmp(pa.hw, "mA"));
	/* The speed index now, against the profile's reference workload: 10 % slower host, 10 % more time. */
	CHECK(abacus_predict_machine(&pc, p, a, ms[0], 1.1 * abacus_machine_rate(ms[0], "reference", NULL), &err) == 0);
	CHECK(fabs(pc.time_s / pa.time_s - 1.1) < 1e-9);
	/* Save and load: the same predictions to the last bit. */
	char *buf = NULL;
	size_t len = 0;
	CHECK(abacus_predictor_save(&buf, &len, p, &err) == 0);
	CHECK(buf != NULL);
	if (buf) {
		CHECK(strstr(buf, "abacus-predictor 19\n"));
		CHECK(strstr(buf, "\nprofile "));
		CHECK(abacus_predictor_load(&p2, buf, len, &err) == 0);
	}
	if (p2) {
		CHECK(abacus_predict_machine(&pc, p2, a, ms[1], 0, &err) == 0);
		CHECK(pc.time_s == pb.time_s);
		CHECK(pc.time_lo_s == pb.time_lo_s);
		CHECK(pc.memory_bytes == pb.memory_bytes);
	}
	/* A damaged profile section is an error naming what was expected. */
	if (buf) {
		char *cut = strstr(buf, "profile_intervals");
		if (cut) {
			memcpy(cut, "profile_intervalz", 17);
			abacus_predictor *p3 = NULL;
			CHECK(abacus_predictor_load(&p3, buf, len, &err) == ABACUS_EPARSE);
			CHECK(p3 == NULL);
			CHECK_STR_CONTAINS(err.msg, "profile_intervals");
		}
	}
	abacus_buffer_free(buf);
	/* adapt's factor multiplies the prediction and is saved with the profile. */
	CHECK(abacus_machine_adapt(ms[0], 1.25, 7, &err) == 0);
	CHECK(abacus_predict_machine(&pc, p, a, ms[0], 0, &err) == 0);
	CHECK(fabs(pc.time_s / pa.time_s - 1.25) < 1e-9);
	CHECK(abacus_machine_adapt(ms[0], -1, 7, &err) == ABACUS_EINVAL);
	char *mt = NULL;
	abacus_machine *back = NULL;
	CHECK(abacus_machine_save(&mt, &len, ms[0], &err) == 0);
	CHECK(mt != NULL);
	if (mt)
		CHECK(abacus_machine_load(&back, mt, len, &err) == 0);
	int rows = 0;
	CHECK(back != NULL);
	if (back) {
		CHECK(abacus_machine_adapted(back, &rows) == 1.25);
		CHECK(rows == 7);
	}
	abacus_machine_free(back);
	abacus_buffer_free(mt);
	back = NULL;
	mt = NULL;
	/* A shot: the same configuration measured 1.5× the bare prediction, with the factor at 1.2, is predicted
	 * at 1.2 · exp(w (log 1.5 − log 1.2) / (k0 + w)) with w = 1 (distance 0); a graph of other operators
	 * (far from it) gets the factor alone; the shot survives save and load; its leave-one-out error is the
	 * factor's alone, |1.2 − 1.5| / 1.5. */
	abacus_machine_unadapt(ms[0]);
	CHECK(abacus_machine_n_shots(ms[0]) == 0);
	CHECK(abacus_machine_adapted(ms[0], &rows) == 1.0 && rows == 0);
	double lr = 0;
	CHECK(abacus_machine_add_shot(ms[0], p, a, 1.5 * pa.time_s, 0, &lr, &err) == 0);
	CHECK(fabs(lr - log(1.5)) < 1e-12);
	CHECK(abacus_machine_add_shot(ms[0], p, a, -1, 0, NULL, &err) == ABACUS_EINVAL);
	CHECK(abacus_machine_n_shots(ms[0]) == 1);
	CHECK(abacus_machine_adapt(ms[0], 1.2, 1, &err) == 0);
	CHECK(abacus_predict_machine(&pc, p, a, ms[0], 0, &err) == 0);
	double want = 1.2 * exp(log(1.5 / 1.2) / (AB_SHOT_PRIOR + 1));
	CHECK(fabs(pc.time_s / pa.time_s - want) < 1e-9);
	CHECK(fabs(abacus_machine_shot_loo(ms[0], 0) - 0.3 / 1.5) < 1e-12);
	CHECK(isnan(abacus_machine_shot_loo(ms[0], 1)));
	{
		abacus_graph *g2 = NULL;
		abacus_analysis *a2 = NULL;
		abacus_prediction q0, q1;
		CHECK(abacus_graph_load_file(&g2, "tests/data/graphs/mlp-32.onnx", &err) == 0);
		if (g2 && abacus_analyze(&a2, g2, &cfg, &err) == 0) {
			abacus_machine *bare = NULL;
			CHECK(abacus_machine_load(&bare, ta, strlen(ta), &err) == 0);
			if (bare && abacus_predict_machine(&q0, p, a2, bare, 0, &err) == 0 &&
			    abacus_predict_machine(&q1, p, a2, ms[0], 0, &err) == 0)
				CHECK(fabs(q1.time_s / q0.time_s - 1.2) < 1e-6);
			abacus_machine_free(bare);
		}
		abacus_analysis_free(a2);
		abacus_graph_free(g2);
	}
	CHECK(abacus_machine_save(&mt, &len, ms[0], &err) == 0);
	if (mt)
		CHECK(abacus_machine_load(&back, mt, len, &err) == 0);
	if (back) {
		CHECK(abacus_machine_n_shots(back) == 1);
		abacus_prediction pd;
		CHECK(abacus_predict_machine(&pd, p, a, back, 0, &err) == 0);
		CHECK(fabs(pd.time_s / pc.time_s - 1) < 1e-12);
	}
	abacus_machine_free(back);
	abacus_buffer_free(mt);
out:
	abacus_analysis_free(a);
	abacus_graph_free(g);
	abacus_predictor_free(plain);
	abacus_predictor_free(p);
	abacus_predictor_free(p2);
	abacus_machine_free(ms[0]);
	abacus_machine_free(ms[1]);
	abacus_dataset_free(d);
}

/* The local correction by hand: a shot at the query's composition and batch weighs 1, so the correction is
 * its residual beyond the factor shrunk by the prior, r / (k0 + 1); at 4× the batch its weight is
 * exp(−(β log 4)² / 2h²); a shot at distance 1 weighs nothing; leaving the near shot out leaves ~0. */
void test_shot_correction(void);
void test_shot_correction(void)
{
	ab_shot s[2];
	memset(s, 0, sizeof s);
	s[0].lr = 0.4;
	s[0].log_batch = log(4.0);
	s[1].lr = -0.6;
	s[1].log_batch = log(4.0);
	s[1].comp[0] = 1.0;
	double q[AB_COMP_DIM] = { 0 }, a = 0.1;
	double near = ab_shot_correction(s, 2, SIZE_MAX, a, q, log(4.0), AB_SHOT_PRIOR);
	CHECK(fabs(near - 0.3 / (AB_SHOT_PRIOR + 1)) < 1e-12);
	double db = AB_SHOT_BATCH_WEIGHT * log(4.0), w = exp(-db * db / (2 * AB_SHOT_BANDWIDTH * AB_SHOT_BANDWIDTH));
	CHECK(fabs(ab_shot_correction(s, 2, SIZE_MAX, a, q, log(16.0), AB_SHOT_PRIOR) - 0.3 * w / (AB_SHOT_PRIOR + w)) < 1e-12);
	CHECK(fabs(ab_shot_correction(s, 2, 0, a, q, log(4.0), AB_SHOT_PRIOR)) < 1e-12);
	CHECK(ab_shot_correction(s, 0, SIZE_MAX, a, q, log(4.0), AB_SHOT_PRIOR) == 0);
	/* A prior ten times as heavy (a two-thread machine whose rows a model found ten times as noisy: model.c
	 * ab_shot_local_prior) keeps less of the near shot's residual: 0.3 / (5 + 1). */
	CHECK(fabs(ab_shot_correction(s, 2, SIZE_MAX, a, q, log(4.0), 10 * AB_SHOT_PRIOR) - 0.3 / (10 * AB_SHOT_PRIOR + 1)) <
	      1e-12);
	ab_model m;
	memset(&m, 0, sizeof m);
	m.shot_prior_rows[0] = 5;
	m.shot_prior_rows[1] = 50;
	CHECK(ab_shot_local_prior(&m, 5) == AB_SHOT_PRIOR);
	CHECK(fabs(ab_shot_local_prior(&m, 50) - 10 * AB_SHOT_PRIOR) < 1e-12);
	m.shot_prior_rows[0] = 0; /* (no prior learnt: the constant) */
	CHECK(ab_shot_local_prior(&m, 50) == AB_SHOT_PRIOR);
}

/* A machine's few-shot prior from its shots' own spread (model.c ab_shot_prior_rows): shots that scatter as
 * the training machines' residuals did keep the thread count's prior; shots of twice that deviation (4× the
 * variance), pooled with the training spread at AB_SHOT_SPREAD_ROWS to their ten, weigh (10·4 + 10) / 20 =
 * 2.5× the rows; without a spread in the model, or with one shot, the thread count's prior alone. */
void test_shot_prior_spread(void);
void test_shot_prior_spread(void)
{
	ab_model m;
	memset(&m, 0, sizeof m);
	m.shot_prior_rows[0] = 4;
	m.shot_prior_rows[1] = 40;
	double s = 0.1, lr[10];
	/* Ten log residuals around 0.2 whose median absolute deviation is d: five at ±d, the median's two at 0. */
	const double at[10] = { -1, -1, -1, -1, 0, 0, 1, 1, 1, 1 };
	for (int i = 0; i < 10; i++)
		lr[i] = 0.2 + at[i] * s / 1.4826;
	CHECK(ab_shot_prior_rows(&m, lr, 10, 1) == 4); /* (no spread known) */
	m.shot_spread[0] = s * s;
	m.shot_spread[1] = 9 * s * s;
	CHECK(fabs(ab_shot_prior_rows(&m, lr, 10, 1) - 4) < 1e-9);
	CHECK(fabs(ab_shot_prior_rows(&m, lr, 10, 2) - 40 * (10 * s * s + 10 * 9 * s * s) / 20 / (9 * s * s)) < 1e-9);
	CHECK(ab_shot_prior_rows(&m, lr, 1, 1) == 4);
	CHECK(lr[0] == 0.2 - s / 1.4826); /* (the caller's residuals unchanged) */
	for (int i = 0; i < 10; i++)
		lr[i] = 0.2 + at[i] * 2 * s / 1.4826;
	CHECK(fabs(ab_shot_prior_rows(&m, lr, 10, 1) - 4 * 2.5) < 1e-9);
	/* The factor shrinks by the machine's own prior: median 0.2, 10 / (10 + 10). */
	CHECK(fabs(ab_shot_log_factor(lr, 10, ab_shot_prior_rows(&m, lr, 10, 1)) - 0.2 * 10 / 20) < 1e-9);
	/* and the local correction's prior grows with it, 2.5× the constant. */
	CHECK(fabs(ab_shot_local_prior(&m, 10) - 2.5 * AB_SHOT_PRIOR) < 1e-12);
}

/* Rewrites the bundle's "profile_intervals" line as `line` (the rest of the bundle as it was). */
static char *with_profile_intervals(const char *bundle, const char *line)
{
	const char *at = strstr(bundle, "\nprofile_intervals ");
	const char *end = at ? strchr(at + 1, '\n') : NULL;
	if (!end)
		return NULL;
	size_t head = (size_t)(at + 1 - bundle), n = head + strlen(line) + strlen(end) + 1;
	char *out = malloc(n);
	if (out)
		snprintf(out, n, "%.*s%s%s", (int)head, bundle, line, end);
	return out;
}

/* A machine's profile says its threads, and its time interval takes the quantiles of the held-out machines
 * with as many (model.h q_time_thr): the bundle's profile_intervals line carries them after q05, q95 and the
 * widening. With one thread's quantiles (-0.2, 0.4) and more threads' (-0.4, 0.1), a one-thread machine's
 * interval ends lie log(hi/t) / log(t/lo) = 2 apart and a two-thread one's 0.25 (the widening multiplies
 * both ends alike); a bundle of before (three fields) gives both the one pair; four or five fields are an
 * error. */
/* On one thread a profile prices depthwise convolutions at its own depthwise rate: their share of the
 * dense-convolution term (mobilenet_v2: a hand-checkable share, its depthwise FLOPs weighted as
 * AB_TORCH_DW_DENSE_RATIO dense ones) moves with conv_depthwise and not with conv_dense, linearly; a network
 * without depthwise convolutions (resnet18) does not move at all; on two threads the fit keeps its own term. */
void test_profile_depthwise_rate(void);
void test_profile_depthwise_rate(void)
{
	abacus_dataset *d = NULL;
	CHECK(three_machines(&d) == 0);
	if (!d)
		return;
	char t0[4096], tb[4096], t1[4096], t2[4096];
	abacus_error err;
	abacus_machine *base = profile_machine(t0, sizeof t0, "mA", 1.0);
	abacus_machine *ms[2] = { base, profile_machine(tb, sizeof tb, "mB", 2.0) };
	/* mA again with its depthwise rate alone 2× and 3× */
	abacus_machine *dw2 = profile_machine(t1, sizeof t1, "mA", 1.0), *dw3 = profile_machine(t2, sizeof t2, "mA", 1.0);
	if (dw2)
		dw2->rate[AB_RATE_CONV_DEPTHWISE] *= 2;
	if (dw3)
		dw3->rate[AB_RATE_CONV_DEPTHWISE] *= 3;
	abacus_train_opts o = ABACUS_TRAIN_OPTS_INIT;
	o.rounds = 30;
	o.machines = (const abacus_machine *const *)ms;
	o.n_machines = 2;
	abacus_predictor *p = NULL;
	CHECK(abacus_train(&p, &d, 1, &o, &err) == 0);
	abacus_graph *gm = NULL, *gr = NULL;
	abacus_analysis *am = NULL, *ar = NULL;
	CHECK(abacus_graph_load_file(&gm, "tests/data/graphs/mobilenet_v2-64.onnx", &err) == 0);
	CHECK(abacus_graph_load_file(&gr, "tests/data/graphs/resnet18-64.onnx", &err) == 0);
	abacus_config cfg = ABACUS_CONFIG_INIT;
	cfg.batch = 4;
	if (gm)
		CHECK(abacus_analyze(&am, gm, &cfg, &err) == 0);
	if (gr)
		CHECK(abacus_analyze(&ar, gr, &cfg, &err) == 0);
	if (!p || !am || !ar || !base || !dw2 || !dw3)
		goto out;
	/* The share: mobilenet_v2's depthwise FLOPs, weighted, are AB_TORCH_DW_DENSE_RATIO dense ones each. */
	double t[AB_TIME_TERMS], dw[2];
	ab_time_terms(t, am, 1);
	ab_time_conv_depthwise(dw, t, am, 1);
	CHECK(dw[0] > 0.05 && dw[0] < 1);
	CHECK(fabs(dw[0] * t[AB_TERM_CONV] - AB_TORCH_DW_DENSE_RATIO * am->dw_weighted_flops) < 1e-6 * t[AB_TERM_CONV]);
	CHECK(fabs(dw[1] - dw[0] / AB_TORCH_DW_DENSE_RATIO) < 1e-15);
	/* The rate a profile charges for CONV: dense for the rest, depthwise per depthwise FLOP for the share. */
	double r = ab_profile_term_rate(base->rate, AB_TERM_CONV, dw);
	CHECK(fabs(r - (base->rate[AB_RATE_CONV_DENSE] * (1 - dw[0]) + base->rate[AB_RATE_CONV_DEPTHWISE] * dw[1])) <=
	      1e-12 * r);
	CHECK(ab_profile_term_rate(base->rate, AB_TERM_MATMUL, dw) == base->rate[AB_RATE_MATMUL_SQUARE]);
	ab_time_terms(t, ar, 1);
	ab_time_conv_depthwise(dw, t, ar, 1);
	CHECK(dw[0] == 0 && dw[1] == 0);
	ab_time_terms(t, am, 2);
	ab_time_conv_depthwise(dw, t, am, 2);
	CHECK(dw[0] == 0 && dw[1] == 0);
	abacus_prediction m1, m2, m3, r1, r2;
	CHECK(abacus_predict_machine(&m1, p, am, base, 0, &err) == 0);
	CHECK(abacus_predict_machine(&m2, p, am, dw2, 0, &err) == 0);
	CHECK(abacus_predict_machine(&m3, p, am, dw3, 0, &err) == 0);
	CHECK(abacus_predict_machine(&r1, p, ar, base, 0, &err) == 0);
	CHECK(abacus_predict_machine(&r2, p, ar, dw3, 0, &err) == 0);
	if (getenv("ABACUS_TEST_VERBOSE"))
		printf("  mobilenet_v2 analytic %.6g / %.6g / %.6g s; resnet18 %.6g / %.6g s\n", m1.time_analytic_s,
		       m2.time_analytic_s, m3.time_analytic_s, r1.time_analytic_s, r2.time_analytic_s);
	/* Through the fitted predictor the share moves the time linearly (by as much as the fit's dense
	 * coefficient says: on this fixture of three networks it may come out 0) and never down. */
	CHECK(m2.time_analytic_s >= m1.time_analytic_s);
	double d12 = m2.time_analytic_s - m1.time_analytic_s, d13 = m3.time_analytic_s - m1.time_analytic_s;
	CHECK(fabs(d13 - 2 * d12) <= 1e-9 * m1.time_analytic_s);
	CHECK(r2.time_analytic_s == r1.time_analytic_s);
	CHECK(r2.time_s == r1.time_s);
	/* With every term's coefficient 1, doubling the depthwise rate adds exactly the depthwise share's
	 * price once more: rate × dw[1] × the CONV term. */
	ab_model hand;
	memset(&hand, 0, sizeof hand);
	for (int j = 0; j < AB_TIME_TERMS; j++)
		hand.coef[0][j] = 1;
	ab_time_terms(t, am, 1);
	ab_time_conv_depthwise(dw, t, am, 1);
	double b1 = ab_time_base_profile(&hand, t, dw, base->rate, 1), b2 = ab_time_base_profile(&hand, t, dw, dw2->rate, 1);
	double want = base->rate[AB_RATE_CONV_DEPTHWISE] * dw[1] * t[AB_TERM_CONV];
	CHECK(want > 0 && fabs((b2 - b1) - want) <= 1e-9 * b1);
out:
	abacus_analysis_free(am);
	abacus_analysis_free(ar);
	abacus_graph_free(gm);
	abacus_graph_free(gr);
	abacus_predictor_free(p);
	abacus_machine_free(base);
	abacus_machine_free(ms[1]);
	abacus_machine_free(dw2);
	abacus_machine_free(dw3);
	abacus_dataset_free(d);
}

void test_profile_thread_quantiles(void);
void test_profile_thread_quantiles(void)
{
	abacus_dataset *d = NULL;
	CHECK(three_machines(&d) == 0);
	if (!d)
		return;
	char ta[4096], tb[4096];
	abacus_error err;
	abacus_machine *ms[2] = { NULL, NULL }, *m2 = NULL;
	ms[0] = profile_machine(ta, sizeof ta, "mA", 1.0);
	ms[1] = profile_machine(tb, sizeof tb, "mB", 2.0);
	char *two = strstr(ta, "threads 1");
	if (two)
		two[8] = '2';
	CHECK(abacus_machine_load(&m2, ta, strlen(ta), &err) == 0);
	CHECK(m2 && abacus_machine_threads(m2) == 2);
	abacus_train_opts o = ABACUS_TRAIN_OPTS_INIT;
	o.rounds = 20;
	o.machines = (const abacus_machine *const *)ms;
	o.n_machines = 2;
	abacus_predictor *p = NULL, *q = NULL;
	abacus_graph *g = NULL;
	abacus_analysis *a = NULL;
	char *buf = NULL, *edited = NULL;
	size_t len = 0;
	CHECK(abacus_train(&p, &d, 1, &o, &err) == 0);
	CHECK(abacus_graph_load_file(&g, "tests/data/graphs/resnet18-64.onnx", &err) == 0);
	abacus_config cfg = ABACUS_CONFIG_INIT;
	cfg.batch = 4;
	if (g)
		CHECK(abacus_analyze(&a, g, &cfg, &err) == 0);
	if (!p || !a || !m2 || abacus_predictor_save(&buf, &len, p, &err))
		goto out;
	/* Eleven fields, as written (the last four the few-shot prior and its spread: test_shot_prior,
	 * test_shot_prior_spread); seven are read as well. */
	const char *line = strstr(buf, "\nprofile_intervals ");
	CHECK(line != NULL);
	double v[12];
	if (line)
		CHECK(sscanf(line + 1, "profile_intervals %la %la %la %la %la %la %la %la %la %la %la %la", &v[0], &v[1], &v[2],
		             &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9], &v[10], &v[11]) == 11);
	char text[256];
	snprintf(text, sizeof text, "profile_intervals %a %a %a -0.2 0.4 -0.4 0.1", v[0], v[1], v[2]);
	edited = with_profile_intervals(buf, text);
	CHECK(edited && abacus_predictor_load(&q, edited, strlen(edited), &err) == 0);
	abacus_prediction p1, p2;
	if (q && abacus_predict_machine(&p1, q, a, ms[0], 0, &err) == 0 &&
	    abacus_predict_machine(&p2, q, a, m2, 0, &err) == 0) {
		CHECK(fabs(log(p1.time_hi_s / p1.time_s) / log(p1.time_s / p1.time_lo_s) - 2.0) < 1e-6);
		CHECK(fabs(log(p2.time_hi_s / p2.time_s) / log(p2.time_s / p2.time_lo_s) - 0.25) < 1e-6);
	} else
		CHECK(0);
	abacus_predictor_free(q);
	q = NULL;
	free(edited);
	/* Three fields (a bundle of before): q05 and q95 for every thread count. */
	snprintf(text, sizeof text, "profile_intervals %a %a %a", -0.3, 0.15, v[2]);
	edited = with_profile_intervals(buf, text);
	CHECK(edited && abacus_predictor_load(&q, edited, strlen(edited), &err) == 0);
	if (q && abacus_predict_machine(&p1, q, a, ms[0], 0, &err) == 0 &&
	    abacus_predict_machine(&p2, q, a, m2, 0, &err) == 0) {
		CHECK(fabs(log(p1.time_hi_s / p1.time_s) / log(p1.time_s / p1.time_lo_s) - 0.5) < 1e-6);
		CHECK(fabs(log(p2.time_hi_s / p2.time_s) / log(p2.time_s / p2.time_lo_s) - 0.5) < 1e-6);
	} else
		CHECK(0);
	abacus_predictor_free(q);
	q = NULL;
	free(edited);
	/* Five fields: neither form; eight: neither (the prior has a value per thread count); a negative prior. */
	static const char *const bad[] = { "-0.2 0.4", "-0.2 0.4 -0.4 0.1 3", "-0.2 0.4 -0.4 0.1 3 -1" };
	for (int k = 0; k < 3; k++) {
		snprintf(text, sizeof text, "profile_intervals %a %a %a %s", v[0], v[1], v[2], bad[k]);
		edited = with_profile_intervals(buf, text);
		CHECK(edited && abacus_predictor_load(&q, edited, strlen(edited), &err) == ABACUS_EPARSE);
		CHECK(q == NULL);
		CHECK_STR_CONTAINS(err.msg, "of one thread, of more");
		if (k < 2) {
			free(edited);
			edited = NULL;
		}
	}
out:
	free(edited);
	abacus_buffer_free(buf);
	abacus_predictor_free(q);
	abacus_predictor_free(p);
	abacus_analysis_free(a);
	abacus_graph_free(g);
	abacus_machine_free(ms[0]);
	abacus_machine_free(ms[1]);
	abacus_machine_free(m2);
	abacus_dataset_free(d);
}

/* The few-shot factor (abacus_predictor_shot_factor): the median of the rows' log ratios shrunk toward 0 by
 * n / (n + the bundle's prior rows), which leave-one-machine-out residuals of the training machines set
 * (three here, each priced exactly by its profile: their medians scatter little, so the prior is strong).
 * The prior survives save and load; a bundle whose profile_intervals line lacks it (of before 2026-12-07)
 * takes the median alone. */
void test_shot_prior(void);
void test_shot_prior(void)
{
	abacus_dataset *d = NULL;
	CHECK(three_machines(&d) == 0);
	if (!d)
		return;
	char texts[3][4096];
	abacus_error err;
	abacus_machine *ms[3];
	three_profiles(ms, texts);
	abacus_train_opts o = ABACUS_TRAIN_OPTS_INIT;
	o.rounds = 30;
	o.machines = (const abacus_machine *const *)ms;
	o.n_machines = 3;
	abacus_predictor *p = NULL, *q = NULL, *old = NULL;
	char *text = NULL;
	size_t len = 0;
	CHECK(abacus_train(&p, &d, 1, &o, &err) == 0);
	if (!p)
		goto out;
	double lr[10], prior = -1, prior2 = -1;
	CHECK(abacus_predictor_shot_factor(p, lr, 0, 1, &prior) == 1);
	CHECK(prior > 0 && isfinite(prior));
	for (int i = 0; i < 10; i++)
		lr[i] = 0.3 + 0.01 * (i % 3); /* median 0.31 */
	double f = abacus_predictor_shot_factor(p, lr, 10, 1, &prior);
	if (getenv("ABACUS_TEST_VERBOSE"))
		printf("  prior %.3f rows, ten rows at +0.31: factor %.4f\n", prior, f);
	CHECK(fabs(log(f) - 0.31 * 10 / (10 + prior)) < 1e-12);
	CHECK(f > 1 && f < exp(0.31));
	/* No machine of two threads trained it: their prior is the one-thread machines' spread too. */
	CHECK(fabs(abacus_predictor_shot_factor(p, lr, 10, 2, &prior2) - f) < 1e-12 && prior2 == prior);
	/* Saved and loaded: the same prior to the bit. */
	CHECK(abacus_predictor_save(&text, &len, p, &err) == 0);
	CHECK(text && abacus_predictor_load(&q, text, len, &err) == 0);
	if (q) {
		CHECK(abacus_predictor_shot_factor(q, lr, 10, 1, &prior2) == f);
		CHECK(prior2 == prior);
	}
	/* The spreads (the last two fields) come as a pair, finite and not negative: ten fields, or a negative
	 * spread, is a corrupt bundle that names the line; eleven good ones load. */
	const char *const bad_lines[] = { "profile_intervals -0.3 0.3 0 -0.3 0.3 -0.3 0.3 1 9 0.01",
		                              "profile_intervals -0.3 0.3 0 -0.3 0.3 -0.3 0.3 1 9 0.01 -0.02",
		                              "profile_intervals -0.3 0.3 0 -0.3 0.3 -0.3 0.3 1 9 nan 0.02" };
	for (size_t i = 0; text && i < sizeof bad_lines / sizeof bad_lines[0]; i++) {
		char *edited = with_profile_intervals(text, bad_lines[i]);
		abacus_predictor *broken = NULL;
		CHECK(edited && abacus_predictor_load(&broken, edited, strlen(edited), &err) != 0 && !broken);
		CHECK(strstr(err.msg, "profile_intervals") != NULL);
		free(edited);
	}
	char *good = text ? with_profile_intervals(text, "profile_intervals -0.3 0.3 0 -0.3 0.3 -0.3 0.3 1 9 0.01 0.02") : NULL;
	abacus_predictor *fine = NULL;
	CHECK(good && abacus_predictor_load(&fine, good, strlen(good), &err) == 0);
	abacus_predictor_free(fine);
	free(good);
	/* The line of before: the first seven values only. */
	char *line = text ? strstr(text, "\nprofile_intervals ") : NULL;
	CHECK(line != NULL);
	if (line) {
		char *v = line + 1;
		for (int k = 0; k < 8 && v; k++)
			v = strchr(v + 1, ' ');
		char *eol = v ? strchr(v, '\n') : NULL;
		CHECK(v && eol);
		if (v && eol) {
			memmove(v, eol, strlen(eol) + 1);
			CHECK(abacus_predictor_load(&old, text, strlen(text), &err) == 0);
			if (old) {
				CHECK(fabs(log(abacus_predictor_shot_factor(old, lr, 10, 1, &prior2)) - 0.31) < 1e-12);
				CHECK(prior2 == 0);
			}
		}
	}
out:
	abacus_buffer_free(text);
	abacus_predictor_free(old);
	abacus_predictor_free(q);
	abacus_predictor_free(p);
	for (int i = 0; i < 3; i++)
		abacus_machine_free(ms[i]);
	abacus_dataset_free(d);
}
