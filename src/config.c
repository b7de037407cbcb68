/*
 * config.c — parsing of the small textual options that the CLI and embedders share: dims ("1x3x224x224")
 * and optimizer names.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

int abacus_parse_dims(abacus_input_shape *out, const char *text, abacus_error *err)
{
	memset(out, 0, sizeof *out);
	const char *p = text;
	if (!p || !*p)
		return ab_err(err, ABACUS_EINVAL, "", "empty dims: expected something like 1x3x224x224");
	for (;;) {
		if (out->rank == ABACUS_MAX_RANK)
			return ab_err(err, ABACUS_EINVAL, text, "'%s' has more than %d dims", text, ABACUS_MAX_RANK);
		char *end;
		errno = 0;
		if (*p < '0' || *p > '9')
			return ab_err(err, ABACUS_EINVAL, text, "'%s' is not a list of positive integers such as 1x3x224x224", text);
		long long v = strtoll(p, &end, 10);
		if (errno || v <= 0)
			return ab_err(err, ABACUS_EINVAL, text, "dim %d of '%s' must be a positive integer that fits 64 bits",
			              out->rank, text);
		out->dims[out->rank++] = v;
		if (*end == '\0')
			break;
		if (*end != 'x' && *end != 'X' && *end != ',')
			return ab_err(err, ABACUS_EINVAL, text, "unexpected '%c' in dims '%s' (use 1x3x224x224)", *end, text);
		p = end + 1;
	}
	int64_t n;
	if (ab_numel(out->dims, out->rank, &n))
		return ab_err(err, ABACUS_EINVAL, text, "the product of dims '%s' overflows 64 bits", text);
	return 0;
}

int abacus_parse_optimizer(abacus_optimizer *out, const char *text, abacus_error *err)
{
	if (text && !strcmp(text, "sgd"))
		*out = ABACUS_OPT_SGD;
	else if (text && !strcmp(text, "adam"))
		*out = ABACUS_OPT_ADAM;
	else
		return ab_err(err, ABACUS_EINVAL, text ? text : "", "unknown optimizer '%s' (use sgd or adam)", text ? text : "");
	return 0;
}

const char *abacus_optimizer_name(abacus_optimizer o)
{
	return o == ABACUS_OPT_ADAM ? "adam" : "sgd";
}

const char *abacus_version(int *major, int *minor, int *patch)
{
	if (major)
		*major = ABACUS_VERSION_MAJOR;
	if (minor)
		*minor = ABACUS_VERSION_MINOR;
	if (patch)
		*patch = ABACUS_VERSION_PATCH;
	return ABACUS_VERSION;
}

int abacus_config_init(abacus_config *cfg, unsigned int version)
{
	if (version != ABACUS_CONFIG_VERSION)
		return ab_err(NULL, ABACUS_EINVAL, "", "abacus_config version %u", version);
	abacus_config init = ABACUS_CONFIG_INIT;
	*cfg = init;
	return 0;
}

/* A version-1 abacus_train_opts ends where `progress` begins: fields are only ever added at the end, so an
 * older struct is a prefix of the current one (its size, padding included, is this offset). */
#define TRAIN_OPTS_V1_SIZE offsetof(abacus_train_opts, progress)
#define TRAIN_OPTS_V2_SIZE offsetof(abacus_train_opts, family_of)
/* The bytes of a struct of `version` (1 to 3), 0 for another. */
static size_t train_opts_size(unsigned int version)
{
	return version == 1 ? TRAIN_OPTS_V1_SIZE : version == 2 ? TRAIN_OPTS_V2_SIZE
	       : version == ABACUS_TRAIN_OPTS_VERSION ? sizeof(abacus_train_opts) : 0;
}

int abacus_train_opts_init(abacus_train_opts *o, unsigned int version)
{
	size_t size = train_opts_size(version);
	if (!size)
		return ab_err(NULL, ABACUS_EINVAL, "", "abacus_train_opts version %u", version);
	abacus_train_opts init = ABACUS_TRAIN_OPTS_INIT;
	init.version = version;
	/* An older caller's struct has no room for the later fields: write only its own. */
	memcpy(o, &init, size);
	return 0;
}

int ab_train_opts_read(abacus_train_opts *out, const abacus_train_opts *in, abacus_error *err)
{
	abacus_train_opts init = ABACUS_TRAIN_OPTS_INIT;
	*out = init;
	size_t size = train_opts_size(in->version);
	if (!size && ab_check_version("abacus_train_opts", in->version, ABACUS_TRAIN_OPTS_VERSION, err))
		return ABACUS_EINVAL;
	memcpy(out, in, size);
	out->version = ABACUS_TRAIN_OPTS_VERSION;
	return 0;
}

int ab_check_version(const char *what, unsigned int got, unsigned int want, abacus_error *err)
{
	if (got == want)
		return 0;
	return ab_err(err, ABACUS_EINVAL, "",
	              "%s has version %u, this library reads version %u: initialise it with its _INIT macro or _init() "
	              "function (abacus.h) before setting fields",
	              what, got, want);
}
