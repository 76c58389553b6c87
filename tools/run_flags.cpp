#include "tools/run_flags.h"

#include "core/io.h"
#include "models/linear.h"
#include "train/tasks/translation_task.h"
#include "train/trainer.h"

namespace nlpzoo::cli {

void add_search_flags(po::options_description& desc, bool with_n_best) {
  SearchOptions d;
  const std::string ratio_help = "longest output = ratio * source pieces + " + std::to_string(d.max_length_offset) +
                                 ", capped by --max-length";
  desc.add_options()
      ("beam-size", po::value<int64_t>()->default_value(d.beam_size), "beam width; 1 = greedy search")
      ("length-penalty", po::value<double>()->default_value(d.length_penalty, "the run's length_penalty"),
       "alpha of the length normalisation score/lp(len); 0 = raw log-probability. Default: the run's config key "
       "length_penalty, a per-model choice (0.7 unless its config says; the Transformer's says 1.0)")
      ("length-penalty-form", po::value<std::string>()->default_value("course"),
       "how a hypothesis' summed log-probability is divided by lp(length), length = its pieces, EOS counted "
       "once finished. course: lp = length^alpha (plain length normalisation); gnmt: lp = ((5 + length) / 6)^alpha "
       "(GNMT, Wu et al. 2016)")
      ("max-length-ratio", po::value<double>()->default_value(d.max_length_ratio, "1.5"),
       ratio_help.c_str())
      ("max-length", po::value<int64_t>()->default_value(d.max_length), "longest output in pieces")
      ("min-length", po::value<int64_t>()->default_value(d.min_length),
       "shortest finished output in pieces: EOS is not allowed before (1, as fairseq, rules out empty outputs; "
       "0 allows them)")
      ("no-repeat-ngram-size", po::value<int64_t>()->default_value(d.no_repeat_ngram_size),
       "forbid any n-gram of this size from appearing twice in one output, as fairseq (0 = off)")
      ("repetition-penalty", po::value<double>()->default_value(d.repetition_penalty, "1"),
       "multiply the log-probability of every piece the output already holds by this before choosing, as "
       "Hugging Face's repetition_penalty: > 1 discourages repeats, 1 = off. Scores (and --token-scores) "
       "then sum the penalised values")
      ("early-stopping", po::value<std::string>()->default_value("never"),
       "when beam search ends a sentence before the longest output. never: only when no live hypothesis can "
       "still beat the best finished one after length normalisation (exact); beam: as soon as --beam-size "
       "hypotheses finished (fairseq's rule, Hugging Face's early_stopping=True): fewer steps, a result that "
       "can score lower")
      ("batch-size", po::value<int64_t>()->default_value(32), "sentences decoded together");
  if (with_n_best)
    desc.add_options()("n-best", po::value<int64_t>()->default_value(d.n_best),
                       "hypotheses printed per sentence (at most --beam-size), as 'i ||| text ||| score'");
  if (with_n_best)
    desc.add_options()("token-scores", po::bool_switch(),
                       "print every hypothesis (even with --n-best 1) as 'i ||| text ||| score ||| log-probs', the "
                       "last field the model's log-probability of each output piece, EOS's last (fairseq's "
                       "positional scores; a repeated piece's penalised with --repetition-penalty)");
}

SearchOptions search_options(const po::variables_map& vm) {
  SearchOptions o;
  o.beam_size = vm["beam-size"].as<int64_t>();
  o.length_penalty = vm["length-penalty"].as<double>();
  o.length_penalty_form = parse_length_penalty_form(vm["length-penalty-form"].as<std::string>());
  o.max_length_ratio = vm["max-length-ratio"].as<double>();
  o.max_length = vm["max-length"].as<int64_t>();
  o.min_length = vm["min-length"].as<int64_t>();
  o.no_repeat_ngram_size = vm["no-repeat-ngram-size"].as<int64_t>();
  o.repetition_penalty = vm["repetition-penalty"].as<double>();
  o.early_stopping = parse_early_stopping(vm["early-stopping"].as<std::string>());
  if (vm.count("n-best")) o.n_best = vm["n-best"].as<int64_t>();
  validate_search_options(o);
  if (vm["batch-size"].as<int64_t>() < 1) throw UserError("--batch-size: must be at least 1");
  return o;
}

void apply_run_search_defaults(SearchOptions& o, const po::variables_map& vm, const LoadedRun& run) {
  if (!vm["length-penalty"].defaulted() || run.header.task != "translation") return;
  o.length_penalty = bind_options<TranslationOptions>(run.config).length_penalty;
  validate_search_options(o);
}

void add_run_flags(po::options_description& desc) {
  desc.add_options()
      ("run-dir", po::value<std::string>()->required(), "run folder written by nlpzoo train (required)")
      ("checkpoint", po::value<std::string>()->default_value("best"), "best (checkpoint_best.pt: the best validation score by the run's best_metric), last, averaged "
       "(checkpoint_averaged.pt, written by nlpzoo checkpoint average), a step N (checkpoint_N.pt, kept with keep_last) "
       "or a checkpoint file FILE.pt")
      ("device", po::value<std::string>()->default_value("auto"), "auto | cpu | cuda | cuda:N")
      ("precision", po::value<std::string>(), "fp32 | bf16 | auto (default: the run's precision key). bf16 converts the model's weights to bfloat16 "
       "once and runs the rest under autocast (needs AVX512_BF16 or AMX on a CPU)")
      ("quantize", po::value<std::string>()->default_value("none"),
       "none | int8: dynamic int8 linear layers on the CPU, as PyTorch's quantize_dynamic (weights per output "
       "channel, packed once; embeddings, normalisation and attention scores stay float32). Faster decoding, "
       "slightly different outputs (docs/performance.md)");
}

LoadedRun load_run_from_flags(const po::variables_map& vm, const std::string& data_dir, const std::set<Split>& splits) {
  const auto path = checkpoint_in(vm["run-dir"].as<std::string>(), vm["checkpoint"].as<std::string>());
  return load_run(path, parse_device(vm["device"].as<std::string>()), data_dir, splits);
}

AutocastGuard inference_precision(const po::variables_map& vm, LoadedRun& run) {
  const std::string name =
      vm.count("precision") ? vm["precision"].as<std::string>() : bind_options<PrecisionOptions>(run.config).precision;
  const auto device = parse_device(vm["device"].as<std::string>());
  const Precision precision = parse_precision(name, device);
  // Word vectors keep float32 tables: a lookup gains nothing from bf16, and LibTorch 1.13's
  // embedding_bag (CBOW's and the subword model's bags) refuses bf16 weights.
  if (run.task->word_vector_source() == nullptr) cast_for_inference(*run.task->model(), precision);
  const auto quantize = vm["quantize"].as<std::string>();
  if (quantize != "none") {
    if (quantize != "int8") throw UserError("--quantize " + quantize + ": expected none or int8");
    if (precision != Precision::kFp32) throw UserError("--quantize int8: quantizes float32 weights; drop --precision bf16");
    if (!device.is_cpu()) throw UserError("--quantize int8: runs on the CPU; add --device cpu");
    if (run.task->word_vector_source() != nullptr)
      throw UserError("--quantize int8: word vectors have no linear layers to quantize");
    use_int8_weights(*run.task->model());
  }
  return AutocastGuard(precision, device);
}

namespace {

// The capability, or the error naming the run's task; `what` completes "which ...".
template <class Capability>
Capability& require(Capability* capability, const LoadedRun& run, const std::string& what) {
  if (capability == nullptr) throw UserError("this run trains task '" + run.header.task + "', which " + what);
  return *capability;
}

}  // namespace

TranslationModel& translation_model(LoadedRun& run) {
  return require(run.task->translation_model(), run, "does not translate");
}

TextGenerator& text_generator(LoadedRun& run) {
  return require(run.task->text_generator(), run, "does not generate text (a language model does)");
}

SentenceClassifier& sentence_classifier(LoadedRun& run) {
  return require(run.task->sentence_classifier(), run, "does not classify");
}

MaskFiller& mask_filler(LoadedRun& run) {
  return require(run.task->mask_filler(), run, "does not fill in [MASK] (a masked_lm or electra run does)");
}

}  // namespace nlpzoo::cli
