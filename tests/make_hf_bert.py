"""Writes a tiny BERT checkpoint in Hugging Face's published folder layout, and what BertModel
computes on it, for tests/test_hf_bert_import.cpp.

    /usr/bin/python3 tests/make_hf_bert.py OUT_DIR [SEED]

OUT_DIR/config.json, vocab.txt, tokenizer_config.json and model.safetensors are what
`transformers` would save for BertForPreTraining (parameter names "bert.embeddings...",
"cls.predictions...", "cls.seq_relationship..."; the decoder tied to the word embeddings and so
not stored; the old "position_ids" buffer). OUT_DIR/reference.safetensors holds a padded batch
(input_ids, token_type_ids, attention_mask) and the reference outputs last_hidden_state,
pooler_output and mlm_logits, computed below from BertModel's equations in float64.

Needs only torch (python3-torch): safetensors files are written by hand in their layout (an
8-byte little-endian header length, a JSON header, the raw little-endian bytes), since Debian
has no python3-safetensors.
"""
import json
import math
import os
import struct
import sys

import torch

H, L, A, FFN, MAX_POS, TYPES, EPS = 32, 2, 4, 64, 16, 2, 1e-12
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "a", "cat", "dog", "sat", "on", "mat",
         "play", "##ing", "##s", "##ed", "un", "##aff", "##able", "hello", "world", ",", ".", "!",
         "?", "is", "was", "it", "good", "bad", "very", "not", "run", "ran", "##ly",
         "[unused0]", "[unused1]"]  # 37: not H. Google's vocabularies reserve [unusedN] tokens too

DTYPES = {torch.float32: "F32", torch.float64: "F64", torch.int64: "I64"}


def write_safetensors(path, tensors):
    header, chunks, offset = {}, [], 0
    for name, t in tensors.items():
        data = t.contiguous().numpy().tobytes()  # x86: already little-endian
        header[name] = {"dtype": DTYPES[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)  # the layout allows padding the header with spaces
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for c in chunks:
            f.write(c)


def random_weights(gen):
    def normal(*shape, std=0.3, mean=0.0):
        return torch.randn(*shape, generator=gen, dtype=torch.float64) * std + mean

    w = {}
    # Small embeddings, as trained BERTs have: their sums have variance ~1e-3, where the
    # LayerNorm eps (1e-12 vs LibTorch's 1e-5) visibly matters.
    w["bert.embeddings.word_embeddings.weight"] = normal(len(VOCAB), H, std=0.02)
    w["bert.embeddings.position_embeddings.weight"] = normal(MAX_POS, H, std=0.02)
    w["bert.embeddings.token_type_embeddings.weight"] = normal(TYPES, H, std=0.02)

    def layer_norm(prefix):
        w[prefix + ".weight"] = normal(H, std=0.1, mean=1.0)
        w[prefix + ".bias"] = normal(H, std=0.1)

    def dense(prefix, n_in, n_out):
        w[prefix + ".weight"] = normal(n_out, n_in, std=1 / math.sqrt(n_in))  # [out, in] as nn.Linear
        w[prefix + ".bias"] = normal(n_out, std=0.1)

    layer_norm("bert.embeddings.LayerNorm")
    for i in range(L):
        p = f"bert.encoder.layer.{i}."
        for part in ("query", "key", "value"):
            dense(p + "attention.self." + part, H, H)
        dense(p + "attention.output.dense", H, H)
        layer_norm(p + "attention.output.LayerNorm")
        dense(p + "intermediate.dense", H, FFN)
        dense(p + "output.dense", FFN, H)
        layer_norm(p + "output.LayerNorm")
    dense("bert.pooler.dense", H, H)
    dense("cls.predictions.transform.dense", H, H)
    layer_norm("cls.predictions.transform.LayerNorm")
    w["cls.predictions.bias"] = normal(len(VOCAB), std=0.1)
    dense("cls.seq_relationship", H, 2)
    return w


def bert_forward(w, input_ids, token_type_ids, attention_mask):
    """BertModel + BertLMPredictionHead (transformers' modeling_bert.py), in float64."""
    F = torch.nn.functional

    def ln(x, prefix):
        return F.layer_norm(x, (H,), w[prefix + ".weight"], w[prefix + ".bias"], EPS)

    def lin(x, prefix):
        return x @ w[prefix + ".weight"].T + w[prefix + ".bias"]

    B, S = input_ids.shape
    # BertEmbeddings: word + absolute position + token type, LayerNorm (dropout off in eval).
    x = (w["bert.embeddings.word_embeddings.weight"][input_ids]
         + w["bert.embeddings.position_embeddings.weight"][torch.arange(S)]
         + w["bert.embeddings.token_type_embeddings.weight"][token_type_ids])
    x = ln(x, "bert.embeddings.LayerNorm")  # [B, S, H]
    # get_extended_attention_mask: (1 - mask) * finfo.min added to every query's scores.
    bias = (1.0 - attention_mask[:, None, None, :].double()) * torch.finfo(torch.float64).min  # [B, 1, 1, S]
    dk = H // A

    def heads(t):  # [B, S, H] -> [B, A, S, dk]
        return t.view(B, S, A, dk).transpose(1, 2)

    for i in range(L):
        p = f"bert.encoder.layer.{i}."
        q, k, v = (heads(lin(x, p + "attention.self." + n)) for n in ("query", "key", "value"))
        probs = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(dk) + bias, dim=-1)  # [B, A, S, S]
        context = (probs @ v).transpose(1, 2).reshape(B, S, H)
        # BertSelfOutput and BertOutput: post-LN, LayerNorm(dense(h) + residual).
        x = ln(lin(context, p + "attention.output.dense") + x, p + "attention.output.LayerNorm")
        inner = F.gelu(lin(x, p + "intermediate.dense"))  # hidden_act "gelu": the erf form
        x = ln(lin(inner, p + "output.dense") + x, p + "output.LayerNorm")
    pooled = torch.tanh(lin(x[:, 0], "bert.pooler.dense"))  # BertPooler: first token
    t = ln(F.gelu(lin(x, "cls.predictions.transform.dense")), "cls.predictions.transform.LayerNorm")
    logits = t @ w["bert.embeddings.word_embeddings.weight"].T + w["cls.predictions.bias"]  # tied decoder
    return x, pooled, logits


def main():
    out = sys.argv[1]
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    os.makedirs(out, exist_ok=True)
    gen = torch.Generator().manual_seed(seed)
    w = random_weights(gen)

    config = {"architectures": ["BertForPreTraining"], "model_type": "bert", "vocab_size": len(VOCAB),
              "hidden_size": H, "num_hidden_layers": L, "num_attention_heads": A, "intermediate_size": FFN,
              "hidden_act": "gelu", "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
              "max_position_embeddings": MAX_POS, "type_vocab_size": TYPES, "initializer_range": 0.02,
              "layer_norm_eps": EPS, "pad_token_id": 0, "position_embedding_type": "absolute"}
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    with open(os.path.join(out, "tokenizer_config.json"), "w") as f:
        json.dump({"do_lower_case": True, "tokenizer_class": "BertTokenizer"}, f)
    with open(os.path.join(out, "vocab.txt"), "w") as f:
        f.write("".join(t + "\n" for t in VOCAB))
    stored = {k: v.float() for k, v in w.items()}
    stored["bert.embeddings.position_ids"] = torch.arange(MAX_POS).unsqueeze(0)  # [1, MAX_POS] buffer
    write_safetensors(os.path.join(out, "model.safetensors"), stored)

    # Rows of 10, 6 and 2 real tokens, [PAD] = 0 after; sentence B in the second half of each row.
    lengths = [10, 6, 2]
    B, S = len(lengths), max(lengths)
    input_ids = torch.zeros(B, S, dtype=torch.int64)
    token_type_ids = torch.zeros(B, S, dtype=torch.int64)
    for b, n in enumerate(lengths):
        input_ids[b, :n] = torch.randint(5, len(VOCAB), (n,), generator=gen)
        input_ids[b, 0], input_ids[b, n - 1] = 2, 3  # [CLS] ... [SEP]
        token_type_ids[b, n // 2:n] = 1
    attention_mask = (input_ids != 0).long()
    weights64 = {k: v.float().double() for k, v in w.items()}  # exactly the stored float32 values
    hidden, pooled, logits = bert_forward(weights64, input_ids, token_type_ids, attention_mask)
    write_safetensors(os.path.join(out, "reference.safetensors"), {
        "input_ids": input_ids, "token_type_ids": token_type_ids, "attention_mask": attention_mask,
        "last_hidden_state": hidden, "pooler_output": pooled, "mlm_logits": logits})
    print("wrote", out)


if __name__ == "__main__":
    main()
