// prepare_resume and DurableOutput: a torn last line is cut, the last complete line's input
// line is found (whatever its length), and appending goes on after it; a file whose last
// line is not an output line is refused.
#include <doctest/doctest.h>

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
  const std::string complete = "{\"id\":null,\"index\":0,\"text\":\"a\"}\n{\"id\":null,\"index\":7,\"text\":\"" +
                               long_text + "\"}\n";
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
