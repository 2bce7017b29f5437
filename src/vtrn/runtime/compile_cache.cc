#include "vtrn/runtime/compile_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <thread>

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
// Files
//===----------------------------------------------------------------------===//

bool write_file_atomic(const std::string& path, std::string_view bytes, std::string* error) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path target(path);
  fs::create_directories(target.parent_path(), ec);
  if (ec) {
    *error = "cannot create " + target.parent_path().string() + ": " + ec.message();
    return false;
  }
  static std::atomic<std::uint64_t> counter{0};
  std::random_device rd;
  const std::string tmp = (target.parent_path() /
                           ("." + target.filename().string() + "." + std::to_string(::getpid()) +
                            "." + std::to_string(counter++) + "." + std::to_string(rd()) + ".tmp"))
                              .string();
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
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
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    *error = "cannot rename " + tmp + " to " + path + ": " + std::strerror(errno);
    ::unlink(tmp.c_str());
    return false;
  }
  return true;
}

namespace {

bool read_file(const std::string& path, std::vector<std::uint8_t>* out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  f.seekg(0, std::ios::end);
  const std::streamoff n = f.tellg();
  if (n < 0) return false;
  f.seekg(0);
  out->resize(static_cast<std::size_t>(n));
  f.read(reinterpret_cast<char*>(out->data()), n);
  return static_cast<bool>(f) || f.eof();
}

}  // namespace

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
  return sha256_hex(s);
}

std::string CompileCache::neff_path(const std::string& key) const {
  return config_.neff_dir + "/" + key + ".neff";
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

void CompileCache::warn(const std::string& msg) {
  std::function<void(const std::string&)> fn;
  {
    std::lock_guard<std::mutex> lock(mu_);
    fn = warning_;
  }
  if (fn)
    fn(msg);
  else
    std::cerr << "vtrn: warning: " << msg << std::endl;
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
  const bool disk = !config_.neff_dir.empty();
  const std::string path = disk ? neff_path(r.key) : "";
  bool corrupt = false;
  if (disk) {
    std::vector<std::uint8_t> bytes;
    if (read_file(path, &bytes)) {
      try {
        auto exe = std::make_shared<const LoadedExecutable>(compiler::deserialize(bytes));
        std::lock_guard<std::mutex> lock(mu_);
        ++counters_.disk_hits;
        memory_[r.key] = exe;
        r.executable = exe;
        r.source = CacheSource::kDisk;
        return r;
      } catch (const compiler::FormatError& e) {
        corrupt = true;
        warn("compile cache entry " + path + " is corrupt (" + e.what() +
             "); recompiling and replacing it");
      }
    }
  }
  compiler::Executable exe = compiler::compile(module, options);
  if (before_store_) before_store_();
  if (disk) {
    const std::vector<std::uint8_t> bytes = compiler::serialize(exe);
    std::string err;
    if (!write_file_atomic(
            path, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()),
            &err))
      warn("cannot store the compiled executable in the cache (" + err +
           "); set TORCH_NEURONX_NEFF_CACHE_DIR to a writable directory");
  }
  if (!config_.hlo_dir.empty()) {
    std::string err;
    if (!write_file_atomic(config_.hlo_dir + "/" + r.key + ".mlir", printed, &err))
      warn("cannot store the HLO text (" + err + ")");
  }
  auto loaded = std::make_shared<const LoadedExecutable>(std::move(exe));
  std::lock_guard<std::mutex> lock(mu_);
  ++counters_.compiles;
  if (corrupt) ++counters_.corrupt_replaced;
  memory_[r.key] = loaded;
  r.executable = loaded;
  r.source = CacheSource::kCompiled;
  return r;
}

}  // namespace vtrn::runtime
