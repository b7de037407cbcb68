/*
 * harness.h — a tiny test harness: named cases registered in a table, a name filter on the command line,
 * and CHECK macros that report file:line and keep going within a case.
 */
#ifndef ABACUS_HARNESS_H
#define ABACUS_HARNESS_H

#include <stdio.h>
#include <string.h>

extern int t_failed_checks;

#define CHECK(cond)                                                                          \
	do {                                                                                     \
		if (!(cond)) {                                                                       \
			fprintf(stderr, "  %s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond);     \
			t_failed_checks++;                                                               \
		}                                                                                    \
	} while (0)

#define CHECK_EQ_I64(a, b)                                                                   \
	do {                                                                                     \
		long long _a = (long long)(a), _b = (long long)(b);                                  \
		if (_a != _b) {                                                                      \
			fprintf(stderr, "  %s:%d: %s == %lld, expected %s == %lld\n", __FILE__, __LINE__, \
			        #a, _a, #b, _b);                                                         \
			t_failed_checks++;                                                               \
		}                                                                                    \
	} while (0)

#define CHECK_STR_CONTAINS(hay, needle)                                                      \
	do {                                                                                     \
		if (!strstr((hay), (needle))) {                                                      \
			fprintf(stderr, "  %s:%d: '%s' does not contain '%s'\n", __FILE__, __LINE__,     \
			        (hay), (needle));                                                        \
			t_failed_checks++;                                                               \
		}                                                                                    \
	} while (0)

typedef struct t_case {
	const char *name;
	void (*fn)(void);
} t_case;

#endif
