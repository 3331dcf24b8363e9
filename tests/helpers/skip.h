/*
 * skip.h - a test that cannot run says why; in CI (CI=true, where every
 * prerequisite is installed) it fails instead, so that a test that did not run
 * never counts as passed there. Include after <cmocka.h>.
 */
#ifndef SLOTSCOPE_TESTS_HELPERS_SKIP_H
#define SLOTSCOPE_TESTS_HELPERS_SKIP_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SS_SKIP(why)                                                              \
    do {                                                                          \
        const char *ss_ci_ = getenv("CI");                                        \
        if (ss_ci_ && strcmp(ss_ci_, "true") == 0)                                \
            fail_msg("cannot run in CI: %s", (why));                              \
        printf("SKIP: %s\n", (why));                                              \
        skip();                                                                   \
    } while (0)

#endif /* SLOTSCOPE_TESTS_HELPERS_SKIP_H */
