/*
 * test_main.c — runs every registered test case, or those whose name contains argv[1].
 * Prints one line per case and a closing "N passed, N failed" line.
 */
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "tests.h"

int t_failed_checks;

int main(int argc, char **argv)
{
	const char *filter = argc > 1 ? argv[1] : NULL;
	int passed = 0, failed = 0;
	for (size_t i = 0; i < t_n_cases; i++) {
		const t_case *c = &t_cases[i];
		if (filter && !strstr(c->name, filter))
			continue;
		int before = t_failed_checks;
		c->fn();
		if (t_failed_checks == before) {
			passed++;
			printf("ok   %s\n", c->name);
		} else {
			failed++;
			printf("FAIL %s\n", c->name);
		}
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
