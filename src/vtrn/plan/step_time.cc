#include "vtrn/plan/step_time.h"

#include <algorithm>
#include <cstdint>

#include "vtrn/coll/collective_time.h"
#include "vtrn/cost/kernel_cost.h"
#include "vtrn/plan/memory.h"

namespace vtrn::plan {
namespace {

// Modeled time of the kernels of one block's forward on one logical core.
struct BlockTimes {
  double fwd_block = 0;   // one block forward
  double attn_core = 0;   // scores, softmax, attention x V (selective recompute)
  double logits_fwd = 0;  // output projection and loss
  double fwd_flops_block = 0;
};

double run(const cost::CostModel& cm, double lnc, std::int64_t batch, std::int64_t m,
           std::int64_t n, std::int64_t k, double* flops = nullptr) {
  cost::Work w;
  w.batch = batch;
  w.m = m;
  w.n = n;
  w.k = k;
  w.tensor_dtype = hw::TensorEngineDType::kBF16;
  w.bytes = 2.0 * batch *
            (static_cast<double>(m) * k + static_cast<double>(k) * n + static_cast<double>(m) * n);
  const cost::KernelCost c = cm.estimate(w);
  if (flops) *flops += c.flops;
  return c.fixed_s + (c.time_s - c.fixed_s) / lnc;
}

double elementwise(const cost::CostModel& cm, double lnc, double vector_ops, double scalar_ops,
                   double bytes) {
  cost::Work w;
  w.vector_ops = vector_ops;
  w.scalar_ops = scalar_ops;
  w.bytes = bytes;
  const cost::KernelCost c = cm.estimate(w);
  return c.fixed_s + (c.time_s - c.fixed_s) / lnc;
}

BlockTimes block_times(const ModelSpec& md, const topo::Cluster& cl, int seq, int b, int tp,
                       bool sp) {
  const cost::CostModel cm(*cl.spec().chip);
  const double lnc = std::max(cl.lnc(), 1);
  BlockTimes t;
  const std::int64_t T = static_cast<std::int64_t>(seq) * b;
  const std::int64_t h = md.hidden, q = md.attention_dim(), kv = md.kv_dim(), hd = md.head_size();
  const std::int64_t heads = std::max<std::int64_t>(1, md.heads / tp);
  const double Tsp = sp ? static_cast<double>(T) / tp : static_cast<double>(T);
  double fl = 0;
  // Linear layers: weights stationary (m = output features, k = input features), tokens moving.
  t.fwd_block += run(cm, lnc, 1, (q + 2 * kv) / tp, T, h, &fl);
  // Causal attention: half the score matrix (n = s/2 keys per query on average).
  double core = 0;
  core += run(cm, lnc, b * heads, seq, std::max<std::int64_t>(1, seq / 2), hd, &fl);
  core += elementwise(cm, lnc, 4.0 * b * heads * seq * (seq / 2.0),
                      1.0 * b * heads * seq * (seq / 2.0), 0);
  core += run(cm, lnc, b * heads, hd, seq, std::max<std::int64_t>(1, seq / 2), &fl);
  t.attn_core = core;
  t.fwd_block += core;
  t.fwd_block += run(cm, lnc, 1, h, T, q / tp, &fl);
  // MLP (dense or top_k experts' worth of tokens spread over the experts).
  const int glu = md.activation == Activation::kSwiGLU ? 2 : 1;
  if (md.is_moe()) {
    const std::int64_t fe = md.expert_ffn / tp;
    const std::int64_t tok = std::max<std::int64_t>(1, T * md.top_k / md.experts);
    t.fwd_block += run(cm, lnc, 1, md.experts, T, h, &fl);  // router
    t.fwd_block += run(cm, lnc, md.experts, glu * fe, tok, h, &fl);
    t.fwd_block += run(cm, lnc, md.experts, h, tok, fe, &fl);
    t.fwd_block += elementwise(cm, lnc, 2.0 * T * md.top_k * fe, 1.0 * T * md.top_k * fe, 0);
  } else {
    const std::int64_t f = md.ffn / tp;
    t.fwd_block += run(cm, lnc, 1, glu * f, T, h, &fl);
    t.fwd_block += run(cm, lnc, 1, h, T, f, &fl);
    t.fwd_block += elementwise(cm, lnc, 2.0 * T * f, 1.0 * T * f, 2.0 * 3 * T * f);
  }
  // Two norms (about 5 vector ops per element) and two residual adds, on the SP share.
  t.fwd_block += elementwise(cm, lnc, 12.0 * Tsp * h, 2.0 * Tsp, 2.0 * 6 * Tsp * h);
  t.fwd_flops_block = fl;
  const std::int64_t v = std::max<std::int64_t>(1, md.vocab / tp);
  t.logits_fwd =
      run(cm, lnc, 1, v, T, h) + elementwise(cm, lnc, 3.0 * T * v, 1.0 * T * v, 4.0 * 2 * T * v);
  return t;
}

}  // namespace

double peak_flops_per_rank(const topo::Cluster& cluster) {
  return cluster.spec().chip->core.tensor(hw::TensorEngineDType::kBF16) *
         std::max(cluster.lnc(), 1);
}

TimeBreakdown step_time(const ModelSpec& m, const topo::Cluster& cluster, const Workload& workload,
                        const Layout& l, const AxisRoutes& routes) {
  const double s = workload.seq;
  const int dp = l.dp();
  const int b = l.micro_batch, tp = l.tp;
  const bool sp = workload.sequence_parallel && tp > 1;
  const int micro = workload.global_batch / dp / b;
  const int Ls = (m.layers + l.pp - 1) / l.pp;
  const BlockTimes bt = block_times(m, cluster, workload.seq, b, tp, sp);
  TimeBreakdown t;
  const double recompute_block = l.checkpointing == Checkpointing::kFull        ? bt.fwd_block
                                 : l.checkpointing == Checkpointing::kSelective ? bt.attn_core
                                                                                : 0;
  const double Cf = Ls * bt.fwd_block + bt.logits_fwd;
  const double Cb = 2 * Cf;
  const double Cr = Ls * recompute_block;
  const double T = s * b;
  auto est = [&](const std::optional<coll::Route>& rt, coll::Collective c, double bytes) {
    if (!rt || !rt->routable || rt->ranks < 2 || bytes <= 0) return 0.0;
    return coll::estimate(cluster, *rt, c, static_cast<hw::Bytes>(bytes)).seconds;
  };
  // TP: per block, forward two all-reduces of the s b h activations (with SP: two all-gathers
  // and two reduce-scatters), the same in backward, and again in a full recompute.
  double tp_mb = 0;
  if (tp > 1) {
    const double act = T * m.hidden * 2;
    const double fwd = sp ? 2 * (est(routes.tp, coll::Collective::kAllGather, act) +
                                 est(routes.tp, coll::Collective::kReduceScatter, act))
                          : 2 * est(routes.tp, coll::Collective::kAllReduce, act);
    tp_mb = Ls * fwd * (2 + (l.checkpointing == Checkpointing::kFull ? 1 : 0));
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
    fsdp_exposed_mb = ag + (Ls - 1) * std::max(0.0, ag - cover_f) + ag + rs +
                      (Ls - 1) * std::max(0.0, ag + rs - cover_b) + ag_root + rs_root;
    fsdp_total_mb = Ls * (2 * ag + rs) + ag_root + rs_root;
    t.fsdp_internode = routes.shard && routes.shard->nodes > 1;
  }
  double pp_mb = 0;
  if (l.pp > 1)
    pp_mb = 2 * est(routes.pp, coll::Collective::kSendRecv, T * m.hidden * 2 / (sp ? tp : 1));
  const double t_mb = Cf + Cb + Cr + tp_mb + fsdp_exposed_mb + pp_mb;
  t.compute_s = micro * (Cf + Cb);
  t.recompute_s = micro * Cr;
  t.tp_s = micro * tp_mb;
  t.fsdp_exposed_s = micro * fsdp_exposed_mb;
  t.fsdp_total_s = micro * fsdp_total_mb;
  t.pp_p2p_s = micro * pp_mb;
  t.bubble_s = (l.pp - 1) * t_mb;
  // Replicas: one gradient all-reduce per step (after accumulation), overlapped with the last
  // micro-batch's backward except for the last block's share.
  if (l.replicate > 1) {
    const double grad = (sp_last.blocks + sp_last.root) / l.shard * by.reduce;
    t.dp_total_s = est(routes.replicate, coll::Collective::kAllReduce, grad);
    t.dp_exposed_s = std::max(t.dp_total_s / Ls, t.dp_total_s - Cb);
  }
  // AdamW: read parameter, gradient, m, v; write parameter, m, v (HBM-bound).
  const double elems = (sp_last.blocks + sp_last.root) / l.shard;
  const double hbm_rank = cluster.spec().chip->hbm_Bps / cluster.ranks_per_chip();
  t.optimizer_s = elems * (2 * by.param + by.grad + by.opt + by.opt) / hbm_rank;
  t.step_s = micro * t_mb + t.bubble_s + t.dp_exposed_s + t.optimizer_s;
  return t;
}

}  // namespace vtrn::plan
