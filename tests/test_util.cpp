// Byte units, JSON quoting and parallel_for.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <vector>

#include "gguf_writer.h"
#include "util/byte_units.h"
#include "util/error.h"
#include "util/json_quote.h"
#include "util/mapped_file.h"
#include "util/parallel_for.h"

using namespace pagedgen;

TEST_CASE("parse_byte_size accepts plain, decimal and binary units") {
  CHECK(parse_byte_size("123") == 123);
  CHECK(parse_byte_size("2GiB") == 2ull << 30);
  CHECK(parse_byte_size("512MiB") == 512ull << 20);
  CHECK(parse_byte_size("1.5GB") == 1500000000ull);
  CHECK(parse_byte_size("64m") == 64000000ull);
  CHECK(parse_byte_size("4 KiB") == 4096);
  CHECK_THROWS_AS(parse_byte_size("lots"), Error);
  CHECK_THROWS_AS(parse_byte_size("3XB"), Error);
  CHECK_THROWS_AS(parse_byte_size(""), Error);
  CHECK_THROWS_WITH_AS(parse_byte_size("5QiB"), doctest::Contains("unknown unit"), Error);
}

TEST_CASE("format_bytes") {
  CHECK(format_bytes(512) == "512 B");
  CHECK(format_bytes(1536) == "1.50 KiB");
  CHECK(format_bytes(98362432) == "93.8 MiB");
}

TEST_CASE("json_quote escapes and repairs UTF-8") {
  CHECK(json_quote("a\"b\\c\n\t") == R"("a\"b\\c\n\t")");
  CHECK(json_quote(std::string("\x01", 1)) == R"("\u0001")");
  CHECK(json_quote("h\xC3\xA9llo \xF0\x9F\x98\x80") == "\"h\xC3\xA9llo \xF0\x9F\x98\x80\"");
  // A lone continuation byte, a truncated sequence and an overlong encoding become U+FFFD.
  CHECK(json_quote("a\x80z") == "\"a\xEF\xBF\xBDz\"");
  CHECK(json_quote("\xE2\x82") == "\"\xEF\xBF\xBD\xEF\xBF\xBD\"");
  CHECK(json_quote("\xC0\xAF") == "\"\xEF\xBF\xBD\xEF\xBF\xBD\"");
}

TEST_CASE("parallel_for visits every index exactly once") {
  for (std::size_t threads : {1, 2, 3, 8}) {
    std::vector<std::atomic<int>> seen(101);
    parallel_for(seen.size(), threads, [&](std::size_t i) { seen[i]++; });
    for (auto& s : seen) CHECK(s.load() == 1);
  }
  parallel_for(0, 4, [](std::size_t) { FAIL("no work expected"); });
}

TEST_CASE("release_mapped_pages never changes memory contents, mapped or not") {
  // A heap buffer (not a file mapping: discarding its pages would zero it) and a mapped file.
  std::vector<std::byte> heap(1 << 20);
  for (std::size_t i = 0; i < heap.size(); ++i) heap[i] = static_cast<std::byte>(i * 7 + 1);
  pagedgen::release_mapped_pages(heap);
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < heap.size(); ++i) wrong += heap[i] != static_cast<std::byte>(i * 7 + 1);
  CHECK(wrong == 0);

  const pagedgen::test::TempDir dir("pagedgen-release-pages");
  const auto path = dir / "data.bin";
  pagedgen::test::write_file(path, std::span<const std::byte>(heap));
  const pagedgen::MappedFile file(path);
  std::size_t sum = 0;
  for (std::byte b : file.bytes()) sum += static_cast<std::size_t>(b);  // fault every page in
  pagedgen::release_mapped_pages(file.bytes());
  std::size_t again = 0;
  for (std::byte b : file.bytes()) again += static_cast<std::size_t>(b);
  CHECK(again == sum);
  CHECK(std::equal(heap.begin(), heap.end(), file.bytes().begin()));
}
