/*
 * progress.c — the progress line of long library calls (train, eval) on stderr:
 *
 *     eval: fold 4/10, 41.2 s elapsed, about 1.33 min left
 *
 * redrawn in place ("\r\033[K") at each unit of work the library reports (abacus_train_opts.progress), and
 * only when stderr is a terminal: in a pipe or a log file the command stays quiet, as the house style asks.
 * The estimate is elapsed / done × (total − done): the library reports units of similar cost.
 */
#include <time.h>
#include <unistd.h>

#include "cli.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

void cli_progress_line(char *buf, size_t len, const char *what, const char *unit, size_t done, size_t total,
                       double elapsed)
{
	char el[32], left[32];
	fmt_duration(el, sizeof el, elapsed);
	if (done >= total) {
		snprintf(buf, len, "%s: %zu/%zu %ss done, %s elapsed", what, total, total, unit, el);
		return;
	}
	if (!done) { /* nothing to time yet */
		snprintf(buf, len, "%s: %s 1/%zu", what, unit, total);
		return;
	}
	fmt_duration(left, sizeof left, elapsed / (double)done * (double)(total - done));
	snprintf(buf, len, "%s: %s %zu/%zu, %s elapsed, about %s left", what, unit, done + 1, total, el, left);
}

static void draw(size_t done, size_t total, void *payload)
{
	cli_progress *p = payload;
	if (done == 0)
		p->t0 = now();
	char line[160];
	cli_progress_line(line, sizeof line, p->what, p->unit, done, total, now() - p->t0);
	fprintf(stderr, "\r\033[K%s", line);
	fflush(stderr);
	p->drawn = 1;
}

void cli_progress_attach(cli_progress *p, abacus_train_opts *o, const char *what, const char *unit)
{
	p->what = what;
	p->unit = unit;
	p->t0 = now();
	p->drawn = 0;
	if (!isatty(2))
		return;
	o->progress = draw;
	o->payload = p;
}

void cli_progress_clear(cli_progress *p)
{
	if (p->drawn)
		fprintf(stderr, "\r\033[K");
	p->drawn = 0;
}
