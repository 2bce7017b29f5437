// The compile cache: an in-memory map in front of a content-addressed store on disk, as
// TorchNeuron keeps NEFFs ("What is TorchNeuron?", "Caching and recompilation").
//
// Key: SHA-256 of (printed HLO, compiler options, compiler version, entry format), as 64 hex
// digits.
// Executables go to $TORCH_NEURONX_NEFF_CACHE_DIR/<key>.neff (default /tmp/neff_cache); when
// $TORCH_NEURONX_HLO_CACHE_DIR is set, the printed HLO goes to <dir>/<key>.mlir, whether the
// executable was compiled or found on disk.
//
// The cache directory is anyone's who can write it, so nothing read from it is trusted:
// - The directory must be owned by this process's effective user and not writable by group or
//   others (as pip requires of its cache). Otherwise the cache warns, naming the directory, its
//   owner and mode and the fix, and uses the private directory /tmp/neff_cache-<uid> (created
//   0700, and checked the same way) instead; when that is unusable too, nothing is cached on
//   disk. A directory that cannot be created only costs the disk copy (with a warning).
// - An entry records its key and the SHA-256 of its executable, and is opened without
//   following a symlink or blocking on a FIFO; it must be a regular file owned by this user and
//   at most kMaxEntryBytes. The executable's signature and options must match the request.
//   Any entry that fails a check is recompiled with a warning and replaced.
// - Entries and HLO text are written to a temp file in the same directory, then renamed, so a
//   writer killed mid-store leaves at most a stray ".<key>.neff.*.tmp" file, never a partial
//   entry, and concurrent writers of one key leave one valid entry.
// Warnings go to the warning handler (stderr by default; the torch layer turns them into
// Python UserWarnings).
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "vtrn/compiler/executable.h"
#include "vtrn/runtime/executor.h"

namespace vtrn::runtime {

/// The private per-user directory used when the configured one is not safe.
std::string private_fallback_dir(uid_t uid);  // "/tmp/neff_cache-<uid>"

struct CacheCounters {
  std::uint64_t compiles = 0;
  std::uint64_t memory_hits = 0;
  std::uint64_t disk_hits = 0;
  std::uint64_t corrupt_replaced = 0;  ///< entries rejected on load (any check), then recompiled
};

enum class CacheSource { kCompiled, kMemory, kDisk };
std::string_view cache_source_name(CacheSource s);  // "compiled", "memory", "disk"

struct CacheResult {
  std::shared_ptr<const LoadedExecutable> executable;
  CacheSource source = CacheSource::kCompiled;
  std::string key;
};

/// The largest cache entry read or written: 1 GiB. An executable holds printed HLO and a kernel
/// table (kilobytes for one op); a file larger than this is not an entry.
inline constexpr std::uint64_t kMaxEntryBytes = std::uint64_t{1} << 30;

class CompileCache {
 public:
  struct Config {
    std::string neff_dir;  ///< empty: no disk cache
    std::string hlo_dir;   ///< empty: HLO text is not stored
    /// Used instead of neff_dir when that is not safe; empty: no disk cache then.
    std::string fallback_dir = private_fallback_dir(::geteuid());
  };
  /// TORCH_NEURONX_NEFF_CACHE_DIR (default /tmp/neff_cache), TORCH_NEURONX_HLO_CACHE_DIR (unset:
  /// off), fallback_dir /tmp/neff_cache-<uid>.
  static Config config_from_env();

  explicit CompileCache(Config config = config_from_env());
  /// The process-wide cache, configured from the environment on first use.
  static CompileCache& global();

  /// The executable for |module| under |options|: from memory, from disk, or compiled (and stored).
  /// Throws hlo::Error when the module does not verify.
  CacheResult get_or_compile(const hlo::Module& module,
                             const compiler::CompileOptions& options = {});

  static std::string key_for(std::string_view printed_hlo, const compiler::CompileOptions& options);
  /// <neff dir in use>/<key>.neff ("" without a disk cache).
  std::string neff_path(const std::string& key);

  CacheCounters counters() const;
  void clear_memory();
  /// The configuration in use: neff_dir is the directory actually used (the private fallback
  /// when the configured one is not safe, "" when none is usable). The first call checks the
  /// directory (and may warn).
  const Config& config();

  /// Receives warnings (rejected entries, unsafe or unwritable directories). Default: the
  /// process-wide handler.
  void set_warning_handler(std::function<void(const std::string&)> fn);
  /// Receives the warnings of every cache without a handler of its own. Default: stderr. Setting
  /// it does not create global(), which reads the environment when first used.
  static void set_process_warning_handler(std::function<void(const std::string&)> fn);
  /// Called after a miss has been compiled, just before the executable is written to disk
  /// (tests use it to make several processes write the same entry at once).
  void set_before_store_hook(std::function<void()> fn) { before_store_ = std::move(fn); }

 private:
  void warn(const std::string& msg);
  void resolve_neff_dir();
  std::shared_ptr<const LoadedExecutable> load(const std::string& path, const std::string& key,
                                               const hlo::Module& module,
                                               const compiler::CompileOptions& options,
                                               bool* rejected);
  void store(const std::string& path, const std::string& key, const compiler::Executable& exe);
  /// Writes |printed| to the HLO text cache, if one is set (and, with |unless_present|, only
  /// where the key has no text there yet).
  void store_hlo_text(const std::string& key, const std::string& printed, bool unless_present);

  Config config_;
  std::once_flag resolved_;
  std::atomic<bool> store_failure_reported_{false};
  mutable std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<const LoadedExecutable>> memory_;
  CacheCounters counters_;
  std::function<void(const std::string&)> warning_;
  std::function<void()> before_store_;
};

/// SHA-256 of |data| as 64 lowercase hex digits.
std::string sha256_hex(std::string_view data);

/// A cache entry: "VTRNCENT" | u32 version | u32 header bytes (152) | 64 hex digits of the key |
/// 64 hex digits of the body's SHA-256 | u64 body bytes | body (compiler::serialize's bytes).
std::vector<std::uint8_t> encode_entry(std::string_view key, std::span<const std::uint8_t> body);
/// The body of |entry| when it is a well-formed entry for |key|; otherwise throws
/// compiler::FormatError saying what is wrong (another key's entry, truncated, corrupted).
std::span<const std::uint8_t> decode_entry(std::span<const std::uint8_t> entry,
                                           std::string_view key);

/// Why |dir| must not hold cache entries for the user |uid| ("" when it may): not a directory,
/// owned by another user, writable by group or others, or a symlink owned by another user.
std::string unsafe_cache_dir_reason(const std::string& dir, uid_t uid);

/// Creates |dir| and its missing parents, each with mode 0700. Returns false with |error| set.
bool make_private_dirs(const std::string& dir, std::string* error);

enum class ReadStatus { kOk, kMissing, kRejected };
/// Reads the regular file |path| into |out| without following a symlink at |path| or blocking
/// (a FIFO, directory or device is refused): it must be owned by |uid| and at most |max_bytes|.
/// kRejected sets |problem| to what is wrong with it.
ReadStatus read_private_file(const std::string& path, uid_t uid, std::uint64_t max_bytes,
                             std::vector<std::uint8_t>* out, std::string* problem);

/// Writes |bytes| to |path| atomically (a new temp file in the same directory, mode 0600, then
/// rename), creating the directory (0700). Returns false with |error| set on failure.
bool write_file_atomic(const std::string& path, std::string_view bytes, std::string* error);

}  // namespace vtrn::runtime
