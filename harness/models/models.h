/* harness/models/models.h: the public face of models/: model families, their configs, Hugging Face
 * model directories and checkpoints, the seeded generator. Outside models/, include only this. */
#ifndef MODELS_MODELS_H
#define MODELS_MODELS_H

#include "model_config.h"
#include "model.h"
#include "model_dir.h"
#include "checkpoint.h"
#include "rng.h"

#endif
