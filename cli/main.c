/*
 * main.c — `abacus <command> [options]`: a table of commands, each in its own cmd_<name>.c.
 * cli_main is separate from main() so that the option-parsing fuzz target can drive it.
 */
#include <string.h>

#include "cli.h"

typedef struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
} command;

static const command commands[] = {
	{ "inspect", cmd_inspect, "per-layer shapes, FLOPs, parameters and the training-step memory of a graph" },
	{ "predict", cmd_predict, "time per training iteration and peak memory, with 90 % intervals" },
	{ "plan", cmd_plan, "largest batch that fits a memory budget; time per iteration and per epoch" },
	{ "train", cmd_train, "fit the predictor on measured rows and write a bundle" },
	{ "eval", cmd_eval, "error of the predictor and baselines against measured rows (random, lomo, cross-hw, lomachine)" },
	{ "calibrate", cmd_calibrate, "this machine's speed index now, or (--out FILE) its profile of measured rates" },
	{ "adapt", cmd_adapt, "few-shot: rows measured on a machine refit its profile's time factor" },
	{ "features", cmd_features, "the predictor's named feature vector (structural matrix and aggregates)" },
	{ "profile", cmd_profile, "measure training time and memory with PyTorch on this machine (ground truth)" },
};

static void usage(FILE *f)
{
	fprintf(f, "usage: abacus <command> [options]\n\ncommands:\n");
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
		fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\nrun 'abacus <command> --help' for a command's options; 'abacus --version' for the version.\n");
}

int cli_main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return CLI_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return CLI_OK;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("abacus %s\n", abacus_version(NULL, NULL, NULL));
		return CLI_OK;
	}
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].run(argc - 1, argv + 1);
	fprintf(stderr, "abacus: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return CLI_USAGE;
}

#ifndef ABACUS_NO_MAIN
int main(int argc, char **argv)
{
	return cli_main(argc, argv);
}
#endif
