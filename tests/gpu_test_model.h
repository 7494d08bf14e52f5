// The model the gpu tests run both backends on: the default model when it is installed,
// otherwise random weights of its shape (samples/smollm2-135m.config.json, the same
// weights for the CPU and the CUDA backend), so that no GPU test needs the 98 MB download.
// For pagedgen itself a directory stands in for the model: that config, a byte-level
// tokenizer with one token per vocabulary id, and SmolLM2's chat template.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "loader/model_files.h"
#include "model/model_config.h"
#include "model/model_weights.h"
#include "model/raw_tensor.h"

namespace pagedgen::test {

struct GpuTestModel {
  bool dummy = false;  // random weights: outputs are compared between backends, never read
  std::string name;    // for messages: the model file or the dummy config
  ModelConfig config;
  ModelWeights weights;               // float32, host: the CPU backend's
  std::unique_ptr<ModelFiles> files;  // the default model's, when installed
  // What the CUDA backend streams: the file's tensors, or F32 views of the dummy weights.
  std::vector<RawTensor> tensors;
};

// Loaded once per test binary.
const GpuTestModel& gpu_test_model();

// F32 views of make_dummy_weights(config, seed)'s tensors under their canonical names: what
// the CUDA backend streams to stand for a model file holding those weights.
std::vector<RawTensor> dummy_raw_tensors(const ModelConfig& config, const ModelWeights& weights);

// pagedgen arguments that run the same model (with dummy weights on the device when the
// default model is absent): "-m 'FILE'" or "--load-format dummy -m 'DIR' --tokenizer 'DIR'".
std::string gpu_test_model_args();

// The same for commands that read no weights (plan): "-m 'FILE'" or "-m 'DIR'".
std::string gpu_test_model_files_args();

}  // namespace pagedgen::test
