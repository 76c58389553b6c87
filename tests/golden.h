#pragma once
// The golden regression files (tests/data/golden/, written by scripts/make_golden.sh): the
// families they hold, the outputs a loaded model gives on fixed inputs, and the comparison of
// those outputs with the expected ones. Used by tests/test_golden.cpp (golden checkpoints) and
// tests/test_resume.cpp (exact resume of every family).
#include <nlohmann/json.hpp>

#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include "train/tasks/registry.h"

namespace nlpzoo::test {

/// One line of tests/data/golden/families.tsv: a tiny model of one config.
struct GoldenFamily {
  std::string name;    // e.g. "seq2seq-gru-additive"; its files are in tests/data/golden/<name>/
  std::string config;  // file name in configs/
  std::string data;    // "bible" | "sst2": which slice of real data the golden checkpoint trained on
  int64_t steps = 0;   // updates of the golden checkpoint's training
  std::string flags;   // command-line keys that make the model tiny (shell words, no quotes)
};

/// How gtest prints a family in test names and failures: its name.
void PrintTo(const GoldenFamily& family, std::ostream* os);

/// tests/data/golden (in the source tree).
std::filesystem::path golden_dir();

/// The families of golden_dir()/families.tsv, in file order ('#' lines and blank lines skipped).
/// Throws UserError naming the file and line for a line without 5 tab-separated fields, a
/// steps field that is not a positive integer, a data field other than bible|sst2, or a
/// family named twice. Returns {} when the file is missing (the suite's own test says so).
std::vector<GoldenFamily> read_golden_families();

/// read_golden_families(), or {} when it throws: the parameterised tests' list, read at start-up
/// (RegressionGoldenSuite.FamiliesFileCoversEveryTaskAndConfig reports the error).
std::vector<GoldenFamily> golden_families_or_none();

/// `family` as a gtest parameter name (letters, digits, '_').
std::string golden_test_name(const std::string& family);

/// What `run` (from load_run, in eval mode on the CPU) gives on its task's fixed inputs, as
/// {"task": ..., "inputs": {...}, "outputs": {...}}: numbers rounded to 1e-6, text as text.
///   translation:    source pieces, per-token log-probs of each reference (teacher-forced through
///                   the IncrementalDecoder), the first step's log-probs of ids 0-7, greedy and
///                   beam-5 translations with their scores;
///   language_model: pieces and per-token log-probs of fixed lines, a greedy continuation;
///   classification: probabilities and labels of fixed sentences;
///   word vectors:   vocabulary size and first words, each query word's 5 nearest neighbours
///                   with their cosines and its first 6 coordinates; a subword model's vector
///                   and neighbours of a word outside its vocabulary.
/// Throws UserError when a fixed input word is missing from a word-vector vocabulary, and
/// std::logic_error for a task that offers none of these capabilities.
nlohmann::json golden_outputs(LoadedRun& run);

/// The first place where `actual` differs from `expected`, or "" when they agree: numbers
/// within `tolerance` (absolute), strings, booleans and nulls exactly, arrays element by
/// element (and in length), objects key by key. The message names the place as a path from
/// `where` (e.g. "outputs.beam5[1]") with both values, and for strings the first differing
/// character's offset.
std::string first_difference(const nlohmann::json& expected, const nlohmann::json& actual, double tolerance,
                             const std::string& where = "");

}  // namespace nlpzoo::test
