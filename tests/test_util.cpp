#include "tests/test_util.h"

#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <random>
#include <vector>
#include <sstream>

#include "datasets/batching.h"
#include "core/io.h"
#include "datasets/special_ids.h"

namespace nlpzoo::test {

std::string user_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  return "(no UserError thrown)";
}

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::filesystem::path fresh_temp_dir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("nlpzoo_" + name + "_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

void write_topic_corpus(const std::filesystem::path& file, int lines) {
  const std::vector<std::string> animals = {"cat", "dog", "cow", "pig", "hen", "fox"};
  const std::vector<std::string> numbers = {"one", "two", "six", "ten", "nine", "four"};
  std::mt19937 rng(3);
  std::string text;
  for (int i = 0; i < lines; ++i) {
    const auto& words = i % 2 ? animals : numbers;
    for (int k = 0; k < 6; ++k) text += (k ? " " : "") + words[rng() % words.size()];
    text += i % 2 ? " the\n" : " a\n";
  }
  std::filesystem::create_directories(file.parent_path());
  atomic_write_text(file.string(), text);
}

void write_numbers_corpus(const std::filesystem::path& dir) {
  const std::vector<std::pair<std::string, std::string>> words = {
      {"uno", "one"}, {"dos", "two"}, {"tres", "three"}, {"cuatro", "four"}, {"cinco", "five"},
      {"rojo", "red"}, {"verde", "green"}, {"azul", "blue"}, {"negro", "black"}, {"blanco", "white"}};
  std::string es, en;
  for (size_t i = 0; i < words.size(); ++i)
    for (size_t j = 0; j < words.size(); ++j) {
      es += "el " + words[i].first + " y el " + words[j].first + "\n";
      en += "the " + words[i].second + " and the " + words[j].second + "\n";
    }
  std::filesystem::create_directories(dir);
  for (const char* split : {"train", "valid", "test"}) {
    atomic_write_text((dir / (std::string(split) + ".es")).string(), es);
    atomic_write_text((dir / (std::string(split) + ".en")).string(), en);
  }
}

void write_task_corpora(const std::filesystem::path& dir) {
  write_numbers_corpus(dir);
  std::string tsv;
  for (const auto& line : read_lines((dir / "train.en").string())) {
    const auto first = line.substr(4, line.find(' ', 4) - 4);  // "the <first> and the <second>"
    const bool colour = first == "red" || first == "green" || first == "blue" || first == "black" || first == "white";
    tsv += line + "\t" + (colour ? "1" : "0") + "\n";
  }
  for (const char* split : {"train", "dev", "test"}) atomic_write_text((dir / (std::string(split) + ".tsv")).string(), tsv);
  write_topic_corpus(dir / "english.txt", 400);
}

CommandResult run_command(const std::string& command_line, const std::string& stdin_text) {
  const auto dir = fresh_temp_dir("command_io");
  const auto in = (dir / "stdin").string(), out = (dir / "stdout").string(), err = (dir / "stderr").string();
  std::ofstream(in) << stdin_text;
  const std::string cmd = "( " + command_line + " ) <" + shell_quote(in) + " >" + shell_quote(out) + " 2>" +
                          shell_quote(err);
  const int raw = std::system(cmd.c_str());
  CommandResult r{WIFEXITED(raw) ? WEXITSTATUS(raw) : -1, read_file(out), read_file(err)};
  std::filesystem::remove_all(dir);
  return r;
}

CommandResult run_cli(const std::string& args, const std::string& stdin_text) {
  return run_command("NLPZOO_THREADS=1 " + shell_quote(NLPZOO_CLI) + " " + args, stdin_text);
}

bool under_ci() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && (std::string(ci) == "true" || std::string(ci) == "1");
}

static std::string shared_data_dir() {
  const char* env = std::getenv("NLPZOO_SHARED_DATA");
  return env && *env ? env : NLPZOO_SHARED_DATA;
}

std::string shared_data(const std::string& relative) { return shared_data_dir() + "/" + relative; }

std::string missing_shared_files(const std::vector<std::string>& paths) {
  std::string missing;
  for (const auto& p : paths)
    if (!std::filesystem::exists(p)) missing += (missing.empty() ? "" : ", ") + p;
  if (missing.empty()) return "";
  return "shared evaluation data absent: " + missing + " (NLPZOO_SHARED_DATA=" + shared_data_dir() + ")";
}

std::string missing_python_module(const std::string& module, const std::string& package) {
  if (run_command("/usr/bin/python3 -c " + shell_quote("import " + module)).status == 0) return "";
  return "/usr/bin/python3 cannot import " + module + " (install " + package + ")";
}

CommandResult run_python(const std::string& script, const std::vector<std::string>& args) {
  std::string command = "OMP_NUM_THREADS=1 /usr/bin/python3 -c " + shell_quote(script);
  for (const auto& a : args) command += " " + shell_quote(a);
  return run_command(command);
}

torch::Tensor random_source_batch(int64_t B, int64_t S, int64_t vocab_size) {
  auto src = torch::zeros({B, S}, torch::kLong);
  auto lengths = torch::randint(1, S + 1, {B}, torch::kLong);
  lengths[0] = S;
  if (B > 1) lengths[1] = 1;
  for (int64_t b = 0; b < B; ++b) {
    const int64_t len = lengths[b].item<int64_t>();
    if (len > 1) src[b].slice(0, 0, len - 1).copy_(torch::randint(1, vocab_size, {len - 1}, torch::kLong));
    src[b][len - 1] = kEosId;
  }
  return src;
}

float max_diff(const torch::Tensor& a, const torch::Tensor& b) {
  EXPECT_EQ(a.sizes(), b.sizes());
  EXPECT_EQ(a.scalar_type(), b.scalar_type());
  if (a.sizes() != b.sizes()) return 1e9f;
  if (a.numel() == 0) return 0.f;
  return (a.to(torch::kFloat) - b.to(torch::kFloat)).abs().max().item<float>();
}

torch::Tensor eager_greedy(IncrementalDecoder& model, const torch::Tensor& src, int64_t max_len) {
  torch::NoGradGuard no_grad;
  auto state = model.init(src);
  const int64_t B = src.size(0);
  auto prev = torch::full({B}, kBosId, torch::kLong);
  auto done = torch::zeros({B}, torch::kBool);
  std::vector<torch::Tensor> out;
  for (int64_t t = 0; t < max_len; ++t) {
    auto step = model.step(state, prev);
    auto tok = step.log_probs.argmax(1);
    tok = torch::where(done, torch::full_like(tok, kPadId), tok);
    out.push_back(tok);
    done = done.logical_or(tok.eq(kEosId));
    prev = tok;
    state = step.state;
    if (done.all().item<bool>()) break;
  }
  if (out.empty()) return torch::zeros({B, 0}, torch::kLong);
  return torch::stack(out, 1);
}

void expect_python_report(const std::string& output, const std::map<std::string, torch::Tensor>& values,
                          const std::map<std::string, std::string>& texts) {
  std::istringstream lines(output);
  size_t checked = 0;
  bool done = false;
  for (std::string line; std::getline(lines, line);) {
    if (line == "done") {
      done = true;
      continue;
    }
    std::istringstream fields(line);
    std::string kind, id;
    fields >> kind >> id;
    if (kind == "params" || kind == "attrs" || kind == "greedy") {
      std::string rest;
      std::getline(fields >> std::ws, rest);
      auto it = texts.find(kind + " " + id);
      ASSERT_NE(it, texts.end()) << "unexpected python output line: " << line;
      EXPECT_EQ(rest, it->second) << kind << " " << id;
      ++checked;
      continue;
    }
    std::string t;
    fields >> t;
    std::vector<float> got;
    for (float x; fields >> x;) got.push_back(x);
    auto it = values.find(kind + " " + id + " " + t);
    ASSERT_NE(it, values.end()) << "unexpected python output line: " << line;
    EXPECT_LE(max_diff(torch::tensor(got, torch::kFloat), it->second.to(torch::kFloat).flatten()), 1e-5) << line;
    ++checked;
  }
  EXPECT_TRUE(done) << output;
  EXPECT_EQ(checked, values.size() + texts.size()) << output;
}

Batch copy_task_batch(const std::vector<std::vector<int64_t>>& data, const std::vector<int64_t>& rows) {
  std::vector<std::vector<int64_t>> src, in, out;
  int64_t tokens = 0;
  for (int64_t i : rows) {
    src.push_back(append_eos(data[i], 64));
    std::vector<int64_t> x{2};
    x.insert(x.end(), data[i].begin(), data[i].end());
    in.push_back(x);
    out.push_back(append_eos(data[i], 64));
    tokens += out.back().size();
  }
  Batch b;
  b.tensors = {{"src", pad_sequences(src, 0)}, {"in", pad_sequences(in, 0)}, {"out", pad_sequences(out, 0)}};
  b.num_tokens = tokens;
  b.num_examples = src.size();
  return b;
}

void run_updates(Task& task, torch::optim::Optimizer& optimizer, int64_t steps) {
  const int64_t batches = task.num_batches(Split::kTrain, 0);
  for (int64_t step = 0; step < steps; ++step) {
    const auto b = task.make_batch(Split::kTrain, step / batches, step % batches);
    optimizer.zero_grad();
    (task.loss(b).loss_sum / b.num_tokens).backward();
    optimizer.step();
  }
}

}  // namespace nlpzoo::test
