/*
 * test_cli.c — the command line's own parsers, called directly (the test binary links cli/ but main.c).
 */
#include <stdint.h>

#include "../cli/cli.h"
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
