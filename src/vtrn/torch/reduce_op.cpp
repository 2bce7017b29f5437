#include "vtrn/torch/reduce_op.h"

#include <string>

#include <ATen/ops/div.h>
#include <c10/util/Exception.h>

#include "vtrn/cost/kernel_cost.h"

namespace vtrn::torch_adapter {

namespace {

std::string op_name(c10d::ReduceOp::RedOpType op) {
  switch (op) {
    case c10d::ReduceOp::SUM:
      return "SUM";
    case c10d::ReduceOp::AVG:
      return "AVG";
    case c10d::ReduceOp::PRODUCT:
      return "PRODUCT";
    case c10d::ReduceOp::MIN:
      return "MIN";
    case c10d::ReduceOp::MAX:
      return "MAX";
    case c10d::ReduceOp::BAND:
      return "BAND";
    case c10d::ReduceOp::BOR:
      return "BOR";
    case c10d::ReduceOp::BXOR:
      return "BXOR";
    case c10d::ReduceOp::PREMUL_SUM:
      return "PREMUL_SUM";
    default:
      return "UNUSED";
  }
}

bool is_premul_dtype(at::ScalarType dtype) {
  return dtype == at::kHalf || dtype == at::kFloat || dtype == at::kBFloat16 ||
         dtype == at::kDouble;
}

c10::Scalar premul_factor(const c10d::ReduceOp& op) {
  const auto* supplement = dynamic_cast<const c10d::PreMulSumSupplement*>(op.supplement_.get());
  TORCH_CHECK_VALUE(supplement != nullptr,
                    "ReduceOp.PREMUL_SUM needs its factor: build the op with "
                    "dist._make_nccl_premul_sum(factor) or ReduceOp.PREMUL_SUM(factor).");
  if (supplement->tensor_factor.defined()) return supplement->tensor_factor.item();
  return c10::Scalar(supplement->double_factor);
}

}  // namespace

ReducePlan plan_reduce(const c10d::ReduceOp& op, at::ScalarType dtype, const char* collective) {
  ReducePlan plan{op, std::nullopt, false};
  const bool is_bool = dtype == at::kBool;
  const bool is_floating = at::isFloatingType(dtype) || at::isComplexType(dtype);
  switch (op.op_) {
    case c10d::ReduceOp::SUM:
      // bool is stored as one byte: a sum could wrap to false. NCCL reduces it with MAX, a
      // logical or, and so does this backend.
      if (is_bool) plan.transport_op = c10d::ReduceOp(c10d::ReduceOp::MAX);
      return plan;
    case c10d::ReduceOp::PRODUCT:
    case c10d::ReduceOp::MIN:
    case c10d::ReduceOp::MAX:
      return plan;
    case c10d::ReduceOp::AVG:
      TORCH_CHECK_TYPE(!is_bool, "Cannot use ReduceOp.AVG with boolean inputs (", collective,
                       "): reduce with SUM or MAX, or convert the tensor to an integer or "
                       "floating dtype first.");
      plan.transport_op = c10d::ReduceOp(c10d::ReduceOp::SUM);
      plan.average = true;
      return plan;
    case c10d::ReduceOp::PREMUL_SUM:
      TORCH_CHECK_TYPE(is_premul_dtype(dtype),
                       "PreMulSum Data type must be half, float, bfloat16 or double; ", collective,
                       " got a tensor of ", c10::toString(dtype),
                       ". Scale the tensor yourself and reduce with SUM.");
      plan.pre_scale = premul_factor(op);
      plan.transport_op = c10d::ReduceOp(c10d::ReduceOp::SUM);
      return plan;
    case c10d::ReduceOp::BAND:
    case c10d::ReduceOp::BOR:
    case c10d::ReduceOp::BXOR:
      TORCH_CHECK_TYPE(!is_floating, "Cannot use ReduceOp.", op_name(op.op_), " with ",
                       c10::toString(dtype), " tensors (", collective,
                       "): bitwise reductions take integer or bool tensors.");
      return plan;
    default:
      TORCH_CHECK_VALUE(false, "Unhandled ReduceOp ", op_name(op.op_), " in ", collective, ".");
  }
}

void apply_pre_scale(const ReducePlan& plan, std::vector<at::Tensor>& cpu_tensors) {
  if (!plan.pre_scale) return;
  for (auto& t : cpu_tensors) t.mul_(*plan.pre_scale);
}

void apply_average(const ReducePlan& plan, std::vector<at::Tensor>& cpu_tensors, int group_size) {
  if (!plan.average) return;
  for (auto& t : cpu_tensors) {
    if (at::isFloatingType(t.scalar_type()) || at::isComplexType(t.scalar_type())) {
      t.div_(group_size);
    } else {
      t.div_(group_size, "trunc");  // NCCL's SumPostDiv: toward zero
    }
  }
}

double modeled_reduce_op_seconds(const ReducePlan& plan, const hw::InstanceSpec& instance, int lnc,
                                 at::ScalarType dtype, int64_t input_elements,
                                 int64_t output_elements) {
  const double element_bytes = static_cast<double>(c10::elementSize(dtype));
  const cost::CostModel model(*instance.chip);
  const double physical_cores = lnc > 0 ? lnc : 1;
  auto pass = [&](int64_t elements) {
    if (elements <= 0) return 0.0;
    cost::Work w;
    w.vector_ops = static_cast<double>(elements);
    w.bytes = 2.0 * element_bytes * static_cast<double>(elements);  // read and write back
    const cost::KernelCost c = model.estimate(w);
    return c.fixed_s + (c.time_s - c.fixed_s) / physical_cores;
  };
  double seconds = 0;
  if (plan.pre_scale) seconds += pass(input_elements);
  if (plan.average) seconds += pass(output_elements);
  return seconds;
}

}  // namespace vtrn::torch_adapter
