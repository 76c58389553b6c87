// nlpzoo generate: text sampled from a trained language model, continuing a prompt.
#include <cctype>
#include <chrono>
#include <iostream>
#include <iterator>

#include "core/io.h"
#include "infer/sampling.h"
#include "tools/command.h"
#include "tools/options.h"
#include "tools/run_flags.h"

namespace nlpzoo::cli {
namespace {

int run_generate(const std::vector<std::string>& args) {
  const SamplingOptions d{};
  po::options_description desc("Options");
  add_run_flags(desc);
  desc.add_options()
      ("prompt", po::value<std::string>()->default_value(""),
       "text to continue, '-' = read it from standard input; empty = begin a new text (the model starts after an end "
       "of line, as in training). Line breaks in it are read as EOS, as training reads them")
      ("max-new-tokens", po::value<int64_t>()->default_value(100),
       "most SentencePiece pieces drawn per sample, the prompt not counted (Hugging Face's name); a sample ends "
       "earlier when the model draws end-of-text (EOS), except from a model of a whole text file (task gpt with "
       "text_file), whose EOS is a line break")
      ("max-tokens", po::value<int64_t>(),
       "deprecated alias of --max-new-tokens (the config key max_tokens is a batch budget, another thing)")
      ("temperature", po::value<double>()->default_value(d.temperature, "1.0"),
       "T: draw from softmax(logits / T). T < 1 sharpens the distribution (safer, more repetitive), T > 1 "
       "flattens it (more varied, less coherent), 0 = always the most probable piece (no randomness)")
      ("top-k", po::value<int64_t>()->default_value(d.top_k),
       "draw only among the k most probable pieces (Fan et al. 2018); 0 = no limit")
      ("top-p", po::value<double>()->default_value(d.top_p, "1.0"),
       "nucleus sampling (Holtzman et al. 2020): draw only among the fewest most probable pieces whose "
       "probabilities add up to at least p, in (0, 1]; 1 = no limit. Applied after --top-k")
      ("repetition-penalty", po::value<double>()->default_value(d.repetition_penalty, "1.0"),
       "θ > 0: a piece the prompt or the sample already holds has its logit divided by θ (multiplied if "
       "negative) before the rest (CTRL, Keskar et al. 2019; Hugging Face's repetition_penalty); 1 = off")
      ("no-repeat-ngram-size", po::value<int64_t>()->default_value(d.no_repeat_ngram_size),
       "n > 0: never draw a piece that repeats an n-gram of the prompt and sample so far; 0 = off")
      ("seed", po::value<int64_t>(),
       "random seed >= 0: the same run, flags and seed print the same text. Default: taken from the clock and "
       "printed to stderr")
      ("num-samples", po::value<int64_t>()->default_value(1),
       "samples to print, one per line; sample i (from 0) uses seed + i, so each sample is the same whatever this number");
  auto vm = parse_args(args, desc, "generate --run-dir DIR [--prompt TEXT] [OPTIONS] > samples.txt");
  if (!vm) return 0;

  // Every flag is checked before the (slow) checkpoint load.
  SamplingOptions options;
  options.temperature = (*vm)["temperature"].as<double>();
  options.top_k = (*vm)["top-k"].as<int64_t>();
  options.top_p = (*vm)["top-p"].as<double>();
  options.repetition_penalty = (*vm)["repetition-penalty"].as<double>();
  options.no_repeat_ngram_size = (*vm)["no-repeat-ngram-size"].as<int64_t>();
  validate(options);
  std::string max_flag = "--max-new-tokens";
  if (vm->count("max-tokens")) {
    if (!(*vm)["max-new-tokens"].defaulted())
      throw UserError("--max-tokens and --max-new-tokens: give only --max-new-tokens (--max-tokens is its old name)");
    max_flag = "--max-tokens";
    std::cerr << "nlpzoo generate: warning: --max-tokens is deprecated and will be removed; use --max-new-tokens"
              << std::endl;
  }
  const int64_t max_tokens = (*vm)[max_flag.substr(2)].as<int64_t>();
  if (max_tokens < 0) throw UserError(max_flag + ": must be >= 0, got " + std::to_string(max_tokens));
  const int64_t num_samples = (*vm)["num-samples"].as<int64_t>();
  if (num_samples < 1) throw UserError("--num-samples: must be at least 1, got " + std::to_string(num_samples));
  int64_t seed = 0;
  if (vm->count("seed")) {
    seed = (*vm)["seed"].as<int64_t>();
    if (seed < 0) throw UserError("--seed: must be >= 0, got " + std::to_string(seed));
  } else {
    // Short enough to retype; printed so that a sample worth keeping can be reproduced.
    const auto now = std::chrono::system_clock::now().time_since_epoch();
    seed = std::chrono::duration_cast<std::chrono::microseconds>(now).count() % 1000000000;
    std::cerr << "seed " << seed << "; pass --seed " << seed << " to repeat" << std::endl;
  }

  auto run = load_run_from_flags(*vm);
  const auto autocast = inference_precision(*vm, run);
  auto& task = text_generator(run);
  const Tokenizer& tokenizer = task.tokenizer();
  std::string prompt = (*vm)["prompt"].as<std::string>();
  if (prompt == "-") prompt = std::string(std::istreambuf_iterator<char>(std::cin), {});
  while (!prompt.empty() && std::isspace(static_cast<unsigned char>(prompt.back()))) prompt.pop_back();
  const auto prompt_ids = encode_lines(tokenizer, prompt);
  const std::string prompt_text = decode_lines(tokenizer, prompt_ids);
  for (int64_t i = 0; i < num_samples; ++i) {
    auto ids = prompt_ids;
    const auto drawn = sample_sequence(task.causal_decoder(), prompt_ids, max_tokens, options,
                                       static_cast<uint64_t>(seed + i), task.eos_ends_text());
    ids.insert(ids.end(), drawn.begin(), drawn.end());
    // Decoding prompt and continuation together gets the space between them right; the
    // prompt itself is printed as the user wrote it, not as SentencePiece normalised it.
    const std::string text = decode_lines(tokenizer, ids);
    if (text.compare(0, prompt_text.size(), prompt_text) == 0)
      std::cout << prompt << text.substr(prompt_text.size()) << "\n";
    else
      std::cout << text << "\n";
  }
  std::cout << std::flush;
  return 0;
}

}  // namespace

NLPZOO_REGISTER_COMMAND(generate, "generate",
                        "sample text from a trained language model (temperature, top-k, top-p), continuing --prompt",
                        run_generate);

}  // namespace nlpzoo::cli
