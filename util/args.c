/*
 * args.c - a command line read through a table (xprofs_args_parse()).
 *
 * The command-line tools declare each option once, with where its value goes
 * and how it is checked, instead of an enum, a getopt_long() table and a
 * switch that repeat one another. getopt_long() still does the reading (so
 * "--name=value", "--name value", abbreviations and "--" behave as in every
 * other tool); this file only builds its table and stores the values.
 * Limits: XPROFS_ARGS_MAX options; only long options and single-letter
 * aliases.
 */
#include <getopt.h>
#include <stdio.h>

#include "xprofs/util.h"

int xprofs_args_parse(const char *prog, int argc, char **argv, const struct xprofs_arg *args,
		      size_t n)
{
	struct option lopts[XPROFS_ARGS_MAX + 1] = {{0}};
	char sopts[3 * XPROFS_ARGS_MAX + 2] = ":";
	size_t ns = 1;
	int c;

	if (n > XPROFS_ARGS_MAX)
		return -2;
	for (size_t i = 0; i < n; i++) {
		int has = args[i].kind == XPROFS_ARG_STR || args[i].kind == XPROFS_ARG_FN;

		lopts[i] = (struct option){args[i].name, has ? required_argument : no_argument,
					   NULL, 0x100 + (int)i};
		if (args[i].letter) {
			sopts[ns++] = args[i].letter;
			if (has)
				sopts[ns++] = ':';
		}
	}
	sopts[ns] = '\0';
	while ((c = getopt_long(argc, argv, sopts, lopts, NULL)) != -1) {
		const struct xprofs_arg *a = NULL;

		for (size_t i = 0; i < n && !a; i++)
			if (c == 0x100 + (int)i || (args[i].letter && c == args[i].letter))
				a = &args[i];
		if (!a) { /* ':' (value missing) or '?' (unknown option): name it */
			const char *what = c == ':' ? "no value for option" : "unknown option";

			if (optopt >= 0x100 && optopt < 0x100 + (int)n)
				fprintf(stderr, "%s: %s '--%s'\n", prog, what,
					args[optopt - 0x100].name);
			else if (optopt > 0 && optopt < 0x100) /* a letter, maybe inside "-abc" */
				fprintf(stderr, "%s: %s '-%c'\n", prog, what, optopt);
			else
				fprintf(stderr, "%s: %s '%s'\n", prog, what, argv[optind - 1]);
			return -2;
		}
		switch (a->kind) {
		case XPROFS_ARG_FLAG:
			*(bool *)a->dst = true;
			break;
		case XPROFS_ARG_STR:
			*(const char **)a->dst = optarg;
			break;
		case XPROFS_ARG_FN:
			if (a->parse(optarg, a->dst) < 0) {
				fprintf(stderr, "%s: --%s wants %s, not '%s'\n", prog, a->name,
					a->want, optarg);
				return -2;
			}
			break;
		case XPROFS_ARG_STOP:
			return (int)(a - args);
		}
	}
	return -1;
}
