// The compile cache: memory and disk hits, a second process, corrupt entries, concurrent
// writers from several processes, the HLO text cache, and SHA-256 test vectors.
#include "vtrn/runtime/compile_cache.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "vtrn/hlo/builder.h"
#include "vtrn/hlo/parser.h"

extern char** environ;

namespace vtrn::runtime {
namespace {

namespace fs = std::filesystem;

hlo::Module module_under_test(int variant = 0) {
  hlo::Builder b("cached");
  hlo::TensorType t(hlo::DType::kF32, {64, 64});
  hlo::Value x = b.param(t);
  hlo::Value y =
      b.add(b.exp(x), b.broadcast_in_dim(b.scalar(hlo::DType::kF32, variant), t.dims, {}));
  return b.finish({b.reduce(y, b.scalar(hlo::DType::kF32, 0), {1}, hlo::ReduceKind::kAdd)});
}

fs::path fresh_dir(const std::string& name) {
  const fs::path p =
      fs::temp_directory_path() / ("vtrn_cache_test_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

std::vector<fs::path> files_in(const fs::path& dir) {
  std::vector<fs::path> v;
  for (const auto& e : fs::directory_iterator(dir)) v.push_back(e.path());
  return v;
}

// Runs this test binary's ChildMode test in a new process with |mode| and |dir|; returns a pid.
// With |barrier| (read end of a pipe, write end of another), the child reports when it has
// compiled a miss and waits for a byte before it writes the entry.
pid_t spawn_child(const std::string& mode, const fs::path& dir, const int* barrier = nullptr) {
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) env_strings.emplace_back(*e);
  env_strings.push_back("VTRN_CACHE_TEST_CHILD=" + mode);
  env_strings.push_back("VTRN_CACHE_TEST_DIR=" + dir.string());
  if (barrier)
    env_strings.push_back("VTRN_CACHE_TEST_BARRIER=" + std::to_string(barrier[0]) + "," +
                          std::to_string(barrier[1]));
  std::vector<char*> env;
  for (auto& s : env_strings) env.push_back(s.data());
  env.push_back(nullptr);
  std::string self = fs::read_symlink("/proc/self/exe").string();
  std::string filter = "--gtest_filter=CompileCacheTest.ChildMode";
  char* argv[] = {self.data(), filter.data(), nullptr};
  pid_t pid;
  if (posix_spawn(&pid, self.c_str(), nullptr, nullptr, argv, env.data()) != 0) return -1;
  return pid;
}

int wait_child(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100;
}

TEST(CompileCacheTest, ChildMode) {
  const char* mode = std::getenv("VTRN_CACHE_TEST_CHILD");
  if (!mode) GTEST_SKIP() << "helper for the multi-process tests";
  CompileCache cache({std::getenv("VTRN_CACHE_TEST_DIR"), ""});
  if (std::string(mode) == "race") {
    // Compile, report, wait for the others, then store; exit 0 if this process compiled.
    int go = -1, ready = -1;
    if (std::sscanf(std::getenv("VTRN_CACHE_TEST_BARRIER"), "%d,%d", &go, &ready) != 2)
      std::exit(7);
    cache.set_before_store_hook([&] {
      char byte = 'c';
      if (::write(ready, &byte, 1) != 1 || ::read(go, &byte, 1) != 1) std::exit(8);
    });
    CacheResult r = cache.get_or_compile(module_under_test());
    if (!r.executable) std::exit(4);
    std::exit(r.source == CacheSource::kCompiled ? 0 : r.source == CacheSource::kDisk ? 6 : 9);
  }
  CacheResult r = cache.get_or_compile(module_under_test());
  const CacheCounters c = cache.counters();
  if (std::string(mode) == "lookup")
    std::exit(c.compiles == 0 && c.disk_hits == 1 && r.source == CacheSource::kDisk ? 0 : 3);
  std::exit(r.executable ? 0 : 4);
}

TEST(CompileCacheTest, Sha256Vectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(CompileCacheTest, KeyDependsOnOptionsAndText) {
  compiler::CompileOptions a, b;
  b.fusion = false;
  EXPECT_NE(CompileCache::key_for("x", a), CompileCache::key_for("x", b));
  EXPECT_NE(CompileCache::key_for("x", a), CompileCache::key_for("y", a));
  EXPECT_EQ(CompileCache::key_for("x", a).size(), 64u);
}

TEST(CompileCacheTest, MemoryThenDiskHits) {
  const fs::path dir = fresh_dir("hits");
  CompileCache cache({dir.string(), ""});
  EXPECT_EQ(cache.get_or_compile(module_under_test()).source, CacheSource::kCompiled);
  EXPECT_EQ(cache.get_or_compile(module_under_test()).source, CacheSource::kMemory);
  compiler::CompileOptions no_fusion;
  no_fusion.fusion = false;
  EXPECT_EQ(cache.get_or_compile(module_under_test(), no_fusion).source, CacheSource::kCompiled);
  CacheCounters c = cache.counters();
  EXPECT_EQ(c.compiles, 2u);
  EXPECT_EQ(c.memory_hits, 1u);
  EXPECT_EQ(files_in(dir).size(), 2u);
  cache.clear_memory();
  CacheResult r = cache.get_or_compile(module_under_test());
  EXPECT_EQ(r.source, CacheSource::kDisk);
  EXPECT_EQ(cache.counters().disk_hits, 1u);
  // The loaded executable runs.
  HostTensor x(hlo::TensorType(hlo::DType::kF32, {64, 64}));
  auto out = r.executable->run({x});
  EXPECT_NEAR(out[0].get(0), 64.0, 1e-4);  // sum over 64 of exp(0) + 0
  fs::remove_all(dir);
}

TEST(CompileCacheTest, SecondProcessFindsTheEntry) {
  const fs::path dir = fresh_dir("second");
  CompileCache cache({dir.string(), ""});
  cache.get_or_compile(module_under_test());
  EXPECT_EQ(wait_child(spawn_child("lookup", dir)), 0)
      << "the second process compiled instead of loading";
  fs::remove_all(dir);
}

TEST(CompileCacheTest, CorruptAndTruncatedEntriesAreReplaced) {
  for (const std::string how : {"garbage", "truncated", "bitflip"}) {
    const fs::path dir = fresh_dir("corrupt");
    std::string key;
    {
      CompileCache cache({dir.string(), ""});
      key = cache.get_or_compile(module_under_test()).key;
    }
    const fs::path entry = dir / (key + ".neff");
    std::vector<char> bytes(fs::file_size(entry));
    {
      std::ifstream f(entry, std::ios::binary);
      f.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    }
    if (how == "garbage")
      bytes.assign(100, 'x');
    else if (how == "truncated")
      bytes.resize(bytes.size() / 2);
    else
      bytes[bytes.size() - 10] ^= 1;
    {
      std::ofstream f(entry, std::ios::binary | std::ios::trunc);
      f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    }
    CompileCache cache({dir.string(), ""});
    std::vector<std::string> warnings;
    cache.set_warning_handler([&](const std::string& w) { warnings.push_back(w); });
    CacheResult r = cache.get_or_compile(module_under_test());
    EXPECT_EQ(r.source, CacheSource::kCompiled) << how;
    EXPECT_EQ(cache.counters().corrupt_replaced, 1u) << how;
    ASSERT_EQ(warnings.size(), 1u) << how;
    EXPECT_NE(warnings[0].find("is corrupt"), std::string::npos) << warnings[0];
    // The entry on disk is valid again.
    CompileCache again({dir.string(), ""});
    EXPECT_EQ(again.get_or_compile(module_under_test()).source, CacheSource::kDisk) << how;
    fs::remove_all(dir);
  }
}

TEST(CompileCacheTest, ConcurrentWritersLeaveOneValidEntry) {
  const fs::path dir = fresh_dir("concurrent");
  // Barrier: every child compiles its miss, writes to |ready| and blocks on |go| until all
  // have, so the four writes of the same entry race for real.
  int go[2], ready[2];
  ASSERT_EQ(::pipe(go), 0);
  ASSERT_EQ(::pipe(ready), 0);
  const int barrier[2] = {go[0], ready[1]};
  constexpr int kChildren = 4;
  std::vector<pid_t> pids;
  for (int i = 0; i < kChildren; ++i) pids.push_back(spawn_child("race", dir, barrier));
  char bytes[kChildren];
  for (int got = 0; got < kChildren;) {
    pollfd pfd{ready[0], POLLIN, 0};
    ASSERT_EQ(::poll(&pfd, 1, 60000), 1) << "only " << got << " children reached the barrier";
    const ssize_t n = ::read(ready[0], bytes, sizeof bytes);
    ASSERT_GT(n, 0);
    got += static_cast<int>(n);
  }
  ASSERT_EQ(::write(go[1], bytes, kChildren), kChildren);
  int compiled = 0;
  for (pid_t p : pids) compiled += wait_child(p) == 0;
  for (int fd : {go[0], go[1], ready[0], ready[1]}) ::close(fd);
  EXPECT_EQ(compiled, kChildren) << "every child compiled before any stored";
  const auto files = files_in(dir);
  ASSERT_EQ(files.size(), 1u) << "temp files left behind or several entries";
  EXPECT_EQ(files[0].extension(), ".neff");
  CompileCache cache({dir.string(), ""});
  CacheResult r = cache.get_or_compile(module_under_test());
  EXPECT_EQ(r.source, CacheSource::kDisk);
  HostTensor x(hlo::TensorType(hlo::DType::kF32, {64, 64}));
  EXPECT_NEAR(r.executable->run({x})[0].get(0), 64.0, 1e-4);  // the entry that won is valid
  fs::remove_all(dir);
}

TEST(CompileCacheTest, HloTextCache) {
  const fs::path dir = fresh_dir("neff"), hdir = fresh_dir("hlo");
  CompileCache cache({dir.string(), hdir.string()});
  const std::string key = cache.get_or_compile(module_under_test()).key;
  const fs::path text = hdir / (key + ".mlir");
  ASSERT_TRUE(fs::exists(text));
  std::ifstream f(text);
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_NO_THROW(hlo::parse_module(s));
  fs::remove_all(dir);
  fs::remove_all(hdir);
}

TEST(CompileCacheTest, UnwritableDirectoryStillCompiles) {
  CompileCache cache({"/proc/vtrn_cannot_write_here", ""});
  std::vector<std::string> warnings;
  cache.set_warning_handler([&](const std::string& w) { warnings.push_back(w); });
  EXPECT_TRUE(cache.get_or_compile(module_under_test()).executable);
  EXPECT_EQ(warnings.size(), 1u);
}

TEST(CompileCacheTest, EnvironmentConfig) {
  ::unsetenv("TORCH_NEURONX_NEFF_CACHE_DIR");
  ::unsetenv("TORCH_NEURONX_HLO_CACHE_DIR");
  EXPECT_EQ(CompileCache::config_from_env().neff_dir, "/tmp/neff_cache");
  EXPECT_EQ(CompileCache::config_from_env().hlo_dir, "");
  ::setenv("TORCH_NEURONX_NEFF_CACHE_DIR", "/x/y", 1);
  ::setenv("TORCH_NEURONX_HLO_CACHE_DIR", "/x/h", 1);
  EXPECT_EQ(CompileCache::config_from_env().neff_dir, "/x/y");
  EXPECT_EQ(CompileCache::config_from_env().hlo_dir, "/x/h");
  ::unsetenv("TORCH_NEURONX_NEFF_CACHE_DIR");
  ::unsetenv("TORCH_NEURONX_HLO_CACHE_DIR");
}

}  // namespace
}  // namespace vtrn::runtime
