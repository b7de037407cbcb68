/* fuzz_bundle.c — libFuzzer target for the predictor bundle reader (then a save/load round trip). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "abacus.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	abacus_predictor *p = NULL, *q = NULL;
	abacus_error err;
	if (abacus_predictor_load(&p, (const char *)data, size, &err) == 0) {
		char *buf;
		size_t len;
		if (abacus_predictor_save(&buf, &len, p, &err) == 0) {
			if (abacus_predictor_load(&q, buf, len, &err) != 0)
				__builtin_trap(); /* what we write we must read back */
			abacus_buffer_free(buf);
		}
	}
	abacus_predictor_free(p);
	abacus_predictor_free(q);
	return 0;
}
