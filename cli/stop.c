/*
 * stop.c - Ctrl-C (SIGINT), SIGTERM and live's --duration (SIGALRM) ask the
 * running source to stop; the pipeline then finishes as at the end of its
 * input: the analysis is flushed, the database closed (indexes built) and the
 * report printed. A second signal, once the handlers are restored, ends the
 * process at once (the database stays consistent: every commit is atomic).
 *
 * With --threads the reader thread alone takes these signals (the others
 * block them, run/run.c), so the source's stop flag is written and read
 * by one thread.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/time.h>

#include "cli/cli.h"

/* The source the handler stops; set before the handlers are installed. */
static cap_source *stop_source;
/* The signal that asked for the stop (SIGALRM: --duration), 0 while none. */
static volatile sig_atomic_t stop_signal;

/* Ask the capture loop to return. Nothing else is async-signal-safe enough
 * to do here. */
static void on_stop_signal(int sig)
{
    int saved_errno = errno; /* pcap_breakloop must not disturb the interrupted code */
    stop_signal = sig;
    if (stop_source)
        cap_source_break(stop_source);
    errno = saved_errno;
}

void cli_stop_on_signals(cap_source *src, double duration_s)
{
    struct sigaction sa;
    stop_source = src;
    stop_signal = 0;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    /* no SA_RESTART: a live capture's wait must return */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    if (duration_s > 0) {
        struct itimerval it;
        sigaction(SIGALRM, &sa, NULL);
        memset(&it, 0, sizeof it);
        it.it_value.tv_sec = (time_t)duration_s;
        it.it_value.tv_usec = (suseconds_t)((duration_s - (double)(time_t)duration_s) * 1e6);
        if (it.it_value.tv_sec == 0 && it.it_value.tv_usec == 0)
            it.it_value.tv_usec = 1;
        setitimer(ITIMER_REAL, &it, NULL);
    }
}

void cli_stop_restore(void)
{
    struct itimerval off;
    memset(&off, 0, sizeof off);
    setitimer(ITIMER_REAL, &off, NULL);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGALRM, SIG_IGN);
    stop_source = NULL;
}

const char *cli_stop_signal_name(void)
{
    switch (stop_signal) {
    case 0: return NULL;
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGALRM: return "SIGALRM";
    default: return "a signal";
    }
}
