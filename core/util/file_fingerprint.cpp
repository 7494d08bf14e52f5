#include "util/file_fingerprint.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <vector>

#include "util/error.h"
#include "util/fnv_hash.h"

namespace pagedgen {

std::string fingerprint_file(const std::filesystem::path& path, uint64_t max_hashed_bytes) {
  std::ifstream file(path, std::ios::binary);
  if (!file) fail("cannot open '{}' to fingerprint it", path.string());
  std::vector<char> buffer(std::size_t{1} << 20);
  uint64_t hash = kFnvOffsetBasis;
  uint64_t num_hashed = 0;
  while (num_hashed < max_hashed_bytes && file) {
    const auto want = static_cast<std::streamsize>(std::min<uint64_t>(buffer.size(), max_hashed_bytes - num_hashed));
    file.read(buffer.data(), want);
    const auto got = static_cast<std::size_t>(file.gcount());
    hash = fnv1a_bytes(hash, std::string_view(buffer.data(), got));
    num_hashed += got;
  }
  if (file.bad()) fail("reading '{}' failed while fingerprinting it", path.string());
  return fmt::format("bytes={} fnv1a64={:016x}", std::filesystem::file_size(path), splitmix64_finalize(hash));
}

std::string fingerprint_model(const std::filesystem::path& path) {
  if (!std::filesystem::is_directory(path)) return fingerprint_file(path, kModelHeadBytes);
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(path))
    if (entry.is_regular_file()) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  std::string out;
  for (const auto& file : files)
    out += fmt::format("{}{}: {}", out.empty() ? "" : "; ", file.filename().string(),
                       fingerprint_file(file, kModelHeadBytes));
  return out;
}

}  // namespace pagedgen
