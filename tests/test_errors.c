/*
 * test_errors.c — bad input gets a clear error that says what and where, never a crash: truncated
 * files, random bytes, cycles, missing tensors, overflowing and negative dims, absurd nesting, and
 * allocation failure at every allocation of a load + analysis.
 */
#include <dirent.h>
#include <pthread.h>
#include <stdint.h>
#include <stddef.h>
#include <stdlib.h>

#include "tests.h"
#include "util.h"

static void pack_small(uint8_t **buf, size_t *len)
{
	tb_model *m = tb_new(14);
	tb_input(m, "x", D(-1, 3, 8, 8));
	tb_weight(m, "w", D(4, 3, 3, 3));
	tb_ints(m, "shape", 2, (const int64_t[]){ 0, -1 });
	tb_node(m, "Conv", L("x", "w"), L("c"));
	tb_node(m, "Relu", L("c"), L("r"));
	tb_node(m, "Reshape", L("r", "shape"), L("y"));
	tb_output(m, "y");
	tb_pack(m, buf, len);
	tb_free(m);
}

void test_truncated_files(void);
void test_truncated_files(void)
{
	uint8_t *buf;
	size_t len;
	pack_small(&buf, &len);
	int errors = 0;
	for (size_t cut = 0; cut < len; cut++) {
		abacus_graph *g = NULL;
		abacus_error err;
		int rc = abacus_graph_load(&g, buf, cut, &err);
		if (rc) {
			errors++;
			CHECK(err.msg[0] != '\0');
			CHECK(g == NULL);
		}
		abacus_graph_free(g);
	}
	/* Most prefixes cut a field in half; all must be handled, and most must be rejected. */
	CHECK(errors > (int)len / 2);
	free(buf);
}

void test_random_bytes(void);
void test_random_bytes(void)
{
	uint8_t buf[4096];
	unsigned seed = 12345;
	int loaded = 0, refused = 0;
	for (int trial = 0; trial < 200; trial++) {
		size_t len = (size_t)(trial * 20 + 1);
		for (size_t i = 0; i < len; i++) {
			seed = seed * 1103515245 + 12345;
			buf[i] = (uint8_t)(seed >> 16);
		}
		abacus_graph *g = NULL;
		abacus_error err;
		if (abacus_graph_load(&g, buf, len, &err) == 0) {
			/* Bytes that happen to decode: a graph that must analyse into consistent numbers or fail
			 * with a message, never return garbage (the check this case lacked before 2026-12-04). */
			loaded++;
			CHECK(g != NULL);
			abacus_config cfg = ABACUS_CONFIG_INIT;
			abacus_analysis *a = NULL;
			int rc = abacus_analyze(&a, g, &cfg, &err);
			if (rc == 0) {
				const abacus_totals *t = abacus_analysis_totals(a);
				const abacus_memory *m = abacus_analysis_memory(a);
				CHECK(t->forward_flops >= 0);
				CHECK(t->backward_flops >= 0);
				CHECK(t->params >= 0);
				CHECK(t->layers >= 0);
				CHECK_EQ_I64(m->peak, m->weights + m->buffers + m->optimizer + m->inputs + m->gradients +
				                          m->activations + m->workspace);
				CHECK(m->peak >= m->persistent);
				abacus_analysis_free(a);
			} else {
				CHECK(rc < 0);
				CHECK_EQ_I64(err.code, rc);
				CHECK(err.msg[0] != '\0');
			}
		} else {
			refused++;
			CHECK(g == NULL);
			CHECK(err.code == ABACUS_EPARSE || err.code == ABACUS_EGRAPH || err.code == ABACUS_ELIMIT ||
			      err.code == ABACUS_EUNSUPPORTED);
			if (err.msg[0] == '\0')
				fprintf(stderr, "  trial %d: error %d without a message\n", trial, err.code);
			CHECK(err.msg[0] != '\0');
		}
		abacus_graph_free(g);
	}
	/* Random bytes are nearly never a graph: most trials must be refused (a loader that accepted anything
	 * would pass every check above). */
	CHECK(refused >= 150);
	CHECK_EQ_I64(loaded + refused, 200);
}

static int load_model(tb_model *m, abacus_error *err)
{
	uint8_t *buf;
	size_t len;
	tb_pack(m, &buf, &len);
	tb_free(m);
	abacus_graph *g = NULL;
	int rc = abacus_graph_load(&g, buf, len, err);
	if (rc == 0) {
		abacus_config cfg = ABACUS_CONFIG_INIT;
		abacus_analysis *a = NULL;
		rc = abacus_analyze(&a, g, &cfg, err);
		abacus_analysis_free(a);
	}
	abacus_graph_free(g);
	free(buf);
	return rc;
}

void test_cycle(void);
void test_cycle(void)
{
	tb_model *m = tb_new(14);
	tb_input(m, "x", D(1, 4));
	tb_node(m, "Add", L("x", "b"), L("a"));
	tb_node(m, "Relu", L("a"), L("b"));
	tb_output(m, "b");
	abacus_error err;
	CHECK(load_model(m, &err) == ABACUS_EGRAPH);
	CHECK_STR_CONTAINS(err.msg, "cycle");
}

void test_missing_tensor(void);
void test_missing_tensor(void)
{
	tb_model *m = tb_new(14);
	tb_input(m, "x", D(1, 4));
	tb_node(m, "Add", L("x", "ghost"), L("y"));
	tb_output(m, "y");
	abacus_error err;
	CHECK(load_model(m, &err) == ABACUS_EGRAPH);
	CHECK_STR_CONTAINS(err.msg, "ghost");
	CHECK_STR_CONTAINS(err.where, "Add_0");
}

void test_overflowing_dims(void);
void test_overflowing_dims(void)
{
	/* A weight whose dims multiply past 2^63. */
	tb_model *m = tb_new(14);
	tb_input(m, "x", D(1, 4));
	tb_weight(m, "w", D(4000000000LL, 4000000000LL, 4000000000LL));
	tb_node(m, "Add", L("x", "w"), L("y"));
	tb_output(m, "y");
	abacus_error err;
	CHECK(load_model(m, &err) == ABACUS_ESHAPE);
	CHECK_STR_CONTAINS(err.msg, "overflow");
	/* A convolution weight of 0×1×2^40×2^40: no elements, so a product that stops at the zero called it
	 * valid, and the kernel size 2^80 then overflowed in ops_nn.c (UBSan: signed overflow). Every dim
	 * product is checked past a zero now; the same bytes are fuzz/corpus/onnx/conv-weight-zero-2p80. */
	m = tb_new(14);
	tb_input(m, "x", D(1, 1, 4, 4));
	tb_weight(m, "w", D(0, 1, 1LL << 40, 1LL << 40));
	tb_node(m, "Conv", L("x", "w"), L("y"));
	tb_output(m, "y");
	CHECK_EQ_I64(load_model(m, &err), ABACUS_ESHAPE);
	CHECK_STR_CONTAINS(err.msg, "overflow");
	CHECK_STR_CONTAINS(err.where, "w");
	/* A batch that makes an activation overflow. */
	m = tb_new(14);
	tb_input(m, "x", D(-1, 1000000000000LL));
	tb_weight(m, "w", D(1000000000000LL, 2));
	tb_node(m, "MatMul", L("x", "w"), L("y"));
	tb_output(m, "y");
	uint8_t *buf;
	size_t len;
	tb_pack(m, &buf, &len);
	tb_free(m);
	abacus_graph *g = NULL;
	CHECK(abacus_graph_load(&g, buf, len, &err) == 0);
	free(buf);
	abacus_config cfg = ABACUS_CONFIG_INIT;
	cfg.batch = 1000000000000LL;
	abacus_analysis *a = NULL;
	CHECK(abacus_analyze(&a, g, &cfg, &err) == ABACUS_ESHAPE);
	CHECK_STR_CONTAINS(err.msg, "overflow");
	abacus_analysis_free(a);
	abacus_graph_free(g);
}

void test_negative_dim(void);
void test_negative_dim(void)
{
	tb_model *m = tb_new(14);
	tb_input(m, "x", D(1, 4));
	tb_weight(m, "w", D(4, -3));
	tb_node(m, "MatMul", L("x", "w"), L("y"));
	tb_output(m, "y");
	abacus_error err;
	CHECK(load_model(m, &err) == ABACUS_ESHAPE);
	CHECK_STR_CONTAINS(err.msg, "negative");
	/* A negative Reshape target other than -1. */
	m = tb_new(14);
	tb_input(m, "x", D(2, 4));
	tb_ints(m, "shape", 2, (const int64_t[]){ -2, 4 });
	tb_node(m, "Reshape", L("x", "shape"), L("y"));
	tb_output(m, "y");
	CHECK(load_model(m, &err) == ABACUS_ESHAPE);
	CHECK_STR_CONTAINS(err.msg, "negative");
}

void test_bad_batch_and_inputs(void);
void test_bad_batch_and_inputs(void)
{
	uint8_t *buf;
	size_t len;
	pack_small(&buf, &len);
	abacus_graph *g = NULL;
	abacus_error err;
	CHECK(abacus_graph_load(&g, buf, len, &err) == 0);
	free(buf);
	abacus_config cfg = ABACUS_CONFIG_INIT;
	abacus_analysis *a = NULL;
	cfg.batch = 0;
	CHECK(abacus_analyze(&a, g, &cfg, &err) == ABACUS_EINVAL);
	cfg.batch = 1;
	abacus_input_shape in;
	CHECK(abacus_parse_dims(&in, "1x3x0x8", &err) == ABACUS_EINVAL);
	CHECK(abacus_parse_dims(&in, "1x3xbanana", &err) == ABACUS_EINVAL);
	CHECK(abacus_parse_dims(&in, "2x3x16x16", &err) == 0);
	in.name = "nope";
	cfg.inputs = &in;
	cfg.n_inputs = 1;
	CHECK(abacus_analyze(&a, g, &cfg, &err) == ABACUS_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "nope");
	in.name = "x";
	CHECK(abacus_analyze(&a, g, &cfg, &err) == 0);
	size_t n;
	const abacus_layer *Ls = abacus_analysis_layers(a, &n);
	CHECK_EQ_I64(n, 3);
	if (n == 3) {
		CHECK_EQ_I64(Ls[2].dims[0], 2);
		CHECK_EQ_I64(Ls[2].dims[1], 4 * 14 * 14);
	}
	abacus_analysis_free(a);
	abacus_graph_free(g);
}

/* Sub-graphs nested far deeper than any real model: a bounded error, not a stack overflow.
 * Wire format: ModelProto.graph (7) → GraphProto.node (1) → NodeProto.attribute (5) → AttributeProto.g (6). */
void test_deep_nesting(void);
void test_deep_nesting(void)
{
	enum { DEPTH = 5000 };
	/* Build from the inside out: each level wraps the previous bytes in a length-delimited field. */
	size_t cap = 16 * DEPTH * 4 + 64, len = 0;
	uint8_t *cur = calloc(1, cap), *nxt = calloc(1, cap);
	static const uint8_t fields[3] = { (6 << 3) | 2, (5 << 3) | 2, (1 << 3) | 2 }; /* attr.g, node.attr, graph.node */
	for (int level = 0; level < DEPTH * 3; level++) {
		uint8_t hdr[16];
		size_t h = 0, v = len;
		hdr[h++] = fields[level % 3];
		do {
			hdr[h++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
			v >>= 7;
		} while (v);
		memcpy(nxt, hdr, h);
		memcpy(nxt + h, cur, len);
		len += h;
		uint8_t *t = cur;
		cur = nxt;
		nxt = t;
	}
	/* Wrap in ModelProto.graph. */
	uint8_t hdr[16];
	size_t h = 0, v = len;
	hdr[h++] = (7 << 3) | 2;
	do {
		hdr[h++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
	memcpy(nxt, hdr, h);
	memcpy(nxt + h, cur, len);
	len += h;
	abacus_graph *g = NULL;
	abacus_error err;
	CHECK(abacus_graph_load(&g, nxt, len, &err) == ABACUS_ELIMIT);
	CHECK_STR_CONTAINS(err.msg, "nest");
	abacus_graph_free(g);
	free(cur);
	free(nxt);
}

/* The n-th allocation fails, for every n: an out-of-memory error, and nothing leaks (ASan checks). */
void test_alloc_failure_every_n(void);
void test_alloc_failure_every_n(void)
{
	uint8_t *buf;
	size_t len;
	pack_small(&buf, &len);
	ab_alloc_fail_after(0);
	abacus_graph *g = NULL;
	abacus_error err;
	abacus_config cfg = ABACUS_CONFIG_INIT;
	abacus_analysis *a = NULL;
	CHECK(abacus_graph_load(&g, buf, len, &err) == 0);
	CHECK(abacus_analyze(&a, g, &cfg, &err) == 0);
	abacus_analysis_free(a);
	abacus_graph_free(g);
	long total = ab_alloc_fail_after(0);
	CHECK(total > 10);
	int oom = 0;
	for (long n = 1; n <= total; n++) {
		ab_alloc_fail_after(n);
		g = NULL;
		a = NULL;
		int rc = abacus_graph_load(&g, buf, len, &err);
		if (rc == 0)
			rc = abacus_analyze(&a, g, &cfg, &err);
		ab_alloc_fail_after(0);
		if (rc) {
			CHECK_EQ_I64(rc, ABACUS_ENOMEM);
			oom++;
		}
		abacus_analysis_free(a);
		abacus_graph_free(g);
	}
	CHECK_EQ_I64(oom, total);
	free(buf);
}

/* Replays the committed fuzz corpus (fuzz/corpus/onnx): every input must load or fail cleanly. */
void test_fuzz_corpus_replay(void);
void test_fuzz_corpus_replay(void)
{
	DIR *d = opendir("fuzz/corpus/onnx");
	CHECK(d != NULL);
	if (!d)
		return;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char path[512];
		snprintf(path, sizeof path, "fuzz/corpus/onnx/%s", e->d_name);
		abacus_graph *g = NULL;
		abacus_error err;
		int rc = abacus_graph_load_file(&g, path, &err);
		if (rc == 0) {
			abacus_config cfg = ABACUS_CONFIG_INIT;
			abacus_analysis *a = NULL;
			if (abacus_analyze(&a, g, &cfg, &err) == 0)
				abacus_analysis_free(a);
			else
				CHECK(err.msg[0] != '\0');
		} else {
			CHECK(err.msg[0] != '\0');
		}
		abacus_graph_free(g);
		n++;
	}
	closedir(d);
	CHECK(n > 0);
}

/* Hostile sizes that are valid: a million-node graph loads and analyses (bounded time and memory), and a
 * 2 GB declared weight in a tiny file costs nothing but its dims (data is never allocated). */
void test_million_nodes(void);
void test_million_nodes(void)
{
#if defined(__SANITIZE_ADDRESS__)
	enum { N = 200000 }; /* ASan makes every allocation ~10× slower; the code path is the same */
#else
	enum { N = 1000000 };
#endif
	tb_model *m = tb_new(14);
	tb_input(m, "x", D(-1, 4));
	char a[32], b[32];
	for (int i = 0; i < N; i++) {
		snprintf(a, sizeof a, i ? "t%d" : "x", i - 1);
		snprintf(b, sizeof b, "t%d", i);
		tb_node(m, "Relu", (const char *const[]){ a, NULL }, (const char *const[]){ b, NULL });
	}
	snprintf(b, sizeof b, "t%d", N - 1);
	tb_output(m, b);
	uint8_t *buf;
	size_t len;
	tb_pack(m, &buf, &len);
	tb_free(m);
	abacus_graph *g = NULL;
	abacus_error err;
	abacus_analysis *an = NULL;
	abacus_config cfg = ABACUS_CONFIG_INIT;
	cfg.batch = 2;
	CHECK(abacus_graph_load(&g, buf, len, &err) == 0);
	free(buf);
	if (g) {
		CHECK(abacus_analyze(&an, g, &cfg, &err) == 0);
		if (an) {
			CHECK_EQ_I64(abacus_analysis_totals(an)->layers, N);
			CHECK_EQ_I64(abacus_analysis_totals(an)->forward_flops, (int64_t)N * 8);
		}
	}
	abacus_analysis_free(an);
	abacus_graph_free(g);
}

void test_huge_declared_tensor(void);
void test_huge_declared_tensor(void)
{
	tb_model *m = tb_new(14);
	tb_input(m, "x", D(-1, 536870912));
	tb_weight(m, "w", D(536870912)); /* 2 GiB of float32, declared only */
	tb_node(m, "Mul", L("x", "w"), L("y"));
	tb_output(m, "y");
	uint8_t *buf;
	size_t len;
	tb_pack(m, &buf, &len);
	tb_free(m);
	CHECK(len < 1000);
	abacus_graph *g = NULL;
	abacus_error err;
	abacus_analysis *a = NULL;
	abacus_config cfg = ABACUS_CONFIG_INIT;
	CHECK(abacus_graph_load(&g, buf, len, &err) == 0);
	free(buf);
	CHECK(g != NULL);
	if (g)
		CHECK(abacus_analyze(&a, g, &cfg, &err) == 0);
	if (a) {
		CHECK_EQ_I64(abacus_analysis_totals(a)->params, 536870912);
		CHECK_EQ_I64(abacus_analysis_memory(a)->weights, 2147483648LL);
	}
	abacus_analysis_free(a);
	abacus_graph_free(g);
}

/* alloc.c: large blocks are page mappings kept for reuse once freed. A reused block must come back zeroed
 * from ab_calloc, ab_realloc must keep the contents across the small/large boundary both ways, and
 * abacus_release_memory must leave the allocator usable. Under AddressSanitizer every block comes from
 * malloc, so only the contents are checked there. */
void test_large_block_reuse(void);
void test_large_block_reuse(void)
{
	size_t n = (size_t)1 << 20;
	unsigned char *p = ab_malloc(n);
	CHECK(p != NULL);
	if (!p)
		return;
	memset(p, 0xab, n);
	ab_free(p);
	unsigned char *q = ab_calloc(n / 8, 8);
	CHECK(q != NULL);
	size_t nonzero = 0;
	for (size_t k = 0; q && k < n; k++)
		nonzero += q[k] != 0;
	CHECK_EQ_I64(nonzero, 0);
#if !defined(__SANITIZE_ADDRESS__)
	CHECK(q == p); /* the freed mapping came back from the cache */
#endif
	/* small -> large -> small, contents kept each way */
	char *s = ab_malloc(100);
	CHECK(s != NULL);
	for (int k = 0; s && k < 100; k++)
		s[k] = (char)k;
	s = ab_realloc(s, 3 << 20);
	CHECK(s != NULL);
	int same = 1;
	for (int k = 0; s && k < 100; k++)
		same &= s[k] == (char)k;
	CHECK(same);
	if (s)
		s[(3 << 20) - 1] = 7; /* the whole size is writable */
	s = ab_realloc(s, 50);
	CHECK(s != NULL);
	same = 1;
	for (int k = 0; s && k < 50; k++)
		same &= s[k] == (char)k;
	CHECK(same);
	ab_free(s);
	ab_free(q);
	ab_free(NULL);
	abacus_release_memory();
	unsigned char *r = ab_calloc(1, n);
	CHECK(r != NULL);
	if (r) {
		CHECK(r[0] == 0);
		CHECK(r[n - 1] == 0);
	}
	ab_free(r);
	/* failure injection reaches large blocks too */
	ab_alloc_fail_after(1);
	CHECK(ab_malloc(n) == NULL);
	ab_alloc_fail_after(0);
}

/* The cache of freed large blocks is shared by threads (a scheduler analysing graphs in parallel): four
 * threads each take, fill, check and free large blocks of different sizes 200 times; a block handed to
 * two threads at once would show the other's bytes. */
static void *block_churn(void *arg)
{
	unsigned char tag = (unsigned char)(uintptr_t)arg;
	long bad = 0;
	for (int k = 0; k < 200; k++) {
		size_t n = ((size_t)1 << 18) + (size_t)(k % 4) * 40960;
		unsigned char *p = ab_malloc(n);
		if (!p)
			return (void *)1;
		memset(p, tag, n);
		for (size_t i = 0; i < n; i += 4093)
			bad += p[i] != tag;
		ab_free(p);
	}
	return (void *)(uintptr_t)(bad != 0);
}

void test_large_block_threads(void);
void test_large_block_threads(void)
{
	pthread_t th[4];
	for (int i = 0; i < 4; i++)
		CHECK(pthread_create(&th[i], NULL, block_churn, (void *)(uintptr_t)(i + 1)) == 0);
	for (int i = 0; i < 4; i++) {
		void *r = NULL;
		CHECK(pthread_join(th[i], &r) == 0);
		CHECK(r == NULL);
	}
	abacus_release_memory();
}

/* abacus.h promises that one graph may be analysed from several threads at once: four threads analyse the
 * same loaded resnet18 at different batches, each 20 times, and every result must equal the one analysis
 * made before the threads started. Under ThreadSanitizer (make check-tsan) this case found the unsynchronised
 * allocation counter in alloc.c. */
typedef struct shared_graph {
	const abacus_graph *g;
	int64_t batch;
	abacus_memory want_mem;
	abacus_totals want_tot;
} shared_graph;

static void *analyse_shared(void *arg)
{
	const shared_graph *s = arg;
	for (int k = 0; k < 20; k++) {
		abacus_config cfg = ABACUS_CONFIG_INIT;
		cfg.batch = s->batch;
		abacus_analysis *a = NULL;
		abacus_error err;
		if (abacus_analyze(&a, s->g, &cfg, &err))
			return (void *)1;
		int same = !memcmp(abacus_analysis_memory(a), &s->want_mem, sizeof s->want_mem) &&
		           !memcmp(abacus_analysis_totals(a), &s->want_tot, sizeof s->want_tot);
		abacus_analysis_free(a);
		if (!same)
			return (void *)2;
	}
	return NULL;
}

void test_analyze_shared_graph_threads(void);
void test_analyze_shared_graph_threads(void)
{
	abacus_graph *g = NULL;
	abacus_error err;
	CHECK(abacus_graph_load_file(&g, "tests/data/graphs/resnet18-64.onnx", &err) == 0);
	if (!g)
		return;
	shared_graph s[4];
	for (int i = 0; i < 4; i++) {
		abacus_config cfg = ABACUS_CONFIG_INIT;
		cfg.batch = s[i].batch = 1 + 3 * i;
		s[i].g = g;
		abacus_analysis *a = NULL;
		CHECK(abacus_analyze(&a, g, &cfg, &err) == 0);
		if (!a) {
			abacus_graph_free(g);
			return;
		}
		s[i].want_mem = *abacus_analysis_memory(a);
		s[i].want_tot = *abacus_analysis_totals(a);
		abacus_analysis_free(a);
	}
	pthread_t th[4];
	for (int i = 0; i < 4; i++)
		CHECK(pthread_create(&th[i], NULL, analyse_shared, &s[i]) == 0);
	for (int i = 0; i < 4; i++) {
		void *r = (void *)3;
		CHECK(pthread_join(th[i], &r) == 0);
		CHECK_EQ_I64((intptr_t)r, 0);
	}
	abacus_graph_free(g);
}

/* The runtime selector (abacus_config.runtime): NULL and "torch-1.13.1" price alike; an unknown name is an
 * error that lists the runtimes this library prices. */
void test_runtime_selector(void);
void test_runtime_selector(void)
{
	CHECK(abacus_runtime_name(0) != NULL);
	if (abacus_runtime_name(0))
		CHECK(!strcmp(abacus_runtime_name(0), "torch-1.13.1"));
	size_t n = 0;
	while (abacus_runtime_name(n))
		n++;
	CHECK(n >= 1);
	CHECK(n < 64);
	abacus_graph *g = NULL;
	abacus_error err;
	CHECK_EQ_I64(abacus_graph_load_file(&g, "tests/data/graphs/mobilenet_v2-32.onnx", &err), 0);
	if (!g)
		return;
	abacus_config cfg = ABACUS_CONFIG_INIT;
	cfg.batch = 4;
	abacus_analysis *a = NULL, *b = NULL;
	CHECK_EQ_I64(abacus_analyze(&a, g, &cfg, &err), 0);
	cfg.runtime = "torch-1.13.1";
	CHECK_EQ_I64(abacus_analyze(&b, g, &cfg, &err), 0);
	if (a && b) {
		CHECK(!memcmp(abacus_analysis_memory(a), abacus_analysis_memory(b), sizeof(abacus_memory)));
		CHECK(!memcmp(abacus_analysis_totals(a), abacus_analysis_totals(b), sizeof(abacus_totals)));
	}
	abacus_analysis_free(a);
	abacus_analysis_free(b);
	a = NULL;
	cfg.runtime = "jax-0.4.30";
	CHECK_EQ_I64(abacus_analyze(&a, g, &cfg, &err), ABACUS_EINVAL);
	CHECK(a == NULL);
	CHECK_STR_CONTAINS(err.msg, "unknown runtime 'jax-0.4.30'");
	CHECK_STR_CONTAINS(err.msg, "torch-1.13.1");
	CHECK_STR_CONTAINS(err.msg, "tf-2.21.0");
	abacus_graph_free(g);
}

/* Versions: the header's numbers are the library's, and option structs carry a version that the library
 * checks (a struct filled by hand without ABACUS_CONFIG_INIT has version 0 and is refused, saying how). */
void test_api_versions(void);
void test_api_versions(void)
{
	int ma = -1, mi = -1, pa = -1;
	const char *v = abacus_version(&ma, &mi, &pa);
	CHECK_EQ_I64(ma, ABACUS_VERSION_MAJOR);
	CHECK_EQ_I64(mi, ABACUS_VERSION_MINOR);
	CHECK_EQ_I64(pa, ABACUS_VERSION_PATCH);
	char want[32];
	snprintf(want, sizeof want, "%d.%d.%d", ma, mi, pa);
	CHECK(!strcmp(v, want));
	CHECK(!strcmp(v, ABACUS_VERSION));
	CHECK(abacus_version(NULL, NULL, NULL) == v);
	CHECK(!strcmp(abacus_strerror(ABACUS_ELIBRARY), "library failure")); /* XGBoost failures, not "unsupported" */

	abacus_config a = ABACUS_CONFIG_INIT, b;
	memset(&b, 0xff, sizeof b);
	CHECK_EQ_I64(abacus_config_init(&b, ABACUS_CONFIG_VERSION), 0);
	CHECK_EQ_I64(b.version, a.version);
	CHECK_EQ_I64(b.batch, a.batch);
	CHECK(b.inputs == NULL);
	CHECK_EQ_I64(b.n_inputs, 0);
	CHECK_EQ_I64(b.optimizer, a.optimizer);
	CHECK_EQ_I64(b.strict, 0);
	CHECK(b.runtime == NULL);
	CHECK_EQ_I64(b.threads, 1);
	CHECK(b.isa == NULL);
	CHECK_EQ_I64(abacus_config_init(&b, ABACUS_CONFIG_VERSION + 1), ABACUS_EINVAL);
	abacus_train_opts o = ABACUS_TRAIN_OPTS_INIT, p;
	CHECK_EQ_I64(abacus_train_opts_init(&p, ABACUS_TRAIN_OPTS_VERSION), 0);
	CHECK_EQ_I64(p.rounds, o.rounds);
	CHECK_EQ_I64(p.seed, o.seed);
	CHECK_EQ_I64(abacus_train_opts_init(&p, 0), ABACUS_EINVAL);

	abacus_graph *g = NULL;
	abacus_error err;
	CHECK_EQ_I64(abacus_graph_load_file(&g, "tests/data/graphs/mlp-32.onnx", &err), 0);
	if (!g)
		return;
	abacus_config hand;
	memset(&hand, 0, sizeof hand);
	hand.batch = 2;
	abacus_analysis *an = NULL;
	CHECK_EQ_I64(abacus_analyze(&an, g, &hand, &err), ABACUS_EINVAL);
	CHECK(an == NULL);
	CHECK_STR_CONTAINS(err.msg, "abacus_config has version 0");
	CHECK_STR_CONTAINS(err.msg, "_INIT");
	/* A program built against the version-1 header passes a struct that ends before `threads`: only its
	 * fields are read (AddressSanitizer would see a read past the heap block), and it analyses as one
	 * thread on an AVX machine, as version 1 did. abacus_config_init for version 1 writes no byte past it. */
	size_t v1_size = offsetof(abacus_config, threads);
	unsigned char *raw = malloc(sizeof(abacus_config));
	abacus_config *v1 = (abacus_config *)raw;
	CHECK(raw != NULL);
	if (raw) {
		memset(raw, 0xa5, sizeof(abacus_config));
		CHECK_EQ_I64(abacus_config_init(v1, 1), 0);
		for (size_t i = v1_size; i < sizeof(abacus_config); i++)
			CHECK(raw[i] == 0xa5);
		v1->batch = 2;
		abacus_config *exact = malloc(v1_size);
		abacus_analysis *a1 = NULL, *a2 = NULL;
		abacus_config cur = ABACUS_CONFIG_INIT;
		cur.batch = 2;
		if (exact) {
			memcpy(exact, raw, v1_size);
			CHECK_EQ_I64(abacus_analyze(&a1, g, exact, &err), 0);
			CHECK_EQ_I64(abacus_analyze(&a2, g, &cur, &err), 0);
			if (a1 && a2)
				CHECK_EQ_I64(abacus_analysis_memory(a1)->peak, abacus_analysis_memory(a2)->peak);
		}
		abacus_analysis_free(a1);
		abacus_analysis_free(a2);
		free(exact);
		free(raw);
	}
	abacus_graph_free(g);

	abacus_train_opts bad = ABACUS_TRAIN_OPTS_INIT;
	bad.version = 99;
	abacus_predictor *pr = NULL;
	CHECK_EQ_I64(abacus_train(&pr, NULL, 0, &bad, &err), ABACUS_EINVAL);
	CHECK(pr == NULL);
	CHECK_STR_CONTAINS(err.msg, "abacus_train_opts has version 99");
}

/* Layer access by index agrees with the array and ends with NULL. */
void test_layer_accessors(void);
void test_layer_accessors(void)
{
	abacus_graph *g = NULL;
	abacus_error err;
	CHECK_EQ_I64(abacus_graph_load_file(&g, "tests/data/graphs/squeezenet1_1-32.onnx", &err), 0);
	if (!g)
		return;
	abacus_config cfg = ABACUS_CONFIG_INIT;
	abacus_analysis *a = NULL;
	CHECK_EQ_I64(abacus_analyze(&a, g, &cfg, &err), 0);
	if (a) {
		size_t n = 0;
		const abacus_layer *L = abacus_analysis_layers(a, &n);
		CHECK_EQ_I64(abacus_analysis_n_layers(a), n);
		CHECK(n > 10);
		for (size_t i = 0; i < n; i++)
			if (abacus_analysis_layer(a, i) != &L[i])
				t_failed_checks++;
		CHECK(abacus_analysis_layer(a, n) == NULL);
		abacus_analysis_free(a);
	}
	abacus_graph_free(g);
}
