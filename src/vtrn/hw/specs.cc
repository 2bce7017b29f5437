// The hardware data. Every number appears once, here, with the document it comes from.
//
// Abbreviations used in the comments:
//   SDK  = aws-neuron/aws-neuron-sdk documentation sources (snapshot 81ce03ae, Neuron 2.32).
//   NKIL = aws-neuron/nki-library.
// "derived" marks a value computed here from documented ones, with the computation shown.
#include <stdexcept>
#include <string>

#include "vtrn/hw/instance.h"

namespace vtrn::hw {
namespace {

//===----------------------------------------------------------------------===//
// Chips
//===----------------------------------------------------------------------===//

// Trainium (trn1). SDK about-neuron/arch/neuron-hardware/trainium.rst, neuron-core-v2.rst,
// nki/guides/architecture/trainium_inferentia2_arch.rst, trainium2.rst (comparison table).
constexpr ChipSpec kTrainium1{
    .name = "Trainium",
    .core_name = "NeuronCore-v2",
    .physical_cores = 2,    // trainium.rst: 2 x NeuronCore-v2
    .hbm = GiB(32),         // trainium.rst: 32 GiB HBM (2 stacks)
    .hbm_Bps = GiBps(820),  // trainium.rst: 820 GiB/s
    .dma_Bps = TBps(1),     // trainium.rst: DMA 1 TB/s
    .dma_core_Bps =
        16 * BytesPerNs(17),  // nki-dma-bandwidth-guide.rst: 16 engines x 17 B/ns = 272 GB/s
    .dma_latency = Nanoseconds(1300),  // nki-dma-bandwidth-guide.rst: ~1,300 ns fixed overhead
    .dense_fp8 = TFLOPS(190),          // trainium.rst: 190 FP16/BF16/cFP8/TF32 TFLOPS
    .dense_bf16 = TFLOPS(190),
    .dense_fp32 = TFLOPS(47.5),         // trainium.rst
    .core = {.tensor_fp8 = TFLOPS(92),  // trainium_inferentia2_arch.rst: 92 BF16 TFLOPS per NC-v2
             .tensor_bf16 = TFLOPS(92),
             .tensor_fp32 = TFLOPS(23),    // same: 23 FP32
             .vector_fp32 = TFLOPS(2.3),   // neuron-core-v2.rst
             .scalar_fp32 = TFLOPS(2.9)},  // neuron-core-v2.rst
    .neuronlink = "NeuronLink-v2",
    .neuronlink_intra_Bps = GBps(384),  // trainium2.rst comparison table: 384 GB/s per chip
    .neuronlink_inter_Bps = 0,
};

// Trainium2. SDK about-neuron/arch/neuron-hardware/trainium2.rst, neuron-core-v3.rst,
// trn2-arch.rst, nki/guides/architecture/trainium2_arch.rst.
constexpr ChipSpec kTrainium2{
    .name = "Trainium2",
    .core_name = "NeuronCore-v3",
    .physical_cores = 8,   // trainium2.rst: 8 NeuronCore-v3
    .hbm = GiB(96),        // trainium2.rst: 96 GiB
    .hbm_Bps = TBps(2.9),  // trainium2.rst: 2.9 TB/s (NKI guide rounds to 3)
    .dma_Bps = TBps(3.5),  // trainium2.rst: DMA 3.5 TB/s
    .dma_core_Bps =
        16 * BytesPerNs(23),  // nki-dma-bandwidth-guide.rst: 16 engines x 23 B/ns = 368 GB/s
    .dma_latency = Nanoseconds(1300),      // nki-dma-bandwidth-guide.rst: ~1,300 ns fixed overhead
    .dense_fp8 = TFLOPS(1299),             // trainium2.rst
    .dense_bf16 = TFLOPS(667),             // trainium2.rst
    .dense_fp32 = TFLOPS(181),             // trainium2.rst
    .core = {.tensor_fp8 = TFLOPS(158),    // neuron-core-v3.rst: 158 cFP8
             .tensor_bf16 = TFLOPS(79),    // 79 BF16/FP16/TF32
             .tensor_fp32 = TFLOPS(20),    // 20 FP32
             .vector_fp32 = TFLOPS(1),     // Vector 1 TFLOPS
             .scalar_fp32 = TFLOPS(1.2)},  // Scalar 1.2 TFLOPS
    .neuronlink = "NeuronLink-v3",
    .neuronlink_intra_Bps = GBps(1024),  // trn2-arch.rst: 1,024 GB/s per chip intra-instance
    .neuronlink_inter_Bps = GBps(256),   // trn2-arch.rst: 256 GB/s per chip inter-instance
};

// Trainium3. SDK about-neuron/arch/neuron-hardware/trainium3.rst, neuron-core-v4.rst,
// trn3-arch.rst, nki/guides/architecture/trainium3_arch.rst.
constexpr ChipSpec kTrainium3{
    .name = "Trainium3",
    .core_name = "NeuronCore-v4",
    .physical_cores = 8,                  // trainium3.rst: 8 NeuronCore-v4
    .hbm = GiB(144),                      // trainium3.rst: 144 GiB
    .hbm_Bps = TBps(4.9),                 // trainium3.rst (NKI guide: 4.7 TB/s)
    .dma_Bps = TBps(4.9),                 // trainium3.rst
    .dma_core_Bps = 16 * BytesPerNs(33),  // nki-dma-bandwidth-guide.rst: TRN3 33 B/ns per engine
    .dma_latency = Nanoseconds(1300),     // nki-dma-bandwidth-guide.rst (documented for all gens)
    .dense_fp8 = TFLOPS(2517),            // trainium3.rst: 2,517 MXFP8/MXFP4
    .dense_bf16 = TFLOPS(671),            // trainium3.rst
    .dense_fp32 = TFLOPS(183),            // trainium3.rst
    .core = {.tensor_fp8 = TFLOPS(315),   // neuron-core-v4.rst: 315 MXFP8
             .tensor_bf16 = TFLOPS(79),
             .tensor_fp32 = TFLOPS(20),
             .vector_fp32 = TFLOPS(1.2),
             .scalar_fp32 = TFLOPS(1.2)},
    .neuronlink = "NeuronLink-v4",
    .neuronlink_intra_Bps =
        GBps(256),  // trn3-arch.rst: 256 GB/s intra-server per chip (4 x8 ports)
    .neuronlink_inter_Bps =
        GBps(320),  // trn3-arch.rst: 320 GB/s inter-server per chip (5 x8 ports)
};

//===----------------------------------------------------------------------===//
// Shared figures
//===----------------------------------------------------------------------===//

// intranode-collective-comm.rst: Ring/KangaRing per-hop latency "about 1-2 µs, HBM-load
// dependent". The model takes the midpoint. Not documented for trn1/trn3: the same value is used.
constexpr Seconds kNeuronLinkHopLatency = Microseconds(1.5);

// neuron-runtime/about/collectives.rst: a minimal HBM-to-HBM packet between servers takes
// 15 µs (ib_write_lat on the 10p10u network).
constexpr Seconds kEfaHopLatency = Microseconds(15);

// logical-neuroncore-config.rst: only LNC 1 and 2 exist, on Trn2 and Trn3; the default is 2.
constexpr int kLncTrn2Trn3[] = {1, 2};
constexpr int kLncDefaultTrn2Trn3 = 2;

//===----------------------------------------------------------------------===//
// Instances
//===----------------------------------------------------------------------===//

// trn2-arch.rst: 16 Trainium2 chips in a 4x4 2D torus; each chip links to 4 neighbours.
constexpr InstanceSpec kTrn2Node{
    .name = "trn2.48xlarge",
    .summary = "16 Trainium2 chips, 4x4 torus, NeuronLink-v3, EFAv3 3,200 Gbps",
    .chip = &kTrainium2,
    .chips = 16,
    .topology = ChipTopology::kTorus2D,
    .grid_rows = 4,
    .grid_cols = 4,
    .link_Bps = GBps(1024) / 4,  // derived: 1,024 GB/s per chip over 4 X/Y links = 256 GB/s
    .hop_latency = kNeuronLinkHopLatency,
    .lnc_allowed = kLncTrn2Trn3,
    .lnc_default = kLncDefaultTrn2Trn3,
    .ultraserver_nodes = 1,
    .ultraserver_fabric = UltraServerFabric::kNone,
    .ultraserver_chip_Bps = 0,
    .efa_Bps =
        Gbps(3200),  // trn2-arch.rst: EFAv3 3,200 Gbps; collectives.rst: 200 Gbps NIC per chip
    .efa_latency = kEfaHopLatency,
};

// One instance of a Trn2 UltraServer (trn2-arch.rst): 4 x trn2u.48xlarge; chips with the same
// (x, y) in the 4 instances form a ring, giving a 4x4x4 3D torus. Inside the instance it is a
// trn2.48xlarge (same chips, torus, links, LNC and EFA).
constexpr InstanceSpec trn2u_node() {
  InstanceSpec s = kTrn2Node;
  s.name = "trn2u.48xlarge";
  s.summary = "Trn2 UltraServer instance: 4x4 torus, Z rings over 4 instances (4x4x4 3D torus)";
  s.ultraserver_nodes = 4;  // trn2-arch.rst: 4 x trn2u.48xlarge, 64 chips
  s.ultraserver_fabric = UltraServerFabric::kZRing;
  s.ultraserver_chip_Bps =
      GBps(256);  // trn2-arch.rst: inter-instance 256 GB/s per chip (2 Z links)
  return s;
}

// A single-chip Trn2 instance (neuron-ls example, RTD quickstart-build-first-model). Not in the
// arch table: its EFA bandwidth is undocumented, so multi-node is refused.
constexpr InstanceSpec trn2_single_chip() {
  InstanceSpec s = kTrn2Node;
  s.name = "trn2.3xlarge";
  s.summary = "1 Trainium2 chip (no NeuronLink peers); EFA undocumented";
  s.chips = 1;
  s.topology = ChipTopology::kSingleChip;
  s.grid_rows = 1;
  s.grid_cols = 1;
  s.link_Bps = 0;
  s.efa_Bps = 0;
  return s;
}

const InstanceSpec kInstances[] = {
    {
        // trn1-arch.rst: 16 chips in a 2D torus, 32 NeuronCores, no LNC.
        .name = "trn1.32xlarge",
        .summary = "16 Trainium chips, 2D torus, NeuronLink-v2, EFA 800 Gbps",
        .chip = &kTrainium1,
        .chips = 16,
        .topology = ChipTopology::kTorus2D,
        .grid_rows = 4,
        .grid_cols = 4,
        .link_Bps = GBps(384) / 4,  // derived: 384 GB/s per chip over 4 NeuronLink-v2 ports
        .hop_latency = kNeuronLinkHopLatency,
        .lnc_allowed = {},
        .lnc_default = 0,
        .ultraserver_nodes = 1,
        .ultraserver_fabric = UltraServerFabric::kNone,
        .ultraserver_chip_Bps = 0,
        .efa_Bps = Gbps(800),  // trn1-arch.rst: EFA 800 Gbps (8 EFA devices)
        .efa_latency = kEfaHopLatency,
    },
    kTrn2Node,
    trn2u_node(),
    trn2_single_chip(),
    {
        // One 16-chip server of a Gen1 Trn3 UltraServer (trn3-arch.rst: 64 chips = 4 servers x 16,
        // all-to-all through NeuronSwitch-v1). The sources name no instance type; vtrn calls it
        // "trn3.gen1-server".
        .name = "trn3.gen1-server",
        .summary = "Trn3 Gen1 UltraServer server: 16 Trainium3 chips, NeuronSwitch (all-to-all)",
        .chip = &kTrainium3,
        .chips = 16,
        .topology = ChipTopology::kSwitch,
        .grid_rows = 4,
        .grid_cols = 4,
        .link_Bps = GBps(256),  // trn3-arch.rst: 256 GB/s intra-server per chip, any peer
        .hop_latency = kNeuronLinkHopLatency,
        .lnc_allowed = kLncTrn2Trn3,
        .lnc_default = kLncDefaultTrn2Trn3,
        .ultraserver_nodes = 4,  // trn3-arch.rst: 4 servers x 16 chips
        .ultraserver_fabric = UltraServerFabric::kSwitch,
        .ultraserver_chip_Bps = GBps(320),  // trn3-arch.rst: 320 GB/s inter-server per chip
        .efa_Bps =
            Gbps(12800) / 4,  // derived: trn3-arch.rst EFA 12,800 Gbps per 4-server UltraServer
        .efa_latency = kEfaHopLatency,
    },
};

}  // namespace

std::string_view tensor_engine_dtype_name(TensorEngineDType dtype) {
  switch (dtype) {
    case TensorEngineDType::kFP8:
      return "fp8";
    case TensorEngineDType::kBF16:
      return "bf16";
    case TensorEngineDType::kFP16:
      return "fp16";
    case TensorEngineDType::kTF32:
      return "tf32";
    case TensorEngineDType::kFP32:
      return "fp32";
  }
  return "?";
}

FlopsPerSecond CorePeaks::tensor(TensorEngineDType dtype) const {
  switch (dtype) {
    case TensorEngineDType::kFP8:
      return tensor_fp8;
    case TensorEngineDType::kBF16:
    case TensorEngineDType::kFP16:
    case TensorEngineDType::kTF32:
      return tensor_bf16;
    case TensorEngineDType::kFP32:
      return tensor_fp32;
  }
  return 0;
}

std::span<const InstanceSpec> instances() { return kInstances; }

std::string instance_names() {
  std::string out;
  for (const InstanceSpec& spec : kInstances) {
    if (!out.empty()) out += ", ";
    out += spec.name;
  }
  return out;
}

const InstanceSpec& find_instance(std::string_view name) {
  for (const InstanceSpec& spec : kInstances) {
    if (spec.name == name) return spec;
  }
  throw std::invalid_argument("unknown instance '" + std::string(name) +
                              "'; known instances: " + instance_names());
}

int resolve_lnc(const InstanceSpec& spec, int requested) {
  if (requested == 0) return spec.lnc_default;
  if (!spec.has_lnc()) {
    throw std::invalid_argument(
        "LNC " + std::to_string(requested) + " requested, but " + std::string(spec.name) +
        " has no Logical NeuronCore setting (LNC exists on Trn2 and Trn3 only); omit --lnc");
  }
  for (int lnc : spec.lnc_allowed) {
    if (lnc == requested) return lnc;
  }
  std::string allowed;
  for (int lnc : spec.lnc_allowed) allowed += (allowed.empty() ? "" : " or ") + std::to_string(lnc);
  throw std::invalid_argument("LNC " + std::to_string(requested) + " is not available on " +
                              std::string(spec.name) + "; use LNC " + allowed + " (default " +
                              std::to_string(spec.lnc_default) + ")");
}

}  // namespace vtrn::hw
