/*
 * session-hlo.c - a session's hlo_stats.json and roofline.json
 * (xprofs_decode_session_view()): the hosts' op databases (opdb.c,
 * STATS_DB_HLO) combined as XProf's CombineAllOpStats() folds each host's
 * device_op_metrics_db (OpMetricsDbCombiner, CombinePerfEnv()), written by
 * the host views' writers after the session's name and its hosts' errors.
 *
 * Design: one host is analysed at a time and folded in only when its
 * whole analysis succeeded; a host that does not open or fails adds
 * nothing and says why. Memory: O(distinct ops) plus one host's tables.
 */
#include <errno.h>
#include <stdlib.h>

#include "stats-internal.h"

int xprofs_decode_session_view(enum xprofs_view v, const struct xprofs_session_in *in,
			       const struct xprofs_sink *sink)
{
	struct stats_opstats d;
	char **errors = NULL;
	struct xs_out o;
	int r;

	if (v == XPROFS_VIEW_OP_PROFILE || v == XPROFS_VIEW_TF_STATS)
		return stats_session_opstats(v, in, sink); /* view-session-op.c */
	if ((v != XPROFS_VIEW_HLO_STATS && v != XPROFS_VIEW_ROOFLINE) || !sink || !sink->write ||
	    !in || (in->n && (!in->hosts || !in->xs)))
		return -EINVAL;
	stats_opstats_init(&d, STATS_DB_HLO);
	xs_out_init(&o, sink);
	if ((r = stats_db_session(in, &d, &errors)) < 0 ||
	    (r = stats_db_session_head(&o, in, errors, true)) < 0)
		goto out;
	r = v == XPROFS_VIEW_HLO_STATS ? stats_hlo_stats_write(&o, &d)
				       : stats_roofline_write(&o, &d);
	if (r == 0)
		r = xs_out_flush(&o, true);
out:
	stats_db_errors_free(in, errors);
	stats_opstats_free(&d);
	xs_out_deinit(&o);
	return r;
}
