// std::cout and std::cerr for SentencePiece under RTLD_DEEPBIND.
//
// A PIE executable that prints with std::cout gets *copies* of std::cout and std::cerr
// (copy relocations); libstdc++ constructs those copies and never its own. A library
// loaded with RTLD_DEEPBIND looks symbols up in its own dependencies first, so
// SentencePiece's logging (std::cerr << ..., even before --minloglevel is parsed) would
// reach libstdc++'s never-constructed objects and crash. The shim is first in that lookup
// order, so defining the two symbols here hands SentencePiece working streams. They write
// through C stdio's stdout/stderr, like the executable's own synced streams, so output
// stays in order. Nothing outside the shim sees them (it is loaded RTLD_LOCAL).
#include <cstdio>
#include <new>
#include <ostream>  // defines __GLIBCXX__ when the standard library is libstdc++

#if defined(__GLIBCXX__)

#include <ext/stdio_sync_filebuf.h>

namespace {

using SyncBuf = __gnu_cxx::stdio_sync_filebuf<char>;
alignas(SyncBuf) unsigned char out_buf[sizeof(SyncBuf)];
alignas(SyncBuf) unsigned char err_buf[sizeof(SyncBuf)];

}  // namespace

// Raw storage under the mangled names of std::cout and std::cerr; constructed below and
// never destroyed, as libstdc++ does with its own, so logging from static destructors
// stays safe.
extern "C++" {
alignas(std::ostream) __attribute__((visibility("default"))) unsigned char
    nlpzoo_spm_cout[sizeof(std::ostream)] __asm__("_ZSt4cout");
alignas(std::ostream) __attribute__((visibility("default"))) unsigned char
    nlpzoo_spm_cerr[sizeof(std::ostream)] __asm__("_ZSt4cerr");
}

namespace {

__attribute__((constructor)) void construct_streams() {
  auto* out = new (out_buf) SyncBuf(stdout);
  auto* err = new (err_buf) SyncBuf(stderr);
  new (nlpzoo_spm_cout) std::ostream(out);
  auto* cerr = new (nlpzoo_spm_cerr) std::ostream(err);
  cerr->setf(std::ios_base::unitbuf);
}

}  // namespace

#endif  // __GLIBCXX__
