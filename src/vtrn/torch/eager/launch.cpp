#include "vtrn/torch/eager/launch.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include <ATen/ops/copy_native.h>
#include <ATen/ops/empty.h>
#include <c10/util/SmallVector.h>
#include <c10/util/accumulate.h>

#include "vtrn/torch/stream.h"

namespace vtrn::torch_adapter::eager {

void Launch::plan_outputs(const AliasSafety& aliasing) {
  staged.assign(outputs.size(), false);
  // Output j is written through a staging buffer when input p overlaps it, unless it is the
  // same contiguous view and the op may write its result over that argument.
  auto input_forces_staging = [&](size_t j, size_t p) {
    const BufferRef& o = outputs[j];
    const BufferRef& in = inputs[p];
    return o.overlaps(in) && !(o.same_view(in) && in.contiguous && aliasing.can_alias(j, p));
  };
  // Views can only overlap on one storage: each output is compared with the inputs and earlier
  // outputs of its own storage, found by binary search (a foreach launch has hundreds of
  // buffers, nearly every one on a storage of its own).
  if (outputs.size() * (inputs.size() + outputs.size()) <= 64) {  // few: compare every pair
    for (size_t j = 0; j < outputs.size(); ++j) {
      bool stage = !outputs[j].contiguous;
      for (size_t p = 0; p < inputs.size() && !stage; ++p) stage = input_forces_staging(j, p);
      for (size_t k = 0; k < j && !stage; ++k) stage = outputs[j].overlaps(outputs[k]);
      staged[j] = stage;
    }
    return;
  }
  using Key = std::pair<const void*, size_t>;
  auto by_storage = [](const std::vector<BufferRef>& refs) {
    std::vector<Key> keys;
    keys.reserve(refs.size());
    for (size_t i = 0; i < refs.size(); ++i)
      if (!refs[i].is_scalar) keys.emplace_back(refs[i].storage.unsafeGetStorageImpl(), i);
    std::sort(keys.begin(), keys.end());
    return keys;
  };
  const std::vector<Key> in_keys = by_storage(inputs), out_keys = by_storage(outputs);
  auto same_storage = [](const std::vector<Key>& keys, const BufferRef& o) {
    const void* s = o.storage.unsafeGetStorageImpl();
    return std::make_pair(std::lower_bound(keys.begin(), keys.end(), Key{s, 0}),
                          std::lower_bound(keys.begin(), keys.end(), Key{s, SIZE_MAX}));
  };
  for (size_t j = 0; j < outputs.size(); ++j) {
    const BufferRef& o = outputs[j];
    bool stage = !o.contiguous;
    if (!o.is_scalar) {
      const auto [in_lo, in_hi] = same_storage(in_keys, o);
      for (auto it = in_lo; it != in_hi && !stage; ++it)
        stage = input_forces_staging(j, it->second);
      const auto [out_lo, out_hi] = same_storage(out_keys, o);
      for (auto it = out_lo; it != out_hi && it->second < j && !stage; ++it)
        stage = o.overlaps(outputs[it->second]);
    }
    staged[j] = stage;
  }
}

void Launch::execute() const {
  if (!run) {
    for (const BufferRef& o : outputs) {
      at::Tensor dst = o.cpu();
      if (at::isFloatingType(o.dtype) || at::isComplexType(o.dtype)) {
        dst.fill_(std::numeric_limits<double>::quiet_NaN());
      } else {
        dst.fill_(4);
      }
    }
    return;
  }
  c10::SmallVector<const void*, 8> in(inputs.size());
  // A non-contiguous input (a rotary embedding's even or odd half, a transposed head split,
  // an expand) is passed as the view it is: the executable's fused loops read it where it
  // lies, and copy it first only for the kernels that need it dense.
  c10::SmallVector<const int64_t*, 8> strides;
  const hlo::Block& main = executable->executable().module.main;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const BufferRef& b = inputs[i];
    if (b.is_scalar) {
      in[i] = b.scalar.data();
      continue;
    }
    in[i] = b.base();
    if (b.contiguous) continue;
    const std::vector<int64_t>& dims = main.type(main.args[i]).dims;
    TORCH_INTERNAL_ASSERT(std::equal(dims.begin(), dims.end(), b.sizes.begin(), b.sizes.end()),
                          "an input view's sizes differ from its parameter's");
    if (strides.empty()) strides.assign(inputs.size(), nullptr);
    strides[i] = b.strides.data();
  }
  c10::SmallVector<void*, 4> out(outputs.size());
  c10::SmallVector<at::Tensor, 4> staging(outputs.size());
  for (size_t j = 0; j < outputs.size(); ++j) {
    if (staged[j]) {
      staging[j] = at::empty(outputs[j].sizes, at::TensorOptions().dtype(outputs[j].dtype));
      out[j] = staging[j].mutable_data_ptr();
    } else {
      out[j] = outputs[j].base();
    }
  }
  executable->run(std::span<const void* const>(in.data(), in.size()),
                  std::span<void* const>(out.data(), out.size()),
                  std::span<const int64_t* const>(strides.data(), strides.size()));
  for (size_t j = 0; j < outputs.size(); ++j) {
    if (!staged[j]) continue;
    at::Tensor dst = outputs[j].cpu();
    at::native::copy_(dst, staging[j], false);
  }
}

namespace {
std::atomic<uint64_t> tensor_flops{0};

// The executable's kernels, each on the engine class that bounds it; adds their FLOPs to
// |flops|.
runtime::ModeledWork modeled_work(const compiler::Executable& exe, double* flops_out) {
  runtime::ModeledWork w;
  double flops = 0;
  for (const compiler::Kernel& k : exe.kernels) {
    runtime::EngineClass engine = runtime::EngineClass::kDma;
    switch (k.cost.engine) {
      case cost::Engine::kTensor:
        engine = runtime::EngineClass::kTensor;
        break;
      case cost::Engine::kVector:
        engine = runtime::EngineClass::kVector;
        break;
      case cost::Engine::kScalar:
        engine = runtime::EngineClass::kScalar;
        break;
      case cost::Engine::kGpSimd:
        engine = runtime::EngineClass::kGpSimd;
        break;
      case cost::Engine::kDma:
        engine = runtime::EngineClass::kDma;
        break;
    }
    w.busy[static_cast<size_t>(engine)] += k.cost.time_s;
    flops += k.cost.flops;
  }
  tensor_flops.fetch_add(static_cast<uint64_t>(flops), std::memory_order_relaxed);
  *flops_out += flops;
  return w;
}

// One eager op compiles to a handful of HLO ops (its computation, broadcasts, conversions).
constexpr size_t kSingleOpMaxHloOps = 16;

size_t hlo_ops(const compiler::Executable& exe) {
  size_t n = 0;
  for (const compiler::Kernel& k : exe.kernels) n += k.ops.size();
  return n;
}

}  // namespace

double launched_tensor_flops() {
  return static_cast<double>(tensor_flops.load(std::memory_order_relaxed));
}

void enqueue_launch(c10::DeviceIndex device, const char* name, Launch launch) {
  HostCost cost;
  const runtime::ModeledWork modeled = modeled_work(launch.executable->executable(), &cost.flops);
  // The queued launch names its device buffers by address. Their storages are dropped only
  // after it is queued (or has run), so that a block freed now is fenced by this launch.
  c10::SmallVector<c10::Storage, 8> held;
  for (auto* refs : {&launch.inputs, &launch.outputs}) {
    for (BufferRef& b : *refs) {
      if (!b.is_scalar)
        cost.bytes += static_cast<double>(c10::multiply_integers(b.sizes)) *
                      static_cast<double>(c10::elementSize(b.dtype));
      held.push_back(b.release_storage());
    }
  }
  // A fused group (Adaptive Eager Execution, a compiled graph) already shares one handoff among
  // its ops, and the worker runs it while this thread issues the next group: it counts as
  // large, however few bytes it touches. With the issuing thread running such groups too, a
  // loop of tiny ops under AEE took 11 us/op instead of 3 on a loaded 2-core machine.
  if (hlo_ops(launch.executable->executable()) > kSingleOpMaxHloOps)
    cost.flops = std::numeric_limits<double>::infinity();
  run_kernel(device, name, modeled, cost, [l = std::move(launch)] { l.execute(); });
}

}  // namespace vtrn::torch_adapter::eager
