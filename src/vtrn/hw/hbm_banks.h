// How the Neuron runtime divides a chip's HBM among NeuronCores. Header-only figures, each
// with its source; the runtime's per-core memory budget is derived from them.
#pragma once

#include "vtrn/hw/instance.h"
#include "vtrn/hw/units.h"

namespace vtrn::hw {

/// HBM the runtime keeps for its micro-code on every physical NeuronCore.
/// SDK neuron-runtime/explore/device-memory.rst: "96 MB" per NeuronCore (read as MiB).
inline constexpr Bytes kRuntimeReservedPerPhysicalCore = MiB(96);

/// Physical cores that share one HBM bank. SDK about-neuron/arch/neuron-features/
/// logical-neuroncore-config.rst: on Trn2/Trn3 "four 24 GB banks, each shared by 2 physical
/// cores" (the pair LNC=2 fuses). Trainium1 has no LNC and one HBM stack per core
/// (trainium.rst: 2 cores, 2 stacks).
inline int physical_cores_per_hbm_bank(const InstanceSpec& spec) { return spec.has_lnc() ? 2 : 1; }

/// Capacity of one HBM bank, before the runtime's reservation.
inline Bytes hbm_bank_bytes(const InstanceSpec& spec) {
  return spec.chip->hbm /
         static_cast<Bytes>(spec.chip->physical_cores / physical_cores_per_hbm_bank(spec));
}

/// What PyTorch can allocate in one HBM bank: the bank less the runtime's reservation for each
/// physical core on it.
inline Bytes hbm_bank_usable_bytes(const InstanceSpec& spec) {
  return hbm_bank_bytes(spec) -
         kRuntimeReservedPerPhysicalCore * static_cast<Bytes>(physical_cores_per_hbm_bank(spec));
}

}  // namespace vtrn::hw
