// nlpzoo train: the flags of a run, which train/tasks/train_run.h resolves and trains (alone, or
// as a rank that torchrun or --nproc started); or, with --nproc, the data-parallel workers that
// train it (tools/local_workers.h).
#include <iostream>
#include <utility>

#include "core/io.h"
#include "tools/command.h"
#include "tools/local_workers.h"
#include "tools/options.h"
#include "train/distributed.h"
#include "train/tasks/registry.h"
#include "train/tasks/train_run.h"
#include "train/trainer.h"

namespace nlpzoo::cli {
namespace {

const char* kUsage = "train --config FILE.ini --run-dir DIR [--data-dir DIR] [--resume] [--max-time MINUTES] "
                     "[--max-steps N] [--max-epochs N] [--device D] [--nproc N] [--KEY VALUE ...]";

// The Trainer's keys once, then each task's own keys: `tasks` (all, or the one asked for).
void print_help(const po::options_description& desc, const std::vector<std::string>& tasks) {
  std::vector<std::string> sections;  // made first, so an unknown task fails before any output
  for (const auto& name : tasks)
    sections.push_back("\nConfig keys of task '" + name + "' (with defaults):\n" + task_own_schema(name).help_text());
  std::cout << "Usage: nlpzoo " << kUsage << "\n\n" << desc
            << "\nEvery config key can also be given as --KEY VALUE (or --KEY=VALUE); the command line wins\n"
               "over the INI file, which wins over the defaults below. A run reads the Trainer's keys and its\n"
               "task's keys. The run folder keeps the resolved config (RUN_DIR/config.ini, which --resume\n"
               "reads), except budgets: max_steps, max_epochs and max_time given on the command line (either\n"
               "spelling) bound this invocation only; --resume without them uses the run's own.\n"
               "Corpus files: each task reads its own under data_dir, named by split (train, valid, test).\n"
               "Data-parallel training: --nproc N here, or torchrun --redirects 1 --tee 1 --nproc_per_node N\n"
               "--no_python nlpzoo train ... (also across machines); N ranks make the updates of one process\n"
               "fed N times the batches (README: \"Data-parallel training\").\n"
            << "\nConfig keys of the Trainer (every task, with defaults):\n" << trainer_schema().help_text();
  for (const auto& section : sections) std::cout << section;
}

int run_train(const std::vector<std::string>& args) {
  po::options_description desc("Options");
  desc.add_options()
      ("config", po::value<std::string>(), "INI file with the model and training keys (e.g. configs/seq2seq-bahdanau-es-en.ini); "
                                            "with --resume it defaults to RUN_DIR/config.ini")
      ("run-dir", po::value<std::string>(), "run folder for config, tokenizers, checkpoints and metrics (required)")
      ("data-dir", po::value<std::string>(), "corpus folder (overrides the config's data_dir; default data/bible)")
      ("resume", po::bool_switch(), "continue exactly from RUN_DIR/checkpoint_last.pt")
      ("max-time", po::value<double>(), "stop after this many minutes of this invocation (overrides max_time)")
      ("max-steps", po::value<int64_t>(), "stop once the run has made this many updates in total (overrides max_steps)")
      ("max-epochs", po::value<int64_t>(), "stop once the run has read this many epochs in total (overrides max_epochs)")
      ("device", po::value<std::string>(), "auto | cpu | cuda | cuda:N (overrides device; default auto)")
      ("task", po::value<std::string>(), "with --help: list only this task's config keys; otherwise the config "
                                         "file's task key, which it must equal")
      ("nproc", po::value<int>(), "start N worker processes on this machine, the ranks of one data-parallel run "
                                  "(as torchrun --nproc_per_node N); each takes every N-th batch")
      ("dist-backend", po::value<std::string>()->default_value("auto"),
       "data-parallel collectives: auto | gloo | nccl (auto: NCCL for a CUDA model when LibTorch has it, else Gloo)")
      ("dist-timeout", po::value<double>()->default_value(1800),
       "seconds a data-parallel rank waits for the others (start-up, each collective) before it fails, naming the "
       "rank that died or hangs")
      ("help,h", "show this help, with the Trainer's config keys and every task's (or --config's or --task's "
                 "task's) own keys, and exit");
  po::variables_map vm;
  auto parsed = po::command_line_parser(args).options(desc).allow_unregistered().run();
  po::store(parsed, vm);
  std::vector<std::string> overrides = po::collect_unrecognized(parsed.options, po::include_positional);
  if (vm.count("help")) {
    std::vector<std::string> tasks = task_names();
    if (vm.count("task")) tasks = {vm["task"].as<std::string>()};
    else if (vm.count("config")) tasks = {read_task_name(vm["config"].as<std::string>())};
    print_help(desc, tasks);
    return 0;
  }
  if (!vm.count("run-dir")) throw UserError("--run-dir is required (the folder this run writes into)");
  const DistributedOptions dist{vm["dist-backend"].as<std::string>(), vm["dist-timeout"].as<double>()};
  if (!(dist.timeout_s > 0)) throw UserError("--dist-timeout: must be a positive number of seconds");
  const auto launch = launch_environment();
  if (vm.count("nproc")) {
    if (vm["nproc"].as<int>() < 1) throw UserError("--nproc: must be at least 1, got " + std::to_string(vm["nproc"].as<int>()));
    if (launch)
      throw UserError("--nproc: this process already is rank " + std::to_string(launch->rank) + " of " +
                      std::to_string(launch->world_size) + " (RANK and WORLD_SIZE are set, e.g. by torchrun); drop --nproc");
  }
  TrainRequest request;
  request.run_dir = vm["run-dir"].as<std::string>();
  request.resume = vm["resume"].as<bool>();
  if (vm.count("config")) request.config_path = vm["config"].as<std::string>();
  if (vm.count("task")) request.task = vm["task"].as<std::string>();
  if (vm.count("data-dir")) overrides.insert(overrides.end(), {"--data_dir", vm["data-dir"].as<std::string>()});
  if (vm.count("max-time")) overrides.insert(overrides.end(), {"--max_time", std::to_string(vm["max-time"].as<double>())});
  if (vm.count("max-steps")) overrides.insert(overrides.end(), {"--max_steps", std::to_string(vm["max-steps"].as<int64_t>())});
  if (vm.count("max-epochs"))
    overrides.insert(overrides.end(), {"--max_epochs", std::to_string(vm["max-epochs"].as<int64_t>())});
  if (vm.count("device")) overrides.insert(overrides.end(), {"--device", vm["device"].as<std::string>()});
  request.overrides = overrides;
  PreparedRun run = prepare_train_run(request);
  if (vm.count("nproc")) {
    resolve_backend(dist.backend, run.device);
    std::vector<std::string> worker_args = {"train"};
    for (size_t i = 0; i < args.size(); ++i) {
      if (args[i] == "--nproc") ++i;  // and its value
      else if (args[i].rfind("--nproc=", 0) != 0) worker_args.push_back(args[i]);
    }
    return run_local_workers(vm["nproc"].as<int>(), worker_args, dist.timeout_s);
  }
  return train_in_process(std::move(run), launch, dist);
}

}  // namespace

NLPZOO_REGISTER_COMMAND(train, "train", "train a model from a config (any task); resumable", run_train);

}  // namespace nlpzoo::cli
