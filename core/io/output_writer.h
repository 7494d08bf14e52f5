// OutputWriter: writes one line per non-blank input line, in input order, although
// requests finish out of order: records wait until every earlier line has been written,
// and the stream is flushed after each write.
//
//   expect(0) expect(2) expect(3)      complete(3)  complete(0)          complete(2)
//   waiting: [0 _][2 _][3 _]           [0 _][2 _][3 x]   -> writes 0;    -> writes 2, 3
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <ostream>
#include <string>

#include "io/output_record.h"

namespace pagedgen {

// Renders one record as one line, without the newline (output_format.h).
using LineFormatter = std::function<std::string(const OutputRecord&, const RecordContext&)>;

class OutputWriter {
 public:
  // `out` must outlive the writer.
  explicit OutputWriter(std::ostream& out, LineFormatter format);

  // Announces the next input line that will get an output line; indices strictly increase
  // (call it as lines are read, blank lines skipped). `context` is handed to the formatter.
  void expect(uint64_t index, RecordContext context = {});

  // Hands over the record of an expected, not yet completed line, in any order; writes
  // every record that is now next in input order. Returns the formatted line when it has to
  // wait for an earlier one (a batch job keeps it durable meanwhile, job/run_journal.h),
  // nullptr when it was written at once. Throws Error when writing fails.
  const std::string* complete(OutputRecord record);
  // The same for a line formatted already (a resumed job's journal holds it).
  const std::string* complete_line(uint64_t index, std::string line);

  uint64_t num_written() const { return num_written_; }
  std::size_t num_waiting() const { return waiting_.size(); }  // expected, not yet written

 private:
  struct Slot {
    uint64_t index;
    RecordContext context;
    std::optional<std::string> line;  // formatted, once completed
  };

  Slot& waiting_slot(uint64_t index);
  const std::string* place(Slot& slot, std::string line);

  std::ostream& out_;
  LineFormatter format_;
  std::deque<Slot> waiting_;  // expected lines not yet written, ascending index
  std::optional<uint64_t> last_expected_;
  uint64_t num_written_ = 0;
};

}  // namespace pagedgen
