#include "vtrn/runtime/aten_nll_loss.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>

#include "vtrn/compiler/aten_nll_loss.h"
#include "vtrn/hlo/dtype.h"

namespace vtrn::runtime::aten_nll_loss {
namespace {

// ATen's partial-sum levels, and ceil(log2(n)) as its utils::CeilLog2 gives it.
constexpr int kLevels = 8;

std::int64_t ceil_log2(std::int64_t n) {
  std::int64_t bits = 0;
  while (bits < 63 && (std::int64_t{1} << bits) < n) ++bits;
  return bits;
}

// A value of the input's type held in a float; every operation's result rounded to the type,
// as ATen's scalar_t arithmetic rounds.
struct Arith {
  bool bf16 = false;
  float round(float x) const { return bf16 ? hlo::bf16_to_f32(hlo::f32_to_bf16(x)) : x; }
};

template <typename Load>
void reduce(const CustomCallArgs& a, const compiler::AtenNllLossConfig& config, const Arith& t,
            Load load, float* output, float* total_weight) {
  const std::int64_t n = a.input_types[0].dims[0], classes = a.input_types[0].dims[1];
  const auto* target = static_cast<const std::int64_t*>(a.inputs[1]);
  const bool weighted = a.inputs.size() > 2;
  const std::int64_t level_power = std::max<std::int64_t>(4, ceil_log2(n) / kLevels);
  const std::int64_t level_mask = (std::int64_t{1} << level_power) - 1;
  float weight_sums[kLevels] = {}, loss_sums[kLevels] = {};
  std::int64_t ignored = 0;
  for (std::int64_t b = 0; b < n; ++b) {
    const std::int64_t cur = target[b];
    if (cur == config.ignore_index) {
      ++ignored;
      continue;
    }
    if (cur < 0 || cur >= classes)
      throw ExecError("Target " + std::to_string(cur) + " is out of bounds.");
    const float data = load(0, b * classes + cur);
    if (weighted) {
      const float w = load(2, cur);
      loss_sums[0] = t.round(loss_sums[0] - t.round(data * w));
      weight_sums[0] = t.round(weight_sums[0] + w);
    } else {
      loss_sums[0] = t.round(loss_sums[0] - data);
    }
    for (int j = 0; j + 1 < kLevels; ++j) {
      if ((b & (level_mask << (j * level_power))) != 0) break;
      weight_sums[j + 1] = t.round(weight_sums[j + 1] + weight_sums[j]);
      loss_sums[j + 1] = t.round(loss_sums[j + 1] + loss_sums[j]);
      weight_sums[j] = loss_sums[j] = 0;
    }
  }
  float total = 0, out = 0;
  if (weighted) {
    for (float w : weight_sums) total = t.round(total + w);
  } else {
    total = t.round(static_cast<float>(n - ignored));
  }
  for (float l : loss_sums) out = t.round(out + l);
  if (config.mean) out = t.round(out / total);
  *output = out;
  *total_weight = total;
}

}  // namespace

void call(const CustomCallArgs& a) {
  const std::optional<compiler::AtenNllLossConfig> config =
      compiler::parse_aten_nll_loss_config(a.backend_config);
  if (!config)
    throw ExecError("custom_call @vtrn.aten_nll_loss has a malformed backend_config \"" +
                    a.backend_config + "\"");
  const hlo::DType d = a.input_types[0].dtype;
  float out = 0, total = 0;
  if (d == hlo::DType::kBF16) {
    auto load = [&](int i, std::int64_t k) {
      return hlo::bf16_to_f32(static_cast<const std::uint16_t*>(a.inputs[i])[k]);
    };
    reduce(a, *config, Arith{true}, load, &out, &total);
    // c10::BFloat16 stores every NaN as 0x7fc0 (an all-ignored mean is 0 / 0).
    auto bits = [](float x) { return std::isnan(x) ? std::uint16_t{0x7fc0} : hlo::f32_to_bf16(x); };
    static_cast<std::uint16_t*>(a.outputs[0])[0] = bits(out);
    static_cast<std::uint16_t*>(a.outputs[1])[0] = bits(total);
    return;
  }
  auto load = [&](int i, std::int64_t k) { return static_cast<const float*>(a.inputs[i])[k]; };
  reduce(a, *config, Arith{}, load, static_cast<float*>(a.outputs[0]),
         static_cast<float*>(a.outputs[1]));
}

}  // namespace vtrn::runtime::aten_nll_loss
