#include "bench_common.h"

#include <dlfcn.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

extern char** environ;

double bench_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double bench_cpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double bench_steal_s(void) {
  FILE* f = fopen("/proc/stat", "r");
  if (!f) return -1;
  unsigned long long t[8] = {0};
  const int got = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &t[0], &t[1], &t[2], &t[3], &t[4], &t[5],
                         &t[6], &t[7]);
  fclose(f);
  const long hz = sysconf(_SC_CLK_TCK);
  return got == 8 && hz > 0 ? (double)t[7] / (double)hz : -1;
}

int bench_cpus(void) {
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int)n : 1;
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

double bench_median(double* v, int n) {
  if (n <= 0) return NAN;
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double bench_median_of(const double* v, int n) {
  double* t = malloc((size_t)(n > 0 ? n : 1) * sizeof(double));
  memcpy(t, v, (size_t)(n > 0 ? n : 0) * sizeof(double));
  const double m = bench_median(t, n);
  free(t);
  return m;
}

const char* bench_tnbc_status(void) {
  const char* (*status)(void) = (const char* (*)(void))dlsym(RTLD_DEFAULT, "tnbc_status");
  return status ? status() : NULL;
}

int bench_tnbc_active(void) {
  const char* s = bench_tnbc_status();
  return s && (strcmp(s, "nbc") == 0 || strcmp(s, "optimize") == 0);
}

size_t bench_parse_bytes(const char* s) {
  char* end = NULL;
  unsigned long long v = strtoull(s, &end, 10);
  if (end == s) return 0;
  switch (*end) {
    case 'k': case 'K': v <<= 10; end++; break;
    case 'm': case 'M': v <<= 20; end++; break;
    case 'g': case 'G': v <<= 30; end++; break;
    default: break;
  }
  if (*end == 'i' && end[1] == 'B') end += 2;
  else if (*end == 'B') end++;
  return *end ? 0 : (size_t)v;
}

int bench_parse_sizes(char* list, size_t* sizes, int max) {
  int n = 0;
  for (char* tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
    if (n == max || (sizes[n] = bench_parse_bytes(tok)) == 0) return -1;
    n++;
  }
  return n;
}

/* ---- JSON ---- */

static void json_key(bench_json* j, const char* key) {
  if (j->items[j->depth]++) fputc(',', j->f);
  fprintf(j->f, "\n%*s", 2 * j->depth, "");
  if (key) {
    fputc('"', j->f);
    fputs(key, j->f);   /* keys are identifiers chosen by the programs */
    fputs("\": ", j->f);
  }
}

static void json_string(FILE* f, const char* s) {
  fputc('"', f);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
    else if (c == '\n') fputs("\\n", f);
    else if (c == '\t') fputs("\\t", f);
    else if (c < 0x20) fprintf(f, "\\u%04x", c);
    else fputc(c, f);
  }
  fputc('"', f);
}

static void json_open_level(bench_json* j, const char* key, char open, char close) {
  if (!j->f) return;
  json_key(j, key);
  fputc(open, j->f);
  j->depth++;
  j->items[j->depth] = 0;
  j->closer[j->depth] = close;
}

int bench_json_open(bench_json* j, const char* path, const char* program) {
  memset(j, 0, sizeof *j);
  if (!path) return 0;
  j->f = fopen(path, "w");
  if (!j->f) {
    fprintf(stderr, "%s: cannot write %s: ", program, path);
    perror(NULL);
    return -1;
  }
  fputc('{', j->f);
  j->closer[0] = '}';
  bench_json_str(j, "format", "tnbc-bench");
  bench_json_int(j, "version", 1);
  bench_json_str(j, "program", program);
  return 0;
}

void bench_json_close(bench_json* j) {
  if (!j->f) return;
  while (j->depth > 0) bench_json_end(j);
  fputs("\n}\n", j->f);
  fclose(j->f);
  j->f = NULL;
}

void bench_json_object(bench_json* j, const char* key) { json_open_level(j, key, '{', '}'); }
void bench_json_array(bench_json* j, const char* key) { json_open_level(j, key, '[', ']'); }

void bench_json_end(bench_json* j) {
  if (!j->f || j->depth == 0) return;
  const char close = j->closer[j->depth];
  const int had_items = j->items[j->depth] > 0;
  j->depth--;
  if (had_items) fprintf(j->f, "\n%*s", 2 * j->depth, "");
  fputc(close, j->f);
}

void bench_json_num(bench_json* j, const char* key, double v) {
  if (!j->f) return;
  json_key(j, key);
  if (isfinite(v)) fprintf(j->f, "%.9g", v);
  else fputs("null", j->f);
}

void bench_json_int(bench_json* j, const char* key, long long v) {
  if (!j->f) return;
  json_key(j, key);
  fprintf(j->f, "%lld", v);
}

void bench_json_str(bench_json* j, const char* key, const char* v) {
  if (!j->f) return;
  json_key(j, key);
  if (v) json_string(j->f, v);
  else fputs("null", j->f);
}

void bench_json_bool(bench_json* j, const char* key, int v) {
  if (!j->f) return;
  json_key(j, key);
  fputs(v ? "true" : "false", j->f);
}

void bench_json_nums(bench_json* j, const char* key, const double* v, int n) {
  if (!j->f) return;
  json_key(j, key);
  fputc('[', j->f);
  for (int i = 0; i < n; i++) {
    if (i) fputs(", ", j->f);
    if (isfinite(v[i])) fprintf(j->f, "%.9g", v[i]);
    else fputs("null", j->f);
  }
  fputc(']', j->f);
}

static void cpu_model(char* out, size_t len) {
  snprintf(out, len, "unknown");
  FILE* f = fopen("/proc/cpuinfo", "r");
  if (!f) return;
  char line[512];
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "model name", 10) != 0) continue;
    const char* colon = strchr(line, ':');
    if (!colon) break;
    snprintf(out, len, "%s", colon + 2);
    out[strcspn(out, "\n")] = 0;
    break;
  }
  fclose(f);
}

void bench_json_machine(bench_json* j, const char* mpi_library) {
  if (!j->f) return;
  struct utsname u;
  char kernel[600] = "unknown", cpu[256], date[64];
  if (uname(&u) == 0) snprintf(kernel, sizeof kernel, "%s %s %s", u.sysname, u.release, u.machine);
  cpu_model(cpu, sizeof cpu);
  time_t now = time(NULL);
  strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
  bench_json_object(j, "machine");
  bench_json_int(j, "nproc", sysconf(_SC_NPROCESSORS_ONLN));
  bench_json_str(j, "kernel", kernel);
  bench_json_str(j, "cpu", cpu);
  bench_json_str(j, "date", date);
  bench_json_str(j, "mpi_library", mpi_library);
  bench_json_end(j);
}

void bench_json_tnbc(bench_json* j) {
  if (!j->f) return;
  const char* status = bench_tnbc_status();
  bench_json_object(j, "tnbc");
  bench_json_bool(j, "loaded", status != NULL);
  bench_json_str(j, "status", status);
  bench_json_bool(j, "active", bench_tnbc_active());
  bench_json_object(j, "environment");
  for (char** e = environ; *e; e++) {
    if (strncmp(*e, "TNBC_", 5) != 0) continue;
    const char* eq = strchr(*e, '=');
    if (!eq) continue;
    char key[128];
    snprintf(key, sizeof key, "%.*s", (int)(eq - *e), *e);
    bench_json_str(j, key, eq + 1);
  }
  bench_json_end(j);
  bench_json_end(j);
}

void bench_print_tnbc(FILE* out) {
  const char* s = bench_tnbc_status();
  if (!s)
    fprintf(out, "tnbc: NOT LOADED (libtnbc.so not preloaded): the 'tnbc' rows are plain MPI_* calls\n");
  else if (!bench_tnbc_active())
    fprintf(out, "tnbc: loaded, status '%s': NOT ACTIVE, the 'tnbc' rows do not return early\n", s);
  else
    fprintf(out, "tnbc: loaded, status '%s'\n", s);
}
