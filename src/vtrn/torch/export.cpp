#define TORCH_ASSERT_ONLY_METHOD_OPERATORS
#include "vtrn/torch/export.h"

#include <cstring>
#include <mutex>
#include <stdexcept>
#include <utility>

#include "vtrn/hlo/printer.h"
#include "vtrn/hlo/verify.h"
#include "vtrn/torch/eager/buffer_ref.h"
#include "vtrn/torch/eager/dtype_mapping.h"
#include "vtrn/torch/eager/pending_group.h"

namespace vtrn::torch_adapter {
namespace {

using eager::BufferRef;

struct Recorded {
  hlo::Module module;
  std::vector<BufferRef> inputs, outputs;
};

std::mutex& records_mutex() {
  static std::mutex m;
  return m;
}
std::vector<Recorded>& records() {
  static std::vector<Recorded> r;
  return r;
}

// Appends |src|'s ops to |dst| with its arguments bound to |args|; returns its results.
std::vector<int> inline_module(const hlo::Block& src, hlo::Block& dst,
                               const std::vector<int>& args) {
  std::vector<int> map(src.types.size(), -1);
  for (std::size_t i = 0; i < args.size(); ++i)
    map[static_cast<std::size_t>(src.args[i])] = args[i];
  for (hlo::Op op : src.ops) {
    for (int& v : op.operands) v = map[static_cast<std::size_t>(v)];
    for (int& r : op.results) {
      const int nv = dst.add_value(src.type(r));
      map[static_cast<std::size_t>(r)] = nv;
      r = nv;
    }
    dst.ops.push_back(std::move(op));
  }
  std::vector<int> out;
  for (int r : src.results) out.push_back(map[static_cast<std::size_t>(r)]);
  return out;
}

// Whether |in| reads elements of the dense buffer |buf| with its dtype.
bool inside(const BufferRef& buf, const BufferRef& in) {
  if (in.is_scalar || buf.is_scalar || !buf.contiguous || buf.dtype != in.dtype ||
      buf.storage.unsafeGetStorageImpl() != in.storage.unsafeGetStorageImpl())
    return false;
  auto [a0, a1] = buf.byte_range();
  auto [b0, b1] = in.byte_range();
  return a0 <= b0 && b1 <= a1;
}

// The value |ref| stands for among |bufs| (whose values are |vals|): the same view, or a view
// computed from a dense one; -1 when none holds it.
int value_of(const BufferRef& ref, const std::vector<BufferRef>& bufs, const std::vector<int>& vals,
             hlo::Block& dst) {
  for (std::size_t i = 0; i < bufs.size(); ++i)
    if (bufs[i].same_view(ref)) return vals[i];
  for (std::size_t i = 0; i < bufs.size(); ++i) {
    if (!inside(bufs[i], ref)) continue;
    const hlo::Module view = eager::view_module(dst.type(vals[i]), bufs[i], ref);
    return inline_module(view.main, dst, {vals[i]})[0];
  }
  return -1;
}

std::string describe(const BufferRef& r) {
  std::string s = "[";
  for (std::size_t i = 0; i < r.sizes.size(); ++i)
    s += (i ? ", " : "") + std::to_string(r.sizes[i]);
  return s + "] " + std::string(c10::toString(r.dtype));
}

}  // namespace

void start_export_recording() {
  {
    std::lock_guard<std::mutex> lock(records_mutex());
    records().clear();
  }
  set_group_recorder([](const hlo::Module& m, const std::vector<BufferRef>& in,
                        const std::vector<BufferRef>& out) {
    std::lock_guard<std::mutex> lock(records_mutex());
    records().push_back(Recorded{m, in, out});
  });
}

std::string finish_export_recording(const std::vector<at::Tensor>& inputs,
                                    const std::vector<at::Tensor>& outputs) {
  set_group_recorder({});
  std::vector<Recorded> recs;
  {
    std::lock_guard<std::mutex> lock(records_mutex());
    recs.swap(records());
  }
  if (recs.size() > 1)
    throw std::runtime_error(
        "the program ran as " + std::to_string(recs.size()) +
        " modules, not one: an op ended the graph capture (an op that ran on the CPU fallback, "
        "a host read such as .item(), or a write to part of a tensor the graph computed)");
  hlo::Module m;
  m.name = "exported";
  hlo::Block& b = m.main;
  std::vector<BufferRef> in_refs;
  std::vector<int> in_vals;
  for (const at::Tensor& t : inputs) {
    const auto d = eager::to_hlo(t.scalar_type());
    if (!d)
      throw std::runtime_error("input of dtype " + std::string(c10::toString(t.scalar_type())) +
                               " has no StableHLO type");
    const int v =
        b.add_value(hlo::TensorType(*d, std::vector<int64_t>(t.sizes().begin(), t.sizes().end())));
    b.args.push_back(v);
    in_vals.push_back(v);
    in_refs.push_back(BufferRef::of(t));
  }
  std::vector<BufferRef> group_refs;
  std::vector<int> group_vals;
  if (!recs.empty()) {
    const Recorded& rec = recs[0];
    const hlo::Block& g = rec.module.main;
    std::vector<int> args;
    for (std::size_t p = 0; p < rec.inputs.size(); ++p) {
      const BufferRef& r = rec.inputs[p];
      const hlo::TensorType& type = g.type(g.args[p]);
      if (r.is_scalar) {
        hlo::Op c;
        c.kind = hlo::OpKind::kConstant;
        c.literal.type = type;
        c.literal.data.assign(r.scalar.begin(), r.scalar.begin() + hlo::dtype_size(type.dtype));
        c.results.push_back(b.add_value(type));
        args.push_back(c.results[0]);
        b.ops.push_back(std::move(c));
        continue;
      }
      const int v = value_of(r, in_refs, in_vals, b);
      if (v < 0)
        throw std::runtime_error("the graph reads a tensor " + describe(r) +
                                 " that is none of the program's inputs (a tensor made outside "
                                 "the graph); pass it as an input or a buffer of the module");
      args.push_back(v);
    }
    group_vals = inline_module(g, b, args);
    group_refs = rec.outputs;
  }
  for (std::size_t j = 0; j < outputs.size(); ++j) {
    const BufferRef r = BufferRef::of(outputs[j]);
    int v = value_of(r, group_refs, group_vals, b);
    if (v < 0) v = value_of(r, in_refs, in_vals, b);
    if (v < 0)
      throw std::runtime_error("output " + std::to_string(j) + " " + describe(r) +
                               " is neither computed by the graph nor an input of it");
    b.results.push_back(v);
  }
  hlo::verify_module(m);
  return hlo::print_module(m);
}

}  // namespace vtrn::torch_adapter
