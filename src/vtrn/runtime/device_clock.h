// The modeled device clock of one logical NeuronCore: what its queued work would take on
// Trainium, stream by stream, whatever the host CPU takes to emulate it.
//
// Promises:
//  * Each stream has a timeline. Work starts when its stream is free and not before the host
//    could have issued it (the host time, below); a kernel (one executable) starts one launch
//    overhead later (hw::kExecutionLaunchOverhead), copies and collectives at once. The work
//    then occupies the stream for its modeled seconds: the sum of its busy seconds per engine
//    class.
//  * wait(stream, t) (an event wait, wait_stream, a collective's later members) moves the
//    stream's timeline to t if it is behind; it never moves a timeline back.
//  * ready(stream) is where work issued now on the stream would start, before a kernel's launch
//    overhead: a collective's arrival, which its members exchange to start together.
//  * The host issues work in zero modeled time and waits only where it synchronizes:
//    host_wait(t) makes later work start no earlier than t.
//  * usage(): per stream, the busy seconds by engine class since the last reset(), and the idle
//    time: the device's span since the reset (latest end of any stream or the host) minus the
//    stream's busy time. Launch overheads and waits count as idle.
//  * reset() zeroes the busy times and starts a new span at the device's current end; the
//    timelines themselves only move forward, so event times taken before a reset stay
//    comparable with those taken after.
//  * While recording, every piece of work is also kept as a ClockRecord, in issue order.
//  * Thread-safe: every method takes the clock's lock.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace vtrn::runtime {

/// The engine classes the busy time is reported by.
enum class EngineClass : std::uint8_t { kTensor, kVector, kScalar, kGpSimd, kDma, kCollective };
inline constexpr int kEngineClassCount = 6;
/// "tensor", "vector", "scalar", "gpsimd", "dma", "collective"
std::string_view engine_class_name(EngineClass engine);

/// What a piece of work is: a kernel pays the launch overhead, the others do not.
enum class WorkKind : std::uint8_t { kKernel, kCopy, kCollective };
/// "kernel", "copy", "collective"
std::string_view work_kind_name(WorkKind kind);

using EngineSeconds = std::array<double, kEngineClassCount>;

/// The modeled cost of one piece of work.
struct ModeledWork {
  WorkKind kind = WorkKind::kKernel;
  EngineSeconds busy{};  ///< seconds per engine class; the work takes their sum

  double seconds() const;
  /// Work of |seconds| on one engine class.
  static ModeledWork on(WorkKind kind, EngineClass engine, double seconds);
};

/// One piece of work on the timeline, as recorded.
struct ClockRecord {
  std::string name;  ///< the op that issued it ("aten::mm", "all_reduce", "aten::_copy_from")
  int stream = 0;
  WorkKind kind = WorkKind::kKernel;
  double start_s = 0, end_s = 0;
  std::uint64_t correlation = 0;  ///< the caller's tag (the profiler's op id); 0: none
  EngineSeconds busy{};
};

struct StreamUsage {
  int stream = 0;
  EngineSeconds busy{};  ///< busy seconds per engine class since the reset
  double busy_s = 0;     ///< their sum
  double end_s = 0;      ///< where the stream's timeline stands
  double idle_s = 0;     ///< the device's span since the reset minus busy_s
};

struct ClockUsage {
  double origin_s = 0;               ///< device time of the last reset
  double end_s = 0;                  ///< latest end of any stream or of the host
  std::vector<StreamUsage> streams;  ///< by stream id, streams used since the reset
  double span_s() const { return end_s - origin_s; }
};

class DeviceClock {
 public:
  /// |launch_overhead_s|: the device-side start cost of each kernel.
  explicit DeviceClock(double launch_overhead_s);

  /// Places |work| on |stream|'s timeline and returns where it went (seconds of device time;
  /// the returned record carries no name, the recorded copy does).
  /// Throws std::invalid_argument for a negative or non-finite cost.
  ClockRecord advance(int stream, std::string_view name, const ModeledWork& work,
                      std::uint64_t correlation = 0);

  /// Where |stream|'s timeline stands: the end of its last work or wait (0 when unused).
  double now(int stream) const;
  /// Where work issued now on |stream| would start (before a kernel's launch overhead): the
  /// later of now(stream) and the host's time. Changes nothing.
  double ready(int stream) const;
  /// An event record on |stream|: the stream reaches the point the host issues it at (it
  /// cannot pass the record before the host made it) and that time is returned.
  double mark(int stream);
  /// Makes |stream| wait until |time_s| (an event wait); never moves it back.
  void wait(int stream, double time_s);
  /// The host waits until |time_s|: no later work starts before it.
  void host_wait(double time_s);
  /// The host waits for every stream (a device synchronize).
  void host_wait_all();
  double host_time() const;

  ClockUsage usage() const;
  void reset();

  /// Starts keeping ClockRecords (dropping any kept before).
  void start_recording();
  /// Stops recording and returns the records kept, in issue order.
  std::vector<ClockRecord> stop_recording();
  bool recording() const;

  double launch_overhead_s() const { return launch_overhead_s_; }

  /// For fork(): takes the clock's lock, so that no other thread holds it when the process
  /// forks (a child would find it locked forever); release_after_fork() gives it back, in the
  /// parent and in the child (the forking thread owns it in both).
  void hold_for_fork() { mutex_.lock(); }
  void release_after_fork() { mutex_.unlock(); }

 private:
  struct Timeline {
    double now = 0;
    EngineSeconds busy{};
    bool used = false;  ///< since the last reset
  };
  double end_locked() const;

  const double launch_overhead_s_;
  mutable std::mutex mutex_;
  std::map<int, Timeline> streams_;
  double host_ = 0;
  double origin_ = 0;
  bool recording_ = false;
  std::vector<ClockRecord> records_;
};

}  // namespace vtrn::runtime
