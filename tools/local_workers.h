#pragma once
// `nlpzoo train --nproc N`: the data-parallel workers of one machine, started as torchrun
// starts them (train/distributed.h), by this process, which serves their TCP store.
#include <string>
#include <vector>

namespace nlpzoo::cli {

/// Runs `nproc` copies of this executable with `args` (its arguments after the program name)
/// as ranks 0..nproc-1, in the environment torchrun gives its workers: RANK, LOCAL_RANK,
/// WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR=127.0.0.1, MASTER_PORT (the TCP store this
/// process serves) and TORCHELASTIC_USE_AGENT_STORE=True. SIGINT and SIGTERM are passed on to
/// the workers. When one fails, the others get `timeout_s` (their --dist-timeout) and a few
/// seconds more to stop by themselves, then are killed. Returns 0 when every worker returned 0,
/// else the first failure's status (128 + N for a worker ended by signal N). Throws UserError
/// when the store or a worker cannot be started.
int run_local_workers(int nproc, const std::vector<std::string>& args, double timeout_s);

}  // namespace nlpzoo::cli
