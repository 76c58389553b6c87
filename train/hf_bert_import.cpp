#include "train/hf_bert_import.h"

#include <filesystem>

#include "core/io.h"
#include "core/safetensors.h"

namespace nlpzoo {

namespace {

namespace fs = std::filesystem;

int64_t positive_int(const nlohmann::json& config, const std::string& key, int64_t fallback, const std::string& where) {
  if (!config.contains(key)) return fallback;
  const auto& v = config.at(key);
  if (!v.is_number_integer() || v.get<int64_t>() < 1)
    throw UserError(where + ": " + key + " must be a positive integer, got " + v.dump());
  return v.get<int64_t>();
}

double probability(const nlohmann::json& config, const std::string& key, double fallback, const std::string& where) {
  if (!config.contains(key)) return fallback;
  const auto& v = config.at(key);
  if (!v.is_number() || v.get<double>() < 0 || v.get<double>() >= 1)
    throw UserError(where + ": " + key + " must be a number in [0, 1), got " + v.dump());
  return v.get<double>();
}

std::string text(const nlohmann::json& config, const std::string& key, const std::string& fallback,
                 const std::string& where) {
  if (!config.contains(key) || config.at(key).is_null()) return fallback;
  if (!config.at(key).is_string()) throw UserError(where + ": " + key + " must be a string, got " + config.at(key).dump());
  return config.at(key).get<std::string>();
}

nlohmann::json read_json(const fs::path& path) {
  try {
    return nlohmann::json::parse(read_file(path.string()));
  } catch (const nlohmann::json::exception& e) {
    throw UserError(path.string() + ": not valid JSON (" + e.what() + ")");
  }
}

std::string weights_file(const fs::path& dir) {
  const fs::path safetensors = dir / "model.safetensors";
  if (fs::is_regular_file(safetensors)) return safetensors.string();
  const fs::path pickle = dir / "pytorch_model.bin";
  if (fs::exists(pickle))
    throw UserError(pickle.string() +
                    " is a Python pickle, which can run code when it is loaded, so nlpzoo does not read it. "
                    "Convert it to model.safetensors first, e.g. with Python's torch and safetensors: "
                    "python3 -c \"import torch; from safetensors.torch import save_file; "
                    "sd = torch.load('pytorch_model.bin', map_location='cpu', weights_only=True); "
                    "save_file({k: v.clone() for k, v in sd.items()}, 'model.safetensors')\"");
  if (fs::exists(dir / "model.safetensors.index.json"))
    throw UserError(dir.string() + ": sharded safetensors (model.safetensors.index.json) are not read; "
                    "BERT checkpoints fit one model.safetensors");
  throw UserError(safetensors.string() + ": no such file (the checkpoint's weights)");
}

WordPieceOptions tokenizer_options(const fs::path& dir) {
  WordPieceOptions o;
  const fs::path path = dir / "tokenizer_config.json";
  if (!fs::exists(path)) return o;  // BertTokenizer's defaults: lower-case, strip accents
  const auto config = read_json(path);
  auto flag = [&](const char* key, bool fallback) {
    if (!config.contains(key) || config.at(key).is_null()) return fallback;
    if (!config.at(key).is_boolean()) throw UserError(path.string() + ": " + key + " must be true or false");
    return config.at(key).get<bool>();
  };
  o.basic = BertBasicTokenizerOptions::for_lower_case(flag("do_lower_case", true));
  o.basic.strip_accents = flag("strip_accents", o.basic.lower_case);
  o.basic.split_cjk = flag("tokenize_chinese_chars", true);
  return o;
}

void check_vocabulary(const WordPieceTokenizer& tokenizer, const BertOptions& options, const std::string& where) {
  if (tokenizer.vocab_size() > options.vocab_size())
    throw UserError(where + " has " + std::to_string(tokenizer.vocab_size()) +
                    " tokens but the model's vocab_size is " + std::to_string(options.vocab_size()));
  for (const char* token : {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"})
    if (!tokenizer.contains(token)) throw UserError(where + " has no " + token + " token");
  if (tokenizer.token_to_id("[PAD]") != options.pad_id())
    throw UserError(where + ": [PAD] is id " + std::to_string(tokenizer.token_to_id("[PAD]")) +
                    " but config.json's pad_token_id is " + std::to_string(options.pad_id()));
}

}  // namespace

BertOptions bert_options_from_hf_config(const nlohmann::json& config, const std::string& where) {
  if (!config.is_object()) throw UserError(where + ": not a JSON object");
  const std::string model_type = text(config, "model_type", "bert", where);
  if (model_type != "bert")
    throw UserError(where + ": model_type \"" + model_type + "\" is not BERT (only \"bert\" checkpoints are read)");
  const std::string act = text(config, "hidden_act", "gelu", where);
  if (act != "gelu")
    throw UserError(where + ": hidden_act \"" + act + "\" is not supported (only \"gelu\", the erf form BERT uses)");
  const std::string positions = text(config, "position_embedding_type", "absolute", where);
  if (positions != "absolute")
    throw UserError(where + ": position_embedding_type \"" + positions + "\" is not supported (only \"absolute\")");
  for (const char* key : {"is_decoder", "add_cross_attention"})
    if (config.contains(key) && config.at(key).is_boolean() && config.at(key).get<bool>())
      throw UserError(where + ": " + key + " is true: only BERT encoders are read");
  // BertConfig's defaults (bert-base-uncased) for absent keys.
  auto o = BertOptions()
               .vocab_size(positive_int(config, "vocab_size", 30522, where))
               .d_model(positive_int(config, "hidden_size", 768, where))
               .num_layers(positive_int(config, "num_hidden_layers", 12, where))
               .num_heads(positive_int(config, "num_attention_heads", 12, where))
               .ffn_dim(positive_int(config, "intermediate_size", 3072, where))
               .max_positions(positive_int(config, "max_position_embeddings", 512, where))
               .type_vocab_size(positive_int(config, "type_vocab_size", 2, where))
               .dropout(probability(config, "hidden_dropout_prob", 0.1, where))
               .attention_dropout(probability(config, "attention_probs_dropout_prob", 0.1, where))
               .pre_norm(false)
               .activation(Activation::kGelu)
               .nsp(false);
  if (o.d_model() % o.num_heads() != 0)
    throw UserError(where + ": hidden_size " + std::to_string(o.d_model()) + " is not a multiple of num_attention_heads " +
                    std::to_string(o.num_heads()));
  double eps = 1e-12;
  if (config.contains("layer_norm_eps")) {
    const auto& v = config.at("layer_norm_eps");
    if (!v.is_number() || v.get<double>() <= 0)
      throw UserError(where + ": layer_norm_eps must be a positive number, got " + v.dump());
    eps = v.get<double>();
  }
  o.layer_norm_eps(eps);
  int64_t pad = 0;
  if (config.contains("pad_token_id") && !config.at("pad_token_id").is_null()) {
    const auto& v = config.at("pad_token_id");
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= o.vocab_size())
      throw UserError(where + ": pad_token_id must be an id in [0, vocab_size), got " + v.dump());
    pad = v.get<int64_t>();
  }
  return o.pad_id(pad);
}

HfBertImport import_hf_bert(const std::string& dir_name) {
  const fs::path dir(dir_name);
  if (!fs::is_directory(dir)) throw UserError(dir_name + ": not a folder (a Hugging Face BERT checkpoint)");
  const fs::path config_path = dir / "config.json";
  require_file(config_path.string(), "the checkpoint's BertConfig");
  const BertOptions options = bert_options_from_hf_config(read_json(config_path), config_path.string());
  const std::string weights = weights_file(dir);
  const fs::path vocab_path = dir / "vocab.txt";
  require_file(vocab_path.string(), "the checkpoint's WordPiece vocabulary");
  auto tokenizer = WordPieceTokenizer::load(vocab_path.string(), tokenizer_options(dir));
  check_vocabulary(tokenizer, options, vocab_path.string());

  const auto tensors = read_safetensors(weights).tensors;
  // A checkpoint pre-trained with next-sentence prediction keeps its NSP head, and so a trained
  // pooler, which fine-tuning then starts from.
  BertOptions with_head = options;
  const std::string nsp_weight = "seq_relationship.weight";
  for (const auto& [name, tensor] : tensors)
    if (name.size() >= nsp_weight.size() && name.compare(name.size() - nsp_weight.size(), nsp_weight.size(), nsp_weight) == 0)
      with_head.nsp(true);
  BertForPreTraining model(with_head);
  auto report = load_hf_bert_weights(*model, tensors, weights);
  return HfBertImport{with_head, model, std::move(tokenizer), std::move(report)};
}

}  // namespace nlpzoo
