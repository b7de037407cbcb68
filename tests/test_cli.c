/*
 * test_cli.c — the command line's own parsers, called directly (the test binary links cli/ but main.c).
 */
#include <stdint.h>
#include <stdlib.h>

#include <stdio.h>
#include <unistd.h>

#include "../cli/cli.h"
#include "../cli/profile/profile.h"
#include "tests.h"

/* One byte-count parser for every command (plan --mem, profile --mem-limit). Before it, profile read
 * "2.5GB" as 2.5 GiB while plan read it as 2.5e9 bytes. */
void test_cli_parse_bytes(void);
void test_cli_parse_bytes(void)
{
	static const struct { const char *text; int64_t want; } good[] = {
		{ "2.5GB", 2500000000LL }, { "2.5gb", 2500000000LL }, { "300MB", 300000000LL }, { "1KB", 1000 },
		{ "1TB", 1000000000000LL }, { "2GiB", 2147483648LL }, { "2G", 2147483648LL }, { "2g", 2147483648LL },
		{ "512MiB", 536870912LL }, { "512M", 536870912LL }, { "4KiB", 4096 }, { "1T", 1099511627776LL },
		{ "1000000", 1000000 }, { "17B", 17 }, { "2000 M", 2097152000LL },
	};
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
		int64_t v = -1;
		int rc = cli_parse_bytes(&v, good[i].text);
		CHECK_EQ_I64(rc, 0);
		if (v != good[i].want)
			fprintf(stderr, "  parsing '%s'\n", good[i].text);
		CHECK_EQ_I64(v, good[i].want);
	}
	static const char *const bad[] = { "", "0", "-5GiB", "GB", "3XB", "2.5GiBs", "1e30", "9300000TB", "8EiB", "nan", "inf" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		int64_t v = 77;
		int rc = cli_parse_bytes(&v, bad[i]);
		if (rc != -1)
			fprintf(stderr, "  '%s' was accepted as %lld\n", bad[i], (long long)v);
		CHECK_EQ_I64(rc, -1);
		CHECK_EQ_I64(v, 77);
	}
}

/* The option tables (cli/opt.c): every kind of entry parses into its target, `--name=value` and `--name
 * value` alike, positional arguments are collected (also after `--`), and each wrong input is a usage error
 * that leaves the run (unknown option, missing or invalid value, out of range, a required one absent). */
typedef struct opt_targets {
	int sw, i, choice;
	int64_t i64, bytes;
	uint64_t u64;
	double d;
	const char *s;
	cli_args args;
} opt_targets;

static int parse_with(opt_targets *t, int argc, const char *const *argv)
{
	static const char *const colours[] = { "red", "green", "blue", NULL };
	memset(t, 0, sizeof *t);
	const cli_opt_spec specs[] = {
		CLI_OPT(CLI_OPT_ARGS, "FILE", NULL, &t->args, "inputs", .flags = CLI_OPT_REQUIRED),
		CLI_OPT(CLI_OPT_SWITCH, "--fast", NULL, &t->sw, "a switch"),
		CLI_OPT(CLI_OPT_INT, "--n", "N", &t->i, "an int", .min = 1, .max = 10),
		CLI_OPT(CLI_OPT_I64, "--big", "N", &t->i64, "an int64", .min = -5, .max = 9.3e18),
		CLI_OPT(CLI_OPT_U64, "--seed", "N", &t->u64, "a seed", .min = 0, .max = 9.3e18),
		CLI_OPT(CLI_OPT_DOUBLE, "--eta", "X", &t->d, "a rate", .min = 0, .max = 1),
		CLI_OPT(CLI_OPT_CHOICE, "--colour", NULL, &t->choice, "a colour", .choices = colours),
		CLI_OPT(CLI_OPT_BYTES, "--mem", "SIZE", &t->bytes, "a size"),
		CLI_OPT(CLI_OPT_STRING, "--out", "FILE", &t->s, "a file", .flags = CLI_OPT_REQUIRED),
		CLI_OPT_TABLE_END
	};
	return cli_opt_parse(specs, "test", "a test table", argc, (char **)argv);
}

void test_cli_opt_table(void);
void test_cli_opt_table(void)
{
	opt_targets t;
	const char *ok[] = { "x", "a.csv", "--fast", "--n", "7", "--big=-5", "--seed", "9000000000000000000", "--eta=0.25",
	                     "--colour", "blue", "--mem", "2GiB", "--out=o.bin", "b.csv", "--", "--c.csv" };
	CHECK_EQ_I64(parse_with(&t, (int)(sizeof ok / sizeof ok[0]), ok), 0);
	CHECK_EQ_I64(t.sw, 1);
	CHECK_EQ_I64(t.i, 7);
	CHECK_EQ_I64(t.i64, -5);
	CHECK(t.u64 == 9000000000000000000ULL);
	CHECK(t.d == 0.25);
	CHECK_EQ_I64(t.choice, 2);
	CHECK_EQ_I64(t.bytes, 2147483648LL);
	CHECK(t.s && !strcmp(t.s, "o.bin"));
	CHECK_EQ_I64(t.args.n, 3);
	if (t.args.n == 3) {
		CHECK(!strcmp(t.args.v[0], "a.csv"));
		CHECK(!strcmp(t.args.v[1], "b.csv"));
		CHECK(!strcmp(t.args.v[2], "--c.csv"));
	}
	free(t.args.v);
	static const struct { int argc; const char *argv[4]; } bad[] = {
		{ 3, { "x", "a", "--out" } },                  /* a missing value */
		{ 2, { "x", "--out=o" } },                     /* no positional argument, one required */
		{ 2, { "x", "a" } },                           /* --out required */
		{ 4, { "x", "a", "--out=o", "--nope" } },      /* unknown option */
		{ 4, { "x", "a", "--out=o", "--n=11" } },      /* out of range */
		{ 4, { "x", "a", "--out=o", "--n=3x" } },      /* not a number */
		{ 4, { "x", "a", "--out=o", "--eta=0" } },     /* a rate must be above 0 */
		{ 4, { "x", "a", "--out=o", "--colour=pink" } },
		{ 4, { "x", "a", "--out=o", "--mem=lots" } },
		{ 4, { "x", "a", "--out=o", "--fast=1" } },    /* a switch takes no value */
		{ 4, { "x", "a", "--out=o", "--seed=-1" } },
	};
	for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
		int rc = parse_with(&t, bad[k].argc, bad[k].argv);
		if (rc != CLI_USAGE)
			fprintf(stderr, "  bad case %zu parsed (rc %d)\n", k, rc);
		CHECK_EQ_I64(rc, CLI_USAGE);
		CHECK(t.args.v == NULL); /* freed by the parser on an error */
	}
}

/* Durations in the units people read them in (plan's epochs were printed as 3.665e+05 s). */
void test_cli_fmt_duration(void);
void test_cli_fmt_duration(void)
{
	static const struct { double s; const char *want; } cases[] = {
		{ 0.00085, "850 µs" }, { 0.0347, "34.7 ms" }, { 6.26, "6.26 s" }, { 2460, "41 min" },
		{ 10440, "2.9 h" }, { 367500, "4.25 days" }, { 0, "0 µs" }, { -1, "?" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char b[32];
		fmt_duration(b, sizeof b, cases[i].s);
		if (strcmp(b, cases[i].want))
			fprintf(stderr, "  %g s printed as '%s', wanted '%s'\n", cases[i].s, b, cases[i].want);
		CHECK(!strcmp(b, cases[i].want));
	}
	CHECK_EQ_I64(cli_width("850 µs", 12), 13);
	CHECK_EQ_I64(cli_width("6.26 s", 12), 12);
}

/* The collector's package root, as profile's workers and calibrate set PYTHONPATH from the worker's path. */
void test_cli_worker_root(void);
void test_cli_worker_root(void)
{
	static const char *const cases[][2] = {
		{ "/work/main/collector/worker.py", "/work/main" },
		{ "collector/worker.py", "." },
		{ "worker.py", ".." },
		{ "../../collector/worker.py", "../.." },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char b[256];
		cli_worker_root(b, sizeof b, cases[i][0]);
		if (strcmp(b, cases[i][1]))
			fprintf(stderr, "  %s: root '%s', wanted '%s'\n", cases[i][0], b, cases[i][1]);
		CHECK(!strcmp(b, cases[i][1]));
	}
}

/* A measurement CSV replaced under a running profile (git stash or checkout of the dataset) keeps no row in
 * the unlinked old file: the next append stops with an error and saves the old file's rows and the row at
 * hand beside the path (csv.c orphan_save). */
void test_csv_replaced_under_a_run(void);
void test_csv_replaced_under_a_run(void)
{
	char path[64], other[80], orphan[96], err[1024];
	snprintf(path, sizeof path, "/tmp/abacus_csv_replaced.%ld.csv", (long)getpid());
	snprintf(other, sizeof other, "%s.new", path);
	snprintf(orphan, sizeof orphan, "%s.orphaned-%ld", path, (long)getpid());
	unlink(path);
	unlink(orphan);
	csv_out c;
	CHECK_EQ_I64(csv_open(&c, path, err, sizeof err), 0);
	const char *row[N_COLS] = { "mlp", "", "1x3x32x32", "1", "sgd", "cpu1", "1", "0", "ok" };
	CHECK_EQ_I64(csv_append(&c, row, err, sizeof err), 0);
	FILE *f = fopen(other, "w"); /* what git writes back: the file as it was committed */
	CHECK(f != NULL);
	if (f) {
		fputs("network\n", f);
		fclose(f);
	}
	CHECK_EQ_I64(rename(other, path), 0);
	row[3] = "4";
	CHECK_EQ_I64(csv_append(&c, row, err, sizeof err), -1);
	CHECK_STR_CONTAINS(err, "was replaced or removed while this run wrote to it");
	CHECK_STR_CONTAINS(err, orphan);
	csv_close(&c);
	char buf[4096] = "";
	f = fopen(orphan, "r");
	CHECK(f != NULL);
	size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
	if (f)
		fclose(f);
	buf[n] = '\0';
	int lines = 0;
	for (size_t i = 0; i < n; i++)
		lines += buf[i] == '\n';
	CHECK_EQ_I64(lines, 3); /* the header and both rows */
	CHECK_STR_CONTAINS(buf, "mlp,,1x3x32x32,1,sgd");
	CHECK_STR_CONTAINS(buf, "mlp,,1x3x32x32,4,sgd");
	unlink(path);
	unlink(orphan);
}
