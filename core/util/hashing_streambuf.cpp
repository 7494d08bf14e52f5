#include "util/hashing_streambuf.h"

#include <string_view>

#include "util/file_fingerprint.h"
#include "util/fnv_hash.h"

namespace pagedgen {

HashingStreambuf::HashingStreambuf(std::streambuf& source)
    : source_(source), buffer_(kChunkBytes), state_(kFnvOffsetBasis) {
  setg(buffer_.data(), buffer_.data(), buffer_.data());
}

// Every byte is hashed once, when its chunk comes in from the source.
HashingStreambuf::int_type HashingStreambuf::underflow() {
  if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
  const std::streamsize got = source_.sgetn(buffer_.data(), static_cast<std::streamsize>(buffer_.size()));
  if (got <= 0) return traits_type::eof();
  const auto num_got = static_cast<std::size_t>(got);
  state_ = fnv1a_bytes(state_, std::string_view(buffer_.data(), num_got));
  num_bytes_ += num_got;
  setg(buffer_.data(), buffer_.data(), buffer_.data() + num_got);
  return traits_type::to_int_type(*gptr());
}

void HashingStreambuf::drain() {
  while (underflow() != traits_type::eof()) setg(eback(), egptr(), egptr());
}

uint64_t HashingStreambuf::hash() const { return splitmix64_finalize(state_); }

std::string HashingStreambuf::fingerprint() const { return format_fingerprint(num_bytes_, hash()); }

}  // namespace pagedgen
