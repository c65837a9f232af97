/* hw.h: hardware mode, the face of the module.
 *
 * Runs a plan's operations on real GPUs through NCCL (launched with MPI) or,
 * without GPUs, on CPU ranks through MPI, and writes measurements.json.
 * Never includes sim/: predictions and measurements meet only in validate/. */
#ifndef TS_HW_H
#define TS_HW_H

#include <stdbool.h>

/* Which back ends this binary was built with. */
bool hw_have_mpi(void);
bool hw_have_nccl(void);
/* One line such as "mpi (OpenMPI 4.1.4), nccl: not built (no CUDA/NCCL found at build time)". */
const char *hw_backends_summary(void);

#endif
