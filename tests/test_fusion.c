/*
 * test_fusion.c — decomposed LayerNorm, GELU and SiLU (fusion.c) are priced as one kernel each, and only
 * when the pattern is complete and private.
 */
#include "analysis.h"
#include "model.h"
#include "tests.h"

abacus_analysis *t_analyze(tb_model *m, int64_t batch, abacus_graph **g, abacus_error *err);

/* x: batch×16×32. LayerNorm over the last axis as torch.onnx writes it at opset 14 (9 nodes with the
 * affine Mul/Add), then GELU (5 nodes), then SiLU (2 nodes), then a gate that is not a SiLU (Sigmoid of
 * another tensor). With `leak`, an extra Relu reads the LayerNorm's variance + eps, which PyTorch's
 * fused kernel would never expose: that LayerNorm must stay unfused. */
static tb_model *block(int leak)
{
	tb_model *m = tb_new(14);
	tb_input(m, "x", D(-1, 16, 32));
	tb_weight(m, "two", D(1));
	tb_weight(m, "eps", D(1));
	tb_weight(m, "gamma", D(32));
	tb_weight(m, "beta", D(32));
	tb_weight(m, "sqrt2", D(1));
	tb_weight(m, "one", D(1));
	tb_weight(m, "half", D(1));
	tb_node(m, "ReduceMean", L("x"), L("m1"));
	tb_attr_ints(m, "axes", D(-1));
	tb_node(m, "Sub", L("x", "m1"), L("d"));
	tb_node(m, "Pow", L("d", "two"), L("p"));
	tb_node(m, "ReduceMean", L("p"), L("m2"));
	tb_attr_ints(m, "axes", D(-1));
	tb_node(m, "Add", L("m2", "eps"), L("e"));
	tb_node(m, "Sqrt", L("e"), L("s"));
	tb_node(m, "Div", L("d", "s"), L("n"));
	tb_node(m, "Mul", L("n", "gamma"), L("g"));
	tb_node(m, "Add", L("g", "beta"), L("y1"));
	tb_node(m, "Div", L("y1", "sqrt2"), L("v"));
	tb_node(m, "Erf", L("v"), L("er"));
	tb_node(m, "Add", L("er", "one"), L("a1"));
	tb_node(m, "Mul", L("y1", "a1"), L("mm"));
	tb_node(m, "Mul", L("mm", "half"), L("y2"));
	tb_node(m, "Sigmoid", L("y2"), L("sg"));
	tb_node(m, "Mul", L("y2", "sg"), L("y3"));
	tb_node(m, "Sigmoid", L("y3"), L("sg2"));
	tb_node(m, "Mul", L("y1", "sg2"), L("q"));
	tb_output(m, "q");
	if (leak) {
		tb_node(m, "Relu", L("e"), L("r"));
		tb_output(m, "r");
	}
	return m;
}

void test_fusion_patterns(void);
void test_fusion_patterns(void)
{
	for (int leak = 0; leak < 2; leak++) {
		abacus_graph *g;
		abacus_error err;
		abacus_analysis *a = t_analyze(block(leak), 2, &g, &err);
		CHECK(a != NULL);
		if (!a)
			continue;
		/* LayerNorm: 8 of its 9 nodes fused (the final Add is the kernel); GELU 4 of 5; SiLU 1 of 2. */
		CHECK_EQ_I64((int64_t)a->fused_layers, leak ? 4 + 1 : 8 + 4 + 1);
		size_t n;
		const abacus_layer *Ls = abacus_analysis_layers(a, &n);
		/* The non-SiLU gate (the last Sigmoid and the last Mul) keeps both its nodes. */
		size_t last_mul = n, last_sig = n;
		for (size_t i = 0; i < n; i++) {
			if (!strcmp(Ls[i].op, "Mul"))
				last_mul = i;
			if (!strcmp(Ls[i].op, "Sigmoid"))
				last_sig = i;
		}
		int q_kernel = last_mul < n && a->layer_view[last_mul] == AB_LAYER_KERNEL;
		int sig2_kernel = last_sig < n && a->layer_view[last_sig] == AB_LAYER_KERNEL;
		CHECK(q_kernel && sig2_kernel);
		/* The time terms drop exactly the fused layers and their bytes. */
		double t[AB_TIME_TERMS];
		ab_time_terms(t, a);
		const abacus_totals *T = abacus_analysis_totals(a);
		CHECK(t[4] == (double)T->layers - a->view_layers - a->free_layers - a->fused_layers);
		CHECK(a->fused_bytes > 0 &&
		      t[3] == (double)T->bytes_read + (double)T->bytes_written - a->view_bytes - a->free_bytes - a->fused_bytes - a->weight_bytes);
		abacus_analysis_free(a);
		abacus_graph_free(g);
	}
}
