/* harness/net/progress.c: a download's progress on stderr: a bar redrawn at most 5 times a second
 * on a terminal, plain start and end lines otherwise; quiet mode (log_quiet) prints nothing. */
#include "progress.h"

#include <stdio.h>
#include <string.h>

#include "util/util.h"

static void human(int64_t bytes, char *out, size_t len)
{
    const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024 && u < 4)
        v /= 1024, u++;
    snprintf(out, len, u ? "%.1f %s" : "%.0f %s", v, unit[u]);
}

void progress_begin(progress *p, const char *what, int64_t size, int64_t have, int bar)
{
    snprintf(p->what, sizeof p->what, "%s", term_safe(what));
    p->size = size;
    p->start = have;
    p->bar = bar;
    p->started_ms = p->drawn_ms = now_ms();
    if (log_quiet || bar)
        return;
    char total[32], from[32];
    human(size, total, sizeof total);
    human(have, from, sizeof from);
    if (have > 0)
        fprintf(stderr, "fetch: %s: %s, resuming at %s\n", p->what, total, from);
    else
        fprintf(stderr, "fetch: %s: %s\n", p->what, total);
}

static void draw(const progress *p, int64_t have)
{
    char done[32], total[32];
    human(have, done, sizeof done);
    human(p->size, total, sizeof total);
    int width = 30, filled = p->size > 0 ? (int)(width * (double)have / (double)p->size) : width;
    char cells[32];
    for (int i = 0; i < width; i++)
        cells[i] = i < filled ? '#' : '.';
    cells[width] = 0;
    double secs = (now_ms() - p->started_ms) / 1000.0;
    double rate = secs > 0 ? (double)(have - p->start) / secs : 0;
    char speed[32];
    human((int64_t)rate, speed, sizeof speed);
    fprintf(stderr, "\r%-40.40s [%s] %s / %s  %s/s ", p->what, cells, done, total, speed);
}

void progress_update(progress *p, int64_t have)
{
    if (log_quiet || !p->bar)
        return;
    double t = now_ms();
    if (t - p->drawn_ms < 200)
        return;
    p->drawn_ms = t;
    draw(p, have);
}

void progress_end(progress *p, int64_t have)
{
    if (log_quiet)
        return;
    if (p->bar) {
        draw(p, have);
        fputc('\n', stderr);
        return;
    }
    char got[32];
    human(have - p->start, got, sizeof got);
    fprintf(stderr, "fetch: %s: %s in %.1f s%s\n", p->what, got,
            (now_ms() - p->started_ms) / 1000.0, have < p->size ? " (incomplete)" : "");
}
