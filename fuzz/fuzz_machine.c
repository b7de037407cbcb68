/* fuzz_machine.c — libFuzzer target for the machine profile reader: a profile that loads must save and
 * load again to the same rates (the reader and writer agree on every input the reader accepts). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "abacus.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	abacus_machine *m = NULL, *m2 = NULL;
	abacus_error err;
	if (abacus_machine_load(&m, (const char *)data, size, &err) == 0) {
		char *out = NULL;
		size_t len = 0;
		if (abacus_machine_save(&out, &len, m, &err) == 0) {
			if (abacus_machine_load(&m2, out, len, &err))
				abort(); /* what the writer wrote, the reader must read */
			for (size_t i = 0; i < abacus_machine_n_rates(); i++) {
				const char *n = abacus_machine_rate_name(i);
				if (abacus_machine_rate(m, n, NULL) != abacus_machine_rate(m2, n, NULL))
					abort();
			}
			if (strcmp(abacus_machine_id(m), abacus_machine_id(m2)))
				abort();
		}
		abacus_buffer_free(out);
	}
	abacus_machine_free(m);
	abacus_machine_free(m2);
	return 0;
}
