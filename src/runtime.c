/*
 * runtime.c — the runtimes this library can price (runtime.h), by the name rows and configurations use.
 * The first is the default: a configuration that names none is priced as the dataset's rows were measured.
 */
#include <string.h>

#include "runtime.h"

static const ab_runtime *const runtimes[] = {
	&ab_runtime_torch_1_13_cpu,
};
#define N_RUNTIMES (sizeof runtimes / sizeof runtimes[0])

const ab_runtime *ab_runtime_find(const char *name)
{
	if (!name)
		return runtimes[0];
	for (size_t i = 0; i < N_RUNTIMES; i++)
		if (!strcmp(runtimes[i]->name, name))
			return runtimes[i];
	return NULL;
}

const char *abacus_runtime_name(size_t i)
{
	return i < N_RUNTIMES ? runtimes[i]->name : NULL;
}
