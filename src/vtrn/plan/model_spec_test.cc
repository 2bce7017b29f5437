// Model presets against their published sizes, and JSON model files.
#include "vtrn/plan/model_spec.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace vtrn::plan {
namespace {

// Exact parameter counts published with the Hugging Face checkpoints (model.safetensors index
// "total_size" / 2 bytes, as printed by `sum(p.numel())`).
TEST(Presets, Llama2_7bMatchesItsPublishedCountExactly) {
  // 32 x (4 x 4096^2 + 3 x 4096 x 11008 + 2 x 4096) + 2 x 32000 x 4096 + 4096 = 6,738,415,616
  EXPECT_EQ(find_preset("llama2-7b").total_params(), 6'738'415'616LL);
}
TEST(Presets, Llama2_13bMatchesItsPublishedCountExactly) {
  EXPECT_EQ(find_preset("llama2-13b").total_params(), 13'015'864'320LL);
}
TEST(Presets, Llama2_70bMatchesItsPublishedCountExactly) {
  // 80 x (2 x 8192^2 + 2 x 8192 x 1024 + 3 x 8192 x 28672 + 2 x 8192) + 2 x 32000 x 8192 + 8192
  EXPECT_EQ(find_preset("llama2-70b").total_params(), 68'976'648'192LL);
}
TEST(Presets, Llama3CountsMatchThePublishedOnes) {
  EXPECT_EQ(find_preset("llama3-8b").total_params(), 8'030'261'248LL);
  EXPECT_EQ(find_preset("llama3-70b").total_params(), 70'553'706'496LL);
  EXPECT_EQ(find_preset("llama3.1-405b").total_params(), 405'853'388'800LL);
}
TEST(Presets, Qwen3CountsMatchTheModelCards) {
  // Model cards: "Number of Parameters: 8.2B" and "32.8B".
  EXPECT_NEAR(find_preset("qwen3-8b").total_params() / 1e9, 8.2, 0.05);
  EXPECT_NEAR(find_preset("qwen3-32b").total_params() / 1e9, 32.8, 0.05);
}
TEST(Presets, MixtralTotalAndActiveMatchThePaper) {
  // Jiang et al. 2024: 47B parameters, 13B active per token (HF: 46,702,792,704 total).
  const ModelSpec& m = find_preset("mixtral-8x7b");
  EXPECT_EQ(m.total_params(), 46'702'792'704LL);
  EXPECT_NEAR(m.active_params() / 1e9, 12.9, 0.05);
}
TEST(Presets, Gpt3Is175B) {
  // Brown et al. 2020: 175.0B; 12 L h^2 alone is 173.9B.
  EXPECT_NEAR(find_preset("gpt3-175b").total_params() / 1e9, 175.0, 0.5);
}
TEST(Presets, DenseActiveEqualsTotal) {
  const ModelSpec& m = find_preset("llama3-8b");
  EXPECT_EQ(m.active_params(), m.total_params());
}
TEST(Presets, UnknownNameListsThePresets) {
  try {
    find_preset("llama9-1t");
    FAIL();
  } catch (const std::invalid_argument& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("llama9-1t"), std::string::npos);
    EXPECT_NE(msg.find("llama3-70b"), std::string::npos);
    EXPECT_NE(msg.find("gpt3-175b"), std::string::npos);
  }
}
TEST(ModelJson, ParsesTheSameFieldsAsAPreset) {
  const ModelSpec m =
      parse_model_json(R"({"name": "my-7b", "layers": 32, "hidden": 4096, "heads": 32,
      "kv_heads": 32, "ffn": 11008, "vocab": 32000, "activation": "swiglu", "tied_embeddings": false})");
  EXPECT_EQ(m.name, "my-7b");
  EXPECT_EQ(m.total_params(), 6'738'415'616LL);  // the same as llama2-7b
}
TEST(ModelJson, MissingFieldIsNamed) {
  try {
    parse_model_json(R"({"layers": 32, "hidden": 4096, "heads": 32, "vocab": 32000})");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'ffn'"), std::string::npos) << e.what();
  }
}
TEST(ModelJson, WrongTypeAndUnknownFieldAreNamed) {
  try {
    parse_model_json(R"({"layers": "32", "hidden": 4096, "heads": 32, "vocab": 32000, "ffn": 1})");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'layers'"), std::string::npos) << e.what();
  }
  try {
    parse_model_json(
        R"({"layers": 2, "hidden": 64, "heads": 4, "vocab": 100, "ffn": 128, "hiden": 3})");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'hiden'"), std::string::npos) << e.what();
  }
}
TEST(ModelJson, BadValuesSayWhatTheyMustBe) {
  try {
    parse_model_json(
        R"({"layers": 2, "hidden": 64, "heads": 4, "kv_heads": 3, "vocab": 100, "ffn": 128})");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("kv_heads = 3"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_model_json("{not json"), std::invalid_argument);
  EXPECT_THROW(
      parse_model_json(
          R"({"layers": 2, "hidden": 64, "heads": 4, "vocab": 100, "ffn": 128, "activation": "relu"})"),
      std::invalid_argument);
}
TEST(ModelJson, MixtureOfExpertsNeedsNoDenseFfn) {
  const ModelSpec m =
      parse_model_json(R"({"layers": 32, "hidden": 4096, "heads": 32, "kv_heads": 8, "vocab": 32000,
      "experts": 8, "top_k": 2, "expert_ffn": 14336})");
  EXPECT_EQ(m.total_params(), find_preset("mixtral-8x7b").total_params());
}

std::string json_error(const std::string& text) {
  try {
    parse_model_json(text);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ModelJson, ValuesBeyondTheLimitAreRefusedNotWrapped) {
  // 4294967328 = 2^32 + 32 would become a 32-layer model as an int.
  for (const char* value : {"4294967328", "2147483648", "1000000000000000", "16777217",
                            "18446744073709551615", "-9223372036854775808"}) {
    const std::string e = json_error(std::string(R"({"layers": )") + value +
                                     R"(, "hidden": 64, "heads": 4, "vocab": 100, "ffn": 128})");
    EXPECT_NE(e.find("'layers'"), std::string::npos) << value << ": " << e;
    EXPECT_NE(e.find(value), std::string::npos) << value << ": " << e;
  }
  EXPECT_NE(json_error(R"({"layers": 2, "hidden": 64, "heads": 4, "vocab": 1e15, "ffn": 128})")
                .find("must be an integer of at most 16777216"),
            std::string::npos);
  // Each field at the limit, but 2^24 layers of 3 x 2^23 x 2^23 MLP weights: about 2^62.
  EXPECT_NE(json_error(R"({"layers": 16777216, "hidden": 8388608, "heads": 8, "vocab": 100,
      "ffn": 8388608})")
                .find("more than the 1125899906842624 (2^50)"),
            std::string::npos);
  // heads x head_dim beyond 2^24 would wrap the int accessors.
  EXPECT_NE(json_error(R"({"layers": 2, "hidden": 64, "heads": 65536, "kv_heads": 1,
      "head_dim": 65536, "vocab": 100, "ffn": 128})")
                .find("heads x head_dim = 4294967296"),
            std::string::npos);
}

TEST(ModelJson, DeepNestingIsRefusedBeforeParsing) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_NE(json_error(deep).find("nests deeper than 16 levels"), std::string::npos);
}

TEST(ModelFile, ADirectoryOrDeviceIsRefusedWithoutReading) {
  for (const char* path : {"/dev/zero", "/"}) {
    try {
      load_model_file(path);
      ADD_FAILURE() << path;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("not a regular file"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace vtrn::plan
