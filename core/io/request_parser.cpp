#include "io/request_parser.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <string>

#include "io/json_line_errors.h"
#include "io/openai_batch_format.h"
#include "io/plain_format.h"
#include "util/error.h"

namespace pagedgen {

std::string_view request_format_name(RequestFormat format) {
  switch (format) {
    case RequestFormat::kPlain:
      return "plain";
    case RequestFormat::kOpenAiBatch:
      return "openai";
  }
  PG_CHECK(false, "unknown RequestFormat {}", static_cast<int>(format));
  return "";
}

std::optional<RequestFormat> detect_request_format(std::string_view line) {
  const simdjson::padded_string padded(line);
  simdjson::dom::parser validator;  // on-demand parsing alone would take a broken line's start
  simdjson::dom::element root;
  if (validator.parse(padded).get(root) != simdjson::SUCCESS || !root.is_object()) return std::nullopt;
  simdjson::ondemand::parser parser;
  simdjson::ondemand::document document;
  if (parser.iterate(padded).get(document) != simdjson::SUCCESS) return std::nullopt;
  return looks_like_openai_batch_line(document) ? RequestFormat::kOpenAiBatch : RequestFormat::kPlain;
}

struct RequestParser::State {
  RequestFormat format;
  SamplingParams defaults;
  simdjson::ondemand::parser parser;
  simdjson::dom::parser validator;                     // for lines that are not objects, see parse()
  json_fields::ResponseFormatReader response_formats;  // remembers the schemas it checked
  std::string buffer;                                  // the line plus SIMDJSON_PADDING bytes of capacity
};

RequestParser::RequestParser(RequestFormat format, const SamplingParams& defaults) : state_(std::make_unique<State>()) {
  validate(defaults);
  state_->format = format;
  state_->defaults = defaults;
}

RequestParser::~RequestParser() = default;
RequestParser::RequestParser(RequestParser&&) noexcept = default;
RequestParser& RequestParser::operator=(RequestParser&&) noexcept = default;

RequestItem RequestParser::parse(std::string_view line, uint64_t index, const StopToken& stop) {
  StopPoll poll(stop);
  std::string& buffer = state_->buffer;
  buffer.reserve(line.size() + simdjson::SIMDJSON_PADDING);
  buffer.assign(line);
  simdjson::ondemand::document document;
  const simdjson::error_code error =
      state_->parser.iterate(simdjson::padded_string_view(buffer.data(), buffer.size(), buffer.capacity()))
          .get(document);
  if (error == simdjson::UTF8_ERROR)
    return RequestError{index, std::nullopt, std::string(request_error::kInvalidUtf8),
                        "the line is not valid UTF-8; re-encode the input file as UTF-8"};
  if (error) {
    try {
      json_fields::throw_unparsed_json_error(error, line);
    } catch (const json_fields::LineError& line_error) {
      return RequestError{index, std::nullopt, std::string(line_error.code), line_error.message};
    }
  }
  // On-demand parsing judges a scalar by its first byte ("not json" looks like null): a line
  // that is not an object is parsed whole, so that invalid JSON is called invalid JSON.
  simdjson::ondemand::json_type root_type{};
  if (document.type().get(root_type) == simdjson::SUCCESS && root_type != simdjson::ondemand::json_type::object) {
    if (const simdjson::error_code dom_error = state_->validator.parse(buffer).error())
      return RequestError{index, std::nullopt, std::string(request_error::kInvalidJson),
                          fmt::format("the line is not valid JSON: {}", json_fields::short_json_message(dom_error))};
  }
  switch (state_->format) {
    case RequestFormat::kPlain:
      return parse_plain_request(document, buffer.data(), index, state_->defaults, state_->response_formats, poll);
    case RequestFormat::kOpenAiBatch:
      return parse_openai_batch_request(document, buffer.data(), index, state_->defaults, state_->response_formats,
                                        poll);
  }
  PG_CHECK(false, "unknown RequestFormat {}", static_cast<int>(state_->format));
  return RequestError{};
}

}  // namespace pagedgen
