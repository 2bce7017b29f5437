#include "vtrn/runtime/core_claim.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <vector>

namespace vtrn::runtime {

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// Field 22 of /proc/PID/stat: the start time in clock ticks since boot ("" if unreadable).
std::string start_time(int pid) {
  const std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  const auto close = stat.rfind(')');  // the command name may hold spaces and parentheses
  if (close == std::string::npos) return "";
  std::istringstream fields(stat.substr(close + 2));
  std::string field;
  for (int i = 3; i <= 22 && fields >> field; ++i) {
    if (i == 22) return field;
  }
  return "";
}

/// The value of |name| in /proc/PID/environ, or nullopt.
std::optional<std::string> environ_of(int pid, const char* name) {
  const std::string text = read_file("/proc/" + std::to_string(pid) + "/environ");
  const std::string prefix = std::string(name) + "=";
  std::size_t begin = 0;
  while (begin < text.size()) {
    std::size_t end = text.find('\0', begin);
    if (end == std::string::npos) end = text.size();
    if (text.compare(begin, prefix.size(), prefix) == 0) {
      return text.substr(begin + prefix.size(), end - begin - prefix.size());
    }
    begin = end + 1;
  }
  return std::nullopt;
}

/// The abstract socket address of |core| of node |key| for this user.
std::pair<sockaddr_un, socklen_t> claim_address(const std::string& key, int core) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string name =
      "vtrn-core/uid" + std::to_string(getuid()) + "/node" + key + "/core" + std::to_string(core);
  const std::size_t n = std::min(name.size(), sizeof(addr.sun_path) - 1);
  std::memcpy(addr.sun_path + 1, name.data(), n);  // sun_path[0] == 0: the abstract namespace
  return {addr, static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n)};
}

/// The pid listening on |addr|, 0 if none answers, -1 if nobody listens any more.
int holder_pid(const sockaddr_un& addr, socklen_t len) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return 0;
  int pid = 0;
  if (connect(fd, reinterpret_cast<const sockaddr*>(&addr), len) == 0) {
    ucred cred{};
    socklen_t cred_len = sizeof(cred);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cred_len) == 0) pid = cred.pid;
  } else if (errno == ECONNREFUSED) {
    pid = -1;
  }
  close(fd);
  return pid;
}

}  // namespace

CoreClaims::CoreClaims(std::string node_key) : node_key_(std::move(node_key)) {}

CoreClaims::~CoreClaims() { release_all(); }

std::optional<CoreHolder> CoreClaims::claim(int core) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (held_.count(core)) return std::nullopt;
  const auto [addr, len] = claim_address(node_key_, core);
  for (int attempt = 0; attempt < 3; ++attempt) {
    const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return std::nullopt;  // no sockets here: the claim cannot be checked
    if (bind(fd, reinterpret_cast<const sockaddr*>(&addr), len) == 0 && listen(fd, 64) == 0) {
      held_[core] = fd;
      return std::nullopt;
    }
    const int error = errno;
    close(fd);
    if (error != EADDRINUSE) return std::nullopt;  // cannot be checked; never block the device
    const int pid = holder_pid(addr, len);
    if (pid == -1) continue;  // the holder exited in between: claim again
    CoreHolder holder;
    holder.pid = pid;
    holder.description = pid > 0 ? describe_process(pid, process_env()) : "another process";
    return holder;
  }
  return std::nullopt;
}

void CoreClaims::release_all() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [core, fd] : held_) close(fd);
  held_.clear();
}

std::string node_key() {
  const int parent = static_cast<int>(getppid());
  return std::to_string(parent) + "." + start_time(parent);
}

bool launched_worker(const EnvLookup& env) {
  if (env("LOCAL_RANK")) return true;
  // spawn: `python -c "from multiprocessing.spawn import spawn_main; ..." --multiprocessing-fork`;
  // forkserver children are forks of `python -c "from multiprocessing.forkserver import main..."`.
  const std::string cmdline = read_file("/proc/self/cmdline");
  return cmdline.find("--multiprocessing-fork") != std::string::npos ||
         cmdline.find("multiprocessing.forkserver") != std::string::npos;
}

std::string describe_process(int pid, const EnvLookup& env) {
  const bool self = pid == static_cast<int>(getpid());
  std::string text = "process " + std::to_string(pid);
  std::vector<std::string> ranks;
  for (const char* name : {"RANK", "LOCAL_RANK"}) {
    const auto value = self ? env(name) : environ_of(pid, name);
    if (value && !value->empty()) ranks.push_back(std::string(name) + " " + *value);
  }
  if (!ranks.empty()) {
    text += " (";
    for (std::size_t i = 0; i < ranks.size(); ++i) text += (i ? ", " : "") + ranks[i];
    text += ")";
  }
  return text;
}

}  // namespace vtrn::runtime
