#!/usr/bin/env python3
"""gensim's word2vec as the bench's reference peer (bench/embeddings.sh).

Trains Word2Vec (FastText with --maxn > 0: subword n-grams) on a one-sentence-per-line corpus with the given hyperparameters and writes the
vectors in word2vec binary format plus a JSON summary (training seconds, raw and effective
words). Run with Debian's python3-gensim: /usr/bin/python3 bench/embeddings_ref.py --help
"""
import argparse
import json
import logging
import time

from gensim.models import FastText, Word2Vec
from gensim.models.word2vec import LineSentence


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--corpus", required=True, help="text file, one sentence per line, words separated by spaces")
    p.add_argument("--out", required=True, help="prefix: writes PREFIX.bin (vectors) and PREFIX.json (summary)")
    p.add_argument("--sg", type=int, default=1, help="1 Skip-Gram, 0 CBOW")
    p.add_argument("--hs", type=int, default=0, help="1 hierarchical softmax (then negative 0)")
    p.add_argument("--dim", type=int, default=100)
    p.add_argument("--window", type=int, default=5)
    p.add_argument("--negative", type=int, default=5)
    p.add_argument("--min-count", type=int, default=5)
    p.add_argument("--sample", type=float, default=1e-3)
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--alpha", type=float, default=0.025)
    p.add_argument("--min-alpha", type=float, default=0.0001)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--input", choices=["corpus_file", "iterable"], default="corpus_file",
                   help="corpus_file: gensim's fastest mode, where each worker reads its own part of the "
                        "file and decays the rate by its own share (with 2 workers it falls only halfway "
                        "each epoch); iterable: one reader hands jobs to the workers (LineSentence) and the "
                        "rate follows the whole corpus's progress, as the config asks")
    p.add_argument("--seed", type=int, default=1, help="gensim's seed (initial vectors; threads still vary runs)")
    p.add_argument("--minn", type=int, default=3, help="subwords: shortest character n-gram")
    p.add_argument("--maxn", type=int, default=0, help="subwords: longest n-gram; 0 = plain word2vec (Word2Vec)")
    p.add_argument("--bucket", type=int, default=2000000, help="subwords: n-gram hash buckets")
    a = p.parse_args()
    logging.basicConfig(format="%(asctime)s %(message)s", level=logging.INFO)
    t0 = time.time()
    common = dict(vector_size=a.dim, window=a.window, negative=a.negative, hs=a.hs, sg=a.sg,
                  min_count=a.min_count, sample=a.sample, alpha=a.alpha, min_alpha=a.min_alpha,
                  workers=a.workers, seed=a.seed)
    if a.maxn > 0:
        model = FastText(min_n=a.minn, max_n=a.maxn, bucket=a.bucket, **common)
    else:
        model = Word2Vec(**common)
    source = dict(corpus_file=a.corpus) if a.input == "corpus_file" else dict(corpus_iterable=LineSentence(a.corpus))
    model.build_vocab(**source)
    t1 = time.time()
    trained, raw = model.train(**source, total_examples=model.corpus_count,
                               total_words=model.corpus_total_words, epochs=a.epochs)
    t2 = time.time()
    model.wv.save_word2vec_format(a.out + ".bin", binary=True)
    summary = {"vocab_seconds": t1 - t0, "train_seconds": t2 - t1, "words": len(model.wv),
               "raw_words_per_epoch": model.corpus_total_words, "effective_words": trained,
               "raw_words": raw, "hyper": vars(a)}
    with open(a.out + ".json", "w") as f:
        json.dump(summary, f, indent=2)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
