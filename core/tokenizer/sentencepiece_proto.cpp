// Protobuf wire format, just enough for ModelProto: varints, 32-bit floats and
// length-delimited strings/messages. Tag = (field_number << 3) | wire_type.
#include "tokenizer/sentencepiece_proto.h"

#include <bit>
#include <cstring>

#include "util/error.h"

namespace pagedgen {
namespace {

enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

// ---- writer ----------------------------------------------------------------------

class WireWriter {
 public:
  void varint(uint64_t value) {
    while (value >= 0x80) {
      out_.push_back(static_cast<char>((value & 0x7F) | 0x80));
      value >>= 7;
    }
    out_.push_back(static_cast<char>(value));
  }
  void tag(uint32_t field, WireType wire_type) { varint((uint64_t{field} << 3) | wire_type); }
  // int32 fields are sign-extended to 64 bits on the wire (so -1 takes 10 bytes).
  void int32_field(uint32_t field, int32_t value) {
    tag(field, kVarint);
    varint(static_cast<uint64_t>(static_cast<int64_t>(value)));
  }
  void bool_field(uint32_t field, bool value) {
    tag(field, kVarint);
    varint(value ? 1 : 0);
  }
  void float_field(uint32_t field, float value) {
    tag(field, kFixed32);
    const auto bits = std::bit_cast<uint32_t>(value);
    for (int shift = 0; shift < 32; shift += 8) out_.push_back(static_cast<char>(bits >> shift));
  }
  void bytes_field(uint32_t field, std::string_view bytes) {
    tag(field, kLengthDelimited);
    varint(bytes.size());
    out_.append(bytes);
  }
  std::string& str() { return out_; }

 private:
  std::string out_;
};

std::string serialize_piece(const SpmPiece& piece) {
  WireWriter w;
  w.bytes_field(1, piece.text);
  w.float_field(2, piece.score);
  w.int32_field(3, static_cast<int32_t>(piece.type));
  return std::move(w.str());
}

std::string serialize_trainer_spec(const SpmModel& model) {
  WireWriter w;
  w.int32_field(3, static_cast<int32_t>(model.model_type));
  w.int32_field(4, static_cast<int32_t>(model.pieces.size()));
  w.bool_field(24, model.treat_whitespace_as_suffix);
  w.bool_field(35, model.byte_fallback);
  w.int32_field(40, model.unk_id.value_or(-1));
  w.int32_field(41, model.bos_id.value_or(-1));
  w.int32_field(42, model.eos_id.value_or(-1));
  w.int32_field(43, model.pad_id.value_or(-1));
  w.bytes_field(45, model.unk_piece);
  w.bytes_field(46, model.bos_piece);
  w.bytes_field(47, model.eos_piece);
  w.bytes_field(48, model.pad_piece);
  return std::move(w.str());
}

std::string serialize_normalizer_spec(const SpmModel& model) {
  WireWriter w;
  w.bytes_field(1, model.normalizer_name);
  if (!model.precompiled_charsmap.empty()) w.bytes_field(2, model.precompiled_charsmap);
  w.bool_field(3, model.add_dummy_prefix);
  w.bool_field(4, model.remove_extra_whitespaces);
  w.bool_field(5, model.escape_whitespaces);
  return std::move(w.str());
}

// ---- reader ----------------------------------------------------------------------

class WireReader {
 public:
  WireReader(std::string_view bytes, size_t base_offset, std::string_view source)
      : bytes_(bytes), base_(base_offset), source_(source) {}

  bool done() const { return pos_ >= bytes_.size(); }
  size_t offset() const { return base_ + pos_; }

  uint64_t varint() {
    uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= bytes_.size()) malformed("truncated varint");
      const auto byte = static_cast<uint8_t>(bytes_[pos_++]);
      value |= uint64_t{byte & 0x7Fu} << shift;
      if ((byte & 0x80) == 0) return value;
    }
    malformed("varint longer than 10 bytes");
  }
  uint32_t fixed32() {
    if (bytes_.size() - pos_ < 4) malformed("truncated 32-bit value");
    uint32_t value = 0;
    for (int i = 0; i < 4; ++i) value |= uint32_t{static_cast<uint8_t>(bytes_[pos_ + i])} << (8 * i);
    pos_ += 4;
    return value;
  }
  // Returns the payload and the absolute offset where it starts.
  std::pair<std::string_view, size_t> length_delimited() {
    const uint64_t length = varint();
    if (length > bytes_.size() - pos_) malformed("length-delimited field runs past the end");
    const size_t start = pos_;
    pos_ += static_cast<size_t>(length);
    return {bytes_.substr(start, static_cast<size_t>(length)), base_ + start};
  }
  void skip(uint32_t wire_type) {
    switch (wire_type) {
      case kVarint:
        varint();
        return;
      case kFixed64:
        if (bytes_.size() - pos_ < 8) malformed("truncated 64-bit value");
        pos_ += 8;
        return;
      case kLengthDelimited:
        length_delimited();
        return;
      case kFixed32:
        fixed32();
        return;
      default:
        malformed(fmt::format("unsupported wire type {}", wire_type));
    }
  }
  void expect(uint32_t wire_type, uint32_t expected, uint32_t field) {
    if (wire_type != expected) {
      malformed(fmt::format("field {} has wire type {}, expected {}", field, wire_type, expected));
    }
  }
  [[noreturn]] void malformed(std::string_view what) const {
    fail(
        "{}: not a valid SentencePiece model (malformed protobuf at byte {}: {}); "
        "check that the file is a SentencePiece tokenizer.model and is not truncated",
        source_, offset(), what);
  }

 private:
  std::string_view bytes_;
  size_t base_;
  std::string_view source_;
  size_t pos_ = 0;
};

int32_t as_int32(uint64_t value) { return static_cast<int32_t>(static_cast<uint32_t>(value)); }

std::optional<int32_t> as_optional_id(uint64_t value) {
  const int32_t id = as_int32(value);
  if (id < 0) return std::nullopt;
  return id;
}

// Calls on_field(reader, field, wire_type) for each field of the message in `bytes`.
template <typename OnField>
void read_message(std::string_view bytes, size_t base, std::string_view source, OnField on_field) {
  WireReader reader(bytes, base, source);
  while (!reader.done()) {
    const uint64_t tag = reader.varint();
    const auto field = static_cast<uint32_t>(tag >> 3);
    const auto wire_type = static_cast<uint32_t>(tag & 7);
    if (field == 0) reader.malformed("field number 0");
    on_field(reader, field, wire_type);
  }
}

SpmPiece parse_piece(std::string_view bytes, size_t base, std::string_view source) {
  SpmPiece piece;
  read_message(bytes, base, source, [&](WireReader& r, uint32_t field, uint32_t wire_type) {
    if (field == 1) {
      r.expect(wire_type, kLengthDelimited, field);
      piece.text = std::string(r.length_delimited().first);
    } else if (field == 2) {
      r.expect(wire_type, kFixed32, field);
      piece.score = std::bit_cast<float>(r.fixed32());
    } else if (field == 3) {
      r.expect(wire_type, kVarint, field);
      const uint64_t number = r.varint();
      const auto token_type = token_type_from_number(static_cast<int64_t>(number));
      if (!token_type) r.malformed(fmt::format("unknown piece type {}", number));
      piece.type = *token_type;
    } else {
      r.skip(wire_type);
    }
  });
  return piece;
}

void parse_trainer_spec(std::string_view bytes, size_t base, std::string_view source, SpmModel& model) {
  read_message(bytes, base, source, [&](WireReader& r, uint32_t field, uint32_t wire_type) {
    const auto read_string = [&](std::string& out) {
      r.expect(wire_type, kLengthDelimited, field);
      out = std::string(r.length_delimited().first);
    };
    const auto read_varint = [&] {
      r.expect(wire_type, kVarint, field);
      return r.varint();
    };
    switch (field) {
      case 3:
        model.model_type = static_cast<SpmModelType>(as_int32(read_varint()));
        break;
      case 24:
        model.treat_whitespace_as_suffix = read_varint() != 0;
        break;
      case 35:
        model.byte_fallback = read_varint() != 0;
        break;
      case 40:
        model.unk_id = as_optional_id(read_varint());
        break;
      case 41:
        model.bos_id = as_optional_id(read_varint());
        break;
      case 42:
        model.eos_id = as_optional_id(read_varint());
        break;
      case 43:
        model.pad_id = as_optional_id(read_varint());
        break;
      case 45:
        read_string(model.unk_piece);
        break;
      case 46:
        read_string(model.bos_piece);
        break;
      case 47:
        read_string(model.eos_piece);
        break;
      case 48:
        read_string(model.pad_piece);
        break;
      default:
        r.skip(wire_type);
    }
  });
}

void parse_normalizer_spec(std::string_view bytes, size_t base, std::string_view source, SpmModel& model) {
  read_message(bytes, base, source, [&](WireReader& r, uint32_t field, uint32_t wire_type) {
    const auto read_bool = [&] {
      r.expect(wire_type, kVarint, field);
      return r.varint() != 0;
    };
    switch (field) {
      case 1:
        r.expect(wire_type, kLengthDelimited, field);
        model.normalizer_name = std::string(r.length_delimited().first);
        break;
      case 2:
        r.expect(wire_type, kLengthDelimited, field);
        model.precompiled_charsmap = std::string(r.length_delimited().first);
        break;
      case 3:
        model.add_dummy_prefix = read_bool();
        break;
      case 4:
        model.remove_extra_whitespaces = read_bool();
        break;
      case 5:
        model.escape_whitespaces = read_bool();
        break;
      default:
        r.skip(wire_type);
    }
  });
}

}  // namespace

std::string serialize_spm_model(const SpmModel& model) {
  WireWriter w;
  for (const SpmPiece& piece : model.pieces) w.bytes_field(1, serialize_piece(piece));
  w.bytes_field(2, serialize_trainer_spec(model));
  w.bytes_field(3, serialize_normalizer_spec(model));
  return std::move(w.str());
}

SpmModel parse_spm_model(std::string_view bytes, std::string_view source) {
  SpmModel model;
  read_message(bytes, 0, source, [&](WireReader& r, uint32_t field, uint32_t wire_type) {
    if (field < 1 || field > 3) {
      r.skip(wire_type);
      return;
    }
    r.expect(wire_type, kLengthDelimited, field);
    const auto [payload, base] = r.length_delimited();
    if (field == 1) model.pieces.push_back(parse_piece(payload, base, source));
    if (field == 2) parse_trainer_spec(payload, base, source, model);
    if (field == 3) parse_normalizer_spec(payload, base, source, model);
  });
  if (model.pieces.empty()) {
    fail(
        "{}: not a valid SentencePiece model (no pieces); check that the file is a "
        "SentencePiece tokenizer.model",
        source);
  }
  return model;
}

}  // namespace pagedgen
