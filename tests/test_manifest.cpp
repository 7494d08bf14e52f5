// Manifest: written and read back exactly, and differences named setting by setting.
#include <doctest/doctest.h>

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
