/*
 * opt.c — the option-table parser and help printer of opt.h.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "opt.h"

#define USAGE_WIDTH 104
#define HELP_COLUMN 21 /* where an option's help starts, unless its name is longer */

/* The word the usage line and the help show for an option's value: its `value`, or the choices a|b|c. */
static void value_word(char *buf, size_t len, const cli_opt_spec *s)
{
	buf[0] = '\0';
	if (s->value) {
		snprintf(buf, len, "%s", s->value);
		return;
	}
	for (size_t k = 0; s->choices && s->choices[k]; k++)
		snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", k ? "|" : "", s->choices[k]);
}

static void usage_line(FILE *f, const cli_opt_spec *specs, const char *cmd)
{
	char head[64];
	int indent = snprintf(head, sizeof head, "usage: abacus %s", cmd), col = indent;
	fputs(head, f);
	/* Positional arguments first, then the options, as the commands' manuals always wrote them. */
	for (int pass = 0; pass < 2; pass++)
		for (const cli_opt_spec *s = specs; s->type != CLI_OPT_END; s++) {
			if ((s->type == CLI_OPT_ARGS) != (pass == 0) || (s->flags & CLI_OPT_NO_USAGE))
				continue;
			char item[160], v[96];
			value_word(v, sizeof v, s);
			int req = s->flags & CLI_OPT_REQUIRED;
			if (s->type == CLI_OPT_ARGS)
				snprintf(item, sizeof item, req ? "%s%s" : "[%s%s]", s->name, (s->flags & CLI_OPT_SINGLE) ? "" : "...");
			else
				snprintf(item, sizeof item, "%s%s%s%s%s", req ? "" : "[", s->name, v[0] ? " " : "", v, req ? "" : "]");
			int n = (int)strlen(item);
			if (col + 1 + n > USAGE_WIDTH) {
				fprintf(f, "\n%*s", indent, "");
				col = indent;
			}
			fprintf(f, " %s", item);
			col += 1 + n;
		}
	fputc('\n', f);
}

void cli_opt_help(FILE *f, const cli_opt_spec *specs, const char *cmd, const char *description)
{
	usage_line(f, specs, cmd);
	if (description && *description)
		fprintf(f, "\n%s", description);
	int any = 0;
	for (const cli_opt_spec *s = specs; s->type != CLI_OPT_END; s++) {
		if (!s->help)
			continue;
		if (!any++)
			fputc('\n', f);
		char v[96], left[160];
		value_word(v, sizeof v, s);
		if (s->type == CLI_OPT_ARGS)
			snprintf(left, sizeof left, "  %s", s->name);
		else
			snprintf(left, sizeof left, "  %s%s%s", s->name, v[0] ? " " : "", v);
		fputs(left, f);
		int col = (int)strlen(left);
		const char *h = s->help;
		for (int first = 1; *h; first = 0) {
			const char *nl = strchr(h, '\n');
			size_t n = nl ? (size_t)(nl - h) : strlen(h);
			if (!first || col + 1 > HELP_COLUMN)
				fprintf(f, "%s%*s", first ? "\n" : "", HELP_COLUMN, "");
			else
				fprintf(f, "%*s", HELP_COLUMN - col, "");
			fprintf(f, "%.*s\n", (int)n, h);
			h += n + (nl != NULL);
		}
	}
}

/* A range bound as an int64 (doubles above 2^63 become INT64_MAX, below -2^63 INT64_MIN). */
static int64_t bound(double d)
{
	return d >= 9.2e18 ? INT64_MAX : d <= -9.2e18 ? INT64_MIN : (int64_t)d;
}

/* Stores `v` into the spec's target: 0, or -1 for a value it does not accept (message printed). */
static int store(const cli_opt_spec *s, const char *cmd, const char *v)
{
	char word[96];
	value_word(word, sizeof word, s);
	int64_t x;
	switch (s->type) {
	case CLI_OPT_STRING:
		*(const char **)s->target = v;
		return 0;
	case CLI_OPT_INT:
	case CLI_OPT_I64:
	case CLI_OPT_U64:
		if (cli_parse_i64(&x, v, bound(s->min), bound(s->max)))
			return cli_usage(cmd, "%s needs an integer from %lld to %lld, got '%s'", s->name,
			                 (long long)bound(s->min), (long long)bound(s->max), v), -1;
		if (s->type == CLI_OPT_INT)
			*(int *)s->target = (int)x;
		else if (s->type == CLI_OPT_I64)
			*(int64_t *)s->target = x;
		else
			*(uint64_t *)s->target = (uint64_t)x;
		return 0;
	case CLI_OPT_DOUBLE: {
		char *end;
		errno = 0;
		double d = strtod(v, &end);
		if (end == v || *end || errno || !isfinite(d) || !(d > s->min && d <= s->max))
			return cli_usage(cmd, "%s needs a number above %g and at most %g, got '%s'", s->name, s->min, s->max, v), -1;
		*(double *)s->target = d;
		return 0;
	}
	case CLI_OPT_CHOICE:
		for (int k = 0; s->choices[k]; k++)
			if (!strcmp(s->choices[k], v)) {
				*(int *)s->target = k;
				return 0;
			}
		return cli_usage(cmd, "%s must be %s, got '%s'", s->name, word, v), -1;
	case CLI_OPT_BYTES:
		if (cli_parse_bytes((int64_t *)s->target, v))
			return cli_usage(cmd, "%s needs a positive size such as 16GiB, 512MiB or 2.5GB, got '%s'", s->name, v), -1;
		return 0;
	case CLI_OPT_FUNC: {
		int r = s->func(s->target, v, cmd);
		if (r == -1)
			cli_usage(cmd, "%s: '%s' is not a valid %s (see --help)", s->name, v, word[0] ? word : "value");
		return r ? -1 : 0; /* -2: the function printed its own message */
	}
	default:
		return -1;
	}
}

static int parse(const cli_opt_spec *specs, const char *cmd, const char *description, int argc, char **argv)
{
	const cli_opt_spec *args = NULL;
	int given[64] = { 0 };
	size_t n_specs = 0;
	for (const cli_opt_spec *s = specs; s->type != CLI_OPT_END; s++, n_specs++)
		if (s->type == CLI_OPT_ARGS)
			args = s;
	if (n_specs > sizeof given / sizeof given[0])
		return cli_usage(cmd, "internal error: more than %zu options", sizeof given / sizeof given[0]);
	cli_args *pos = args ? args->target : NULL;
	if (pos) {
		pos->n = 0;
		pos->v = calloc((size_t)(argc > 0 ? argc : 1), sizeof *pos->v);
		if (!pos->v)
			return cli_usage(cmd, "out of memory");
	}
	int only_args = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!only_args && (!strcmp(a, "--help") || !strcmp(a, "-h"))) {
			cli_opt_help(stdout, specs, cmd, description);
			return -1;
		}
		if (!only_args && !strcmp(a, "--")) {
			only_args = 1;
			continue;
		}
		if (only_args || a[0] != '-' || !a[1]) {
			if (!pos)
				return cli_usage(cmd, "unexpected argument '%s'", a);
			if (pos->n && (args->flags & CLI_OPT_SINGLE))
				return cli_usage(cmd, "only one %s is accepted (got '%s' and '%s')", args->name, pos->v[0], a);
			pos->v[pos->n++] = argv[i];
			continue;
		}
		const cli_opt_spec *hit = NULL;
		const char *val = NULL;
		for (const cli_opt_spec *s = specs; s->type != CLI_OPT_END && !hit; s++) {
			if (s->type == CLI_OPT_ARGS)
				continue;
			size_t n = strlen(s->name);
			if (strncmp(a, s->name, n) || (a[n] != '\0' && a[n] != '='))
				continue;
			hit = s;
			if (s->type == CLI_OPT_SWITCH) {
				if (a[n] == '=')
					return cli_usage(cmd, "%s takes no value", s->name);
			} else if (a[n] == '=') {
				val = a + n + 1;
			} else if (i + 1 < argc) {
				val = argv[++i];
			} else {
				char word[96];
				value_word(word, sizeof word, s);
				return cli_usage(cmd, "%s needs a value (%s %s)", s->name, s->name, word[0] ? word : "VALUE");
			}
		}
		if (!hit)
			return cli_usage(cmd, "unknown option '%s'", a);
		given[hit - specs] = 1;
		if (hit->type == CLI_OPT_SWITCH)
			*(int *)hit->target = 1;
		else if (store(hit, cmd, val))
			return CLI_USAGE;
	}
	for (const cli_opt_spec *s = specs; s->type != CLI_OPT_END; s++) {
		if (!(s->flags & CLI_OPT_REQUIRED))
			continue;
		if (s->type == CLI_OPT_ARGS && pos->n == 0)
			return cli_usage(cmd, "needs at least one %s", s->name);
		if (s->type != CLI_OPT_ARGS && !given[s - specs]) {
			char word[96];
			value_word(word, sizeof word, s);
			return cli_usage(cmd, "needs %s%s%s", s->name, word[0] ? " " : "", word);
		}
	}
	return 0;
}

int cli_opt_parse(const cli_opt_spec *specs, const char *cmd, const char *description, int argc, char **argv)
{
	int rc = parse(specs, cmd, description, argc, argv);
	/* The positional arguments are the caller's to free only when it goes on. */
	for (const cli_opt_spec *s = specs; rc && s->type != CLI_OPT_END; s++)
		if (s->type == CLI_OPT_ARGS) {
			cli_args *pos = s->target;
			free(pos->v);
			pos->v = NULL;
			pos->n = 0;
		}
	return rc;
}
