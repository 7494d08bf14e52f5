// Byte counts for people: "2GiB" <-> 2147483648, and "98.4 MiB" for display.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace pagedgen {

// Parses "123", "512KiB", "2GiB", "1.5GB", "64M" (K/M/G/T with or without B; "i" forms
// are powers of 1024, plain ones powers of 1000). Throws Error naming the text.
uint64_t parse_byte_size(std::string_view text);

// "512 B", "1.5 KiB", "98.4 MiB", "2.00 GiB".
std::string format_bytes(uint64_t bytes);

}  // namespace pagedgen
