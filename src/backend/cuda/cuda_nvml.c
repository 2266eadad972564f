/*
** cuda_nvml.c — what NVML (libnvidia-ml.so.1, installed with the driver) says of a GPU:
** its energy counter (millijoules since the driver loaded, Volta and later), power,
** temperature, utilisation and the memory every process uses. Opened with dlopen at the
** first reading; without it, or on a GPU without the counter, 'why' says so. NVML numbers
** devices its own way (PCI order, all of them), CUDA the runtime's way (fastest first,
** CUDA_VISIBLE_DEVICES), so the device is found by its PCI bus id. The few prototypes are
** written here (nvml.h is not part of every toolkit); their types are NVML's documented ones.
*/
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include "cuda.h"

typedef struct nvml_device_st *nvml_device;
typedef struct { unsigned int gpu, memory; } nvml_utilization;
typedef struct { unsigned long long total, free, used; } nvml_memory;
enum { NVML_SUCCESS = 0, NVML_TEMPERATURE_GPU = 0 };

static struct {
  pthread_once_t once;
  bool ok;
  char why[160];
  int (*init)(void);
  int (*by_pci)(const char *bus_id, nvml_device *dev);
  int (*energy)(nvml_device dev, unsigned long long *mj);
  int (*power)(nvml_device dev, unsigned int *mw);
  int (*temperature)(nvml_device dev, int sensor, unsigned int *c);
  int (*utilization)(nvml_device dev, nvml_utilization *u);
  int (*memory)(nvml_device dev, nvml_memory *m);
  const char *(*error_string)(int r);
  nvml_device handles[GL_CUDA_MAXDEV];
  bool tried[GL_CUDA_MAXDEV];
} nv = { .once = PTHREAD_ONCE_INIT };

static void nvml_load(void) {
  void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h == NULL) {
    snprintf(nv.why, sizeof nv.why, "NVML cannot be loaded: libnvidia-ml.so.1 comes with the NVIDIA driver");
    return;
  }
  gl_cuda_sym(h, &nv.init, "nvmlInit_v2");
  gl_cuda_sym(h, &nv.by_pci, "nvmlDeviceGetHandleByPciBusId_v2");
  gl_cuda_sym(h, &nv.energy, "nvmlDeviceGetTotalEnergyConsumption");
  gl_cuda_sym(h, &nv.power, "nvmlDeviceGetPowerUsage");
  gl_cuda_sym(h, &nv.temperature, "nvmlDeviceGetTemperature");
  gl_cuda_sym(h, &nv.utilization, "nvmlDeviceGetUtilizationRates");
  gl_cuda_sym(h, &nv.memory, "nvmlDeviceGetMemoryInfo");
  gl_cuda_sym(h, &nv.error_string, "nvmlErrorString");
  if (!nv.init || !nv.by_pci || !nv.error_string) {
    snprintf(nv.why, sizeof nv.why, "NVML lacks nvmlInit_v2 or nvmlDeviceGetHandleByPciBusId_v2");
    return;
  }
  int r = nv.init();
  if (r != NVML_SUCCESS) {
    snprintf(nv.why, sizeof nv.why, "nvmlInit failed: %s", nv.error_string(r));
    return;
  }
  nv.ok = true;
}

/* The NVML handle of CUDA device 'index' (NULL with 'why' set). */
static nvml_device handle_of(int index, char *why, size_t size) {
  pthread_once(&nv.once, nvml_load);
  if (!nv.ok) { snprintf(why, size, "%s", nv.why); return NULL; }
  if (index < 0 || index >= GL_CUDA_MAXDEV) { snprintf(why, size, "no such device"); return NULL; }
  pthread_mutex_lock(&gl_cuda_lock);
  if (!nv.tried[index]) {
    char bus[32];
    nv.tried[index] = true;
    if (cudaDeviceGetPCIBusId(bus, sizeof bus, index) != cudaSuccess) cudaGetLastError();
    else if (nv.by_pci(bus, &nv.handles[index]) != NVML_SUCCESS) nv.handles[index] = NULL;
  }
  nvml_device d = nv.handles[index];
  pthread_mutex_unlock(&gl_cuda_lock);
  if (d == NULL) snprintf(why, size, "NVML does not know cuda:%d by its PCI bus id", index);
  return d;
}

void gl_cuda_telemetry(int index, gl_telemetry *t) {
  t->energy_j = t->power_w = t->temperature_c = t->utilization = -1;
  t->memory_used = -1;
  t->source[0] = t->why[0] = '\0';
  nvml_device d = handle_of(index, t->why, sizeof t->why);
  if (d == NULL) return;
  snprintf(t->source, sizeof t->source, "NVML");
  unsigned long long mj;
  unsigned int u;
  nvml_utilization ut;
  nvml_memory m;
  int r = nv.energy ? nv.energy(d, &mj) : -1;
  if (r == NVML_SUCCESS) t->energy_j = (double)mj * 1e-3;
  else snprintf(t->why, sizeof t->why, "this GPU has no NVML energy counter: %s",
                r < 0 ? "no nvmlDeviceGetTotalEnergyConsumption" : nv.error_string(r));
  if (nv.power && nv.power(d, &u) == NVML_SUCCESS) t->power_w = u * 1e-3;
  if (nv.temperature && nv.temperature(d, NVML_TEMPERATURE_GPU, &u) == NVML_SUCCESS) t->temperature_c = u;
  if (nv.utilization && nv.utilization(d, &ut) == NVML_SUCCESS) t->utilization = ut.gpu;
  if (nv.memory && nv.memory(d, &m) == NVML_SUCCESS) t->memory_used = (int64_t)m.used;
}
