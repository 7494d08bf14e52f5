// prepare_resume and DurableOutput: a torn last line is cut, the last complete line's input
// line is found (whatever its length), and appending goes on after it; a file whose last
// line is not an output line is refused.
#include <doctest/doctest.h>

#include <sys/resource.h>

#include <cerrno>
#include <csignal>
#include <fstream>

#include "gguf_writer.h"
#include "io/durable_output.h"
#include "io/output_resume.h"
#include "test_paths.h"
#include "util/error.h"

using namespace pagedgen;
using namespace pagedgen::test;

TEST_CASE("a torn last line is cut and the resume point is the last complete line") {
  TempDir dir("pagedgen-resume");
  const auto path = dir / "out.jsonl";
  const std::string long_text(200000, 'x');  // longer than the backward scan's chunk
  const std::string complete =
      "{\"id\":null,\"index\":0,\"text\":\"a\"}\n{\"id\":null,\"index\":7,\"text\":\"" + long_text + "\"}\n";
  std::ofstream(path, std::ios::binary) << complete << "{\"id\":null,\"ind";
  const ResumePoint point = prepare_resume(path);
  CHECK(point.last_index == 7);
  CHECK(point.num_torn_bytes == 15);
  CHECK(point.num_lines == 2);
  CHECK_FALSE(point.has_error_lines);
  CHECK(read_file(path) == complete);

  {
    DurableOutput output(path, false, 0.0);
    output.stream() << "{\"id\":\"batch_req_9\"}\n";
    output.close();
  }
  CHECK(read_file(path) == complete + "{\"id\":\"batch_req_9\"}\n");
  CHECK(prepare_resume(path).last_index == 9);
  std::ofstream(path, std::ios::app | std::ios::binary) << "{\"id\":\"batch_req_10\",\"error\":{\"code\":\"x\"}}\n";
  CHECK(prepare_resume(path).has_error_lines);

  {
    DurableOutput truncated(path, true, 1.0);
    truncated.close();
  }
  const ResumePoint empty = prepare_resume(path);
  CHECK(empty.last_index == std::nullopt);
  CHECK(empty.num_torn_bytes == 0);

  std::ofstream(path, std::ios::binary) << "only a torn line";
  CHECK(prepare_resume(path).last_index == std::nullopt);
  CHECK(read_file(path).empty());

  std::ofstream(path, std::ios::binary) << "not output\n";
  CHECK_THROWS_AS(prepare_resume(path), Error);
}

TEST_CASE("reading a resume point changes nothing; lines out of order or of other shards are refused") {
  TempDir dir("pagedgen-resume-checks");
  const auto path = dir / "out.jsonl";
  const std::string lines = "{\"id\":null,\"index\":0}\n{\"id\":null,\"index\":3}\n";
  std::ofstream(path, std::ios::binary) << lines << "{\"id\":null,\"in";
  const ResumePoint point = read_resume_point(path);
  CHECK(point.last_index == 3);
  CHECK(point.num_lines == 2);
  CHECK(point.num_kept_bytes == lines.size());
  CHECK(point.num_torn_bytes == 14);
  CHECK(read_file(path) == lines + "{\"id\":null,\"in");  // not cut
  cut_file(path, point.num_kept_bytes);
  CHECK(read_file(path) == lines);

  // Two processes appending to one output leave lines in no order.
  std::ofstream(path, std::ios::binary) << lines << lines;
  CHECK_THROWS_WITH_AS(read_resume_point(path), doctest::Contains("answers input line 0 after input line 3"), Error);
  // A line this run (shard) does not own.
  std::ofstream(path, std::ios::binary) << lines;
  CHECK_THROWS_WITH_AS(read_resume_point(path, [](uint64_t line) { return line < 3; }),
                       doctest::Contains("not among this run's lines"), Error);
  CHECK(read_resume_point(path, [](uint64_t line) { return line <= 3; }).num_lines == 2);
}

TEST_CASE("a failed write still counts only the lines it got into the file whole") {
  // A full disk's message counts lines complete in the file. A file size limit makes writes
  // fail the same way (EFBIG instead of ENOSPC), part way through.
  TempDir dir("pagedgen-durable-full");
  const auto path = dir / "out.jsonl";
  const std::string line = "{\"id\":null,\"index\":0,\"text\":\"" + std::string(28, 'x') + "\"}\n";  // 60 bytes
  REQUIRE(line.size() == 60);
  const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit old_limit {};
  REQUIRE(::getrlimit(RLIMIT_FSIZE, &old_limit) == 0);
  struct rlimit limit = old_limit;
  limit.rlim_cur = 100;
  REQUIRE(::setrlimit(RLIMIT_FSIZE, &limit) == 0);
  {
    DurableOutput output(path, true, 0.0);
    output.stream() << line << std::flush;
    CHECK(output.num_complete_lines() == 1);
    output.stream() << line << line << std::flush;  // 40 bytes of the second line fit
    CHECK_FALSE(output.stream().good());
    CHECK(output.num_complete_lines() == 1);
    CHECK(output.failure() == EFBIG);
    CHECK_THROWS_WITH_AS(output.close(), doctest::Contains("File too large"), Error);
  }
  ::setrlimit(RLIMIT_FSIZE, &old_limit);
  std::signal(SIGXFSZ, old_handler);
  CHECK(read_file(path) == line + line.substr(0, 40));
}
