#include "io/logprob_json.h"

#include <fmt/format.h>

#include <cmath>

namespace pagedgen {

void append_logprob(std::string& out, float logprob) {
  if (std::isinf(logprob)) {
    out += "-9999.0";
    return;
  }
  fmt::format_to(std::back_inserter(out), "{}", logprob);
}

void append_byte_list(std::string& out, std::string_view bytes) {
  out += '[';
  for (std::size_t i = 0; i < bytes.size(); ++i)
    fmt::format_to(std::back_inserter(out), "{}{}", i == 0 ? "" : ",",
                   static_cast<unsigned>(static_cast<unsigned char>(bytes[i])));
  out += ']';
}

}  // namespace pagedgen
