#include "vtrn/plan/model_spec.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <utility>

namespace vtrn::plan {

std::string_view activation_name(Activation a) {
  return a == Activation::kSwiGLU ? "swiglu" : "gelu";
}
std::string_view norm_name(Norm n) { return n == Norm::kRMSNorm ? "rmsnorm" : "layernorm"; }

std::int64_t ModelSpec::attention_params() const {
  const std::int64_t h = hidden, q = attention_dim(), kv = kv_dim();
  std::int64_t p = h * q + 2 * h * kv + q * h;
  if (bias) p += q + 2 * kv + h;
  if (qk_norm) p += 2 * static_cast<std::int64_t>(head_size());
  return p;
}

std::int64_t ModelSpec::mlp_params(int width) const {
  const std::int64_t h = hidden, f = width;
  if (activation == Activation::kSwiGLU) return 3 * h * f + (bias ? 2 * f + h : 0);
  return 2 * h * f + (bias ? f + h : 0);
}

std::int64_t ModelSpec::block_mlp_params() const {
  if (!is_moe()) return mlp_params(ffn);
  return static_cast<std::int64_t>(experts) * mlp_params(expert_ffn) +
         static_cast<std::int64_t>(hidden) * experts;
}

std::int64_t ModelSpec::block_norm_params() const {
  return (norm == Norm::kLayerNorm ? 4 : 2) * static_cast<std::int64_t>(hidden);
}

std::int64_t ModelSpec::embedding_params() const {
  return static_cast<std::int64_t>(vocab) * hidden +
         static_cast<std::int64_t>(position_embeddings) * hidden;
}

std::int64_t ModelSpec::head_params() const {
  return tied_embeddings ? 0 : static_cast<std::int64_t>(vocab) * hidden;
}

std::int64_t ModelSpec::final_norm_params() const {
  return (norm == Norm::kLayerNorm ? 2 : 1) * static_cast<std::int64_t>(hidden);
}

std::int64_t ModelSpec::total_params() const {
  return static_cast<std::int64_t>(layers) * block_params() + embedding_params() + head_params() +
         final_norm_params();
}

std::int64_t ModelSpec::active_params() const {
  if (!is_moe()) return total_params();
  const std::int64_t active_block =
      attention_params() + static_cast<std::int64_t>(top_k) * mlp_params(expert_ffn) +
      static_cast<std::int64_t>(hidden) * experts + block_norm_params();
  return static_cast<std::int64_t>(layers) * active_block + embedding_params() + head_params() +
         final_norm_params();
}

void ModelSpec::validate() const {
  auto bad = [&](std::string_view field, long long value, std::string_view need) {
    throw std::invalid_argument("model '" + name + "': " + std::string(field) + " = " +
                                std::to_string(value) + " is not valid; it must be " +
                                std::string(need));
  };
  const std::pair<std::string_view, int> fields[] = {
      {"layers", layers},        {"hidden", hidden},
      {"heads", heads},          {"kv_heads", kv_heads},
      {"head_dim", head_dim},    {"ffn", ffn},
      {"vocab", vocab},          {"position_embeddings", position_embeddings},
      {"experts", experts},      {"top_k", top_k},
      {"expert_ffn", expert_ffn}};
  for (const auto& [field, value] : fields)
    if (value > kMaxModelDim)
      bad(field, value, "at most " + std::to_string(kMaxModelDim) + " (2^24)");
  if (layers < 1) bad("layers", layers, "at least 1");
  if (hidden < 1) bad("hidden", hidden, "at least 1");
  if (heads < 1) bad("heads", heads, "at least 1");
  if (kv_heads < 1 || kv_heads > heads || heads % kv_heads != 0)
    bad("kv_heads", kv_heads, "between 1 and heads (" + std::to_string(heads) + ") and divide it");
  if (head_dim < 0) bad("head_dim", head_dim, "0 (hidden / heads) or positive");
  if (head_dim == 0 && hidden % heads != 0)
    bad("hidden", hidden,
        "a multiple of heads (" + std::to_string(heads) + ") when head_dim is not given");
  if (vocab < 1) bad("vocab", vocab, "at least 1");
  if (position_embeddings < 0) bad("position_embeddings", position_embeddings, "0 or positive");
  if (experts < 0) bad("experts", experts, "0 (dense) or positive");
  if (is_moe()) {
    if (top_k < 1 || top_k > experts)
      bad("top_k", top_k, "between 1 and experts (" + std::to_string(experts) + ")");
    if (expert_ffn < 1) bad("expert_ffn", expert_ffn, "at least 1 for a mixture-of-experts model");
  } else if (ffn < 1) {
    bad("ffn", ffn, "at least 1 for a dense model");
  }
  // Every field is now at most 2^24, so these products fit an int64; the int accessors
  // (attention_dim, kv_dim) need heads x head_dim within the same limit.
  const std::int64_t head = head_dim > 0 ? head_dim : hidden / heads;
  if (static_cast<std::int64_t>(heads) * head > kMaxModelDim)
    bad("heads x head_dim", static_cast<std::int64_t>(heads) * head,
        "at most " + std::to_string(kMaxModelDim) + " (2^24)");
  // The parameter count, in long double: layers x experts x 3 x hidden x expert_ffn can reach
  // 2^122, beyond int64, before total_params() would be safe to call.
  const long double mlp =
      static_cast<long double>(mlp_params(is_moe() ? expert_ffn : ffn)) * (is_moe() ? experts : 1);
  const long double block = static_cast<long double>(attention_params()) + mlp +
                            static_cast<long double>(hidden) * experts + block_norm_params();
  const long double total =
      block * layers + embedding_params() + head_params() + final_norm_params();
  if (total > static_cast<long double>(kMaxModelParams)) {
    char count[32];
    std::snprintf(count, sizeof count, "%.3Le", total);
    throw std::invalid_argument("model '" + name + "': it has " + count +
                                " parameters, more than the " + std::to_string(kMaxModelParams) +
                                " (2^50) vtrn plans for; check layers, hidden, ffn, experts and "
                                "vocab");
  }
}

namespace {

ModelSpec llama(std::string name, std::string source, int layers, int hidden, int heads, int kv,
                int ffn, int vocab) {
  ModelSpec m;
  m.name = std::move(name);
  m.source = std::move(source);
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.kv_heads = kv;
  m.ffn = ffn;
  m.vocab = vocab;
  m.activation = Activation::kSwiGLU;
  m.norm = Norm::kRMSNorm;
  return m;
}

std::vector<ModelSpec> make_presets() {
  std::vector<ModelSpec> p;
  // Llama 2 (Touvron et al. 2023, arXiv:2307.09288), Hugging Face meta-llama/Llama-2-*-hf
  // config.json: num_hidden_layers, hidden_size, num_attention_heads, num_key_value_heads,
  // intermediate_size, vocab_size 32000, tie_word_embeddings false.
  p.push_back(
      llama("llama2-7b", "meta-llama/Llama-2-7b-hf config.json", 32, 4096, 32, 32, 11008, 32000));
  p.push_back(
      llama("llama2-13b", "meta-llama/Llama-2-13b-hf config.json", 40, 5120, 40, 40, 13824, 32000));
  p.push_back(llama("llama2-70b", "meta-llama/Llama-2-70b-hf config.json (GQA, 8 KV heads)", 80,
                    8192, 64, 8, 28672, 32000));
  // Llama 3 / 3.1 (Grattafiori et al. 2024, arXiv:2407.21783, table 3), meta-llama/Meta-Llama-3-*
  // and Llama-3.1-405B config.json: vocab_size 128256, 8 KV heads, untied.
  p.push_back(
      llama("llama3-8b", "meta-llama/Meta-Llama-3-8B config.json", 32, 4096, 32, 8, 14336, 128256));
  p.push_back(llama("llama3-70b", "meta-llama/Meta-Llama-3-70B config.json", 80, 8192, 64, 8, 28672,
                    128256));
  p.push_back(llama("llama3.1-405b", "meta-llama/Llama-3.1-405B config.json; paper table 3", 126,
                    16384, 128, 8, 53248, 128256));
  // Qwen3 (Qwen/Qwen3-8B, Qwen/Qwen3-32B config.json): head_dim 128 (32B: 64 x 128 = 8192 != hidden
  // 5120), q/k RMSNorm, vocab_size 151936, tie_word_embeddings false.
  {
    ModelSpec m = llama("qwen3-8b", "Qwen/Qwen3-8B config.json", 36, 4096, 32, 8, 12288, 151936);
    m.head_dim = 128;
    m.qk_norm = true;
    p.push_back(m);
  }
  {
    ModelSpec m = llama("qwen3-32b", "Qwen/Qwen3-32B config.json", 64, 5120, 64, 8, 25600, 151936);
    m.head_dim = 128;
    m.qk_norm = true;
    p.push_back(m);
  }
  // Mixtral 8x7B (Jiang et al. 2024, arXiv:2401.04088; mistralai/Mixtral-8x7B-v0.1 config.json):
  // 8 experts, 2 per token, expert intermediate_size 14336, vocab 32000, untied.
  {
    ModelSpec m =
        llama("mixtral-8x7b", "mistralai/Mixtral-8x7B-v0.1 config.json", 32, 4096, 32, 8, 0, 32000);
    m.experts = 8;
    m.top_k = 2;
    m.expert_ffn = 14336;
    p.push_back(m);
  }
  // GPT-3 175B (Brown et al. 2020, arXiv:2005.14165, table 2.1): 96 layers, d_model 12288, 96 heads
  // of 128, d_ff = 4 d_model, context 2048 (learned positions); GPT-2 BPE vocabulary of 50257 with
  // tied input/output embeddings, LayerNorm and biases, dropout (Radford et al. 2019).
  {
    ModelSpec m;
    m.name = "gpt3-175b";
    m.source = "Brown et al. 2020 (arXiv:2005.14165) table 2.1; GPT-2 vocabulary";
    m.layers = 96;
    m.hidden = 12288;
    m.heads = 96;
    m.kv_heads = 96;
    m.ffn = 4 * 12288;
    m.activation = Activation::kGELU;
    m.vocab = 50257;
    m.tied_embeddings = true;
    m.norm = Norm::kLayerNorm;
    m.bias = true;
    m.position_embeddings = 2048;
    m.dropout = true;
    p.push_back(m);
  }
  for (const auto& m : p) m.validate();
  return p;
}

}  // namespace

const std::vector<ModelSpec>& presets() {
  static const std::vector<ModelSpec> all = make_presets();
  return all;
}

std::string preset_names() {
  std::string out;
  for (const auto& m : presets()) out += (out.empty() ? "" : ", ") + m.name;
  return out;
}

const ModelSpec& find_preset(std::string_view name) {
  for (const auto& m : presets())
    if (m.name == name) return m;
  throw std::invalid_argument("unknown model '" + std::string(name) + "'; the presets are " +
                              preset_names() +
                              ", or give the path of a JSON model file (see docs/planner.md)");
}

namespace {

// The deepest nesting of [ and { in |text| outside strings. Checked before parsing, so a file of
// a million '[' is a clear error, not a deep recursion.
int json_depth(std::string_view text) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

}  // namespace

ModelSpec parse_model_json(std::string_view text) {
  if (json_depth(text) > kMaxModelJsonDepth)
    throw std::invalid_argument("model JSON nests deeper than " +
                                std::to_string(kMaxModelJsonDepth) +
                                " levels; a model file is one object of numbers, strings and "
                                "booleans");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw std::invalid_argument(std::string("model JSON does not parse: ") + e.what());
  }
  if (!j.is_object())
    throw std::invalid_argument(
        "model JSON must be an object with the fields layers, hidden, heads, ...");
  ModelSpec m;
  m.name = "custom";
  auto get_int = [&](const char* key, int& out, bool required) {
    // Range-checked before the conversion to int: 4294967328 must not become 32.
    if (!j.contains(key)) {
      if (required)
        throw std::invalid_argument(std::string("model JSON: the field '") + key +
                                    "' is missing; it is required (an integer)");
      return;
    }
    const auto& v = j[key];
    if (!v.is_number_integer())
      throw std::invalid_argument(std::string("model JSON: the field '") + key + "' is " +
                                  v.dump() + "; it must be an integer of at most " +
                                  std::to_string(kMaxModelDim) + " (2^24)");
    if (v.is_number_unsigned() ? v.get<std::uint64_t>() > std::uint64_t{kMaxModelDim}
                               : v.get<std::int64_t>() > kMaxModelDim)
      throw std::invalid_argument(std::string("model JSON: the field '") + key + "' is " +
                                  v.dump() + "; it must be at most " +
                                  std::to_string(kMaxModelDim) + " (2^24)");
    if (v.get<std::int64_t>() < -kMaxModelDim)
      throw std::invalid_argument(std::string("model JSON: the field '") + key + "' is " +
                                  v.dump() + "; it must be positive (or 0 where 0 means none)");
    out = static_cast<int>(v.get<std::int64_t>());
  };
  auto get_bool = [&](const char* key, bool& out) {
    if (!j.contains(key)) return;
    if (!j[key].is_boolean())
      throw std::invalid_argument(std::string("model JSON: the field '") + key + "' is " +
                                  j[key].dump() + "; it must be true or false");
    out = j[key].get<bool>();
  };
  static const char* known[] = {"name",
                                "source",
                                "layers",
                                "hidden",
                                "heads",
                                "kv_heads",
                                "head_dim",
                                "ffn",
                                "activation",
                                "vocab",
                                "tied_embeddings",
                                "norm",
                                "bias",
                                "qk_norm",
                                "position_embeddings",
                                "dropout",
                                "experts",
                                "top_k",
                                "expert_ffn"};
  for (auto it = j.begin(); it != j.end(); ++it) {
    bool ok = false;
    for (const char* k : known) ok = ok || it.key() == k;
    if (!ok) {
      std::string names;
      for (const char* k : known) names += (names.empty() ? "" : ", ") + std::string(k);
      throw std::invalid_argument("model JSON: unknown field '" + it.key() + "'; the fields are " +
                                  names);
    }
  }
  if (j.contains("name")) {
    if (!j["name"].is_string())
      throw std::invalid_argument("model JSON: the field 'name' must be a string");
    m.name = j["name"].get<std::string>();
  }
  if (j.contains("source") && j["source"].is_string()) m.source = j["source"].get<std::string>();
  get_int("layers", m.layers, true);
  get_int("hidden", m.hidden, true);
  get_int("heads", m.heads, true);
  m.kv_heads = m.heads;
  get_int("kv_heads", m.kv_heads, false);
  get_int("head_dim", m.head_dim, false);
  get_int("vocab", m.vocab, true);
  get_int("experts", m.experts, false);
  get_int("top_k", m.top_k, false);
  get_int("expert_ffn", m.expert_ffn, false);
  get_int("ffn", m.ffn, m.experts == 0);
  get_int("position_embeddings", m.position_embeddings, false);
  get_bool("tied_embeddings", m.tied_embeddings);
  get_bool("bias", m.bias);
  get_bool("qk_norm", m.qk_norm);
  get_bool("dropout", m.dropout);
  if (j.contains("activation")) {
    const auto& v = j["activation"];
    if (v == "swiglu")
      m.activation = Activation::kSwiGLU;
    else if (v == "gelu")
      m.activation = Activation::kGELU;
    else
      throw std::invalid_argument("model JSON: the field 'activation' is " + v.dump() +
                                  "; it must be \"swiglu\" or \"gelu\"");
  }
  if (j.contains("norm")) {
    const auto& v = j["norm"];
    if (v == "rmsnorm")
      m.norm = Norm::kRMSNorm;
    else if (v == "layernorm")
      m.norm = Norm::kLayerNorm;
    else
      throw std::invalid_argument("model JSON: the field 'norm' is " + v.dump() +
                                  "; it must be \"rmsnorm\" or \"layernorm\"");
  }
  m.validate();
  return m;
}

ModelSpec load_model_file(const std::string& path) {
  const std::string hint = "; give a preset (" + preset_names() + ") or a readable JSON file";
  // O_NONBLOCK: opening a FIFO returns at once instead of waiting for a writer; fstat then
  // refuses anything but a regular file, so neither a FIFO nor /dev/zero can hang the read.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0)
    throw std::invalid_argument("cannot read the model file '" + path +
                                "': " + std::strerror(errno) + hint);
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    throw std::invalid_argument("cannot examine the model file '" + path +
                                "': " + std::strerror(errno) + hint);
  if (!S_ISREG(st.st_mode)) {
    const char* kind = S_ISDIR(st.st_mode)    ? "a directory"
                       : S_ISFIFO(st.st_mode) ? "a FIFO"
                       : S_ISCHR(st.st_mode)  ? "a character device"
                       : S_ISBLK(st.st_mode)  ? "a block device"
                                              : "a special file";
    throw std::invalid_argument("the model file '" + path + "' is " + kind +
                                ", not a regular file" + hint);
  }
  if (st.st_size > kMaxModelFileBytes)
    throw std::invalid_argument("the model file '" + path + "' is " + std::to_string(st.st_size) +
                                " bytes, more than the limit of " +
                                std::to_string(kMaxModelFileBytes) +
                                " (1 MiB); a model file is a few hundred bytes of JSON");
  // One byte more than the limit, to notice a file that grew after fstat.
  std::string text(static_cast<std::size_t>(kMaxModelFileBytes) + 1, '\0');
  std::size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::read(fd, text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      throw std::invalid_argument("cannot read the model file '" + path +
                                  "': " + std::strerror(errno) + hint);
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  if (got > static_cast<std::size_t>(kMaxModelFileBytes))
    throw std::invalid_argument("the model file '" + path + "' is more than the limit of " +
                                std::to_string(kMaxModelFileBytes) + " bytes (1 MiB)");
  text.resize(got);
  try {
    return parse_model_json(text);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(path + ": " + e.what());
  }
}

ModelSpec resolve_model(const std::string& name_or_path) {
  const bool looks_like_file = name_or_path.find('/') != std::string::npos ||
                               (name_or_path.size() > 5 && name_or_path.ends_with(".json"));
  if (looks_like_file) return load_model_file(name_or_path);
  return find_preset(name_or_path);
}

}  // namespace vtrn::plan
