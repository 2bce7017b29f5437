// One process per NeuronCore. Every process of a node sees all the node's cores (as every
// process sees every GPU of its node under CUDA) and picks its own; the Neuron runtime gives a
// core to one process only, so a process claims each core it uses, and a second process of
// the same node that uses a claimed core is refused with both processes named.
//
// A claim is an abstract-namespace Unix socket, bound and listened on by its holder, named
// after the user, the node and the core. The kernel releases it when the holder exits, however
// it exits (no lock file is left behind, nothing to clean up), and a contender that connects to
// it learns the holder's pid (SO_PEERCRED).
//
// Claims are made by the workers a launcher starts (launched_worker()): torchrun's (`vtrn run`'s)
// workers and torch.multiprocessing's. Their node is the group of processes one launcher
// started: the children of one parent (the torchrun agent, the parent of the spawned workers).
// Processes with different parents never contend, and processes no launcher started claim
// nothing, so separate jobs on one host, independent scripts and test runs are independent.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "vtrn/runtime/device_config.h"

namespace vtrn::runtime {

/// The process holding a claimed core, for messages.
struct CoreHolder {
  int pid = 0;              ///< 0 when the holder could not be identified
  std::string description;  ///< "process 1234 (RANK 3, LOCAL_RANK 3)"
};

class CoreClaims {
 public:
  /// Claims of the node named |node_key| (see node_key()).
  explicit CoreClaims(std::string node_key);
  ~CoreClaims();
  CoreClaims(const CoreClaims&) = delete;
  CoreClaims& operator=(const CoreClaims&) = delete;

  /// Claims node core |core| for this process. Returns nullopt when this process holds it
  /// (now or before), else the process that does. Thread safe.
  std::optional<CoreHolder> claim(int core);

  /// Gives up every claim (for tests; a process's claims otherwise last until it exits).
  void release_all();

  const std::string& node_key() const { return node_key_; }

 private:
  std::string node_key_;
  std::mutex mutex_;
  std::map<int, int> held_;  ///< core -> listening socket
};

/// The node of this process: its parent's pid and start time (so that a reused pid is another
/// node).
std::string node_key();

/// True for a worker a launcher started: LOCAL_RANK is set (torchrun, `vtrn run`), or the
/// process is a torch.multiprocessing / multiprocessing child (spawn or forkserver, seen in its
/// command line).
bool launched_worker(const EnvLookup& env);

/// "process 1234 (RANK 3, LOCAL_RANK 3)": the pid and, when set, the torchrun ranks of |pid|,
/// read from /proc with |env| for this process's own variables.
std::string describe_process(int pid, const EnvLookup& env);

}  // namespace vtrn::runtime
