#include "util/file_fingerprint.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "util/error.h"
#include "util/fnv_hash.h"
#include "util/posix_file.h"

namespace pagedgen {

namespace {

// A file opened for reading, closed on scope exit; every failure names the file and why.
class ReadFile {
 public:
  explicit ReadFile(const std::filesystem::path& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) fail("cannot open '{}' to fingerprint it: {}", path.string(), errno_text(errno));
    const std::optional<FileStatus> status = fd_status(fd_);
    if (!status || !status->is_regular) {
      ::close(fd_);
      fail("cannot fingerprint '{}': it is not a regular file", path.string());
    }
    num_bytes_ = status->num_bytes;
  }
  ~ReadFile() { ::close(fd_); }
  ReadFile(const ReadFile&) = delete;
  ReadFile& operator=(const ReadFile&) = delete;

  uint64_t num_bytes() const { return num_bytes_; }

  // Reads up to buffer.size() bytes at `offset`; returns how many (0 at the end).
  std::size_t read_at(uint64_t offset, std::vector<char>& buffer) const {
    for (;;) {
      const ssize_t n = ::pread(fd_, buffer.data(), buffer.size(), static_cast<off_t>(offset));
      if (n >= 0) return static_cast<std::size_t>(n);
      if (errno != EINTR) fail("reading '{}' failed while fingerprinting it: {}", path_.string(), errno_text(errno));
    }
  }

 private:
  std::filesystem::path path_;
  int fd_ = -1;
  uint64_t num_bytes_ = 0;
};

constexpr std::size_t kChunkBytes = std::size_t{1} << 20;

// FNV-1a over bytes [begin, end) of `file`, fed into `hash`.
uint64_t hash_range(const ReadFile& file, uint64_t begin, uint64_t end, uint64_t hash, std::vector<char>& buffer) {
  while (begin < end) {
    buffer.resize(static_cast<std::size_t>(std::min<uint64_t>(kChunkBytes, end - begin)));
    const std::size_t got = file.read_at(begin, buffer);
    if (got == 0) break;  // the file shrank while read: the size in the fingerprint still differs
    hash = fnv1a_bytes(hash, std::string_view(buffer.data(), got));
    begin += got;
  }
  return hash;
}

std::string format_fingerprint(uint64_t num_bytes, uint64_t hash) {
  return fmt::format("bytes={} fnv1a64={:016x}", num_bytes, hash);
}

// The head, then kNumModelSamples samples evenly spaced over the rest (see the header).
std::string fingerprint_sampled(const ReadFile& file) {
  std::vector<char> buffer;
  const uint64_t size = file.num_bytes();
  uint64_t hash = hash_range(file, 0, kModelHeadBytes, kFnvOffsetBasis, buffer);
  const uint64_t span = size - kModelHeadBytes - kModelSampleBytes;
  for (uint64_t i = 0; i < kNumModelSamples; ++i) {
    const uint64_t begin = kModelHeadBytes + span * i / (kNumModelSamples - 1);
    hash = hash_range(file, begin, begin + kModelSampleBytes, hash, buffer);
  }
  return fmt::format("{} sampled={}MiB+{}x{}KiB", format_fingerprint(size, splitmix64_finalize(hash)),
                     kModelHeadBytes >> 20, kNumModelSamples, kModelSampleBytes >> 10);
}

std::string fingerprint_weights_file(const std::filesystem::path& path) {
  const ReadFile file(path);
  if (file.num_bytes() > kWholeHashMaxBytes) return fingerprint_sampled(file);
  std::vector<char> buffer;
  return format_fingerprint(file.num_bytes(),
                            splitmix64_finalize(hash_range(file, 0, file.num_bytes(), kFnvOffsetBasis, buffer)));
}

}  // namespace

std::string FileScan::fingerprint() const { return format_fingerprint(num_bytes, hash); }

FileScan scan_file(const std::filesystem::path& path) {
  const ReadFile file(path);
  std::vector<char> buffer(kChunkBytes);
  FileScan scan;
  uint64_t hash = kFnvOffsetBasis;
  char last = '\n';
  for (std::size_t got; (got = file.read_at(scan.num_bytes, buffer)) > 0; scan.num_bytes += got) {
    const std::string_view bytes(buffer.data(), got);
    hash = fnv1a_bytes(hash, bytes);
    scan.num_lines += static_cast<uint64_t>(std::count(bytes.begin(), bytes.end(), '\n'));
    last = bytes.back();
  }
  if (last != '\n') ++scan.num_lines;
  scan.hash = splitmix64_finalize(hash);
  return scan;
}

std::string fingerprint_file(const std::filesystem::path& path, uint64_t max_hashed_bytes) {
  const ReadFile file(path);
  std::vector<char> buffer;
  const uint64_t end = std::min(max_hashed_bytes, file.num_bytes());
  return format_fingerprint(file.num_bytes(), splitmix64_finalize(hash_range(file, 0, end, kFnvOffsetBasis, buffer)));
}

std::string fingerprint_model(const std::filesystem::path& path) {
  const std::optional<FileStatus> status = file_status(path);
  if (!status) fail("cannot open '{}' to fingerprint it: {}", path.string(), errno_text(errno));
  if (!status->is_directory) return fingerprint_weights_file(path);
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(path))
    if (entry.is_regular_file()) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  std::string out;
  for (const auto& file : files)
    out += fmt::format("{}{}: {}", out.empty() ? "" : "; ", file.filename().string(), fingerprint_weights_file(file));
  return out;
}

}  // namespace pagedgen
