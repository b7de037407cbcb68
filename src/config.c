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

/* A version-1 abacus_config ends where `threads` begins (fields are only added at the end). */
#define CONFIG_V1_SIZE offsetof(abacus_config, threads)

int abacus_config_init(abacus_config *cfg, unsigned int version)
{
	if (version != 1 && version != ABACUS_CONFIG_VERSION)
		return ab_err(NULL, ABACUS_EINVAL, "", "abacus_config version %u", version);
	abacus_config init = ABACUS_CONFIG_INIT;
	init.version = version;
	memcpy(cfg, &init, version == 1 ? CONFIG_V1_SIZE : sizeof init);
	return 0;
}

int ab_config_read(abacus_config *out, const abacus_config *in, abacus_error *err)
{
	abacus_config init = ABACUS_CONFIG_INIT;
	*out = init;
	if (in->version != 1 && ab_check_version("abacus_config", in->version, ABACUS_CONFIG_VERSION, err))
		return ABACUS_EINVAL;
	memcpy(out, in, in->version == 1 ? CONFIG_V1_SIZE : sizeof *out);
	out->version = ABACUS_CONFIG_VERSION;
	return 0;
}

/* The widest vector ISAs machine ids name (collector/machine.py machine_id), widest first. */
static const char *const isa_names[] = { "avx512", "avx2", "sse41", "sse", NULL };

int ab_isa_has_avx(const char *isa)
{
	return !isa || !strcmp(isa, "avx512") || !strcmp(isa, "avx2");
}

int ab_check_isa(const char **out, const char *isa, abacus_error *err)
{
	*out = NULL;
	for (int i = 0; isa && isa_names[i]; i++)
		if (!strcmp(isa, isa_names[i])) {
			*out = isa_names[i];
			return 0;
		}
	return isa ? ab_err(err, ABACUS_EINVAL, isa, "unknown vector ISA '%s': machine ids name avx512, avx2, sse41 or sse",
	                    isa)
	           : 0;
}

void abacus_config_hw(abacus_config *cfg, const char *hw)
{
	if (!cfg || !hw)
		return;
	const char *slash = strrchr(hw, '/'), *at = strchr(hw, '@');
	const char *key = slash && (!at || slash < at) ? slash + 1 : hw;
	if (!strncmp(key, "cpu", 3) && key[3] >= '1' && key[3] <= '9')
		cfg->threads = (int)strtol(key + 3, NULL, 10);
	/* A machine id: vendor-fFFmMM-ISA-tN-hash. Its ISA and threads fields, found by position. */
	const char *id = at ? at + 1 : key;
	const char *f[5];
	int nf = 0;
	for (const char *p = id; p && nf < 5; p = strchr(p, '-'))
		f[nf++] = p == id ? p : ++p;
	if (nf < 5 || f[3][0] != 't')
		return;
	for (int i = 0; isa_names[i]; i++) {
		size_t n = strlen(isa_names[i]);
		if (!strncmp(f[2], isa_names[i], n) && f[2][n] == '-')
			cfg->isa = isa_names[i];
	}
	long t = strtol(f[3] + 1, NULL, 10);
	if (t >= 1 && t <= 4096)
		cfg->threads = (int)t;
}

/* A version-1 abacus_train_opts ends where `progress` begins: fields are only ever added at the end, so an
 * older struct is a prefix of the current one (its size, padding included, is this offset). */
#define TRAIN_OPTS_V1_SIZE offsetof(abacus_train_opts, progress)
#define TRAIN_OPTS_V2_SIZE offsetof(abacus_train_opts, family_of)
#define TRAIN_OPTS_V3_SIZE offsetof(abacus_train_opts, score_runtime)
/* The bytes of a struct of `version` (1 to 4), 0 for another. */
static size_t train_opts_size(unsigned int version)
{
	return version == 1 ? TRAIN_OPTS_V1_SIZE : version == 2 ? TRAIN_OPTS_V2_SIZE : version == 3 ? TRAIN_OPTS_V3_SIZE
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
