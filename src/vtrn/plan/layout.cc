#include "vtrn/plan/layout.h"

#include <cstdint>

#include <sstream>
#include <stdexcept>

namespace vtrn::plan {

std::string_view precision_name(Precision p) {
  return p == Precision::kBF16 ? "bf16" : "bf16-fp32-master";
}
std::string_view checkpointing_name(Checkpointing c) {
  switch (c) {
    case Checkpointing::kNone:
      return "none";
    case Checkpointing::kSelective:
      return "selective";
    case Checkpointing::kFull:
      return "full";
  }
  return "?";
}
std::string_view schedule_name(Schedule s) { return s == Schedule::kGPipe ? "gpipe" : "1f1b"; }

Precision parse_precision(std::string_view name) {
  if (name == "bf16-fp32-master" || name == "mixed") return Precision::kBF16MixedFP32Master;
  if (name == "bf16") return Precision::kBF16;
  throw std::invalid_argument(
      "unknown precision '" + std::string(name) +
      "'; use bf16-fp32-master (bf16 compute, fp32 master weights and optimizer state) or bf16");
}
Checkpointing parse_checkpointing(std::string_view name) {
  if (name == "none") return Checkpointing::kNone;
  if (name == "selective") return Checkpointing::kSelective;
  if (name == "full") return Checkpointing::kFull;
  throw std::invalid_argument("unknown checkpointing '" + std::string(name) +
                              "'; use none, selective or full");
}
Schedule parse_schedule(std::string_view name) {
  if (name == "1f1b") return Schedule::k1F1B;
  if (name == "gpipe") return Schedule::kGPipe;
  throw std::invalid_argument("unknown pipeline schedule '" + std::string(name) +
                              "'; use 1f1b or gpipe");
}

std::vector<std::string> Layout::mesh_axes() const {
  std::vector<std::string> out;
  if (pp > 1) out.push_back("pp");
  if (replicate > 1) out.push_back("replicate");
  if (shard > 1) out.push_back("shard");
  if (tp > 1) out.push_back("tp");
  if (out.empty()) out.push_back("shard");
  return out;
}

std::vector<int> Layout::mesh_shape() const {
  std::vector<int> out;
  if (pp > 1) out.push_back(pp);
  if (replicate > 1) out.push_back(replicate);
  if (shard > 1) out.push_back(shard);
  if (tp > 1) out.push_back(tp);
  if (out.empty()) out.push_back(1);
  return out;
}

std::string Layout::describe() const {
  return "pp=" + std::to_string(pp) + ",replicate=" + std::to_string(replicate) +
         ",shard=" + std::to_string(shard) + ",tp=" + std::to_string(tp) +
         (zero1 ? ",zero1=1" : "");
}

Layout parse_layout(std::string_view text) {
  Layout l;
  l.micro_batch = 0;  // 0: let the caller choose
  std::string s(text);
  std::stringstream ss(s);
  std::string part;
  bool any = false;
  while (std::getline(ss, part, ',')) {
    if (part.empty()) continue;
    const auto eq = part.find('=');
    if (eq == std::string::npos)
      throw std::invalid_argument("layout part '" + part +
                                  "' has no '='; write e.g. pp=1,replicate=1,shard=64,tp=8");
    const std::string key = part.substr(0, eq), value = part.substr(eq + 1);
    if (key == "checkpointing") {
      l.checkpointing = parse_checkpointing(value);
      continue;
    }
    int v = 0;
    try {
      size_t used = 0;
      v = std::stoi(value, &used);
      if (used != value.size()) throw std::invalid_argument("");
    } catch (...) {
      throw std::invalid_argument("layout part '" + part + "': '" + value + "' is not an integer");
    }
    if (key == "zero1") {
      if (v != 0 && v != 1)
        throw std::invalid_argument("layout part '" + part +
                                    "': zero1 is 0 or 1 (1: optimizer state sharded over the "
                                    "data-parallel ranks)");
      l.zero1 = v == 1;
      continue;
    }
    if (v < 1)
      throw std::invalid_argument("layout part '" + part + "': degrees must be at least 1");
    if (v > kMaxWorkloadValue)
      throw std::invalid_argument("layout part '" + part + "': " + std::to_string(v) +
                                  " is more than " + std::to_string(kMaxWorkloadValue) +
                                  " (2^24), the most vtrn plans for");
    if (key == "pp")
      l.pp = v;
    else if (key == "replicate" || key == "dp")
      l.replicate = v;
    else if (key == "shard" || key == "fsdp")
      l.shard = v;
    else if (key == "tp")
      l.tp = v;
    else if (key == "micro_batch" || key == "mb")
      l.micro_batch = v;
    else
      throw std::invalid_argument(
          "layout part '" + part + "': unknown key '" + key +
          "'; use pp, replicate, shard, tp, micro_batch, checkpointing, zero1");
    any = true;
  }
  if (!any) throw std::invalid_argument("empty layout; write e.g. pp=1,replicate=1,shard=64,tp=8");
  // The degrees multiply to the world size; an int product of four of them could wrap, so the
  // product is formed in int64 and checked after each factor (each is at most 2^24).
  std::int64_t world = 1;
  for (const int degree : {l.pp, l.replicate, l.shard, l.tp}) {
    world *= degree;
    if (world > kMaxWorkloadValue)
      throw std::invalid_argument("layout '" + s + "': the degrees multiply to more than " +
                                  std::to_string(kMaxWorkloadValue) +
                                  " (2^24) ranks; they must multiply to the world size");
  }
  return l;
}

}  // namespace vtrn::plan
