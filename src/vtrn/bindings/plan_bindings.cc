// vtrn._core.plan: the planner for Python (`vtrn plan`). No torch. Results come back as plain dicts
// and lists, ready for JSON; bad input raises ValueError with the C++ layer's message.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "vtrn/bindings/bindings.h"
#include "vtrn/hw/step_model.h"
#include "vtrn/plan/model_spec.h"
#include "vtrn/plan/planner.h"
#include "vtrn/topo/cluster.h"

namespace py = pybind11;

namespace vtrn::bindings {

namespace {

hw::StepModel step_model_from(const py::dict& d, hw::StepModel sm) {
  for (const auto& [key, value] : d) {
    const std::string k = py::str(key);
    const double v = value.cast<double>();
    if (k == "tensor_efficiency")
      sm.tensor_efficiency = v;
    else if (k == "kernel_overhead_s")
      sm.kernel_overhead_s = v;
    else if (k == "comm_overlap")
      sm.comm_overlap = v;
    else if (k == "error_band")
      sm.error_band = v;
    else
      throw std::invalid_argument("unknown step model parameter '" + k +
                                  "'; use tensor_efficiency, kernel_overhead_s, comm_overlap, "
                                  "error_band");
  }
  hw::validate(sm);
  return sm;
}

py::dict model_dict(const plan::ModelSpec& m) {
  py::dict d;
  d["name"] = m.name;
  d["source"] = m.source;
  d["layers"] = m.layers;
  d["hidden"] = m.hidden;
  d["heads"] = m.heads;
  d["kv_heads"] = m.kv_heads;
  d["head_dim"] = m.head_size();
  d["ffn"] = m.ffn;
  d["activation"] = std::string(plan::activation_name(m.activation));
  d["vocab"] = m.vocab;
  d["tied_embeddings"] = m.tied_embeddings;
  d["norm"] = std::string(plan::norm_name(m.norm));
  d["experts"] = m.experts;
  d["top_k"] = m.top_k;
  d["expert_ffn"] = m.expert_ffn;
  d["params"] = m.total_params();
  d["active_params"] = m.active_params();
  return d;
}

py::dict eval_dict(const plan::Planner& p, const plan::Evaluation& e, bool with_text) {
  py::dict d;
  const plan::Layout& l = e.layout;
  d["mesh_shape"] = l.mesh_shape();
  d["mesh_axes"] = l.mesh_axes();
  d["pp"] = l.pp;
  d["replicate"] = l.replicate;
  d["shard"] = l.shard;
  d["tp"] = l.tp;
  d["micro_batch"] = l.micro_batch;
  d["checkpointing"] = std::string(plan::checkpointing_name(l.checkpointing));
  d["fits"] = e.fits;
  d["routable"] = e.routable;
  d["batch_ok"] = e.batch_ok;
  d["custom_placement"] = e.custom_placement;
  if (e.custom_placement) d["placement"] = e.placement;
  py::dict m;
  m["parameters"] = e.memory.parameters;
  m["gradients"] = e.memory.gradients;
  m["optimizer"] = e.memory.optimizer;
  m["gathered"] = e.memory.gathered;
  m["activations"] = e.memory.activations;
  m["logits"] = e.memory.logits;
  m["runtime"] = e.memory.runtime;
  m["collectives"] = e.memory.collectives;
  m["total"] = e.memory.total;
  m["budget"] = e.memory.budget;
  d["memory_bytes"] = m;
  d["memory_peak_at"] = std::string(e.memory.peak_moment);
  py::dict t;
  t["compute"] = e.time.compute_s;
  t["recompute"] = e.time.recompute_s;
  t["tp"] = e.time.tp_s;
  t["fsdp_exposed"] = e.time.fsdp_exposed_s;
  t["fsdp_total"] = e.time.fsdp_total_s;
  t["fsdp_internode"] = e.time.fsdp_internode;
  t["dp_exposed"] = e.time.dp_exposed_s;
  t["dp_total"] = e.time.dp_total_s;
  t["pp_p2p"] = e.time.pp_p2p_s;
  t["bubble"] = e.time.bubble_s;
  t["optimizer"] = e.time.optimizer_s;
  d["time_s"] = t;
  d["step_time_s"] = e.time.step_s;
  d["tokens_per_second"] = e.tokens_per_second;
  // The calibration's error band around the prediction.
  const double band = p.step_model().error_band;
  d["error_band"] = band;
  d["step_time_low_s"] = e.time.step_s * (1 - band);
  d["step_time_high_s"] = e.time.step_s * (1 + band);
  d["tokens_per_second_low"] = e.time.step_s > 0 ? e.tokens_per_second / (1 + band) : 0.0;
  d["tokens_per_second_high"] = e.time.step_s > 0 ? e.tokens_per_second / (1 - band) : 0.0;
  d["zero1"] = l.zero1;
  d["mfu"] = e.mfu;
  d["limiting_resource"] = e.limiting_resource;
  d["advice"] = e.advice;
  if (!e.route_error.empty()) d["route_error"] = e.route_error;
  if (!e.batch_error.empty()) d["batch_error"] = e.batch_error;
  d["tp_ok"] = e.tp_ok;
  if (!e.tp_error.empty()) d["tp_error"] = e.tp_error;
  if (with_text) {
    d["reason"] = p.explain(e);
  }
  return d;
}

py::dict run_plan(const std::string& model, const std::string& instance, int lnc, int nodes,
                  int seq, int global_batch, const std::string& precision,
                  const std::string& schedule, bool sequence_parallel, int prefetch,
                  std::optional<std::string> layout, int top,
                  std::vector<std::string> checkpointing, std::vector<int> micro_batches,
                  bool allow_pp, bool search_placement, std::optional<py::dict> params) {
  if (nodes < 1)
    throw std::invalid_argument("--nodes " + std::to_string(nodes) +
                                ": the cluster needs at least one node");
  plan::Workload w;
  w.seq = seq;
  w.global_batch = global_batch;
  w.precision = plan::parse_precision(precision);
  w.schedule = plan::parse_schedule(schedule);
  w.sequence_parallel = sequence_parallel;
  w.prefetch = prefetch;
  const topo::Cluster cluster(instance, lnc, nodes);
  plan::Planner p(plan::resolve_model(model), cluster, w);
  if (params) p.set_step_model(step_model_from(*params, p.step_model()));
  py::dict out;
  out["model"] = model_dict(p.model());
  out["cluster"] = cluster.describe();
  out["world"] = cluster.world();
  out["seq"] = seq;
  out["global_batch"] = global_batch;
  out["precision"] = std::string(plan::precision_name(w.precision));
  out["schedule"] = std::string(plan::schedule_name(w.schedule));
  py::list layouts;
  const auto t0 = std::chrono::steady_clock::now();
  if (layout) {
    plan::Layout l = plan::parse_layout(*layout);
    const bool choose_mb = l.micro_batch == 0;
    const bool choose_ckpt = layout->find("checkpointing=") == std::string::npos;
    // Evaluate exactly this layout; when micro-batch or checkpointing are not given, try the
    // same choices as the search and report them best first.
    std::vector<plan::Evaluation> evals;
    std::vector<plan::Checkpointing> cks;
    if (choose_ckpt)
      for (const auto& c : checkpointing) cks.push_back(plan::parse_checkpointing(c));
    else
      cks.push_back(l.checkpointing);
    std::vector<int> mbs = choose_mb ? micro_batches : std::vector<int>{l.micro_batch};
    for (auto c : cks)
      for (int mb : mbs) {
        plan::Layout x = l;
        x.checkpointing = c;
        x.micro_batch = mb;
        if (choose_mb && global_batch % std::max(1, x.dp()) == 0 &&
            (global_batch / x.dp()) % mb != 0)
          continue;
        evals.push_back(p.evaluate(x, search_placement));
      }
    if (evals.empty())
      evals.push_back(p.evaluate(
          [&] {
            plan::Layout x = l;
            x.micro_batch = 1;
            return x;
          }(),
          search_placement));
    std::stable_sort(evals.begin(), evals.end(),
                     [](const plan::Evaluation& a, const plan::Evaluation& b) {
                       if (a.valid() != b.valid()) return a.valid();
                       if (a.valid()) return a.tokens_per_second > b.tokens_per_second;
                       return a.memory.total < b.memory.total;
                     });
    for (size_t i = 0; i < evals.size() && static_cast<int>(i) < top; ++i)
      layouts.append(eval_dict(p, evals[i], true));
    out["evaluated"] = static_cast<long>(evals.size());
    out["factorizations"] = 1;
    out["why_nothing"] = evals.front().valid() ? "" : p.explain(evals.front());
    out["alternatives"] = std::vector<std::string>{};
  } else {
    plan::LayoutSearchOptions o;
    o.checkpointing.clear();
    for (const auto& c : checkpointing) o.checkpointing.push_back(plan::parse_checkpointing(c));
    o.micro_batches = micro_batches;
    o.allow_pp = allow_pp;
    o.search_placement = search_placement;
    o.keep_top = std::max(top, 1);
    const plan::LayoutSearchResult r = p.search(o);
    for (size_t i = 0; i < r.ranked.size() && static_cast<int>(i) < top; ++i)
      layouts.append(eval_dict(p, r.ranked[i], true));
    py::list rejected;
    for (size_t i = 0; i < r.rejected.size() && i < 5; ++i)
      rejected.append(eval_dict(p, r.rejected[i], true));
    out["rejected"] = rejected;
    out["evaluated"] = r.evaluated;
    out["factorizations"] = r.factorizations;
    out["placement_searches"] = r.placement_searches;
    out["pruned"] = r.pruned;
    out["why_nothing"] = r.why_nothing;
    out["alternatives"] = r.alternatives;
  }
  out["search_seconds"] =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // Ties: layouts whose throughput is within the error band of the best one's.
  double best_tps = 0;
  for (const auto& item : layouts) {
    py::dict d = item.cast<py::dict>();
    if (d["fits"].cast<bool>() && d["routable"].cast<bool>())
      best_tps = std::max(best_tps, d["tokens_per_second"].cast<double>());
  }
  const double band = p.step_model().error_band;
  for (const auto& item : layouts) {
    py::dict d = item.cast<py::dict>();
    const double tps = d["tokens_per_second"].cast<double>();
    d["tie_with_best"] = best_tps > 0 && tps > 0 && (best_tps - tps) <= band * best_tps;
  }
  out["layouts"] = layouts;
  out["error_band"] = band;
  return out;
}

// Tokens per second of one layout under each parameter set (bench/calibrate.py's fit).
std::vector<double> tokens_per_second_each(const std::string& model, const std::string& instance,
                                           int nodes, int seq, int global_batch,
                                           const std::string& layout,
                                           const std::vector<py::dict>& params) {
  plan::Workload w;
  w.seq = seq;
  w.global_batch = global_batch;
  const topo::Cluster cluster(instance, 0, nodes);
  const plan::Planner p(plan::resolve_model(model), cluster, w);
  plan::Layout l = plan::parse_layout(layout);
  if (l.micro_batch < 1) l.micro_batch = 1;
  std::vector<hw::StepModel> sms;
  sms.reserve(params.size());
  for (const auto& d : params) sms.push_back(step_model_from(d, p.step_model()));
  std::vector<double> out;
  for (const auto& e : p.evaluate_each(l, sms)) out.push_back(e.tokens_per_second);
  return out;
}

}  // namespace

void bind_plan(py::module_& m) {
  m.def("tokens_per_second_each", &tokens_per_second_each, py::arg("model"), py::arg("instance"),
        py::arg("nodes"), py::arg("seq"), py::arg("global_batch"), py::arg("layout"),
        py::arg("params"),
        "Tokens per second of one layout under each step-model parameter dict (the calibration's "
        "fit); the layout is routed once.");
  m.doc() = "vtrn planner: per-rank memory and step time of FSDP/TP/PP/HSDP layouts (no torch)";
  m.attr("MAX_WORKLOAD_VALUE") = plan::kMaxWorkloadValue;
  m.attr("MAX_MODEL_DIM") = plan::kMaxModelDim;
  m.attr("MAX_MODEL_PARAMS") = plan::kMaxModelParams;
  m.def("presets", [] {
    py::list l;
    for (const auto& p : plan::presets()) l.append(model_dict(p));
    return l;
  });
  m.def("step_model", [] {
    const hw::StepModel& sm = hw::calibrated_step_model();
    py::dict d;
    d["tensor_efficiency"] = sm.tensor_efficiency;
    d["kernel_overhead_s"] = sm.kernel_overhead_s;
    d["comm_overlap"] = sm.comm_overlap;
    d["error_band"] = sm.error_band;
    d["provenance"] = std::string(sm.provenance);
    return d;
  });
  m.def(
      "model",
      [](const std::string& name_or_path) { return model_dict(plan::resolve_model(name_or_path)); },
      py::arg("name_or_path"));
  m.def(
      "activation_bytes_per_layer",
      [](const std::string& model, int seq, int b, int tp, bool sp, const std::string& ckpt) {
        return plan::activation_bytes_per_layer(plan::resolve_model(model), seq, b, tp, sp,
                                                plan::parse_checkpointing(ckpt));
      },
      py::arg("model"), py::arg("seq"), py::arg("micro_batch"), py::arg("tp"),
      py::arg("sequence_parallel"), py::arg("checkpointing"));
  m.def(
      "parse_layout",
      [](const std::string& text) {
        const plan::Layout l = plan::parse_layout(text);
        py::dict d;
        d["pp"] = l.pp;
        d["replicate"] = l.replicate;
        d["shard"] = l.shard;
        d["tp"] = l.tp;
        d["world"] = l.world();
        d["mesh_axes"] = l.mesh_axes();
        d["mesh_shape"] = l.mesh_shape();
        return d;
      },
      py::arg("layout"),
      "The planner's reading of a layout (\"pp=2,shard=2,tp=2\"): its degrees and its mesh, "
      "outermost axis first; ValueError naming a bad part.");
  m.def("plan", &run_plan, py::arg("model"), py::arg("instance") = "trn2.48xlarge",
        py::arg("lnc") = 0, py::arg("nodes") = 1, py::arg("seq") = 4096,
        py::arg("global_batch") = 1024, py::arg("precision") = "bf16-fp32-master",
        py::arg("schedule") = "1f1b", py::arg("sequence_parallel") = true, py::arg("prefetch") = 1,
        py::arg("layout") = std::nullopt, py::arg("top") = 10,
        py::arg("checkpointing") = std::vector<std::string>{"none", "selective", "full"},
        py::arg("micro_batches") = std::vector<int>{1, 2, 4, 8}, py::arg("allow_pp") = true,
        py::arg("search_placement") = true, py::arg("params") = std::nullopt,
        "Search (or, with layout='pp=1,replicate=1,shard=64,tp=8', evaluate) layouts; a dict with "
        "'layouts' best first.");
}

}  // namespace vtrn::bindings
