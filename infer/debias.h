#pragma once
// Hard debiasing of word vectors (Bolukbasi, Chang, Zou, Saligrama & Kalai 2016, "Man is to
// Computer Programmer as Woman is to Homemaker? Debiasing Word Embeddings", section 5):
//  1. identify the bias direction g from definitional pairs (she/he, woman/man, ...);
//  2. neutralize: every gender-neutral word w becomes w − (w·g) g, then unit length, so its
//     projection on g is 0;
//  3. equalize: each equality pair (grandmother/grandfather, ...) is moved to
//     ν ± sqrt(1 − |ν|²) g, with ν the pair's mean minus its projection on g: both keep unit
//     length and share the component ν orthogonal to g, so every neutral word is equally far
//     from (and equally similar to) both.
// As in the authors' code (debiaswe/debias.py), every vector is unit-normalised first, so the
// output vectors all have length 1.
#include <torch/torch.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "datasets/word_vectors.h"

namespace nlpzoo {

using WordPairs = std::vector<std::pair<std::string, std::string>>;

/// The 9 definitional pairs of the authors' data/definitional_pairs.json (tolga-b/debiaswe,
/// MIT licence): woman/man, girl/boy, she/he, mother/father, daughter/son, female/male,
/// her/his, herself/himself, Mary/John.
const WordPairs& default_definitional_pairs();
/// The 52 pairs of the authors' data/equalize_pairs.json (monastery/convent, ...,
/// grandfather/grandmother, ..., he/she, king/queen, ...).
const WordPairs& default_equalize_pairs();
/// The 218 words of the authors' data/gender_specific_seed.json (actress, aunt, ... womb,
/// women): words that are gendered by definition and so are not neutralized.
const std::vector<std::string>& default_gender_specific_words();

/// Reads a list of word pairs: either lines "a b" (whitespace-separated; blank lines and lines
/// starting with '#' skipped) or, when the file starts with '[', a JSON array of two-word
/// arrays as the authors' definitional_pairs.json. Throws UserError naming the file and line
/// (or the JSON element) of a malformed entry, or the file when it holds no pair.
WordPairs read_word_pair_list(const std::string& path);
/// Reads a list of words: one or more per line (blank and '#' lines skipped) or a JSON array
/// of strings as gender_specific_seed.json. Throws UserError naming the file (and line or
/// element) when malformed or empty.
std::vector<std::string> read_word_list(const std::string& path);

enum class BiasDirectionMethod {
  // First principal component of the centred pair members: for each pair (a, b) with
  // μ = (â + b̂)/2 the rows â − μ and b̂ − μ, then the top right singular vector of that
  // [2P, D] matrix (Bolukbasi et al. §5; debiaswe's doPCA). Sign: pointing from b to a of the
  // pairs on average (for the default pairs, towards "she").
  kPca,
  // Mean of the differences â − b̂ over the pairs, unit-normalised (the simple variant taught
  // in courses, with one pair g = e_woman − e_man).
  kMeanDifference,
};
/// "pca" | "mean" (Throws UserError naming `option` otherwise).
BiasDirectionMethod parse_bias_direction_method(const std::string& name, const std::string& option = "--direction");

/// The bias direction g: [D] float32, unit length. Pairs whose words are not both in `vectors`
/// (exact match) are skipped and, if `missing` is given, listed there as "a/b". Throws
/// UserError when no pair is found.
torch::Tensor bias_direction(const WordVectors& vectors, const WordPairs& pairs, BiasDirectionMethod method,
                             std::vector<std::string>* missing = nullptr);

/// Neutralize: e − (e·g) g for each row. e: [N, D] or [D] float; g: [D] unit. Same shape as e.
/// (Not renormalised: hard_debias does that.)
torch::Tensor neutralize(const torch::Tensor& e, const torch::Tensor& g);

/// Equalize one pair of unit vectors e1, e2 ([D] float) about unit g: with
/// ν = μ − (μ·g) g, μ = (e1 + e2)/2 and z = sqrt(max(0, 1 − |ν|²)), returns
/// (ν + s z g, ν − s z g), s = sign((e1 − e2)·g) (+1 when 0): e1 stays on its side of g.
std::pair<torch::Tensor, torch::Tensor> equalize_pair(const torch::Tensor& e1, const torch::Tensor& e2,
                                                      const torch::Tensor& g);

struct DebiasOptions {
  BiasDirectionMethod method = BiasDirectionMethod::kPca;
  WordPairs definitional = default_definitional_pairs();
  WordPairs equalize = default_equalize_pairs();
  // Words never neutralized; every other word is (when `neutral` is not set). Matched exactly
  // and in lowercase, Titlecase and UPPERCASE forms, so "He" and "HE" stay gendered too.
  std::vector<std::string> gender_specific = default_gender_specific_words();
  // When set, exactly these words (those in the vocabulary) are neutralized, and
  // gender_specific is ignored.
  std::optional<std::vector<std::string>> neutral;
};

struct DebiasReport {
  torch::Tensor direction;                       // g, [D] float32 unit
  int64_t definitional_used = 0;                 // pairs that defined g
  std::vector<std::string> definitional_missing;  // "a/b" pairs not in the vocabulary
  int64_t neutralized = 0;                       // words neutralized
  int64_t equalized = 0;                         // pairs equalized (case variants counted apart)
};

/// Hard debiasing as above; returns new vectors (same words, same order, every row of unit
/// length; zero rows stay zero). Equality pairs are tried in lowercase, Titlecase and
/// UPPERCASE, as in the authors' code, and as given; pairs not in the vocabulary are skipped. Throws
/// UserError when no definitional pair is in the vocabulary.
WordVectors hard_debias(const WordVectors& vectors, const DebiasOptions& options, DebiasReport* report = nullptr);

}  // namespace nlpzoo
