/*
 * fuzz_onnx.c — libFuzzer target for the ONNX loader, then shapes, costs and memory on whatever loads.
 * Built by `make fuzz` with clang; its corpus (fuzz/corpus/onnx) is replayed by `make check`.
 */
#include <stddef.h>
#include <stdint.h>

#include "abacus.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	abacus_graph *g = NULL;
	abacus_error err;
	if (abacus_graph_load(&g, data, size, &err) == 0) {
		for (int64_t batch = 1; batch <= 3; batch += 2) {
			abacus_config cfg = ABACUS_CONFIG_INIT;
			cfg.batch = batch;
			abacus_analysis *a = NULL;
			if (abacus_analyze(&a, g, &cfg, &err) == 0)
				abacus_analysis_free(a);
		}
	}
	abacus_graph_free(g);
	return 0;
}
