#include "job/input_loader.h"

#include <variant>

#include "io/request_reader.h"

namespace pagedgen {

LoadedInput load_input(std::istream& input, const SamplingParams& defaults, const PromptBuilder& builder) {
  LoadedInput loaded;
  RequestReader reader(input, defaults);
  while (std::optional<RequestItem> item = reader.next()) {
    std::visit(
        [&](auto& value) {
          loaded.indices.push_back(value.index);
          using T = std::decay_t<decltype(value)>;
          if constexpr (std::is_same_v<T, RequestError>) {
            loaded.errors.push_back(std::move(value));
          } else {
            auto built = builder.build(value);
            if (auto* error = std::get_if<RequestError>(&built))
              loaded.errors.push_back(std::move(*error));
            else
              loaded.requests.push_back(std::move(std::get<PreparedRequest>(built)));
          }
        },
        *item);
  }
  loaded.num_lines = reader.num_lines();
  loaded.num_blank_lines = reader.num_blank_lines();
  return loaded;
}

}  // namespace pagedgen
