/*
 * Copyright: (c) 2026, gpufleet engineers
 * GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
 *
 * A fake libnvidia-ml.so (a TEST DOUBLE, not NVIDIA's library): it exports the NVML symbols the gpufleet
 * sampler uses and serves the values of a data file named by the environment variable FAKE_NVML_DATA
 * (read at nvmlInit). The data files in this folder copy their values from recordings of real machines
 * (each names its recording on a "# source:" line) and mark what is SYNTHETIC.
 *
 * The structures and enumerations below are written from nvml.h (CUDA 12/13); the layout test compares
 * the product's ctypes structures with nvidia-ml-py's, and this file fills them at the C offsets, so a
 * wrong ctypes layout reads wrong values in the sampler tests too.
 *
 * Build: gcc -shared -fPIC -o libnvidia-ml.so.1 fake_nvml.c ; -DOMIT_<symbol> leaves <symbol> out (an
 * older driver's library), e.g. -DOMIT_nvmlDeviceGetFieldValues.
 *
 * Data file: one directive a line, '#' starts a comment; counters take an optional "step N" (each read
 * returns the value, then adds N):
 *   driver 590.48.01 | nvml 13.590.48.01 | init_error CODE (nvmlInit fails with CODE)
 *   gpus N
 *   gpu I uuid TEXT | gpu I name TEXT TO END OF LINE | gpu I pci BUS_ID
 *   gpu I temperature C | gpu I sm_clock MHZ | gpu I power_mw MW
 *   gpu I field ID VALUE [step N] | gpu I field_error ID CODE   (per-field nvmlReturn; others NOT_SUPPORTED)
 *   gpu I violation POLICY NS [step N]                            (others NOT_SUPPORTED)
 *   gpu I ecc ERROR_TYPE COUNTER_TYPE VALUE [step N]             (others NOT_SUPPORTED)
 *   gpu I links N (links 0..N-1 exist, all active) | gpu I link_down L
 *   gpu I nvlink_err LINK|* COUNTER VALUE [step N] | gpu I nvlink_err_fail COUNTER CODE
 *   gpu I fail FUNCTION CODE    (FUNCTION returns CODE for this GPU)
 *   gpu I lost                  (every call for this GPU returns NVML_ERROR_GPU_IS_LOST)
 *   gpu I lost_after N          (lost from the (N+1)th nvmlDeviceGetTemperature call on)
 * FAKE_NVML_LOG, when set, names a file that gets a line per nvmlInit/nvmlShutdown.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int nvmlReturn_t;
#define NVML_SUCCESS 0
#define NVML_ERROR_UNINITIALIZED 1
#define NVML_ERROR_INVALID_ARGUMENT 2
#define NVML_ERROR_NOT_SUPPORTED 3
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define NVML_ERROR_GPU_IS_LOST 15
#define NVML_ERROR_UNKNOWN 999

typedef enum { NVML_VALUE_TYPE_UNSIGNED_LONG_LONG = 3 } nvmlValueType_t;

typedef union {
    double dVal;
    unsigned int uiVal;
    unsigned long ulVal;
    unsigned long long ullVal;
    signed long long sllVal;
    signed int siVal;
    unsigned short usVal;
} nvmlValue_t;

typedef struct {
    unsigned int fieldId;
    unsigned int scopeId;
    long long timestamp;
    long long latencyUsec;
    nvmlValueType_t valueType;
    nvmlReturn_t nvmlReturn;
    nvmlValue_t value;
} nvmlFieldValue_t;

typedef struct {
    unsigned long long referenceTime;
    unsigned long long violationTime;
} nvmlViolationTime_t;

typedef struct {
    char busIdLegacy[16];
    unsigned int domain;
    unsigned int bus;
    unsigned int device;
    unsigned int pciDeviceId;
    unsigned int pciSubSystemId;
    char busId[32];
} nvmlPciInfo_t;

#define MAX_GPUS 16
#define MAX_FIELDS 32
#define MAX_FAILS 16
#define MAX_LINKS 36
#define NVLINK_COUNTERS 4
#define POLICIES 12

typedef struct {
    int set;
    nvmlReturn_t err;
    unsigned long long value;
    unsigned long long step;
} counter_t;

typedef struct {
    unsigned int id;
    nvmlReturn_t err;
    counter_t c;
} field_t;

typedef struct {
    char function[64];
    nvmlReturn_t code;
} fail_t;

typedef struct nvmlDevice_st {
    int index;
    char uuid[96];
    char name[96];
    char pci[32];
    int has_temperature, has_sm_clock, has_power;
    unsigned int temperature, sm_clock, power_mw;
    field_t fields[MAX_FIELDS];
    int nfields;
    counter_t violation[POLICIES];
    counter_t ecc[2][2];
    int links;
    int link_down[MAX_LINKS];
    counter_t nvlink[MAX_LINKS][NVLINK_COUNTERS];
    nvmlReturn_t nvlink_fail[NVLINK_COUNTERS];
    fail_t fails[MAX_FAILS];
    int nfails;
    int lost;
    int lost_after;
    int temperature_calls;
} *nvmlDevice_t;

static struct nvmlDevice_st gpus[MAX_GPUS];
static int ngpus;
static int initialized;
static nvmlReturn_t init_error;
static char driver[80];
static char nvml_version[80];

static void log_line(const char *what)
{
    const char *path = getenv("FAKE_NVML_LOG");
    FILE *f;
    if (!path || !*path)
        return;
    f = fopen(path, "a");
    if (f) {
        fprintf(f, "%s\n", what);
        fclose(f);
    }
}

static unsigned long long read_counter(counter_t *c)
{
    unsigned long long v = c->value;
    c->value += c->step;
    return v;
}

static void parse_step(const char *rest, counter_t *c)
{
    unsigned long long step = 0;
    if (rest && sscanf(rest, " step %llu", &step) == 1)
        c->step = step;
}

/* The text after the first `skip` whitespace-separated words of `line`, without the newline. */
static const char *after_words(const char *line, int skip)
{
    const char *p = line;
    while (skip-- > 0) {
        while (*p == ' ' || *p == '\t')
            p++;
        while (*p && *p != ' ' && *p != '\t' && *p != '\n')
            p++;
    }
    while (*p == ' ' || *p == '\t')
        p++;
    return p;
}

static void copy_rest(char *dst, size_t size, const char *src)
{
    size_t n = strcspn(src, "\r\n");
    if (n >= size)
        n = size - 1;
    memcpy(dst, src, n);
    while (n > 0 && (dst[n - 1] == ' ' || dst[n - 1] == '\t'))
        n--;
    dst[n] = '\0';
}

static int load(const char *path)
{
    FILE *f = fopen(path, "r");
    char line[512];
    if (!f) {
        fprintf(stderr, "fake_nvml: cannot read FAKE_NVML_DATA=%s\n", path);
        return -1;
    }
    memset(gpus, 0, sizeof(gpus));
    ngpus = 0;
    init_error = NVML_SUCCESS;
    driver[0] = nvml_version[0] = '\0';
    while (fgets(line, sizeof(line), f)) {
        char word[64], key[64];
        int i, n, a, b;
        unsigned long long v;
        struct nvmlDevice_st *g;
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        if (sscanf(line, "%63s", word) != 1)
            continue;
        if (!strcmp(word, "driver")) {
            copy_rest(driver, sizeof(driver), after_words(line, 1));
            continue;
        }
        if (!strcmp(word, "nvml")) {
            copy_rest(nvml_version, sizeof(nvml_version), after_words(line, 1));
            continue;
        }
        if (!strcmp(word, "init_error")) {
            sscanf(line, "%*s %d", &init_error);
            continue;
        }
        if (!strcmp(word, "gpus")) {
            sscanf(line, "%*s %d", &ngpus);
            if (ngpus > MAX_GPUS)
                ngpus = MAX_GPUS;
            for (i = 0; i < ngpus; i++)
                gpus[i].index = i;
            continue;
        }
        if (strcmp(word, "gpu") || sscanf(line, "%*s %d %63s", &i, key) != 2 || i < 0 || i >= MAX_GPUS) {
            fprintf(stderr, "fake_nvml: cannot read line: %s", line);
            fclose(f);
            return -1;
        }
        g = &gpus[i];
        if (!strcmp(key, "uuid"))
            copy_rest(g->uuid, sizeof(g->uuid), after_words(line, 3));
        else if (!strcmp(key, "name"))
            copy_rest(g->name, sizeof(g->name), after_words(line, 3));
        else if (!strcmp(key, "pci"))
            copy_rest(g->pci, sizeof(g->pci), after_words(line, 3));
        else if (!strcmp(key, "temperature"))
            g->has_temperature = sscanf(line, "%*s %*d %*s %u", &g->temperature) == 1;
        else if (!strcmp(key, "sm_clock"))
            g->has_sm_clock = sscanf(line, "%*s %*d %*s %u", &g->sm_clock) == 1;
        else if (!strcmp(key, "power_mw"))
            g->has_power = sscanf(line, "%*s %*d %*s %u", &g->power_mw) == 1;
        else if (!strcmp(key, "field") && g->nfields < MAX_FIELDS && sscanf(line, "%*s %*d %*s %d %llu", &a, &v) == 2) {
            field_t *fv = &g->fields[g->nfields++];
            fv->id = (unsigned int)a;
            fv->c.set = 1;
            fv->c.value = v;
            parse_step(after_words(line, 5), &fv->c);
        } else if (!strcmp(key, "field_error") && g->nfields < MAX_FIELDS && sscanf(line, "%*s %*d %*s %d %d", &a, &b) == 2) {
            field_t *fv = &g->fields[g->nfields++];
            fv->id = (unsigned int)a;
            fv->err = b;
        } else if (!strcmp(key, "violation") && sscanf(line, "%*s %*d %*s %d %llu", &a, &v) == 2 && a >= 0 && a < POLICIES) {
            g->violation[a].set = 1;
            g->violation[a].value = v;
            parse_step(after_words(line, 5), &g->violation[a]);
        } else if (!strcmp(key, "ecc") && sscanf(line, "%*s %*d %*s %d %d %llu", &a, &b, &v) == 3 && a >= 0 && a < 2 && b >= 0 && b < 2) {
            g->ecc[a][b].set = 1;
            g->ecc[a][b].value = v;
            parse_step(after_words(line, 6), &g->ecc[a][b]);
        } else if (!strcmp(key, "links") && sscanf(line, "%*s %*d %*s %d", &n) == 1) {
            g->links = n > MAX_LINKS ? MAX_LINKS : n;
        } else if (!strcmp(key, "link_down") && sscanf(line, "%*s %*d %*s %d", &n) == 1 && n >= 0 && n < MAX_LINKS) {
            g->link_down[n] = 1;
        } else if (!strcmp(key, "nvlink_err")) {
            char link[16];
            int first, last, l;
            if (sscanf(line, "%*s %*d %*s %15s %d %llu", link, &b, &v) != 3 || b < 0 || b >= NVLINK_COUNTERS)
                goto bad;
            if (!strcmp(link, "*")) {
                first = 0;
                last = MAX_LINKS - 1;
            } else {
                first = last = atoi(link);
                if (first < 0 || first >= MAX_LINKS)
                    goto bad;
            }
            for (l = first; l <= last; l++) {
                g->nvlink[l][b].set = 1;
                g->nvlink[l][b].value = v;
                parse_step(after_words(line, 6), &g->nvlink[l][b]);
            }
        } else if (!strcmp(key, "nvlink_err_fail") && sscanf(line, "%*s %*d %*s %d %d", &a, &b) == 2 && a >= 0 && a < NVLINK_COUNTERS) {
            g->nvlink_fail[a] = b;
        } else if (!strcmp(key, "fail") && g->nfails < MAX_FAILS &&
                   sscanf(line, "%*s %*d %*s %63s %d", g->fails[g->nfails].function, &g->fails[g->nfails].code) == 2) {
            g->nfails++;
        } else if (!strcmp(key, "lost")) {
            g->lost = 1;
        } else if (!strcmp(key, "lost_after") && sscanf(line, "%*s %*d %*s %d", &g->lost_after) == 1) {
            /* read */
        } else {
            goto bad;
        }
        continue;
bad:
        fprintf(stderr, "fake_nvml: cannot read line: %s", line);
        fclose(f);
        return -1;
    }
    fclose(f);
    return 0;
}

/* What a call for `g` returns before doing its work: uninitialized, lost, or an injected failure. */
static nvmlReturn_t gate(struct nvmlDevice_st *g, const char *function)
{
    int i;
    if (!initialized)
        return NVML_ERROR_UNINITIALIZED;
    if (!g || g < gpus || g >= gpus + ngpus)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (g->lost)
        return NVML_ERROR_GPU_IS_LOST;
    for (i = 0; i < g->nfails; i++)
        if (!strcmp(g->fails[i].function, function))
            return g->fails[i].code;
    return NVML_SUCCESS;
}

static nvmlReturn_t do_init(void)
{
    const char *path = getenv("FAKE_NVML_DATA");
    if (!path || load(path) != 0)
        return NVML_ERROR_UNKNOWN;
    if (init_error != NVML_SUCCESS)
        return init_error;
    initialized++;
    log_line("init");
    return NVML_SUCCESS;
}

#ifndef OMIT_nvmlInit_v2
nvmlReturn_t nvmlInit_v2(void)
{
    return do_init();
}
#endif

#ifndef OMIT_nvmlInitWithFlags
nvmlReturn_t nvmlInitWithFlags(unsigned int flags)
{
    (void)flags;
    return do_init();
}
#endif

nvmlReturn_t nvmlShutdown(void)
{
    if (!initialized)
        return NVML_ERROR_UNINITIALIZED;
    initialized--;
    log_line("shutdown");
    return NVML_SUCCESS;
}

const char *nvmlErrorString(nvmlReturn_t result)
{
    switch (result) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    default: return "Unknown Error";
    }
}

static nvmlReturn_t copy_string(const char *value, char *buf, unsigned int length)
{
    if (!buf)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (strlen(value) + 1 > length)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    strcpy(buf, value);
    return NVML_SUCCESS;
}

#ifndef OMIT_nvmlSystemGetDriverVersion
nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length)
{
    if (!initialized)
        return NVML_ERROR_UNINITIALIZED;
    return driver[0] ? copy_string(driver, version, length) : NVML_ERROR_NOT_SUPPORTED;
}
#endif

#ifndef OMIT_nvmlSystemGetNVMLVersion
nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned int length)
{
    if (!initialized)
        return NVML_ERROR_UNINITIALIZED;
    return nvml_version[0] ? copy_string(nvml_version, version, length) : NVML_ERROR_NOT_SUPPORTED;
}
#endif

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count)
{
    if (!initialized)
        return NVML_ERROR_UNINITIALIZED;
    *count = (unsigned int)ngpus;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
    int i;
    if (!initialized)
        return NVML_ERROR_UNINITIALIZED;
    if (index >= (unsigned int)ngpus)
        return NVML_ERROR_INVALID_ARGUMENT;
    for (i = 0; i < gpus[index].nfails; i++)
        if (!strcmp(gpus[index].fails[i].function, "nvmlDeviceGetHandleByIndex_v2"))
            return gpus[index].fails[i].code;
    *device = &gpus[index];
    return NVML_SUCCESS;
}

#ifndef OMIT_nvmlDeviceGetUUID
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length)
{
    nvmlReturn_t r = gate(device, "nvmlDeviceGetUUID");
    return r ? r : copy_string(device->uuid, uuid, length);
}
#endif

#ifndef OMIT_nvmlDeviceGetName
nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length)
{
    nvmlReturn_t r = gate(device, "nvmlDeviceGetName");
    return r ? r : copy_string(device->name, name, length);
}
#endif

#ifndef OMIT_nvmlDeviceGetPciInfo_v3
nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
    unsigned int domain = 0, bus = 0, dev = 0, fn = 0;
    nvmlReturn_t r = gate(device, "nvmlDeviceGetPciInfo_v3");
    if (r)
        return r;
    memset(pci, 0, sizeof(*pci));
    sscanf(device->pci, "%x:%x:%x.%x", &domain, &bus, &dev, &fn);
    pci->domain = domain;
    pci->bus = bus;
    pci->device = dev;
    snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy), "%04x:%02x:%02x.%x", domain & 0xffff, bus, dev, fn);
    copy_string(device->pci, pci->busId, sizeof(pci->busId));
    return NVML_SUCCESS;
}
#endif

#ifndef OMIT_nvmlDeviceGetTemperature
nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, int sensor, unsigned int *temp)
{
    nvmlReturn_t r = gate(device, "nvmlDeviceGetTemperature");
    if (r)
        return r;
    device->temperature_calls++;
    if (device->lost_after > 0 && device->temperature_calls > device->lost_after) {
        device->lost = 1;
        return NVML_ERROR_GPU_IS_LOST;
    }
    if (sensor != 0)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!device->has_temperature)
        return NVML_ERROR_NOT_SUPPORTED;
    *temp = device->temperature;
    return NVML_SUCCESS;
}
#endif

#ifndef OMIT_nvmlDeviceGetClockInfo
nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, int type, unsigned int *clock)
{
    nvmlReturn_t r = gate(device, "nvmlDeviceGetClockInfo");
    if (r)
        return r;
    if (type != 1) /* NVML_CLOCK_SM */
        return NVML_ERROR_NOT_SUPPORTED;
    if (!device->has_sm_clock)
        return NVML_ERROR_NOT_SUPPORTED;
    *clock = device->sm_clock;
    return NVML_SUCCESS;
}
#endif

#ifndef OMIT_nvmlDeviceGetPowerUsage
nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int *power)
{
    nvmlReturn_t r = gate(device, "nvmlDeviceGetPowerUsage");
    if (r)
        return r;
    if (!device->has_power)
        return NVML_ERROR_NOT_SUPPORTED;
    *power = device->power_mw;
    return NVML_SUCCESS;
}
#endif

#ifndef OMIT_nvmlDeviceGetFieldValues
nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t device, int valuesCount, nvmlFieldValue_t *values)
{
    int i, j;
    struct timespec now;
    nvmlReturn_t r = gate(device, "nvmlDeviceGetFieldValues");
    if (r)
        return r;
    if (valuesCount < 0 || (valuesCount > 0 && !values))
        return NVML_ERROR_INVALID_ARGUMENT;
    clock_gettime(CLOCK_REALTIME, &now);
    for (i = 0; i < valuesCount; i++) {
        nvmlFieldValue_t *out = &values[i];
        out->timestamp = (long long)now.tv_sec * 1000000LL + now.tv_nsec / 1000;
        out->latencyUsec = 0;
        out->nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
        for (j = 0; j < device->nfields; j++) {
            field_t *fv = &device->fields[j];
            if (fv->id != out->fieldId)
                continue;
            if (fv->err) {
                out->nvmlReturn = fv->err;
            } else {
                out->valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
                out->value.ullVal = read_counter(&fv->c);
                out->nvmlReturn = NVML_SUCCESS;
            }
            break;
        }
    }
    return NVML_SUCCESS;
}
#endif

#ifndef OMIT_nvmlDeviceGetViolationStatus
nvmlReturn_t nvmlDeviceGetViolationStatus(nvmlDevice_t device, int perfPolicyType, nvmlViolationTime_t *violTime)
{
    nvmlReturn_t r = gate(device, "nvmlDeviceGetViolationStatus");
    if (r)
        return r;
    if (perfPolicyType < 0 || perfPolicyType >= POLICIES)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!device->violation[perfPolicyType].set)
        return NVML_ERROR_NOT_SUPPORTED;
    violTime->referenceTime = (unsigned long long)time(NULL) * 1000000ULL;
    violTime->violationTime = read_counter(&device->violation[perfPolicyType]);
    return NVML_SUCCESS;
}
#endif

#ifndef OMIT_nvmlDeviceGetTotalEccErrors
nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device, int errorType, int counterType, unsigned long long *eccCounts)
{
    nvmlReturn_t r = gate(device, "nvmlDeviceGetTotalEccErrors");
    if (r)
        return r;
    if (errorType < 0 || errorType > 1 || counterType < 0 || counterType > 1)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!device->ecc[errorType][counterType].set)
        return NVML_ERROR_NOT_SUPPORTED;
    *eccCounts = read_counter(&device->ecc[errorType][counterType]);
    return NVML_SUCCESS;
}
#endif

#ifndef OMIT_nvmlDeviceGetNvLinkState
nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link, int *isActive)
{
    nvmlReturn_t r = gate(device, "nvmlDeviceGetNvLinkState");
    if (r)
        return r;
    if (device->links == 0)
        return NVML_ERROR_NOT_SUPPORTED;
    if (link >= (unsigned int)device->links)
        return NVML_ERROR_INVALID_ARGUMENT;
    *isActive = device->link_down[link] ? 0 : 1;
    return NVML_SUCCESS;
}
#endif

#ifndef OMIT_nvmlDeviceGetNvLinkErrorCounter
nvmlReturn_t nvmlDeviceGetNvLinkErrorCounter(nvmlDevice_t device, unsigned int link, int counter, unsigned long long *counterValue)
{
    nvmlReturn_t r = gate(device, "nvmlDeviceGetNvLinkErrorCounter");
    if (r)
        return r;
    if (device->links == 0)
        return NVML_ERROR_NOT_SUPPORTED;
    if (link >= (unsigned int)device->links || counter < 0 || counter >= NVLINK_COUNTERS)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (device->nvlink_fail[counter])
        return device->nvlink_fail[counter];
    *counterValue = device->nvlink[link][counter].set ? read_counter(&device->nvlink[link][counter]) : 0;
    return NVML_SUCCESS;
}
#endif
