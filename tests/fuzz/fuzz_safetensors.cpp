// Fuzz target: a safetensors file, or (when the input starts with '{') a
// model.safetensors.index.json naming shards beside it, of which "a.safetensors" exists and
// holds two small tensors. Every tensor listed is looked up and its bytes touched.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_files.h"
#include "model/safetensors.h"
#include "util/error.h"

using namespace pagedgen;

namespace {

// A valid shard: "x" F32 [2] and "y" I8 [3].
std::string small_shard() {
  const std::string header = R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                             R"("y":{"dtype":"I8","shape":[3],"data_offsets":[8,11]}})";
  std::string bytes;
  for (int i = 0; i < 8; ++i) bytes += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return bytes + header + std::string(11, '\x01');
}

void read_everything(const SafetensorsModel& model) {
  volatile uint8_t sink = 0;
  for (const SafetensorsTensor& tensor : model.tensors()) {
    if (model.find(tensor.name) == nullptr) __builtin_trap();  // every listed tensor is found
    if (!tensor.data.empty())
      sink = sink ^ static_cast<uint8_t>(tensor.data.front()) ^ static_cast<uint8_t>(tensor.data.back());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string_view bytes = fuzz::as_text(data, size);
  try {
    if (!bytes.empty() && bytes.front() == '{') {
      const std::filesystem::path dir = fuzz::scratch_dir();
      fuzz::write_bytes(dir / "model.safetensors.index.json", bytes);
      fuzz::write_bytes(dir / "a.safetensors", small_shard());
      read_everything(SafetensorsModel(dir));
    } else {
      read_everything(SafetensorsModel(fuzz::memory_file(bytes)));
    }
  } catch (const Error&) {
  }
  return 0;
}
