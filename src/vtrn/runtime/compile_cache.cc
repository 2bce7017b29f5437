#include "vtrn/runtime/compile_cache.h"

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <random>

#include "vtrn/hlo/printer.h"

namespace vtrn::runtime {

//===----------------------------------------------------------------------===//
// SHA-256 (FIPS 180-4)
//===----------------------------------------------------------------------===//

namespace {

constexpr std::uint32_t kK[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

inline std::uint32_t rotr(std::uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

void sha256_block(std::uint32_t h[8], const std::uint8_t* p) {
  std::uint32_t w[64];
  for (int i = 0; i < 16; ++i)
    w[i] = (std::uint32_t(p[4 * i]) << 24) | (std::uint32_t(p[4 * i + 1]) << 16) |
           (std::uint32_t(p[4 * i + 2]) << 8) | p[4 * i + 3];
  for (int i = 16; i < 64; ++i) {
    const std::uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
    const std::uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  std::uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
  for (int i = 0; i < 64; ++i) {
    const std::uint32_t S1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
    const std::uint32_t ch = (e & f) ^ (~e & g);
    const std::uint32_t t1 = hh + S1 + ch + kK[i] + w[i];
    const std::uint32_t S0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
    const std::uint32_t mj = (a & b) ^ (a & c) ^ (b & c);
    const std::uint32_t t2 = S0 + mj;
    hh = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  h[0] += a;
  h[1] += b;
  h[2] += c;
  h[3] += d;
  h[4] += e;
  h[5] += f;
  h[6] += g;
  h[7] += hh;
}

}  // namespace

std::string sha256_hex(std::string_view data) {
  std::uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                        0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  const auto* p = reinterpret_cast<const std::uint8_t*>(data.data());
  std::size_t n = data.size();
  std::size_t i = 0;
  for (; i + 64 <= n; i += 64) sha256_block(h, p + i);
  std::uint8_t tail[128] = {};
  const std::size_t rem = n - i;
  std::memcpy(tail, p + i, rem);
  tail[rem] = 0x80;
  const std::size_t len = rem + 9 <= 64 ? 64 : 128;
  const std::uint64_t bits = static_cast<std::uint64_t>(n) * 8;
  for (int k = 0; k < 8; ++k) tail[len - 1 - k] = static_cast<std::uint8_t>(bits >> (8 * k));
  sha256_block(h, tail);
  if (len == 128) sha256_block(h, tail + 64);
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (std::uint32_t v : h)
    for (int s = 28; s >= 0; s -= 4) out += kHex[(v >> s) & 15];
  return out;
}

//===----------------------------------------------------------------------===//
// Entries
//===----------------------------------------------------------------------===//

namespace {

constexpr char kEntryMagic[8] = {'V', 'T', 'R', 'N', 'C', 'E', 'N', 'T'};
constexpr std::uint32_t kEntryVersion = 1;
constexpr std::size_t kKeyChars = 64;
constexpr std::uint32_t kEntryHeaderBytes = 8 + 4 + 4 + kKeyChars + kKeyChars + 8;

template <typename T>
void put(std::vector<std::uint8_t>& out, T v) {
  const auto* p = reinterpret_cast<const std::uint8_t*>(&v);
  out.insert(out.end(), p, p + sizeof(T));
}

template <typename T>
T get(const std::uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

std::string_view as_chars(std::span<const std::uint8_t> bytes) {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

std::string short_key(std::string_view key) {
  std::string s;
  for (char c : key.substr(0, 16)) s += std::isxdigit(static_cast<unsigned char>(c)) ? c : '?';
  return s + "...";
}

}  // namespace

std::vector<std::uint8_t> encode_entry(std::string_view key, std::span<const std::uint8_t> body) {
  if (key.size() != kKeyChars)
    throw std::invalid_argument("a cache key is 64 hex digits, got " + std::to_string(key.size()));
  std::vector<std::uint8_t> out(kEntryMagic, kEntryMagic + 8);
  out.reserve(kEntryHeaderBytes + body.size());
  put<std::uint32_t>(out, kEntryVersion);
  put<std::uint32_t>(out, kEntryHeaderBytes);
  out.insert(out.end(), key.begin(), key.end());
  const std::string digest = sha256_hex(as_chars(body));
  out.insert(out.end(), digest.begin(), digest.end());
  put<std::uint64_t>(out, body.size());
  out.insert(out.end(), body.begin(), body.end());
  return out;
}

std::span<const std::uint8_t> decode_entry(std::span<const std::uint8_t> entry,
                                           std::string_view key) {
  using compiler::FormatError;
  if (entry.size() < kEntryHeaderBytes)
    throw FormatError("truncated: " + std::to_string(entry.size()) +
                      " bytes, the header alone is " + std::to_string(kEntryHeaderBytes));
  const std::uint8_t* p = entry.data();
  if (std::memcmp(p, kEntryMagic, 8) != 0) throw FormatError("not a vtrn cache entry (bad magic)");
  const auto version = get<std::uint32_t>(p + 8);
  if (version != kEntryVersion)
    throw FormatError("entry format version " + std::to_string(version) +
                      " is not supported (this build reads version " +
                      std::to_string(kEntryVersion) + ")");
  if (get<std::uint32_t>(p + 12) != kEntryHeaderBytes)
    throw FormatError("the entry header size is wrong");
  const std::string_view stored_key(reinterpret_cast<const char*>(p + 16), kKeyChars);
  if (stored_key != key)
    throw FormatError("it holds the executable compiled for key " + short_key(stored_key) +
                      ", not for " + short_key(key) +
                      " (an entry copied, moved or linked from another key)");
  const std::string_view digest(reinterpret_cast<const char*>(p + 16 + kKeyChars), kKeyChars);
  const auto size = get<std::uint64_t>(p + 16 + 2 * kKeyChars);
  const std::size_t have = entry.size() - kEntryHeaderBytes;
  if (size != have)
    throw FormatError("its executable is " + std::to_string(have) + " bytes, the header says " +
                      std::to_string(size) + " (truncated or padded)");
  const auto body = entry.subspan(kEntryHeaderBytes);
  if (sha256_hex(as_chars(body)) != digest)
    throw FormatError("the SHA-256 of its executable does not match the header (corrupted)");
  return body;
}

//===----------------------------------------------------------------------===//
// Files and directories
//===----------------------------------------------------------------------===//

namespace {

std::string user_name(uid_t uid) {
  std::vector<char> buf(16384);
  passwd pw{}, *found = nullptr;
  if (::getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) == 0 && found && pw.pw_name)
    return " (" + std::string(pw.pw_name) + ")";
  return "";
}

std::string uid_str(uid_t uid) { return "uid " + std::to_string(uid) + user_name(uid); }

std::string mode_str(mode_t mode) {
  char s[8];
  std::snprintf(s, sizeof s, "%04o", static_cast<unsigned>(mode & 07777));
  return s;
}

std::string file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "not a regular file";
}

std::string parent_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

std::string unsafe_cache_dir_reason(const std::string& dir, uid_t uid) {
  struct stat link_st {};
  if (::lstat(dir.c_str(), &link_st) != 0)
    return "cannot be examined: " + std::string(std::strerror(errno));
  if (S_ISLNK(link_st.st_mode) && link_st.st_uid != uid)
    return "is a symbolic link owned by " + uid_str(link_st.st_uid) + ", not by you (" +
           uid_str(uid) + ")";
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0)
    return "cannot be examined: " + std::string(std::strerror(errno));
  if (!S_ISDIR(st.st_mode)) return "is " + file_kind(st.st_mode) + ", not a directory";
  if (st.st_uid != uid)
    return "is owned by " + uid_str(st.st_uid) + " (mode " + mode_str(st.st_mode) +
           "), not by you (" + uid_str(uid) + ")";
  if (st.st_mode & (S_IWGRP | S_IWOTH))
    return "has mode " + mode_str(st.st_mode) + " (owner " + uid_str(st.st_uid) +
           "): group or others can write it";
  return "";
}

bool make_private_dirs(const std::string& dir, std::string* error) {
  std::string prefix;
  std::size_t pos = 0;
  while (pos <= dir.size()) {
    const std::size_t next = std::min(dir.find('/', pos), dir.size());
    prefix = dir.substr(0, next);
    pos = next + 1;
    if (prefix.empty() || prefix.back() == '/') continue;  // the root, or a doubled slash
    if (::mkdir(prefix.c_str(), 0700) != 0 && errno != EEXIST) {
      // Some filesystems report EACCES or EROFS for a directory that already exists.
      const int e = errno;
      struct stat st {};
      if (::stat(prefix.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) continue;
      *error = "cannot create " + prefix + ": " + std::strerror(e);
      return false;
    }
  }
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    *error = dir + " exists and is not a directory";
    return false;
  }
  return true;
}

ReadStatus read_private_file(const std::string& path, uid_t uid, std::uint64_t max_bytes,
                             std::vector<std::uint8_t>* out, std::string* problem) {
  // O_NONBLOCK: opening a FIFO returns at once instead of waiting for a writer (fstat then
  // refuses it). O_NOFOLLOW: a symlink at |path| fails with ELOOP instead of being followed.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    if (errno == ENOENT) return ReadStatus::kMissing;
    *problem = errno == ELOOP || errno == EMLINK
                   ? "it is a symbolic link, which the cache never follows"
                   : "it cannot be opened: " + std::string(std::strerror(errno));
    return ReadStatus::kRejected;
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    *problem = "it cannot be examined: " + std::string(std::strerror(errno));
    return ReadStatus::kRejected;
  }
  if (!S_ISREG(st.st_mode)) {
    *problem = "it is " + file_kind(st.st_mode) + ", not a regular file";
    return ReadStatus::kRejected;
  }
  if (st.st_uid != uid) {
    *problem = "it is owned by " + uid_str(st.st_uid) + ", not by you (" + uid_str(uid) + ")";
    return ReadStatus::kRejected;
  }
  const auto size = static_cast<std::uint64_t>(st.st_size);
  if (size > max_bytes) {
    *problem = "it is " + std::to_string(size) + " bytes, more than the limit of " +
               std::to_string(max_bytes);
    return ReadStatus::kRejected;
  }
  // One byte more than fstat said, to notice a file that grows while it is read.
  out->resize(static_cast<std::size_t>(size) + 1);
  std::size_t got = 0;
  while (got < out->size()) {
    const ssize_t n = ::read(fd, out->data() + got, out->size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      *problem = "it cannot be read: " + std::string(std::strerror(errno));
      return ReadStatus::kRejected;
    }
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  if (got != size) {
    *problem = "it changed size while it was read (" + std::to_string(size) + " bytes, then " +
               std::to_string(got) + ")";
    return ReadStatus::kRejected;
  }
  out->resize(got);
  return ReadStatus::kOk;
}

bool write_file_atomic(const std::string& path, std::string_view bytes, std::string* error) {
  const std::string dir = parent_of(path);
  if (!make_private_dirs(dir, error)) return false;
  static std::atomic<std::uint64_t> counter{0};
  std::random_device rd;
  const std::string name = path.substr(path.find_last_of('/') + 1);
  const std::string tmp = dir + "/." + name + "." + std::to_string(::getpid()) + "." +
                          std::to_string(counter++) + "." + std::to_string(rd()) + ".tmp";
  // O_EXCL: a fresh file, never one planted (or a symlink) at the temp name.
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    *error = "cannot create " + tmp + ": " + std::strerror(errno);
    return false;
  }
  std::size_t off = 0;
  while (off < bytes.size()) {
    const ssize_t w = ::write(fd, bytes.data() + off, bytes.size() - off);
    if (w < 0) {
      if (errno == EINTR) continue;
      *error = "cannot write " + tmp + ": " + std::strerror(errno);
      ::close(fd);
      ::unlink(tmp.c_str());
      return false;
    }
    off += static_cast<std::size_t>(w);
  }
  if (::close(fd) != 0) {
    *error = "cannot write " + tmp + ": " + std::strerror(errno);
    ::unlink(tmp.c_str());
    return false;
  }
  // rename() replaces a file, FIFO or symlink at |path| (the link itself, not its target).
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    *error = "cannot rename " + tmp + " to " + path + ": " + std::strerror(e);
    if (e == EISDIR || e == ENOTEMPTY || e == EEXIST)
      *error += " (a directory is in the way; remove it)";
    ::unlink(tmp.c_str());
    return false;
  }
  return true;
}

//===----------------------------------------------------------------------===//
// The cache
//===----------------------------------------------------------------------===//

std::string_view cache_source_name(CacheSource s) {
  switch (s) {
    case CacheSource::kCompiled:
      return "compiled";
    case CacheSource::kMemory:
      return "memory";
    case CacheSource::kDisk:
      return "disk";
  }
  return "?";
}

CompileCache::Config CompileCache::config_from_env() {
  Config c;
  const char* neff = std::getenv("TORCH_NEURONX_NEFF_CACHE_DIR");
  c.neff_dir = neff && *neff ? neff : "/tmp/neff_cache";
  const char* hlo = std::getenv("TORCH_NEURONX_HLO_CACHE_DIR");
  if (hlo && *hlo) c.hlo_dir = hlo;
  return c;
}

std::string private_fallback_dir(uid_t uid) { return "/tmp/neff_cache-" + std::to_string(uid); }

CompileCache::CompileCache(Config config) : config_(std::move(config)) {}

CompileCache& CompileCache::global() {
  static CompileCache cache;
  return cache;
}

std::string CompileCache::key_for(std::string_view printed,
                                  const compiler::CompileOptions& options) {
  std::string s(printed);
  s += '\0';
  s += options.key();
  s += '\0';
  s += compiler::kCompilerVersion;
  // The entry format too: an entry written in another format (by an older vtrn) is then a plain
  // miss under another name, not a fault to warn about at every op after an upgrade.
  s += '\0';
  s += "entry format " + std::to_string(kEntryVersion);
  return sha256_hex(s);
}

void CompileCache::resolve_neff_dir() {
  std::call_once(resolved_, [this] {
    const std::string configured = config_.neff_dir;
    if (configured.empty()) return;
    const uid_t uid = ::geteuid();
    std::string error;
    if (!make_private_dirs(configured, &error)) {
      config_.neff_dir.clear();
      warn("the compile cache directory " + configured + " cannot be used (" + error +
           "); executables are not cached on disk. Set TORCH_NEURONX_NEFF_CACHE_DIR to a "
           "directory you can write.");
      return;
    }
    const std::string reason = unsafe_cache_dir_reason(configured, uid);
    if (reason.empty()) return;
    const std::string fix = "To use " + configured + ", make it yours and private (chown " +
                            std::to_string(uid) + " " + configured + " && chmod go-w " +
                            configured +
                            "), or set TORCH_NEURONX_NEFF_CACHE_DIR to a directory only you "
                            "can write.";
    const std::string fallback = config_.fallback_dir;
    std::string fallback_problem;
    if (fallback.empty())
      fallback_problem = "none is configured";
    else if (fallback == configured)
      fallback_problem = "it is the same directory";
    else if (make_private_dirs(fallback, &fallback_problem))
      fallback_problem = unsafe_cache_dir_reason(fallback, uid);
    if (fallback_problem.empty()) {
      config_.neff_dir = fallback;
      warn("the compile cache directory " + configured + " " + reason +
           ": another user could plant or replace executables in it, so vtrn caches them in " +
           fallback + " instead. " + fix);
    } else {
      config_.neff_dir.clear();
      warn("the compile cache directory " + configured + " " + reason +
           ": another user could plant or replace executables in it, and the private fallback " +
           (fallback.empty() ? std::string("directory") : fallback) + " is not usable (" +
           fallback_problem + "); executables are not cached on disk. " + fix);
    }
  });
}

const CompileCache::Config& CompileCache::config() {
  resolve_neff_dir();
  return config_;
}

std::string CompileCache::neff_path(const std::string& key) {
  resolve_neff_dir();
  return config_.neff_dir.empty() ? "" : config_.neff_dir + "/" + key + ".neff";
}

CacheCounters CompileCache::counters() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counters_;
}

void CompileCache::clear_memory() {
  std::lock_guard<std::mutex> lock(mu_);
  memory_.clear();
}

void CompileCache::set_warning_handler(std::function<void(const std::string&)> fn) {
  std::lock_guard<std::mutex> lock(mu_);
  warning_ = std::move(fn);
}

namespace {

std::mutex& process_handler_mutex() {
  static std::mutex mu;
  return mu;
}

std::function<void(const std::string&)>& process_handler() {
  static std::function<void(const std::string&)> fn;
  return fn;
}

}  // namespace

void CompileCache::set_process_warning_handler(std::function<void(const std::string&)> fn) {
  std::lock_guard<std::mutex> lock(process_handler_mutex());
  process_handler() = std::move(fn);
}

void CompileCache::warn(const std::string& msg) {
  std::function<void(const std::string&)> fn;
  {
    std::lock_guard<std::mutex> lock(mu_);
    fn = warning_;
  }
  if (!fn) {
    std::lock_guard<std::mutex> lock(process_handler_mutex());
    fn = process_handler();
  }
  if (fn)
    fn(msg);
  else
    std::cerr << "vtrn: warning: " << msg << std::endl;
}

namespace {

std::string types_str(const hlo::Block& b, const std::vector<int>& values) {
  std::string s = "(";
  for (std::size_t i = 0; i < values.size(); ++i) s += (i ? ", " : "") + b.type(values[i]).str();
  return s + ")";
}

// The entry's executable must be what was asked for: same options, same signature. (The key and
// the SHA-256 already say so; this keeps a forged entry from writing past the caller's buffers.)
void check_matches(const compiler::Executable& exe, const hlo::Module& want,
                   const compiler::CompileOptions& options) {
  if (exe.options.key() != options.key())
    throw compiler::FormatError("it was compiled with options '" + exe.options.key() + "', not '" +
                                options.key() + "'");
  const hlo::Block& g = exe.module.main;
  const hlo::Block& w = want.main;
  const std::string got_in = types_str(g, g.args), want_in = types_str(w, w.args);
  const std::string got_out = types_str(g, g.results), want_out = types_str(w, w.results);
  if (got_in != want_in || got_out != want_out)
    throw compiler::FormatError("its executable maps " + got_in + " -> " + got_out + ", not " +
                                want_in + " -> " + want_out);
}

}  // namespace

std::shared_ptr<const LoadedExecutable> CompileCache::load(const std::string& path,
                                                           const std::string& key,
                                                           const hlo::Module& module,
                                                           const compiler::CompileOptions& options,
                                                           bool* rejected) {
  std::vector<std::uint8_t> bytes;
  std::string problem;
  switch (read_private_file(path, ::geteuid(), kMaxEntryBytes, &bytes, &problem)) {
    case ReadStatus::kMissing:
      return nullptr;
    case ReadStatus::kOk:
      try {
        compiler::Executable exe = compiler::deserialize(decode_entry(bytes, key));
        check_matches(exe, module, options);
        return std::make_shared<const LoadedExecutable>(std::move(exe));
      } catch (const std::exception& e) {
        problem = e.what();
      }
      break;
    case ReadStatus::kRejected:
      break;
  }
  *rejected = true;
  warn("compile cache entry " + path + " was rejected: " + problem +
       ". Recompiling it and replacing the entry.");
  return nullptr;
}

void CompileCache::store(const std::string& path, const std::string& key,
                         const compiler::Executable& exe) {
  const std::vector<std::uint8_t> entry = encode_entry(key, compiler::serialize(exe));
  std::string error;
  if (entry.size() > kMaxEntryBytes)
    error = "the entry is " + std::to_string(entry.size()) + " bytes, more than the limit of " +
            std::to_string(kMaxEntryBytes);
  else if (write_file_atomic(path, as_chars(entry), &error))
    return;
  // Once per cache: a read-only directory would otherwise warn for every op.
  if (store_failure_reported_.exchange(true)) return;
  warn("cannot store a compiled executable in the compile cache (" + error +
       "); it is recompiled in the next process. Set TORCH_NEURONX_NEFF_CACHE_DIR to a "
       "directory you can write. Further failures to store are not reported.");
}

void CompileCache::store_hlo_text(const std::string& key, const std::string& printed,
                                  bool unless_present) {
  if (config_.hlo_dir.empty()) return;
  const std::string path = config_.hlo_dir + "/" + key + ".mlir";
  struct stat st {};
  if (unless_present && ::lstat(path.c_str(), &st) == 0) return;
  std::string err;
  if (!write_file_atomic(path, printed, &err)) warn("cannot store the HLO text (" + err + ")");
}

CacheResult CompileCache::get_or_compile(const hlo::Module& module,
                                         const compiler::CompileOptions& options) {
  const std::string printed = hlo::print_module(module);
  CacheResult r;
  r.key = key_for(printed, options);
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = memory_.find(r.key);
    if (it != memory_.end()) {
      ++counters_.memory_hits;
      r.executable = it->second;
      r.source = CacheSource::kMemory;
      return r;
    }
  }
  const std::string path = neff_path(r.key);
  bool rejected = false;
  if (!path.empty()) {
    if (auto exe = load(path, r.key, module, options, &rejected)) {
      // The HLO text cache holds every module lowered, also those whose executable an
      // earlier process (perhaps without TORCH_NEURONX_HLO_CACHE_DIR) compiled.
      store_hlo_text(r.key, printed, /*unless_present=*/true);
      std::lock_guard<std::mutex> lock(mu_);
      ++counters_.disk_hits;
      memory_[r.key] = exe;
      r.executable = exe;
      r.source = CacheSource::kDisk;
      return r;
    }
  }
  compiler::Executable exe = compiler::compile(module, options);
  if (before_store_) before_store_();
  if (!path.empty()) store(path, r.key, exe);
  store_hlo_text(r.key, printed, /*unless_present=*/false);
  auto loaded = std::make_shared<const LoadedExecutable>(std::move(exe));
  std::lock_guard<std::mutex> lock(mu_);
  ++counters_.compiles;
  if (rejected) ++counters_.corrupt_replaced;
  memory_[r.key] = loaded;
  r.executable = loaded;
  r.source = CacheSource::kCompiled;
  return r;
}

}  // namespace vtrn::runtime
