// One accelerator chip (Trainium, Trainium2, Trainium3) and its NeuronCores.
// The values live in specs.cc, each with its source document.
#pragma once

#include <string_view>

#include "vtrn/hw/units.h"

namespace vtrn::hw {

/// Operand dtypes with a documented Tensor-engine peak.
enum class TensorEngineDType { kFP8, kBF16, kFP16, kTF32, kFP32 };

std::string_view tensor_engine_dtype_name(TensorEngineDType dtype);

/// Dense peaks of one *physical* NeuronCore's engines.
struct CorePeaks {
  FlopsPerSecond tensor_fp8;   ///< Tensor engine, FP8 (cFP8 / MXFP8)
  FlopsPerSecond tensor_bf16;  ///< Tensor engine, BF16 = FP16 = TF32
  FlopsPerSecond tensor_fp32;  ///< Tensor engine, FP32
  FlopsPerSecond vector_fp32;  ///< Vector engine
  FlopsPerSecond scalar_fp32;  ///< Scalar engine

  /// The Tensor-engine peak for |dtype|.
  FlopsPerSecond tensor(TensorEngineDType dtype) const;
};

struct ChipSpec {
  std::string_view name;       ///< "Trainium2"
  std::string_view core_name;  ///< "NeuronCore-v3"
  int physical_cores;          ///< physical NeuronCores per chip

  Bytes hbm;                    ///< HBM capacity per chip
  BytesPerSecond hbm_Bps;       ///< HBM bandwidth per chip
  BytesPerSecond dma_Bps;       ///< DMA bandwidth per chip
  BytesPerSecond dma_core_Bps;  ///< DMA bandwidth of one physical core (all its engines)
  Seconds dma_latency;          ///< fixed start cost of one DMA transfer

  FlopsPerSecond dense_fp8;  ///< chip dense peaks as the chip page lists them
  FlopsPerSecond dense_bf16;
  FlopsPerSecond dense_fp32;
  CorePeaks core;  ///< per physical core

  std::string_view neuronlink;          ///< "NeuronLink-v3"
  BytesPerSecond neuronlink_intra_Bps;  ///< per chip, to the other chips of its instance
  BytesPerSecond
      neuronlink_inter_Bps;  ///< per chip, to other instances of an UltraServer (0: none)
};

}  // namespace vtrn::hw
