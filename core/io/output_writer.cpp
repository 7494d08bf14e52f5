#include "io/output_writer.h"

#include <algorithm>

#include "util/error.h"

namespace pagedgen {

OutputWriter::OutputWriter(std::ostream& out, LineFormatter format) : out_(out), format_(std::move(format)) {
  PG_CHECK(static_cast<bool>(format_), "OutputWriter needs a line formatter");
}

void OutputWriter::expect(uint64_t index, RecordContext context) {
  PG_CHECK(!last_expected_ || index > *last_expected_, "expect({}) after expect({}): indices must increase", index,
           *last_expected_);
  last_expected_ = index;
  waiting_.push_back({index, std::move(context), std::nullopt});
}

const std::string* OutputWriter::complete(OutputRecord record) {
  const uint64_t index = record_index(record);
  Slot& slot = waiting_slot(index);
  return place(slot, format_(record, slot.context));
}

const std::string* OutputWriter::complete_line(uint64_t index, std::string line) {
  return place(waiting_slot(index), std::move(line));
}

OutputWriter::Slot& OutputWriter::waiting_slot(uint64_t index) {
  const auto slot =
      std::lower_bound(waiting_.begin(), waiting_.end(), index, [](const Slot& s, uint64_t i) { return s.index < i; });
  PG_CHECK(slot != waiting_.end() && slot->index == index, "complete({}): line not expected or already written", index);
  PG_CHECK(!slot->line, "complete({}) twice", index);
  return *slot;
}

const std::string* OutputWriter::place(Slot& slot, std::string line) {
  slot.line = std::move(line);
  if (&slot != &waiting_.front()) return &*slot.line;
  while (!waiting_.empty() && waiting_.front().line) {
    std::string& text = *waiting_.front().line;
    text.push_back('\n');
    out_.write(text.data(), static_cast<std::streamsize>(text.size()));
    waiting_.pop_front();
    ++num_written_;
  }
  out_.flush();
  if (!out_) fail("writing the output failed after {} lines (disk full or closed pipe?)", num_written_);
  return nullptr;
}

}  // namespace pagedgen
