// The layering of core/: every #include of a core file names a folder at or below its own
// in PAGEDGEN_CORE_LAYERS (core/CMakeLists.txt, lowest first); gpu/ sits above backend and
// below engine; core never includes gpu/ or app/ headers. An upward include fails here.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "test_paths.h"

namespace fs = std::filesystem;

namespace {

std::vector<std::string> core_layers() {
  std::vector<std::string> layers;
  std::stringstream list(PAGEDGEN_CORE_LAYERS);  // "util,step,..." from CMake
  for (std::string layer; std::getline(list, layer, ',');) layers.push_back(layer);
  return layers;
}

std::optional<std::size_t> rank_of(const std::vector<std::string>& layers, const std::string& folder) {
  const auto it = std::ranges::find(layers, folder);
  if (it == layers.end()) return std::nullopt;
  return static_cast<std::size_t>(it - layers.begin());
}

// The quoted includes of a source file: #include "folder/name.h" or "name.h".
std::vector<std::string> quoted_includes(const fs::path& file) {
  static const std::regex include(R"(^\s*#\s*include\s*"([^"]+)\")");
  std::ifstream in(file);
  std::vector<std::string> names;
  std::smatch match;
  for (std::string line; std::getline(in, line);)
    if (std::regex_search(line, match, include)) names.push_back(match[1]);
  return names;
}

std::string folder_of(const std::string& include) {
  const auto slash = include.find('/');
  return slash == std::string::npos ? "" : include.substr(0, slash);
}

// Every include of the files under `dir` that names a core folder above `max_rank`, or a
// header with no folder when `allow_bare` is false, as "file: include" lines.
std::vector<std::string> violations(const fs::path& dir, const std::vector<std::string>& layers, std::size_t max_rank,
                                    bool allow_bare) {
  std::vector<std::string> found;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    const std::string ext = entry.path().extension().string();
    if (ext != ".h" && ext != ".cpp" && ext != ".cu" && ext != ".cuh") continue;
    for (const std::string& include : quoted_includes(entry.path())) {
      const std::string folder = folder_of(include);
      const std::optional<std::size_t> rank = rank_of(layers, folder);
      const bool bad = folder.empty() ? !allow_bare : (!rank || *rank > max_rank);
      if (bad) found.push_back(entry.path().lexically_relative(pagedgen::test::source_dir()).string() + ": " + include);
    }
  }
  return found;
}

}  // namespace

TEST_CASE("every core folder is a listed layer") {
  const std::vector<std::string> layers = core_layers();
  REQUIRE(layers.size() >= 10);
  for (const auto& entry : fs::directory_iterator(pagedgen::test::source_dir() / "core")) {
    if (!entry.is_directory()) continue;
    CAPTURE(entry.path().filename().string());
    CHECK(rank_of(layers, entry.path().filename().string()).has_value());
  }
}

TEST_CASE("core folders include only their own layer and the layers below") {
  const std::vector<std::string> layers = core_layers();
  for (std::size_t rank = 0; rank < layers.size(); ++rank) {
    const fs::path dir = pagedgen::test::source_dir() / "core" / layers[rank];
    REQUIRE(fs::is_directory(dir));
    for (const std::string& v : violations(dir, layers, rank, false)) FAIL_CHECK("upward include: " << v);
  }
}

TEST_CASE("gpu/ includes core up to the backend layer, never the engine above it") {
  const std::vector<std::string> layers = core_layers();
  const std::optional<std::size_t> backend = rank_of(layers, "backend");
  REQUIRE(backend.has_value());
  // gpu/ headers are included without a folder, from gpu/ itself.
  for (const std::string& v : violations(pagedgen::test::source_dir() / "gpu", layers, *backend, true))
    FAIL_CHECK("gpu/ reaches above the backend layer: " << v);
}
