// gpubench: gpufleet's per-GPU dense GEMM throughput (cuBLASLt) and HBM bandwidth (copy, triad) benchmark.
// Copyright: (c) 2026, gpufleet engineers
// GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
//
// Build: nvcc -O2 -std=c++17 -o gpubench gpubench.cu -lcublasLt   (role gpufleet.acceptance.gpu_bench does it)
// Usage: gpubench [-d 0,1,...] [-n SIZE] [-t SECONDS] [-m HBM_MIB] [-g bf16,fp16,fp8,tf32,fp32] [-V]
//
// Every visible GPU (or the -d list) runs at the same time, one host thread each, so the node is loaded as a
// training job loads it. Per GPU: each GEMM precision on an SIZE x SIZE x SIZE problem, then the HBM copy and triad
// kernels; each test warms up, then runs timed iterations for about SECONDS (CUDA events). Output, one record per
// line (parsed by gpufleet/parsers/gpubench.py; name= and msg= take the rest of their line):
//   gpubench version=1.0 cuda=12.4 driver=550.54.15
//   gpu index=0 bus_id=00000000:18:00.0 cc=9.0 name=NVIDIA H100 80GB HBM3
//   gemm index=0 dtype=bf16 size=8192 iters=120 seconds=1.853 tflops=712.3
//   hbm index=0 test=copy bytes=2147483648 iters=200 seconds=0.291 gbs=2950.1
//   error index=3 test=fp8 msg=not supported on this part (compute capability 8.0 < 8.9)
//   end gpus=8
// TFLOP/s = 2*m*n*k*iters/seconds/1e12 (dense, no sparsity); GB/s = bytes read + bytes written per iteration *
// iters / seconds / 1e9 (copy: 2 arrays, triad: 3 arrays of HBM_MIB each).

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

static const char *kVersion = "1.0";

struct Options {
    std::vector<int> devices;
    long size = 8192;
    double seconds = 3.0;
    long hbm_mib = 1024;
    std::vector<std::string> dtypes = {"bf16", "fp16", "fp8", "tf32", "fp32"};
};

// One GPU's lines, printed in device order once every GPU is done (threads never interleave their output).
struct Report {
    std::ostringstream lines;
    bool declared = false;  // its gpu line was printed (end gpus= counts these)
};

static std::string one_line(const std::string &text) {
    std::string out = text;
    for (char &c : out) {
        if (c == '\n' || c == '\r') c = ' ';
    }
    return out;
}

static void error_line(Report &report, int index, const std::string &test, const std::string &message) {
    report.lines << "error index=" << index << " test=" << test << " msg=" << one_line(message) << "\n";
}

#define CUDA_TRY(call, what)                                                                   \
    do {                                                                                       \
        cudaError_t status_ = (call);                                                          \
        if (status_ != cudaSuccess) {                                                          \
            error_line(report, index, test, std::string(what) + ": " + cudaGetErrorString(status_)); \
            return false;                                                                      \
        }                                                                                      \
    } while (0)

#define LT_TRY(call, what)                                                                     \
    do {                                                                                       \
        cublasStatus_t status_ = (call);                                                       \
        if (status_ != CUBLAS_STATUS_SUCCESS) {                                                \
            error_line(report, index, test, std::string(what) + ": cublasLt status " + std::to_string((int)status_)); \
            return false;                                                                      \
        }                                                                                      \
    } while (0)

struct GemmType {
    cudaDataType_t ab, c;
    cublasComputeType_t compute;
    cudaDataType_t scale;
    size_t ab_bytes, c_bytes;
};

static bool gemm_type(const std::string &dtype, GemmType &out) {
    if (dtype == "bf16") out = {CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, CUDA_R_32F, 2, 2};
    else if (dtype == "fp16") out = {CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, CUDA_R_32F, 2, 2};
    else if (dtype == "fp8") out = {CUDA_R_8F_E4M3, CUDA_R_16BF, CUBLAS_COMPUTE_32F, CUDA_R_32F, 1, 2};
    else if (dtype == "tf32") out = {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, CUDA_R_32F, 4, 4};
    else if (dtype == "fp32") out = {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, CUDA_R_32F, 4, 4};
    else return false;
    return true;
}

// Times `launch` for about `seconds`: a warm-up (also the calibration), then the timed iterations.
// `count` launches between two events; their time in seconds into `elapsed`.
template <typename Launch>
static bool time_launches(Report &report, int index, const std::string &test, cudaEvent_t start, cudaEvent_t stop,
                          long count, const char *what, Launch launch, double &elapsed) {
    CUDA_TRY(cudaEventRecord(start), "cudaEventRecord");
    for (long i = 0; i < count; ++i) {
        if (!launch()) return false;
    }
    CUDA_TRY(cudaEventRecord(stop), "cudaEventRecord");
    CUDA_TRY(cudaEventSynchronize(stop), what);
    float ms = 0;
    CUDA_TRY(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    elapsed = ms / 1000.0;
    return true;
}

template <typename Launch>
static bool time_iterations(Report &report, int index, const std::string &test, double seconds, Launch launch,
                            long &iters, double &elapsed) {
    cudaEvent_t start, stop;
    CUDA_TRY(cudaEventCreate(&start), "cudaEventCreate");
    CUDA_TRY(cudaEventCreate(&stop), "cudaEventCreate");
    // a short warm-up sizes the timed run to about `seconds`
    const long warmup = 3;
    double warm = 0;
    bool ok = time_launches(report, index, test, start, stop, warmup, "warm-up", launch, warm);
    if (ok) {
        double per_iter = warm / warmup;
        iters = per_iter > 0 ? (long)(seconds / per_iter) : 1000;
        if (iters < 1) iters = 1;
        if (iters > 1000000) iters = 1000000;
        ok = time_launches(report, index, test, start, stop, iters, "timed run", launch, elapsed);
    }
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    return ok && elapsed > 0;
}

static bool run_gemm(Report &report, int index, const std::string &dtype, const Options &options,
                     cublasLtHandle_t handle, const cudaDeviceProp &prop) {
    const std::string &test = dtype;
    GemmType type;
    if (!gemm_type(dtype, type)) {
        error_line(report, index, test, "unknown precision");
        return false;
    }
    if (dtype == "fp8" && prop.major * 10 + prop.minor < 89) {
        error_line(report, index, test, "not supported on this part (compute capability " + std::to_string(prop.major) + "." +
                                            std::to_string(prop.minor) + " < 8.9)");
        return false;
    }
    const long n = options.size;
    void *a = nullptr, *b = nullptr, *c = nullptr, *workspace = nullptr;
    const size_t workspace_bytes = 64u << 20;
    CUDA_TRY(cudaMalloc(&a, n * n * type.ab_bytes), "cudaMalloc A");
    CUDA_TRY(cudaMalloc(&b, n * n * type.ab_bytes), "cudaMalloc B");
    CUDA_TRY(cudaMalloc(&c, n * n * type.c_bytes), "cudaMalloc C");
    CUDA_TRY(cudaMalloc(&workspace, workspace_bytes), "cudaMalloc workspace");
    // Small finite values: zero bytes would let nothing overflow but some parts clock differently on all-zero data.
    CUDA_TRY(cudaMemset(a, 0x3c, n * n * type.ab_bytes), "cudaMemset A");
    CUDA_TRY(cudaMemset(b, 0x3c, n * n * type.ab_bytes), "cudaMemset B");
    CUDA_TRY(cudaMemset(c, 0, n * n * type.c_bytes), "cudaMemset C");

    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
    LT_TRY(cublasLtMatmulDescCreate(&desc, type.compute, type.scale), "cublasLtMatmulDescCreate");
    // FP8 GEMMs in cuBLASLt take A transposed ("TN"); the same layout for every precision keeps the figures comparable.
    cublasOperation_t transa = CUBLAS_OP_T, transb = CUBLAS_OP_N;
    LT_TRY(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &transa, sizeof(transa)), "TRANSA");
    LT_TRY(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &transb, sizeof(transb)), "TRANSB");
    LT_TRY(cublasLtMatrixLayoutCreate(&la, type.ab, n, n, n), "layout A");
    LT_TRY(cublasLtMatrixLayoutCreate(&lb, type.ab, n, n, n), "layout B");
    LT_TRY(cublasLtMatrixLayoutCreate(&lc, type.c, n, n, n), "layout C");

    cublasLtMatmulPreference_t preference = nullptr;
    LT_TRY(cublasLtMatmulPreferenceCreate(&preference), "cublasLtMatmulPreferenceCreate");
    LT_TRY(cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes,
                                                sizeof(workspace_bytes)), "workspace preference");
    cublasLtMatmulHeuristicResult_t heuristic;
    int found = 0;
    LT_TRY(cublasLtMatmulAlgoGetHeuristic(handle, desc, la, lb, lc, lc, preference, 1, &heuristic, &found),
           "cublasLtMatmulAlgoGetHeuristic");
    if (found == 0) {
        error_line(report, index, test, "cuBLASLt has no algorithm for this precision on this part");
        return false;
    }
    const float alpha = 1.0f, beta = 0.0f;
    auto launch = [&]() -> bool {
        cublasStatus_t status = cublasLtMatmul(handle, desc, &alpha, a, la, b, lb, &beta, c, lc, c, lc, &heuristic.algo,
                                               workspace, workspace_bytes, 0);
        if (status != CUBLAS_STATUS_SUCCESS) {
            error_line(report, index, test, "cublasLtMatmul: cublasLt status " + std::to_string((int)status));
            return false;
        }
        return true;
    };
    long iters = 0;
    double elapsed = 0;
    bool ok = time_iterations(report, index, test, options.seconds, launch, iters, elapsed);
    if (ok) {
        double tflops = 2.0 * n * n * n * (double)iters / elapsed / 1e12;
        char line[256];
        snprintf(line, sizeof(line), "gemm index=%d dtype=%s size=%ld iters=%ld seconds=%.3f tflops=%.1f\n", index,
                 dtype.c_str(), n, iters, elapsed, tflops);
        report.lines << line;
    }
    cublasLtMatmulPreferenceDestroy(preference);
    cublasLtMatrixLayoutDestroy(la);
    cublasLtMatrixLayoutDestroy(lb);
    cublasLtMatrixLayoutDestroy(lc);
    cublasLtMatmulDescDestroy(desc);
    cudaFree(a);
    cudaFree(b);
    cudaFree(c);
    cudaFree(workspace);
    return ok;
}

__global__ void copy_kernel(const float4 *__restrict__ in, float4 *__restrict__ out, size_t count) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count; i += (size_t)gridDim.x * blockDim.x) {
        out[i] = in[i];
    }
}

__global__ void triad_kernel(const float4 *__restrict__ b, const float4 *__restrict__ c, float4 *__restrict__ a,
                             float scalar, size_t count) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count; i += (size_t)gridDim.x * blockDim.x) {
        float4 x = b[i], y = c[i];
        a[i] = make_float4(x.x + scalar * y.x, x.y + scalar * y.y, x.z + scalar * y.z, x.w + scalar * y.w);
    }
}

static bool run_hbm(Report &report, int index, const std::string &test, const Options &options,
                    const cudaDeviceProp &prop) {
    const size_t bytes = (size_t)options.hbm_mib << 20;
    const size_t count = bytes / sizeof(float4);
    float4 *x = nullptr, *y = nullptr, *z = nullptr;
    CUDA_TRY(cudaMalloc(&x, bytes), "cudaMalloc");
    CUDA_TRY(cudaMalloc(&y, bytes), "cudaMalloc");
    CUDA_TRY(cudaMalloc(&z, bytes), "cudaMalloc");
    CUDA_TRY(cudaMemset(x, 0, bytes), "cudaMemset");
    CUDA_TRY(cudaMemset(y, 0, bytes), "cudaMemset");
    const int threads = 256;
    const int blocks = prop.multiProcessorCount * 8;
    const bool triad = test == "triad";
    auto launch = [&]() -> bool {
        if (triad) triad_kernel<<<blocks, threads>>>(x, y, z, 3.0f, count);
        else copy_kernel<<<blocks, threads>>>(x, z, count);
        cudaError_t status = cudaGetLastError();
        if (status != cudaSuccess) {
            error_line(report, index, test, std::string("kernel launch: ") + cudaGetErrorString(status));
            return false;
        }
        return true;
    };
    long iters = 0;
    double elapsed = 0;
    bool ok = time_iterations(report, index, test, options.seconds, launch, iters, elapsed);
    if (ok) {
        // bytes read + bytes written: copy reads one array and writes one, triad reads two and writes one
        const double moved = (double)count * sizeof(float4) * (triad ? 3.0 : 2.0);
        char line[256];
        snprintf(line, sizeof(line), "hbm index=%d test=%s bytes=%.0f iters=%ld seconds=%.3f gbs=%.1f\n", index, test.c_str(),
                 moved, iters, elapsed, moved * iters / elapsed / 1e9);
        report.lines << line;
    }
    cudaFree(x);
    cudaFree(y);
    cudaFree(z);
    return ok;
}

static void run_device(int index, const Options &options, Report &report) {
    std::string test = "device";
    cudaDeviceProp prop;
    if (cudaSetDevice(index) != cudaSuccess || cudaGetDeviceProperties(&prop, index) != cudaSuccess) {
        error_line(report, index, test, "cannot open the device");
        return;
    }
    char bus_id[32] = {0};
    cudaDeviceGetPCIBusId(bus_id, sizeof(bus_id), index);
    report.declared = true;
    report.lines << "gpu index=" << index << " bus_id=" << bus_id << " cc=" << prop.major << "." << prop.minor
                 << " name=" << one_line(prop.name) << "\n";
    cublasLtHandle_t handle = nullptr;
    if (cublasLtCreate(&handle) != CUBLAS_STATUS_SUCCESS) {
        error_line(report, index, "gemm", "cublasLtCreate failed");
    } else {
        for (const std::string &dtype : options.dtypes) {
            run_gemm(report, index, dtype, options, handle, prop);
        }
        cublasLtDestroy(handle);
    }
    run_hbm(report, index, "copy", options, prop);
    run_hbm(report, index, "triad", options, prop);
}

static std::vector<std::string> split(const std::string &text) {
    std::vector<std::string> out;
    std::stringstream stream(text);
    std::string item;
    while (std::getline(stream, item, ',')) {
        if (!item.empty()) out.push_back(item);
    }
    return out;
}

// The driver's release (550.54.15) from the kernel module's banner; CUDA only knows the CUDA version it supports.
static std::string driver_release() {
    FILE *file = fopen("/proc/driver/nvidia/version", "r");
    if (!file) return "unknown";
    char banner[512] = {0};
    bool read = fgets(banner, sizeof(banner), file) != nullptr;
    fclose(file);
    const char *marker = read ? strstr(banner, "Kernel Module") : nullptr;
    if (!marker) return "unknown";
    std::stringstream words(marker + strlen("Kernel Module"));
    std::string release;
    words >> release;
    // the open kernel modules say "Kernel Module for x86_64  550.54.15": the release is the word with digits and dots
    while (!release.empty() && release.find_first_not_of("0123456789.") != std::string::npos && (words >> release)) {
    }
    return release.empty() || release.find_first_not_of("0123456789.") != std::string::npos ? "unknown" : release;
}

static int usage(const char *program) {
    fprintf(stderr, "usage: %s [-d 0,1,...] [-n SIZE] [-t SECONDS] [-m HBM_MIB] [-g bf16,fp16,fp8,tf32,fp32] [-V]\n",
            program);
    return 2;
}

int main(int argc, char **argv) {
    Options options;
    std::string device_list;
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        if (arg == "-V") {
            printf("gpubench version=%s\n", kVersion);
            return 0;
        }
        if (i + 1 >= argc) return usage(argv[0]);
        std::string value = argv[++i];
        if (arg == "-d") device_list = value;
        else if (arg == "-n") options.size = atol(value.c_str());
        else if (arg == "-t") options.seconds = atof(value.c_str());
        else if (arg == "-m") options.hbm_mib = atol(value.c_str());
        else if (arg == "-g") options.dtypes = split(value);
        else return usage(argv[0]);
    }
    if (options.size < 256 || options.seconds <= 0 || options.hbm_mib < 16) return usage(argv[0]);
    int runtime = 0, count = 0;
    cudaRuntimeGetVersion(&runtime);
    printf("gpubench version=%s cuda=%d.%d driver=%s\n", kVersion, runtime / 1000, (runtime % 1000) / 10,
           driver_release().c_str());
    cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess) {
        printf("error msg=no CUDA device: %s\n", cudaGetErrorString(status));
        printf("end gpus=0\n");
        return 1;
    }
    if (device_list.empty()) {
        for (int d = 0; d < count; ++d) options.devices.push_back(d);
    } else {
        for (const std::string &item : split(device_list)) {
            int d = atoi(item.c_str());
            if (d < 0 || d >= count) {
                printf("error msg=device %s is not one of the %d visible GPUs\n", item.c_str(), count);
                printf("end gpus=0\n");
                return 2;
            }
            options.devices.push_back(d);
        }
    }
    fflush(stdout);
    std::vector<Report> reports(options.devices.size());
    std::vector<std::thread> threads;
    for (size_t i = 0; i < options.devices.size(); ++i) {
        threads.emplace_back(run_device, options.devices[i], std::cref(options), std::ref(reports[i]));
    }
    for (std::thread &thread : threads) thread.join();
    size_t declared = 0;
    for (const Report &report : reports) {
        fputs(report.lines.str().c_str(), stdout);
        declared += report.declared ? 1 : 0;
    }
    printf("end gpus=%zu\n", declared);
    return 0;
}
