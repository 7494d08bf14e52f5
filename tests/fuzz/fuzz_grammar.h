// What the grammar fuzz targets share: a compiled grammar's checks against a small
// in-memory vocabulary (every byte, tokens that cross JSON syntax, one end-of-generation
// token; never a model file), walked a few tokens with every mask checked the slow way.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "grammar/compiled_grammar.h"

namespace pagedgen::fuzz {

// `grammar` compiled against the small vocabulary, its token classes included, as
// GrammarCache does for a real one.
std::shared_ptr<const CompiledGrammar> compile_for_small_vocabulary(Grammar grammar);

enum class FinishedText : uint8_t { kJson, kAny };

// Walks up to `max_steps` tokens of `grammar`, picking each allowed token from `choices`
// (the input's bytes). Aborts on a finding: a mask that differs from trying each token on
// a copy of the matcher (checked for the first `max_checked_steps` steps), an empty mask,
// an allowed token the matcher refuses, or (kJson) a finished text that is not one JSON
// value. Returns the text when the walk ended with the end-of-generation token.
std::optional<std::string> check_walk(const std::shared_ptr<const CompiledGrammar>& grammar, std::string_view choices,
                                      int max_steps, int max_checked_steps,
                                      FinishedText finished = FinishedText::kJson);

}  // namespace pagedgen::fuzz
