// OutputLock: a second lock on the same output, by any name, fails at once with a message
// that says why; an unstarted run removes only the file its lock created.
#include <doctest/doctest.h>
#include <unistd.h>

#include <fstream>

#include "gguf_writer.h"
#include "io/output_lock.h"
#include "test_paths.h"
#include "util/error.h"

using namespace pagedgen;
using namespace pagedgen::test;

TEST_CASE("a locked output cannot be locked again, by its name or another one") {
  TempDir dir("pagedgen-lock");
  const auto path = dir / "out.jsonl";
  std::optional<OutputLock> first(std::in_place, path);
  CHECK(first->created());
  CHECK(std::filesystem::exists(path));
  CHECK_THROWS_WITH_AS(OutputLock{path}, doctest::Contains("is being written by another pagedgen process"), Error);
  REQUIRE(::link(path.c_str(), (dir / "other-name.jsonl").c_str()) == 0);
  CHECK_THROWS_AS(OutputLock{dir / "other-name.jsonl"}, Error);
  first.reset();  // unlocked
  OutputLock again(path);
  CHECK_FALSE(again.created());
}

TEST_CASE("an unstarted run removes the empty file its lock created, and nothing else") {
  TempDir dir("pagedgen-lock-unstarted");
  {
    OutputLock lock(dir / "new.jsonl");
    lock.release_unstarted();
  }
  CHECK_FALSE(std::filesystem::exists(dir / "new.jsonl"));
  std::ofstream(dir / "old.jsonl") << "{\"id\":null,\"index\":0}\n";
  {
    OutputLock lock(dir / "old.jsonl");
    lock.release_unstarted();
  }
  CHECK(read_file(dir / "old.jsonl") == "{\"id\":null,\"index\":0}\n");
  CHECK_THROWS_WITH_AS(OutputLock{dir / "missing-dir" / "x.jsonl"}, doctest::Contains("No such file or directory"),
                       Error);
}
