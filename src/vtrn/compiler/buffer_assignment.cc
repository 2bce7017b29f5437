#include "vtrn/compiler/buffer_assignment.h"

#include <algorithm>
#include <numeric>
#include <set>

#include "vtrn/compiler/executable.h"

namespace vtrn::compiler {

using hlo::Block;
using hlo::Op;
using hlo::OpKind;

bool BufferAssignment::can_write_over(std::size_t r, std::size_t a) const {
  if (r >= result_writer.size() || a >= arg_last_reader.size()) return false;
  const int w = result_writer[r];
  if (w < 0 || result_types[r] != arg_types[a]) return false;
  const int last = arg_last_reader[a];
  if (last < w) return true;
  return last == w && result_elementwise[r] && arg_read_elementwise[a];
}

namespace {

bool complex_op(const Block& b, const Op& op) {
  for (int v : op.operands)
    if (hlo::is_complex(b.type(v).dtype)) return true;
  for (int v : op.results)
    if (hlo::is_complex(b.type(v).dtype)) return true;
  return false;
}

// Whether |k| runs as an elementwise loop writing element i of its result after reading
// element i of each operand it loads contiguously: a fused kernel without a reduce, or one
// elementwise op (the executor runs both as a fused loop).
bool elementwise_loop(const Block& b, const Kernel& k) {
  if (k.kind != KernelKind::kFused && k.kind != KernelKind::kOp) return false;
  for (int i : k.ops) {
    const Op& op = b.ops[i];
    const bool loop_op = hlo::is_elementwise(op.kind) ||
                         (k.kind == KernelKind::kFused && op.kind == OpKind::kBroadcastInDim);
    if (!loop_op || complex_op(b, op)) return false;
  }
  return hlo::is_elementwise(b.ops[k.ops.back()].kind);
}

// A fused loop of elementwise ops, broadcasts and reduces only (no matmul head).
bool plain_loop(const Block& b, const Kernel& k) {
  for (int i : k.ops) {
    const OpKind kind = b.ops[i].kind;
    if (!hlo::is_elementwise(kind) && kind != OpKind::kBroadcastInDim && kind != OpKind::kReduce)
      return false;
  }
  return true;
}

// A kernel the executor runs as a fused loop: a plain fused kernel or one such op alone.
bool loop_kernel(const Block& b, const Kernel& k) {
  return (k.kind == KernelKind::kFused || k.kind == KernelKind::kOp) && plain_loop(b, k);
}

std::int64_t aligned(std::int64_t bytes) {
  const std::int64_t a = BufferAssignment::kAlignment;
  return (std::max<std::int64_t>(bytes, 1) + a - 1) / a * a;
}

}  // namespace

BufferAssignment assign_buffers(const Block& b, const std::vector<Kernel>& kernels) {
  const std::size_t nv = b.types.size();
  const int end = static_cast<int>(kernels.size());  // "read after the last kernel": returned
  BufferAssignment p;
  p.offset.assign(nv, -1);
  p.def_kernel.assign(nv, -1);
  p.last_kernel.assign(nv, -1);
  std::vector<int> buffer_of(nv);  // the value whose buffer a value is (itself but for bitcasts)
  std::iota(buffer_of.begin(), buffer_of.end(), 0);
  std::vector<int> arg_index(nv, -1);
  for (std::size_t i = 0; i < b.args.size(); ++i) arg_index[b.args[i]] = static_cast<int>(i);
  p.arg_last_reader.assign(b.args.size(), -1);
  p.arg_read_elementwise.assign(b.args.size(), false);
  std::vector<int> computed_by(nv, -1);  // kernel writing the value's buffer
  std::vector<bool> loop_result(nv, false);
  const std::set<int> returned(b.results.begin(), b.results.end());

  // The executor may run a reducing loop and the plain loops (and reshapes) after it as one row
  // chain, interleaving their rows: such a run of kernels counts as one step for the live
  // ranges, so the loops of a chain never share bytes.
  std::vector<int> span_lo(kernels.size()), span_hi(kernels.size());
  for (int k = 0; k < end;) {
    int j = k + 1;
    if (loop_kernel(b, kernels[k])) {
      bool reduces = false;
      for (int i : kernels[k].ops) reduces = reduces || b.ops[i].kind == OpKind::kReduce;
      while (reduces && j < end &&
             (kernels[j].kind == KernelKind::kBitcast || kernels[j].kind == KernelKind::kConstant ||
              loop_kernel(b, kernels[j])))
        ++j;
    }
    for (int i = k; i < j; ++i) {
      span_lo[i] = k;
      span_hi[i] = j - 1;
    }
    k = j;
  }
  // Values an op of another kernel reads.
  std::vector<int> kernel_of_op(b.ops.size(), -1), kernel_of_value(nv, -1);
  for (int k = 0; k < end; ++k)
    for (int i : kernels[k].ops) {
      kernel_of_op[i] = k;
      for (int r : b.ops[i].results) kernel_of_value[r] = k;
    }
  std::vector<bool> read_outside(nv, false);
  for (std::size_t i = 0; i < b.ops.size(); ++i)
    for (int v : b.ops[i].operands)
      if (kernel_of_value[v] != kernel_of_op[i]) read_outside[v] = true;
  auto read = [&](int v, int k, bool elementwise) {
    const int buf = buffer_of[v];
    p.last_kernel[buf] = std::max(p.last_kernel[buf], k < end ? span_hi[k] : k);
    const int a = arg_index[buf];
    if (a < 0) return;
    if (p.arg_last_reader[a] < k) {
      p.arg_last_reader[a] = k;
      p.arg_read_elementwise[a] = elementwise;
    } else if (p.arg_last_reader[a] == k) {
      p.arg_read_elementwise[a] = p.arg_read_elementwise[a] && elementwise;
    }
  };

  for (int k = 0; k < end; ++k) {
    const Kernel& kernel = kernels[k];
    if (kernel.kind == KernelKind::kConstant) continue;
    const Op& root = b.ops[kernel.ops.back()];
    if (kernel.kind == KernelKind::kBitcast) {
      buffer_of[root.results[0]] = buffer_of[root.operands[0]];
      continue;
    }
    const bool loop = elementwise_loop(b, kernel);
    std::set<int> inside;
    for (int i : kernel.ops)
      for (int r : b.ops[i].results) inside.insert(r);
    for (int i : kernel.ops) {
      const Op& op = b.ops[i];
      // A loop reads an elementwise op's operands at the element it writes; a broadcast's
      // operand (a strided load) and a reduce's input are read elsewhere.
      const bool elementwise = loop && hlo::is_elementwise(op.kind);
      for (int v : op.operands)
        if (!inside.count(v)) read(v, k, elementwise);
    }
    std::vector<int> written(root.results.begin(), root.results.end());
    if (kernel.kind == KernelKind::kFused && root.kind != OpKind::kReduce)
      for (std::size_t i = 0; i + 1 < kernel.ops.size(); ++i) {
        // Multi-output fusion: the loop also stores a member's value that an op outside the
        // kernel reads or the module returns (the executor's FusedProgram picks the same ones).
        const Op& op = b.ops[kernel.ops[i]];
        const int v = op.results[0];
        if (op.kind != OpKind::kBroadcastInDim && (read_outside[v] || returned.count(v)))
          written.push_back(v);
      }
    for (int r : written) {
      computed_by[r] = k;
      loop_result[r] = loop;
      p.def_kernel[r] = span_lo[k];
    }
  }
  for (int r : b.results) read(r, end, false);
  for (std::size_t v = 0; v < nv; ++v) {
    p.def_kernel[v] = p.def_kernel[buffer_of[v]];
    if (p.last_kernel[v] < p.last_kernel[buffer_of[v]])
      p.last_kernel[v] = p.last_kernel[buffer_of[v]];
  }

  // Results: written straight into the caller's buffer by the kernel computing them.
  std::set<int> seen;
  for (int r : b.results) {
    p.result_types.push_back(b.type(r));
    const bool first = seen.insert(r).second;
    const int w = first && arg_index[r] < 0 ? computed_by[r] : -1;
    p.result_writer.push_back(w);
    p.result_elementwise.push_back(w >= 0 && loop_result[r]);
  }
  for (int a : b.args) p.arg_types.push_back(b.type(a));

  // Intermediates: computed by a kernel, not returned. Greedy by size: each buffer, largest
  // first, takes the lowest gap that fits among the placed buffers whose live ranges overlap.
  std::vector<int> bufs;
  for (std::size_t v = 0; v < nv; ++v)
    if (computed_by[v] >= 0 && !returned.count(static_cast<int>(v))) {
      bufs.push_back(static_cast<int>(v));
      p.intermediate_bytes += aligned(b.type(static_cast<int>(v)).byte_size());
    }
  std::stable_sort(bufs.begin(), bufs.end(), [&](int x, int y) {
    return aligned(b.type(x).byte_size()) > aligned(b.type(y).byte_size());
  });
  std::vector<int> placed;
  for (int v : bufs) {
    const std::int64_t size = aligned(b.type(v).byte_size());
    const int lo = p.def_kernel[v], hi = std::max(p.last_kernel[v], lo);
    std::vector<std::pair<std::int64_t, std::int64_t>> taken;  // [offset, end) of live ones
    for (int u : placed) {
      const int ulo = p.def_kernel[u], uhi = std::max(p.last_kernel[u], ulo);
      if (ulo <= hi && lo <= uhi)
        taken.emplace_back(p.offset[u], p.offset[u] + aligned(b.type(u).byte_size()));
    }
    std::sort(taken.begin(), taken.end());
    std::int64_t at = 0, best = -1, best_gap = 0;
    for (const auto& [s, e] : taken) {
      if (s - at >= size && (best < 0 || s - at < best_gap)) {
        best = at;
        best_gap = s - at;
      }
      at = std::max(at, e);
    }
    p.offset[v] = best >= 0 ? best : at;
    p.arena_bytes = std::max(p.arena_bytes, p.offset[v] + size);
    placed.push_back(v);
  }

  // Donation: each donated argument to the result it names, else to the first result of its
  // type that may be written over it.
  p.donor_of_result.assign(b.results.size(), -1);
  for (int pass = 0; pass < 2; ++pass)
    for (std::size_t a = 0; a < b.donation.size(); ++a) {
      const int d = b.donation[a];
      if (pass == 0 && d >= 0) {
        if (p.donor_of_result[d] < 0 && p.can_write_over(d, a))
          p.donor_of_result[d] = static_cast<int>(a);
      } else if (pass == 1 && d == Block::kAnyResult) {
        for (std::size_t r = 0; r < b.results.size(); ++r)
          if (p.donor_of_result[r] < 0 && p.can_write_over(r, a)) {
            p.donor_of_result[r] = static_cast<int>(a);
            break;
          }
      }
    }
  return p;
}

}  // namespace vtrn::compiler
