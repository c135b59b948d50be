/* tests/skips.h: Criterion's synthesis counts no skipped test, so a test that skips (a step not
 * built, say) would vanish from `make test`'s count. The CPU and CLI binaries end with one line per
 * skipped test and why; tools/run_tests.sh adds the first line's count to the skipped total. */
#ifndef TESTS_SKIPS_H
#define TESTS_SKIPS_H
#include <criterion/criterion.h>
#include <criterion/hooks.h>
#include <stdio.h>

static inline void report_skips(const struct criterion_global_stats *stats, const char *what)
{
    if (!stats->tests_skipped)
        return;
    fprintf(stderr, "[SKIP] %zu of %zu %s tests skipped:\n", stats->tests_skipped,
            stats->nb_tests, what);
    for (struct criterion_suite_stats *ss = stats->suites; ss; ss = ss->next)
        for (struct criterion_test_stats *ts = ss->tests; ts; ts = ts->next)
            if (ts->test_status == CR_STATUS_SKIPPED)
                fprintf(stderr, "[SKIP]   %s::%s: %s\n", ss->suite->name, ts->test->name,
                        ts->message && *ts->message ? ts->message : "no reason given");
}
#endif
