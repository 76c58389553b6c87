// libnlpzoo_spm: SentencePiece behind a C interface (see spm_shim.h for why).
// Compiled with hidden visibility; only the functions below are exported.
#include "datasets/sentencepiece_shim/spm_shim.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <vector>

// Exported by libsentencepiece but declared only in its private common.h. Train() logs the
// whole command line at INFO level before it parses --minloglevel, so lower it first.
namespace sentencepiece::logging {
void SetMinLogLevel(int v);
}

#define NLPZOO_SPM_EXPORT extern "C" __attribute__((visibility("default")))

struct nlpzoo_spm {
  sentencepiece::SentencePieceProcessor processor;
};

namespace {

char* copy_out(const std::string& s) {
  char* p = static_cast<char*>(std::malloc(s.size() + 1));
  if (p != nullptr) {
    std::memcpy(p, s.data(), s.size());
    p[s.size()] = '\0';
  }
  return p;
}

int fail(char** error, const std::string& message) {
  if (error != nullptr) *error = copy_out(message);
  return 1;
}

// Feeds caller-owned sentences to the trainer without copying them into a file first.
class ArraySentences : public sentencepiece::SentenceIterator {
 public:
  ArraySentences(const char* const* sentences, const size_t* lengths, size_t n)
      : sentences_(sentences), lengths_(lengths), n_(n) {
    load();
  }
  bool done() const override { return i_ >= n_; }
  void Next() override {
    ++i_;
    load();
  }
  const std::string& value() const override { return value_; }
  sentencepiece::util::Status status() const override { return {}; }

 private:
  void load() {
    if (i_ < n_) value_.assign(sentences_[i_], lengths_[i_]);
  }
  const char* const* sentences_;
  const size_t* lengths_;
  size_t n_;
  size_t i_ = 0;
  std::string value_;
};

}  // namespace

NLPZOO_SPM_EXPORT int nlpzoo_spm_abi(void) { return NLPZOO_SPM_ABI; }

NLPZOO_SPM_EXPORT nlpzoo_spm* nlpzoo_spm_load(const char* bytes, size_t len, char** error) {
  try {
    auto model = std::make_unique<nlpzoo_spm>();
    const auto status = model->processor.LoadFromSerializedProto(std::string(bytes, len));
    if (!status.ok()) {
      const std::string message = status.ToString();
      // SentencePiece reports a protobuf parse failure as an internal error with a source
      // location; say what it means instead.
      fail(error, message.find("ParseFromArray") != std::string::npos
                      ? std::string("the bytes do not parse as a SentencePiece ModelProto")
                      : message);
      return nullptr;
    }
    if (model->processor.GetPieceSize() <= 0) {
      fail(error, "the model has no pieces");
      return nullptr;
    }
    return model.release();
  } catch (const std::exception& e) {
    fail(error, e.what());
    return nullptr;
  }
}

NLPZOO_SPM_EXPORT void nlpzoo_spm_free(nlpzoo_spm* model) { delete model; }

NLPZOO_SPM_EXPORT int nlpzoo_spm_encode_ids(const nlpzoo_spm* model, const char* text,
                                            size_t len, int32_t** out, size_t* n,
                                            char** error) {
  try {
    std::vector<int> ids;
    const auto status = model->processor.Encode(std::string(text, len), &ids);
    if (!status.ok()) return fail(error, status.ToString());
    *n = ids.size();
    *out = static_cast<int32_t*>(std::malloc(std::max<size_t>(1, ids.size()) * sizeof(int32_t)));
    if (*out == nullptr) return fail(error, "out of memory");
    for (size_t i = 0; i < ids.size(); ++i) (*out)[i] = ids[i];
    return 0;
  } catch (const std::exception& e) {
    return fail(error, e.what());
  }
}

NLPZOO_SPM_EXPORT int nlpzoo_spm_encode_pieces(const nlpzoo_spm* model, const char* text,
                                               size_t len, char** out, size_t* out_len,
                                               size_t* n, char** error) {
  try {
    std::vector<std::string> pieces;
    const auto status = model->processor.Encode(std::string(text, len), &pieces);
    if (!status.ok()) return fail(error, status.ToString());
    std::string joined;
    for (const auto& p : pieces) {
      const uint64_t size = p.size();
      joined.append(reinterpret_cast<const char*>(&size), sizeof size);
      joined += p;
    }
    *out = copy_out(joined);
    if (*out == nullptr) return fail(error, "out of memory");
    *out_len = joined.size();
    *n = pieces.size();
    return 0;
  } catch (const std::exception& e) {
    return fail(error, e.what());
  }
}

NLPZOO_SPM_EXPORT int nlpzoo_spm_decode_ids(const nlpzoo_spm* model, const int32_t* ids,
                                            size_t n, char** out, size_t* out_len,
                                            char** error) {
  try {
    const int size = model->processor.GetPieceSize();
    std::vector<int> v(ids, ids + n);
    for (const int id : v)
      if (id < 0 || id >= size)
        return fail(error, "id " + std::to_string(id) + " is out of range [0, " +
                               std::to_string(size) + ")");
    std::string text;
    const auto status = model->processor.Decode(v, &text);
    if (!status.ok()) return fail(error, status.ToString());
    *out = copy_out(text);
    if (*out == nullptr) return fail(error, "out of memory");
    *out_len = text.size();
    return 0;
  } catch (const std::exception& e) {
    return fail(error, e.what());
  }
}

NLPZOO_SPM_EXPORT int32_t nlpzoo_spm_vocab_size(const nlpzoo_spm* model) {
  return model->processor.GetPieceSize();
}

NLPZOO_SPM_EXPORT const char* nlpzoo_spm_id_to_piece(const nlpzoo_spm* model, int32_t id) {
  if (id < 0 || id >= model->processor.GetPieceSize()) return nullptr;
  return model->processor.IdToPiece(id).c_str();
}

NLPZOO_SPM_EXPORT int32_t nlpzoo_spm_piece_to_id(const nlpzoo_spm* model, const char* piece,
                                                 size_t len) {
  return model->processor.PieceToId(std::string(piece, len));
}

NLPZOO_SPM_EXPORT float nlpzoo_spm_score(const nlpzoo_spm* model, int32_t id) {
  if (id < 0 || id >= model->processor.GetPieceSize()) return 0.0f;
  return model->processor.GetScore(id);
}

NLPZOO_SPM_EXPORT int nlpzoo_spm_train(const char* args, const char* const* sentences,
                                       const size_t* lengths, size_t n, char** out,
                                       size_t* out_len, char** error) {
  try {
    sentencepiece::logging::SetMinLogLevel(1);  // warnings and errors only
    ArraySentences it(sentences, lengths, n);
    std::string model;
    const auto status = sentencepiece::SentencePieceTrainer::Train(args, &it, &model);
    if (!status.ok()) return fail(error, status.ToString());
    if (model.empty()) return fail(error, "training produced no model");
    *out = copy_out(model);
    if (*out == nullptr) return fail(error, "out of memory");
    *out_len = model.size();
    return 0;
  } catch (const std::exception& e) {
    return fail(error, e.what());
  }
}

NLPZOO_SPM_EXPORT void nlpzoo_spm_free_buffer(void* buffer) { std::free(buffer); }
