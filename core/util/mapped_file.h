// A read-only memory-mapped file. Model files are mapped, never read into memory whole;
// every reader bounds-checks against bytes().size() before touching the mapping.
#pragma once

#include <cstddef>
#include <filesystem>
#include <span>

namespace pagedgen {

class MappedFile {
 public:
  // Throws Error naming the path when the file cannot be opened or mapped.
  explicit MappedFile(const std::filesystem::path& path);
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::span<const std::byte> bytes() const { return {data_, size_}; }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  const std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

// Asks the kernel to reclaim the resident pages that lie wholly inside `range`, once their
// contents have been copied elsewhere: file pages are dropped and fault in again from the
// file if read; other memory keeps its contents. Only resident memory changes.
void release_mapped_pages(std::span<const std::byte> range);

}  // namespace pagedgen
