// The compile cache: memory and disk hits, a second process, concurrent writers from several
// processes, the HLO text cache, SHA-256 test vectors, and faults injected into the cache
// directory: substituted, truncated and corrupted entries, a FIFO, directory, symlink or oversized
// file at an entry path, entries owned by another user or unreadable, a read-only or unsafe
// directory, and a writer killed mid-store. Every fault ends in the correct result, a warning, and
// (where the directory allows) a valid entry; a hang fails the test through alarm().
#include "vtrn/runtime/compile_cache.h"

#include <grp.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "vtrn/hlo/builder.h"
#include "vtrn/hlo/parser.h"
#include "vtrn/hlo/printer.h"

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

// Runs this test binary as a child process (child_main) with |mode| and |dir|; returns a pid.
// With |barrier| (read end of a pipe, write end of another), the child reports when it has
// compiled a miss and waits for a byte before it writes the entry.
pid_t spawn_child(const std::string& mode, const fs::path& dir, const int* barrier = nullptr,
                  const std::vector<std::string>& extra_env = {}) {
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) env_strings.emplace_back(*e);
  for (const auto& e : extra_env) env_strings.push_back(e);
  env_strings.push_back("VTRN_CACHE_TEST_CHILD=" + mode);
  env_strings.push_back("VTRN_CACHE_TEST_DIR=" + dir.string());
  if (barrier)
    env_strings.push_back("VTRN_CACHE_TEST_BARRIER=" + std::to_string(barrier[0]) + "," +
                          std::to_string(barrier[1]));
  std::vector<char*> env;
  for (auto& s : env_strings) env.push_back(s.data());
  env.push_back(nullptr);
  std::string self = fs::read_symlink("/proc/self/exe").string();
  char* argv[] = {self.data(), nullptr};
  pid_t pid;
  if (posix_spawn(&pid, self.c_str(), nullptr, nullptr, argv, env.data()) != 0) return -1;
  return pid;
}

int wait_child(pid_t pid, int* signal = nullptr) {
  int status = 0;
  waitpid(pid, &status, 0);
  if (signal) *signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100;
}

std::vector<std::uint8_t> read_bytes(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

void write_bytes(const fs::path& p, std::span<const std::uint8_t> bytes) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

// sum over 64 columns of exp(0) + variant: what module_under_test(variant) returns for zeros.
double expected_sum(int variant) { return 64.0 * (1 + variant); }

double run_once(const CacheResult& r) {
  HostTensor x(hlo::TensorType(hlo::DType::kF32, {64, 64}));
  return r.executable->run({x})[0].get(0);
}

// A lookup in a fresh cache (a new process, as far as the cache can tell), with its warnings.
// alarm(): a lookup that hangs (a FIFO opened for reading) kills the test instead of hanging it.
struct Lookup {
  CacheResult result;
  std::vector<std::string> warnings;
  double value = 0;
  std::string all_warnings() const {
    std::string s;
    for (const auto& w : warnings) s += w + "\n";
    return s;
  }
};

Lookup lookup(const fs::path& dir, int variant = 0, const std::string& fallback = "") {
  CompileCache cache({dir.string(), "", fallback});
  Lookup l;
  cache.set_warning_handler([&](const std::string& w) { l.warnings.push_back(w); });
  ::alarm(60);
  l.result = cache.get_or_compile(module_under_test(variant));
  ::alarm(0);
  l.value = run_once(l.result);
  return l;
}

fs::path entry_path(const fs::path& dir, int variant = 0) {
  CompileCache cache({dir.string(), "", ""});
  return cache.neff_path(cache.get_or_compile(module_under_test(variant)).key);
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// Child modes, run by spawn_child(). Exit status 0: as expected; otherwise the failing line.
#define CHILD_CHECK(cond) \
  if (!(cond)) std::exit(__LINE__ % 200 + 10)

// The other process of the multi-process tests (not a test: main() runs it instead of the tests
// when VTRN_CACHE_TEST_CHILD is set).
[[noreturn]] void child_main(const char* mode_env) {
  const std::string mode = mode_env;
  const fs::path dir = std::getenv("VTRN_CACHE_TEST_DIR");
  if (mode == "unprivileged") {
    // Root reads anything: drop to nobody so that permissions apply.
    if (::geteuid() == 0)
      CHILD_CHECK(::setgroups(0, nullptr) == 0 && ::setgid(65534) == 0 && ::setuid(65534) == 0);
    char tmpl[] = "/tmp/vtrn_cache_test_perm_XXXXXX";
    CHILD_CHECK(::mkdtemp(tmpl) != nullptr);
    const fs::path own = tmpl;
    // An entry this user cannot read: rejected with the reason, recompiled and replaced.
    const fs::path entry = entry_path(own);
    CHILD_CHECK(::chmod(entry.c_str(), 0) == 0);
    Lookup l = lookup(own);
    CHILD_CHECK(l.result.source == CacheSource::kCompiled && l.value == expected_sum(0));
    CHILD_CHECK(l.warnings.size() == 1 && contains(l.warnings[0], "Permission denied"));
    CHILD_CHECK(lookup(own).result.source == CacheSource::kDisk);
    // A read-only directory: its entries load without a word; a miss compiles and warns once
    // that it cannot be stored.
    CHILD_CHECK(::chmod(own.c_str(), 0500) == 0);
    {
      CompileCache cache({own.string(), "", ""});
      std::vector<std::string> warnings;
      cache.set_warning_handler([&](const std::string& w) { warnings.push_back(w); });
      CHILD_CHECK(cache.get_or_compile(module_under_test(0)).source == CacheSource::kDisk);
      CHILD_CHECK(warnings.empty());
      for (int v : {1, 2}) {
        CacheResult r = cache.get_or_compile(module_under_test(v));
        CHILD_CHECK(r.source == CacheSource::kCompiled && run_once(r) == expected_sum(v));
      }
      CHILD_CHECK(warnings.size() == 1 && contains(warnings[0], "cannot store"));
    }
    ::chmod(own.c_str(), 0700);
    fs::remove_all(own);
    std::exit(0);
  }
  CompileCache cache({dir.string(), "", ""});
  if (mode == "killed") {
    // Writes beyond VTRN_CACHE_TEST_FSIZE bytes raise SIGXFSZ; its handler turns that into
    // SIGKILL, so the process dies in the middle of writing the entry.
    const rlim_t limit = std::strtoull(std::getenv("VTRN_CACHE_TEST_FSIZE"), nullptr, 10);
    const rlimit rl{limit, limit};
    CHILD_CHECK(::setrlimit(RLIMIT_FSIZE, &rl) == 0);
    std::signal(SIGXFSZ, [](int) { ::raise(SIGKILL); });
    cache.get_or_compile(module_under_test());
    std::exit(5);  // not reached
  }
  if (mode == "race") {
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
  if (mode == "lookup")
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
  // Builds that wrote bare executables keyed on (text, options, compiler version) alone: their
  // files are never read as entries, so an upgrade does not warn about each of them.
  const std::string before_entries =
      std::string("x") + '\0' + a.key() + '\0' + compiler::kCompilerVersion;
  EXPECT_NE(CompileCache::key_for("x", a), sha256_hex(before_entries));
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
    EXPECT_NE(warnings[0].find("was rejected"), std::string::npos) << warnings[0];
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

TEST(CompileCacheTest, EntryRecordsItsKey) {
  const std::string key = CompileCache::key_for("x", {}), other = CompileCache::key_for("y", {});
  const std::vector<std::uint8_t> body = {1, 2, 3, 4, 5};
  const std::vector<std::uint8_t> entry = encode_entry(key, body);
  const auto back = decode_entry(entry, key);
  EXPECT_EQ(std::vector<std::uint8_t>(back.begin(), back.end()), body);
  try {
    decode_entry(entry, other);
    FAIL() << "another key's entry was accepted";
  } catch (const compiler::FormatError& e) {
    EXPECT_TRUE(contains(e.what(), "compiled for key " + key.substr(0, 16))) << e.what();
    EXPECT_TRUE(contains(e.what(), "not for " + other.substr(0, 16))) << e.what();
  }
}

TEST(CompileCacheTest, EveryTruncationAndByteFlipIsRejected) {
  const fs::path dir = fresh_dir("every");
  const fs::path path = entry_path(dir);
  const std::string key = path.stem().string();
  const std::vector<std::uint8_t> entry = read_bytes(path);
  ASSERT_GT(entry.size(), 200u);
  ASSERT_NO_THROW(compiler::deserialize(decode_entry(entry, key)));
  for (std::size_t n = 0; n < entry.size(); ++n)
    EXPECT_THROW(decode_entry(std::span(entry).first(n), key), compiler::FormatError) << n;
  std::vector<std::uint8_t> bad = entry;
  for (std::size_t i = 0; i < entry.size(); ++i) {
    bad[i] ^= 0x01;
    EXPECT_THROW(decode_entry(bad, key), compiler::FormatError) << "byte " << i;
    bad[i] = entry[i];
  }
  // A sample through the cache: each is recompiled (correctly), reported and replaced.
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{151}, std::size_t{152},
                        std::size_t{153}, entry.size() / 2, entry.size() - 1}) {
    write_bytes(path, std::span(entry).first(n));
    Lookup l = lookup(dir);
    EXPECT_EQ(l.result.source, CacheSource::kCompiled) << n;
    EXPECT_EQ(l.value, expected_sum(0)) << n;
    ASSERT_EQ(l.warnings.size(), 1u) << n << ": " << l.all_warnings();
    EXPECT_TRUE(contains(l.warnings[0], path.string())) << l.warnings[0];
    EXPECT_EQ(read_bytes(path), entry) << "not replaced after truncation to " << n;
  }
  fs::remove_all(dir);
}

TEST(CompileCacheTest, SubstitutedEntryIsRecompiled) {
  // Module 1 adds 1 where module 0 adds 0: serving 0's executable for 1 gives 64, not 128.
  const fs::path dir = fresh_dir("substituted");
  const fs::path a = entry_path(dir, 0), b = entry_path(dir, 1);
  const std::vector<std::uint8_t> b_entry = read_bytes(b);
  fs::copy_file(a, b, fs::copy_options::overwrite_existing);
  Lookup l = lookup(dir, 1);
  EXPECT_EQ(l.result.source, CacheSource::kCompiled);
  EXPECT_EQ(l.value, expected_sum(1));
  ASSERT_EQ(l.warnings.size(), 1u) << l.all_warnings();
  EXPECT_TRUE(contains(l.warnings[0], "copied, moved or linked from another key")) << l.warnings[0];
  EXPECT_EQ(read_bytes(b), b_entry);
  EXPECT_EQ(lookup(dir, 1).result.source, CacheSource::kDisk);
  fs::remove_all(dir);
}

TEST(CompileCacheTest, NonFilesAtEntryPathsAreRefused) {
  // Each thing at the entry path, what the warning must say, and whether the entry can be
  // written afterwards (rename() replaces a FIFO or a symlink, not a directory).
  const fs::path dir = fresh_dir("nonfiles"), outside = fresh_dir("outside");
  const fs::path other = entry_path(dir, 1);     // a valid entry for another key
  const fs::path path = entry_path(outside, 0);  // a valid entry for this key, elsewhere
  const std::vector<std::uint8_t> good = read_bytes(path), other_bytes = read_bytes(other);
  const fs::path target = dir / path.filename();
  struct Case {
    std::string name, says;
    std::function<void()> plant;
    bool replaced;
  };
  const std::vector<Case> cases = {
      {"fifo", "a FIFO", [&] { ASSERT_EQ(::mkfifo(target.c_str(), 0600), 0); }, true},
      {"directory", "a directory",
       [&] {
         fs::create_directory(target);
         write_bytes(target / "x", good);
       },
       false},
      {"symlink to another key", "symbolic link", [&] { fs::create_symlink(other, target); }, true},
      {"symlink to this key", "symbolic link", [&] { fs::create_symlink(path, target); }, true},
      {"symlink to /dev/zero", "symbolic link", [&] { fs::create_symlink("/dev/zero", target); },
       true},
      {"dangling symlink", "symbolic link", [&] { fs::create_symlink(dir / "nowhere", target); },
       true},
  };
  for (const Case& c : cases) {
    fs::remove_all(target);
    c.plant();
    Lookup l = lookup(dir);
    EXPECT_EQ(l.result.source, CacheSource::kCompiled) << c.name;
    EXPECT_EQ(l.value, expected_sum(0)) << c.name;
    ASSERT_GE(l.warnings.size(), 1u) << c.name;
    EXPECT_TRUE(contains(l.warnings[0], c.says)) << c.name << ": " << l.warnings[0];
    if (c.replaced) {
      EXPECT_EQ(l.warnings.size(), 1u) << c.name << ": " << l.all_warnings();
      EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(target))) << c.name;
      EXPECT_EQ(read_bytes(target), good) << c.name;
    } else {
      ASSERT_EQ(l.warnings.size(), 2u) << c.name << ": " << l.all_warnings();
      EXPECT_TRUE(contains(l.warnings[1], "a directory is in the way")) << l.warnings[1];
    }
    // Nothing outside the cache directory was touched through a link.
    EXPECT_EQ(read_bytes(path), good) << c.name;
    EXPECT_EQ(read_bytes(other), other_bytes) << c.name;
  }
  fs::remove_all(dir);
  fs::remove_all(outside);
}

TEST(CompileCacheTest, OversizedOrForeignEntriesAreRefused) {
  const fs::path dir = fresh_dir("oversized");
  const fs::path path = entry_path(dir);
  std::vector<std::uint8_t> bytes;
  std::string problem;
  EXPECT_EQ(read_private_file(path.string(), ::geteuid(), kMaxEntryBytes, &bytes, &problem),
            ReadStatus::kOk);
  EXPECT_EQ(read_private_file(path.string(), ::geteuid() + 1, kMaxEntryBytes, &bytes, &problem),
            ReadStatus::kRejected);
  EXPECT_TRUE(contains(problem, "is owned by uid " + std::to_string(::geteuid()))) << problem;
  EXPECT_EQ(read_private_file((dir / "missing").string(), ::geteuid(), 10, &bytes, &problem),
            ReadStatus::kMissing);
  if (::geteuid() == 0) {  // only root can give a file away
    ASSERT_EQ(::chown(path.c_str(), 12345, 12345), 0);
    Lookup l = lookup(dir);
    EXPECT_EQ(l.value, expected_sum(0));
    ASSERT_EQ(l.warnings.size(), 1u) << l.all_warnings();
    EXPECT_TRUE(contains(l.warnings[0], "owned by uid 12345")) << l.warnings[0];
  }
  // A sparse file one byte over the limit is refused without being read.
  fs::remove(path);
  { std::ofstream f(path); }
  fs::resize_file(path, kMaxEntryBytes + 1);
  Lookup l = lookup(dir);
  EXPECT_EQ(l.value, expected_sum(0));
  ASSERT_EQ(l.warnings.size(), 1u) << l.all_warnings();
  EXPECT_TRUE(contains(l.warnings[0], "more than the limit of 1073741824")) << l.warnings[0];
  EXPECT_LT(fs::file_size(path), 100000u);
  fs::remove_all(dir);
}

TEST(CompileCacheTest, UnreadableEntryAndReadOnlyDirectory) {
  // In a child process that is not root (root ignores permissions).
  const fs::path unused = fresh_dir("unused");  // the child makes a directory of its own
  const pid_t pid = spawn_child("unprivileged", unused);
  ASSERT_GT(pid, 0);
  EXPECT_EQ(wait_child(pid), 0) << "see CHILD_CHECK: the status is the failing line % 200 + 10";
  fs::remove_all(unused);
}

TEST(CompileCacheTest, UnsafeDirectoriesAreNotUsed) {
  const fs::path dir = fresh_dir("unsafe"), parent = fresh_dir("fallback_parent");
  const uid_t me = ::geteuid();
  EXPECT_EQ(unsafe_cache_dir_reason(dir.string(), me), "");
  EXPECT_TRUE(contains(unsafe_cache_dir_reason(dir.string(), me + 1),
                       "is owned by uid " + std::to_string(me)));
  EXPECT_TRUE(contains(unsafe_cache_dir_reason(dir.string(), me + 1),
                       "not by you (uid " + std::to_string(me + 1)));
  write_bytes(dir / "file", std::vector<std::uint8_t>{1});
  EXPECT_TRUE(contains(unsafe_cache_dir_reason((dir / "file").string(), me), "not a directory"));
  fs::create_directory_symlink(dir, parent / "link");
  EXPECT_EQ(unsafe_cache_dir_reason((parent / "link").string(), me), "");
  if (me == 0) {
    ASSERT_EQ(::lchown((parent / "link").c_str(), 12345, 12345), 0);
    EXPECT_TRUE(contains(unsafe_cache_dir_reason((parent / "link").string(), me),
                         "symbolic link owned by uid 12345"));
  }
  // Writable by group, by others, or by others with the sticky bit (another user can still plant
  // an entry under a key not yet written): each falls back to the private directory.
  const fs::path fallback = parent / "private" / "neff";
  for (mode_t mode : {0770, 0777, 01777}) {
    ASSERT_EQ(::chmod(dir.c_str(), mode), 0);
    CompileCache cache({dir.string(), "", fallback.string()});
    std::vector<std::string> warnings;
    cache.set_warning_handler([&](const std::string& w) { warnings.push_back(w); });
    EXPECT_EQ(cache.config().neff_dir, fallback.string());
    CacheResult r = cache.get_or_compile(module_under_test());
    EXPECT_EQ(run_once(r), expected_sum(0));
    ASSERT_EQ(warnings.size(), 1u);
    char octal[8];
    std::snprintf(octal, sizeof octal, "%04o", static_cast<unsigned>(mode));
    for (const std::string part :
         {dir.string(), std::string("has mode ") + octal,
          std::string("group or others can write it"), fallback.string(),
          "chmod go-w " + dir.string(), std::string("TORCH_NEURONX_NEFF_CACHE_DIR")})
      EXPECT_TRUE(contains(warnings[0], part)) << part << " not in: " << warnings[0];
    EXPECT_TRUE(fs::exists(fallback / (r.key + ".neff")));
    EXPECT_FALSE(fs::exists(dir / (r.key + ".neff")));
    struct stat st {};
    ASSERT_EQ(::stat(fallback.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0700u);
  }
  // When the fallback is not safe either, nothing is cached on disk; compiling still works.
  ASSERT_EQ(::chmod(fallback.c_str(), 0777), 0);
  Lookup l = lookup(dir, 0, fallback.string());
  EXPECT_EQ(l.value, expected_sum(0));
  ASSERT_EQ(l.warnings.size(), 1u);
  EXPECT_TRUE(contains(l.warnings[0], "not cached on disk")) << l.warnings[0];
  EXPECT_TRUE(contains(l.warnings[0], "0777")) << l.warnings[0];
  ::chmod(dir.c_str(), 0700);
  fs::remove_all(dir);
  fs::remove_all(parent);
}

TEST(CompileCacheTest, WriterKilledMidStoreLeavesNoEntry) {
  const fs::path scratch = fresh_dir("killed_size");
  const std::size_t size = fs::file_size(entry_path(scratch));
  fs::remove_all(scratch);
  const fs::path dir = fresh_dir("killed");
  const std::size_t limit = size / 2;
  const pid_t pid =
      spawn_child("killed", dir, nullptr, {"VTRN_CACHE_TEST_FSIZE=" + std::to_string(limit)});
  ASSERT_GT(pid, 0);
  int signal = 0;
  wait_child(pid, &signal);
  ASSERT_EQ(signal, SIGKILL) << "the writer was not killed mid-store";
  // What the killed writer left: a partial temp file, never a partial entry.
  const auto files = files_in(dir);
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0].extension(), ".tmp");
  EXPECT_EQ(fs::file_size(files[0]), limit);
  Lookup l = lookup(dir);
  EXPECT_EQ(l.result.source, CacheSource::kCompiled);
  EXPECT_EQ(l.value, expected_sum(0));
  EXPECT_TRUE(l.warnings.empty()) << l.all_warnings();
  EXPECT_EQ(lookup(dir).result.source, CacheSource::kDisk);
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

// A process that finds the executable on disk still fills its HLO text cache: the NEFF cache
// may have been warmed by a run without one.
TEST(CompileCacheTest, HloTextCacheFilledOnADiskHit) {
  const fs::path dir = fresh_dir("neff-warm"), hdir = fresh_dir("hlo-late");
  std::string key;
  {
    CompileCache warm({dir.string(), ""});
    key = warm.get_or_compile(module_under_test()).key;
  }
  CompileCache cache({dir.string(), hdir.string()});
  ASSERT_EQ(cache.get_or_compile(module_under_test()).source, CacheSource::kDisk);
  const fs::path text = hdir / (key + ".mlir");
  ASSERT_TRUE(fs::exists(text));
  std::ifstream f(text);
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_EQ(s, hlo::print_module(module_under_test()));
  fs::remove_all(dir);
  fs::remove_all(hdir);
}

TEST(CompileCacheTest, UnwritableDirectoryStillCompiles) {
  CompileCache cache({"/proc/vtrn_cannot_write_here", "", ""});
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

int main(int argc, char** argv) {
  if (const char* mode = std::getenv("VTRN_CACHE_TEST_CHILD")) vtrn::runtime::child_main(mode);
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
