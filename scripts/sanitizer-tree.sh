# shellcheck shell=bash
# Sourced by scripts/fuzz.sh and scripts/test.sh, not run: the one build tree compiled with
# clang, AddressSanitizer and UndefinedBehaviorSanitizer, which holds both the libFuzzer
# targets (tests/fuzz) and pagedgen_model_file_tests (model-file readers and `pagedgen` on
# corrupt files), so the core libraries are compiled with the sanitizers once, not twice.
# Unoptimised with line tables only: compiling is most of its cost (a sanitized -O2 object
# takes about twice as long), and line tables are what a sanitizer report needs.

# shellcheck disable=SC2034 # used by the scripts that source this one
sanitizer_tree=build-fuzz

# configure_sanitizer_tree: configures $sanitizer_tree (quietly: its log, configure.log there, is
# printed on failure).
configure_sanitizer_tree() {
  if ! command -v clang++ >/dev/null; then
    echo "$(basename "$0" .sh): clang++ is missing; run scripts/install-deps.sh" >&2
    return 2
  fi
  mkdir -p "$sanitizer_tree"
  cmake -S . -B "$sanitizer_tree" -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG=-gline-tables-only -DCMAKE_CXX_FLAGS_DEBUG=-gline-tables-only \
    -DPAGEDGEN_FUZZ=ON -DPAGEDGEN_SANITIZE=ON -DPAGEDGEN_CUDA=OFF >"$sanitizer_tree/configure.log" 2>&1 || {
    cat "$sanitizer_tree/configure.log" >&2
    return 1
  }
}
