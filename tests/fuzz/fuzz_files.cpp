#include "fuzz_files.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

namespace pagedgen::fuzz {

namespace {

[[noreturn]] void die(const char* what) {
  std::perror(what);
  std::abort();
}

}  // namespace

std::filesystem::path memory_file(std::string_view bytes) {
  static const int fd = [] {
    const int created = ::memfd_create("pagedgen-fuzz", 0);
    if (created < 0) die("memfd_create");
    return created;
  }();
  if (::ftruncate(fd, 0) != 0) die("ftruncate");
  std::size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::pwrite(fd, bytes.data() + written, bytes.size() - written, static_cast<off_t>(written));
    if (n <= 0) die("pwrite");
    written += static_cast<std::size_t>(n);
  }
  return "/proc/self/fd/" + std::to_string(fd);
}

std::filesystem::path scratch_dir() {
  // Removed when the process exits normally.
  struct Scratch {
    std::filesystem::path dir;
    ~Scratch() {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  };
  static const Scratch scratch{[] {
    const std::filesystem::path base = std::filesystem::exists("/dev/shm") ? "/dev/shm" : "/tmp";
    return base / ("pagedgen-fuzz-" + std::to_string(::getpid()));
  }()};
  std::error_code ec;
  std::filesystem::remove_all(scratch.dir, ec);
  std::filesystem::create_directories(scratch.dir);
  return scratch.dir;
}

void write_bytes(const std::filesystem::path& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) die("write");
}

}  // namespace pagedgen::fuzz
