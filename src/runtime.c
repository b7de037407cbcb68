/*
 * runtime.c — the runtimes this library can price (runtime.h), by the name rows and configurations use.
 * The first is the default: a configuration that names none is priced as the dataset's rows were measured.
 */
#include <stdio.h>
#include <string.h>

#include "runtime.h"
#include "util.h"

static const ab_runtime *const runtimes[] = {
	&ab_runtime_torch_1_13_cpu,
	&ab_runtime_torch_2_15_cpu,
	&ab_runtime_tf_2_21_cpu,
};
#define N_RUNTIMES (sizeof runtimes / sizeof runtimes[0])
_Static_assert(N_RUNTIMES == AB_N_RUNTIMES, "AB_N_RUNTIMES (runtime.h) counts the runtimes table");

double ab_ln_arith_ns(const ab_runtime *rt, int64_t n)
{
	if (n < 1)
		return 0;
	double row = rt->act_ns[AB_ACT_LN_ROW] + (n % 8 && n < rt->ln_tail_below ? rt->act_ns[AB_ACT_LN_ROW_TAIL] : 0);
	return row / (double)n;
}

int ab_runtime_index(const ab_runtime *rt)
{
	for (size_t i = 0; i < N_RUNTIMES; i++)
		if (runtimes[i] == rt)
			return (int)i;
	return -1;
}

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

int abacus_parse_runtime(const char **out, const char *text, abacus_error *err)
{
	const ab_runtime *rt = text ? ab_runtime_find(text) : NULL;
	*out = rt ? rt->name : NULL;
	if (rt)
		return 0;
	char known[256] = "";
	for (size_t i = 0; i < N_RUNTIMES; i++)
		snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", i ? ", " : "", runtimes[i]->name);
	return ab_err(err, ABACUS_EINVAL, text ? text : "", "unknown runtime '%s': this abacus prices %s",
	              text ? text : "(none)", known);
}
