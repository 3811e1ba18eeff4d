/* harness/ingest/ingest.h: the public face of ingest/: running an external training command (exec) or
 * reading its logs (ingest), the log parsers, the recorder. Outside ingest/, include only this. */
#ifndef INGEST_INGEST_H
#define INGEST_INGEST_H

#include "logparse.h"
#include "exec_child.h"
#include "exec_record.h"
#include "exec_run.h"

#endif
