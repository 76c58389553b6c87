#pragma once
// What the export tests check of every scripted twin (infer/script_twin.h), written once: it
// agrees with the eager model step by step, holds every parameter under its mapped name, and
// its saved file carries its extra files.
#include <torch/script.h>
#include <torch/torch.h>

#include <map>
#include <string>

#include "models/incremental_decoder.h"

namespace nlpzoo::test {

/// Runs init and `steps` decoder steps of `eager` and `twin` with the same tokens (BOS, then
/// random ids in [1, target_vocab_size)) and expects every state tensor, log-prob and attention
/// row to agree within 1e-5, and the twin's log-probs to be distributions. Before the third
/// step both states are reordered and grown by the same random rows, as beam search does.
void expect_decoders_agree(IncrementalDecoder& eager, IncrementalDecoder& twin, const torch::Tensor& src, int steps);

/// The twin's parameters are exactly `eager`'s: each under its scripted_name, equal, not
/// requiring grad, and no others.
void expect_twin_holds_parameters(const torch::nn::Module& eager, const torch::jit::Module& twin);

/// Loads the exported file `path` with torch::jit::load, deletes it, and expects its extra
/// files to be `extras` plus README.txt = `readme`. Returns the loaded module.
torch::jit::Module load_export_checking_extras(const std::string& path,
                                               const std::map<std::string, std::string>& extras,
                                               const std::string& readme);

/// The scripted names of `model`'s parameters, sorted, space-separated: what Python prints as
/// ' '.join(sorted(n for n, _ in m.named_parameters())) for its twin.
std::string sorted_scripted_names(const torch::nn::Module& model);

/// The Python lines of an export's README.txt (the indented lines after "Python:", as
/// twin_readme_python_footer writes them), unindented, loading `path` instead of 'model.pt': a
/// script that runs what the README tells a user to run on that file.
std::string readme_python(const std::string& readme, const std::string& path);

/// "B T t_00 t_01 ..." of a [B, T] int64 tensor: how the Python checks print greedy output.
std::string tokens_text(const torch::Tensor& tokens);

}  // namespace nlpzoo::test
