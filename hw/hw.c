/* hw.c: what hardware mode was built with. */
#include "hw/hw.h"

#include <stdio.h>

#ifdef TRAINSIM_HAVE_MPI
#include <mpi.h>
#endif
#ifdef TRAINSIM_HAVE_CUDA
#include <nccl.h>
#endif

bool hw_have_mpi(void)
{
#ifdef TRAINSIM_HAVE_MPI
	return true;
#else
	return false;
#endif
}

bool hw_have_nccl(void)
{
#ifdef TRAINSIM_HAVE_CUDA
	return true;
#else
	return false;
#endif
}

const char *hw_backends_summary(void)
{
	static char buf[200];
	const char *mpi = "mpi: not built (no MPI found at build time)";
	const char *nccl = "nccl: not built (no CUDA/NCCL found at build time)";
#ifdef TRAINSIM_HAVE_MPI
	static char mbuf[80];
	snprintf(mbuf, sizeof(mbuf), "mpi: MPI %d.%d", MPI_VERSION, MPI_SUBVERSION);
	mpi = mbuf;
#endif
#ifdef TRAINSIM_HAVE_CUDA
	static char nbuf[80];
	snprintf(nbuf, sizeof(nbuf), "nccl: NCCL %d.%d.%d", NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH);
	nccl = nbuf;
#endif
	snprintf(buf, sizeof(buf), "%s; %s", mpi, nccl);
	return buf;
}
