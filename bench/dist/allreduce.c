/*
** bench/dist/allreduce.c — the reference for gpulua's all_reduce: a C loop of plain
** MPI_Allreduce (float32, sum, in place) over the sizes bench/dist/allreduce.lua measures.
** Prints "size_bytes<TAB>seconds_per_call" on rank 0. Built by bench/dist/run.sh with mpicc.
*/
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  long max_bytes = argc > 1 ? atol(argv[1]) : 256L << 20;
  float *buf = malloc((size_t)max_bytes);
  for (long i = 0; i < max_bytes / 4; i++) buf[i] = 1.0f;
  for (long bytes = 1024; bytes <= max_bytes; bytes *= 4) {
    int count = (int)(bytes / 4);
    MPI_Allreduce(MPI_IN_PLACE, buf, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);    /* warm-up */
    /* about 0.5 s a size, at least 3 calls: the count is rank 0's estimate, shared */
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    MPI_Allreduce(MPI_IN_PLACE, buf, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    double one = MPI_Wtime() - t0;
    int iters = one > 0 ? (int)(0.5 / one) : 1000;
    if (iters < 3) iters = 3;
    if (iters > 2000) iters = 2000;
    MPI_Bcast(&iters, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    for (int i = 0; i < iters; i++)
      MPI_Allreduce(MPI_IN_PLACE, buf, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    double t = (MPI_Wtime() - t0) / iters;
    if (rank == 0) printf("%ld\t%.9f\n", bytes, t);
  }
  free(buf);
  MPI_Finalize();
  return 0;
}
