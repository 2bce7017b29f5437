// The `neuron` c10d backend.
//
// Each collective: checks that every tensor is a neuron tensor; on the group's first
// collective, checks that the runtime could build an algorithm for the group's placement
// (coll::route_group) and raises the runtime's error if not; waits for the work queued before
// it on the current stream; runs the inner Gloo backend on CPU tensors that alias the device
// bytes (no copies beyond Gloo's own); starts the collective on the modeled clock when its last
// member arrives (the members exchange their arrival times through the transport: a one-element
// MAX all-reduce); adds the modeled time to the device's collective clock; and returns completed
// work whose future holds the neuron tensors.
#include "vtrn/torch/distributed.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <ATen/ops/empty_like.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/full.h>
#include <torch/csrc/utils/pybind.h>
#include <torch/library.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/GroupRegistry.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include "vtrn/coll/collective_time.h"
#include "vtrn/coll/route.h"
#include "vtrn/compiler/collective_call.h"
#include "vtrn/runtime/executor.h"
#include "vtrn/topo/cluster.h"
#include "vtrn/topo/link_graph.h"
#include "vtrn/torch/device.h"
#include "vtrn/torch/eager/dtype_mapping.h"
#include "vtrn/torch/reduce_op.h"
#include "vtrn/torch/stream.h"

namespace vtrn::torch_adapter {
namespace {

namespace py = pybind11;

//===----------------------------------------------------------------------===//
// Modeled collective time, per device
//===----------------------------------------------------------------------===//

std::mutex clock_mutex;
std::vector<double>& collective_clock() {
  static auto* seconds = new std::vector<double>();
  return *seconds;
}

// Also places the collective on the current stream's modeled timeline, named |op|.
void add_modeled_seconds(c10::DeviceIndex device, const char* op, double seconds) {
  advance_clock(device, op,
                runtime::ModeledWork::on(runtime::WorkKind::kCollective,
                                         runtime::EngineClass::kCollective, seconds));
  std::lock_guard<std::mutex> lock(clock_mutex);
  auto& clock = collective_clock();
  if (clock.size() <= static_cast<size_t>(device)) clock.resize(device + 1, 0.0);
  clock[device] += seconds;
}

double modeled_seconds(int device) {
  std::lock_guard<std::mutex> lock(clock_mutex);
  const auto& clock = collective_clock();
  return device >= 0 && static_cast<size_t>(device) < clock.size() ? clock[device] : 0.0;
}

// Set once a compiled module holds a collective (see NeuronBackend::sync_all).
std::atomic<bool> module_collectives{false};

//===----------------------------------------------------------------------===//
// Work
//===----------------------------------------------------------------------===//

// The data has moved by the time the backend returns: work is complete at creation, and its
// future holds the neuron tensors (DDP's comm hooks read them from it).
class NeuronWork final : public c10d::Work {
 public:
  NeuronWork(c10d::OpType type, std::vector<at::Tensor> outputs, std::vector<c10::Device> devices)
      : c10d::Work(-1, type), outputs_(std::move(outputs)), devices_(std::move(devices)) {}
  bool isCompleted() override { return true; }
  bool isSuccess() const override { return true; }
  bool wait(std::chrono::milliseconds /*timeout*/) override { return true; }
  std::vector<at::Tensor> result() override { return outputs_; }

  // Built on first use: completing a future on a device records events on its streams, a
  // cost every collective would pay although few callers (DDP's comm hooks) ask for it.
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override {
    std::call_once(future_once_, [this] {
      future_ = c10::make_intrusive<c10::ivalue::Future>(
          c10::ListType::create(c10::TensorType::get()), devices_);
      future_->markCompleted(c10::IValue(outputs_));
    });
    return future_;
  }

 private:
  std::vector<at::Tensor> outputs_;
  std::vector<c10::Device> devices_;
  std::once_flag future_once_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

// Point-to-point work stays pending until waited on: a pipeline schedule posts a send and a
// recv together (batch_isend_irecv), and a send that blocked until its peer received would
// deadlock two stages that both send first. It keeps the tensors, whose bytes Gloo is moving.
class NeuronPendingWork final : public c10d::Work {
 public:
  NeuronPendingWork(c10::intrusive_ptr<c10d::Work> transport, c10d::OpType type,
                    std::vector<at::Tensor> tensors, std::vector<at::Tensor> aliases)
      : c10d::Work(-1, type),
        transport_(std::move(transport)),
        tensors_(std::move(tensors)),
        aliases_(std::move(aliases)) {}
  bool isCompleted() override { return transport_->isCompleted(); }
  bool isSuccess() const override { return transport_->isSuccess(); }
  std::exception_ptr exception() const override { return transport_->exception(); }
  int sourceRank() const override { return transport_->sourceRank(); }
  bool wait(std::chrono::milliseconds timeout) override { return transport_->wait(timeout); }
  std::vector<at::Tensor> result() override { return tensors_; }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return transport_->getFuture(); }

 private:
  c10::intrusive_ptr<c10d::Work> transport_;
  std::vector<at::Tensor> tensors_;
  std::vector<at::Tensor> aliases_;
};

//===----------------------------------------------------------------------===//
// The backend
//===----------------------------------------------------------------------===//

/// Where each member of a group runs: (node, logical core of the node), by group rank.
using Placement = std::vector<std::pair<int, int>>;

class NeuronBackend final : public c10d::Backend {
 public:
  NeuronBackend(c10::intrusive_ptr<c10d::Backend> transport, int rank, int size,
                const std::string& instance, int lnc, int nodes, const Placement& placement)
      : c10d::Backend(rank, size), transport_(std::move(transport)), lnc_(lnc) {
    TORCH_CHECK(static_cast<int>(placement.size()) == size, "neuron backend: ", placement.size(),
                " placements for a group of ", size);
    cluster_ = std::make_unique<topo::Cluster>(instance, lnc, nodes);
    graph_ = std::make_unique<topo::LinkGraph>(*cluster_);
    for (const auto& [node, core] : placement)
      cluster_ranks_.push_back(node * cluster_->ranks_per_node() + core);
  }

  const std::string getBackendName() const override { return "neuron"; }

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override {
    return run("broadcast", c10d::OpType::BROADCAST, coll::Collective::kBroadcast, tensors, tensors,
               [&](auto& in, auto&) { return transport_->broadcast(in, opts); });
  }

  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override {
    const ReducePlan plan = plan_for(opts.reduceOp, tensors, "all_reduce");
    return run(
        "all_reduce", c10d::OpType::ALLREDUCE, coll::Collective::kAllReduce, tensors, tensors,
        [&](auto& in, auto&) {
          c10d::AllreduceOptions o = opts;
          o.reduceOp = plan.transport_op;
          apply_pre_scale(plan, in);  // the input is the output: scaling it in place is safe
          auto work = transport_->allreduce(in, o);
          work->wait();
          apply_average(plan, in, getSize());
          return work;
        },
        reduce_op_seconds(plan, tensors, tensors));
  }

  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
      std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) override {
    for (auto& t : tensors) {
      std::vector<at::Tensor> one{t};
      c10d::AllreduceOptions o;
      o.reduceOp = opts.reduceOp;
      o.timeout = opts.timeout;
      allreduce(one, o);
    }
    return done(c10d::OpType::ALLREDUCE_COALESCED, tensors);
  }

  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors,
                                        const c10d::ReduceOptions& opts) override {
    const ReducePlan plan = plan_for(opts.reduceOp, tensors, "reduce");
    return run(
        "reduce", c10d::OpType::REDUCE, coll::Collective::kAllReduce, tensors, tensors,
        [&](auto& in, auto&) {
          c10d::ReduceOptions o = opts;
          o.reduceOp = plan.transport_op;
          const bool root = getRank() == o.rootRank;
          // A non-root rank's tensor keeps its value, as with NCCL (Gloo uses it as scratch):
          // it sends a copy.
          std::vector<at::Tensor> sent = root ? in : clones(in);
          apply_pre_scale(plan, sent);
          auto work = transport_->reduce(sent, o);
          work->wait();
          if (root) apply_average(plan, sent, getSize());
          return work;
        },
        reduce_op_seconds(plan, tensors, tensors));
  }

  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts) override {
    std::vector<at::Tensor> flat_out = flatten(outputs);
    check_neuron("all_gather", flat_out);
    auto out_alias = alias_lists(outputs);
    return run("all_gather", c10d::OpType::ALLGATHER, coll::Collective::kAllGather, inputs,
               flat_out,
               [&](auto& in, auto&) { return transport_->allgather(out_alias, in, opts); });
  }

  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override {
    std::vector<at::Tensor> in{input}, out{output};
    return run("all_gather_into_tensor", c10d::OpType::_ALLGATHER_BASE,
               coll::Collective::kAllGather, in, out, [&](auto& in_alias, auto& out_alias) {
                 return transport_->_allgather_base(out_alias[0], in_alias[0], opts);
               });
  }

  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::AllgatherOptions& opts) override {
    for (size_t i = 0; i < outputs.size(); ++i) _allgather_base(outputs[i], inputs[i], opts);
    return done(c10d::OpType::COALESCED, outputs);
  }

  c10::intrusive_ptr<c10d::Work> allgather_coalesced(std::vector<std::vector<at::Tensor>>& outputs,
                                                     std::vector<at::Tensor>& inputs,
                                                     const c10d::AllgatherOptions& opts) override {
    for (size_t i = 0; i < inputs.size(); ++i) {
      std::vector<std::vector<at::Tensor>> out{outputs[i]};
      std::vector<at::Tensor> in{inputs[i]};
      allgather(out, in, opts);
    }
    return done(c10d::OpType::ALLGATHER_COALESCED, flatten(outputs));
  }

  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                        std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts) override {
    std::vector<at::Tensor> flat_out = flatten(outputs);
    check_neuron("gather", flat_out);
    auto out_alias = alias_lists(outputs);
    return run("gather", c10d::OpType::GATHER, coll::Collective::kAllGather, inputs, flat_out,
               [&](auto& in, auto&) { return transport_->gather(out_alias, in, opts); });
  }

  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                         std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override {
    std::vector<at::Tensor> flat_in = flatten(inputs);
    check_neuron("scatter", flat_in);
    sync_all(flat_in);
    auto in_alias = alias_lists(inputs);
    return run("scatter", c10d::OpType::SCATTER, coll::Collective::kBroadcast, outputs, outputs,
               [&](auto& out, auto&) { return transport_->scatter(out, in_alias, opts); });
  }

  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override {
    std::vector<at::Tensor> flat_in = flatten(inputs);
    check_neuron("reduce_scatter", flat_in);
    sync_all(flat_in);
    auto in_alias = alias_lists(inputs);
    const ReducePlan plan = plan_for(opts.reduceOp, flat_in, "reduce_scatter");
    return run(
        "reduce_scatter", c10d::OpType::REDUCE_SCATTER, coll::Collective::kReduceScatter, outputs,
        outputs,
        [&](auto& out, auto&) {
          c10d::ReduceScatterOptions o = opts;
          o.reduceOp = plan.transport_op;
          if (plan.pre_scale) {  // the inputs keep their values: scaled copies are sent
            for (auto& list : in_alias) {
              list = clones(list);
              apply_pre_scale(plan, list);
            }
          }
          auto work = transport_->reduce_scatter(out, in_alias, o);
          work->wait();
          apply_average(plan, out, getSize());
          return work;
        },
        reduce_op_seconds(plan, flat_in, outputs));
  }

  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) override {
    std::vector<at::Tensor> in{input}, out{output};
    check_neuron("reduce_scatter_tensor", out);
    const ReducePlan plan = plan_for(opts.reduceOp, in, "reduce_scatter_tensor");
    return run(
        "reduce_scatter_tensor", c10d::OpType::_REDUCE_SCATTER_BASE,
        coll::Collective::kReduceScatter, in, out,
        [&](auto& in_alias, auto& out_alias) {
          c10d::ReduceScatterOptions o = opts;
          o.reduceOp = plan.transport_op;
          // The input keeps its value: PREMUL_SUM sends a scaled copy.
          std::vector<at::Tensor> sent = plan.pre_scale ? clones(in_alias) : in_alias;
          apply_pre_scale(plan, sent);
          // Gloo's reduce-scatter writes its output once more after wait() returns
          // (seen as a division undone): it gets a staging buffer, copied out once final.
          at::Tensor staging = at::empty_like(out_alias[0]);
          auto work = transport_->_reduce_scatter_base(staging, sent[0], o);
          work->wait();
          std::vector<at::Tensor> result{staging};
          apply_average(plan, result, getSize());
          out_alias[0].copy_(staging);
          return work;
        },
        reduce_op_seconds(plan, in, out));
  }

  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::ReduceScatterOptions& opts) override {
    for (size_t i = 0; i < outputs.size(); ++i) _reduce_scatter_base(outputs[i], inputs[i], opts);
    return done(c10d::OpType::COALESCED, outputs);
  }

  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& output_split_sizes,
                                               std::vector<int64_t>& input_split_sizes,
                                               const c10d::AllToAllOptions& opts) override {
    std::vector<at::Tensor> in{input}, out{output};
    return run("all_to_all_single", c10d::OpType::ALLTOALL_BASE, coll::Collective::kAllToAll, in,
               out, [&](auto& in_alias, auto& out_alias) {
                 return transport_->alltoall_base(out_alias[0], in_alias[0], output_split_sizes,
                                                  input_split_sizes, opts);
               });
  }

  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs,
                                          std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts) override {
    return run("all_to_all", c10d::OpType::ALLTOALL, coll::Collective::kAllToAll, inputs, outputs,
               [&](auto& in_alias, auto& out_alias) {
                 return transport_->alltoall(out_alias, in_alias, opts);
               });
  }

  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dst_rank,
                                      int tag) override {
    return run_pending("send", c10d::OpType::SEND, tensors,
                       [&](auto& in) { return transport_->send(in, dst_rank, tag); });
  }

  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int src_rank,
                                      int tag) override {
    return run_pending("recv", c10d::OpType::RECV, tensors,
                       [&](auto& in) { return transport_->recv(in, src_rank, tag); });
  }

  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors, int tag) override {
    return run_pending("recv", c10d::OpType::RECVANYSOURCE, tensors,
                       [&](auto& in) { return transport_->recvAnysource(in, tag); });
  }

  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override {
    check_route("barrier");
    // A barrier has no tensors to sync on; it must not pass a queued module's collectives.
    if (module_collectives.load(std::memory_order_acquire)) wait_for_queued_work();
    auto work = transport_->barrier(opts);
    work->wait();
    return c10::make_intrusive<NeuronWork>(c10d::OpType::BARRIER, std::vector<at::Tensor>{},
                                           std::vector<c10::Device>{});
  }

  /// The route check's verdict for this group, computed on first use: "" when routable.
  const std::string& route_error() {
    std::call_once(route_once_,
                   [this] { route_ = coll::route_group(*cluster_, *graph_, cluster_ranks_); });
    return route_.error;
  }

  /// Modeled seconds of a collective inside a compiled module (compiler/collective_call.h):
  /// the transfer on this group's placement plus the reduction's own elementwise passes.
  /// Raises the runtime's error when the group cannot be routed.
  double module_collective_seconds(const std::string& kind, const std::string& reduce,
                                   at::ScalarType dtype, int64_t input_elements,
                                   int64_t output_elements) {
    check_route(kind.c_str());
    const ReducePlan plan = plan_reduce(reduce_op_named(reduce), dtype, kind.c_str());
    module_collectives.store(true, std::memory_order_release);
    const int64_t elements = kind == "reduce_scatter" ? input_elements : output_elements;
    const auto bytes = static_cast<uint64_t>(elements) * c10::elementSize(dtype);
    const double transfer =
        getSize() > 1 ? coll::estimate(*cluster_, route_, collective_named(kind), bytes).seconds
                      : 0.0;
    return transfer + modeled_reduce_op_seconds(plan, cluster_->spec(), lnc_, dtype, input_elements,
                                                output_elements);
  }

  /// Runs a collective of a compiled module on the stream's worker: |in| and |out| are the
  /// module's buffers. The stream already orders it after the module's earlier ops, so
  /// nothing is synchronized here (the worker waiting for its own stream would deadlock).
  void run_module_collective(const compiler::CollectiveCall& c, const hlo::TensorType& in_type,
                             const void* in, const hlo::TensorType& out_type, void* out) {
    check_route(c.kind.c_str());
    if (shapes_only()) return;
    const at::ScalarType dtype = eager::to_torch(in_type.dtype);
    const auto cpu = at::TensorOptions().device(at::kCPU).dtype(dtype);
    at::Tensor x = at::from_blob(const_cast<void*>(in), in_type.dims, cpu);
    at::Tensor y = at::from_blob(out, out_type.dims, cpu);
    if (c.kind == "all_gather") {
      transport_->_allgather_base(y, x, c10d::AllgatherOptions())->wait();
      return;
    }
    const ReducePlan plan = plan_reduce(reduce_op_named(c.reduce), dtype, c.kind.c_str());
    std::vector<at::Tensor> result{y};
    if (c.kind == "reduce_scatter") {
      c10d::ReduceScatterOptions o;
      o.reduceOp = plan.transport_op;
      // Gloo writes its output once more after wait() returns: a staging buffer, as above.
      at::Tensor staging = at::empty_like(y);
      transport_->_reduce_scatter_base(staging, x, o)->wait();
      y.copy_(staging);
    } else {
      c10d::AllreduceOptions o;
      o.reduceOp = plan.transport_op;
      y.copy_(x);
      transport_->allreduce(result, o)->wait();
    }
    apply_average(plan, result, getSize());
  }

 private:
  /// c10d's functional collectives name their reduction by string (to_reduce_op).
  static c10d::ReduceOp reduce_op_named(const std::string& name) {
    static const std::pair<const char*, c10d::ReduceOp::RedOpType> kOps[] = {
        {"sum", c10d::ReduceOp::SUM},         {"avg", c10d::ReduceOp::AVG},
        {"product", c10d::ReduceOp::PRODUCT}, {"min", c10d::ReduceOp::MIN},
        {"max", c10d::ReduceOp::MAX},         {"band", c10d::ReduceOp::BAND},
        {"bor", c10d::ReduceOp::BOR},         {"bxor", c10d::ReduceOp::BXOR}};
    for (const auto& [n, op] : kOps)
      if (name == n) return c10d::ReduceOp(op);
    TORCH_CHECK_VALUE(false, "a collective of a compiled module has the reduce op \"", name,
                      "\"; it takes sum, avg, product, min, max, band, bor or bxor");
    return c10d::ReduceOp(c10d::ReduceOp::SUM);  // not reached
  }

  static coll::Collective collective_named(const std::string& kind) {
    if (kind == "all_gather") return coll::Collective::kAllGather;
    if (kind == "reduce_scatter") return coll::Collective::kReduceScatter;
    TORCH_CHECK_VALUE(kind == "all_reduce", "unknown collective kind \"", kind, "\"");
    return coll::Collective::kAllReduce;
  }

  /// The reduction of |tensors| (all of one dtype), checked before any data moves.
  static ReducePlan plan_for(const c10d::ReduceOp& op, const std::vector<at::Tensor>& tensors,
                             const char* collective) {
    const at::ScalarType dtype =
        !tensors.empty() && tensors[0].defined() ? tensors[0].scalar_type() : at::kFloat;
    return plan_reduce(op, dtype, collective);
  }

  /// Modeled time of the elementwise passes of |plan| (PREMUL_SUM's scaling, AVG's division).
  double reduce_op_seconds(const ReducePlan& plan, const std::vector<at::Tensor>& inputs,
                           const std::vector<at::Tensor>& outputs) const {
    int64_t in_elements = 0, out_elements = 0;
    for (const auto& t : inputs) in_elements += t.defined() ? t.numel() : 0;
    for (const auto& t : outputs) out_elements += t.defined() ? t.numel() : 0;
    const at::ScalarType dtype =
        !inputs.empty() && inputs[0].defined() ? inputs[0].scalar_type() : at::kFloat;
    return modeled_reduce_op_seconds(plan, cluster_->spec(), lnc_, dtype, in_elements,
                                     out_elements);
  }

  static std::vector<at::Tensor> clones(const std::vector<at::Tensor>& tensors) {
    std::vector<at::Tensor> out;
    out.reserve(tensors.size());
    for (const auto& t : tensors) out.push_back(t.clone());
    return out;
  }

  void check_route(const char* op) {
    const std::string& error = route_error();
    TORCH_CHECK_WITH(DistBackendError, error.empty(), op, " on a group of ", getSize(),
                     " ranks: ", error);
  }

  static void check_neuron(const char* op, const std::vector<at::Tensor>& tensors) {
    for (const auto& t : tensors) {
      TORCH_CHECK(
          !t.defined() || t.device().is_privateuseone(), "a tensor on ", t.device().str(),
          " was passed to the neuron collective ", op,
          ". Move it to the neuron device first (tensor.to(\"neuron\")), or initialize the process "
          "group with \"cpu:gloo,neuron:neuron\" so that cpu tensors use Gloo.");
    }
  }

  /// Waits for the work queued on the current stream of each tensor's device. Once compiled
  /// modules hold collectives, for every stream of the device: a module's collective runs on
  /// its stream's worker, and an eager collective issued meanwhile on another stream must not
  /// use the transport before it, or the ranks could see the two in different orders.
  static void sync_all(const std::vector<at::Tensor>& tensors) {
    std::vector<c10::DeviceIndex> seen;
    for (const auto& t : tensors) {
      if (!t.defined() || t.is_cpu()) continue;
      const c10::DeviceIndex d = t.device().index();
      if (std::find(seen.begin(), seen.end(), d) != seen.end()) continue;
      seen.push_back(d);
      if (module_collectives.load(std::memory_order_acquire))
        synchronize(d);
      else
        sync_current_stream(d);
    }
  }

  static at::Tensor alias(const at::Tensor& t) {
    if (!t.defined() || t.is_cpu()) return t;
    return at::from_blob(t.data_ptr(), t.sizes(), t.strides(), t.options().device(at::kCPU));
  }

  static std::vector<at::Tensor> aliases(const std::vector<at::Tensor>& tensors) {
    std::vector<at::Tensor> out;
    out.reserve(tensors.size());
    for (const auto& t : tensors) out.push_back(alias(t));
    return out;
  }

  static std::vector<std::vector<at::Tensor>> alias_lists(
      const std::vector<std::vector<at::Tensor>>& lists) {
    std::vector<std::vector<at::Tensor>> out;
    for (const auto& l : lists) out.push_back(aliases(l));
    return out;
  }

  static std::vector<at::Tensor> flatten(const std::vector<std::vector<at::Tensor>>& lists) {
    std::vector<at::Tensor> out;
    for (const auto& l : lists) out.insert(out.end(), l.begin(), l.end());
    return out;
  }

  static std::vector<c10::Device> devices_of(const std::vector<at::Tensor>& tensors) {
    std::vector<c10::Device> devices;
    for (const auto& t : tensors) {
      if (t.defined() && std::find(devices.begin(), devices.end(), t.device()) == devices.end()) {
        devices.push_back(t.device());
      }
    }
    return devices;
  }

  c10::intrusive_ptr<c10d::Work> done(c10d::OpType type, const std::vector<at::Tensor>& outputs) {
    return c10::make_intrusive<NeuronWork>(type, outputs, devices_of(outputs));
  }

  /// Checks and waits for the producers like run(), starts |call|(aliases) on the transport
  /// and returns work that completes with it.
  template <typename Call>
  c10::intrusive_ptr<c10d::Work> run_pending(const char* op, c10d::OpType type,
                                             std::vector<at::Tensor>& tensors, Call call) {
    check_neuron(op, tensors);
    check_route(op);
    sync_all(tensors);
    std::vector<at::Tensor> tensor_aliases = aliases(tensors);
    auto work = call(tensor_aliases);
    uint64_t bytes = 0;
    for (const auto& t : tensors) bytes += t.defined() ? t.nbytes() : 0;
    if (!tensors.empty() && tensors[0].defined() && getSize() > 1) {
      add_modeled_seconds(
          tensors[0].device().index(), op,
          coll::estimate(*cluster_, route_, coll::Collective::kSendRecv, bytes).seconds);
    }
    return c10::make_intrusive<NeuronPendingWork>(std::move(work), type, tensors,
                                                  std::move(tensor_aliases));
  }

  /// Checks, waits for the producers, runs |call|(input aliases, output aliases) on the
  /// transport, waits for it, and charges the modeled time (plus |extra_seconds| of the
  /// reduction's own elementwise passes).
  template <typename Call>
  c10::intrusive_ptr<c10d::Work> run(const char* op, c10d::OpType type, coll::Collective collective,
                                     std::vector<at::Tensor>& inputs,
                                     std::vector<at::Tensor>& outputs, Call call,
                                     double extra_seconds = 0) {
    check_neuron(op, inputs);
    check_neuron(op, outputs);
    check_route(op);
    sync_all(inputs);
    sync_all(outputs);
    std::vector<at::Tensor> in_alias = aliases(inputs);
    std::vector<at::Tensor> out_alias = &inputs == &outputs ? in_alias : aliases(outputs);
    if (!shapes_only()) {  // shape-only: no data moves, only the modeled time is charged
      auto work = call(in_alias, out_alias);
      work->wait();
    }
    uint64_t bytes = 0;
    for (const auto& t : (collective == coll::Collective::kReduceScatter ? inputs : outputs)) {
      if (t.defined()) bytes += t.nbytes();
    }
    // Every member joins, also one without outputs (gather's non-root ranks).
    join_members(device_of_first(outputs, inputs));
    if (!outputs.empty() && outputs[0].defined()) {
      const c10::DeviceIndex device = outputs[0].device().index();
      const double transfer =
          getSize() > 1 ? coll::estimate(*cluster_, route_, collective, bytes).seconds : 0.0;
      add_modeled_seconds(device, op, transfer + extra_seconds);
    }
    return done(type, outputs);
  }

  /// Moves the current stream of |device| on the modeled clock to the latest arrival of the
  /// group's members: each sends where its own stream is ready (DeviceClock::ready), and the
  /// collective starts at the maximum, so a member that arrives early waits (idle time), as on
  /// hardware. Every member calls it once per collective, in the collectives' order. In a fake
  /// world (vtrn estimate) the transport moves nothing and each rank keeps its own arrival.
  /// A member with no neuron tensor (|device| < 0) sends 0 and moves no clock.
  void join_members(c10::DeviceIndex device) {
    if (getSize() <= 1) return;
    const int stream = device >= 0 ? static_cast<int>(current_stream(device).id()) : 0;
    const double ready = device >= 0 ? device_clock(device).ready(stream) : 0.0;
    std::vector<at::Tensor> arrival{at::full({1}, ready, at::kDouble)};
    c10d::AllreduceOptions o;
    o.reduceOp = c10d::ReduceOp::MAX;
    transport_->allreduce(arrival, o)->wait();
    if (device >= 0) device_clock(device).wait(stream, arrival[0].item<double>());
  }

  /// The device of the first defined neuron tensor of |a|, else of |b|; -1 when none.
  static c10::DeviceIndex device_of_first(const std::vector<at::Tensor>& a,
                                          const std::vector<at::Tensor>& b) {
    for (const auto* list : {&a, &b}) {
      for (const auto& t : *list) {
        if (t.defined() && t.device().is_privateuseone()) return t.device().index();
      }
    }
    return -1;
  }

  c10::intrusive_ptr<c10d::Backend> transport_;
  int lnc_;
  std::unique_ptr<topo::Cluster> cluster_;
  std::unique_ptr<topo::LinkGraph> graph_;
  std::vector<int> cluster_ranks_;
  std::once_flag route_once_;
  coll::Route route_;
};

/// `custom_call @vtrn.collective` (compiler/collective_call.h): the named process group's
/// `neuron` backend moves the module's buffers.
void run_collective_call(const runtime::CustomCallArgs& a) {
  const std::optional<compiler::CollectiveCall> c =
      compiler::parse_collective_config(a.backend_config);
  if (!c || a.inputs.size() != 1 || a.outputs.size() != 1)
    throw runtime::ExecError(
        "custom_call @vtrn.collective has a malformed call (backend_config \"" + a.backend_config +
        "\")");
  c10::intrusive_ptr<c10d::ProcessGroup> pg;
  try {
    pg = c10d::resolve_process_group(c->group);
  } catch (const std::exception& e) {
    throw runtime::ExecError("custom_call @vtrn.collective names process group \"" + c->group +
                             "\", which this process does not have: " + e.what());
  }
  c10::intrusive_ptr<c10d::Backend> b = pg->getBackend(c10::DeviceType::PrivateUse1);
  auto* neuron = dynamic_cast<NeuronBackend*>(b.get());
  if (neuron == nullptr || neuron->getSize() != c->size)
    throw runtime::ExecError("process group \"" + c->group + "\" has no neuron backend of " +
                             std::to_string(c->size) +
                             " ranks for the collective of a compiled module");
  neuron->run_module_collective(*c, a.input_types[0], a.inputs[0], a.output_types[0], a.outputs[0]);
}

}  // namespace

// A functional collective of a compiled graph, rewritten by the neuron backend: lowered as
// `custom_call @vtrn.collective` (torch/lowering/lowerings_collective.cc).
TORCH_LIBRARY_FRAGMENT(vtrn, m) {
  m.def(
      "collective(Tensor input, str kind, str reduce_op, int group_size, str group_name, "
      "float seconds) -> Tensor");
}

void bind_distributed(py::module_& m) {
  runtime::register_custom_call(std::string(compiler::kCollectiveCallTarget), run_collective_call);
  py::class_<NeuronBackend, c10d::Backend, c10::intrusive_ptr<NeuronBackend>>(m, "NeuronBackend")
      .def(
          py::init([](const c10::intrusive_ptr<c10d::Backend>& transport, int rank, int size,
                      const std::string& instance, int lnc, int nodes, const Placement& placement) {
            try {
              return c10::make_intrusive<NeuronBackend>(transport, rank, size, instance, lnc, nodes,
                                                        placement);
            } catch (const std::invalid_argument& e) {
              throw py::value_error(e.what());
            }
          }),
          py::arg("transport"), py::arg("rank"), py::arg("size"), py::arg("instance"),
          py::arg("lnc"), py::arg("nodes"), py::arg("placement"))
      .def("route_error", &NeuronBackend::route_error)
      .def("module_collective_seconds", &NeuronBackend::module_collective_seconds, py::arg("kind"),
           py::arg("reduce_op"), py::arg("dtype"), py::arg("input_elements"),
           py::arg("output_elements"),
           "Modeled seconds of a collective inside a compiled module on this group.");
  m.def("modeled_collective_seconds", &modeled_seconds, py::arg("device"),
        "Modeled time of the collectives this process ran on |device|, in seconds.");
}

}  // namespace vtrn::torch_adapter
