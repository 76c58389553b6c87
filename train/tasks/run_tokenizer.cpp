#include "train/tasks/run_tokenizer.h"

#include <iostream>

#include "core/io.h"

namespace nlpzoo {

void TokenizerOptions::bind(OptionBinder& b) {
  b.field("spm_model_type", spm_model_type,
          "SentencePiece model type (char: one piece per character, the vocabulary size is then ignored; word: whole "
          "words, which suits pretrained vectors)",
          {"unigram", "bpe", "word", "char"});
  b.field("character_coverage", character_coverage, "share of characters SentencePiece covers (rest -> <unk>)");
  b.field("spm_normalization", spm_normalization,
          "SentencePiece's normalization rule (--normalization_rule_name): nmt_nfkc (NFKC and NMT clean-ups), nfkc, "
          "their case-folding _cf forms, or identity (text as is; the model then stores no ~240 KB NFKC table, which "
          "keeps tiny checkpoints tiny)",
          {"nmt_nfkc", "nfkc", "nmt_nfkc_cf", "nfkc_cf", "identity"});
  b.field("spm_add_dummy_prefix", spm_add_dummy_prefix,
          "SentencePiece's --add_dummy_prefix: a word boundary piece before each line's first word, so a word reads "
          "the same at the start of a line as inside it (false with char: one piece per character of the text)");
  b.field("spm_remove_extra_whitespaces", spm_remove_extra_whitespaces,
          "SentencePiece's --remove_extra_whitespaces: collapse runs of spaces and drop leading and trailing ones "
          "(false keeps the text's spaces as they are)");
}

ConfigSchema tokenizer_schema() { return schema_of<TokenizerOptions>(); }

Tokenizer run_tokenizer(const std::string& stem, const std::function<std::vector<std::string>()>& training_inputs,
                        const std::string& checkpoint_bytes, int64_t vocab_size, const Config& config,
                        const TaskContext& context, const std::vector<std::string>& user_defined_symbols) {
  if (!checkpoint_bytes.empty()) return Tokenizer::from_serialized(checkpoint_bytes);
  if (context.run_dir.empty()) throw UserError("no tokenizer '" + stem + "': the checkpoint holds none");
  const std::string prefix = context.run_dir + "/" + stem;
  if (context.resume) return Tokenizer::load(prefix + ".model");
  const auto tokenizer = bind_options<TokenizerOptions>(config);
  TokenizerTrainOptions options;
  options.inputs = training_inputs();
  options.model_prefix = prefix;
  options.vocab_size = vocab_size;
  options.model_type = tokenizer.spm_model_type;
  options.character_coverage = tokenizer.character_coverage;
  options.normalization_rule_name = tokenizer.spm_normalization;
  options.add_dummy_prefix = tokenizer.spm_add_dummy_prefix;
  options.remove_extra_whitespaces = tokenizer.spm_remove_extra_whitespaces;
  options.hard_vocab_limit = false;
  options.user_defined_symbols = user_defined_symbols;
  std::cout << "training SentencePiece (" << options.model_type << ", " << vocab_size << " pieces) on";
  for (const auto& input : options.inputs) std::cout << " " << input;
  std::cout << std::endl;
  Tokenizer::train(options);
  return Tokenizer::load(prefix + ".model");
}

std::vector<std::string> training_files(const TaskContext& context, const std::vector<std::string>& langs,
                                        const std::string& what) {
  std::vector<std::string> files;
  for (const auto& lang : langs) {
    files.push_back(context.data_dir + "/train." + lang);
    require_file(files.back(), what);
  }
  return files;
}

}  // namespace nlpzoo
