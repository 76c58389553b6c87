#pragma once
// The data side of masked-LM pre-training, shared by the tasks that pre-train a BERT encoder on
// `nlpzoo data english`: masked_lm (Devlin et al. 2019 with RoBERTa's recipe) and electra
// (Clark et al. 2020, whose generator is fed the same masked sequences).
//
// Data: <data_dir>/<train_file> (default english.txt, as `nlpzoo data english --out DIR` writes
// it), one sentence per line. Line i (0-based) with (i + 1) % valid_every == 0 is held out as
// the valid split (the word-vector tasks' rule, train/tasks/word_corpus.h); there is no test split.
// Tokenizer: a SentencePiece model trained on the train split's lines (<run_dir>/spm.model, stored
// in every checkpoint as "spm.model") with [CLS] [SEP] [MASK] at ids 4, 5, 6 (datasets/special_ids.h).
// Sequences: each split's sentences packed in file order into [CLS] s_i s_i+1 ... [SEP] of at most
// max_positions pieces (datasets/masked_lm.h), segment ids 0. Batches: batch_size sequences;
// epoch e visits the train sequences in a permutation drawn from (seed, e), the valid ones in order.
// Masking (dynamic): sequence k of the train split is masked in epoch e by a generator seeded
// from (seed, e, k), so every epoch masks differently and any batch can be remade alone
// (--resume is exact); the valid split has one fixed mask (seeded from k alone), the same for
// every run. mask_prob of the non-special positions are predicted (80% [MASK], 10% random, 10% kept).
// NSP (masked_lm's nsp = true; Devlin et al. sec. 3.1, task #2): instead of packed sequences, the
// split's sentences are grouped in file order into chunks of at most max_positions - 3 pieces,
// and chunk k becomes [CLS] A [SEP] B [SEP] (segments 0/1), B the text that follows A or, half of
// the time, a span of another chunk (datasets/masked_lm.h next_sentence_pair), drawn like the
// mask from (seed, epoch, k) for train and from k alone for valid.
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "datasets/masked_lm.h"
#include "datasets/tokenizer.h"
#include "models/bert/bert.h"
#include "train/task.h"
#include "train/tasks/component_schemas.h"
#include "train/tasks/mask_filler.h"

namespace nlpzoo {

/// The size keys of a BERT encoder (Devlin et al. 2019), the pre-trained runs' and the
/// fine-tuned classifier's: a Transformer stack (positions learned, the only kind BERT takes),
/// num_layers, max_positions and type_vocab_size. Reading also checks positions = learned.
struct BertKeys {
  TransformerStackOptions stack = bert_stack();
  int64_t num_layers = 4;       // encoder layers L
  int64_t max_positions = 128;  // position table rows, [CLS] and [SEP] included
  int64_t type_vocab_size = 2;  // segment embeddings
  double layer_norm_eps = 1e-5;  // LibTorch's default; Google's published checkpoints use 1e-12
  void bind(OptionBinder& b);
  /// BertOptions of these sizes over `vocab_size` pieces (nsp false).
  BertOptions options(int64_t vocab_size) const;
  /// BERT's defaults of the stack: GELU, learned positions, attention dropout 0.1.
  static TransformerStackOptions bert_stack();
};

/// The corpus, vocabulary, masking and batching keys of masked-LM pre-training (masked_lm's and
/// electra's).
struct PretrainingCorpusOptions {
  std::string train_file = "english.txt";
  std::string corpus_format = "text";  // text (a sentence per line) or tsv (a task's training file)
  int64_t valid_every = 200;  // line i with (i+1) % valid_every == 0 is held out
  int64_t vocab_size = 8000;  // at most; the tokenizer's, once it is trained
  double mask_prob = 0.15;
  bool whole_word_masking = false;
  int64_t batch_size = 32;
  bool normalize_words = true;
  void bind(OptionBinder& b);
  /// The keys without mask_prob and whole_word_masking (`masking` false): a pre-training task
  /// that masks nothing reads the corpus alike.
  void bind_keys(OptionBinder& b, bool masking);
  void bind_masking(OptionBinder& b);
};

/// Makes the BERT size keys of `config` (BertKeys, dropout aside) those of `source`, the
/// resolved config of the pre-trained run `dir` that init_from names. Throws UserError naming
/// the key when the user chose (Config::chosen) another value.
void adopt_bert_keys(const std::string& dir, const Config& source, Config& config);

/// The corpus keys, the tokenizer's and BERT's size keys with BERT's defaults: the schema every
/// pre-training task starts from.
ConfigSchema pretraining_corpus_schema();

/// The parameters AdamW should not decay (BERT's exclude_from_weight_decay: biases and LayerNorm
/// weights, i.e. every parameter of fewer than 2 dimensions), by their names in `model`.
std::vector<std::string> parameters_without_weight_decay(const torch::nn::Module& model);

/// The corpus of a pre-training run, read, tokenized, packed (or chunked for NSP), and cut into
/// masked batches (see the file comment). Holds no model.
class MaskedLmData {
 public:
  /// Reads context.splits of `options.train_file` and trains (or restores) the tokenizer;
  /// writes the tokenizer's vocabulary size into options.vocab_size. `task_name` names the task
  /// in errors. Throws UserError for a test split, a missing corpus, a split without text and
  /// a tokenizer without [CLS] [SEP] [MASK].
  void setup(PretrainingCorpusOptions& options, bool nsp, int64_t max_positions, uint64_t seed, const Config& config,
             const TaskContext& context, const std::string& task_name);

  /// ceil(examples / batch_size).
  int64_t num_batches(Split split) const;
  /// The examples (indices into the split) of batch `index` in epoch `epoch`: batch_size of the
  /// train split's permutation drawn from (seed, epoch), or of the valid split in order.
  /// Throws std::out_of_range for a batch that does not exist.
  std::vector<int64_t> batch_examples(Split split, int64_t epoch, int64_t index) const;
  /// tensors: "input" [B, S] int64 (masked; padded with pad id 0), "segments" [B, S] int64,
  /// "masked" [B, S] bool (positions to predict), "targets" [N] int64 (their original ids, in
  /// row-major order), with NSP "nsp_labels" [B] int64 (0: B follows A, 1: random, as BERT's
  /// next_sentence_labels); num_tokens = num_examples = N. With `sampling_noise` also "uniform"
  /// [N] float, one U[0, 1) draw per masked position from a stream seeded like the mask's
  /// ((seed, epoch, k) for train, k for valid), so that a task sampling replacements there
  /// (electra's generator) samples the same on every remake of the batch.
  Batch make_batch(Split split, int64_t epoch, int64_t index, bool sampling_noise = false) const;

  /// "spm.model": the SentencePiece model's bytes.
  std::map<std::string, std::string> artifacts() const { return {{"spm.model", tokenizer_->serialized()}}; }
  void restore_artifacts(const std::map<std::string, std::string>& blobs);
  /// Whether restore_artifacts gave the tokenizer (a checkpoint being loaded).
  bool restored() const { return !restored_spm_.empty(); }

  const Tokenizer& tokenizer() const { return *tokenizer_; }
  /// An export's extra files: "config.ini" and the tokenizer's (tokenizer_export_files).
  std::map<std::string, std::string> export_files(const std::string& config_ini) const;
  /// Their names, as export_torchscript returns them.
  static std::vector<std::string> names(const std::map<std::string, std::string>& files);
  /// The packed sequences of a split (each [CLS] ... [SEP]); empty with NSP. Throws UserError
  /// if not read.
  const std::vector<TokenIds>& sequences(Split split) const;
  /// Example k of a split in epoch e, unmasked: its packed sequence, or with NSP its
  /// next-sentence pair. Throws UserError if the split was not read.
  NextSentencePair example(Split split, int64_t epoch, int64_t k) const;
  const MaskingOptions& masking() const { return masking_; }
  int64_t max_positions() const { return max_positions_; }

  /// The pieces of a typed line as the model saw its corpus: with normalize_words (the form of
  /// `nlpzoo data english`) the text around each literal [MASK] is lowercased, accents folded
  /// and punctuation dropped (datasets/english_corpus.h normalize_words); and a bare "▁" piece
  /// before a [MASK] is dropped, because a masked word's own piece carried its "▁" in training
  /// (RoBERTa's <mask> strips the space before it alike).
  std::vector<int64_t> input_pieces(const std::string& line) const;

  /// Logits of a masked LM at the masked positions: (tokens [1, S], segments [1, S], masked
  /// [1, S] bool) -> [M, V].
  using MlmLogits = std::function<torch::Tensor(const torch::Tensor&, const torch::Tensor&, const torch::Tensor&)>;
  /// MaskFiller::fill_mask through `mlm_logits`: [CLS] input_pieces(line) [SEP] (cut to
  /// max_positions with a warning on stderr), the k most probable pieces at every [MASK]. The
  /// caller has put its model in eval mode on `device`. Throws UserError as MaskFiller says.
  std::vector<std::vector<MaskCandidate>> fill_mask(const std::string& line, int64_t k, const torch::Device& device,
                                                    const MlmLogits& mlm_logits) const;

 private:
  int64_t num_examples(Split split) const;  // sequences, or NSP chunks
  uint64_t example_seed(uint64_t train_salt, uint64_t valid_salt, Split split, int64_t epoch, int64_t k) const;

  std::optional<Tokenizer> tokenizer_;
  std::string restored_spm_;
  std::map<Split, std::vector<TokenIds>> sequences_;  // read-only after setup (empty with NSP)
  std::map<Split, std::vector<std::vector<TokenIds>>> chunks_;  // NSP only: sentences grouped
  int64_t max_positions_ = 128;
  bool nsp_ = false;
  bool normalize_words_ = true;
  MaskingOptions masking_;
  int64_t batch_size_ = 32;
  uint64_t seed_ = 0;
};

}  // namespace nlpzoo
