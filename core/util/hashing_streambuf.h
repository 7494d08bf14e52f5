// HashingStreambuf: reads another stream buffer through, and hashes every byte that passes
// (size and FNV-1a, the same figures as util/file_fingerprint.h's scan_file). A stream
// (standard input, a FIFO) can be read only once, so its fingerprint is taken as it is read
// and recorded in the manifest when the run finishes; merge compares it across shards.
//
//   std::istream& raw = std::cin;
//   HashingStreambuf hashed(*raw.rdbuf());
//   std::istream input(&hashed);     // read `input` as `raw` would be read
//   hashed.drain();                  // read what is left, so the hash covers the whole stream
//   hashed.fingerprint();            // "bytes=N fnv1a64=X"
#pragma once

#include <cstdint>
#include <streambuf>
#include <string>
#include <vector>

namespace pagedgen {

class HashingStreambuf : public std::streambuf {
 public:
  // `source` must outlive this buffer; nothing else may read it meanwhile.
  explicit HashingStreambuf(std::streambuf& source);
  HashingStreambuf(const HashingStreambuf&) = delete;
  HashingStreambuf& operator=(const HashingStreambuf&) = delete;

  // Reads the rest of the source, hashing it, to its end.
  void drain();

  uint64_t num_bytes() const { return num_bytes_; }  // read from the source so far
  uint64_t hash() const;                             // FNV-1a of those bytes, finalized (splitmix64)
  std::string fingerprint() const;                   // "bytes=N fnv1a64=X", as FileScan::fingerprint

 protected:
  int_type underflow() override;

 private:
  static constexpr std::size_t kChunkBytes = std::size_t{1} << 16;

  std::streambuf& source_;
  std::vector<char> buffer_;  // [kChunkBytes]: the chunk the reader is in
  uint64_t num_bytes_ = 0;
  uint64_t state_;  // FNV-1a state before finalization
};

}  // namespace pagedgen
