/* harness/formats/formats.h: the public face of formats/: the file formats a run reads (safetensors
 * files and sets, tokenizers, the text, Alpaca and Megatron datasets). Outside formats/, include only this. */
#ifndef FORMATS_FORMATS_H
#define FORMATS_FORMATS_H

#include "safetensors.h"
#include "tokenizer.h"
#include "data.h"
#include "data_mlm.h"
#include "data_alpaca.h"
#include "data_mmidx.h"
#include "data_gpt.h"

#endif
