// Searches spread over MPI processes (`mpirun -np N stacksim search ...`).
//
// Every rank enumerates and bounds the whole plan space (cheap and
// deterministic), so all ranks agree on each round's replays; MpiRunner runs
// replay i on rank i % N (each rank with its own threads) and all-reduces the
// step times, so every rank ends with the same ranking as one process would.
// Only rank 0 should print.
//
// Built only when CMake found MPI (STACKSIM_HAVE_MPI); otherwise MpiContext
// is a single process and BuiltWithMpi() is false. MPI is initialised only
// when the process was started by an MPI launcher (its environment names a
// world size), so a plain `stacksim search` never touches MPI.
#ifndef STACKSIM_SIM_SEARCH_MPI_RUNNER_H_
#define STACKSIM_SIM_SEARCH_MPI_RUNNER_H_

#include <vector>

#include "sim/search/search.h"

namespace stacksim::search {

bool BuiltWithMpi();

// Owns MPI initialisation for one command (MPI_Init_thread with
// MPI_THREAD_FUNNELED: only this thread calls MPI; MPI_Finalize on
// destruction).
class MpiContext {
 public:
  MpiContext();
  ~MpiContext();
  MpiContext(const MpiContext&) = delete;
  MpiContext& operator=(const MpiContext&) = delete;

  bool active() const { return active_; }  // MPI initialised, size >= 1
  int rank() const { return rank_; }
  int size() const { return size_; }
  // Ranks sharing this machine (the launcher's local size; 1 if unknown).
  int local_size() const { return local_size_; }

 private:
  bool active_ = false;
  int rank_ = 0, size_ = 1, local_size_ = 1;
};

// REQUIRES: an active MpiContext outlives the runner. Throws
// std::runtime_error on every rank if a replay failed on any.
class MpiRunner : public PlanRunner {
 public:
  MpiRunner(const MpiContext& mpi, int threads);
  std::vector<Time> Run(const std::vector<SimulationJob>& jobs) const override;

 private:
  const MpiContext& mpi_;
  ThreadRunner local_;
};

}  // namespace stacksim::search

#endif  // STACKSIM_SIM_SEARCH_MPI_RUNNER_H_
