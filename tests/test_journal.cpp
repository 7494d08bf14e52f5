// The run journal: entries read back exactly, a torn or garbled tail is found (and the
// entries before it kept), the first start of a request wins, and clear/remove.
#include <doctest/doctest.h>

#include <fstream>

#include "gguf_writer.h"
#include "job/run_journal.h"
#include "test_paths.h"

using namespace pagedgen;
using namespace pagedgen::test;

namespace {

std::string line(uint64_t index, const std::string& text) {
  return "{\"id\":null,\"index\":" + std::to_string(index) + ",\"text\":\"" + text + "\"}";
}

}  // namespace

TEST_CASE("journal entries read back: finished lines and cached tokens at first start") {
  TempDir dir("pagedgen-journal");
  const auto path = journal_path(dir / "out.jsonl");
  CHECK(path == dir / "out.jsonl.journal");
  CHECK(read_journal(path).lines.empty());  // absent: empty
  {
    JournalWriter journal(path, 0, 0.0);
    journal.add_admission(5, 32);
    journal.add_line(7, line(7, "seven"));
    journal.commit();
    journal.add_admission(5, 0);  // a later start of 5 (a resumed run) does not replace the first
    journal.add_line(9, line(9, "nine\\nlines"));
    journal.commit();
  }
  const JournalContents contents = read_journal(path);
  CHECK(contents.lines.size() == 2);
  CHECK(contents.lines.at(7) == line(7, "seven"));
  CHECK(contents.lines.at(9) == line(9, "nine\\nlines"));
  CHECK(contents.cached_tokens.size() == 1);
  CHECK(contents.cached_tokens.at(5) == 32);
  CHECK(contents.num_torn_bytes == 0);
  CHECK(contents.num_valid_bytes == read_file(path).size());
}

TEST_CASE("a torn or garbled tail ends the journal; the entries before it stand") {
  TempDir dir("pagedgen-journal-torn");
  const auto path = dir / "j";
  {
    JournalWriter journal(path, 0, 1.0);
    journal.add_line(1, line(1, "one"));
    journal.add_line(2, line(2, "two"));
    journal.commit();
  }
  const std::string whole = read_file(path);
  const std::size_t first_entry = whole.find('\n') + 1;
  for (const std::string& tail :
       {std::string("0123"), whole.substr(first_entry, whole.size() - first_entry - 1), std::string(40, '\0')}) {
    CAPTURE(tail.size());
    // The first entry, then a tail a kill or a power loss could leave: a torn entry, a
    // whole entry but its newline, zeros.
    std::ofstream(path, std::ios::binary) << whole.substr(0, first_entry) << tail;
    const JournalContents contents = read_journal(path);
    CHECK(contents.lines.size() == 1);
    CHECK(contents.lines.count(1) == 1);
    CHECK(contents.num_valid_bytes == first_entry);
    CHECK(contents.num_torn_bytes == tail.size());
  }
  // A changed byte breaks its entry's hash: it and everything after it are dropped.
  std::string garbled = whole;
  garbled[garbled.find("one")] = 'O';
  std::ofstream(path, std::ios::binary) << garbled;
  CHECK(read_journal(path).lines.empty());
  CHECK(read_journal(path).num_valid_bytes == 0);

  // Opening it for a resumed run keeps the valid entries and cuts the rest; new entries follow.
  std::ofstream(path, std::ios::binary) << whole.substr(0, first_entry) << "torn";
  {
    JournalWriter journal(path, first_entry, 1.0);
    journal.add_line(3, line(3, "three"));
    journal.commit();
  }
  const JournalContents resumed = read_journal(path);
  CHECK(resumed.lines.size() == 2);
  CHECK(resumed.lines.count(3) == 1);
  CHECK(resumed.num_torn_bytes == 0);
}

TEST_CASE("an entry whose output line answers another input line is not taken") {
  TempDir dir("pagedgen-journal-foreign");
  const auto path = dir / "j";
  {
    JournalWriter journal(path, 0, 1.0);
    journal.add_line(4, line(5, "five"));
    journal.commit();
  }
  CHECK(read_journal(path).lines.empty());
}

TEST_CASE("clear empties the journal, remove deletes it") {
  TempDir dir("pagedgen-journal-clear");
  const auto path = dir / "j";
  JournalWriter journal(path, 0, 1.0);
  journal.add_line(1, line(1, "one"));
  journal.commit();
  journal.add_admission(2, 16);  // not committed: clear drops it too
  journal.clear();
  journal.commit();
  CHECK(read_file(path).empty());
  journal.remove();
  CHECK_FALSE(std::filesystem::exists(path));
}
