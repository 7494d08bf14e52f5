#include "job/run_journal.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <fstream>
#include <optional>

#include "io/line_reader.h"
#include "io/output_format.h"
#include "util/error.h"
#include "util/fnv_hash.h"
#include "util/posix_file.h"

namespace pagedgen {

namespace {

constexpr std::size_t kHashDigits = 16;

uint64_t entry_hash(std::string_view payload) { return splitmix64_finalize(fnv1a_bytes(kFnvOffsetBasis, payload)); }

std::string entry(std::string_view payload) { return fmt::format("{:016x} {}\n", entry_hash(payload), payload); }

// Reads a decimal number and the space after it off the front of `text`.
std::optional<uint64_t> take_number(std::string_view& text) {
  uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end == text.data()) return std::nullopt;
  text.remove_prefix(static_cast<std::size_t>(end - text.data()));
  if (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  return value;
}

// Adds one entry to `contents`; false when it is not a well-formed entry whose hash holds.
bool add_entry(std::string_view text, JournalContents& contents) {
  uint64_t hash = 0;
  if (text.size() < kHashDigits + 3 || text[kHashDigits] != ' ') return false;
  const auto [end, error] = std::from_chars(text.data(), text.data() + kHashDigits, hash, 16);
  if (error != std::errc() || end != text.data() + kHashDigits) return false;
  std::string_view payload = text.substr(kHashDigits + 1);
  if (entry_hash(payload) != hash || payload[1] != ' ') return false;
  const char kind = payload.front();
  payload.remove_prefix(2);
  const std::optional<uint64_t> index = take_number(payload);
  if (!index) return false;
  if (kind == 'a') {
    const std::optional<uint64_t> cached = take_number(payload);
    if (!cached || !payload.empty()) return false;
    contents.cached_tokens.try_emplace(*index, static_cast<int64_t>(*cached));  // the first start's
    return true;
  }
  const std::optional<OutputLineInfo> info = read_output_line(payload);
  if (kind != 'l' || !info || info->index != *index) return false;
  contents.lines.try_emplace(*index, payload);
  return true;
}

}  // namespace

std::filesystem::path journal_path(const std::filesystem::path& output) {
  return std::filesystem::path(output.string() + ".journal");
}

JournalContents read_journal(const std::filesystem::path& path) {
  JournalContents contents;
  const std::optional<FileStatus> status = file_status(path);
  if (!status) return contents;
  std::ifstream file(path, std::ios::binary);
  if (!file) fail("cannot open the journal '{}': {}", path.string(), errno_text(errno));
  LineReader lines(file);
  while (const std::optional<Line> line = lines.next()) {
    const uint64_t end = contents.num_valid_bytes + line->num_bytes + 1;  // with its newline
    if (line->too_long || end > status->num_bytes || !add_entry(line->text, contents)) break;
    contents.num_valid_bytes = end;
  }
  contents.num_torn_bytes = status->num_bytes - contents.num_valid_bytes;
  return contents;
}

JournalWriter::JournalWriter(const std::filesystem::path& path, uint64_t num_kept_bytes, double fsync_interval_seconds)
    : path_(path), fsync_interval_(fsync_interval_seconds), last_fsync_(std::chrono::steady_clock::now()) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) fail("cannot open the journal '{}': {}", path.string(), errno_text(errno));
  if (::ftruncate(fd_, static_cast<off_t>(num_kept_bytes)) != 0) {
    const int err = errno;
    ::close(fd_);
    fail("cannot cut the journal '{}' to its valid entries: {}", path.string(), errno_text(err));
  }
}

JournalWriter::~JournalWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void JournalWriter::add_line(uint64_t index, std::string_view line) {
  pending_ += entry(fmt::format("l {} {}", index, line));
}

void JournalWriter::add_admission(uint64_t index, int64_t cached_tokens) {
  pending_ += entry(fmt::format("a {} {}", index, cached_tokens));
}

void JournalWriter::commit() {
  PG_CHECK(fd_ >= 0, "journal closed");
  if (pending_.empty()) return;
  if (!write_all(fd_, pending_)) fail_with_errno("writing");
  pending_.clear();
  if (std::chrono::steady_clock::now() - last_fsync_ >= fsync_interval_) fsync_or_fail();
}

void JournalWriter::clear() {
  PG_CHECK(fd_ >= 0, "journal closed");
  pending_.clear();
  if (::ftruncate(fd_, 0) != 0) fail_with_errno("emptying");
  fsync_or_fail();
}

void JournalWriter::remove() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  remove_file_if_present(path_);
}

void JournalWriter::fsync_or_fail() {
  last_fsync_ = std::chrono::steady_clock::now();
  if (::fsync(fd_) != 0) fail_with_errno("writing");
}

void JournalWriter::fail_with_errno(const char* what) {
  if (!failure_) failure_ = errno;
  fail("{} the journal '{}' failed: {}", what, path_.string(), errno_text(*failure_));
}

}  // namespace pagedgen
