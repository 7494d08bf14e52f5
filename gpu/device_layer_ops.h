// The layer ops (model/layer_op.h) of one step on the device: each op's kernels or GEMM on
// the activation workspace, the KV pools and the step's arrays, for the step's rows (a
// decode step's padded bucket). with_device_layer_ops is where host code meets the dtype:
// it picks the storage type once (dtype_dispatch.h) and the ops launch the kernels
// instantiated for it; everything around it is plain C++.
#pragma once

#include <cuda_runtime.h>

#include <functional>

#include "activation_workspace.h"
#include "cuda_gemm.h"
#include "device_dtype.h"
#include "device_kv_pools.h"
#include "device_weights.h"
#include "model/layer_op.h"
#include "model/model_config.h"
#include "step/step_batch.h"
#include "step_arrays.h"
#include "step_attention_plans.h"

namespace pagedgen::gpu {

// What the ops of one step read and write; all of it outlives the ops.
struct DeviceStep {
  const ModelConfig& config;
  DeviceDtype dtype;
  const DeviceWeights& weights;
  CudaGemm& gemm;
  const ActivationBuffers& buffers;
  const DeviceKvPools& kv_pools;
  const StepBatch& batch;
  const StepAttentionPlans& plans;
  const RowArrays& rows;
  const AttentionArrays& attention;
  cudaStream_t stream;
};

// Runs `body` with the layer ops of `step` in its dtype; each op queues its launches on
// step.stream.
void with_device_layer_ops(const DeviceStep& step, const std::function<void(LayerOps&)>& body);

}  // namespace pagedgen::gpu
