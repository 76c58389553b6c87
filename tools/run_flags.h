#pragma once
// The decoding flags shared by `translate` and `evaluate`, and the run-folder flags of every
// command that loads a trained model.
#include <torch/torch.h>

#include "infer/search.h"
#include "tools/options.h"
#include "core/precision.h"
#include "train/tasks/mask_filler.h"
#include "train/tasks/registry.h"
#include "train/tasks/sentence_classifier.h"
#include "train/tasks/text_generator.h"
#include "train/tasks/translation_model.h"

namespace nlpzoo::cli {

/// --beam-size, --length-penalty, --length-penalty-form, --n-best (if with_n_best),
/// --max-length-ratio, --max-length, --batch-size.
void add_search_flags(po::options_description& desc, bool with_n_best);
/// SearchOptions from those flags. Throws UserError naming a flag with a bad value.
SearchOptions search_options(const po::variables_map& vm);
/// The run's own decoding default under those flags: its config's length_penalty (a translation
/// run's key, chosen per model) unless --length-penalty was given. Throws UserError as
/// validate_search_options.
void apply_run_search_defaults(SearchOptions& o, const po::variables_map& vm, const LoadedRun& run);

/// --run-dir (required), --checkpoint, --device, --precision, --quantize.
void add_run_flags(po::options_description& desc);
/// Loads the chosen checkpoint of --run-dir on --device (reading `splits` of `data_dir`).
LoadedRun load_run_from_flags(const po::variables_map& vm, const std::string& data_dir = "",
                              const std::set<Split>& splits = {});
/// Readies `run` for inference in --precision, else the run's `precision` (cast_for_inference:
/// bf16 converts the model's weights, except word vectors'), and returns the autocast region to
/// run it in; with --quantize int8, its linear layers' weights packed in int8 (use_int8_weights).
/// Throws UserError as parse_precision, and for int8 beside bf16, off the CPU or for word vectors.
AutocastGuard inference_precision(const po::variables_map& vm, LoadedRun& run);

/// The run's task as the capability a command needs (Task::translation_model, ...). Throw
/// UserError("this run trains task '<task>', which does not translate" / ...) when it has not got it.
TranslationModel& translation_model(LoadedRun& run);
TextGenerator& text_generator(LoadedRun& run);
SentenceClassifier& sentence_classifier(LoadedRun& run);
MaskFiller& mask_filler(LoadedRun& run);

}  // namespace nlpzoo::cli
