/*
 * straggler.c - the one straggler ratio of a session's hosts: a host's
 * average step time divided by the median of the average step times of the
 * session's hosts with steps. The session's summary.json (its "straggler"
 * and each host's straggler_ratio, view-summary.c) and compare/steps.json
 * (each host's straggler_ratio_base / _new, view-session.c) both take it
 * from here, so the same host has the same ratio in both.
 *
 * Design: the median of the hosts with steps (the mean of the middle two
 * for an even count); no ratio with fewer than two such hosts (nobody to
 * lag behind), for a host without steps, or for a median <= 0. XProf has
 * no straggler number (its overview is per host). Limits: O(hosts) memory.
 */
#include <errno.h>
#include <stdlib.h>

#include "stats-internal.h"

static int dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int stats_straggler_get(const struct stats_step_summary *const *h, size_t n,
			struct stats_straggler *s)
{
	double *v = malloc((n + 1) * sizeof(*v));
	size_t k = 0;

	s->hosts = 0;
	s->median = 0;
	s->worst = SIZE_MAX;
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (!h[i] || !h[i]->has)
			continue;
		v[k++] = h[i]->avg;
		if (s->worst == SIZE_MAX || h[i]->avg > h[s->worst]->avg)
			s->worst = i;
	}
	if (k) {
		qsort(v, k, sizeof(*v), dbl_cmp);
		s->median = k % 2 ? v[k / 2] : (v[k / 2 - 1] + v[k / 2]) / 2;
	}
	s->hosts = k;
	free(v);
	return 0;
}

bool stats_straggler_ratio(const struct stats_straggler *s, const struct stats_step_summary *h,
			   double *ratio)
{
	if (s->hosts < 2 || !h || !h->has || !(s->median > 0))
		return false;
	*ratio = h->avg / s->median;
	return true;
}
