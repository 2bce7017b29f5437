// The compile cache: an in-memory map in front of a content-addressed store on disk, as
// TorchNeuron keeps NEFFs (../shared/seeds/what-is-torchneuron.txt, "Caching and recompilation").
//
// Key: SHA-256 of (printed HLO, compiler options, compiler version), as 64 hex digits.
// Executables go to $TORCH_NEURONX_NEFF_CACHE_DIR/<key>.neff (default /tmp/neff_cache); when
// $TORCH_NEURONX_HLO_CACHE_DIR is set, the printed HLO goes to <dir>/<key>.mlir.
// Writes are atomic (a temp file in the same directory, then rename), so concurrent writers
// leave one valid entry. Loads verify the checksum; a corrupt or truncated entry is recompiled
// with a warning and replaced. A cache directory that cannot be written only costs the disk
// copy (with a warning); compiling still succeeds.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "vtrn/compiler/executable.h"
#include "vtrn/runtime/executor.h"

namespace vtrn::runtime {

struct CacheCounters {
  std::uint64_t compiles = 0;
  std::uint64_t memory_hits = 0;
  std::uint64_t disk_hits = 0;
  std::uint64_t corrupt_replaced = 0;
};

enum class CacheSource { kCompiled, kMemory, kDisk };
std::string_view cache_source_name(CacheSource s);  // "compiled", "memory", "disk"

struct CacheResult {
  std::shared_ptr<const LoadedExecutable> executable;
  CacheSource source = CacheSource::kCompiled;
  std::string key;
};

class CompileCache {
 public:
  struct Config {
    std::string neff_dir;  ///< empty: no disk cache
    std::string hlo_dir;   ///< empty: HLO text is not stored
  };
  /// TORCH_NEURONX_NEFF_CACHE_DIR (default /tmp/neff_cache), TORCH_NEURONX_HLO_CACHE_DIR (unset:
  /// off).
  static Config config_from_env();

  explicit CompileCache(Config config = config_from_env());
  /// The process-wide cache, configured from the environment on first use.
  static CompileCache& global();

  /// The executable for |module| under |options|: from memory, from disk, or compiled (and stored).
  /// Throws hlo::Error when the module does not verify.
  CacheResult get_or_compile(const hlo::Module& module,
                             const compiler::CompileOptions& options = {});

  static std::string key_for(std::string_view printed_hlo, const compiler::CompileOptions& options);
  std::string neff_path(const std::string& key) const;

  CacheCounters counters() const;
  void clear_memory();
  const Config& config() const { return config_; }

  /// Receives warnings (corrupt entries, unwritable directories). Default: stderr.
  void set_warning_handler(std::function<void(const std::string&)> fn);
  /// Called after a miss has been compiled, just before the executable is written to disk
  /// (tests use it to make several processes write the same entry at once).
  void set_before_store_hook(std::function<void()> fn) { before_store_ = std::move(fn); }

 private:
  void warn(const std::string& msg);
  Config config_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<const LoadedExecutable>> memory_;
  CacheCounters counters_;
  std::function<void(const std::string&)> warning_;
  std::function<void()> before_store_;
};

/// SHA-256 of |data| as 64 lowercase hex digits.
std::string sha256_hex(std::string_view data);

/// Writes |bytes| to |path| atomically (temp file in the same directory, then rename),
/// creating the directory. Returns false with |error| set on failure.
bool write_file_atomic(const std::string& path, std::string_view bytes, std::string* error);

}  // namespace vtrn::runtime
