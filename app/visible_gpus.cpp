#include "visible_gpus.h"

#include <fmt/core.h>

#include <cstdlib>

namespace pagedgen::app {

namespace {

// "cuda:0" or "cuda:0 to cuda:3".
std::string visible_range(int num_visible) {
  return num_visible == 1 ? "cuda:0" : fmt::format("cuda:0 to cuda:{}", num_visible - 1);
}

}  // namespace

std::optional<std::string> cuda_visible_devices_from_env() {
  const char* value = std::getenv("CUDA_VISIBLE_DEVICES");
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

std::optional<std::string> gpu_index_error(const std::string& device, int index, const VisibleGpus& gpus) {
  if (gpus.num_visible <= 0 || index < gpus.num_visible) return std::nullopt;
  std::string message = fmt::format("{}, but this process sees only {} GPU{} ({})", device, gpus.num_visible,
                                    gpus.num_visible == 1 ? "" : "s", visible_range(gpus.num_visible));
  if (gpus.cuda_visible_devices)
    message += fmt::format(
        ": CUDA_VISIBLE_DEVICES='{}' hides the others and numbers the visible ones from 0 (Slurm's --gpus sets it "
        "per task: with --gpus=1 the task's GPU is cuda:0, so use --device cuda)",
        *gpus.cuda_visible_devices);
  else
    message += "; GPUs are numbered from 0";
  return message;
}

std::string cuda_visible_devices_note(const VisibleGpus& gpus) {
  if (!gpus.cuda_visible_devices) return "";
  if (gpus.cuda_visible_devices->empty()) return "; CUDA_VISIBLE_DEVICES='' hides every GPU";
  return fmt::format("; CUDA_VISIBLE_DEVICES='{}' shows only the GPUs it lists", *gpus.cuda_visible_devices);
}

}  // namespace pagedgen::app
