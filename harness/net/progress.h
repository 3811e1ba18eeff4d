/* harness/net/progress.h: private to net/: a download's progress on stderr: a bar redrawn on a
 * terminal, or one plain line when a file starts and one when it ends (CI logs). */
#ifndef NET_PROGRESS_H
#define NET_PROGRESS_H

#include <stdint.h>

typedef struct {
    char what[256];
    int64_t size, start;
    int bar;                 /* 1: redraw a bar; 0: plain lines */
    double started_ms, drawn_ms;
} progress;

void progress_begin(progress *p, const char *what, int64_t size, int64_t have, int bar);
void progress_update(progress *p, int64_t have);
void progress_end(progress *p, int64_t have);

#endif
