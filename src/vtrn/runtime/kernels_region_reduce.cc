// stablehlo.reduce with any reducer region and any number of operands (argmax and argmin are a
// two-operand reduce of (values, iota) whose region compares and selects). The region is run
// as a small program over vectors of outputs: for each position along the reduced dims, in
// row-major order, every output's accumulators and that position's elements go through the
// region's ops at once, with the loops the fused kernels use (kernels_elementwise.h).
#include <algorithm>
#include <cstring>
#include <vector>

#include "vtrn/runtime/executor.h"
#include "vtrn/runtime/executor_kernels.h"
#include "vtrn/runtime/kernels_elementwise.h"

namespace vtrn::runtime::kernels {

using hlo::DType;
using hlo::OpKind;
using namespace elementwise;  // NOLINT(google-build-using-namespace): the chunk loops

namespace {

constexpr std::int64_t kOutputsPerPass = 1024;

// One value of the region over |n| outputs: float, double or int64 elements by its class.
struct Chunk {
  Cls cls = Cls::kF32;
  DType dtype = DType::kF32;
  std::vector<std::int64_t> storage;  // 8 bytes per element is enough for every class
  void* data() { return storage.data(); }
  const void* data() const { return storage.data(); }
};

void fill_from(Chunk& c, DType d, const std::uint8_t* p, const std::int64_t* index,
               std::int64_t n) {
  c.dtype = d;
  c.cls = cls_of(d);
  c.storage.resize(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t at = index ? index[i] : 0;
    if (c.cls == Cls::kF32)
      static_cast<float*>(c.data())[i] = load_elem<float>(d, p, at);
    else if (c.cls == Cls::kF64)
      static_cast<double*>(c.data())[i] = load_elem<double>(d, p, at);
    else
      static_cast<std::int64_t*>(c.data())[i] = load_elem<std::int64_t>(d, p, at);
  }
}

void run_instr(const hlo::Block& region, const hlo::Op& op, std::vector<Chunk>& v, std::int64_t n) {
  const DType od = region.type(op.results[0]).dtype;
  Chunk& o = v[static_cast<std::size_t>(op.results[0])];
  o.dtype = od;
  o.cls = cls_of(od);
  o.storage.resize(static_cast<std::size_t>(n));
  auto in = [&](int i) -> Chunk& { return v[static_cast<std::size_t>(op.operands[i])]; };
  if (op.kind == OpKind::kConstant) {
    const std::vector<std::uint8_t> bytes = op.literal.expanded();
    fill_from(o, od, bytes.data(), nullptr, n);
    return;
  }
  if (op.kind == OpKind::kConvert) {
    convert(in(0).dtype, od, in(0).data(), o.data(), n);
    return;
  }
  auto* io = static_cast<std::int64_t*>(o.data());
  if (op.kind == OpKind::kCompare) {
    const Chunk &a = in(0), &b = in(1);
    if (a.cls == Cls::kF32)
      compare(op.comparison, static_cast<const float*>(a.data()),
              static_cast<const float*>(b.data()), io, n);
    else if (a.cls == Cls::kF64)
      compare(op.comparison, static_cast<const double*>(a.data()),
              static_cast<const double*>(b.data()), io, n);
    else if (a.dtype == DType::kU64)
      compare(op.comparison, static_cast<const std::uint64_t*>(a.data()),
              static_cast<const std::uint64_t*>(b.data()), io, n);
    else
      compare(op.comparison, static_cast<const std::int64_t*>(a.data()),
              static_cast<const std::int64_t*>(b.data()), io, n);
    return;
  }
  if (op.kind == OpKind::kSelect) {
    const auto* p = static_cast<const std::int64_t*>(in(0).data());
    if (o.cls == Cls::kF32)
      select(p, static_cast<const float*>(in(1).data()), static_cast<const float*>(in(2).data()),
             static_cast<float*>(o.data()), n);
    else if (o.cls == Cls::kF64)
      select(p, static_cast<const double*>(in(1).data()), static_cast<const double*>(in(2).data()),
             static_cast<double*>(o.data()), n);
    else
      select(p, static_cast<const std::int64_t*>(in(1).data()),
             static_cast<const std::int64_t*>(in(2).data()), io, n);
    return;
  }
  const bool unary = hlo::is_unary_elementwise(op.kind);
  if (!unary && !hlo::is_binary_elementwise(op.kind))
    throw ExecError("stablehlo.reduce: the vtrn executor cannot run stablehlo." +
                    std::string(hlo::op_name(op.kind)) +
                    " inside a reducer region (it runs elementwise ops, compare, select, "
                    "convert and constants there)");
  const void* a = in(0).data();
  const void* b = unary ? nullptr : in(1).data();
  const DType id = in(0).dtype;
  if (o.cls == Cls::kF32) {
    auto* fo = static_cast<float*>(o.data());
    if (unary)
      unary_float(op.kind, static_cast<const float*>(a), fo, n);
    else
      binary_float(op.kind, static_cast<const float*>(a), static_cast<const float*>(b), fo, n);
    round_f32(od, fo, n);
  } else if (o.cls == Cls::kF64) {
    auto* fo = static_cast<double*>(o.data());
    if (unary)
      unary_float(op.kind, static_cast<const double*>(a), fo, n);
    else
      binary_float(op.kind, static_cast<const double*>(a), static_cast<const double*>(b), fo, n);
  } else {
    if (unary)
      unary_int(op.kind, id, static_cast<const std::int64_t*>(a), io, n);
    else
      binary_int(op.kind, id, static_cast<const std::int64_t*>(a),
                 static_cast<const std::int64_t*>(b), io, n);
    wrap_i64(od, io, n);
  }
}

}  // namespace

void region_reduce(const hlo::Block& b, const hlo::Op& op,
                   const std::vector<const std::uint8_t*>& in,
                   const std::vector<std::uint8_t*>& out) {
  const std::size_t nin = op.operands.size() / 2;
  const hlo::Block& region = *op.regions.at(0);
  const std::vector<std::int64_t>& dims = b.type(op.operands[0]).dims;
  const std::vector<std::int64_t> strides = strides_of(dims);
  // Input offsets of each output (kept dims) and of each reduced position (reduced dims).
  std::vector<std::int64_t> out_base{0}, red_base{0};
  for (std::size_t d = 0; d < dims.size(); ++d) {
    const bool reduced =
        std::find(op.dims.begin(), op.dims.end(), static_cast<std::int64_t>(d)) != op.dims.end();
    std::vector<std::int64_t>& base = reduced ? red_base : out_base;
    std::vector<std::int64_t> next;
    next.reserve(base.size() * static_cast<std::size_t>(dims[d]));
    for (std::int64_t o : base)
      for (std::int64_t i = 0; i < dims[d]; ++i) next.push_back(o + i * strides[d]);
    base = std::move(next);
  }
  const auto out_n = static_cast<std::int64_t>(out_base.size());
  std::vector<Chunk> v(region.types.size());
  std::vector<Chunk> acc(nin);
  std::vector<std::int64_t> index;
  for (std::int64_t o0 = 0; o0 < out_n; o0 += kOutputsPerPass) {
    const std::int64_t n = std::min(kOutputsPerPass, out_n - o0);
    for (std::size_t i = 0; i < nin; ++i) {
      const DType d = b.type(op.operands[i]).dtype;
      fill_from(acc[i], d, in[nin + i], nullptr, n);
    }
    index.resize(static_cast<std::size_t>(n));
    for (std::int64_t r : red_base) {
      for (std::int64_t k = 0; k < n; ++k)
        index[static_cast<std::size_t>(k)] = out_base[o0 + k] + r;
      for (std::size_t i = 0; i < nin; ++i) {
        v[static_cast<std::size_t>(region.args[i])] = acc[i];
        fill_from(v[static_cast<std::size_t>(region.args[nin + i])], b.type(op.operands[i]).dtype,
                  in[i], index.data(), n);
      }
      for (const hlo::Op& rop : region.ops) run_instr(region, rop, v, n);
      for (std::size_t i = 0; i < nin; ++i) acc[i] = v[static_cast<std::size_t>(region.results[i])];
    }
    for (std::size_t i = 0; i < nin; ++i)
      store_contiguous(acc[i].dtype, acc[i].data(), n, out[i], o0);
  }
}

}  // namespace vtrn::runtime::kernels
