// The streams of each neuron device: the default stream, a round-robin pool and new streams,
// each a runtime queue with its own worker; the calling thread's current stream per device.
#include "vtrn/torch/stream.h"

#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include <c10/util/Exception.h>

#include "vtrn/torch/device.h"
#include "vtrn/torch/eager/pending_group.h"

namespace vtrn::torch_adapter {

namespace {

bool launch_blocking() {
  static const bool value = [] {
    const char* v = std::getenv("NEURON_LAUNCH_BLOCKING");
    return v != nullptr && std::strcmp(v, "1") == 0;
  }();
  return value;
}

// Stream id 0 is each device's default stream; ids 1..kPoolSize are the pool that
// getStreamFromGlobalPool hands out round-robin; higher ids are new streams.
constexpr c10::StreamId kPoolSize = 8;

class DeviceStreams {
 public:
  explicit DeviceStreams(c10::DeviceIndex device) : device_(device) {}

  runtime::Stream& get(c10::StreamId id) {
    std::lock_guard<std::mutex> lock(mutex_);
    TORCH_CHECK(id >= 0, "neuron:", static_cast<int>(device_), " has no stream ", id);
    return slot_locked(id);
  }

  c10::StreamId next_pool_id() {
    std::lock_guard<std::mutex> lock(mutex_);
    next_pool_ = next_pool_ % kPoolSize + 1;
    return next_pool_;
  }

  c10::StreamId new_id() {
    std::lock_guard<std::mutex> lock(mutex_);
    const c10::StreamId id = kPoolSize + 1 + static_cast<c10::StreamId>(created_.size());
    created_.push_back(nullptr);
    slot_locked(id);
    return id;
  }

  /// Every stream created so far.
  std::vector<runtime::Stream*> all() {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<runtime::Stream*> out;
    for (auto& s : pool_) {
      if (s) out.push_back(s.get());
    }
    for (auto& s : created_) {
      if (s) out.push_back(s.get());
    }
    return out;
  }

 private:
  runtime::Stream& slot_locked(c10::StreamId id) {
    std::unique_ptr<runtime::Stream>* slot;
    if (id <= kPoolSize) {
      slot = &pool_[id];
    } else {
      const size_t index = static_cast<size_t>(id - kPoolSize - 1);
      TORCH_CHECK(index < created_.size(), "neuron:", static_cast<int>(device_), " has no stream ",
                  id);
      slot = &created_[index];
    }
    if (!*slot) {
      *slot = std::make_unique<runtime::Stream>("neuron:" + std::to_string(device_) + " stream " +
                                                std::to_string(id));
    }
    return **slot;
  }

  c10::DeviceIndex device_;
  std::mutex mutex_;
  std::unique_ptr<runtime::Stream> pool_[kPoolSize + 1];  // [0] is the default stream
  std::deque<std::unique_ptr<runtime::Stream>> created_;
  c10::StreamId next_pool_ = 0;
};

DeviceStreams& streams_of(c10::DeviceIndex device) {
  static std::vector<std::unique_ptr<DeviceStreams>>* all = [] {
    auto* v = new std::vector<std::unique_ptr<DeviceStreams>>();  // leaked: workers run until exit
    for (int d = 0; d < device_count(); ++d) {
      v->push_back(std::make_unique<DeviceStreams>(static_cast<c10::DeviceIndex>(d)));
    }
    return v;
  }();
  check_device_index(device);
  return *(*all)[device];
}

thread_local std::vector<c10::StreamId> tls_current_streams;

c10::StreamId& current_stream_id(c10::DeviceIndex device) {
  if (tls_current_streams.size() <= static_cast<size_t>(device))
    tls_current_streams.resize(device + 1, 0);
  return tls_current_streams[device];
}

[[noreturn]] void raise_queued_error(const runtime::QueuedOpError& e) {
  TORCH_CHECK(false, e.what(),
              " (the error surfaced at this synchronization point; set "
              "NEURON_LAUNCH_BLOCKING=1 to raise it at the op that queued the work)");
}

}  // namespace

c10::Stream current_stream(c10::DeviceIndex device) {
  check_device_index(device);
  return c10::Stream(c10::Stream::UNSAFE, c10::Device(c10::kPrivateUse1, device),
                     current_stream_id(device));
}

runtime::Stream& runtime_stream(const c10::Stream& stream) {
  // Anything that touches a stream must come after the ops AEE is still holding.
  flush_pending(stream.device_index());
  return streams_of(stream.device_index()).get(stream.id());
}

void enqueue(c10::DeviceIndex device, const char* op, std::function<void()> work) {
  runtime::Stream& stream = runtime_stream(current_stream(device));
  stream.enqueue(op, std::move(work));
  if (launch_blocking()) {
    try {
      stream.synchronize();
    } catch (const runtime::QueuedOpError& e) {
      TORCH_CHECK(false, e.what());
    }
  }
}

void sync_current_stream(c10::DeviceIndex device) {
  try {
    runtime_stream(current_stream(device)).synchronize();
  } catch (const runtime::QueuedOpError& e) {
    raise_queued_error(e);
  }
}

void synchronize(c10::DeviceIndex index) {
  flush_pending(index);
  std::string first_error;
  for (runtime::Stream* stream : streams_of(index).all()) {
    try {
      stream->synchronize();
    } catch (const runtime::QueuedOpError& e) {
      if (first_error.empty()) first_error = e.what();
    }
  }
  if (!first_error.empty()) raise_queued_error(runtime::QueuedOpError(first_error));
}

c10::StreamId pool_stream_id(c10::DeviceIndex device) { return streams_of(device).next_pool_id(); }

c10::StreamId new_stream_id(c10::DeviceIndex device) { return streams_of(device).new_id(); }

c10::Stream exchange_stream(const c10::Stream& stream) {
  const c10::Stream old = current_stream(stream.device_index());
  runtime_stream(stream);  // validates the id
  current_stream_id(stream.device_index()) = stream.id();
  return old;
}

void synchronize_stream(const c10::Stream& stream) {
  try {
    runtime_stream(stream).synchronize();
  } catch (const runtime::QueuedOpError& e) {
    raise_queued_error(e);
  }
}

}  // namespace vtrn::torch_adapter
