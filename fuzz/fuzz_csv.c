/* fuzz_csv.c — libFuzzer target for the measurement CSV reader. */
#include <stddef.h>
#include <stdint.h>

#include "abacus.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	abacus_dataset *d = NULL;
	abacus_error err;
	if (abacus_dataset_load(&d, (const char *)data, size, "fuzz", &err) == 0) {
		for (size_t i = 0; i < abacus_dataset_n_rows(d); i++)
			(void)abacus_dataset_row(d, i)->network;
	}
	abacus_dataset_free(d);
	return 0;
}
