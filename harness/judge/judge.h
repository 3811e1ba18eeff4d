/* harness/judge/judge.h: the public face of judge/: comparing runs with baselines (files, store
 * labels), the verdicts and the throughput history. Outside judge/, include only this. */
#ifndef JUDGE_JUDGE_H
#define JUDGE_JUDGE_H

#include "compare.h"
#include "baseline.h"
#include "history.h"
#include "compare_db.h"
#include "baseline_url.h"

#endif
