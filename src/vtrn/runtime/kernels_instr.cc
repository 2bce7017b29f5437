// One fused-loop instruction over one chunk (kernels_instr.h).
#include "vtrn/runtime/kernels_instr.h"

#include <algorithm>

#include "vtrn/runtime/aten_unary.h"
#include "vtrn/runtime/executor.h"
#include "vtrn/runtime/kernels_elementwise.h"
#include "vtrn/runtime/vecmath.h"

namespace vtrn::runtime::kernels {

using hlo::DType;
using hlo::OpKind;
using Cls = FusedProgram::Cls;
using elementwise::binary_float;
using elementwise::binary_int;
using elementwise::clamp;
using elementwise::cls_of;
using elementwise::compare;
using elementwise::convert;
using elementwise::fma;
using elementwise::round_f32;
using elementwise::select;
using elementwise::unary_float;
using elementwise::unary_int;
using elementwise::wrap_i64;

namespace {

aten_unary::Fn aten_unary_fn(OpKind k) {
  switch (k) {
    case OpKind::kExp:
      return aten_unary::Fn::kExp;
    case OpKind::kLog:
      return aten_unary::Fn::kLog;
    case OpKind::kSqrt:
      return aten_unary::Fn::kSqrt;
    case OpKind::kSine:
      return aten_unary::Fn::kSin;
    case OpKind::kCosine:
      return aten_unary::Fn::kCos;
    default:
      return aten_unary::Fn::kTanh;  // hlo::has_vml_form admits no other
  }
}

// One instruction over |len| elements: operands |pa|, |pb|, |pc| (as many as it has), result
// |o| of dtype |od|.
}  // namespace

void run_instr(const FusedProgram::Instr& in, DType od, void* pa, void* pb, void* pc, void* o,
               std::int64_t len) {
  const Cls ci = cls_of(in.in_dtype);
  if (in.kind == OpKind::kConvert) {
    convert(in.in_dtype, od, pa, o, len);
    return;
  }
  if (in.kind == OpKind::kCompare) {
    auto* po = static_cast<std::int64_t*>(o);
    if (ci == Cls::kF32)
      compare(in.cmp, static_cast<float*>(pa), static_cast<float*>(pb), po, len);
    else if (ci == Cls::kF64)
      compare(in.cmp, static_cast<double*>(pa), static_cast<double*>(pb), po, len);
    else if (in.in_dtype == DType::kU64) {
      const auto* a = static_cast<const std::uint64_t*>(pa);
      const auto* b = static_cast<const std::uint64_t*>(pb);
      compare(in.cmp, a, b, po, len);
    } else
      compare(in.cmp, static_cast<std::int64_t*>(pa), static_cast<std::int64_t*>(pb), po, len);
    return;
  }
  if (in.kind == OpKind::kSelect) {
    const auto* p = static_cast<const std::int64_t*>(pa);
    if (ci == Cls::kF32)
      select(p, static_cast<float*>(pb), static_cast<float*>(pc), static_cast<float*>(o), len);
    else if (ci == Cls::kF64)
      select(p, static_cast<double*>(pb), static_cast<double*>(pc), static_cast<double*>(o), len);
    else
      select(p, static_cast<std::int64_t*>(pb), static_cast<std::int64_t*>(pc),
             static_cast<std::int64_t*>(o), len);
    return;
  }
  if (in.kind == OpKind::kClamp) {
    if (ci == Cls::kF32)
      clamp(static_cast<float*>(pa), static_cast<float*>(pb), static_cast<float*>(pc),
            static_cast<float*>(o), len);
    else if (ci == Cls::kF64)
      clamp(static_cast<double*>(pa), static_cast<double*>(pb), static_cast<double*>(pc),
            static_cast<double*>(o), len);
    else
      clamp(static_cast<std::int64_t*>(pa), static_cast<std::int64_t*>(pb),
            static_cast<std::int64_t*>(pc), static_cast<std::int64_t*>(o), len);
    return;
  }
  if (in.kind == OpKind::kFma) {  // float operands (verify.cc)
    if (ci == Cls::kF32) {
      fma(static_cast<float*>(pa), static_cast<float*>(pb), static_cast<float*>(pc),
          static_cast<float*>(o), len);
      round_f32(od, static_cast<float*>(o), len);
    } else {
      fma(static_cast<double*>(pa), static_cast<double*>(pb), static_cast<double*>(pc),
          static_cast<double*>(o), len);
    }
    return;
  }
  using Logistic = FusedProgram::Instr::Logistic;
  if (in.logistic != Logistic::kNone) {  // float32 (fold_logistic)
    if (in.logistic == Logistic::kSiluBackward)
      elementwise::silu_backward_float(static_cast<const float*>(pa), static_cast<const float*>(pb),
                                       static_cast<float*>(o), len, in.sleef);
    else
      elementwise::logistic_float(in.logistic == Logistic::kSilu, static_cast<const float*>(pa),
                                  static_cast<float*>(o), len, in.sleef);
    round_f32(od, static_cast<float*>(o), len);
    return;
  }
  if (in.sleef && ci == Cls::kF32) {
    vecmath::apply(vecmath::Fn::kExp, static_cast<const float*>(pa), static_cast<float*>(o), len);
    round_f32(od, static_cast<float*>(o), len);
    return;
  }
  if (in.vml && in.in_dtype == DType::kF32 &&
      aten_unary::apply(aten_unary_fn(in.kind), static_cast<const float*>(pa),
                        static_cast<float*>(o), len)) {
    round_f32(od, static_cast<float*>(o), len);
    return;
  }
  const bool bin = in.b >= 0;
  if (ci == Cls::kF32) {
    auto* fo = static_cast<float*>(o);
    if (bin)
      binary_float(in.kind, static_cast<float*>(pa), static_cast<float*>(pb), fo, len);
    else
      unary_float(in.kind, static_cast<float*>(pa), fo, len);
    round_f32(od, fo, len);
  } else if (ci == Cls::kF64) {
    auto* fo = static_cast<double*>(o);
    if (bin)
      binary_float(in.kind, static_cast<double*>(pa), static_cast<double*>(pb), fo, len);
    else
      unary_float(in.kind, static_cast<double*>(pa), fo, len);
  } else {
    auto* io = static_cast<std::int64_t*>(o);
    if (bin)
      binary_int(in.kind, in.in_dtype, static_cast<std::int64_t*>(pa),
                 static_cast<std::int64_t*>(pb), io, len);
    else
      unary_int(in.kind, in.in_dtype, static_cast<std::int64_t*>(pa), io, len);
    wrap_i64(od, io, len);
  }
}

void run_update_instr(const FusedProgram::Instr& in, DType od, const void* pa, const void* pb,
                      const void* pc, const void* pd, void* o, std::int64_t len) {
  using Update = FusedProgram::Instr::Update;
  const float s = *static_cast<const float*>(pa);
  const auto* b = static_cast<const float*>(pb);
  const auto* c = static_cast<const float*>(pc);
  const auto* d = static_cast<const float*>(pd);
  auto* fo = static_cast<float*>(o);
  if (in.update == Update::kFmaScaled)
    elementwise::fma_scaled(s, b, c, d, fo, len);
  else if (in.update == Update::kAddScaledQuotient)
    elementwise::add_scaled_quotient(s, b, c, d, fo, len);
  else
    elementwise::fma_difference(s, b, c, d, fo, len);
  round_f32(od, fo, len);
}

bool takes_scalar(const FusedProgram::Instr& in) {
  if (in.vml || in.sleef || in.logistic != FusedProgram::Instr::Logistic::kNone ||
      in.update != FusedProgram::Instr::Update::kNone || cls_of(in.in_dtype) == Cls::kI64)
    return false;
  if (in.kind == OpKind::kFma) return true;
  return in.c < 0 && in.b >= 0 && elementwise::has_binary_scalar_float(in.kind);
}

namespace {

template <typename T>
void run_scalar_instr(const FusedProgram::Instr& in, const void* pa, const void* pb, const void* pc,
                      bool s_left, T* o, std::int64_t len) {
  const T s = *static_cast<const T*>(s_left ? pa : pb);
  const auto* v = static_cast<const T*>(s_left ? pb : pa);
  if (in.kind == OpKind::kFma)
    elementwise::fma_scalar(s, v, static_cast<const T*>(pc), o, len);
  else
    elementwise::binary_scalar_float(in.kind, v, s, s_left, o, len);
}

}  // namespace

void run_scalar_instr(const FusedProgram::Instr& in, DType od, const void* pa, const void* pb,
                      const void* pc, bool s_left, void* o, std::int64_t len) {
  if (cls_of(in.in_dtype) == Cls::kF32) {
    run_scalar_instr(in, pa, pb, pc, s_left, static_cast<float*>(o), len);
    round_f32(od, static_cast<float*>(o), len);
  } else {
    run_scalar_instr(in, pa, pb, pc, s_left, static_cast<double*>(o), len);
  }
}

namespace {

template <typename T>
void run_rows(const FusedProgram::Instr& in, const void* v, const std::uint8_t* rows,
              std::int64_t first, std::int64_t row_stride, std::int64_t row_len,
              std::int64_t first_pos, bool s_left, const void* c, T* o, std::int64_t len) {
  const T* r = reinterpret_cast<const T*>(rows) + first;
  if (in.kind == OpKind::kFma)
    elementwise::fma_rows(static_cast<const T*>(v), r, row_stride, row_len, first_pos,
                          static_cast<const T*>(c), o, len);
  else
    elementwise::binary_rows_float(in.kind, static_cast<const T*>(v), r, row_stride, row_len,
                                   first_pos, s_left, o, len);
}

// |in| over a run of the chunk at a time, each against the table from its position.
template <typename T>
void run_table(const FusedProgram::Instr& in, const T* v, const T* table, std::int64_t period,
               std::int64_t first_pos, bool s_left, T* o, std::int64_t len) {
  for (std::int64_t i = 0, pos = first_pos; i < len; pos = 0) {
    const std::int64_t m = std::min(period - pos, len - i);
    binary_float(in.kind, s_left ? table + pos : v + i, s_left ? v + i : table + pos, o + i, m);
    i += m;
  }
}

}  // namespace

void run_table_instr(const FusedProgram::Instr& in, DType od, const void* v,
                     const std::uint8_t* table, std::int64_t period, std::int64_t first_pos,
                     bool s_left, void* o, std::int64_t len) {
  if (cls_of(in.in_dtype) == Cls::kF32) {
    run_table(in, static_cast<const float*>(v), reinterpret_cast<const float*>(table), period,
              first_pos, s_left, static_cast<float*>(o), len);
    round_f32(od, static_cast<float*>(o), len);
  } else {
    run_table(in, static_cast<const double*>(v), reinterpret_cast<const double*>(table), period,
              first_pos, s_left, static_cast<double*>(o), len);
  }
}

void run_rows_instr(const FusedProgram::Instr& in, DType od, const void* v,
                    const std::uint8_t* rows, std::int64_t first, std::int64_t row_stride,
                    std::int64_t row_len, std::int64_t first_pos, bool s_left, const void* c,
                    void* o, std::int64_t len) {
  if (cls_of(in.in_dtype) == Cls::kF32) {
    run_rows(in, v, rows, first, row_stride, row_len, first_pos, s_left, c, static_cast<float*>(o),
             len);
    round_f32(od, static_cast<float*>(o), len);
  } else {
    run_rows(in, v, rows, first, row_stride, row_len, first_pos, s_left, c, static_cast<double*>(o),
             len);
  }
}

}  // namespace vtrn::runtime::kernels
