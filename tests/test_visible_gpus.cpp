// `--device cuda:N` beyond the GPUs this process sees (app/visible_gpus.h): the message names
// the visible count and range, and, when CUDA_VISIBLE_DEVICES is set, that it hides the rest
// and that a Slurm task with --gpus=1 uses --device cuda. No GPU needed: the count is given.
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

#include "visible_gpus.h"

namespace pagedgen::app {

TEST_CASE("an index the process sees, or no GPU at all, is not this check's error") {
  CHECK_FALSE(gpu_index_error("cuda", 0, VisibleGpus{1, std::nullopt}));
  CHECK_FALSE(gpu_index_error("cuda:3", 3, VisibleGpus{4, std::nullopt}));
  CHECK_FALSE(gpu_index_error("cuda:1", 1, VisibleGpus{2, "4,6"}));
  // None visible: the caller says why no GPU is usable.
  CHECK_FALSE(gpu_index_error("cuda:1", 1, VisibleGpus{0, std::nullopt}));
}

TEST_CASE("cuda:N beyond the visible GPUs, without CUDA_VISIBLE_DEVICES: the count and the range") {
  CHECK(gpu_index_error("cuda:2", 2, VisibleGpus{2, std::nullopt}) ==
        "cuda:2, but this process sees only 2 GPUs (cuda:0 to cuda:1); GPUs are numbered from 0");
  CHECK(gpu_index_error("cuda:1", 1, VisibleGpus{1, std::nullopt}) ==
        "cuda:1, but this process sees only 1 GPU (cuda:0); GPUs are numbered from 0");
}

TEST_CASE("cuda:N beyond the GPUs CUDA_VISIBLE_DEVICES shows (a Slurm task's): says so and names --device cuda") {
  const std::optional<std::string> error = gpu_index_error("cuda:3", 3, VisibleGpus{1, "3"});
  REQUIRE(error);
  CHECK(*error ==
        "cuda:3, but this process sees only 1 GPU (cuda:0): CUDA_VISIBLE_DEVICES='3' hides the others and numbers "
        "the visible ones from 0 (Slurm's --gpus sets it per task: with --gpus=1 the task's GPU is cuda:0, so use "
        "--device cuda)");
}

TEST_CASE("with no GPU visible, the note says what CUDA_VISIBLE_DEVICES hides") {
  CHECK(cuda_visible_devices_note(VisibleGpus{0, std::nullopt}).empty());
  CHECK(cuda_visible_devices_note(VisibleGpus{0, ""}) == "; CUDA_VISIBLE_DEVICES='' hides every GPU");
  CHECK(cuda_visible_devices_note(VisibleGpus{0, "7"}) == "; CUDA_VISIBLE_DEVICES='7' shows only the GPUs it lists");
}

TEST_CASE("CUDA_VISIBLE_DEVICES is read from the environment: unset, empty, a list") {
  const char* saved = std::getenv("CUDA_VISIBLE_DEVICES");
  const std::optional<std::string> restore = saved ? std::optional<std::string>(saved) : std::nullopt;
  unsetenv("CUDA_VISIBLE_DEVICES");
  CHECK_FALSE(cuda_visible_devices_from_env());
  setenv("CUDA_VISIBLE_DEVICES", "", 1);
  CHECK(cuda_visible_devices_from_env() == "");
  setenv("CUDA_VISIBLE_DEVICES", "0,2", 1);
  CHECK(cuda_visible_devices_from_env() == "0,2");
  if (restore)
    setenv("CUDA_VISIBLE_DEVICES", restore->c_str(), 1);
  else
    unsetenv("CUDA_VISIBLE_DEVICES");
}

}  // namespace pagedgen::app
