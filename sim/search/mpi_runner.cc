#include "sim/search/mpi_runner.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>

#ifdef STACKSIM_HAVE_MPI
#include <mpi.h>
#endif

namespace stacksim::search {
namespace {

int EnvInt(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && v[0] != '\0' ? std::atoi(v) : 0;
}

// Open MPI's and the PMI/PMIx launchers' world size.
bool StartedByMpiLauncher() {
  return EnvInt("OMPI_COMM_WORLD_SIZE") > 0 || EnvInt("PMI_SIZE") > 0 || EnvInt("PMIX_SIZE") > 0;
}

}  // namespace

#ifdef STACKSIM_HAVE_MPI

bool BuiltWithMpi() { return true; }

MpiContext::MpiContext() {
  if (!StartedByMpiLauncher()) return;
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  local_size_ = std::max(1, EnvInt("OMPI_COMM_WORLD_LOCAL_SIZE"));
  active_ = true;
}

MpiContext::~MpiContext() {
  if (active_) MPI_Finalize();
}

MpiRunner::MpiRunner(const MpiContext& mpi, int threads) : mpi_(mpi), local_(threads) {}

std::vector<Time> MpiRunner::Run(const std::vector<SimulationJob>& jobs) const {
  if (!mpi_.active() || mpi_.size() == 1) return local_.Run(jobs);
  const int n = static_cast<int>(jobs.size());
  std::vector<SimulationJob> mine;
  for (int i = mpi_.rank(); i < n; i += mpi_.size()) mine.push_back(jobs[i]);
  std::vector<int64_t> ns(jobs.size(), -1);
  int failed = 0;
  std::string error;
  try {
    std::vector<Time> times = local_.Run(mine);
    for (size_t k = 0; k < times.size(); ++k) ns[mpi_.rank() + k * mpi_.size()] = times[k].ns();
  } catch (const std::exception& e) {
    failed = 1;
    error = e.what();
  }
  // Every job has exactly one owner and step times are >= 0: the maximum
  // over ranks is the owner's value.
  MPI_Allreduce(MPI_IN_PLACE, ns.data(), n, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (failed) {
    throw std::runtime_error(error.empty() ? "a replay failed on another MPI rank"
                                           : "replay failed on MPI rank " + std::to_string(mpi_.rank()) + ": " + error);
  }
  std::vector<Time> out;
  out.reserve(jobs.size());
  for (int64_t v : ns) out.push_back(Time::Ns(v));
  return out;
}

#else  // !STACKSIM_HAVE_MPI

bool BuiltWithMpi() { return false; }

MpiContext::MpiContext() { (void)StartedByMpiLauncher; }
MpiContext::~MpiContext() = default;

MpiRunner::MpiRunner(const MpiContext& mpi, int threads) : mpi_(mpi), local_(threads) {}

std::vector<Time> MpiRunner::Run(const std::vector<SimulationJob>& jobs) const { return local_.Run(jobs); }

#endif

}  // namespace stacksim::search
