// The modeled time of one kernel on one NeuronCore.
//
// A kernel's work is split by engine: the Tensor engine runs contractions (dot_general) at
// the dtype's peak, scaled by how well the shape fills the 128x128 array; the Vector engine
// runs elementwise arithmetic and reductions, the Scalar engine transcendental functions
// (exp, log, tanh, ...), one element-operation per FLOP of the engine's FP32 peak; DMA moves
// the kernel's bytes between HBM and the core at min(HBM bandwidth per core, DMA bandwidth per
// core). The engines and DMA overlap, so the kernel takes the slowest of them, plus the fixed
// start cost of one DMA transfer. All figures come from hw (specs.cc, neuroncore.h).
#pragma once

#include <cstdint>
#include <string_view>

#include "vtrn/hw/chip.h"

namespace vtrn::cost {

enum class Engine : std::uint8_t { kTensor, kVector, kScalar, kDma, kGpSimd };
/// "tensor", "vector", "scalar", "dma", "gpsimd"
std::string_view engine_name(Engine engine);

/// What a kernel does, in engine terms.
struct Work {
  /// Contraction as batch x (m x k) . (k x n); batch == 0 means no contraction.
  std::int64_t batch = 0, m = 0, n = 0, k = 0;
  hw::TensorEngineDType tensor_dtype = hw::TensorEngineDType::kFP32;
  double vector_ops = 0;  ///< element-operations on the Vector engine
  double scalar_ops = 0;  ///< element-operations on the Scalar engine (transcendentals)
  double bytes = 0;       ///< bytes read from and written to HBM
};

struct KernelCost {
  Engine engine = Engine::kDma;  ///< the engine that bounds the kernel (DMA when memory-bound)
  double flops = 0;              ///< Tensor-engine FLOPs (2*b*m*n*k)
  double tile_efficiency = 1;    ///< fraction of the 128x128 array the contraction fills
  double tensor_s = 0, vector_s = 0, scalar_s = 0, dma_s = 0;
  double fixed_s = 0;  ///< DMA start cost
  double time_s = 0;   ///< fixed_s + max(tensor_s, vector_s, scalar_s, dma_s)
};

class CostModel {
 public:
  /// The model of one physical NeuronCore of |chip|.
  explicit CostModel(const hw::ChipSpec& chip);
  /// Trainium2 (NeuronCore-v3), the chip of trn2.48xlarge.
  static const CostModel& trn2();

  const hw::ChipSpec& chip() const { return *chip_; }
  /// Bytes per second one core moves between HBM and its SBUF.
  double memory_Bps() const;
  /// Fraction of the Tensor engine a contraction with contraction size |k| and stationary free
  /// size |m| fills: (k / 128*ceil(k/128)) * (m / 128*ceil(m/128)).
  static double tile_efficiency(std::int64_t m, std::int64_t k);

  KernelCost estimate(const Work& work) const;

 private:
  const hw::ChipSpec* chip_;
};

}  // namespace vtrn::cost
