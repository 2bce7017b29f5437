// The device side of torch.profiler: a Kineto activity profiler (PyTorch's PrivateUse1 plugin
// registry) that puts the modeled device timeline into the trace.
//
// With ProfilerActivity.PrivateUse1, Kineto starts a session here. While it runs, every device
// clock records its work (runtime::DeviceClock), each piece tagged with the correlation id of
// the ATen op that issued it (Kineto pushes it around each op; profiler.h keeps it per
// thread). At the end each record becomes one activity: kernels as CONCURRENT_KERNEL ("kernel"
// in the Chrome trace), copies as GPU_MEMCPY, collectives as CONCURRENT_KERNEL on a track of
// their own, on the row of their device (pid) and stream (tid), linked to their op (so
// key_averages() shows device time per op), with a "neuron launch" runtime event at the op's
// start on its thread, where the trace's arrow (ac2g flow) to the device event starts.
// Timestamps are modeled: the session's first possible device time (the host's modeled time at
// start) is placed at the wall time the session started, and every record keeps its modeled
// offset and duration from there. So per stream the events never overlap, and durations are
// exactly the modeled times.
#ifndef USE_KINETO
#define USE_KINETO  // the plugin registry and libkineto's headers exist only under it
#endif
// GenericTraceActivity::addMetadata formats with fmt, whose compiled part libtorch does not
// export: use the header-only build.
#ifndef FMT_HEADER_ONLY
#define FMT_HEADER_ONLY
#endif

#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <IActivityProfiler.h>
#include <libkineto.h>
#include <output_base.h>
#include <torch/csrc/profiler/standalone/privateuse1_profiler.h>

#include "vtrn/runtime/device_clock.h"
#include "vtrn/torch/device.h"
#include "vtrn/torch/profiler.h"
#include "vtrn/torch/stream.h"

namespace vtrn::torch_adapter {
namespace {

using libkineto::ActivityType;

// Collectives get a track per stream of their own: tid = this + stream id.
constexpr int32_t kCollectiveTrack = 1000;

int64_t wall_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

class DeviceTraceSession final : public libkineto::IActivityProfilerSession {
 public:
  void start() override {
    const int devices = torch_device_count();
    anchors_.assign(devices, 0.0);
    for (int d = 0; d < devices; ++d) {
      runtime::DeviceClock& clock = device_clock(static_cast<c10::DeviceIndex>(d));
      anchors_[d] = clock.host_time();
      clock.start_recording();
    }
    start_ns_ = wall_ns();
    status_ = libkineto::TraceStatus::RECORDING;
  }

  void stop() override {
    records_.assign(anchors_.size(), {});
    for (size_t d = 0; d < anchors_.size(); ++d)
      records_[d] = device_clock(static_cast<c10::DeviceIndex>(d)).stop_recording();
    status_ = libkineto::TraceStatus::READY;
  }

  std::vector<std::string> errors() override { return {}; }

  void processTrace(libkineto::ActivityLogger& logger) override {
    processTrace(logger, nullptr, 0, 0);
  }

  void processTrace(libkineto::ActivityLogger& logger, libkineto::getLinkedActivityCallback linked,
                    int64_t /*start*/, int64_t /*end*/) override {
    buffer_ = std::make_unique<libkineto::CpuTraceBuffer>();
    buffer_->span = libkineto::TraceSpan(start_ns_, start_ns_, "neuron modeled device");
    buffer_->gpuOpCount = 0;
    int64_t last_ns = start_ns_;
    for (size_t d = 0; d < records_.size(); ++d) {
      for (const runtime::ClockRecord& r : records_[d]) {
        const bool collective = r.kind == runtime::WorkKind::kCollective;
        const ActivityType type = r.kind == runtime::WorkKind::kCopy
                                      ? ActivityType::GPU_MEMCPY
                                      : ActivityType::CONCURRENT_KERNEL;
        buffer_->emplace_activity(buffer_->span, type, r.name);
        libkineto::GenericTraceActivity& a = *buffer_->activities.back();
        a.startTime = start_ns_ + static_cast<int64_t>((r.start_s - anchors_[d]) * 1e9);
        a.endTime = a.startTime + static_cast<int64_t>((r.end_s - r.start_s) * 1e9);
        a.device = static_cast<int32_t>(d);
        a.resource = (collective ? kCollectiveTrack : 0) + r.stream;
        a.threadId = a.resource;
        a.id = static_cast<int32_t>(r.correlation);
        if (r.correlation != 0) {
          a.flow.id = static_cast<uint32_t>(r.correlation);
          a.flow.type = libkineto::kLinkAsyncCpuGpu;
          a.flow.start = 0;
          if (linked) a.linked = linked(static_cast<int32_t>(r.correlation));
        }
        a.addMetadata("device", d);
        a.addMetadata("stream", r.stream);
        a.addMetadata("correlation", r.correlation);
        a.addMetadataQuoted("kind", std::string(runtime::work_kind_name(r.kind)));
        a.addMetadata("modeled_us", (r.end_s - r.start_s) * 1e6);
        for (int e = 0; e < runtime::kEngineClassCount; ++e) {
          if (r.busy[e] > 0)
            a.addMetadata(
                std::string(runtime::engine_class_name(static_cast<runtime::EngineClass>(e))) +
                    "_us",
                r.busy[e] * 1e6);
        }
        last_ns = std::max(last_ns, a.endTime);
        ++buffer_->gpuOpCount;
        tracks_.insert({static_cast<int32_t>(d), a.resource});
        a.log(logger);
        if (a.linked != nullptr) log_launch(*a.linked, a, logger);
      }
    }
    buffer_->span.endTime = last_ns;
  }

  // The launch on the host: a runtime event at the start of the op that issued the work, on
  // its thread, where the trace's arrow to the device event starts.
  void log_launch(const libkineto::ITraceActivity& op, const libkineto::GenericTraceActivity& work,
                  libkineto::ActivityLogger& logger) {
    buffer_->emplace_activity(buffer_->span, ActivityType::PRIVATEUSE1_RUNTIME, "neuron launch");
    libkineto::GenericTraceActivity& l = *buffer_->activities.back();
    l.startTime = op.timestamp();
    l.endTime = op.timestamp() + 1;
    l.device = static_cast<int32_t>(op.deviceId());
    l.resource = static_cast<int32_t>(op.resourceId());
    l.threadId = op.getThreadId();
    l.id = work.id;
    l.flow.id = work.flow.id;
    l.flow.type = libkineto::kLinkAsyncCpuGpu;
    l.flow.start = 1;
    l.linked = &op;
    l.log(logger);
  }

  std::unique_ptr<libkineto::DeviceInfo> getDeviceInfo() override {
    return std::make_unique<libkineto::DeviceInfo>(
        libkineto::DeviceInfo{0, 0, "neuron (modeled)", "modeled Trainium device time"});
  }

  std::vector<libkineto::ResourceInfo> getResourceInfos() override {
    std::vector<libkineto::ResourceInfo> out;
    for (const auto& [device, track] : tracks_) {
      const bool collective = track >= kCollectiveTrack;
      const int stream = collective ? track - kCollectiveTrack : track;
      out.push_back(libkineto::ResourceInfo{track, track, device,
                                            "neuron:" + std::to_string(device) + " stream " +
                                                std::to_string(stream) +
                                                (collective ? " collectives" : "")});
    }
    return out;
  }

  std::unique_ptr<libkineto::CpuTraceBuffer> getTraceBuffer() override {
    return std::move(buffer_);
  }

  void pushCorrelationId(uint64_t id) override { push_profiler_correlation(id); }
  void popCorrelationId() override { pop_profiler_correlation(); }

 private:
  std::vector<double> anchors_;  ///< per device: modeled time placed at start_ns_
  int64_t start_ns_ = 0;
  std::vector<std::vector<runtime::ClockRecord>> records_;
  std::unique_ptr<libkineto::CpuTraceBuffer> buffer_;
  std::set<std::pair<int32_t, int32_t>> tracks_;
};

class DeviceTraceProfiler final : public libkineto::IActivityProfiler {
 public:
  const std::string& name() const override { return name_; }

  const std::set<ActivityType>& availableActivities() const override { return activities_; }

  std::unique_ptr<libkineto::IActivityProfilerSession> configure(
      const std::set<ActivityType>& activity_types, const libkineto::Config& /*config*/) override {
    for (ActivityType t : activity_types) {
      if (activities_.count(t) != 0) return std::make_unique<DeviceTraceSession>();
    }
    return nullptr;
  }

  std::unique_ptr<libkineto::IActivityProfilerSession> configure(
      int64_t /*ts_ms*/, int64_t /*duration_ms*/, const std::set<ActivityType>& activity_types,
      const libkineto::Config& config) override {
    return configure(activity_types, config);
  }

 private:
  std::string name_ = "__vtrn_neuron_profiler__";
  std::set<ActivityType> activities_ = {ActivityType::CONCURRENT_KERNEL, ActivityType::GPU_MEMCPY};
};

REGISTER_PRIVATEUSE1_PROFILER(DeviceTraceProfiler);

}  // namespace
}  // namespace vtrn::torch_adapter
