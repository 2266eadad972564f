/*
** cpu_energy.c — the host's energy counter: RAPL through Linux's powercap files
** (/sys/class/powercap/intel-rapl:N/energy_uj, one per CPU package; AMD's processors
** expose theirs under the same name). The files are often readable by root only (the
** counter can leak what other processes do), and virtual machines rarely have them, so
** 'why' says which of the two it is. The counter wraps at max_energy_range_uj.
*/
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include "cpu.h"

#define RAPL_DIR "/sys/class/powercap"
#define RAPL_MAX_PKG 16

/* Per package: the last raw reading and the wraps seen, so the sum only grows. */
static struct {
  pthread_mutex_t mu;
  double last[RAPL_MAX_PKG], wrapped[RAPL_MAX_PKG];
} R = { .mu = PTHREAD_MUTEX_INITIALIZER };

static int read_number(const char *path, double *v) {
  FILE *f = fopen(path, "r");
  if (f == NULL) return errno ? errno : EIO;
  unsigned long long x;
  int ok = fscanf(f, "%llu", &x) == 1;
  fclose(f);
  if (!ok) return EIO;
  *v = (double)x;
  return 0;
}

void gl_cpu_telemetry(int index, gl_telemetry *t) {
  (void)index;
  t->energy_j = t->power_w = t->temperature_c = t->utilization = -1;
  t->memory_used = -1;
  t->source[0] = t->why[0] = '\0';
  DIR *d = opendir(RAPL_DIR);
  if (d == NULL) {
    snprintf(t->why, sizeof t->why, "no RAPL energy counter on this machine: %s is missing", RAPL_DIR);
    return;
  }
  double sum = 0;
  int found = 0, denied = 0;
  struct dirent *e;
  pthread_mutex_lock(&R.mu);
  while ((e = readdir(d)) != NULL) {
    int pkg, end = 0;
    /* the packages only (intel-rapl:N): their sub-zones (intel-rapl:N:M) are parts of them */
    if (sscanf(e->d_name, "intel-rapl:%d%n", &pkg, &end) != 1 || e->d_name[end] != '\0') continue;
    if (pkg < 0 || pkg >= RAPL_MAX_PKG) continue;
    char path[300];
    double uj, range = 0;
    snprintf(path, sizeof path, "%s/%s/energy_uj", RAPL_DIR, e->d_name);
    errno = 0;
    int err = read_number(path, &uj);
    if (err) { if (err == EACCES || err == EPERM) denied++; continue; }
    snprintf(path, sizeof path, "%s/%s/max_energy_range_uj", RAPL_DIR, e->d_name);
    read_number(path, &range);
    if (uj < R.last[pkg] && range > 0) R.wrapped[pkg] += range;
    R.last[pkg] = uj;
    sum += (R.wrapped[pkg] + uj) * 1e-6;
    found++;
  }
  pthread_mutex_unlock(&R.mu);
  closedir(d);
  if (found > 0) {
    t->energy_j = sum;
    snprintf(t->source, sizeof t->source, "RAPL (%d package%s)", found, found > 1 ? "s" : "");
  } else if (denied > 0) {
    snprintf(t->why, sizeof t->why, "the RAPL energy counters, %s/intel-rapl:*/energy_uj, are readable by root only", RAPL_DIR);
  } else {
    snprintf(t->why, sizeof t->why, "no RAPL energy counter on this machine: nothing under %s/intel-rapl:*", RAPL_DIR);
  }
}
