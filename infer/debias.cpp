#include "infer/debias.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>
#include <sstream>
#include <unordered_set>

#include "core/io.h"
#include "infer/embedding_queries.h"

namespace nlpzoo {

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}
std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}
// Python's str.title() on ASCII: a letter after a non-letter is capitalised, others lowered
// ("catholic_priest" -> "Catholic_Priest"), which is what the authors' code looks up.
std::string title(std::string s) {
  bool after_letter = false;
  for (char& c : s) {
    const auto u = static_cast<unsigned char>(c);
    c = static_cast<char>(after_letter ? std::tolower(u) : std::toupper(u));
    after_letter = std::isalpha(u) != 0;
  }
  return s;
}

bool starts_json_array(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  return first != std::string::npos && text[first] == '[';
}

nlohmann::json parse_json(const std::string& path, const std::string& text) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw UserError(path + ": not valid JSON (" + e.what() + ")");
  }
}

// Lines of whitespace-separated words; blank lines and '#' comments yield nothing.
std::vector<std::pair<int64_t, std::vector<std::string>>> word_lines(const std::string& text) {
  std::vector<std::pair<int64_t, std::vector<std::string>>> out;
  std::istringstream in(text);
  int64_t line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    std::istringstream words(line);
    std::vector<std::string> ws;
    for (std::string w; words >> w;) ws.push_back(w);
    if (ws.empty() || ws[0][0] == '#') continue;
    out.push_back({line_no, std::move(ws)});
  }
  return out;
}

}  // namespace

WordPairs read_word_pair_list(const std::string& path) {
  const std::string text = read_file(path);
  WordPairs pairs;
  if (starts_json_array(text)) {
    const auto j = parse_json(path, text);
    for (size_t i = 0; i < j.size(); ++i) {
      const auto& e = j[i];
      if (!e.is_array() || e.size() != 2 || !e[0].is_string() || !e[1].is_string())
        throw UserError(path + ": JSON element " + std::to_string(i + 1) + " is not a pair of words [\"a\", \"b\"]");
      pairs.push_back({e[0].get<std::string>(), e[1].get<std::string>()});
    }
  } else {
    for (const auto& [line_no, ws] : word_lines(text)) {
      if (ws.size() != 2)
        throw UserError(path + ":" + std::to_string(line_no) + ": expected a pair of words 'a b', found " +
                        std::to_string(ws.size()) + " words");
      pairs.push_back({ws[0], ws[1]});
    }
  }
  if (pairs.empty()) throw UserError(path + ": no word pairs");
  return pairs;
}

std::vector<std::string> read_word_list(const std::string& path) {
  const std::string text = read_file(path);
  std::vector<std::string> words;
  if (starts_json_array(text)) {
    const auto j = parse_json(path, text);
    for (size_t i = 0; i < j.size(); ++i) {
      if (!j[i].is_string()) throw UserError(path + ": JSON element " + std::to_string(i + 1) + " is not a word (string)");
      words.push_back(j[i].get<std::string>());
    }
  } else {
    for (const auto& [line_no, ws] : word_lines(text)) words.insert(words.end(), ws.begin(), ws.end());
  }
  if (words.empty()) throw UserError(path + ": no words");
  return words;
}

const WordPairs& default_definitional_pairs() {
  static const WordPairs pairs = {{"woman", "man"},   {"girl", "boy"},       {"she", "he"},
                                  {"mother", "father"}, {"daughter", "son"}, {"female", "male"},
                                  {"her", "his"},       {"herself", "himself"}, {"Mary", "John"}};
  return pairs;
}

const WordPairs& default_equalize_pairs() {
  static const WordPairs pairs = {
      {"monastery", "convent"},   {"spokesman", "spokeswoman"},     {"Catholic_priest", "nun"},
      {"Dad", "Mom"},             {"Men", "Women"},                 {"councilman", "councilwoman"},
      {"grandpa", "grandma"},     {"grandsons", "granddaughters"},  {"prostate_cancer", "ovarian_cancer"},
      {"testosterone", "estrogen"}, {"uncle", "aunt"},              {"husbands", "wives"},
      {"Father", "Mother"},       {"Grandpa", "Grandma"},           {"He", "She"},
      {"boy", "girl"},            {"boys", "girls"},                {"brother", "sister"},
      {"brothers", "sisters"},    {"businessman", "businesswoman"}, {"chairman", "chairwoman"},
      {"colt", "filly"},          {"congressman", "congresswoman"}, {"dad", "mom"},
      {"dads", "moms"},           {"dudes", "gals"},                {"ex_boyfriend", "ex_girlfriend"},
      {"father", "mother"},       {"fatherhood", "motherhood"},     {"fathers", "mothers"},
      {"fella", "granny"},        {"fraternity", "sorority"},       {"gelding", "mare"},
      {"gentleman", "lady"},      {"gentlemen", "ladies"},          {"grandfather", "grandmother"},
      {"grandson", "granddaughter"}, {"he", "she"},                 {"himself", "herself"},
      {"his", "her"},             {"king", "queen"},                {"kings", "queens"},
      {"male", "female"},         {"males", "females"},             {"man", "woman"},
      {"men", "women"},           {"nephew", "niece"},              {"prince", "princess"},
      {"schoolboy", "schoolgirl"}, {"son", "daughter"},             {"sons", "daughters"},
      {"twin_brother", "twin_sister"}};
  return pairs;
}

const std::vector<std::string>& default_gender_specific_words() {
  static const std::vector<std::string> words = {
      "actress", "actresses", "aunt", "aunts", "bachelor", "ballerina", "barbershop", "baritone", "beard",
      "beards", "beau", "bloke", "blokes", "boy", "boyfriend", "boyfriends", "boyhood", "boys", "brethren",
      "bride", "brides", "brother", "brotherhood", "brothers", "bull", "bulls", "businessman", "businessmen",
      "businesswoman", "chairman", "chairwoman", "chap", "colt", "colts", "congressman", "congresswoman",
      "convent", "councilman", "councilmen", "councilwoman", "countryman", "countrymen", "czar", "dad", "daddy",
      "dads", "daughter", "daughters", "deer", "diva", "dowry", "dude", "dudes", "elder_brother", "eldest_son",
      "estranged_husband", "estranged_wife", "estrogen", "ex_boyfriend", "ex_girlfriend", "father", "fathered",
      "fatherhood", "fathers", "fella", "fellas", "female", "females", "feminism", "fiance", "fiancee",
      "fillies", "filly", "fraternal", "fraternities", "fraternity", "gal", "gals", "gelding", "gentleman",
      "gentlemen", "girl", "girlfriend", "girlfriends", "girls", "goddess", "godfather", "granddaughter",
      "granddaughters", "grandfather", "grandma", "grandmother", "grandmothers", "grandpa", "grandson",
      "grandsons", "guy", "handyman", "he", "heiress", "hen", "hens", "her", "heroine", "hers", "herself",
      "him", "himself", "his", "horsemen", "hostess", "housewife", "housewives", "hubby", "husband", "husbands",
      "king", "kings", "lad", "ladies", "lads", "lady", "lesbian", "lesbians", "lion", "lions", "ma", "macho",
      "maid", "maiden", "maids", "male", "males", "mama", "man", "mare", "maternal", "maternity", "matriarch",
      "men", "menopause", "mistress", "mom", "mommy", "moms", "monastery", "monk", "monks", "mother",
      "motherhood", "mothers", "nephew", "nephews", "niece", "nieces", "nun", "nuns", "obstetrics",
      "ovarian_cancer", "pa", "paternity", "penis", "prince", "princes", "princess", "prostate",
      "prostate_cancer", "queen", "queens", "salesman", "salesmen", "schoolboy", "schoolgirl", "semen", "she",
      "sir", "sister", "sisters", "son", "sons", "sorority", "sperm", "spokesman", "spokesmen", "spokeswoman",
      "stallion", "statesman", "stepdaughter", "stepfather", "stepmother", "stepson", "strongman", "stud",
      "studs", "suitor", "suitors", "teenage_girl", "teenage_girls", "testosterone", "twin_brother",
      "twin_sister", "uncle", "uncles", "uterus", "vagina", "viagra", "waitress", "widow", "widower", "widows",
      "wife", "witch", "witches", "wives", "woman", "womb", "women", "younger_brother"};
  return words;
}

BiasDirectionMethod parse_bias_direction_method(const std::string& name, const std::string& option) {
  if (name == "pca") return BiasDirectionMethod::kPca;
  if (name == "mean") return BiasDirectionMethod::kMeanDifference;
  throw UserError(option + " " + name + ": expected pca (first principal component) or mean (mean difference)");
}

torch::Tensor bias_direction(const WordVectors& vectors, const WordPairs& pairs, BiasDirectionMethod method,
                             std::vector<std::string>* missing) {
  std::vector<int64_t> ra, rb;
  for (const auto& [a, b] : pairs) {
    const int64_t i = vectors.find(a), j = vectors.find(b);
    if (i < 0 || j < 0 || i == j) {
      if (missing) missing->push_back(a + "/" + b);
      continue;
    }
    ra.push_back(i);
    rb.push_back(j);
  }
  if (ra.empty())
    throw UserError("none of the " + std::to_string(pairs.size()) +
                    " definitional pairs has both words in the vocabulary, so there is no bias direction");
  torch::NoGradGuard no_grad;
  const auto& V = vectors.vectors();
  const auto A = unit_rows(V.index_select(0, torch::tensor(ra, torch::kInt64)));  // [P, D]
  const auto B = unit_rows(V.index_select(0, torch::tensor(rb, torch::kInt64)));  // [P, D]
  const auto diff = (A - B).sum(0);                                               // [D]
  if (method == BiasDirectionMethod::kMeanDifference) return diff / diff.norm().clamp_min(1e-12);
  const auto mu = (A + B) / 2;
  const auto centred = torch::cat({A - mu, B - mu}, 0).to(torch::kFloat64);  // [2P, D]
  const auto g = std::get<2>(at::linalg_svd(centred, /*full_matrices=*/false))[0].to(torch::kFloat32);  // [D]
  // A singular vector's sign is arbitrary; orienting it makes the result reproducible.
  return diff.dot(g).item<float>() < 0 ? -g : g;
}

torch::Tensor neutralize(const torch::Tensor& e, const torch::Tensor& g) {
  if (e.dim() == 1) return e - e.dot(g) * g;
  return e - e.matmul(g).unsqueeze(1) * g.unsqueeze(0);  // [N, D]
}

std::pair<torch::Tensor, torch::Tensor> equalize_pair(const torch::Tensor& e1, const torch::Tensor& e2,
                                                      const torch::Tensor& g) {
  const auto nu = neutralize((e1 + e2) / 2, g);  // [D]
  const double z = std::sqrt(std::max(0.0, 1.0 - nu.dot(nu).item<double>()));
  const double s = (e1 - e2).dot(g).item<double>() < 0 ? -1.0 : 1.0;
  return {nu + s * z * g, nu - s * z * g};
}

WordVectors hard_debias(const WordVectors& vectors, const DebiasOptions& options, DebiasReport* report) {
  DebiasReport r;
  torch::NoGradGuard no_grad;
  r.direction = bias_direction(vectors, options.definitional, options.method, &r.definitional_missing);
  r.definitional_used = static_cast<int64_t>(options.definitional.size() - r.definitional_missing.size());
  const auto& g = r.direction;
  auto V = unit_rows(vectors.vectors());  // [N, D]
  const int64_t N = vectors.size();

  std::vector<uint8_t> neutral(N, 0);
  if (options.neutral) {
    std::unordered_set<std::string> chosen(options.neutral->begin(), options.neutral->end());
    for (int64_t i = 0; i < N; ++i) neutral[i] = chosen.count(vectors.words()[i]) > 0;
  } else {
    std::unordered_set<std::string> specific;
    for (const auto& w : options.gender_specific)
      for (const auto& v : {w, lower(w), title(w), upper(w)}) specific.insert(v);
    for (int64_t i = 0; i < N; ++i) neutral[i] = specific.count(vectors.words()[i]) == 0;
  }
  const auto mask = torch::tensor(std::vector<int64_t>(neutral.begin(), neutral.end()), torch::kInt64)
                        .to(torch::kFloat32);                                  // [N]
  r.neutralized = mask.sum().item<int64_t>();
  V = unit_rows(V - (V.matmul(g) * mask).unsqueeze(1) * g.unsqueeze(0));  // [N, D]

  std::set<std::pair<std::string, std::string>> candidates;
  for (const auto& [a, b] : options.equalize) {
    candidates.insert({a, b});  // as given, too: "Catholic_priest" is none of the three forms
    candidates.insert({lower(a), lower(b)});
    candidates.insert({title(a), title(b)});
    candidates.insert({upper(a), upper(b)});
  }
  for (const auto& [a, b] : candidates) {
    const int64_t i = vectors.find(a), j = vectors.find(b);
    if (i < 0 || j < 0 || i == j) continue;
    auto [ea, eb] = equalize_pair(V[i], V[j], g);
    V[i].copy_(ea);
    V[j].copy_(eb);
    ++r.equalized;
  }
  if (report) *report = std::move(r);
  return WordVectors(vectors.words(), unit_rows(V).contiguous());
}

}  // namespace nlpzoo
