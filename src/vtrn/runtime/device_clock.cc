#include "vtrn/runtime/device_clock.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace vtrn::runtime {

std::string_view engine_class_name(EngineClass engine) {
  switch (engine) {
    case EngineClass::kTensor:
      return "tensor";
    case EngineClass::kVector:
      return "vector";
    case EngineClass::kScalar:
      return "scalar";
    case EngineClass::kGpSimd:
      return "gpsimd";
    case EngineClass::kDma:
      return "dma";
    case EngineClass::kCollective:
      return "collective";
  }
  return "unknown";
}

std::string_view work_kind_name(WorkKind kind) {
  switch (kind) {
    case WorkKind::kKernel:
      return "kernel";
    case WorkKind::kCopy:
      return "copy";
    case WorkKind::kCollective:
      return "collective";
  }
  return "unknown";
}

double ModeledWork::seconds() const {
  double total = 0;
  for (double s : busy) total += s;
  return total;
}

ModeledWork ModeledWork::on(WorkKind kind, EngineClass engine, double seconds) {
  ModeledWork w;
  w.kind = kind;
  w.busy[static_cast<size_t>(engine)] = seconds;
  return w;
}

DeviceClock::DeviceClock(double launch_overhead_s) : launch_overhead_s_(launch_overhead_s) {
  if (!(launch_overhead_s >= 0) || !std::isfinite(launch_overhead_s))
    throw std::invalid_argument("DeviceClock: launch overhead must be finite and >= 0, got " +
                                std::to_string(launch_overhead_s));
}

ClockRecord DeviceClock::advance(int stream, std::string_view name, const ModeledWork& work,
                                 std::uint64_t correlation) {
  for (size_t e = 0; e < work.busy.size(); ++e) {
    if (!(work.busy[e] >= 0) || !std::isfinite(work.busy[e]))
      throw std::invalid_argument(
          "DeviceClock: modeled seconds of '" + std::string(name) + "' on the " +
          std::string(engine_class_name(static_cast<EngineClass>(e))) +
          " engines must be finite and >= 0, got " + std::to_string(work.busy[e]));
  }
  std::lock_guard<std::mutex> lock(mutex_);
  Timeline& t = streams_[stream];
  double start = std::max(t.now, host_);
  if (work.kind == WorkKind::kKernel) start += launch_overhead_s_;
  ClockRecord r;
  r.stream = stream;
  r.kind = work.kind;
  r.start_s = start;
  r.end_s = start + work.seconds();
  r.correlation = correlation;
  r.busy = work.busy;
  t.now = r.end_s;
  t.used = true;
  for (size_t e = 0; e < work.busy.size(); ++e) t.busy[e] += work.busy[e];
  // The name is copied only when recording: every kernel launch passes through here.
  if (recording_) {
    records_.push_back(r);
    records_.back().name = std::string(name);
  }
  return r;
}

double DeviceClock::now(int stream) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = streams_.find(stream);
  return it == streams_.end() ? 0.0 : it->second.now;
}

double DeviceClock::ready(int stream) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = streams_.find(stream);
  return std::max(it == streams_.end() ? 0.0 : it->second.now, host_);
}

double DeviceClock::mark(int stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  Timeline& t = streams_[stream];
  t.now = std::max(t.now, host_);
  return t.now;
}

void DeviceClock::wait(int stream, double time_s) {
  std::lock_guard<std::mutex> lock(mutex_);
  Timeline& t = streams_[stream];
  t.now = std::max(t.now, time_s);
}

void DeviceClock::host_wait(double time_s) {
  std::lock_guard<std::mutex> lock(mutex_);
  host_ = std::max(host_, time_s);
}

void DeviceClock::host_wait_all() {
  std::lock_guard<std::mutex> lock(mutex_);
  host_ = end_locked();
}

double DeviceClock::host_time() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return host_;
}

double DeviceClock::end_locked() const {
  double end = std::max(host_, origin_);
  for (const auto& [id, t] : streams_) end = std::max(end, t.now);
  return end;
}

ClockUsage DeviceClock::usage() const {
  std::lock_guard<std::mutex> lock(mutex_);
  ClockUsage u;
  u.origin_s = origin_;
  u.end_s = end_locked();
  for (const auto& [id, t] : streams_) {
    if (!t.used) continue;
    StreamUsage s;
    s.stream = id;
    s.busy = t.busy;
    for (double b : t.busy) s.busy_s += b;
    s.end_s = t.now;
    s.idle_s = std::max(0.0, u.span_s() - s.busy_s);
    u.streams.push_back(s);
  }
  return u;
}

void DeviceClock::reset() {
  std::lock_guard<std::mutex> lock(mutex_);
  origin_ = end_locked();
  host_ = origin_;
  for (auto& [id, t] : streams_) {
    t.busy = {};
    t.used = false;
  }
}

void DeviceClock::start_recording() {
  std::lock_guard<std::mutex> lock(mutex_);
  records_.clear();
  recording_ = true;
}

std::vector<ClockRecord> DeviceClock::stop_recording() {
  std::lock_guard<std::mutex> lock(mutex_);
  recording_ = false;
  std::vector<ClockRecord> out;
  out.swap(records_);
  return out;
}

bool DeviceClock::recording() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return recording_;
}

}  // namespace vtrn::runtime
