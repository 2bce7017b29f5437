#include "vtrn/nki/interpreter.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

namespace vtrn::nki {
namespace {

// Visits an access pattern one innermost row at a time: visit(first element index, offset of
// the row's first element, row stride, row length).
template <typename Visit>
void for_each_row(const Access& access, Visit&& visit) {
  const std::size_t rank = access.dims.size();
  if (rank == 0) {
    visit(std::int64_t{0}, access.offset, std::int64_t{1}, std::int64_t{1});
    return;
  }
  std::vector<std::int64_t> idx(rank, 0);
  const Dim inner = access.dims[rank - 1];
  std::int64_t element = 0, base = access.offset;
  while (true) {
    visit(element, base, inner.stride, inner.count);
    element += inner.count;
    std::int64_t d = static_cast<std::int64_t>(rank) - 2;
    for (; d >= 0; --d) {
      base += access.dims[d].stride;
      if (++idx[d] < access.dims[d].count) break;
      base -= access.dims[d].stride * access.dims[d].count;
      idx[d] = 0;
    }
    if (d < 0) return;
  }
}

template <typename T>
void load_row(const unsigned char* base, std::int64_t off, std::int64_t stride, std::int64_t n,
              double* out) {
  const T* p = reinterpret_cast<const T*>(base) + off;
  for (std::int64_t i = 0; i < n; ++i) out[i] = static_cast<double>(p[i * stride]);
}

void load_row(DType dtype, const unsigned char* base, std::int64_t off, std::int64_t stride,
              std::int64_t n, double* out) {
  switch (dtype) {
    case DType::kFloat32:
    case DType::kTFloat32:
      return load_row<float>(base, off, stride, n, out);
    case DType::kInt32:
      return load_row<std::int32_t>(base, off, stride, n, out);
    case DType::kBFloat16: {
      const auto* p = reinterpret_cast<const std::uint16_t*>(base) + off;
      for (std::int64_t i = 0; i < n; ++i) out[i] = bf16_to_float(p[i * stride]);
      return;
    }
    default: {
      const std::size_t size = dtype_size(dtype);
      for (std::int64_t i = 0; i < n; ++i) {
        out[i] = load_element(dtype, base + static_cast<std::size_t>(off + i * stride) * size);
      }
    }
  }
}

void store_row(DType dtype, unsigned char* base, std::int64_t off, std::int64_t stride,
               std::int64_t n, const double* in, const std::uint8_t* mask) {
  switch (dtype) {
    case DType::kFloat32: {
      float* p = reinterpret_cast<float*>(base) + off;
      for (std::int64_t i = 0; i < n; ++i) {
        if (!mask || mask[i]) p[i * stride] = static_cast<float>(in[i]);
      }
      return;
    }
    case DType::kBFloat16: {
      auto* p = reinterpret_cast<std::uint16_t*>(base) + off;
      for (std::int64_t i = 0; i < n; ++i) {
        if (!mask || mask[i]) p[i * stride] = float_to_bf16(static_cast<float>(in[i]));
      }
      return;
    }
    default: {
      const std::size_t size = dtype_size(dtype);
      for (std::int64_t i = 0; i < n; ++i) {
        if (!mask || mask[i]) {
          store_element(dtype, base + static_cast<std::size_t>(off + i * stride) * size, in[i]);
        }
      }
    }
  }
}

double reduce(AluOp op, double acc, double v) { return apply_alu(op, acc, v); }

}  // namespace

Interpreter::Interpreter(const Program& program)
    : program_(program), storage_(program.tensors().size()), frees_(program.instructions().size()) {
  // Last use of every internal tensor, so its memory goes back as soon as it is dead.
  std::vector<std::int64_t> last(program.tensors().size(), -1);
  const auto& insts = program.instructions();
  for (std::size_t i = 0; i < insts.size(); ++i) {
    auto touch = [&](const Access& a) {
      last[static_cast<std::size_t>(a.tensor)] = static_cast<std::int64_t>(i);
    };
    touch(insts[i].dst);
    for (const Access& s : insts[i].srcs) touch(s);
    if (insts[i].has_reduce) touch(insts[i].reduce_dst);
  }
  for (std::size_t t = 0; t < last.size(); ++t) {
    if (last[t] >= 0 && !program.tensors()[t].external) {
      frees_[static_cast<std::size_t>(last[t])].push_back(static_cast<std::int32_t>(t));
    }
  }
}

void Interpreter::bind(std::int32_t tensor, void* data, std::size_t bytes, bool fill) {
  const TensorDecl& t = program_.tensors().at(static_cast<std::size_t>(tensor));
  const std::size_t want = static_cast<std::size_t>(t.elements()) * dtype_size(t.dtype);
  if (bytes != want) {
    throw std::invalid_argument("tensor `" + t.name + "` needs " + std::to_string(want) +
                                " bytes, got " + std::to_string(bytes));
  }
  Storage& s = storage_[static_cast<std::size_t>(tensor)];
  s.owned.clear();
  s.data = static_cast<unsigned char*>(data);
  if (fill) fill_sentinel(t.dtype, s.data, static_cast<std::size_t>(t.elements()));
}

unsigned char* Interpreter::ensure(std::int32_t tensor) {
  Storage& s = storage_[static_cast<std::size_t>(tensor)];
  if (s.data != nullptr) return s.data;
  const TensorDecl& t = program_.tensors()[static_cast<std::size_t>(tensor)];
  if (t.external) {
    throw std::invalid_argument("kernel tensor `" + t.name +
                                "` is an argument or result but no memory was bound to it");
  }
  const std::size_t n = static_cast<std::size_t>(t.elements());
  s.owned.resize(n * dtype_size(t.dtype));
  s.data = s.owned.data();
  fill_sentinel(t.dtype, s.data, n);
  if (t.memory == Memory::kPsum) s.written.assign(n, 0);
  return s.data;
}

void Interpreter::read(const Access& access, std::vector<double>& out,
                       const std::vector<std::uint8_t>* mask) {
  const TensorDecl& t = program_.tensors()[static_cast<std::size_t>(access.tensor)];
  const unsigned char* base = ensure(access.tensor);
  const std::int64_t n = access.elements();
  out.resize(static_cast<std::size_t>(n));
  const bool masked = mask && !mask->empty() && static_cast<std::int64_t>(mask->size()) == n;
  for_each_row(
      access, [&](std::int64_t e, std::int64_t off, std::int64_t stride, std::int64_t len) {
        if (!masked) {
          load_row(t.dtype, base, off, stride, len, out.data() + e);
          return;
        }
        // Disabled elements may lie outside the tensor (a masked load past its end): skip them.
        for (std::int64_t i = 0; i < len; ++i) {
          out[static_cast<std::size_t>(e + i)] =
              (*mask)[static_cast<std::size_t>(e + i)]
                  ? load_element(t.dtype, base + static_cast<std::size_t>(off + i * stride) *
                                                     dtype_size(t.dtype))
                  : 0.0;
        }
      });
}

void Interpreter::write(const Access& access, const std::vector<double>& values,
                        const std::vector<std::uint8_t>* mask) {
  const TensorDecl& t = program_.tensors()[static_cast<std::size_t>(access.tensor)];
  unsigned char* base = ensure(access.tensor);
  Storage& s = storage_[static_cast<std::size_t>(access.tensor)];
  const bool masked = mask && !mask->empty();
  for_each_row(access,
               [&](std::int64_t e, std::int64_t off, std::int64_t stride, std::int64_t len) {
                 const std::uint8_t* m = masked ? mask->data() + e : nullptr;
                 store_row(t.dtype, base, off, stride, len, values.data() + e, m);
                 if (!s.written.empty()) {
                   for (std::int64_t i = 0; i < len; ++i) {
                     if (!m || m[i]) s.written[static_cast<std::size_t>(off + i * stride)] = 1;
                   }
                 }
               });
}

void Interpreter::run() {
  const auto& insts = program_.instructions();
  for (std::size_t i = 0; i < insts.size(); ++i) {
    execute(insts[i]);
    for (std::int32_t t : frees_[i]) {
      Storage& s = storage_[static_cast<std::size_t>(t)];
      s.owned = {};
      s.written = {};
      s.data = nullptr;
    }
  }
}

void Interpreter::matmul(const Instruction& inst) {
  const Access& st = inst.srcs[0];
  const Access& mv = inst.srcs[1];
  const std::int64_t K = st.partitions(), M = st.free_elements(), N = mv.free_elements();
  read(st, a_, nullptr);
  read(mv, b_, nullptr);
  std::vector<float> sf(a_.begin(), a_.end()), mf(b_.begin(), b_.end());
  std::vector<float> out(static_cast<std::size_t>(M * N));
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, static_cast<int>(M), static_cast<int>(N),
              static_cast<int>(K), 1.0f, sf.data(), static_cast<int>(M), mf.data(),
              static_cast<int>(N), 0.0f, out.data(), static_cast<int>(N));
  // PSUM accumulation: add to what is there, or overwrite what has not been written yet.
  ensure(inst.dst.tensor);
  const Storage& s = storage_[static_cast<std::size_t>(inst.dst.tensor)];
  read(inst.dst, c_, nullptr);
  std::vector<std::uint8_t> was(c_.size(), 0);
  if (!s.written.empty()) {
    for_each_offset(inst.dst, [&](std::int64_t e, std::int64_t off) {
      was[static_cast<std::size_t>(e)] = s.written[static_cast<std::size_t>(off)];
    });
  }
  for (std::size_t e = 0; e < c_.size(); ++e) {
    const bool add =
        inst.accumulate == Accumulate::kAdd || (inst.accumulate == Accumulate::kAuto && was[e]);
    c_[e] = add ? static_cast<double>(static_cast<float>(c_[e]) + out[e]) : out[e];
  }
  write(inst.dst, c_, &inst.mask);
}

void Interpreter::execute(const Instruction& inst) {
  const std::vector<std::uint8_t>* mask = inst.mask.empty() ? nullptr : &inst.mask;
  const std::int64_t P = inst.dst.partitions();
  switch (inst.op) {
    case Opcode::kDmaCopy:
    case Opcode::kTensorCopy:
      read(inst.srcs[0], a_, mask);
      write(inst.dst, a_, mask);
      return;
    case Opcode::kTensorTensor:
      read(inst.srcs[0], a_, mask);
      read(inst.srcs[1], b_, mask);
      for (std::size_t e = 0; e < a_.size(); ++e) a_[e] = apply_alu(inst.alu0, a_[e], b_[e]);
      write(inst.dst, a_, mask);
      return;
    case Opcode::kTensorScalar: {
      read(inst.srcs[0], a_, mask);
      const std::int64_t F = inst.srcs[0].free_elements();
      if (inst.operand0 >= 0) read(inst.srcs[static_cast<std::size_t>(inst.operand0)], b_, nullptr);
      if (inst.operand1 >= 0) read(inst.srcs[static_cast<std::size_t>(inst.operand1)], c_, nullptr);
      for (std::int64_t p = 0; p < P; ++p) {
        const double s0 = inst.operand0 >= 0 ? b_[static_cast<std::size_t>(p)] : inst.imm0;
        const double s1 = inst.operand1 >= 0 ? c_[static_cast<std::size_t>(p)] : inst.imm1;
        for (std::int64_t f = 0; f < F; ++f) {
          double& v = a_[static_cast<std::size_t>(p * F + f)];
          v = inst.reverse0 ? apply_alu(inst.alu0, s0, v) : apply_alu(inst.alu0, v, s0);
          if (inst.alu1 != AluOp::kBypass) {
            v = inst.reverse1 ? apply_alu(inst.alu1, s1, v) : apply_alu(inst.alu1, v, s1);
          }
        }
      }
      write(inst.dst, a_, mask);
      if (inst.has_reduce) {
        d_.assign(static_cast<std::size_t>(P), reduce_identity(inst.reduce_op));
        for (std::int64_t p = 0; p < P; ++p) {
          for (std::int64_t f = 0; f < F; ++f) {
            d_[static_cast<std::size_t>(p)] =
                reduce(inst.reduce_op, d_[static_cast<std::size_t>(p)],
                       a_[static_cast<std::size_t>(p * F + f)]);
          }
        }
        write(inst.reduce_dst, d_, nullptr);
      }
      return;
    }
    case Opcode::kActivation: {
      read(inst.srcs[0], a_, mask);
      const std::int64_t F = inst.srcs[0].free_elements();
      if (inst.bias >= 0) read(inst.srcs[static_cast<std::size_t>(inst.bias)], b_, nullptr);
      if (inst.scale >= 0) read(inst.srcs[static_cast<std::size_t>(inst.scale)], c_, nullptr);
      d_.assign(static_cast<std::size_t>(P), inst.has_reduce ? reduce_identity(inst.reduce_op) : 0);
      for (std::int64_t p = 0; p < P; ++p) {
        const float scale =
            static_cast<float>(inst.scale >= 0 ? c_[static_cast<std::size_t>(p)] : inst.imm0);
        const float bias =
            static_cast<float>(inst.bias >= 0 ? b_[static_cast<std::size_t>(p)] : 0.0);
        for (std::int64_t f = 0; f < F; ++f) {
          double& v = a_[static_cast<std::size_t>(p * F + f)];
          v = static_cast<float>(apply_act(inst.func, static_cast<float>(v) * scale + bias));
          if (inst.has_reduce)
            d_[static_cast<std::size_t>(p)] =
                reduce(inst.reduce_op, d_[static_cast<std::size_t>(p)], v);
        }
      }
      write(inst.dst, a_, mask);
      if (inst.has_reduce) write(inst.reduce_dst, d_, nullptr);
      return;
    }
    case Opcode::kTensorReduce: {
      const Access& src = inst.srcs[0];
      read(src, a_, nullptr);
      // Output strides: 0 along reduced dimensions, row-major over the kept ones.
      const std::size_t rank = src.dims.size();
      std::vector<std::int64_t> ostride(rank, 0);
      std::int64_t next = 1;
      for (std::size_t d = rank; d-- > 0;) {
        const bool reduced =
            std::find(inst.axes.begin(), inst.axes.end(), static_cast<int>(d)) != inst.axes.end();
        if (!reduced) {
          ostride[d] = next;
          next *= src.dims[d].count;
        }
      }
      b_.assign(static_cast<std::size_t>(inst.dst.elements()), reduce_identity(inst.alu0));
      std::vector<std::int64_t> idx(rank, 0);
      std::int64_t o = 0;
      for (std::size_t e = 0; e < a_.size(); ++e) {
        b_[static_cast<std::size_t>(o)] = reduce(inst.alu0, b_[static_cast<std::size_t>(o)], a_[e]);
        for (std::size_t d = rank; d-- > 0;) {
          o += ostride[d];
          if (++idx[d] < src.dims[d].count) break;
          o -= ostride[d] * src.dims[d].count;
          idx[d] = 0;
        }
      }
      if (inst.negate) {
        for (double& v : b_) v = -v;
      }
      write(inst.dst, b_, mask);
      return;
    }
    case Opcode::kPartitionReduce: {
      read(inst.srcs[0], a_, nullptr);
      const std::int64_t SP = inst.srcs[0].partitions(), F = inst.srcs[0].free_elements();
      b_.assign(static_cast<std::size_t>(F), reduce_identity(inst.alu0));
      for (std::int64_t p = 0; p < SP; ++p) {
        for (std::int64_t f = 0; f < F; ++f) {
          b_[static_cast<std::size_t>(f)] = reduce(inst.alu0, b_[static_cast<std::size_t>(f)],
                                                   a_[static_cast<std::size_t>(p * F + f)]);
        }
      }
      write(inst.dst, b_, mask);
      return;
    }
    case Opcode::kMatmul:
      matmul(inst);
      return;
    case Opcode::kTranspose: {
      read(inst.srcs[0], a_, nullptr);
      const std::int64_t SP = inst.srcs[0].partitions(), F = inst.srcs[0].free_elements();
      b_.resize(a_.size());
      for (std::int64_t p = 0; p < SP; ++p) {
        for (std::int64_t f = 0; f < F; ++f) {
          b_[static_cast<std::size_t>(f * SP + p)] = a_[static_cast<std::size_t>(p * F + f)];
        }
      }
      write(inst.dst, b_, mask);
      return;
    }
    case Opcode::kMemset:
      a_.assign(static_cast<std::size_t>(inst.dst.elements()), inst.imm0);
      write(inst.dst, a_, mask);
      return;
    case Opcode::kSelect:
      read(inst.srcs[0], a_, nullptr);
      for (std::size_t e = 0; e < a_.size(); ++e) {
        if (!inst.mask[e]) a_[e] = inst.imm0;
      }
      write(inst.dst, a_, nullptr);
      return;
    case Opcode::kIota: {
      const std::int64_t F = inst.dst.free_elements();
      a_.resize(static_cast<std::size_t>(P * F));
      const std::size_t pairs = inst.pattern.size() / 2;
      for (std::int64_t p = 0; p < P; ++p) {
        std::vector<std::int64_t> idx(pairs, 0);
        for (std::int64_t f = 0; f < F; ++f) {
          std::int64_t v =
              static_cast<std::int64_t>(inst.imm0) + p * static_cast<std::int64_t>(inst.imm1);
          for (std::size_t k = 0; k < pairs; ++k) v += inst.pattern[2 * k] * idx[k];
          a_[static_cast<std::size_t>(p * F + f)] =
              static_cast<double>(static_cast<std::int32_t>(v));
          for (std::size_t k = pairs; k-- > 0;) {
            if (++idx[k] < inst.pattern[2 * k + 1]) break;
            idx[k] = 0;
          }
        }
      }
      write(inst.dst, a_, mask);
      return;
    }
  }
}

}  // namespace vtrn::nki
