// Model descriptions for the planner: dense decoder transformers and mixture-of-experts, the
// presets with each model's published configuration, and JSON model files with the same fields.
//
// Counts are in elements (parameters), never bytes; the planner multiplies by the precision
// policy's bytes per element. Field names follow the Hugging Face config.json names where one
// exists (num_hidden_layers -> layers, hidden_size -> hidden, ...), written in vtrn's short form.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace vtrn::plan {

enum class Activation { kSwiGLU, kGELU };
enum class Norm { kRMSNorm, kLayerNorm };

std::string_view activation_name(Activation a);  ///< "swiglu", "gelu"
std::string_view norm_name(Norm n);              ///< "rmsnorm", "layernorm"

/// Largest value of any integer field of a model (layers, hidden, heads, ffn, vocab, ...), and of
/// heads x head_dim: 2^24, far above any published model, so every product the planner forms of
/// them fits an int64 instead of wrapping.
inline constexpr std::int64_t kMaxModelDim = std::int64_t{1} << 24;
/// Largest parameter count planned: 2^50 (about 1.1e15), a thousand times the largest published
/// models; it keeps the byte counts derived from it far inside an int64.
inline constexpr std::int64_t kMaxModelParams = std::int64_t{1} << 50;
/// Largest JSON model file read, and the deepest nesting accepted in one (a model file is flat).
inline constexpr std::int64_t kMaxModelFileBytes = std::int64_t{1} << 20;
inline constexpr int kMaxModelJsonDepth = 16;

struct ModelSpec {
  std::string name;
  std::string source;  ///< where the figures come from
  int layers = 0;      ///< transformer blocks
  int hidden = 0;      ///< model width h
  int heads = 0;       ///< query heads a
  int kv_heads = 0;    ///< key/value heads (GQA); == heads for multi-head attention
  int head_dim = 0;    ///< 0: hidden / heads
  int ffn = 0;         ///< MLP inner size of a dense block
  Activation activation = Activation::kSwiGLU;
  int vocab = 0;
  bool tied_embeddings = false;
  Norm norm = Norm::kRMSNorm;
  bool bias = false;            ///< linear layers carry biases (GPT-3)
  bool qk_norm = false;         ///< per-head RMSNorm of q and k (Qwen3)
  int position_embeddings = 0;  ///< learned absolute positions (GPT-3: 2048); 0 for RoPE
  bool dropout = false;         ///< dropout layers (their 1-byte masks are activations)
  // Mixture-of-experts: experts == 0 means dense.
  int experts = 0;
  int top_k = 0;
  int expert_ffn = 0;

  bool is_moe() const { return experts > 0; }
  int attention_dim() const {
    return heads * (head_dim > 0 ? head_dim : hidden / heads);
  }  ///< a * d_head
  int kv_dim() const { return kv_heads * (head_dim > 0 ? head_dim : hidden / heads); }
  int head_size() const { return head_dim > 0 ? head_dim : hidden / heads; }

  /// Parameters of one block's attention (q, k, v, o and their biases, q/k norms).
  std::int64_t attention_params() const;
  /// Parameters of one MLP of width |width| (3 matrices for SwiGLU, 2 plus biases for GELU).
  std::int64_t mlp_params(int width) const;
  /// One block's MLP: the dense MLP, or every expert plus the router.
  std::int64_t block_mlp_params() const;
  /// One block's norms (2 per block; LayerNorm has a bias too).
  std::int64_t block_norm_params() const;
  /// One transformer block.
  std::int64_t block_params() const {
    return attention_params() + block_mlp_params() + block_norm_params();
  }
  /// Token (and learned position) embedding.
  std::int64_t embedding_params() const;
  /// Output projection; 0 when tied to the embedding.
  std::int64_t head_params() const;
  std::int64_t final_norm_params() const;
  /// Every parameter.
  std::int64_t total_params() const;
  /// Parameters one token passes through (MoE: top_k experts of each block).
  std::int64_t active_params() const;

  /// Throws std::invalid_argument naming the first bad field, its value and what it must be.
  void validate() const;
};

/// The presets, in listing order.
const std::vector<ModelSpec>& presets();
/// "llama2-7b, llama2-13b, ..." for messages.
std::string preset_names();
/// The preset named |name|. Throws std::invalid_argument listing the known presets.
const ModelSpec& find_preset(std::string_view name);

/// Parses a JSON model description (the fields of ModelSpec, by the names in docs/planner.md).
/// Throws std::invalid_argument naming the field that is missing or wrong.
ModelSpec parse_model_json(std::string_view text);
/// Reads |path| and parses it. Throws std::invalid_argument when the file cannot be read, is not
/// a regular file (a FIFO or /dev/zero is refused without blocking) or exceeds kMaxModelFileBytes.
ModelSpec load_model_file(const std::string& path);
/// A preset name, or a path to a .json file.
ModelSpec resolve_model(const std::string& name_or_path);

}  // namespace vtrn::plan
