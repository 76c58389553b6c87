#include "tests/golden.h"

#include <cctype>
#include <cmath>
#include <set>
#include <sstream>

#include "core/io.h"
#include "datasets/special_ids.h"
#include "infer/embedding_queries.h"
#include "infer/sampling.h"
#include "infer/translator.h"
#include "models/rnn/elmo.h"
#include "train/tasks/bilm_task.h"
#include "train/tasks/mask_filler.h"
#include "train/tasks/sentence_classifier.h"
#include "train/tasks/text_generator.h"
#include "train/tasks/translation_model.h"
#include "train/tasks/word_vector_source.h"

namespace nlpzoo::test {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// The fixed inputs. Bible verses (Genesis 1:1, 1:3, John 11:35; Reina-Valera 1909 and the World
// English Bible, both public domain) for the models trained on Bible text, sentences written
// here for the classifiers, and words frequent in the golden word-vector slice (Genesis, as
// `nlpzoo data bible` writes english.txt: not lowercased).
const std::vector<std::string> kSources = {"En el principio crió Dios los cielos y la tierra.",
                                           "Y dijo Dios: Sea la luz: y fué la luz.", "Y lloró Jesús."};
const std::vector<std::string> kReferences = {"In the beginning, God created the heavens and the earth.",
                                              "God said, “Let there be light,” and there was light.", "Jesus wept."};
const std::string kPrompt = "In the beginning";
const std::vector<std::string> kSentences = {"Completely lacking in good taste, good service, and good ambiance.",
                                             "a charming and often moving film with a wonderful cast",
                                             "dull , lifeless and far too long"};
const std::vector<std::string> kWords = {"God", "land", "father"};
const std::string kOovWord = "unearthliness";

constexpr int64_t kNeighbours = 5;
constexpr int64_t kCoordinates = 6;

double r6(double x) { return std::round(x * 1e6) / 1e6; }

json numbers(const torch::Tensor& t) {
  const auto c = t.detach().to(torch::kCPU, torch::kDouble).contiguous().view(-1);
  json out = json::array();
  for (int64_t i = 0; i < c.numel(); ++i) out.push_back(r6(c[i].item<double>()));
  return out;
}

std::string join(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : " ") + w;
  return out;
}

json translation_outputs(TranslationModel& tm) {
  torch::NoGradGuard no_grad;
  auto& model = tm.decoder();
  const auto& source = tm.source_tokenizer();
  const auto& target = tm.target_tokenizer();
  json out;
  for (size_t i = 0; i < kSources.size(); ++i) {
    out["source_pieces"].push_back(join(source.encode_pieces(kSources[i])));
    auto src_ids = source.encode(kSources[i]);
    src_ids.push_back(kEosId);
    const auto src = torch::tensor(src_ids, torch::kLong).unsqueeze(0);  // [1, S]
    if (i == 0)
      out["first_step_log_probs"] =
          numbers(model.step(model.init(src), torch::tensor(std::vector<int64_t>{kBosId}, torch::kLong)).log_probs[0].slice(0, 0, 8));
    // Teacher forcing, one step per reference token: the log-prob the model gives each.
    const auto log_probs = forced_log_probs(model, src, {target.encode(kReferences[i])})[0];
    out["reference_log_probs"].push_back(numbers(torch::tensor(log_probs, torch::kDouble)));
  }
  const Translator translator(model, source, target, tm.max_positions(), torch::kCPU);
  for (const int64_t beam : {1, 5}) {
    SearchOptions options;
    options.beam_size = beam;
    const std::string name = beam == 1 ? "greedy" : "beam5";
    for (const auto& t : translator.translate(kSources, options)) {
      out[name].push_back(translator.text(t.hypotheses.at(0)));
      out[name + "_scores"].push_back(r6(t.hypotheses.at(0).score));
    }
  }
  return {{"inputs", {{"sources", kSources}, {"references", kReferences}}}, {"outputs", out}};
}

json language_model_outputs(TextGenerator& generator) {
  torch::NoGradGuard no_grad;
  auto& lm = generator.causal_decoder();
  const auto& tokenizer = generator.tokenizer();
  json out;
  // As in training, each line is read after an EOS and ends with one.
  for (const auto& line : kReferences) {
    out["pieces"].push_back(join(tokenizer.encode_pieces(line)));
    auto ids = tokenizer.encode(line);
    std::vector<int64_t> inputs = {kEosId};
    inputs.insert(inputs.end(), ids.begin(), ids.end());
    ids.push_back(kEosId);
    const auto logits = lm.sequence_logits(inputs);  // [T, V]
    const auto log_probs = torch::log_softmax(logits.to(torch::kCPU, torch::kDouble), -1)  // [T, V]
                               .gather(1, torch::tensor(ids, torch::kLong).unsqueeze(1))
                               .squeeze(1);
    out["log_probs"].push_back(numbers(log_probs));
  }
  SamplingOptions greedy;
  greedy.temperature = 0;
  out["greedy"] = tokenizer.decode(sample_sequence(lm, tokenizer.encode(kPrompt), 20, greedy, /*seed=*/1));
  return {{"inputs", {{"lines", kReferences}, {"prompt", kPrompt}}}, {"outputs", out}};
}

// Class probabilities and labels (a regression model: its scores) of the fixed sentences; a
// pair model reads each sentence with the next one as "A<TAB>B".
json classifier_outputs(SentenceClassifier& classifier) {
  std::vector<std::string> inputs = kSentences;
  if (classifier.pair_input())
    for (size_t i = 0; i < inputs.size(); ++i) inputs[i] = kSentences[i] + "\t" + kSentences[(i + 1) % kSentences.size()];
  json out;
  out["label_names"] = classifier.labels();
  for (const auto& p : classifier.predict(inputs, torch::kCPU, /*batch_size=*/8)) {
    if (classifier.labels().empty()) {
      out["scores"].push_back(r6(p.score));
      continue;
    }
    out["probabilities"].push_back(numbers(torch::tensor(p.probabilities)));
    out["labels"].push_back(classifier.labels().at(p.label_id));
  }
  return {{"inputs", {{"sentences", inputs}}}, {"outputs", out}};
}

// The cloze lines: the reference verses with a word masked out.
const std::vector<std::string> kClozes = {"In the beginning, God created the [MASK] and the earth.",
                                          "God said, “Let there be [MASK],” and there was light.", "[MASK] wept."};

json mask_filler_outputs(MaskFiller& filler) {
  json out;
  for (const auto& line : kClozes) {
    json masks = json::array();
    for (const auto& candidates : filler.fill_mask(line, kNeighbours, torch::kCPU)) {
      json m;
      for (const auto& c : candidates) {
        m["pieces"].push_back(c.piece);
        m["probabilities"].push_back(r6(c.probability));
      }
      masks.push_back(m);
    }
    out["masks"].push_back(masks);
  }
  return {{"inputs", {{"lines", kClozes}}}, {"outputs", out}};
}

// ELMo's biLM: each line's pieces, both directions' summed NLL of [CLS] pieces [SEP], and the
// first values of every layer at the first piece.
json bilm_outputs(BiLmTask& task) {
  torch::NoGradGuard no_grad;
  auto& bilm = task.bilm();
  json out;
  for (const auto& line : kReferences) {
    out["pieces"].push_back(join(task.tokenizer().encode_pieces(line)));
    const auto ids = task.tokenizer().encode(line);
    const auto tokens = torch::tensor(ids, torch::kLong).unsqueeze(0);  // [1, T]
    const auto lengths = torch::tensor({static_cast<int64_t>(ids.size())}, torch::kLong);
    const auto input = bilm_input(tokens, lengths);
    const auto loss = bilm.loss(input, lengths + 2);
    out["forward_nll"].push_back(r6(loss.forward_nll.item<double>()));
    out["backward_nll"].push_back(r6(loss.backward_nll.item<double>()));
    json layers = json::array();
    for (const auto& layer : bilm.layers(input, lengths + 2)) layers.push_back(numbers(layer[0][1].slice(0, 0, 6)));
    out["first_piece_layers"].push_back(layers);
  }
  return {{"inputs", {{"lines", kReferences}}}, {"outputs", out}};
}

json word_vector_outputs(const WordVectorSource& source) {
  const auto vectors = source.word_vectors();
  const OovVectors oov = [&](const std::string& w) { return source.oov_vector(w); };
  json out;
  out["vocabulary_size"] = vectors.size();
  out["first_words"] = std::vector<std::string>(vectors.words().begin(),
                                                vectors.words().begin() + std::min<int64_t>(10, vectors.size()));
  auto query = [&](const std::string& word, const torch::Tensor& vector) {
    json q;
    q["coordinates"] = numbers(vector.view(-1).slice(0, 0, kCoordinates));
    for (const auto& n : nearest_neighbours(vectors, word, kNeighbours, 0, oov)) {
      q["neighbours"].push_back(n.word);
      q["cosines"].push_back(r6(n.score));
    }
    return q;
  };
  for (const auto& word : kWords) out["words"][word] = query(word, vectors.vectors()[require_word(vectors, word)]);
  // A subword model's vector of a word outside its vocabulary (from its character n-grams).
  if (vectors.find(kOovWord) >= 0) throw UserError("golden: '" + kOovWord + "' is in the vocabulary; choose another");
  if (const auto v = source.oov_vector(kOovWord)) out["oov"][kOovWord] = query(kOovWord, *v);
  return {{"inputs", {{"words", kWords}, {"oov_word", kOovWord}}}, {"outputs", out}};
}

}  // namespace

void PrintTo(const GoldenFamily& family, std::ostream* os) { *os << family.name; }

fs::path golden_dir() { return fs::path(NLPZOO_SOURCE_DIR) / "tests" / "data" / "golden"; }

std::vector<GoldenFamily> read_golden_families() {
  const auto path = (golden_dir() / "families.tsv").string();
  if (!fs::exists(path)) return {};
  std::vector<GoldenFamily> families;
  std::set<std::string> names;
  int line_number = 0;
  for (const auto& line : read_lines(path)) {
    ++line_number;
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> fields;
    std::stringstream in(line);
    for (std::string f; std::getline(in, f, '\t');) fields.push_back(f);
    const std::string where = path + ":" + std::to_string(line_number) + ": ";
    if (fields.size() != 5) throw UserError(where + "expected 5 tab-separated fields, found " + std::to_string(fields.size()));
    GoldenFamily f{fields[0], fields[1], fields[2], 0, fields[4]};
    try {
      size_t end = 0;
      f.steps = std::stoll(fields[3], &end);
      if (end != fields[3].size() || f.steps < 1) throw std::invalid_argument("");
    } catch (const std::exception&) {
      throw UserError(where + "steps '" + fields[3] + "' is not a positive integer");
    }
    if (f.data != "bible" && f.data != "sst2") throw UserError(where + "data '" + f.data + "' is not bible or sst2");
    if (!names.insert(f.name).second) throw UserError(where + "family '" + f.name + "' is named twice");
    families.push_back(f);
  }
  return families;
}

std::vector<GoldenFamily> golden_families_or_none() {
  try {
    return read_golden_families();
  } catch (const std::exception&) {
    return {};
  }
}

std::string golden_test_name(const std::string& family) {
  std::string out;
  for (char c : family) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return out;
}

json golden_outputs(LoadedRun& run) {
  json result;
  if (auto* t = run.task->translation_model()) {
    result = translation_outputs(*t);
  } else if (auto* g = run.task->text_generator()) {
    result = language_model_outputs(*g);
  } else if (auto* c = run.task->sentence_classifier()) {
    result = classifier_outputs(*c);
  } else if (const auto* w = run.task->word_vector_source()) {
    result = word_vector_outputs(*w);
  } else if (auto* f = run.task->mask_filler()) {
    result = mask_filler_outputs(*f);
  } else if (auto* b = dynamic_cast<BiLmTask*>(run.task.get())) {
    result = bilm_outputs(*b);
  } else {
    throw std::logic_error("golden_outputs: task '" + run.header.task + "' offers no capability to query");
  }
  result["task"] = run.header.task;
  return result;
}

std::string first_difference(const json& expected, const json& actual, double tolerance, const std::string& where) {
  const std::string at = where.empty() ? "(top)" : where;
  if (expected.is_number() && actual.is_number()) {
    const double e = expected.get<double>(), a = actual.get<double>();
    if (std::abs(e - a) <= tolerance) return "";
    std::ostringstream m;
    m.precision(8);
    m << at << ": expected " << e << ", got " << a << " (|difference| " << std::abs(e - a) << " > " << tolerance << ")";
    return m.str();
  }
  if (expected.type() != actual.type())
    return at + ": expected " + expected.dump() + ", got " + actual.dump() + " (another type)";
  if (expected.is_string()) {
    const auto& e = expected.get_ref<const std::string&>();
    const auto& a = actual.get_ref<const std::string&>();
    if (e == a) return "";
    size_t i = 0;
    while (i < e.size() && i < a.size() && e[i] == a[i]) ++i;
    return at + ": expected " + expected.dump() + ", got " + actual.dump() + " (they differ from character " +
           std::to_string(i) + ")";
  }
  if (expected.is_array()) {
    for (size_t i = 0; i < std::min(expected.size(), actual.size()); ++i) {
      auto d = first_difference(expected[i], actual[i], tolerance, where + "[" + std::to_string(i) + "]");
      if (!d.empty()) return d;
    }
    if (expected.size() != actual.size())
      return at + ": expected " + std::to_string(expected.size()) + " elements, got " + std::to_string(actual.size());
    return "";
  }
  if (expected.is_object()) {
    for (const auto& [key, value] : expected.items()) {
      const std::string inner = where.empty() ? key : where + "." + key;
      if (!actual.contains(key)) return inner + ": expected " + value.dump() + ", got nothing (the output is missing)";
      auto d = first_difference(value, actual.at(key), tolerance, inner);
      if (!d.empty()) return d;
    }
    for (const auto& [key, value] : actual.items())
      if (!expected.contains(key))
        return (where.empty() ? key : where + "." + key) + ": an output that the expected file does not have";
    return "";
  }
  return expected == actual ? "" : at + ": expected " + expected.dump() + ", got " + actual.dump();
}

}  // namespace nlpzoo::test
