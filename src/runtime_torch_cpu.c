/*
 * runtime_torch_cpu.c — PyTorch 1.13.1 (Debian's python3-torch) on a CPU: oneDNN convolutions, OpenBLAS
 * matrix products, the eager autograd engine. Everything here was measured on this project's machines
 * (docs/PROTOCOL.md; the dates say when); another runtime measures its own and is another file (runtime.h).
 *
 * What it holds: which convolution kernel PyTorch picks and the transient memory oneDNN's backward holds;
 * a layer's fixed cost by kind; an activation's arithmetic beyond a ReLU's; the optimizer step's kernels;
 * and how an analysed configuration's work becomes the analytic time terms (model.h ab_term).
 */
#include <math.h>

#include "analysis.h"
#include "runtime.h"

static int64_t bytes_of(const ab_shape *s)
{
	int64_t b;
	if (!s || !s->known || ab_mul(s->numel, ab_dtype_size(s->dtype) ? ab_dtype_size(s->dtype) : 4, &b))
		return 0;
	return b;
}

/* ---- convolution kernels ---- */

/* Depthwise backward rates against a 3×3's (conv_kernel). */
#define AB_DW_LARGE_BACKWARD 6.5
#define AB_DW_DILATED_BACKWARD 11.0
/* A 1-D depthwise convolution's time per output element, ns: fixed + per tap (conv_kernel). */
#define AB_DW1D_FWD_NS 0.53
#define AB_DW1D_FWD_NS_PER_TAP 0.022
#define AB_DW1D_BWD_NS 3.4
#define AB_DW1D_BWD_NS_PER_TAP 0.45
#define AB_TORCH_DW_DILATED_BWD_FIXED 86016 /* bytes: a dilated depthwise backward's fixed buffer (backward_workspace) */

#define AB_ONEDNN_BLOCK 16 /* channels oneDNN's AVX-512 convolutions compute together */
#define AB_GROUP_ODD_WIDTH 3.0 /* a group of 16+ channels, not a multiple of 8, runs off the blocked kernels */

/* Bytes of a tensor in oneDNN's blocked layout (nChw16c on this AVX-512 machine): channels padded to a
 * multiple of 16. An autoencoder's last convolution (32 → 3 channels on 64×64) holds a 16-channel copy
 * of its 3-channel output gradient in backward (the tracker: 10.49 MiB peak; with unpadded copies the
 * simulation said 9.63). */
static int64_t blocked_bytes(const ab_shape *t)
{
	int64_t b = bytes_of(t);
	if (t->rank < 3 || t->dims[1] <= 0 || t->dims[1] % AB_ONEDNN_BLOCK == 0)
		return b;
	double padded = (double)b / (double)t->dims[1] * (double)((t->dims[1] + AB_ONEDNN_BLOCK - 1) / AB_ONEDNN_BLOCK * AB_ONEDNN_BLOCK);
	return padded < AB_I64_DOUBLE_MAX ? (int64_t)padded : b;
}

/* A dense (group 1) 1-D or 2-D convolution: oneDNN's channel blocks, and which path it takes. */
static void dense_path(const ab_conv_desc *cv, ab_cost *k)
{
	const ab_shape *x = cv->x, *wt = cv->w;
	if (cv->transpose) {
		k->slow_path |= AB_SLOW_ONE_THREAD | AB_SLOW_THREADS;
		return;
	}
	int strided = 0, dilated = 0, one = 1, big_kernel = cv->nsp == 2;
	for (int i = 0; i < cv->nsp; i++) {
		strided |= cv->s[i] != 1;
		dilated |= cv->d[i] != 1;
		one &= cv->k[i] == 1;
		big_kernel &= cv->k[i] > 3;
	}
	/* oneDNN computes output channels in blocks of 16: measured (one thread, fwd + bwd), 32 → 3 channels
	 * on 64×64 takes as long as 32 → 16 (3.0 vs 3.1 ms), 64 → 21 as 64 → 32, 64 → 24 as 64 → 32, 64 → 1 as
	 * 64 → 16. (Input channels pad less clearly: 24 → 64 is 19 % cheaper than 32 → 64, 40 → 80 costs
	 * as much as 48 → 80; not counted.) An autoencoder's RGB output layer and a segmentation head's
	 * class logits run at a fraction of the dense rate per FLOP. */
	int64_t cout = wt->dims[0];
	if (cout > 0 && cout % AB_ONEDNN_BLOCK)
		k->pad_weight = (double)((cout + AB_ONEDNN_BLOCK - 1) / AB_ONEDNN_BLOCK * AB_ONEDNN_BLOCK) / (double)cout;
	int64_t batch = x->dims[0];
	int fast_shape = big_kernel || batch > 1 || x->numel > 20480;
	if (!fast_shape)
		k->slow_path |= AB_SLOW_ONE_THREAD | AB_SLOW_THREADS;
	else if (!(strided || dilated || batch >= 16 || !one))
		k->slow_path |= AB_SLOW_ONE_THREAD;
}

/* oneDNN's backward reorders the output's gradient, and makes the input's, in its blocked layout before
 * converting back: transient copies of both (measured with the allocator tracker: 3×3, 1×1, strided and
 * first layers within 0.01 MiB; depthwise ones on small feature maps keep only the output's copy, or a
 * fixed 0.1-0.6 MiB, so this overstates them by up to the input's size). Its weight-gradient path holds a
 * multiple of the weight instead where that is larger: with a kernel of 15 taps or more (ViT's 16×16 and
 * 32×32 patch embeddings: 37.6 MiB for vit_b_32's 9 MiB stem, whatever the batch, its backward peak) about
 * 4× (sgemm's: gemm_weights_pass, also for grouped convolutions of uneven groups and some dilated ones),
 * otherwise 4.3× with a kernel of 256 elements or more (1-D and 3-D ones: not measured since), and 256× for a
 * depthwise convolution on a channels-last input (convnext's blocks after the first of a stage: 36.9 MiB for
 * 768 channels of 7×7, 18.5 for 384, 9.2 for 192, whatever the spatial size). PyTorch's own path (one thread)
 * makes none of these. */
/* Without AVX (a machine whose widest ISA is SSE4.1: docs/COSTS.md "Capped ISA (SSE4.1) and threads",
 * measured 2026-12-05 with ONEDNN_VERBOSE and the allocator tracker on 20 single layers) oneDNN 2.6 has
 * JIT kernels for a convolution's forward only: its backward-data and backward-weights passes run
 * "gemm:jit", im2col then sgemm, whose scratchpad ideep allocates through PyTorch's allocator on every
 * call. Per group (ic, oc channels; ks kernel elements; os, is output and input positions; T threads;
 * Wb the weight's bytes), with col = 4·ic·ks·os bytes (none for an unpadded, unstrided 1×1):
 *   backward data     n_d·col + 512·osb + 1180·oc        (sgemm's packing buffers fitted per position, channel)
 *   backward weights  n_w·(col + 4·Wb) + 4·(ic·ks + oc)·min(osb, 256) + 32 KiB, beside the new weight
 *                     gradient (which the simulation holds itself); 4·Wb is oneDNN's per-thread reduction
 *                     buffer, booked as Wb floats
 * n = T where oneDNN splits the batch (and groups) across threads, else 1; past min(1 GiB, 15·T·(input +
 * weight + output bytes)) the columns shrink to os_block positions (osb; else os). The backward holds the
 * larger of the two. 64→64 3×3 on 16×16: 2.01 / 3.19 MB measured on one / two threads, 2.02 / 3.20 by
 * this; 32→3 9×9 on 64×64: 3.69 / 45.33 measured, 3.66 / 45.31. */
static double gemm_backward_bytes(const ab_conv_desc *cv)
{
	const ab_shape *x = cv->x, *w = cv->w, *y = cv->y;
	double T = cv->threads, n = (double)x->dims[0], g = (double)cv->group;
	double ic = (double)x->dims[1] / g, oc = (double)y->dims[1] / g, ks = (double)cv->ksz;
	double os = 1, is = 1, wb = (double)bytes_of(w);
	int same = 1, unit = 1;
	for (int i = 2; i < x->rank && i < y->rank; i++) {
		os *= (double)y->dims[i];
		is *= (double)x->dims[i];
		same &= x->dims[i] == y->dims[i];
	}
	for (int i = 0; i < cv->nsp; i++)
		unit &= cv->s[i] == 1;
	double col_el = cv->ksz == 1 && unit && same && !cv->padded ? 0 : ic * ks * os;
	double limit = fmin(1073741824.0, 15 * T * ((double)bytes_of(x) + wb + (double)bytes_of(y)));
	double s_d = 0, s_w = 0;
	if (cv->x_grad) {
		/* oneDNN splits the batch across threads when that keeps them busier than splitting a sample */
		double outer = g * n, inner = ceil(is / 4) * ceil(ic / 4);
		double outer_eff = outer / (ceil(outer / T) * T), inner_eff = inner / (ceil(inner / T) * T);
		int split = (floor(os / T) < 512 || ks < 64) && (n != 1 || g > 2) &&
		            (outer_eff >= inner_eff || floor(is * ic * oc / T) < 65536);
		double nd = split ? T : 1, col = nd * col_el * 4, osb = os, avail = limit;
		if (col_el > 0 && col > avail && avail > 0) {
			osb = fmin(os, fmax(4, floor(0.1 * floor(avail / (4 * nd * ic * ks)))));
			col = nd * ic * ks * osb * 4;
		}
		s_d = col + 512 * osb + 1180 * oc;
	}
	if (cv->w_grad) {
		int mem_ok = 4 * T * wb + 16 * T * ic * ks < limit;
		double nw = floor(os / T) < 256 && (n != 1 || g > 2) && mem_ok ? T : 1;
		double red = nw * 4 * wb, col = nw * col_el * 4, osb = os, avail = limit - red;
		if (col_el > 0 && col > avail && avail > 0) {
			osb = fmin(os, fmax(4, floor(0.05 * floor(avail / (4 * nw * ic * ks)))));
			col = nw * ic * ks * osb * 4;
		}
		s_w = col + red + 4 * (ic * ks + oc) * fmin(osb, 256) + 32768;
	}
	return fmax(s_d, s_w);
}

/* The capped machine's backward workspace (above), where PyTorch hands the convolution to oneDNN; -1 where
 * the cap changes nothing: PyTorch's own path, a transposed convolution, a kernel of 256 elements or more
 * (gemm on AVX-512 too), and a depthwise one on an NCHW input whose channels are a multiple of 8
 * (jit_dw:sse41, like AVX-512's). A depthwise one whose channels are not runs gemm in every pass and
 * holds one input-sized buffer (+10 kB: 58 channels 3×3/2 on 24×24 and 116 on 12×12); one on a
 * channels-last input runs backward weights through gemm instead of AVX-512's 256 weights (768
 * channels 7×7: 38.9 → 0.77 MB). */
static double no_avx_workspace(const ab_conv_desc *cv, const ab_cost *k)
{
	int slow = k->slow_path & (cv->threads > 1 ? AB_SLOW_THREADS : AB_SLOW_ONE_THREAD);
	if (cv->transpose || slow || cv->ksz >= 256 || cv->x->rank > 4)
		return -1;
	if (k->dw_weight[0] > 0) {
		if (cv->x_channels_last) {
			ab_conv_desc wonly = *cv;
			wonly.x_grad = 0;
			return gemm_backward_bytes(&wonly);
		}
		if (cv->x->dims[1] % 8)
			return (double)bytes_of(cv->x) + 10240;
		return -1;
	}
	return gemm_backward_bytes(cv);
}

/* Whether the kernel's taps are spread (dilation above 1 on an axis the kernel spans more than one tap of):
 * what makes a depthwise convolution's backward slow (conv_kernel) and hold a fixed buffer (below). */
static int kernel_dilated(const ab_conv_desc *cv)
{
	for (int i = 0; i < cv->nsp; i++)
		if (cv->k[i] > 1 && cv->d[i] > 1)
			return 1;
	return 0;
}

/* oneDNN's backward-weights pass reads the input in its blocked layout, so it reorders a copy of it whether
 * or not the input's gradient is computed (where it is, the backward-data pass's blocked gradient takes the
 * same place: blocked_bytes). Measured 2026-12-05 with the allocator tracker (/tmp/wt-mem2-probe/
 * p_conv2d.py, p_conv2d_c.py, p_conv1d.py: batch 4, 3×3 and 5×5, stride 1 and 2, dense, grouped by 3 and
 * 4, depthwise 3×3, 1-D), the backward's transient beyond the gradients it keeps, without the input's
 * gradient: 64→64 3×3 on 32×32, 1,048,576 + 1,048,576 + 11,256 (output + input copies + a fixed part),
 * the same as with it; 24→40 on 32×32, 786,432 + 524,288 + 32,312 (both padded to 16 channels). Below 16
 * input channels a dense convolution takes oneDNN's first-layer kernels: with 1 to 3 (an image) they read
 * the input as it is (3→32 on 32×32: the output's copy + 10,256, nothing input-sized), with 4 to 8 they
 * copy it in blocks of 8 channels (8.0-8.3 channels' worth for 4, 5, 6, 7, 8), with 9 to 16 in blocks of 16
 * (16.0-16.5). */
#define AB_ONEDNN_PLAIN_INPUT_CHANNELS 3 /* a dense convolution reads up to this many input channels unreordered */
#define AB_ONEDNN_SMALL_BLOCK_CHANNELS 8 /* ... and copies up to this many in one 8-channel block */
static int64_t weights_pass_input_bytes(const ab_conv_desc *cv)
{
	const ab_shape *x = cv->x;
	if (!cv->w_grad)
		return 0;
	if (cv->group != 1 || x->rank < 3 || x->dims[1] > AB_ONEDNN_SMALL_BLOCK_CHANNELS)
		return blocked_bytes(x);
	if (x->dims[1] <= AB_ONEDNN_PLAIN_INPUT_CHANNELS)
		return 0;
	double b = (double)bytes_of(x) / (double)x->dims[1] * AB_ONEDNN_SMALL_BLOCK_CHANNELS;
	return b < AB_I64_DOUBLE_MAX ? (int64_t)b : INT64_MAX;
}

/* Three kinds of 2-D convolution run their weights pass as im2col then sgemm on AVX-512 too (ONEDNN_VERBOSE:
 * x64:gemm:jit): a dense one whose kernel spans 15 taps or more on an axis (a patch embedding: ViT's 16×16
 * and 32×32, an MLP-mixer's stem; oneDNN 2.6's JIT kernels stop at 14 taps); a grouped one (not depthwise)
 * whose groups' input or output channels are no multiple of 8 (it cannot pad channels inside a group: 16 per
 * group runs jit:avx512_core, 8, 24 and 40 jit:avx2, 12, 39 and 132 gemm); and a dense dilated one with fewer
 * than 16 input channels or whose dilated kernel reaches beyond its unpadded input on an axis (otherwise
 * oneDNN's JIT kernel takes it: 16 → 128 3×3 dilated 2 on 6×6 is jit, but 64 → 16 5×5 dilated 2 on 6×6,
 * 12 → 48 3×3 on 12×12 and 44 → 44 5×5 dilated 3 on 2×2 are gemm). Beside the new gradient the pass holds four
 * times the weight, one sample's columns of one group (K = a group's input channels × kernel elements, by
 * output positions) and sgemm's packing buffers, which depend on a group's output channels and K only:
 * 10.3 kB below 16 output channels; from 16, 53 kB + 505 B per K up to K = 1,083 and 84.3 kB from K = 1,200
 * (the step lies between; 1,152 taken). With T threads and a batch of T or more, each thread takes samples and
 * holds its own reduction buffer and columns (the packing buffers once).
 * Measured 2026-12-07 with the allocator tracker (PyTorch 1.13.1, the backward's transient beyond the weight's
 * gradient): 90 patch embeddings (1 to 16 input channels, kernels 15 to 32, 8 to 64 output channels, 1 to 25
 * output positions, batch 1 to 8) within 13 kB at one thread, and so on two threads at batch 4 (at batch 1
 * with 16 output positions, 84 kB of packing where 428 kB is booked for K = 768); 59 such grouped ones (2 to 8
 * groups, 3 to 39 channels a group, kernels 3 to 7, 1 to 2,304 output positions): 45 within 2 %, the rest, all
 * computing the input's gradient too, 3-81 % under (that pass's own buffers: not fitted); 75 such dilated ones
 * without the input's gradient (3 to 64 input channels, 3×3 to 7×7, dilation 2 and 3, 1 to 2,304 output
 * positions, batch 2 to 8 or 1 on PyTorch's oneDNN path): 56 within 5 %, 11 from 10 to 55 % under (7×7 ones
 * and 12 input channels on 12×12 and more), 6 from 6 to 15 % over and one 3.6× over (64 → 8 7×7 on 12×12 at
 * batch 1, whose columns come in blocks). PyTorch 2.15 holds 17.6 kB more in each patch case. Not here: a
 * grouped 1×1 (no columns; 0.1-6.6× off). Before, a wide kernel was booked 4.3 × its weight (211 kB for
 * gen_mixer_s000045's 3 → 16 16×16 stem on 64², which holds 674 kB) and the others one weight
 * (gen_cnn_s000198's 264 → 572 in 2 groups on 3×3: 2.7 MB, which holds 10.9; gen_cnn_s000179's 44 → 44 5×5
 * dilated 3 on 2×2: 0.8 MB, which holds 1.4). Returns -1 for any other convolution. */
#define AB_GEMM_MIN_TAPS 15
#define AB_GEMM_GROUP_CHANNELS 8
static double gemm_weights_pass(const ab_conv_desc *cv)
{
	const ab_shape *x = cv->x, *y = cv->y;
	if (cv->nsp != 2 || cv->transpose || cv->no_avx || x->rank != 4 || y->rank != 4 || cv->group < 1)
		return -1;
	int64_t g = cv->group, icg = x->dims[1] / g, ocg = y->dims[1] / g;
	int wide = g == 1 && (cv->k[0] >= AB_GEMM_MIN_TAPS || cv->k[1] >= AB_GEMM_MIN_TAPS);
	int grouped = g > 1 && g != x->dims[1] && cv->ksz > 1 &&
	              (icg % AB_GEMM_GROUP_CHANNELS || ocg % AB_GEMM_GROUP_CHANNELS);
	int dilated = 0; /* (dense, fewer than 16 input channels or a dilated reach beyond the unpadded input) */
	if (g == 1 && kernel_dilated(cv)) {
		dilated = icg < AB_ONEDNN_BLOCK;
		for (int i = 0; i < 2; i++)
			dilated |= cv->d[i] * (cv->k[i] - 1) + 1 > x->dims[2 + i];
	}
	if (!wide && !grouped && !dilated)
		return -1;
	double K = (double)icg * (double)cv->ksz, os = (double)y->dims[2] * (double)y->dims[3];
	double pack = ocg < 16 ? 10300 : K <= 1152 ? 53000 + 505 * K : 84300;
	double per_thread = 4 * (double)bytes_of(cv->w) + 4 * K * os;
	return (cv->threads > 1 && x->dims[0] >= cv->threads ? cv->threads : 1) * per_thread + pack;
}

static void backward_workspace(const ab_conv_desc *cv, ab_cost *k)
{
	double capped = cv->no_avx ? no_avx_workspace(cv, k) : -1;
	if (capped >= 0) {
		k->bwd_workspace = capped < AB_I64_DOUBLE_MAX ? (int64_t)capped : INT64_MAX;
		return;
	}
	if (cv->transpose || (k->slow_path & AB_SLOW_ONE_THREAD))
		return;
	k->bwd_workspace = blocked_bytes(cv->y) + (cv->x_grad ? blocked_bytes(cv->x) : weights_pass_input_bytes(cv));
	/* Its weight gradient is made in oneDNN's own layout and reordered into PyTorch's: one weight-sized
	 * buffer beside the new gradient, where the blocked copies are smaller (measured 2026-12-05 with the
	 * allocator tracker, the backward's transient beyond what it keeps: 256→256 3×3 on 4×4 at batch 4,
	 * 2.37 MB for a 2.36 MB weight; grouped 128→256 on 8×8, 0.60 for 0.59 at batch 1 and 4; 64→128 9×9
	 * stride 2 on 24×24, 2.66 for 2.65; 64→64 3×3 on 32×32 at batch 4, 2.11 for 2.10 MB of blocked copies
	 * and a 0.15 MB weight: the larger of the two, not their sum). The outside set's resnest_d (split
	 * attention's grouped 3×3 on 8×8) and capsnet (a 2.65 MB 9×9 primary-capsule weight) peak there. */
	double gemm = gemm_weights_pass(cv);
	double weights = !cv->w_grad                                 ? 0
	                 : k->dw_weight[0] > 0 && cv->x_channels_last ? 256.0 * (double)bytes_of(cv->w)
	                 : gemm >= 0                                  ? gemm
	                 : cv->ksz >= 256                             ? 4.3 * (double)bytes_of(cv->w)
	                                                              : (double)bytes_of(cv->w);
	if (weights > (double)k->bwd_workspace && weights < AB_I64_DOUBLE_MAX)
		k->bwd_workspace = (int64_t)weights;
	/* A dilated depthwise convolution's backward (oneDNN, NCHW) holds a fixed 84 KiB beside an input-sized
	 * buffer, however small the map: measured 2026-12-05 with the allocator tracker, the backward's
	 * transient beyond the live set (batch 4, 3×3 dilation 2 or 3): 8 channels on 5×5 89.2 kB (28.8 kB
	 * undilated), 16 on 5×5 91.9, 8 on 10×10 100.9, 32 on 10×10 139.4; from 64 channels on 20×20 (829 kB,
	 * 2.0× the input) the blocked copies above are the larger. The tiny CNNs that dilate instead of
	 * downsampling (gen_cnn_s000019's separable stage on 5×5) peak there. */
	if (kernel_dilated(cv) && k->dw_weight[0] > 0 && !cv->x_channels_last && (cv->x_grad || cv->w_grad)) {
		int64_t floor_b = bytes_of(cv->x);
		ab_sat_add(&floor_b, AB_TORCH_DW_DILATED_BWD_FIXED);
		if (floor_b > k->bwd_workspace)
			k->bwd_workspace = floor_b;
	}
}

/* PyTorch's own path (taken whatever the threads: a batch-1 convolution on a small input, every transposed
 * one) unfolds its input into columns, [C_in·kernel, output positions] per sample, for the whole batch at
 * once, in its forward and again in its backward (one buffer at a time); a transposed convolution folds
 * [C_out·kernel, input positions] columns one sample at a time. A 1×1 unstrided convolution reads its
 * input as it is. Measured 2026-12-05 with the allocator tracker: three 3×3 convolutions of 16 channels
 * on 32×32 and 34×34 maps at batch 1 peaked 0.95x a 16·9 × 1024 (1156) column buffer above the
 * simulation without it, 60 % of their peak; at batch 2 (oneDNN) nothing was missing. */
static void slow_columns(const ab_conv_desc *cv, ab_cost *k)
{
	const ab_shape *x = cv->x, *wt = cv->w, *y = cv->y;
	int both = AB_SLOW_ONE_THREAD | AB_SLOW_THREADS;
	if (!(k->slow_path & AB_SLOW_ONE_THREAD) || x->rank < 3 || y->rank < 3 || wt->rank < 3 || !x->dims[0] || !y->dims[0] ||
	    !x->dims[1] || !y->dims[1])
		return;
	int needs = cv->transpose;
	for (int i = 0; i < cv->nsp; i++)
		needs |= cv->k[i] != 1 || cv->s[i] != 1;
	if (!needs) {
		/* A 1×1 one (batch under 16, one thread) makes its input's gradient one sample at a time
		 * through a buffer of its own: an upsampled or pooled [32, 64, 64] map and an upsampled
		 * [16, 96, 96] one read by a 1×1 convolution, batch 2 and 8, were one sample of the input
		 * (0.52, 0.59 MB) short at both. */
		if (cv->x_grad && 4 * (x->numel / x->dims[0]) > k->bwd_workspace)
			k->bwd_workspace = 4 * (x->numel / x->dims[0]);
		return;
	}
	if ((k->slow_path & both) != both)
		return;
	double cols = cv->transpose ? (double)wt->dims[1] * (double)cv->group * (double)cv->ksz *
	                                  (double)(x->numel / (x->dims[0] * x->dims[1]))
	                            : (double)x->dims[0] * (double)wt->dims[1] * (double)cv->ksz *
	                                  (double)(y->numel / (y->dims[0] * y->dims[1]));
	double b = 4 * cols;
	if (b >= AB_I64_DOUBLE_MAX)
		return;
	if ((int64_t)b > k->fwd_workspace)
		k->fwd_workspace = (int64_t)b;
	if ((cv->x_grad || cv->w_grad) && (int64_t)b > k->bwd_workspace)
		k->bwd_workspace = (int64_t)b;
}

/* A convolution whose input is a permuted, strided view (a Conv1d over an embedding's x.transpose(1, 2))
 * makes a contiguous copy of it in its forward and again in its backward, beside what it holds for a
 * contiguous input. Measured 2026-12-05 with the allocator tracker (/tmp/wt-mem-probe/p_conv1dT.py: Conv1d
 * 128 → 128 k 5 on L 128 at batch 32, 64 → 128 k 3 on 256 at 8, 128 → 64 k 7 on 512 at 4, with and without
 * the input's gradient): the forward's transient 1.000 input more than on the contiguous input, the
 * backward's 1.000 more (beyond the gradients it keeps, input X + output Y against X + Y + 1.01-1.02 X).
 * textcnn's three Conv1d over the embedding's transpose peak in the second's backward, one [B, 128, L]
 * input short without it (L 128 batch 32: 17.35 MB measured above the step's start, 15.19 simulated). */
static void strided_input_copy(const ab_conv_desc *cv, ab_cost *k)
{
	if (!cv->x_permuted || cv->transpose)
		return;
	int64_t x = bytes_of(cv->x);
	ab_sat_add(&k->fwd_workspace, x);
	if (cv->x_grad || cv->w_grad)
		ab_sat_add(&k->bwd_workspace, x);
}

/* Which CPU kernel PyTorch 1.13 runs (ConvParams::use_mkldnn, checked with torch._C._select_conv_backend):
 * oneDNN when (strided or dilated or batch >= 16 or not 1×1 or threads > 1) and (groups > 1 or both
 * kernel dims > 3 or batch > 1 or the input has more than 20,480 elements); otherwise, and for every
 * transposed convolution, its own im2col + BLAS path ("slow_conv2d"), whose rate differs. So a 1×1
 * convolution at batch < 16 takes the slow path on one thread and oneDNN on two: both answers are kept
 * and the time terms pick by the hardware's threads. Only dense (group 1) 2-D and 1-D convolutions are
 * marked: their FLOPs are the dense-convolution term's. */
void ab_torch_conv_kernel(const ab_conv_desc *cv, ab_cost *k)
{
	const ab_shape *x = cv->x, *wt = cv->w;
	int nsp = cv->nsp, transpose = cv->transpose;
	int64_t group = cv->group;
	/* A depthwise convolution (one input channel per group) runs at a rate that depends on its kernel,
	 * unlike the other grouped ones. Measured here (one thread, B 1-16, 64-480 channels, GFLOP/s):
	 *              3×3    5×5    7×7    9×9    dilated 3×3 / 5×5
	 *   forward   26-40  60-87  88-120 109-149     25-35 / 50-80
	 *   backward  27-32  4.3-6.2 4.4-6.5 4.5-5.6   1.8-2.8 / 2.5-2.8
	 * oneDNN's forward gains with the kernel, its backward for anything but 3×3 (mobilenet_v3,
	 * efficientnet, mnasnet, convmixer: 5×5; convnext 7×7; LR-ASPP's dilated 5×5, its slowest layers)
	 * falls to a flat 4.5, or 2.5 dilated. The time terms count such FLOPs in units of a 3×3's: forward
	 * (9 / kernel elements)^0.65, backward 6.5 or 11 (dilated). Fixed weights, not fitted terms: as a
	 * free term, the slow backward's rate on cpu2 absorbed the per-operator overhead of the small-layer
	 * networks that have such convolutions and priced convmixer at 2.8× its time when it was left out. */
	int depthwise = group > 1 && wt->rank == x->rank && wt->dims[1] == 1 && !transpose;
	if (depthwise && nsp == 1 && !kernel_dilated(cv)) {
		/* A 1-D depthwise convolution (a conformer's, a long-convolution sequence model's) is not a
		 * narrow 2-D one: measured 2026-12-06 (AMD family 26, one thread, B 1-8, 128-256 channels, L
		 * 64-256, K 3-256) its time per output element is an affine function of the kernel length, about
		 * 0.53 + 0.022·K ns forward and 3.4 + 0.45·K ns backward (input and weight gradients): K 3 runs at
		 * 6-12 GFLOP/s forward and 1.7-4.5 backward, K 15 at 29-46 / 5-7, K 256 at 83-96 / 7.7-9.6. In
		 * 3×3 units (30 GFLOP/s), forward FLOPs are 2K per output and backward 4K. The 2-D weights below
		 * priced a 256-tap kernel's backward at 6.5 units (4.6 GFLOP/s, twice its time: an S4D model of
		 * the outside set 60 % slow) and a 3-tap one's at 1 (30 GFLOP/s, a tenth of it). */
		double kl = (double)cv->k[0];
		k->dw_weight[0] = 15.0 * (AB_DW1D_FWD_NS + AB_DW1D_FWD_NS_PER_TAP * kl) / kl;
		k->dw_weight[1] = 7.5 * (AB_DW1D_BWD_NS + AB_DW1D_BWD_NS_PER_TAP * kl) / kl;
	} else if (depthwise) {
		double kk = 1;
		int large = 0;
		for (int i = 0; i < nsp; i++) {
			kk *= (double)cv->k[i];
			large |= cv->k[i] > 3;
		}
		k->dw_weight[0] = kk > 9 ? pow(9 / kk, 0.65) : 1;
		k->dw_weight[1] = kernel_dilated(cv) ? AB_DW_DILATED_BACKWARD : large ? AB_DW_LARGE_BACKWARD : 1;
	}
	/* The other grouped convolutions run near the dense rate while each group spans a channel block of
	 * oneDNN's (16 floats, AVX-512) in and out, and fall away below it: measured 2026-12-07 (Intel family 6
	 * model 167, one thread, 3×3, batch 4, forward + backward, 64-256 channels on 4-32² maps), against the
	 * dense convolution of the same shape: 64 channels a group 0.85-1.0, 32 0.55-1.09, 16 0.44-0.87, 8
	 * 0.17-0.54, 4 0.06-0.15, 2 0.02-0.04 (PyTorch 2.15 within the same spread). So a group of c ≥ 16 channels counts in the dense term at 1 + 6.4 / c
	 * dense FLOPs per FLOP, a narrower one in the grouped term at (16 / c)^1.7 (8: 3.2, 4: 10.6, 2: 34): the
	 * zoo's grouped layers (ResNeXt's, RegNet's: 4 to 32 a group) had fitted one rate for all, which a split
	 * attention's two wide groups (ResNeSt's) then paid: the outside set's resnest_d came out 35-40 % slow.
	 * On the PyTorch 1.13 rows of 2026-12-07 02:14: random split, one thread, 7.18 -> 7.13 %; leave one family
	 * out 11.86 -> 11.98 % (regnet_x_16gf 24.6 -> 10.7 %, regnet_x_3_2gf 21.0 -> 14.5 %, but regnet_y_400mf,
	 * 8 channels a group throughout, 11.6 -> 24.6 % and convmixer 10.3 -> 15.1 %: the rates refitted without
	 * them); the outside set 11.3 -> 11.0 % (11.2 -> 10.4 % on the rows of 03:07); PyTorch 2's random split
	 * 11.64 -> 11.91 % (regnet_y_400mf again). Weighing narrow groups at (16 / c)^1.2 instead: 12.08 %; dense
	 * groups at the dense rate unweighted and narrow ones unweighted: 12.25 %. */
	int64_t in_g = wt->rank >= 2 ? wt->dims[1] : 0, out_g = wt->rank >= 1 && group > 0 ? wt->dims[0] / group : 0;
	double cpg = (double)(in_g < out_g ? in_g : out_g);
	/* Groups of 16 channels or more that are not a whole number of blocks (measured 2026-12-07, same machine,
	 * two groups, k 3, 5, 7 on 28² maps, batch 4, against the dense convolution of the same channels): 24 a
	 * group ran 1.57-1.71× the dense FLOP's time where 16, 32 and 48 ran 1.0-1.4×, and 26 (not even a
	 * multiple of 8) 2.8-5.3×: oneDNN pads each group to whole blocks, and a group of an odd width leaves its
	 * blocked kernels for a slower path. So such a group's weight is (1 + 6.4 / c) times its padding
	 * (24: 1.27 × 32/24 = 1.69), and 3× more when c is not a multiple of 8 (26: 1.25 × 32/26 × 3 = 4.6). The
	 * generator's groups (widths aligned to 1, 2, 4 or 8 channels) have such widths; the zoo's have not. */
	if (group > 1 && !depthwise && !transpose && cpg >= 1) {
		k->dense_groups = cpg >= AB_ONEDNN_BLOCK;
		double blocks = ceil(cpg / AB_ONEDNN_BLOCK) * AB_ONEDNN_BLOCK;
		k->group_weight = !k->dense_groups ? pow(AB_ONEDNN_BLOCK / cpg, 1.7)
		                  : (1 + 6.4 / cpg) * blocks / cpg * (fmod(cpg, 8) != 0 ? AB_GROUP_ODD_WIDTH : 1);
	}
	if (group == 1 && nsp >= 1 && nsp <= 2)
		dense_path(cv, k);
	backward_workspace(cv, k);
	slow_columns(cv, k);
	strided_input_copy(cv, k);
}

/* ---- fixed costs and arithmetic ---- */

/* Measured 2026-12-03 on one thread, PyTorch 1.13: chains of 30 layers of one kind on tiny tensors (16
 * elements or channels, 4×4 maps), forward + backward, the median of 9 × 200 iterations, less an empty
 * network's time: what a layer costs beyond its arithmetic and its bytes. ReLU 4.8 µs, sigmoid 4.6,
 * x + c 5.1, x·x 6.4, dropout 8.7, softmax 4.3, LayerNorm 13.5, GELU 16.4, Linear 18.2, bmm 17.5,
 * BatchNorm 28.8, 1×1 convolution 19.4, 3×3 32.2, 1-D 23.0, depthwise 3×3 84.6, max and average pool
 * 8.3 and 9.0, cat 12, pad 9, a mean 12, nearest upsampling 17. One price per layer for all (37.5 µs
 * fitted on the zoo, whose layers are mostly convolutions and batch norms) charged a 14-layer
 * recommender of Linears and ReLUs 33 % and a WaveNet of gated activations 34 % over their time. */
double ab_torch_dispatch_us(const abacus_analysis *a, size_t i)
{
	const abacus_layer *l = &a->layers[i];
	if (a->fused_save[i] == AB_SAVE_NOTHING)
		return 14; /* the last node of a decomposed LayerNorm, GELU, SiLU or Mish: one kernel */
	switch (l->category) {
	case ABACUS_CAT_CONV: {
		const ab_node *n = &a->g->nodes[a->layer_node[i]];
		int w = n->n_in > 1 ? n->in[1] : -1;
		int64_t kk = 1;
		for (int d = 2; w >= 0 && d < a->shapes[w].rank; d++)
			kk *= a->shapes[w].dims[d];
		return kk == 1 ? 19.4 : kk <= 3 ? 23.0 : 32.2;
	}
	case ABACUS_CAT_GROUPCONV: return a->costs[i].dw_weight[0] > 0 ? 84.6 : 32.2;
	case ABACUS_CAT_MATMUL: return 18;
	case ABACUS_CAT_BATCHNORM: return 28.8;
	case ABACUS_CAT_LAYERNORM: return 13.5;
	case ABACUS_CAT_RELU: return 4.8;
	case ABACUS_CAT_ACT: return 4.6;
	case ABACUS_CAT_ADD: return 5.1;
	case ABACUS_CAT_MUL: return 6.4;
	case ABACUS_CAT_DROPOUT: return 8.7;
	case ABACUS_CAT_SOFTMAX: return 4.3;
	case ABACUS_CAT_POOL: return 8.6;
	case ABACUS_CAT_CONCAT: return 12;
	case ABACUS_CAT_PAD: return 9;
	case ABACUS_CAT_REDUCE: return 12;
	case ABACUS_CAT_RESIZE: return 17;
	default: return 10; /* element-wise, layout copies, gathers, recurrent calls (their steps apart) */
	}
}

/* Forward + backward arithmetic per element of a single-node activation beyond a ReLU's, in ns on one
 * thread. Measured 2026-12-04, PyTorch 1.13, one thread, the median of 25 runs at 131,072 and 1,048,576
 * elements: ReLU, LeakyReLU, Hardtanh, Hardswish 0.40-0.59 ns (memory traffic, which AB_TERM_ACT_BYTES prices by
 * bytes); sigmoid 0.79-0.92, ELU and SELU 1.35-1.46, tanh 2.49-2.73, softplus 3.10-3.23, PReLU 5.68-5.91
 * (its weight's gradient is a reduction). The decomposed SiLU, GELU and Mish (fusion) are priced as one kernel by the same table: SiLU 1.26-1.32
 * ns, GELU 1.24-1.56, Mish 14.8-14.9. A
 * csp_mish (Conv-BN-Mish) left out of training came out 46 % fast without this: Mish costs 30 ReLUs.
 * CumSum (forward, and backward's reversed cumsum) is a scan: PyTorch's CPU kernel walks the scanned axis
 * element by element, so what it costs depends on how far apart those elements lie (the product of the
 * dimensions after the axis, `inner`) and how many it walks (`scan`); analysis.c scan_arith_ns picks the
 * class. Measured 2026-12-07 on the Intel family 6 model 167 machine (one thread, PyTorch 1.13, median of
 * 11 runs, less a ReLU's on the same tensor, 69 shapes [outer, scan, inner] of 0.25-8 MB): inner under 128
 * 1.5-5.8 ns (mean 3.5: AB_ACT_CUMSUM); inner 128-4096 with scan up to 256 4.2-10.4 (mean 7.6, 8.5 at 8 MB:
 * AB_ACT_CUMSUM_STRIDED 8); with inner 1024 or more (a page or more apart) longer scans cost more, 8.4-11.0
 * at scan 384, 14.9-17.7 at 512, 21.8 at 1024 (AB_ACT_CUMSUM_PAGED: 7.5 more per 256 steps beyond 256, up to
 * 512 beyond), where inner 256 and 512 stayed at 5.6-8.5 up to scan 1024. The running key-value state of
 * causal linear attention, [B, L, 4, 32, 32] along L, costs 7.4 ns at B 1 and 9.5 at B 4 (L 128). One
 * figure of 14 ns (2026-12-05, the family 25 AMD machine, while the campaign ran: 13.8-20.9 strided, 6.3
 * along the innermost axis) priced an outside-the-zoo linear-attention LM 14-27 % slow on that machine and
 * 19-34 % slow on this one, whose steps took the same time on both (30-32 ms at L 128, batch 1). Priced as
 * memory traffic alone, it had come out 46-55 % fast. */

/* Windowed pooling (AB_ACT_POOL and its window classes, analysis.c pool_arith_ns): PyTorch 1.13's CPU kernels
 * on NCHW maps walk window by window, unvectorised across channels. Measured 2026-12-07 on the Intel family
 * 6 model 167 machine (one thread, forward + backward, median of 21 runs; maps [1, 35, 32, 32], [4, 35, 32,
 * 32], [4, 64, 32, 32], [4, 64, 16, 16], [1, 256, 14, 14], [8, 128, 28, 28]), per output element: average
 * 2×2 15.1-15.9 ns, max 2×2 17.6-20.2, max 3×3 stride 2 25.4-27.3, average 3×3 stride 1 16.3-17.2; PyTorch
 * 2.15 15.4-16.5, 19.8-22.0, 28.9-30.8, 16.5-16.9. Less half a ReLU's on the input (the pooling's bytes,
 * which AB_TERM_ACT_BYTES prices, are half a ReLU's): 10 ns per output element, and per window element
 * 0.64 (average: 12.2-13.8 at 4, 15.9-16.2 at 9) or 1.6 (max: 15.2-17.1 at 4, 24-24.5 at 9). A global
 * pooling costs what a ReLU on its input does (1.0-1.4 ns per input element): its bytes alone. */

/* (The table itself is AB_TORCH_ARITH_NS in runtime.h: PyTorch 2 on a CPU starts from it.) */

/* ---- the time terms ---- */


/* The FLOP term (CONV, GROUPCONV or MATMUL) a category's FLOPs count in, or -1 when its FLOPs are priced by
 * bytes alone. Thin matrix products (ab_layer_thin) move from MATMUL to MATMUL_THIN. */
static int flop_term(abacus_category c)
{
	if (c == ABACUS_CAT_CONV)
		return AB_TERM_CONV;
	if (c == ABACUS_CAT_GROUPCONV)
		return AB_TERM_GROUPCONV;
	return ab_is_matrix_product(c) ? AB_TERM_MATMUL : -1;
}

/* The analytic time terms. FLOPs are split by the kind of kernel that runs them, because their rates differ
 * by several times on a CPU: dense convolutions (oneDNN, or im2col + BLAS for 1×1 and small batches),
 * grouped and depthwise convolutions (memory-bound), and matrix products (BLAS: linear layers, attention,
 * recurrent cells, embeddings' gradients), thick and thin apart. Everything else is priced by the bytes
 * it moves. Layers that run a kernel and views (no kernel, no data: only dispatch and autograd) have
 * separate fixed costs; views of weights cost nothing, and the nodes of a decomposed operator are priced
 * as the one kernel PyTorch runs (analysis.h, runtime_torch_fusion.c). Weights read by layers are priced
 * apart from activations (BLAS streams them faster), and the parameter terms of the step are the weights
 * (gradient writes) and the optimizer step, by bytes and by tensors. The terms (model.h names them):
 *   CONV dense convolution FLOPs (and grouped ones whose groups are a channel block wide: conv_kernel),
 *   GROUPCONV the other grouped-conv FLOPs, MATMUL matrix-product FLOPs, ACT_BYTES
 *   activation bytes, KERNELS kernel layers, STEP_WEIGHTS weight bytes (the gradients' writes), MATMUL_THIN
 *   thin matrix-product FLOPs, VIEWS view layers, WEIGHT_READS weight bytes read by layers, OPT_BYTES the
 *   optimizer step's bytes (above), RNN_STEPS recurrent steps (time steps × directions: a CPU LSTM runs
 *   step by step), RNN_BYTES the recurrent weight bytes those steps re-read, IM2COL the FLOPs of dense
 *   convolutions that PyTorch runs through its own im2col + BLAS path instead of oneDNN (1×1 at batch < 16
 *   on one thread, tiny inputs at batch 1, transposed convolutions: conv_kernel), apart from CONV
 *   because their rate differs: on cpu1 most of mobilenet's, shufflenet's and regnet's FLOPs at small
 *   batches are 1×1 convolutions. In GROUPCONV depthwise convolutions' FLOPs are weighted by their kernels'
 *   measured rates (ab_cost.dw_weight: a 5×5's backward runs at a sixth of a 3×3's, conv_kernel).
 *   OPT_TENSORS the optimizer step's parameter tensors (above), NORM_ROWS batch-norm rows on maps of 2-15
 *   elements, which PyTorch's kernels do not vectorise (ops_nn.c ab_cost_norm), STEP_CACHE the share of
 *   STEP_WEIGHTS and OPT_BYTES whose parameter traffic stays in the last-level cache (weights, gradients
 *   and optimizer state within AB_TORCH_LLC_BYTES), taken out of them, ARITH activation arithmetic beyond a
 *   ReLU's (ns of one thread, analysis.c ab_layer_arith): a Mish costs 30 ReLUs per element, which bytes
 *   cannot say. */
void ab_torch_time_terms(double t[AB_TIME_TERMS], const abacus_analysis *a, int threads)
{
	const abacus_totals *T = abacus_analysis_totals(a);
	const abacus_memory *M = abacus_analysis_memory(a);
	t[AB_TERM_CONV] = t[AB_TERM_GROUPCONV] = t[AB_TERM_MATMUL] = 0;
	/* From the per-category sums the analysis keeps: a prediction must not walk thousands of layers. */
	for (int c = 0; c < ABACUS_CAT_COUNT; c++) {
		int k = flop_term((abacus_category)c);
		if (k >= 0)
			t[k] += a->cat_flops[c];
	}
	t[AB_TERM_MATMUL] -= a->thin_flops + a->serial_flops[0];
	t[AB_TERM_ACT_BYTES] = (double)T->bytes_read + (double)T->bytes_written - a->view_bytes - a->free_bytes - a->fused_bytes -
	       a->weight_bytes;
	t[AB_TERM_KERNELS] = a->dispatch;
	/* The gradients' writes scale with the weights (STEP_WEIGHTS); the optimizer step (OPT_BYTES and OPT_TENSORS) with
	 * the weights in bytes and with the parameter tensors in kernels, differently per optimizer
	 * (model.h). A step priced by bytes alone charged an MLP, a few large tensors, at 2-3× its time. */
	int adam = a->cfg.optimizer == ABACUS_OPT_ADAM;
	/* A weight costs three passes alike: read forward, its gradient written backward, read again for
	 * the input's gradient. A layer none of whose inputs needs a gradient (an MLP's first Linear on the
	 * image, an embedding) skips the third: measured on Linear layers of 13-154 MB at batch 1 and 16,
	 * one thread: 0.086-0.139 ms per MB forward, 0.071-0.129 for the weight gradient, 0.073-0.133 more
	 * for the input's. Priced in full, the MLP's 154 MB first layer put it 20-45 % high left out. */
	t[AB_TERM_STEP_WEIGHTS] = (double)M->weights - a->nodx_weight_bytes / 3;
	t[AB_TERM_MATMUL_THIN] = a->thin_flops - a->serial_flops[1];
	t[AB_TERM_VIEWS] = a->view_layers;
	t[AB_TERM_WEIGHT_READS] = a->weight_bytes;
	t[AB_TERM_OPT_BYTES] = (double)M->weights * (adam ? AB_TORCH_ADAM_STEP_BYTES : 1.0);
	t[AB_TERM_RNN_STEPS] = a->serial_steps;
	t[AB_TERM_RNN_BYTES] = a->serial_bytes;
	t[AB_TERM_IM2COL] = a->slow_conv_flops[threads > 1];
	t[AB_TERM_CONV] -= t[AB_TERM_IM2COL];
	t[AB_TERM_CONV] += a->pad_extra_flops[threads > 1];
	/* Grouped convolutions whose groups are a channel block wide or more count in the dense term, the narrower
	 * ones stay in the grouped term, each weighted by its measured rate (conv_kernel: ab_cost.group_weight). */
	t[AB_TERM_GROUPCONV] += a->group_extra_flops - a->dense_group_flops;
	t[AB_TERM_CONV] += a->dense_group_weighted;
	/* On one thread, depthwise FLOPs are priced at a measured multiple of the dense rate, not at a rate
	 * of their own: fitted freely, that rate came out 5× too fast (123 GFLOP/s for a 3×3, which runs at
	 * 22-24 here, dense convolutions at 87-177) and activation bytes took the difference, so networks
	 * unlike the zoo's mobilenets were mispriced (convmixer's six 5×5s at 9 ms of their 38). On two
	 * threads the ratio differs and is left to the fit (GROUPCONV). */
	if (threads <= 1) {
		t[AB_TERM_GROUPCONV] -= a->dw_flops;
		t[AB_TERM_CONV] += AB_TORCH_DW_DENSE_RATIO * a->dw_weighted_flops;
	} else {
		t[AB_TERM_GROUPCONV] += a->dw_extra_flops;
	}
	t[AB_TERM_OPT_TENSORS] = a->param_tensors * (adam ? AB_TORCH_ADAM_STEP_TENSOR : 1.0);
	t[AB_TERM_NORM_ROWS] = a->norm_rows;
	/* The parameter-sized traffic of the step (terms 5 and 9) runs from cache when weights, gradients and
	 * optimizer state are still there: the share that stays moves to STEP_CACHE. What evicts them between two
	 * steps is their own footprint and the activations the iteration moves (forward and backward: about three
	 * times the forward's activation bytes), so the share is the cache over both. Counting the footprint
	 * alone put the step of a CNN of 2 M weights at 64×64 (24 MB of step state beside some 50 MB of
	 * activations) wholly in cache. Random split of the PyTorch 1.13 rows of 2026-12-07 02:14 UTC: one thread
	 * 7.25 -> 7.18 %, the analytic base alone 13.14 -> 13.07 %; the outside set, by bundles trained on those
	 * rows, 12.0 -> 11.3 %. */
	double foot = (double)M->weights * (adam ? 4 : 3), moved = 3 * t[AB_TERM_ACT_BYTES];
	double fit = foot + moved > AB_TORCH_LLC_BYTES ? AB_TORCH_LLC_BYTES / (foot + moved) : 1;
	t[AB_TERM_STEP_CACHE] = (t[AB_TERM_STEP_WEIGHTS] + t[AB_TERM_OPT_BYTES]) * fit;
	t[AB_TERM_STEP_WEIGHTS] *= 1 - fit;
	t[AB_TERM_OPT_BYTES] *= 1 - fit;
	t[AB_TERM_ARITH] = a->arith;
	t[AB_TERM_BMM_ITEMS] = a->bmm_us;
}

/* On one thread time_terms puts depthwise FLOPs into CONV at AB_TORCH_DW_DENSE_RATIO dense FLOPs each, a
 * ratio measured on one machine. The machines profiled since differ: a 3×3 depthwise FLOP over a dense one,
 * by their profiles' conv_depthwise / conv_dense, 5.4× on the family 25 AMD machine, 8.0× on the family 26
 * one, 9.4× and 11× on the two Intel guests. Zero-shot, the family 26 and family 6 model 167 machines'
 * rows with more than 5 % of their time in depthwise convolutions came out 5.5 % and 12.4 % too fast on
 * average (bundles trained before their rows). So a profile prices that share of CONV at the machine's
 * depthwise rate (model.c ab_profile_term_rate); the hardware-id mode keeps the fixed ratio. */
void ab_torch_conv_depthwise(double dw[2], const double t[AB_TIME_TERMS], const abacus_analysis *a, int threads)
{
	dw[0] = dw[1] = 0;
	if (threads > 1 || !(t[AB_TERM_CONV] > 0) || !(a->dw_weighted_flops > 0))
		return;
	double dense = AB_TORCH_DW_DENSE_RATIO * a->dw_weighted_flops;
	dw[0] = dense < t[AB_TERM_CONV] ? dense / t[AB_TERM_CONV] : 1;
	dw[1] = dw[0] / AB_TORCH_DW_DENSE_RATIO;
}

/* One layer's part of the time base: the same terms as time_terms, for one layer (the predictor's
 * per-layer shares). */
double ab_torch_layer_time(const double c[AB_TIME_TERMS], const abacus_analysis *a, size_t i, int threads)
{
	const abacus_layer *l = &a->layers[i];
	if (a->layer_view[i] == AB_LAYER_FREE || a->layer_view[i] == AB_LAYER_FUSED)
		return 0;
	if (a->layer_view[i] == AB_LAYER_VIEW)
		return c[AB_TERM_VIEWS];
	int slow = l->category == ABACUS_CAT_CONV &&
	           (a->costs[i].slow_path & (threads > 1 ? AB_SLOW_THREADS : AB_SLOW_ONE_THREAD));
	int k = ab_layer_thin(l) ? AB_TERM_MATMUL_THIN : slow ? AB_TERM_IM2COL : a->costs[i].dense_groups ? AB_TERM_CONV : flop_term(l->category);
	double wb = ab_layer_weight_bytes(a, i);
	double w = c[AB_TERM_ACT_BYTES] * ((double)l->bytes_read + (double)l->bytes_written - wb) + c[AB_TERM_WEIGHT_READS] * wb + c[AB_TERM_KERNELS] * ab_layer_dispatch(a, i) +
	           c[AB_TERM_RNN_STEPS] * (double)a->costs[i].serial_steps + c[AB_TERM_RNN_BYTES] * (double)a->costs[i].serial_bytes +
	           c[AB_TERM_NORM_ROWS] * (double)a->costs[i].norm_rows + c[AB_TERM_ARITH] * ab_layer_arith(a, i) +
	           c[AB_TERM_BMM_ITEMS] * ab_layer_bmm_us(a, i);
	const double *dw = a->costs[i].dw_weight;
	if (k == AB_TERM_GROUPCONV && dw[0] > 0)
		w += (threads <= 1 ? c[AB_TERM_CONV] * AB_TORCH_DW_DENSE_RATIO : c[AB_TERM_GROUPCONV]) *
		     (dw[0] * (double)l->forward_flops + dw[1] * (double)l->backward_flops);
	else if (a->costs[i].group_weight > 0)
		w += c[k] * a->costs[i].group_weight * ((double)l->forward_flops + (double)l->backward_flops);
	else if (k == AB_TERM_CONV && a->costs[i].pad_weight > 1)
		w += c[AB_TERM_CONV] * a->costs[i].pad_weight * ((double)l->forward_flops + (double)l->backward_flops);
	else if (k >= 0) {
		double f = (double)l->forward_flops + (double)l->backward_flops, s = (double)a->costs[i].serial_flops;
		w += c[k] * (s < f ? f - s : 0);
	}
	return w;
}

/* What 1.13's autograd keeps where the op table (the autograd of later PyTorch, runtime_torch2_cpu.c) says less:
 * - a mean over given dimensions (MeanBackward1: x.mean(dims), exported as ReduceMean with axes) keeps its whole
 *   input, for the input's sizes (1.13's derivatives.yaml divides by _safe_size(self.sizes(), dim), and its
 *   code generator saves `self` for that call); a mean over everything (MeanBackward0, no axes) keeps the sizes
 *   alone. Measured 2026-12-05 with the allocator tracker (/tmp/wt-mem-probe/p_mean.py: s = (x @ W) * 2 of
 *   [16, 256, 64], 1 MiB, then s.mean(dims) or s.sum(dims), what the forward leaves live): mean over (1),
 *   (0, 1), (2), (1, 2) keeps 1.005-1.020 MiB, the sum 4-20 kB, mean() 4 kB; PyTorch 2.15 keeps 4-20 kB for
 *   every mean. ResNeSt's split attention (splits.sum(1).mean((2, 3))) keeps one [B, c, h, w] map per block
 *   so: resnest_d's forward ended 145 kB (batch 1) above the simulation, its four sums' maps and their records. */
static void torch113_saved(const ab_ctx *c, const ab_opdef *def, ab_cost *k)
{
	if ((def->flags & AB_OP_MEAN_GRAD) && ab_reduce_has_axes(c->n) && ab_in_rg(c, 0))
		k->in_mask |= 1;
}

/* The loss and the step as the allocator tracker shows PyTorch 1.13 running them on the CPU (memory.c says
 * how each is used): cross-entropy's backward holds the log-softmax's gradient beside the output's; MSE
 * computes its unreduced error through two output-sized buffers and the loss keeps one of them until the
 * step returns (a language model's logits are its largest tensors: GPT's peak was 9 % above the simulation
 * without it); Adam's step holds two temporaries of the largest parameter. */
const ab_runtime ab_runtime_torch_1_13_cpu = {
	.name = "torch-1.13.1",
	/* reshape_copies: measured on 1.13's nn.MultiheadAttention (memory.c reshape_copies); 2.x runs attention
	 * through other kernels, and its rows (conformer_small, gpt_small) came out 0.1-0.2 % lower with it. */
	.step = { AB_TORCH_STEP_MEMORY_FIELDS, .reshape_copies = 1 },
	/* BatchNorm's backward holds one input-sized buffer beside the input's gradient (the allocator tracker: a
	 * peak of two input-sized tensors over what was live, one left after). Its CPU kernels (statistics,
	 * normalisation and backward) loop over (sample, channel) rows and vectorise within a row's map; a map
	 * of 2 to 15 elements (2×2, 3×3, 1×2: the last stages of a network at small inputs) fills no vector:
	 * measured on cpu1, fwd + bwd of [8, 960, 2, 2] takes 0.9-1.1 ms, [8, 960, 4, 4] (4× the data) 0.3 ms;
	 * 75-140 ns per row at 2-9 elements for 64 to 960 channels and batches 8 and 32, against 3-5 ns per
	 * element on larger maps. A 1×1 map takes a separate fast path (8 ns per row). */
	.bn_backward_buffers = 1,
	.bn_scalar_map_min = 2,
	.bn_scalar_map_max = 15,
	.ln_tail_below = INT64_MAX,
	.saved = torch113_saved,
	/* Recurrent layers. A step's dispatch is priced as 361 kB of R streamed (156 kB for a plain RNN), a row-MAC
	 * of its products as 0.3 B, a gate element as 48 B (docs/COSTS.md, recurrent steps). The row-MAC's
	 * 0.444 B of the microbenchmark (batch 1, 4 and 16) priced batch 32 too slow: on the zoo's recurrent rows
	 * (one thread, the `unrecorded` machine, batches 1-32; random split, analytic base alone, mean log error
	 * per batch) 0.444 gave b1 -0.4, b2 -7.9, b4 -4.3, b8 -8.2, b16 +1.8, b32 +11.8 %, 0.3 gives +1.6, -4.1,
	 * -2.5, -4.6, -5.3, +3.5 % (0.2: b16 -7.8 %). Leave one family out, one thread, rows of 121ed6d: 12.64 ->
	 * 12.22 % (the zoo's recurrent family 34.6 -> 30.3 %); random split 6.96 -> 6.92 %.
	 * A step costs more in a longer sequence: 282 B of R a step per step of the layer's sequence (a plain RNN
	 * 122; 0.2 × the dispatch per 256 steps). Alone (one thread, forward and backward, median of 7), an LSTM of
	 * H 64 at batch 1 takes 58-60 µs a step at sequences 32-256, 65 at 384, 76 at 512, 80 at 768 (batch 4
	 * likewise; H 256 229 → 255; a GRU of 64 62 → 69, a plain RNN 22 → 24): the autograd records of every
	 * earlier step stay live until the backward. Inside networks the rise starts earlier: the zoo's recurrent
	 * rows on the `unrecorded` machine, analytic base by sequence length 32 … 512: +0.9, +2.2, −2.5, −2.7,
	 * −9.4 % without this, −2.2, −0.8, −4.4, −2.3, −3.3 % with it (a rise only above 256 steps, tried: −5.4 % at
	 * 512 and nothing for leave one family out). Leave one family out, one thread, rows of 121ed6d: 12.22 →
	 * 11.97 % (the generated recurrent networks 16.6 → 14.1 %, the zoo's 30.3 → 28.1 %); random 6.92 → 6.89 %.
	 * Its autograd keeps 4,400 B of records to its backward and 9,600 B to the graph's end (a plain RNN 950
	 * and 3,000).
	 * PyTorch's CPU cells (aten/src/ATen/native/RNN.cpp) keep, per step, sample and direction, new
	 * storage for the gates (activated in place) and the cell's intermediate results. Measured with the
	 * allocator tracker (H 256, sequence 128, batch 1 to 32, one and two directions): LSTM and GRU alike
	 * keep 7.5·H floats per step and sample beside the output, and 14 kB per step whatever the batch
	 * (the autograd records of the dozen operations a step runs); a plain RNN keeps its gates (H) and
	 * 3.9 kB. Of those records 9.1-10.2 kB per step and direction outlive the backward (2.9-3.4 kB for
	 * a plain RNN): they die with the graph, when the loss does, after the optimizer step (measured:
	 * H 32 and 256, batch 1 and 16, sequence 16 and 64, one or two layers or directions). Freeing
	 * them at the backward put small-H networks, whose peak is at the end of the backward, 10 % low.
	 * Backward through time accumulates R's gradient step by step, out of place (the step's term arrives
	 * transposed): at a direction's first steps, while every saved tensor is still live, the running sum,
	 * the step's term and their sum are R-sized each (3 R). With two directions the second runs with the
	 * first's gradient done (4 R) but half the layer's saved buffers freed. The simulator adds the
	 * layer's gradients (R and W of each direction, the input's) at once with every saved tensor live,
	 * so the workspace is what those peaks exceed them by. Measured (allocator tracker; GRU and LSTM,
	 * H 64-512, batch 1-16, sequence 16 and 64): over the live set before it, one direction's backward
	 * peaks at 3.0 R, two directions' at 4.0 R of one direction when the saved buffers are small;
	 * bilstm_tagger (H 256, two directions, batch 8) at 3 R. Without it a GRU with H 512 at batch 1 was
	 * simulated 5.5 MiB (25 %) short. */
	.rnn = AB_TORCH_RNN_COSTS,
	.conv_kernel = ab_torch_conv_kernel,
	.dispatch_us = ab_torch_dispatch_us,
	/* Debian's PyTorch 1.13 has no MKL: its CPU bmm runs a matrix of m·k·n ≥ 400 as an addmm of its own, one
	 * after another (aten's bmm_out_or_baddbmm_: three selects and a dispatch per matrix), smaller ones in
	 * one naive kernel. Measured 2026-12-06 on one thread (Intel guest, fwd + both gradients of 64 and of
	 * 1,024 matrices, the difference per product-matrix, median of 5 rounds of 25): 1.29 µs at [8, 8]×[8, 8],
	 * 1.72 at 16³, 1.93 at [160, 8]×[8, 1] (a capsule network's predictions, 1,024 matrices: 3 × 1,024 of
	 * them a step, 6 ms of 12 measured at batch 1 that nothing priced), beside its FLOPs; 0.35 µs at
	 * [8, 8]×[8, 6] (m·k·n 384). */
	.bmm_item_us = { 0.35, 1.6 },
	.bmm_loop_mkn = 400,
	.act_ns = AB_TORCH_ARITH_NS,
	.mark_fused = ab_torch_mark_fused,
	.time_terms = ab_torch_time_terms,
	.conv_depthwise = ab_torch_conv_depthwise,
	.layer_time = ab_torch_layer_time,
};
