/* harness/ops/ops.h: the public face of ops/: the op conformance checks behind `harness ops`
 * (test, grad, perf modes) and their rows in the store. Outside ops/, include only this. */
#ifndef OPS_OPS_H
#define OPS_OPS_H

#include "opcheck.h"
#include "opcheck_db.h"

#endif
