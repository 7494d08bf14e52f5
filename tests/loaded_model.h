// The default model's files and weights (float32, or kept quantized for the fast path),
// loaded once per test binary and form (dequantizing takes seconds), for the tests that
// run a backend on the real model.
#pragma once

#include "loader/model_files.h"
#include "model/model_weights.h"

namespace pagedgen::test {

struct LoadedModel {
  ModelFiles files;
  ModelWeights weights;
};

// nullptr when the default model is not installed (the caller skips with a message).
const LoadedModel* loaded_default_model(WeightForm form = WeightForm::kFloat32);

}  // namespace pagedgen::test
