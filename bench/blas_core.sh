# Sourced by the benches. blas_core_export NLPZOO OUTFILE [bench matmul flags]: measures the
# matrix-multiply rate with `nlpzoo bench matmul` (its output also in OUTFILE) and exports the
# OpenBLAS core it multiplied with as OPENBLAS_CORETYPE, so that the Python references (numpy
# and torch load the same OpenBLAS) run the same kernels and the ratios stay fair. Sets
# BLAS_CORE (empty when the BLAS is not OpenBLAS); the tables print it. An OPENBLAS_CORETYPE
# from the environment is dropped first (some of these machines set an AVX2 core on AVX-512
# CPUs): nlpzoo chooses, and NLPZOO_BLAS_CORE=keep|NAME is how a bench asks for another core.
# LibTorch's own kernels likewise: ATEN_CPU_CAPABILITY is exported as nlpzoo ran them (AVX512
# where Debian's LibTorch would pick AVX2 by itself), so the references' torch runs the same;
# sets ATEN_KERNELS. An ATEN_CPU_CAPABILITY already exported is kept (nlpzoo never overrides
# it): that is how a bench asks for other kernels.
blas_core_export() {
  local nlpzoo=$1 out=$2
  shift 2
  unset OPENBLAS_CORETYPE
  "$nlpzoo" bench matmul "$@" | tee "$out"
  BLAS_CORE=$(sed -n 's/^BLAS: .*, core \([A-Za-z0-9_]*\) .*/\1/p' "$out")
  if [ -n "$BLAS_CORE" ]; then export OPENBLAS_CORETYPE=$BLAS_CORE; fi
  ATEN_KERNELS=$(sed -n 's/^ATen kernels: \([A-Za-z0-9_]*\)$/\1/p' "$out")
  case "$ATEN_KERNELS" in
    AVX512|AVX2|DEFAULT) export ATEN_CPU_CAPABILITY="${ATEN_KERNELS,,}" ;;
  esac
  export BLAS_CORE ATEN_KERNELS
}
