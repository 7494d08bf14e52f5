// HashingStreambuf: a stream read through it reads unchanged, and its size and hash are
// what scan_file gives for a file of the same bytes (so a stream's fingerprint and a file's
// compare), whether the reader took every byte or drain() read the rest.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "gguf_writer.h"
#include "io/line_reader.h"
#include "util/file_fingerprint.h"
#include "util/hashing_streambuf.h"

using namespace pagedgen;
using namespace pagedgen::test;

namespace {

// More than one 64 KiB chunk of lines.
std::string many_lines() {
  std::string text;
  for (int i = 0; i < 10000; ++i) text += fmt::format("{{\"prompt\": \"line {}\"}}\n", i);
  return text;
}

std::string file_fingerprint_of(const TempDir& dir, const std::string& text) {
  std::ofstream(dir / "same.bytes", std::ios::binary) << text;
  return scan_file(dir / "same.bytes").fingerprint();
}

}  // namespace

TEST_CASE("a stream read through HashingStreambuf is unchanged and hashed as scan_file hashes a file") {
  TempDir dir("pagedgen-hashing-streambuf");
  const std::string text = many_lines();
  REQUIRE(text.size() > (1u << 17));
  std::istringstream source(text);
  HashingStreambuf hashed(*source.rdbuf());
  std::istream input(&hashed);
  LineReader lines(input);
  std::string read_back;
  while (const std::optional<Line> line = lines.next()) read_back += line->text + "\n";
  CHECK(read_back == text);
  CHECK(hashed.num_bytes() == text.size());
  CHECK(hashed.fingerprint() == file_fingerprint_of(dir, text));
}

TEST_CASE("drain() hashes the part of the stream the reader left") {
  TempDir dir("pagedgen-hashing-streambuf-drain");
  const std::string text = many_lines();
  std::istringstream source(text);
  HashingStreambuf hashed(*source.rdbuf());
  std::istream input(&hashed);
  std::string first;
  std::getline(input, first);
  CHECK(first == "{\"prompt\": \"line 0\"}");
  CHECK(hashed.num_bytes() < text.size());  // one chunk so far
  hashed.drain();
  CHECK(hashed.num_bytes() == text.size());
  CHECK(hashed.fingerprint() == file_fingerprint_of(dir, text));
  hashed.drain();  // at the end already: nothing changes
  CHECK(hashed.num_bytes() == text.size());
}

TEST_CASE("streams differing in one byte, and an empty stream") {
  TempDir dir("pagedgen-hashing-streambuf-bytes");
  std::istringstream a("{\"prompt\": \"abc\"}\n"), b("{\"prompt\": \"abd\"}\n"), empty("");
  HashingStreambuf ha(*a.rdbuf()), hb(*b.rdbuf()), he(*empty.rdbuf());
  ha.drain();
  hb.drain();
  he.drain();
  CHECK(ha.num_bytes() == hb.num_bytes());
  CHECK(ha.hash() != hb.hash());
  CHECK(he.num_bytes() == 0);
  CHECK(he.fingerprint() == file_fingerprint_of(dir, ""));
}
