// The settings of `pagedgen generate`, as the command line gives them (cmd_generate.cpp
// declares the flags; generate_run.cpp runs them).
#pragma once

#include <cstdint>
#include <string>

#include "backend_option.h"
#include "engine_options.h"

namespace pagedgen::app {

struct GenerateOptions {
  std::string model;
  std::string input;
  std::string output;
  std::string stats_path;
  std::string report_path;
  std::string format = "auto";  // auto, plain or openai
  int32_t block_size = 16;
  EngineOptions engine;    // the pool, batch limits, seed, chat template and default sampling
  BackendOptions backend;  // device, dtype, GPU memory, load format, CPU threads
  bool quiet = false;
  double progress_seconds = 10.0;
  uint64_t plan_window = 10000;  // input lines per planning window
  std::string shard = "0/1";     // K/N
  bool resume = false;
  double fsync_seconds = 1.0;
};

// Runs `generate`; returns the exit code (exit_codes.h). Throws Error for a fatal problem.
int run_generate(const GenerateOptions& options);

}  // namespace pagedgen::app
