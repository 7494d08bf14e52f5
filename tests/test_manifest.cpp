// Manifest: written and read back exactly, and differences named setting by setting.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <algorithm>
#include <fstream>

#include "gguf_writer.h"
#include "io/manifest.h"
#include "util/error.h"
#include "util/file_fingerprint.h"

using namespace pagedgen;
using namespace pagedgen::test;

TEST_CASE("a manifest round-trips and its differences are named") {
  TempDir dir("pagedgen-manifest");
  Manifest manifest;
  manifest.settings = {{"input", "bytes=3 fnv1a64=x"}, {"stop", "[\"\\n\"]"}, {"shard", "0/2"}};
  CHECK(manifest_path(dir / "out.jsonl") == dir / "out.jsonl.manifest.json");
  CHECK(read_manifest(dir / "absent.json") == std::nullopt);
  write_manifest(dir / "m.json", manifest);
  const std::optional<Manifest> back = read_manifest(dir / "m.json");
  REQUIRE(back);
  CHECK(back->settings == manifest.settings);
  CHECK_FALSE(back->finished);
  CHECK(describe_difference(*back, manifest) == std::nullopt);

  Manifest other = manifest;
  other.settings[2].second = "1/2";
  CHECK(describe_difference(manifest, other) == "shard was 0/2, now 1/2");
  CHECK(describe_difference(manifest, other, "shard") == std::nullopt);
  other.settings.pop_back();
  CHECK(describe_difference(manifest, other) == "shard was 0/2, now not given");
  CHECK(describe_difference(other, manifest) == "shard was not recorded, now 0/2");

  std::ofstream(dir / "bad.json") << "{\"settings\": {}}";
  CHECK_THROWS_AS(read_manifest(dir / "bad.json"), Error);
}

TEST_CASE("file fingerprints: size and FNV-1a of the bytes, or of a head") {
  TempDir dir("pagedgen-fingerprint");
  std::ofstream(dir / "a", std::ios::binary) << "abc";
  std::ofstream(dir / "b", std::ios::binary) << "abd";
  CHECK(fingerprint_file(dir / "a") != fingerprint_file(dir / "b"));
  CHECK(fingerprint_file(dir / "a", 2) == fingerprint_file(dir / "b", 2));
  CHECK(fingerprint_file(dir / "a").starts_with("bytes=3 fnv1a64="));
  CHECK(fingerprint_model(dir.path()).starts_with("a: bytes=3 fnv1a64="));
}

TEST_CASE("a model file's fingerprint covers every byte of it, large files too") {
  // Weights changed after the first 8 MiB must change the fingerprint too, so that --resume
  // refuses a model changed anywhere.
  TempDir dir("pagedgen-fingerprint-model");
  const auto path = dir / "model.gguf";
  const uint64_t size = kFnvModelMaxBytes + (uint64_t{3} << 20) + 12345;  // hashed by words, with a tail
  {
    std::ofstream file(path, std::ios::binary);
    const std::string chunk(1 << 20, 'w');
    for (uint64_t written = 0; written < size; written += chunk.size())
      file.write(chunk.data(), static_cast<std::streamsize>(std::min<uint64_t>(chunk.size(), size - written)));
  }
  const std::string original = fingerprint_model(path);
  CHECK(original.starts_with(fmt::format("bytes={} words64=", size)));
  const auto change_byte = [&](uint64_t offset, char value) {
    std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(static_cast<std::streamoff>(offset));
    file.put(value);
  };
  // After the first 8 MiB (the old fingerprint's end), anywhere in the middle, in the tail.
  for (uint64_t offset : {(uint64_t{9} << 20), size / 2 + 3, size / 3 + 17, size - 1}) {
    CAPTURE(offset);
    change_byte(offset, 'x');
    CHECK(fingerprint_model(path) != original);
    change_byte(offset, 'w');
    CHECK(fingerprint_model(path) == original);
  }
  // Two words swapped between lanes, or within one.
  change_byte(size / 2, 'a');
  change_byte(size / 2 + 8, 'b');
  const std::string ab = fingerprint_model(path);
  change_byte(size / 2, 'b');
  change_byte(size / 2 + 8, 'a');
  CHECK(fingerprint_model(path) != ab);
}

TEST_CASE("fingerprints of a missing file say why; a version 1 manifest reads as such; job keys ignore the shard") {
  TempDir dir("pagedgen-fingerprint-missing");
  CHECK_THROWS_WITH_AS(fingerprint_model(dir / "absent.gguf"), doctest::Contains("No such file or directory"), Error);
  CHECK_THROWS_WITH_AS(fingerprint_file(dir / "absent.jsonl"), doctest::Contains("No such file or directory"), Error);

  std::ofstream(dir / "v1.json") << R"({"pagedgen_manifest": 1, "finished": false, "settings": {"input": "x"}})";
  const std::optional<Manifest> v1 = read_manifest(dir / "v1.json");
  REQUIRE(v1);
  CHECK(v1->version == 1);
  write_manifest(dir / "v2.json", *v1);
  CHECK(read_manifest(dir / "v2.json")->version == kManifestVersion);

  Manifest a;
  a.settings = {{"input", "bytes=3 fnv1a64=x"}, {"max_tokens", "4"}, {"shard", "0/2"}};
  Manifest b = a;
  b.settings[2].second = "1/2";
  CHECK(job_key(a) == job_key(b));
  CHECK(job_key(a).size() == 16);
  b.settings[1].second = "5";
  CHECK(job_key(a) != job_key(b));
}

TEST_CASE("scan_file: size, hash and lines as the line reader counts them") {
  TempDir dir("pagedgen-scan");
  for (const auto& [text, num_lines] :
       {std::pair{std::string(""), 0}, {"a", 1}, {"a\n", 1}, {"a\n\nb", 3}, {"a\r\nb\r\n", 2}}) {
    CAPTURE(text);
    std::ofstream(dir / "f", std::ios::binary) << text;
    const FileScan scan = scan_file(dir / "f");
    CHECK(scan.num_lines == static_cast<uint64_t>(num_lines));
    CHECK(scan.fingerprint() == fingerprint_file(dir / "f"));
  }
}

TEST_CASE("a finished manifest's output record and stream fingerprint round-trip; a malformed record is refused") {
  TempDir dir("pagedgen-manifest-output");
  Manifest manifest;
  manifest.settings = {{"input", "standard input"}, {"shard", "1/2"}};
  manifest.finished = true;
  manifest.output = OutputCoverage{10, 905, 0xfedcba9876543210ull};
  manifest.input_read = "bytes=1234 fnv1a64=0123456789abcdef";
  write_manifest(dir / "m.json", manifest);
  const std::optional<Manifest> back = read_manifest(dir / "m.json");
  REQUIRE(back);
  CHECK(back->output == manifest.output);
  CHECK(back->input_read == manifest.input_read);
  CHECK(back->settings == manifest.settings);
  // Not settings: the job key and the settings' differences do not see them.
  Manifest unfinished = manifest;
  unfinished.output.reset();
  unfinished.input_read.reset();
  CHECK(job_key(unfinished) == job_key(manifest));
  CHECK(describe_difference(unfinished, manifest) == std::nullopt);

  std::ofstream(dir / "old.json") << "{\"pagedgen_manifest\": 2, \"finished\": true, \"settings\": {}}";
  const std::optional<Manifest> old = read_manifest(dir / "old.json");
  REQUIRE(old);
  CHECK(old->output == std::nullopt);
  CHECK(old->input_read == std::nullopt);
  std::ofstream(dir / "bad.json") << "{\"pagedgen_manifest\": 2, \"finished\": true, \"output\": {\"lines\": 3, "
                                     "\"bytes\": 9, \"fnv1a64\": \"xyz\"}, \"settings\": {}}";
  CHECK_THROWS_WITH_AS(read_manifest(dir / "bad.json"), doctest::Contains("malformed \"output\" record"), Error);
}
