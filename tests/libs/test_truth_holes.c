/*
 * test_truth_holes.c - truth.py, the independent reader of the library
 * fixtures, after client-side capture holes (ctest truth_holes).
 *
 * tests/libs/test_truth_holes.py builds a synthetic capture (one lost
 * request, a SET whose value's middle is lost, the server's stream whole)
 * and checks that truth.py reads every request after the holes and pairs
 * each with the reply that answers it. This program runs it and requires
 * its verdict line: the script is the test's body, this is how ctest and
 * cmocka see it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include <cmocka.h>

static void test_truth_resumes_after_holes(void **state)
{
    (void)state;
    FILE *p = popen("/usr/bin/python3 " SS_SOURCE_DIR "/tests/libs/test_truth_holes.py 2>&1", "r");
    assert_non_null(p);
    char line[512];
    int ok_line = 0;
    while (fgets(line, sizeof line, p) != NULL) {
        fputs(line, stdout); /* the script's own account, for a failing run */
        if (strncmp(line, "ok: ", 4) == 0)
            ok_line = 1;
    }
    int status = pclose(p);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_true(ok_line);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_truth_resumes_after_holes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
