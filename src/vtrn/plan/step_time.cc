#include "vtrn/plan/step_time.h"

#include <algorithm>
#include <cstdint>

#include "vtrn/coll/collective_time.h"
#include "vtrn/cost/training_kernel.h"
#include "vtrn/plan/memory.h"

namespace vtrn::plan {
namespace {

// Modeled time of the kernels of one block's forward on one logical core.
struct BlockTimes {
  double fwd_block = 0;   // one block forward
  double attn_core = 0;   // scores, softmax, attention x V (selective recompute)
  double logits_fwd = 0;  // final norm, output projection and loss
  int kernels = 0;        // kernels of one block's forward
};

}  // namespace

std::int64_t kv_dim_per_rank(const ModelSpec& m, int tp) {
  // Each rank needs at least one KV head: past kv_heads ranks, the heads are duplicated.
  const std::int64_t heads = (static_cast<std::int64_t>(m.kv_heads) + tp - 1) / tp;
  return heads * m.head_size();
}

namespace {

BlockTimes block_times(const ModelSpec& md, const topo::Cluster& cl, const hw::StepModel& params,
                       int seq, int b, int tp, bool sp) {
  const cost::TrainingKernelModel km(*cl.spec().chip, params);
  const double lnc = std::max(cl.lnc(), 1);
  const double over = params.kernel_overhead_s;
  BlockTimes t;
  // A logical core of lnc physical cores divides each kernel's engine time, not its fixed cost.
  auto mm = [&](std::int64_t batch, std::int64_t m, std::int64_t n, std::int64_t k) {
    ++t.kernels;
    return over + (km.matmul_s(batch, m, n, k) - over) / lnc;
  };
  auto ew = [&](double vector, double scalar, double bytes) {
    ++t.kernels;
    return over + (km.elementwise_s(vector, scalar, bytes) - over) / lnc;
  };
  const std::int64_t T = static_cast<std::int64_t>(seq) * b;
  const std::int64_t h = md.hidden, hd = md.head_size();
  const std::int64_t heads = std::max<std::int64_t>(1, md.heads / tp);
  const std::int64_t q = heads * hd, kv = kv_dim_per_rank(md, tp);
  const double Tsp = sp ? static_cast<double>(T) / tp : static_cast<double>(T);
  const double norm_passes = md.norm == Norm::kRMSNorm ? 3 : 5;
  const double drop = md.dropout ? 2 : 0;  // mask draw and multiply
  // Norm before attention: its passes over the (SP share of the) activations, read and write.
  t.fwd_block += ew(norm_passes * Tsp * h, Tsp, 4.0 * Tsp * h);
  // Linear layers: weights stationary (m = output features, k = input features), tokens moving.
  t.fwd_block += mm(1, q + 2 * kv, T, h);
  if (md.position_embeddings == 0)  // rotary: x cos + rotate(x) sin on q and k
    t.fwd_block += ew(3.0 * T * (q + kv), 0, 2.0 * 2 * T * (q + kv));
  // Causal attention: half the score matrix (s/2 keys per query on average); the scores go
  // through HBM in bf16 (written, read by softmax, written, read by attention x V).
  const double E = static_cast<double>(b) * heads * seq * (seq / 2.0);
  double core = 0;
  core += mm(b * heads, seq, std::max<std::int64_t>(1, seq / 2), hd);
  core += ew((4 + drop) * E, E, 2.0 * 2 * E + (md.dropout ? E : 0));
  core += mm(b * heads, hd, seq, std::max<std::int64_t>(1, seq / 2));
  t.attn_core = core;
  t.fwd_block += core;
  t.fwd_block += mm(1, h, T, q);
  t.fwd_block += ew((1 + drop) * Tsp * h, 0, 3.0 * 2 * Tsp * h);  // residual add (+ dropout)
  t.fwd_block += ew(norm_passes * Tsp * h, Tsp, 4.0 * Tsp * h);
  // MLP (dense, or top_k experts' worth of tokens spread over the experts).
  const bool glu = md.activation == Activation::kSwiGLU;
  const double act_vector = glu ? 2 : 1, act_bytes = glu ? 3 : 2;  // SiLU(g) x u; GELU(x)
  if (md.is_moe()) {
    const std::int64_t fe = md.expert_ffn / tp;
    const std::int64_t tok = std::max<std::int64_t>(1, T * md.top_k / md.experts);
    t.fwd_block += mm(1, md.experts, T, h);  // router
    t.fwd_block += ew(4.0 * T * md.experts, 1.0 * T * md.experts, 4.0 * T * md.experts);
    t.fwd_block += mm(md.experts, (glu ? 2 : 1) * fe, tok, h);
    t.fwd_block += ew(act_vector * T * md.top_k * fe, 1.0 * T * md.top_k * fe,
                      2.0 * act_bytes * T * md.top_k * fe);
    t.fwd_block += mm(md.experts, h, tok, fe);
  } else {
    const std::int64_t f = md.ffn / tp;
    t.fwd_block += mm(1, (glu ? 2 : 1) * f, T, h);
    t.fwd_block += ew(act_vector * T * f, 1.0 * T * f, 2.0 * act_bytes * T * f);
    t.fwd_block += mm(1, h, T, f);
  }
  t.fwd_block += ew((1 + drop) * Tsp * h, 0, 3.0 * 2 * Tsp * h);
  // Last stage: final norm, vocabulary-parallel logits and the cross-entropy over them (max,
  // exp, sum, log, the target's logit, in fp32).
  const std::int64_t v = std::max<std::int64_t>(1, md.vocab / tp);
  t.logits_fwd = ew(norm_passes * Tsp * h, Tsp, 4.0 * Tsp * h) + mm(1, v, T, h) +
                 ew(4.0 * T * v, 1.0 * T * v, (2 + 4 + 4) * static_cast<double>(T) * v);
  return t;
}

}  // namespace

double peak_flops_per_rank(const topo::Cluster& cluster) {
  return cluster.spec().chip->core.tensor(hw::TensorEngineDType::kBF16) *
         std::max(cluster.lnc(), 1);
}

TimeBreakdown step_time(const ModelSpec& m, const topo::Cluster& cluster, const Workload& workload,
                        const Layout& l, const AxisRoutes& routes) {
  return step_time(m, cluster, workload, l, routes, hw::calibrated_step_model());
}

TimeBreakdown step_time(const ModelSpec& m, const topo::Cluster& cluster, const Workload& workload,
                        const Layout& l, const AxisRoutes& routes, const hw::StepModel& params) {
  const double s = workload.seq;
  const int dp = l.dp();
  const int b = l.micro_batch, tp = l.tp;
  const bool sp = workload.sequence_parallel && tp > 1;
  const int micro = workload.global_batch / dp / b;
  const int Ls = (m.layers + l.pp - 1) / l.pp;
  const BlockTimes bt = block_times(m, cluster, params, workload.seq, b, tp, sp);
  const double exposed = 1 - params.comm_overlap;
  TimeBreakdown t;
  const double recompute_block = l.checkpointing == Checkpointing::kFull        ? bt.fwd_block
                                 : l.checkpointing == Checkpointing::kSelective ? bt.attn_core
                                                                                : 0;
  // The slowest stage: the last one, which carries the logits and the loss.
  const double Cf = Ls * bt.fwd_block + bt.logits_fwd;
  const double Cb = 2 * Cf;
  const double Cr = Ls * recompute_block;
  const double T = s * b;
  auto est = [&](const std::optional<coll::Route>& rt, coll::Collective c, double bytes) {
    if (!rt || !rt->routable || rt->ranks < 2 || bytes <= 0) return 0.0;
    return coll::estimate(cluster, *rt, c, static_cast<hw::Bytes>(bytes)).seconds;
  };
  // TP: per block, forward two all-reduces of the s b h activations (with SP: two all-gathers
  // and two reduce-scatters), the same in backward, and again in a full recompute; a
  // comm_overlap share hides behind the neighbouring kernels.
  double tp_mb = 0;
  if (tp > 1) {
    const double act = T * m.hidden * 2;
    const double fwd = sp ? 2 * (est(routes.tp, coll::Collective::kAllGather, act) +
                                 est(routes.tp, coll::Collective::kReduceScatter, act))
                          : 2 * est(routes.tp, coll::Collective::kAllReduce, act);
    tp_mb = exposed * Ls * fwd * (2 + (l.checkpointing == Checkpointing::kFull ? 1 : 0));
  }
  // FSDP: per micro-batch, each block's all-gather in forward and again in backward, and its
  // gradient reduce-scatter; prefetch overlaps them with the neighbouring block's compute.
  const PrecisionBytes by = bytes_per_element(workload.precision);
  double fsdp_exposed_mb = 0, fsdp_total_mb = 0;
  const StageParams sp_last = stage_params(m, stages_of(m, l.pp).back(), tp, l.pp);
  if (l.shard > 1) {
    const double ag = est(routes.shard, coll::Collective::kAllGather, sp_last.unit * 2);
    const double rs = est(routes.shard, coll::Collective::kReduceScatter, sp_last.unit * by.reduce);
    const double ag_root = est(routes.shard, coll::Collective::kAllGather, sp_last.root * 2);
    const double rs_root =
        est(routes.shard, coll::Collective::kReduceScatter, sp_last.root * by.reduce);
    const double cover_f = bt.fwd_block, cover_b = 2 * bt.fwd_block + recompute_block;
    fsdp_total_mb = Ls * (2 * ag + rs) + ag_root + rs_root;
    fsdp_exposed_mb = ag + (Ls - 1) * std::max(0.0, ag - cover_f) + ag + rs +
                      (Ls - 1) * std::max(0.0, ag + rs - cover_b) + ag_root + rs_root;
    t.fsdp_internode = routes.shard && routes.shard->nodes > 1;
  }
  double pp_mb = 0;
  if (l.pp > 1)
    pp_mb =
        exposed * 2 * est(routes.pp, coll::Collective::kSendRecv, T * m.hidden * 2 / (sp ? tp : 1));
  const double t_mb = Cf + Cb + Cr + tp_mb + fsdp_exposed_mb + pp_mb;
  t.compute_s = micro * (Cf + Cb);
  t.recompute_s = micro * Cr;
  t.tp_s = micro * tp_mb;
  t.fsdp_exposed_s = micro * fsdp_exposed_mb;
  t.fsdp_total_s = micro * fsdp_total_mb;
  t.pp_p2p_s = micro * pp_mb;
  // 1F1B and GPipe: the first stage starts pp - 1 micro-batches before the last one can.
  t.bubble_s = (l.pp - 1) * t_mb;
  // Replicas: with ZeRO-1 the gradients are reduce-scattered and the updated bf16 parameters
  // all-gathered after the last backward, exposed; otherwise one gradient all-reduce per step,
  // overlapped with the last micro-batch's backward except for the last block's share.
  const double grad = (sp_last.blocks + sp_last.root) / l.shard;
  if (l.replicate > 1) {
    if (l.zero1) {
      t.dp_total_s = est(routes.replicate, coll::Collective::kReduceScatter, grad * by.reduce) +
                     est(routes.replicate, coll::Collective::kAllGather, grad * 2);
      t.dp_exposed_s = t.dp_total_s;
    } else {
      t.dp_total_s = est(routes.replicate, coll::Collective::kAllReduce, grad * by.reduce);
      t.dp_exposed_s = std::max(t.dp_total_s / Ls, t.dp_total_s - Cb);
    }
  }
  // AdamW: read parameter, gradient, m, v; write parameter, m, v (HBM-bound), on the rank's
  // 1/replicate share under ZeRO-1.
  const double elems = grad / (l.zero1 ? l.replicate : 1);
  const double hbm_rank = cluster.spec().chip->hbm_Bps / cluster.ranks_per_chip();
  t.optimizer_s = elems * (2 * by.param + by.grad + by.opt + by.opt) / hbm_rank;
  t.step_s = micro * t_mb + t.bubble_s + t.dp_exposed_s + t.optimizer_s;
  return t;
}

}  // namespace vtrn::plan
