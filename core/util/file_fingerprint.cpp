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
  std::size_t read_at(uint64_t offset, std::vector<char>& buffer, std::size_t begin = 0) const {
    for (;;) {
      const ssize_t n = ::pread(fd_, buffer.data() + begin, buffer.size() - begin, static_cast<off_t>(offset));
      if (n >= 0) return static_cast<std::size_t>(n);
      if (errno != EINTR) fail("reading '{}' failed while fingerprinting it: {}", path_.string(), errno_text(errno));
    }
  }
  // The same, but short only at the end of the file.
  std::size_t read_full_at(uint64_t offset, std::vector<char>& buffer) const {
    std::size_t got = 0;
    for (std::size_t n; got < buffer.size() && (n = read_at(offset + got, buffer, got)) > 0;) got += n;
    return got;
  }

 private:
  std::filesystem::path path_;
  int fd_ = -1;
  uint64_t num_bytes_ = 0;
};

constexpr std::size_t kChunkBytes = std::size_t{1} << 20;

// FNV-1a over bytes [begin, end) of `file`, fed into `hash`; `stop` is read once per chunk.
uint64_t hash_range(const ReadFile& file, uint64_t begin, uint64_t end, uint64_t hash, std::vector<char>& buffer,
                    const StopToken& stop = {}) {
  while (begin < end) {
    stop.throw_if_stopped();
    buffer.resize(static_cast<std::size_t>(std::min<uint64_t>(kChunkBytes, end - begin)));
    const std::size_t got = file.read_at(begin, buffer);
    if (got == 0) break;  // the file shrank while read: the size in the fingerprint still differs
    hash = fnv1a_bytes(hash, std::string_view(buffer.data(), got));
    begin += got;
  }
  return hash;
}

// The words64 hash (see the header): each 8-byte little-endian word goes into lane
// (word index % 4) as lane = rotl((lane ^ word) * kMultiplier, 31); the bytes after the
// last whole 32-byte group, the size and the lanes are folded with FNV-1a at the end.
class WordHasher {
 public:
  // Pieces must be multiples of 32 bytes, but the last.
  void add(std::string_view bytes) {
    PG_CHECK(tail_.empty(), "words64: a piece after one that left a tail");
    std::size_t i = 0;
    for (; i + 32 <= bytes.size(); i += 32)
      for (int lane = 0; lane < 4; ++lane) lanes_[lane] = mix(lanes_[lane], load_le64(bytes.data() + i + 8 * lane));
    tail_.assign(bytes.data() + i, bytes.size() - i);
  }

  uint64_t finish(uint64_t num_bytes) const {
    uint64_t hash = fnv1a_le(kFnvOffsetBasis, num_bytes, 8);
    for (const uint64_t lane : lanes_) hash = fnv1a_le(hash, lane, 8);
    return splitmix64_finalize(fnv1a_bytes(hash, tail_));
  }

 private:
  static constexpr uint64_t kMultiplier = 0x9e3779b97f4a7c15ull;  // odd: multiplying is a bijection

  static uint64_t load_le64(const char* p) {
    uint64_t word = 0;
    for (int b = 7; b >= 0; --b) word = (word << 8) | static_cast<unsigned char>(p[b]);
    return word;
  }
  static uint64_t mix(uint64_t lane, uint64_t word) {
    const uint64_t x = (lane ^ word) * kMultiplier;
    return (x << 31) | (x >> 33);
  }

  uint64_t lanes_[4] = {kFnvOffsetBasis, kFnvPrime, ~kFnvOffsetBasis, ~kFnvPrime};
  std::string tail_;
};

std::string fingerprint_weights_file(const std::filesystem::path& path, const StopToken& stop) {
  const ReadFile file(path);
  if (file.num_bytes() <= kFnvModelMaxBytes) {
    std::vector<char> buffer;
    return format_fingerprint(
        file.num_bytes(), splitmix64_finalize(hash_range(file, 0, file.num_bytes(), kFnvOffsetBasis, buffer, stop)));
  }
  std::vector<char> buffer(kChunkBytes);  // a multiple of 32: only the last piece leaves a tail
  WordHasher hasher;
  uint64_t offset = 0;
  for (std::size_t got; (got = file.read_full_at(offset, buffer)) > 0; offset += got) {
    stop.throw_if_stopped();
    hasher.add(std::string_view(buffer.data(), got));
  }
  return fmt::format("bytes={} words64={:016x}", offset, hasher.finish(offset));
}

}  // namespace

std::string format_fingerprint(uint64_t num_bytes, uint64_t hash) {
  return fmt::format("bytes={} fnv1a64={:016x}", num_bytes, hash);
}

std::string FileScan::fingerprint() const { return format_fingerprint(num_bytes, hash); }

FileScan scan_file(const std::filesystem::path& path, const StopToken& stop) {
  const ReadFile file(path);
  std::vector<char> buffer(kChunkBytes);
  FileScan scan;
  uint64_t hash = kFnvOffsetBasis;
  char last = '\n';
  for (std::size_t got; (got = file.read_at(scan.num_bytes, buffer)) > 0; scan.num_bytes += got) {
    stop.throw_if_stopped();
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

std::string fingerprint_model(const std::filesystem::path& path, const StopToken& stop) {
  const std::optional<FileStatus> status = file_status(path);
  if (!status) fail("cannot open '{}' to fingerprint it: {}", path.string(), errno_text(errno));
  if (!status->is_directory) return fingerprint_weights_file(path, stop);
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(path))
    if (entry.is_regular_file()) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  std::string out;
  for (const auto& file : files)
    out += fmt::format("{}{}: {}", out.empty() ? "" : "; ", file.filename().string(),
                       fingerprint_weights_file(file, stop));
  return out;
}

}  // namespace pagedgen
