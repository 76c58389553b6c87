// Checkpoints: the version-2 file (safetensors layout, read by a plain Python reader), exact
// round trips of every optimizer's state, corruption named by tensor, version-1 files (read
// with a warning, upgraded, refused when they carry TorchScript code); and a run folder under
// stress through the nlpzoo binary: SIGTERM, a crash mid-write, a folder holding only a best
// checkpoint, a corrupted checkpoint, `checkpoint upgrade`.
#include <gtest/gtest.h>
#include <torch/csrc/jit/runtime/print_handler.h>
#include <torch/script.h>
#include <unistd.h>

#include <filesystem>
#include <atomic>
#include <limits>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/io.h"
#include "tests/test_util.h"
#include "train/checkpoint.h"
#include "train/checkpoint_v1.h"
#include "train/tasks/registry.h"

namespace fs = std::filesystem;
using namespace nlpzoo;

namespace {

// [begin, end) of tensor `name`'s bytes in the version-2 file at `path`.
std::pair<size_t, size_t> tensor_bytes_in_file(const std::string& path, const std::string& name) {
  const auto bytes = read_file(path);
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  const auto header = nlohmann::json::parse(bytes.substr(8, n));
  const auto offsets = header.at(name).at("data_offsets");
  return {8 + n + offsets[0].get<size_t>(), 8 + n + offsets[1].get<size_t>()};
}

// Flips (inverts) 16 bytes in the middle of tensor `name`'s bytes, as a bad disk or copy would.
void flip_16_bytes(const std::string& path, const std::string& name) {
  const auto [begin, end] = tensor_bytes_in_file(path, name);
  ASSERT_GE(end - begin, 16u) << name;
  auto bytes = read_file(path);
  for (size_t i = 0; i < 16; ++i) bytes[(begin + end) / 2 - 8 + i] ^= 0xff;
  std::ofstream(path, std::ios::binary) << bytes;
}

// A small model with parameters and buffers of two dtypes (BatchNorm's num_batches_tracked is int64).
struct Small : torch::nn::Module {
  Small() {
    embed = register_module("embed", torch::nn::Embedding(7, 4));
    linear = register_module("linear", torch::nn::Linear(4, 3));
    norm = register_module("norm", torch::nn::BatchNorm1d(3));
  }
  torch::Tensor forward(const torch::Tensor& ids) { return norm(linear(embed(ids))); }
  torch::nn::Embedding embed{nullptr};
  torch::nn::Linear linear{nullptr};
  torch::nn::BatchNorm1d norm{nullptr};
};

void train_steps(Small& model, torch::optim::Optimizer& opt, int steps) {
  for (int i = 0; i < steps; ++i) {
    opt.zero_grad();
    model.forward(torch::tensor({1, 2, 3, 5, 6}, torch::kLong)).pow(2).sum().backward();
    opt.step();
  }
}

void expect_same_parameters(Small& a, Small& b) {
  const auto pa = a.named_parameters(), pb = b.named_parameters();
  for (const auto& p : pa) EXPECT_TRUE(torch::equal(p.value(), pb[p.key()])) << p.key();
  const auto ba = a.named_buffers(), bb = b.named_buffers();
  for (const auto& x : ba) EXPECT_TRUE(torch::equal(x.value(), bb[x.key()])) << x.key();
}

CheckpointContents contents() {
  CheckpointContents c{"linear", "lr = 0.5\n", {{"vocab.txt", "a\nb\n"}, {"empty", ""}}, {}};
  c.state.step = 2;
  c.state.epoch = 1;
  c.state.batch_index = 3;
  c.state.lr = 0.1 + 0.2;  // not exactly 0.3: the text must keep every bit
  c.state.schedule_state = {std::numeric_limits<double>::infinity(), 1.0 / 3, -0.0};
  return c;
}

class CheckpointFile : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = test::fresh_temp_dir("checkpoint"); }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name = "c.pt") const { return (dir_ / name).string(); }
  fs::path dir_;
};

// Each optimizer the Trainer makes: saved after 2 steps, loaded into a fresh model and
// optimizer, one more step on both gives bit-identical parameters (the state came back whole).
TEST_F(CheckpointFile, EveryOptimizerResumesBitIdentically) {
  using namespace torch::optim;
  using Make = std::function<std::unique_ptr<Optimizer>(Small&)>;
  const std::vector<std::pair<std::string, Make>> optimizers = {
      {"adam", [](Small& m) { return std::make_unique<Adam>(m.parameters(), AdamOptions(0.1)); }},
      {"adam amsgrad", [](Small& m) { return std::make_unique<Adam>(m.parameters(), AdamOptions(0.1).amsgrad(true)); }},
      {"adamw", [](Small& m) { return std::make_unique<AdamW>(m.parameters(), AdamWOptions(0.1)); }},
      {"sgd momentum", [](Small& m) { return std::make_unique<SGD>(m.parameters(), SGDOptions(0.1).momentum(0.9)); }},
      {"adagrad", [](Small& m) { return std::make_unique<Adagrad>(m.parameters(), AdagradOptions(0.1)); }}};
  for (const auto& [name, make] : optimizers) {
    SCOPED_TRACE(name);
    torch::manual_seed(1);
    Small a;
    auto opt_a = make(a);
    train_steps(a, *opt_a, 2);
    save_checkpoint(path(), a, opt_a.get(), contents());
    torch::manual_seed(2);
    Small b;
    auto opt_b = make(b);
    load_checkpoint_weights(path(), b, opt_b.get(), /*restore_rng=*/false);
    expect_same_parameters(a, b);
    train_steps(a, *opt_a, 1);
    train_steps(b, *opt_b, 1);
    expect_same_parameters(a, b);
  }
}

// Training state, artifacts and the CPU generator come back exactly.
TEST_F(CheckpointFile, StateArtifactsAndRngRoundTrip) {
  Small model;
  save_checkpoint(path(), model, nullptr, contents());
  const auto expected = torch::rand({5});
  const auto c = read_checkpoint_header(path());
  const auto want = contents();
  EXPECT_EQ(c.task, want.task);
  EXPECT_EQ(c.config, want.config);
  EXPECT_EQ(c.artifacts, want.artifacts);
  EXPECT_EQ(c.state.step, 2);
  EXPECT_EQ(c.state.epoch, 1);
  EXPECT_EQ(c.state.batch_index, 3);
  EXPECT_EQ(c.state.lr, want.state.lr);
  EXPECT_EQ(c.state.best_valid_loss, want.state.best_valid_loss);
  ASSERT_EQ(c.state.schedule_state.size(), 3u);
  EXPECT_EQ(c.state.schedule_state[0], std::numeric_limits<double>::infinity());
  EXPECT_EQ(c.state.schedule_state[1], 1.0 / 3);
  EXPECT_TRUE(std::signbit(c.state.schedule_state[2]));
  load_checkpoint_weights(path(), model, nullptr, /*restore_rng=*/true);
  EXPECT_TRUE(torch::equal(torch::rand({5}), expected));
  // An optimizer to resume needs the optimizer state this file lacks.
  torch::optim::SGD sgd(model.parameters(), torch::optim::SGDOptions(0.1));
  EXPECT_NE(test::user_error_of([&] { load_checkpoint_weights(path(), model, &sgd, false); }).find("no optimizer state"),
            std::string::npos);
}

// The file is the safetensors layout: a plain Python reader (struct + json, following the
// format's rules: contiguous offsets from 0 to the end, string metadata) finds every tensor
// with the values the model holds.
TEST_F(CheckpointFile, IsTheSafetensorsLayout) {
  torch::manual_seed(3);
  Small model;
  torch::optim::Adam adam(model.parameters(), torch::optim::AdamOptions(0.1));
  train_steps(model, adam, 1);
  save_checkpoint(path(), model, &adam, contents());
  const auto py = test::run_python(R"PY(
import json, struct, sys
data = open(sys.argv[1], "rb").read()
n, = struct.unpack("<Q", data[:8])
header = json.loads(data[8:8 + n])
meta = header.pop("__metadata__")
assert all(isinstance(k, str) and isinstance(v, str) for k, v in meta.items())
assert n % 8 == 0
sizes = {"F64": 8, "F32": 4, "I64": 8, "U8": 1}
fmt = {"F32": "f", "I64": "q"}
end = 0
for name, t in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
    b, e = t["data_offsets"]
    assert b == end, name
    count = 1
    for d in t["shape"]:
        count *= d
    assert e - b == count * sizes[t["dtype"]], name
    end = e
    if t["dtype"] in fmt:
        values = struct.unpack("<%d%s" % (count, fmt[t["dtype"]]), data[8 + n + b:8 + n + e])
        print(name, t["dtype"], t["shape"], repr(sum(values)))
empty = [name for name, t in header.items() if t["data_offsets"][0] == t["data_offsets"][1]]
print("empty", *empty)
assert 8 + n + end == len(data)
print("format", meta["format"], "task", meta["task"], "steps", json.loads(meta["state"])["step"])
)PY", {path()});
  ASSERT_EQ(py.status, 0) << py.err;
  auto line = [](const std::string& name, const torch::Tensor& t) {
    std::ostringstream s;
    s << name << (t.scalar_type() == torch::kFloat ? " F32 [" : " I64 [");
    for (size_t i = 0; i < t.sizes().size(); ++i) s << (i ? ", " : "") << t.size(i);
    return s.str() + "]";
  };
  for (const auto& p : model.named_parameters())
    EXPECT_NE(py.out.find(line("model." + p.key(), p.value())), std::string::npos) << p.key() << "\n" << py.out;
  EXPECT_NE(py.out.find("model.norm.num_batches_tracked I64 [] 1\n"), std::string::npos) << py.out;
  EXPECT_NE(py.out.find("optimizer.0.step I64 [] 1\n"), std::string::npos) << py.out;
  EXPECT_NE(py.out.find("optimizer.1.exp_avg F32 [3, 4]"), std::string::npos) << py.out;
  EXPECT_NE(py.out.find("empty artifact.empty\n"), std::string::npos) << py.out;  // a 0-byte file: shape [0]
  EXPECT_NE(py.out.find("format nlpzoo-checkpoint-v2 task linear steps 2\n"), std::string::npos) << py.out;
  // The sum Python computed over the raw bytes, in float64, of a parameter equals ours.
  const auto weight = model.linear->weight.contiguous();
  double sum = 0;  // in Python's order
  for (int64_t i = 0; i < weight.numel(); ++i) sum += weight.data_ptr<float>()[i];
  const std::string prefix = "model.linear.weight F32 [3, 4] ";
  const auto at = py.out.find(prefix);
  ASSERT_NE(at, std::string::npos) << py.out;
  EXPECT_EQ(std::stod(py.out.substr(at + prefix.size())), sum);
}

// 16 flipped bytes in one tensor: loading names the file and that tensor; a changed config
// character (the metadata) is caught too.
TEST_F(CheckpointFile, CorruptionNamesTheFirstBadTensor) {
  Small model;
  save_checkpoint(path(), model, nullptr, contents());
  const auto good = read_file(path());
  flip_16_bytes(path(), "model.embed.weight");
  auto error = test::user_error_of([&] { load_checkpoint_weights(path(), model, nullptr, false); });
  EXPECT_NE(error.find(path()), std::string::npos) << error;
  EXPECT_NE(error.find("tensor 'model.embed.weight' is corrupt"), std::string::npos) << error;
  // The header reads no parameter (a run's step, config and tokenizers are all it gives): a
  // flipped artifact byte is what it finds.
  EXPECT_NO_THROW(read_checkpoint_header(path()));
  auto bytes = good;
  bytes[tensor_bytes_in_file(path(), "artifact.vocab.txt").first] ^= 0x01;
  std::ofstream(path(), std::ios::binary) << bytes;
  error = test::user_error_of([&] { read_checkpoint_header(path()); });
  EXPECT_NE(error.find("tensor 'artifact.vocab.txt' is corrupt"), std::string::npos) << error;
  // The metadata: "lr = 0.5" becomes "lr = 0.6" (same length, valid JSON).
  bytes = good;
  bytes.replace(bytes.find("lr = 0.5"), 8, "lr = 0.6");
  std::ofstream(path(), std::ios::binary) << bytes;
  error = test::user_error_of([&] { read_checkpoint_header(path()); });
  EXPECT_NE(error.find("metadata"), std::string::npos) << error;
  // A truncated file names the file.
  std::ofstream(path(), std::ios::binary) << good.substr(0, good.size() - 10);
  error = test::user_error_of([&] { read_checkpoint_header(path()); });
  EXPECT_NE(error.find(path()), std::string::npos) << error;
}

// Loading the parameters alone (evaluate, translate) neither reads nor checks the optimizer
// state: a damaged moment does not stop inference, and the parameters arrive exact; resuming,
// which needs it, names it. A tensor cut short is refused either way.
TEST_F(CheckpointFile, ParametersLoadWithoutReadingTheOptimizerState) {
  torch::manual_seed(5);
  Small trained;
  torch::optim::Adam opt(trained.parameters(), torch::optim::AdamOptions(0.1));
  train_steps(trained, opt, 2);
  save_checkpoint(path(), trained, &opt, contents());
  const auto good = read_file(path());
  flip_16_bytes(path(), "optimizer.0.exp_avg");
  Small fresh;
  load_checkpoint_weights(path(), fresh, nullptr, /*restore_rng=*/false);
  expect_same_parameters(trained, fresh);
  torch::optim::Adam opt_fresh(fresh.parameters(), torch::optim::AdamOptions(0.1));
  const auto error = test::user_error_of([&] { load_checkpoint_weights(path(), fresh, &opt_fresh, true); });
  EXPECT_NE(error.find("tensor 'optimizer.0.exp_avg' is corrupt"), std::string::npos) << error;
  // Cut inside the optimizer state, the file leaves the later tensors' offsets beyond its end,
  // which the layout check sees without reading those bytes.
  const auto [begin, end] = tensor_bytes_in_file(path(), "optimizer.0.exp_avg");
  std::ofstream(path(), std::ios::binary) << good.substr(0, begin + 4);
  const auto cut = test::user_error_of([&] { load_checkpoint_weights(path(), fresh, nullptr, false); });
  EXPECT_NE(cut.find(path()), std::string::npos) << cut;
  EXPECT_NE(cut.find("not a valid checkpoint file"), std::string::npos) << cut;
}

// A version-1 file (written by the old code, kept for this test) loads bit-identically with a
// one-line warning; upgrade_checkpoint rewrites it as version 2, which loads identically
// without a warning; upgrading again changes nothing.
TEST_F(CheckpointFile, Version1LoadsWithAWarningAndUpgradesExactly) {
  torch::manual_seed(4);
  Small a;
  torch::optim::Adam opt_a(a.parameters(), torch::optim::AdamOptions(0.1));
  train_steps(a, opt_a, 2);
  save_checkpoint_v1(path(), a, &opt_a, contents());
  ASSERT_TRUE(is_checkpoint_v1(path()));
  const auto resume_and_step = [&]() {
    torch::manual_seed(5);
    Small b;
    torch::optim::Adam opt_b(b.parameters(), torch::optim::AdamOptions(0.1));
    load_checkpoint_weights(path(), b, &opt_b, /*restore_rng=*/false);
    expect_same_parameters(a, b);
    train_steps(b, opt_b, 1);
    return b.linear->weight.clone();
  };
  testing::internal::CaptureStderr();
  const auto from_v1 = resume_and_step();
  const auto warning = testing::internal::GetCapturedStderr();
  EXPECT_NE(warning.find("warning: " + path() + " is a version-1 checkpoint, read through TorchScript"), std::string::npos)
      << warning;
  EXPECT_EQ(std::count(warning.begin(), warning.end(), '\n'), 1) << warning;
  const auto header_v1 = read_checkpoint_header(path());
  EXPECT_TRUE(upgrade_checkpoint(path()));
  EXPECT_FALSE(is_checkpoint_v1(path()));
  testing::internal::CaptureStderr();
  EXPECT_TRUE(torch::equal(resume_and_step(), from_v1));
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  const auto header_v2 = read_checkpoint_header(path());
  EXPECT_EQ(header_v2.artifacts, header_v1.artifacts);
  EXPECT_EQ(header_v2.config, header_v1.config);
  EXPECT_EQ(header_v2.state.lr, header_v1.state.lr);
  const auto v2 = read_file(path());
  EXPECT_FALSE(upgrade_checkpoint(path()));
  EXPECT_EQ(read_file(path()), v2);
}

// A version-1 archive whose weight bytes were changed after it was written is refused, naming
// the record, rather than upgraded into a version-2 file whose fresh CRCs would bless the
// changed value (LibTorch's zip reader does not check the records' CRC-32s).
TEST_F(CheckpointFile, Version1WithAFlippedWeightByteIsRefusedNamingTheRecord) {
  torch::manual_seed(6);
  Small a;
  save_checkpoint_v1(path(), a, nullptr, contents());
  std::string bytes = read_file(path());
  const auto w = a.linear->weight.contiguous();
  const std::string pattern(reinterpret_cast<const char*>(w.data_ptr<float>()), 8);  // its first two values
  const auto at = bytes.find(pattern);
  ASSERT_NE(at, std::string::npos);
  ASSERT_EQ(bytes.find(pattern, at + 1), std::string::npos);
  bytes[at + 2] = static_cast<char>(bytes[at + 2] ^ 0x40);
  atomic_write_text(path(), bytes);
  for (const auto& e : {test::user_error_of([&] { read_checkpoint_header(path()); }),
                        test::user_error_of([&] { upgrade_checkpoint(path()); })}) {
    EXPECT_NE(e.find(path() + ": corrupt version-1 checkpoint (record "), std::string::npos) << e;
    EXPECT_NE(e.find("does not match its CRC-32"), std::string::npos) << e;
  }
  EXPECT_EQ(read_file(path()), bytes);  // nothing rewritten
}

// A checksum-valid checkpoint whose training state or RNG state was written by hand is refused
// with the file and the field named (before: a negative step resumed with exit 0, and a float
// RNG state failed with LibTorch's "RNG state must be a torch.ByteTensor", naming no file).
TEST_F(CheckpointFile, HandMadeStateIsCheckedAndNamesTheFileAndField) {
  Small a;
  auto c = contents();
  c.state.step = -5;
  save_checkpoint(path(), a, nullptr, c);
  EXPECT_EQ(test::user_error_of([&] { read_checkpoint_header(path()); }),
            path() + ": invalid training state: field 'step' is -5, must be >= 0");
  c = contents();
  c.state.world_size = 0;
  save_checkpoint(path(), a, nullptr, c);
  EXPECT_EQ(test::user_error_of([&] { read_checkpoint_header(path()); }),
            path() + ": invalid training state: field 'world_size' is 0, must be >= 1");
  std::vector<std::pair<std::string, torch::Tensor>> tensors;
  for (const auto& p : a.named_parameters()) tensors.emplace_back("model." + p.key(), p.value());
  for (const auto& b : a.named_buffers()) tensors.emplace_back("model." + b.key(), b.value());
  tensors.emplace_back("rng.cpu", torch::zeros({5}));
  write_checkpoint_tensors(path(), contents(), tensors);
  Small b;
  const auto e = test::user_error_of([&] { load_checkpoint_weights(path(), b, nullptr, /*restore_rng=*/true); });
  EXPECT_EQ(e, path() + ": RNG state 'rng.cpu' must be a 1-D uint8 tensor, got Float of shape [5]");
  tensors.back().second = torch::zeros({5}, torch::kUInt8);
  write_checkpoint_tensors(path(), contents(), tensors);
  EXPECT_NE(test::user_error_of([&] { load_checkpoint_weights(path(), b, nullptr, /*restore_rng=*/true); })
                .find(path() + ": RNG state 'rng.cpu' is not one this generator wrote"),
            std::string::npos);
  // The parameters alone still load from it.
  load_checkpoint_weights(path(), b, nullptr, /*restore_rng=*/false);
  expect_same_parameters(a, b);
}

std::atomic<int> g_printed{0};
void count_print(const std::string&) { ++g_printed; }

// A crafted file carrying TorchScript code (a __setstate__ that prints, as torch::jit::load
// shows by running it) runs none of it: loading refuses it, naming the method. The same file
// under any name goes through this path, since nothing else reads a zip.
// Fine-tuning's partial load: a prefix of another model's parameters, by name, shapes checked
// in full before anything is copied.
TEST(PartialLoad, CopiesThePrefixByNameAndReportsWhatStaysFresh) {
  struct Net : torch::nn::Module {
    Net(int64_t in, int64_t out) {
      encoder = register_module("encoder", torch::nn::Linear(in, 3));
      pooler = register_module("pooler", torch::nn::Linear(3, 3));
      head = register_module("head", torch::nn::Linear(3, out));
    }
    torch::nn::Linear encoder{nullptr}, pooler{nullptr}, head{nullptr};
  };
  torch::manual_seed(3);
  Net source(4, 2), target(4, 5);
  std::map<std::string, torch::Tensor> tensors;
  for (const auto& p : source.named_parameters()) tensors[p.key()] = p.value().detach();
  const auto head_before = target.head->weight.clone();
  const auto pooler_before = target.pooler->weight.clone();

  const auto report = load_parameters_with_prefix(target, tensors, "", "run/checkpoint_last.pt", "the model", "init_from",
                                                  [](const std::string& name) {
                                                    return name.rfind("pooler.", 0) == 0 || name.rfind("head.", 0) == 0;
                                                  });
  EXPECT_EQ(report.loaded, (std::vector<std::string>{"encoder.weight", "encoder.bias"}));
  EXPECT_EQ(report.loaded_values, 4 * 3 + 3);
  EXPECT_EQ(report.fresh, (std::vector<std::string>{"pooler.weight", "pooler.bias", "head.weight", "head.bias"}));
  EXPECT_EQ(report.fresh_values, 3 * 3 + 3 + 3 * 5 + 5);
  EXPECT_TRUE(torch::equal(target.encoder->weight, source.encoder->weight));
  EXPECT_TRUE(torch::equal(target.pooler->weight, pooler_before));
  EXPECT_TRUE(torch::equal(target.head->weight, head_before));

  // The prefix alone chooses too; a shape that differs stops the load before any copy.
  Net other(4, 5);
  const auto encoder_before = other.encoder->weight.clone();
  EXPECT_EQ(test::user_error_of([&] {
              load_parameters_with_prefix(other, tensors, "", "run/checkpoint_last.pt", "the model", "init_from");
            }),
            "run/checkpoint_last.pt: tensor 'head.weight' has shape [2, 3] but the model's is [5, 3] (init_from)");
  EXPECT_TRUE(torch::equal(other.encoder->weight, encoder_before));
  tensors.erase("pooler.bias");
  EXPECT_EQ(test::user_error_of([&] {
              load_parameters_with_prefix(other, tensors, "pooler.", "run/checkpoint_last.pt", "the model", "init_from");
            }),
            "run/checkpoint_last.pt: has no tensor 'pooler.bias' for the model (init_from)");
  EXPECT_EQ(load_parameters_with_prefix(other, tensors, "encoder.", "r", "the model", "init_from").loaded.size(), 2u);
}

TEST_F(CheckpointFile, CraftedTorchScriptRunsNothing) {
  torch::jit::Module crafted("Crafted");
  crafted.register_attribute("format", c10::TensorType::get(), torch::tensor({1}));
  crafted.define(R"(
def __getstate__(self):
    return (self.format,)
def __setstate__(self, state: Tuple[Tensor]):
    print("crafted code ran")
    self.format = state[0]
)");
  crafted.save(path());
  const auto previous = torch::jit::getPrintHandler();
  torch::jit::setPrintHandler(count_print);
  torch::jit::load(path());  // the control: loading through TorchScript runs the method
  EXPECT_EQ(g_printed.exchange(0), 1);
  auto error = test::user_error_of([&] { read_checkpoint_header(path()); });
  EXPECT_NE(error.find("TorchScript code (method '__getstate__'"), std::string::npos) << error;
  Small model;
  error = test::user_error_of([&] { load_checkpoint_weights(path(), model, nullptr, false); });
  EXPECT_NE(error.find("refused"), std::string::npos) << error;
  EXPECT_NE(test::user_error_of([&] { upgrade_checkpoint(path()); }).find("refused"), std::string::npos);
  EXPECT_EQ(g_printed.load(), 0);
  torch::jit::setPrintHandler(previous);
}

using test::run_cli;
using test::shell_quote;

class RegressionCheckpointCli : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = test::fresh_temp_dir("checkpoint_cli");
    test::write_numbers_corpus(root_ / "data");
  }
  void TearDown() override { fs::remove_all(root_); }
  // Arguments of a tiny translation run into root_/run.
  std::string train(const std::string& extra) const {
    return "train --config " + shell_quote(std::string(NLPZOO_SOURCE_DIR) + "/configs/seq2seq-bahdanau-es-en.ini") +
           " --data-dir " + shell_quote((root_ / "data").string()) + " --run-dir " + run_q() +
           " --src_vocab_size 60 --tgt_vocab_size 60 --embed_dim 16 --hidden_size 32 --attention_dim 16 --dropout 0"
           " --lr 0.01 --max_tokens 400 --log_interval 1 --device cpu " + extra;
  }
  fs::path run() const { return root_ / "run"; }
  std::string run_q() const { return shell_quote(run().string()); }
  std::string last() const { return (run() / "checkpoint_last.pt").string(); }
  fs::path root_;
};

// The pid of a process that has ended.
std::string dead_pid() {
  const auto r = test::run_command("sh -c 'echo $$'");
  return r.out.substr(0, r.out.find('\n'));
}

void touch(const fs::path& path) { std::ofstream(path) << "partial"; }

// SIGTERM (timeout, Slurm, Kubernetes) saves a resumable checkpoint like Ctrl-C and exits 143.
TEST_F(RegressionCheckpointCli, SigtermSavesAResumableCheckpointAndExits143) {
  const auto metrics = shell_quote((run() / "metrics.jsonl").string());
  const auto log = shell_quote((root_ / "log.txt").string());  // outside the run folder, made before it
  const std::string script = std::string("NLPZOO_THREADS=1 ") + shell_quote(NLPZOO_CLI) + " " +
                             train("--max-steps 100000 --valid_interval 100000") + " >" + log + " & pid=$!; "
                             "for i in $(seq 1 600); do [ -s " + metrics + " ] && break; sleep 0.1; done; "
                             "kill -TERM $pid; wait $pid; echo status=$?";
  auto r = test::run_command(script);
  EXPECT_NE(r.out.find("status=143"), std::string::npos) << r.out << r.err;
  // Not killed by the signal: the run said why it stopped and saved before its first validation.
  EXPECT_NE(read_file((root_ / "log.txt").string()).find("interrupted (SIGTERM): saved"), std::string::npos);
  ASSERT_TRUE(fs::exists(last())) << r.err;
  const int64_t saved = read_checkpoint_header(last()).state.step;
  ASSERT_GE(saved, 1);
  r = run_cli("train --run-dir " + run_q() + " --resume --max-steps " + std::to_string(saved + 2) + " --device cpu");
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("at step " + std::to_string(saved) + ","), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("done: " + std::to_string(saved + 2) + " updates"), std::string::npos) << r.out;
}

// A process killed while writing a checkpoint leaves checkpoint_*.pt.tmp.<pid>: the next start
// and the next --resume remove those of ended processes (and only those), saying so.
TEST_F(RegressionCheckpointCli, StaleTemporaryFilesAreRemovedOnStartAndResume) {
  fs::create_directories(run());
  const auto stale = run() / ("checkpoint_last.pt.tmp." + dead_pid());
  const auto live = run() / ("checkpoint_best.pt.tmp." + std::to_string(getpid()));  // this test runs
  touch(stale);
  touch(live);
  auto r = run_cli(train("--max-steps 2 --valid_interval 2"));
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(fs::exists(live));
  EXPECT_NE(r.out.find("removed " + stale.string()), std::string::npos) << r.out;
  const auto stale_again = run() / ("config.ini.tmp." + dead_pid());
  touch(stale_again);
  r = run_cli("train --run-dir " + run_q() + " --resume --max-steps 3 --device cpu");
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_FALSE(fs::exists(stale_again));
  EXPECT_NE(r.out.find("removed " + stale_again.string()), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(live));
}

// A folder holding a best checkpoint but no last one is a run too: a fresh train refuses it.
TEST_F(RegressionCheckpointCli, FreshTrainRefusesAFolderWithOnlyABestCheckpoint) {
  ASSERT_EQ(run_cli(train("--max-steps 2 --valid_interval 2")).status, 0);
  fs::remove(last());
  const auto best = read_file((run() / "checkpoint_best.pt").string());
  const auto r = run_cli(train("--max-steps 2 --valid_interval 2"));
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("checkpoint_best.pt"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--resume"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("another --run-dir"), std::string::npos) << r.err;
  EXPECT_EQ(read_file((run() / "checkpoint_best.pt").string()), best);
}

// 16 flipped bytes in a parameter: evaluate and --resume fail with status 1, naming the file
// and the tensor, instead of scoring or training on the damage.
TEST_F(RegressionCheckpointCli, CorruptedCheckpointFailsEvaluateAndResume) {
  ASSERT_EQ(run_cli(train("--max-steps 2 --valid_interval 2")).status, 0);
  // The best checkpoint is the last one's file (a hard link): one flip corrupts both names.
  ASSERT_TRUE(fs::equivalent(run() / "checkpoint_best.pt", run() / "checkpoint_last.pt"));
  flip_16_bytes((run() / "checkpoint_last.pt").string(), "model.src_embed.weight");
  auto r = run_cli("evaluate --run-dir " + run_q() + " --split valid --no-bleu --device cpu");
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("checkpoint_best.pt: tensor 'model.src_embed.weight' is corrupt"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
  r = run_cli("train --run-dir " + run_q() + " --resume --max-steps 4 --device cpu");
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("checkpoint_last.pt: tensor 'model.src_embed.weight' is corrupt"), std::string::npos) << r.err;
}

// A run folder of version-1 checkpoints: evaluate reads them with the warning; `checkpoint
// upgrade RUN_DIR` rewrites both; evaluate then prints the same scores without the warning.
TEST_F(RegressionCheckpointCli, CheckpointUpgradeRewritesAVersion1RunFolder) {
  ASSERT_EQ(run_cli(train("--max-steps 2 --valid_interval 2")).status, 0);
  for (const char* name : {"checkpoint_best.pt", "checkpoint_last.pt"}) {
    const auto path = (run() / name).string();
    auto loaded = load_run(path, torch::kCPU);
    save_checkpoint_v1(path, *loaded.task->model(), nullptr, loaded.header);
  }
  const std::string evaluate = "evaluate --run-dir " + run_q() + " --split valid --no-bleu --device cpu";
  const auto before = run_cli(evaluate);
  ASSERT_EQ(before.status, 0) << before.err;
  EXPECT_NE(before.err.find("is a version-1 checkpoint, read through TorchScript"), std::string::npos) << before.err;
  const auto r = run_cli("checkpoint upgrade " + run_q());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("checkpoint_best.pt: upgraded to version 2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("checkpoint_last.pt: upgraded to version 2"), std::string::npos) << r.out;
  EXPECT_FALSE(is_checkpoint_v1(last()));
  const auto after = run_cli(evaluate);
  ASSERT_EQ(after.status, 0) << after.err;
  EXPECT_EQ(after.err.find("version-1"), std::string::npos) << after.err;
  EXPECT_EQ(after.out, before.out);
  EXPECT_NE(run_cli("checkpoint upgrade " + run_q()).out.find("checkpoint_last.pt: already version 2"), std::string::npos);
  EXPECT_EQ(run_cli("checkpoint upgrade " + shell_quote(root_.string())).status, 1);  // no checkpoint there
}

}  // namespace

// Averaging is fairseq's element-wise mean: three Small models' parameters and float buffers
// averaged by hand equal the averaged file's; the int64 counter is the last file's; the
// header is the last file's; no optimizer state. The periodic checkpoints are found by step,
// not by name order (checkpoint_9 before checkpoint_10).
TEST_F(CheckpointFile, AverageIsTheElementWiseMeanOfTheModelTensors) {
  std::vector<std::shared_ptr<Small>> models;
  std::vector<std::string> paths;
  for (int i = 0; i < 3; ++i) {
    torch::manual_seed(10 + i);
    models.push_back(std::make_shared<Small>());
    auto opt = torch::optim::SGD(models[i]->parameters(), torch::optim::SGDOptions(0.1));
    train_steps(*models[i], opt, i + 1);  // BatchNorm's running stats and counter differ too
    auto c = contents();
    c.state.step = 8 + i;
    paths.push_back(path("checkpoint_" + std::to_string(8 + i) + ".pt"));
    save_checkpoint(paths.back(), *models[i], &opt, c);
  }
  std::ofstream(path("checkpoint_last.pt")) << "not a periodic checkpoint";
  const auto found = periodic_checkpoints(dir_.string());
  ASSERT_EQ(found.size(), 3u);
  EXPECT_EQ(found[0], std::make_pair(int64_t{8}, paths[0]));
  EXPECT_EQ(found[2], std::make_pair(int64_t{10}, paths[2]));

  average_checkpoints(paths, path("avg.pt"));
  Small averaged;
  load_checkpoint_weights(path("avg.pt"), averaged, nullptr, /*restore_rng=*/false);
  for (const auto& p : averaged.named_parameters()) {
    const auto want = (models[0]->named_parameters()[p.key()] + models[1]->named_parameters()[p.key()] +
                       models[2]->named_parameters()[p.key()]) / 3;
    EXPECT_LT((p.value() - want).abs().max().item<float>(), 1e-6) << p.key();
  }
  const auto mean = averaged.named_buffers()["norm.running_mean"];
  EXPECT_TRUE(torch::allclose(mean, (models[0]->named_buffers()["norm.running_mean"] +
                                     models[1]->named_buffers()["norm.running_mean"] +
                                     models[2]->named_buffers()["norm.running_mean"]) / 3, 1e-6, 1e-7));
  EXPECT_EQ(averaged.named_buffers()["norm.num_batches_tracked"].item<int64_t>(), 3);  // the last file's
  EXPECT_EQ(read_checkpoint_header(path("avg.pt")).state.step, 10);
  auto opt = torch::optim::SGD(averaged.parameters(), torch::optim::SGDOptions(0.1));
  EXPECT_NE(test::user_error_of([&] { load_checkpoint_weights(path("avg.pt"), averaged, &opt, false); })
                .find("no optimizer state"),
            std::string::npos);

  // Another model's file is named, with the tensor that differs.
  torch::nn::Linear other(4, 5);
  save_checkpoint(path("other.pt"), *other, nullptr, contents());
  const auto error = test::user_error_of([&] { average_checkpoints({path("other.pt"), paths[2]}, path("bad.pt")); });
  EXPECT_EQ(error.rfind(path("other.pt") + ": tensor 'model.", 0), 0u) << error;
  EXPECT_FALSE(fs::exists(path("bad.pt")));
}
