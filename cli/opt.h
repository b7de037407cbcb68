/*
 * opt.h — one table of option specs per command drives both its argument parsing and its --help (libgit2's
 * cli_opt_spec is the model). A command lists what it accepts once; the parser, the usage line, the help
 * text and the error messages all come from that list, so they cannot drift apart.
 *
 *     int64_t shots = 0;
 *     const cli_opt_spec specs[] = {
 *         CLI_OPT(CLI_OPT_ARGS, "DATA.csv", NULL, &files, "measured rows", .flags = CLI_OPT_REQUIRED),
 *         CLI_OPT(CLI_OPT_I64, "--shots", "K", &shots, "rows that refit it", .min = 0, .max = 100000),
 *         CLI_OPT_TABLE_END
 *     };
 *     int rc = cli_opt_parse(specs, "eval", DESCRIPTION, argc, argv);
 *     if (rc) return rc < 0 ? CLI_OK : rc;    (-1: --help was printed)
 */
#ifndef ABACUS_CLI_OPT_H
#define ABACUS_CLI_OPT_H

#include <stddef.h>
#include <stdio.h>

typedef enum {
	CLI_OPT_END,    /* the { 0 } that ends a table */
	CLI_OPT_SWITCH, /* --name: *(int *)target = 1 */
	CLI_OPT_STRING, /* --name VALUE: *(const char **)target = VALUE (the argv string) */
	CLI_OPT_INT,    /* --name N: *(int *)target, an integer within [min, max] */
	CLI_OPT_I64,    /* --name N: *(int64_t *)target, within [min, max] */
	CLI_OPT_U64,    /* --name N: *(uint64_t *)target, within [min, max] */
	CLI_OPT_DOUBLE, /* --name X: *(double *)target, finite, within (min, max] */
	CLI_OPT_CHOICE, /* --name WORD: *(int *)target = the index of WORD in `choices` */
	CLI_OPT_BYTES,  /* --name SIZE: *(int64_t *)target, a byte count with units (cli_parse_bytes) */
	CLI_OPT_FUNC,   /* --name VALUE: func(target, VALUE, cmd) returns 0, or -1 for an invalid value */
	CLI_OPT_ARGS    /* positional arguments, collected into a cli_args (target); `name` is their usage word */
} cli_opt_type;

enum {
	CLI_OPT_REQUIRED = 1, /* must be given (an option), or at least one (positional arguments) */
	CLI_OPT_NO_USAGE = 2, /* left out of the usage line (still in the help text) */
	CLI_OPT_SINGLE = 4    /* positional arguments: at most one */
};

typedef struct cli_opt_spec {
	cli_opt_type type;
	const char *name;            /* "--rounds"; for CLI_OPT_ARGS the usage word ("DATA.csv") */
	const char *value;           /* the value's name in usage and help ("N"), NULL for switches */
	void *target;
	const char *help;            /* lines separated by '\n' */
	double min, max;             /* INT, I64, U64, DOUBLE: accepted range */
	const char *const *choices;  /* CHOICE: NULL-terminated words */
	int (*func)(void *target, const char *value, const char *cmd); /* -1: invalid; -2: invalid, said why */
	unsigned flags;              /* CLI_OPT_* */
} cli_opt_spec;

/* One table entry: the type, the option's name, its value's name, where it goes and its help, then any of
 * .min, .max, .choices, .func, .flags as designators. The table ends with CLI_OPT_TABLE_END. */
#define CLI_OPT(ty, nm, val, tgt, hlp, ...) \
	{ .type = (ty), .name = (nm), .value = (val), .target = (tgt), .help = (hlp), __VA_ARGS__ }
#define CLI_OPT_TABLE_END { .type = CLI_OPT_END }

/* Positional arguments, in order; `v` is allocated by cli_opt_parse, and the caller frees it when the parse
 * succeeded (on --help or an error it is freed already and NULL). */
typedef struct cli_args {
	char **v;
	size_t n;
} cli_args;

/* Parses argv[1 .. argc) with `specs`: 0, or CLI_USAGE after printing a usage error that names the option
 * and what it accepts, or -1 after printing the help for -h/--help. */
int cli_opt_parse(const cli_opt_spec *specs, const char *cmd, const char *description, int argc, char **argv);
/* The usage line, the description and one entry per option, as --help prints them. */
void cli_opt_help(FILE *f, const cli_opt_spec *specs, const char *cmd, const char *description);

#endif
