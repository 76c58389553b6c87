#pragma once
// The C interface of libnlpzoo_spm, the only code that links SentencePiece. The core loads
// it with dlopen (see datasets/tokenizer.cpp) so that SentencePiece's bundled protobuf never
// meets LibTorch's in one symbol scope; hence plain C types only across this boundary.
//
// Conventions: functions returning int return 0 on success and nonzero on failure, in which
// case *error holds a malloc'ed message. Every buffer handed out (*out, *error) is released
// with nlpzoo_spm_free_buffer. Strings are UTF-8 with explicit lengths.
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nlpzoo_spm nlpzoo_spm;

/// Interface version; bumped whenever a signature below changes.
#define NLPZOO_SPM_ABI 1
int nlpzoo_spm_abi(void);

/// Parses a serialized ModelProto (the bytes of a .model file). Null on failure (*error set).
nlpzoo_spm* nlpzoo_spm_load(const char* bytes, size_t len, char** error);
void nlpzoo_spm_free(nlpzoo_spm* model);

/// Encodes `text` to ids (*out: malloc'ed array of *n int32).
int nlpzoo_spm_encode_ids(const nlpzoo_spm* model, const char* text, size_t len, int32_t** out,
                          size_t* n, char** error);
/// Encodes `text` to pieces, written to *out one after the other, each as its byte length
/// (a native-endian uint64) then its bytes: a piece may hold a NUL byte of the text, so NUL
/// cannot separate them. *n is the number of pieces, *out_len the total bytes.
int nlpzoo_spm_encode_pieces(const nlpzoo_spm* model, const char* text, size_t len, char** out,
                             size_t* out_len, size_t* n, char** error);
/// Decodes ids (each must be in [0, vocab size)) to text.
int nlpzoo_spm_decode_ids(const nlpzoo_spm* model, const int32_t* ids, size_t n, char** out,
                          size_t* out_len, char** error);

int32_t nlpzoo_spm_vocab_size(const nlpzoo_spm* model);
/// The piece of `id` (NUL-terminated, owned by the model), or null when out of range.
const char* nlpzoo_spm_id_to_piece(const nlpzoo_spm* model, int32_t id);
/// The id of `piece`, or the unknown id when it is not in the vocabulary.
int32_t nlpzoo_spm_piece_to_id(const nlpzoo_spm* model, const char* piece, size_t len);
/// The piece's score (log probability for unigram, negated merge rank for BPE).
float nlpzoo_spm_score(const nlpzoo_spm* model, int32_t id);

/// Trains with SentencePieceTrainer::Train(args) on the given sentences (instead of
/// --input files) and returns the serialized model in *out. `args` is SentencePiece's own
/// "--flag=value ..." syntax and must not contain --input or --model_prefix.
int nlpzoo_spm_train(const char* args, const char* const* sentences, const size_t* lengths,
                     size_t n, char** out, size_t* out_len, char** error);

void nlpzoo_spm_free_buffer(void* buffer);

#ifdef __cplusplus
}
#endif
