#include "cublaslt_library.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <atomic>
#include <string>

#include "util/error.h"

namespace pagedgen::gpu {

namespace {

const std::string kLibraryName = fmt::format("libcublasLt.so.{}", CUBLAS_VER_MAJOR);

std::atomic<bool> loaded{false};

template <typename Function>
void resolve(void* library, Function& function, const char* name) {
  dlerror();
  void* symbol = dlsym(library, name);
  if (symbol == nullptr)
    fail("{} has no function {} ({}): it is not the cuBLASLt of CUDA {} this binary was built for", kLibraryName, name,
         dlerror(), CUBLAS_VER_MAJOR);
  function = reinterpret_cast<Function>(symbol);
}

CublasLt load() {
  // Never closed: its functions are used until the process ends.
  void* library = dlopen(kLibraryName.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr)
    fail(
        "the CUDA backend needs cuBLASLt, and {} could not be loaded ({}); install CUDA {}'s cuBLAS or put the "
        "directory holding it on LD_LIBRARY_PATH (the GPU bundle's env.sh does)",
        kLibraryName, dlerror(), CUBLAS_VER_MAJOR);
  CublasLt lt{};
  resolve(library, lt.create, "cublasLtCreate");
  resolve(library, lt.destroy, "cublasLtDestroy");
  resolve(library, lt.status_name, "cublasLtGetStatusName");
  resolve(library, lt.status_string, "cublasLtGetStatusString");
  resolve(library, lt.matmul, "cublasLtMatmul");
  resolve(library, lt.algo_get_heuristic, "cublasLtMatmulAlgoGetHeuristic");
  resolve(library, lt.desc_create, "cublasLtMatmulDescCreate");
  resolve(library, lt.desc_destroy, "cublasLtMatmulDescDestroy");
  resolve(library, lt.desc_set_attribute, "cublasLtMatmulDescSetAttribute");
  resolve(library, lt.preference_create, "cublasLtMatmulPreferenceCreate");
  resolve(library, lt.preference_destroy, "cublasLtMatmulPreferenceDestroy");
  resolve(library, lt.preference_set_attribute, "cublasLtMatmulPreferenceSetAttribute");
  resolve(library, lt.layout_create, "cublasLtMatrixLayoutCreate");
  resolve(library, lt.layout_destroy, "cublasLtMatrixLayoutDestroy");
  loaded = true;
  return lt;
}

}  // namespace

const std::string& cublaslt_library_name() { return kLibraryName; }

const CublasLt& cublaslt() {
  static const CublasLt lt = load();  // a failed load throws, and the next call tries again
  return lt;
}

bool cublaslt_loaded() { return loaded; }

}  // namespace pagedgen::gpu
