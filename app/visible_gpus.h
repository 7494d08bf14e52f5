// Which GPU `--device cuda:N` may name. The CUDA runtime numbers only the GPUs this process
// can see, from 0: CUDA_VISIBLE_DEVICES (set by Slurm's --gpus, container runtimes, or by
// hand) hides the others and renumbers the rest, so under Slurm with --gpus=1 each task's one
// GPU is cuda:0, whatever its number on the node. Host code only: the count comes from the
// CUDA backend (gpu/device_info.h) where there is one, so this is testable without a GPU.
#pragma once

#include <optional>
#include <string>

namespace pagedgen::app {

struct VisibleGpus {
  int num_visible = 0;                              // the GPUs the CUDA runtime counts
  std::optional<std::string> cuda_visible_devices;  // the variable's value, when it is set
};

// CUDA_VISIBLE_DEVICES from the environment; nullopt when unset.
std::optional<std::string> cuda_visible_devices_from_env();

// Why `device` (cuda or cuda:N) cannot run on GPU `index`: its message reads on from the
// flag ("--device " + message), saying how many GPUs are visible, what hides the others and
// what to use instead. nullopt when the index is visible or when no GPU is (the caller says
// why none is usable; cuda_visible_devices_note adds the variable's part).
std::optional<std::string> gpu_index_error(const std::string& device, int index, const VisibleGpus& gpus);

// "" when CUDA_VISIBLE_DEVICES is unset, else a clause saying that it hides the GPUs it does
// not list ("; CUDA_VISIBLE_DEVICES='' hides every GPU").
std::string cuda_visible_devices_note(const VisibleGpus& gpus);

}  // namespace pagedgen::app
