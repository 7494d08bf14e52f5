// LineWindows: which lines a shard owns. An input of at least N windows is split by
// windows (each planned whole, as in a single run); a smaller one by lines, so that every
// shard gets work; a stream, whose length is unknown, by windows.
#include <doctest/doctest.h>

#include <vector>

#include "io/line_windows.h"

using namespace pagedgen;

namespace {

// The lines [0, num_lines) each shard of `windows` owns.
std::vector<std::vector<uint64_t>> owned_lines(LineWindows windows, uint64_t num_lines) {
  std::vector<std::vector<uint64_t>> shards(windows.num_shards);
  for (uint64_t k = 0; k < windows.num_shards; ++k) {
    windows.shard = k;
    for (uint64_t line = 0; line < num_lines; ++line)
      if (windows.owns(line)) shards[k].push_back(line);
  }
  return shards;
}

}  // namespace

TEST_CASE("an input under one window is split by lines over every shard") {
  const LineWindows windows{10000, 0, 4, 10};
  CHECK(windows.splits_lines());
  const auto shards = owned_lines(windows, 10);
  CHECK(shards[0] == std::vector<uint64_t>{0, 1});
  CHECK(shards[1] == std::vector<uint64_t>{2, 3, 4});
  CHECK(shards[2] == std::vector<uint64_t>{5, 6});
  CHECK(shards[3] == std::vector<uint64_t>{7, 8, 9});
  for (uint64_t line : {0, 4, 9}) CHECK(windows.window_of(line) == 0);  // one batch per shard
}

TEST_CASE("fewer windows than shards: still split by lines, each shard under one window") {
  const LineWindows windows{3, 0, 3, 5};  // 2 windows of 3 lines, 3 shards
  CHECK(windows.splits_lines());
  const auto shards = owned_lines(windows, 5);
  CHECK(shards[0] == std::vector<uint64_t>{0});
  CHECK(shards[1] == std::vector<uint64_t>{1, 2});
  CHECK(shards[2] == std::vector<uint64_t>{3, 4});
}

TEST_CASE("at least N windows: shards own whole windows, w % N == K") {
  const LineWindows windows{3, 0, 3, 12};  // 4 windows
  CHECK_FALSE(windows.splits_lines());
  const auto shards = owned_lines(windows, 12);
  CHECK(shards[0] == std::vector<uint64_t>{0, 1, 2, 9, 10, 11});
  CHECK(shards[1] == std::vector<uint64_t>{3, 4, 5});
  CHECK(shards[2] == std::vector<uint64_t>{6, 7, 8});
  CHECK(windows.window_of(10) == 3);
}

TEST_CASE("a stream's length is unknown: its shards split windows; one shard owns all") {
  const LineWindows stream{10000, 1, 2, std::nullopt};
  CHECK_FALSE(stream.splits_lines());
  CHECK_FALSE(stream.owns(5));
  CHECK(stream.owns(10000));
  const LineWindows single{10, 0, 1, 3};
  CHECK_FALSE(single.splits_lines());
  for (uint64_t line : {0, 2, 50}) CHECK(single.owns(line));
}

TEST_CASE("line shares cover every line once, for many sizes") {
  for (uint64_t num_shards : {2, 3, 7, 8}) {
    for (uint64_t num_lines : {0, 1, 5, 8, 13, 55}) {
      CAPTURE(num_shards);
      CAPTURE(num_lines);
      const auto shards = owned_lines(LineWindows{8, 0, num_shards, num_lines}, num_lines);
      std::vector<int> times(num_lines, 0);
      for (const auto& lines : shards)
        for (uint64_t line : lines) ++times[line];
      for (int t : times) CHECK(t == 1);
    }
  }
}
