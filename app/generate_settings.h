// Which of `generate`'s flags decide the output's bytes: the table the resume manifest is
// built from (--resume requires those settings unchanged), and the list of flags that
// change no byte, each with why. Every flag of `generate` is in exactly one of the two
// (tests/test_generate_settings.cpp walks the command's flags and fails on one in neither).
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "generate_options.h"

namespace pagedgen::app {

// One manifest setting: its key, the flags that set it (each flag's long name, or its short
// one when it has none) and its value as the manifest records it; nullopt leaves it out,
// which the settings added after the first manifests use at their default, so that
// manifests written before them still match a run that does not set them.
struct ManifestSetting {
  std::string_view key;
  std::vector<std::string_view> flags;
  std::function<std::optional<std::string>(const GenerateOptions&, const std::filesystem::path& model_path)> value;
};

// In the order of the manifests written so far (the stats' job key hashes it).
const std::vector<ManifestSetting>& manifest_table();

// A flag that changes no output byte, and why it is not in the manifest.
struct UnrecordedFlag {
  std::string_view flag;
  std::string_view why;
};

std::span<const UnrecordedFlag> unrecorded_flags();

// The manifest's settings for a run (after the input's fingerprint, which the job adds
// first): manifest_table()'s rows that have a value, in its order.
std::vector<std::pair<std::string, std::string>> manifest_settings(const GenerateOptions& options,
                                                                   const std::filesystem::path& model_path);

}  // namespace pagedgen::app
