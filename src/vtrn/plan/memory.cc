#include "vtrn/plan/memory.h"

#include <algorithm>

#include "vtrn/hw/hbm_banks.h"

namespace vtrn::plan {

// ------------------------------------------------------------------------------------------
// Activations (Korthikanti et al. 2022, section 4.1, generalized; see the header)

double activation_bytes_per_layer(const ModelSpec& m, int seq, int b, int tp, bool sp,
                                  Checkpointing c) {
  const double s = seq, bb = b, h = m.hidden, a = m.heads, t = tp;
  const double q = m.attention_dim(), kv = m.kv_dim();
  const double sbh = s * bb * h;
  if (c == Checkpointing::kFull) return 2 * sbh / (sp ? t : 1);  // the block's bf16 input only
  // Kept whole on every TP rank without SP: the two norm inputs (2 bytes each), the inputs of
  // the QKV and first MLP linears (2 each), and the 1-byte dropout masks after attention and MLP.
  const double masks = m.dropout ? 2 * sbh : 0;
  const double replicated = 4 * sbh + 2 * sbh + 2 * sbh + masks;
  // Split by TP: Q (2 s b q), K and V (2 s b kv each), the output projection's input (2 s b q).
  double split = s * bb * (2 * q + 4 * kv + 2 * q);
  // MLP intermediates: GELU keeps its input and output (2 s b f each); SwiGLU keeps gate, up,
  // SiLU(gate) and their product (2 s b f each). MoE: top_k experts' worth per token.
  const double f = m.is_moe() ? static_cast<double>(m.expert_ffn) * m.top_k : m.ffn;
  split += s * bb * f * (m.activation == Activation::kGELU ? 4 : 8);
  if (m.is_moe()) split += s * bb * m.experts * 4;  // router logits in fp32
  double scores = 0;
  if (c == Checkpointing::kNone) {
    // softmax output (2 a s^2 b), and with dropout its 1-byte mask and output (a s^2 b + 2 a s^2 b)
    scores = a * s * s * bb * (m.dropout ? 5 : 2);
  }
  if (sp) return (replicated + split + scores) / t;
  return replicated + (split + scores) / t;
}

// ------------------------------------------------------------------------------------------
// Persistent state and stages

PrecisionBytes bytes_per_element(Precision p) {
  if (p == Precision::kBF16) return {2, 2, 4, 2};
  return {4, 4, 8,
          4};  // fp32 master weights, fp32 gradients, AdamW m and v in fp32; reduce in fp32
}

StageParams stage_params(const ModelSpec& m, const Stage& st, int tp, int pp) {
  const double norms = static_cast<double>(m.block_norm_params());
  const double block = static_cast<double>(m.block_params()) - norms;
  StageParams p;
  p.unit = block / tp + norms;
  p.blocks = st.layers * p.unit;
  p.root = 0;
  const double vh = static_cast<double>(m.vocab) * m.hidden;
  if (st.first) p.root += vh / tp + static_cast<double>(m.position_embeddings) * m.hidden;
  if (st.last) {
    p.root += static_cast<double>(m.final_norm_params());
    if (!m.tied_embeddings)
      p.root += vh / tp;
    else if (pp > 1)
      p.root += vh / tp;  // the last stage keeps its own copy of a tied embedding
  }
  return p;
}

std::vector<Stage> stages_of(const ModelSpec& m, int pp) {
  const int per = (m.layers + pp - 1) / pp;
  if (pp == 1) return {{m.layers, true, true}};
  // Stages of ceil(L / pp) blocks; the last may hold fewer, but the worst case is what must fit.
  return {{per, true, false}, {per, false, true}};
}

double hbm_budget_bytes(const topo::Cluster& cluster) {
  return static_cast<double>(cluster.spec().hbm_per_rank(cluster.lnc()));
}

// ------------------------------------------------------------------------------------------
// What comes and goes during a step

namespace {

int inflight_micro_batches(const Workload& w, const Layout& l) {
  const int dp = l.dp();
  const int local = dp > 0 ? w.global_batch / dp : 0;
  const int micro = std::max(1, local / std::max(l.micro_batch, 1));
  if (l.pp <= 1) return 1;
  return w.schedule == Schedule::kGPipe ? micro : std::min(micro, l.pp);
}

// The gathered units, saved activations and logits do not all peak at once. Three moments bound
// them, and the largest is the step's peak:
//  - the loss: the computing unit and its prefetch gathered, the root unit gathered, every saved
//    activation, the logits with their fp32 copy and gradient;
//  - the backward through the blocks: the same units plus one unit's unsharded gradient (bf16 and
//    the fp32 reduce-scatter copy), the head's unsharded bf16 gradient (the root unit reduces it
//    only at the end of the backward), the saved activations and, with full checkpointing, the
//    working set of the block being recomputed; the logits are gone;
//  - the root unit's reduction at the end of the backward: the root gathered, its unsharded bf16
//    gradients and their fp32 reduce-scatter copy; the activations are gone.
// Sets mb's gathered, activations and logits to those of the largest and returns its name.
const char* peak_transient(const ModelSpec& model, const Workload& w, const Layout& l,
                           const Stage& st, const StageParams& p, MemoryBreakdown& mb) {
  const PrecisionBytes by = bytes_per_element(w.precision);
  const int s = w.seq, b = l.micro_batch, tp = l.tp;
  const bool sp = w.sequence_parallel && tp > 1;
  const double tokens = static_cast<double>(s) * b;
  const bool sharded = l.shard > 1;
  // bf16 gradient plus, under the mixed policy, the reduce-scatter's fp32 copy
  const double grad_bytes = 2 + (w.precision == Precision::kBF16 ? 0 : by.reduce);
  double units = 0;
  if (sharded)
    units = p.unit * 2.0 * (1 + w.prefetch);
  else if (w.precision != Precision::kBF16)
    units = p.unit * 2;  // autocast's bf16 copy of the block computing
  const double root = sharded ? p.root * 2 : 0;
  const double grad_unit = sharded ? p.unit * grad_bytes : 0;
  double head_grad = 0;
  if (sharded && st.last)
    head_grad = (static_cast<double>(model.vocab) * model.hidden / tp +
                 static_cast<double>(model.final_norm_params())) *
                2;
  const double saved = inflight_micro_batches(w, l) * st.layers *
                       activation_bytes_per_layer(model, s, b, tp, sp, l.checkpointing);
  const double recompute =
      l.checkpointing == Checkpointing::kFull
          ? activation_bytes_per_layer(model, s, b, tp, sp, Checkpointing::kSelective)
          : 0;
  const double logits = st.last ? tokens * model.vocab / tp * (2 + 4 + 4) : 0;

  struct Moment {
    const char* name;
    double gathered, activations, logits;
  };
  const Moment moments[] = {
      {"loss", units + root, saved, logits},
      {"backward", units + grad_unit + root + head_grad, saved + recompute, 0},
      {"root gradient reduction", root + (sharded ? p.root * grad_bytes : 0), 0, 0},
  };
  const Moment* peak = &moments[0];
  for (const Moment& m : moments)
    if (m.gathered + m.activations + m.logits > peak->gathered + peak->activations + peak->logits)
      peak = &m;
  mb.gathered = peak->gathered;
  mb.activations = peak->activations;
  mb.logits = peak->logits;
  return peak->name;
}

}  // namespace

// ------------------------------------------------------------------------------------------
// Per-rank memory

MemoryBreakdown memory_per_rank(const ModelSpec& model, const topo::Cluster& cluster,
                                const Workload& workload, const Layout& l) {
  const PrecisionBytes by = bytes_per_element(workload.precision);
  const int tp = l.tp;
  const bool sp = workload.sequence_parallel && tp > 1;
  const double T = static_cast<double>(workload.seq) * l.micro_batch;
  MemoryBreakdown best;
  best.total = -1;
  for (const Stage& st : stages_of(model, l.pp)) {
    MemoryBreakdown mb;
    const StageParams p = stage_params(model, st, tp, l.pp);
    const double persistent_elems = (p.blocks + p.root) / l.shard;
    mb.parameters = persistent_elems * by.param;
    mb.gradients = persistent_elems * by.grad;
    // ZeRO-1: each data-parallel rank keeps the optimizer state of its 1/replicate share.
    mb.optimizer = persistent_elems * by.opt / (l.zero1 ? l.replicate : 1);
    mb.peak_moment = peak_transient(model, workload, l, st, p, mb);
    mb.runtime =
        static_cast<double>(hw::kRuntimeReservedPerPhysicalCore) * std::max(cluster.lnc(), 1);
    if (tp > 1)
      mb.collectives +=
          2 * T * model.hidden * 2;  // SP all-gather / all-reduce staging, double-buffered
    if (l.pp > 1) mb.collectives += 2 * T * model.hidden * 2 / (sp ? tp : 1);  // send + recv
    if (l.replicate > 1)
      mb.collectives += (l.shard > 1 ? p.unit / l.shard * by.reduce
                                     : 2.0 * 25 * 1048576);  // HSDP unit / DDP buckets
    mb.total = mb.parameters + mb.gradients + mb.optimizer + mb.gathered + mb.activations +
               mb.logits + mb.runtime + mb.collectives;
    if (mb.total > best.total) best = mb;
  }
  best.budget = hbm_budget_bytes(cluster);
  return best;
}

}  // namespace vtrn::plan
