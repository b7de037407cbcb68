/*
 * progress.c — reports of long work (training, evaluation) to the caller's callback. The library never
 * prints: a caller that wants a progress line on its terminal draws it from these calls, one that does not
 * passes no callback and pays nothing.
 */
#include "util.h"

void ab_progress_start(ab_progress *pg, const abacus_train_opts *o, size_t total)
{
	pg->fn = o->progress;
	pg->payload = o->payload;
	pg->done = 0;
	pg->total = total;
	if (pg->fn)
		pg->fn(0, total, pg->payload);
}

void ab_progress_step(ab_progress *pg)
{
	/* done never passes the announced total, so a caller's ETA never goes negative. */
	if (!pg || !pg->fn || pg->done >= pg->total)
		return;
	pg->done++;
	pg->fn(pg->done, pg->total, pg->payload);
}
