/*
 * fuzz_cli.c — libFuzzer target for the command-line option parser: the input is split at NUL bytes
 * into argv and handed to the dispatcher (stdout goes to /dev/null). Commands that would measure
 * or write (profile, train, calibrate, adapt: they start Python workers or rewrite profiles) are left out, and
 * output goes to /dev/null: their parsing is exercised with --help only.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int quiet;
	if (!quiet) {
		/* stdout only: stderr must stay open for sanitizer and libFuzzer reports. */
		if (!freopen("/dev/null", "w", stdout))
			return 0;
		quiet = 1;
	}
	if (size > 4096)
		return 0;
	char *buf = malloc(size + 1);
	char *argv[66];
	int argc = 0;
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	argv[argc++] = "abacus";
	for (char *p = buf; p < buf + size && argc < 64; p += strlen(p) + 1)
		argv[argc++] = p;
	argv[argc] = NULL;
	if (argc > 1 &&
	    (!strcmp(argv[1], "profile") || !strcmp(argv[1], "train") || !strcmp(argv[1], "calibrate") ||
	     !strcmp(argv[1], "adapt")) &&
	    !(argc > 2 && !strcmp(argv[2], "--help"))) {
		free(buf);
		return 0;
	}
	/* eval trains predictors: seconds of valid work under the sanitizers, not a hang (found as a 12 s
	 * "timeout" with --rounds 68). It runs only with a small explicit --rounds. */
	int small_rounds = 0;
	for (int i = 1; i + 1 < argc; i++)
		if (!strcmp(argv[i], "--rounds") && atol(argv[i + 1]) <= 8)
			small_rounds = 1;
	if (argc > 1 && !strcmp(argv[1], "eval") && !small_rounds && !(argc > 2 && !strcmp(argv[2], "--help"))) {
		free(buf);
		return 0;
	}
	/* --svg and --out would write files named by the fuzzer: refuse them. */
	for (int i = 1; i < argc; i++)
		if (strstr(argv[i], "--svg") || strstr(argv[i], "--out") ||
		    (!strcmp(argv[i], "--rounds") && i + 1 < argc && atol(argv[i + 1]) > 8)) {
			free(buf);
			return 0;
		}
	cli_main(argc, argv);
	free(buf);
	return 0;
}
