// gpubench: gpufleet's per-GPU dense GEMM throughput (cuBLASLt) and HBM bandwidth (copy, triad) benchmark.
// Copyright: (c) 2026, gpufleet engineers
// GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
//
// Build: nvcc -O2 -std=c++17 -o gpubench gpubench.cu -lcublasLt, with gpubench_logic.h beside it (role
// gpufleet.acceptance.gpu_bench does it). Usage: gpubench_logic.h's usage_text(), printed on a bad argument.
//
// Every visible GPU (or the -d list, in nvidia-smi's order) runs at the same time, one host thread each, so the node
// is loaded as a training job loads it; the threads start each test together (a barrier). Per GPU: each GEMM
// precision on a SIZE^3 problem with normally distributed inputs, then the HBM copy and triad kernels, then (-s) a
// sustained bf16 GEMM on every GPU at once. Each test warms up for a time (max(1 s, SECONDS / 2)), sizes its timed
// window on a short calibration batch, then runs about SECONDS (CUDA events). No wait on a GPU blocks: each test has
// a deadline, and a GPU past it is reported and left alone. Output (version 1.1), one record per line, printed and
// flushed as it completes (lines of different GPUs interleave), parsed by gpufleet/parsers/gpubench.py; name= and
// msg= take the rest of their line:
//   gpubench version=1.1 cuda=12.4 driver=550.54.15 order=PCI_BUS_ID
//   gpu index=0 bus_id=00000000:18:00.0 cc=9.0 sms=132 l2_mib=50 name=NVIDIA H100 80GB HBM3
//   gemm index=0 dtype=bf16 size=8192 init=normal warmup_s=1.50 iters=120 seconds=3.012 tflops=712.3
//   gemm index=0 dtype=fp8 size=8192 init=normal fast_accum=0 warmup_s=1.50 iters=240 seconds=3.004 tflops=1402.6
//   hbm index=0 test=copy bytes=4294967296 grid=1056 threads=256 iters=200 seconds=0.291 gbs=2950.1
//   sustained index=0 dtype=bf16 size=8192 seconds=30.0 windows=30 tflops=705.2 first=712.0 last=698.1 min=695.3
//   error index=3 test=fp8 msg=not supported on this part (compute capability 8.0 < 8.9)
//   error index=5 test=bf16 msg=timeout: no result within the 25.0 s deadline of this test; no further test on this GPU
//   end gpus=8
// TFLOP/s = 2*m*n*k*iters/seconds/1e12 (dense, no sparsity); GB/s = bytes read + bytes written per iteration *
// iters / seconds / 1e9 (copy: 2 arrays, triad: 3 arrays of HBM_MIB each).

#include "gpubench_logic.h"

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <chrono>
#include <condition_variable>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using gpubench::Options;
using Clock = std::chrono::steady_clock;

constexpr double kOpenDeadlineS = 60;   // context creation and the cuBLASLt handle, all GPUs at once
constexpr double kWatchdogGraceS = 5;   // a thread past its deadline by this much is stuck in a CUDA call
constexpr long kChunk = 64;             // launches between two pacing events (see pace())
constexpr size_t kWorkspaceBytes = 64u << 20;
constexpr auto kPoll = std::chrono::microseconds(200);

// ---- output ----------------------------------------------------------------------------------------------------

// One GPU thread's state, shared with main under g_mutex (main watches the deadlines).
struct Gpu {
    size_t slot = 0;            // its place in the barrier
    int index = 0;              // CUDA index (nvidia-smi's, with CUDA_DEVICE_ORDER=PCI_BUS_ID)
    bool declared = false;      // its gpu line is out (end gpus= counts these)
    bool hung = false;          // a test timed out: its context may never return
    bool silenced = false;      // main reported it stuck: nothing more is printed for it
    bool finished = false;      // its thread has returned from every CUDA call it will make
    std::string test;           // the test under way, "" between tests
    double deadline_s = 0;      // its deadline, from its start
    Clock::time_point deadline;
};

static std::mutex g_mutex;                  // stdout and every Gpu
static std::condition_variable g_finished;  // a thread finished

__attribute__((format(printf, 1, 2))) static std::string format(const char *pattern, ...) {
    char line[1024];
    va_list args;
    va_start(args, pattern);
    vsnprintf(line, sizeof(line), pattern, args);
    va_end(args);
    return line;
}

static std::string one_line(const std::string &text) {
    std::string out = text;
    for (char &c : out) {
        if (c == '\n' || c == '\r') c = ' ';
    }
    return out;
}

// A whole line, flushed at once: the playbook reads records while the run goes on, and a crash loses none.
static void print_locked(const std::string &line) {
    fputs((line + "\n").c_str(), stdout);
    fflush(stdout);
}

static void print_line(const std::string &line) {
    std::lock_guard<std::mutex> lock(g_mutex);
    print_locked(line);
}

static void emit(Gpu &gpu, const std::string &line) {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (!gpu.silenced) print_locked(line);
}

static std::string error_record(int index, const std::string &test, const std::string &message) {
    return "error index=" + std::to_string(index) + " test=" + test + " msg=" + one_line(message);
}

static std::string timeout_message(double deadline_s) {
    return format("timeout: no result within the %.1f s deadline of this test; no further test on this GPU",
                  deadline_s);
}

// ---- a test: its deadline and its first error ------------------------------------------------------------------

// Set once this thread's GPU timed out: from then on nothing may wait for it (cudaFree and the destroy calls
// synchronise), so the guards below leak instead; the process exits without tearing the context down.
static thread_local bool t_hung = false;

struct Test {
    Gpu &gpu;
    std::string name;
    double deadline_s;
    Clock::time_point deadline;
    std::string error;
    bool timed_out = false;

    Test(Gpu &owner, const std::string &test, double seconds)
        : gpu(owner), name(test), deadline_s(seconds),
          deadline(Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds))) {
        std::lock_guard<std::mutex> lock(g_mutex);
        gpu.test = name;
        gpu.deadline_s = deadline_s;
        gpu.deadline = deadline;
    }
    ~Test() {
        std::lock_guard<std::mutex> lock(g_mutex);
        gpu.test.clear();
    }
    Test(const Test &) = delete;
    Test &operator=(const Test &) = delete;

    bool fail(const std::string &message) {
        if (error.empty()) error = message;
        return false;
    }
    bool cuda(cudaError_t status, const char *what) {
        return status == cudaSuccess || fail(std::string(what) + ": " + cudaGetErrorString(status));
    }
    bool lt(cublasStatus_t status, const char *what) {
        return status == CUBLAS_STATUS_SUCCESS || fail(std::string(what) + ": " + cublasLtGetStatusString(status));
    }
    bool time_out() {
        timed_out = true;
        t_hung = true;
        std::lock_guard<std::mutex> lock(g_mutex);
        gpu.hung = true;
        return false;
    }
};

// ---- RAII guards: every path frees what it made (unless the GPU hung) ----------------------------------------
// (inline, not static: a template argument of internal linkage in a struct type draws -Wsubobject-linkage)

template <typename Handle, auto Destroy>
struct Guard {
    Handle handle{};
    Guard() = default;
    Guard(const Guard &) = delete;
    Guard &operator=(const Guard &) = delete;
    ~Guard() {
        if (handle && !t_hung) Destroy(handle);
    }
};

inline void free_device(void *pointer) { cudaFree(pointer); }
inline void destroy_event(cudaEvent_t event) { cudaEventDestroy(event); }
inline void destroy_lt(cublasLtHandle_t handle) { cublasLtDestroy(handle); }
inline void destroy_desc(cublasLtMatmulDesc_t desc) { cublasLtMatmulDescDestroy(desc); }
inline void destroy_layout(cublasLtMatrixLayout_t layout) { cublasLtMatrixLayoutDestroy(layout); }
inline void destroy_preference(cublasLtMatmulPreference_t pref) { cublasLtMatmulPreferenceDestroy(pref); }

using DeviceMemory = Guard<void *, free_device>;
using Event = Guard<cudaEvent_t, destroy_event>;
using LtHandle = Guard<cublasLtHandle_t, destroy_lt>;
using LtDesc = Guard<cublasLtMatmulDesc_t, destroy_desc>;
using LtLayout = Guard<cublasLtMatrixLayout_t, destroy_layout>;
using LtPreference = Guard<cublasLtMatmulPreference_t, destroy_preference>;

// ---- timing without blocking -----------------------------------------------------------------------------------

struct Timer {
    Event start, stop, marks[2];
};

static bool make_timer(Test &t, Timer &timer) {
    return t.cuda(cudaEventCreate(&timer.start.handle), "cudaEventCreate") &&
           t.cuda(cudaEventCreate(&timer.stop.handle), "cudaEventCreate") &&
           t.cuda(cudaEventCreateWithFlags(&timer.marks[0].handle, cudaEventDisableTiming), "cudaEventCreate") &&
           t.cuda(cudaEventCreateWithFlags(&timer.marks[1].handle, cudaEventDisableTiming), "cudaEventCreate");
}

// Polls instead of cudaEventSynchronize, which never returns on a hung GPU.
static bool wait_for(Test &t, cudaEvent_t event) {
    for (;;) {
        const cudaError_t status = cudaEventQuery(event);
        if (status == cudaSuccess) return true;
        if (status != cudaErrorNotReady) return t.cuda(status, "waiting for the GPU");
        if (Clock::now() >= t.deadline) return t.time_out();
        std::this_thread::sleep_for(kPoll);
    }
}

// After chunk `chunk` (1, 2, ...) of kChunk launches: waits for the chunk before it. At most two chunks are queued:
// a full launch queue would block the thread inside a launch call, where no deadline reaches it; one chunk still
// queued keeps the GPU busy while the next is launched.
static bool pace(Test &t, Timer &timer, long chunk) {
    if (!t.cuda(cudaEventRecord(timer.marks[chunk % 2].handle), "cudaEventRecord")) return false;
    return chunk < 2 || wait_for(t, timer.marks[(chunk - 1) % 2].handle);
}

// `iters` launches between two events; their GPU time in `seconds`.
template <typename Launch>
static bool run_batch(Test &t, Timer &timer, Launch &launch, long iters, double &seconds) {
    if (!t.cuda(cudaEventRecord(timer.start.handle), "cudaEventRecord")) return false;
    for (long i = 1; i <= iters; ++i) {
        if (!launch()) return false;
        if (i % kChunk == 0 && !pace(t, timer, i / kChunk)) return false;
    }
    float ms = 0;
    if (!t.cuda(cudaEventRecord(timer.stop.handle), "cudaEventRecord") || !wait_for(t, timer.stop.handle)) return false;
    if (!t.cuda(cudaEventElapsedTime(&ms, timer.start.handle, timer.stop.handle), "cudaEventElapsedTime")) return false;
    seconds = ms / 1000.0;
    return true;
}

// A batch of about `target_s` at the estimate `per_iter` (1 launch while there is none); the estimate from it.
template <typename Launch>
static bool refine(Test &t, Timer &timer, Launch &launch, double target_s, double &per_iter) {
    const long iters = per_iter > 0 ? gpubench::calibrate_iters(per_iter, target_s) : 1;
    double seconds = 0;
    if (!run_batch(t, timer, launch, iters, seconds)) return false;
    if (!(seconds > 0)) return t.fail(format("a batch of %ld launches measured no time", iters));
    per_iter = seconds / iters;
    return true;
}

// Batches of at most kWarmupBatchS until `seconds` of wall time have passed (clocks and temperature settle).
template <typename Launch>
static bool warm_up(Test &t, Timer &timer, Launch &launch, double seconds, double &per_iter, double &spent) {
    const Clock::time_point begin = Clock::now();
    spent = 0;
    for (;;) {
        if (!refine(t, timer, launch, std::min(gpubench::kWarmupBatchS, seconds - spent), per_iter)) return false;
        spent = std::chrono::duration<double>(Clock::now() - begin).count();
        if (spent >= seconds) return true;
    }
}

struct Timing {
    double warmup_s = 0;
    long iters = 0;
    double seconds = 0;
};

// Warm-up, a calibration batch at the warm clocks, then the timed window of about `timed_s`.
template <typename Launch>
static bool time_test(Test &t, Launch &launch, double timed_s, Timing &out) {
    Timer timer;
    double per_iter = 0;
    const double warmup_s = gpubench::warmup_seconds(timed_s);
    if (!make_timer(t, timer) || !warm_up(t, timer, launch, warmup_s, per_iter, out.warmup_s) ||
        !refine(t, timer, launch, gpubench::kCalibrationS, per_iter)) {
        return false;
    }
    out.iters = gpubench::calibrate_iters(per_iter, timed_s);
    if (!run_batch(t, timer, launch, out.iters, out.seconds)) return false;
    return out.seconds > 0 || t.fail("the timed window measured no time");
}

// ---- GEMM inputs: normal values on the device -------------------------------------------------------------------

__device__ inline void store(float value, float *out) { *out = value; }
__device__ inline void store(float value, __half *out) { *out = __float2half(value); }
__device__ inline void store(float value, __nv_bfloat16 *out) { *out = __float2bfloat16(value); }
__device__ inline void store(float value, __nv_fp8_e4m3 *out) { *out = __nv_fp8_e4m3(value); }

template <typename T>
__global__ void fill_normal_kernel(T *out, size_t count, unsigned long long seed) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count; i += (size_t)gridDim.x * blockDim.x) {
        store(gpubench::normal_value(seed, i), out + i);
    }
}

template <typename T>
static bool fill_as(Test &t, void *data, size_t count, unsigned long long seed, int sms) {
    fill_normal_kernel<T><<<sms * 4, 256>>>(static_cast<T *>(data), count, seed);
    return t.cuda(cudaGetLastError(), "fill kernel");
}

// `count` values of `type`, normal (mean 0, std 1), each array its own `seed`.
static bool fill_normal(Test &t, void *data, cudaDataType_t type, size_t count, unsigned long long seed, int sms) {
    switch (type) {
        case CUDA_R_32F: return fill_as<float>(t, data, count, seed, sms);
        case CUDA_R_16F: return fill_as<__half>(t, data, count, seed, sms);
        case CUDA_R_16BF: return fill_as<__nv_bfloat16>(t, data, count, seed, sms);
        case CUDA_R_8F_E4M3: return fill_as<__nv_fp8_e4m3>(t, data, count, seed, sms);
        default: return t.fail("no fill for this input type");
    }
}

// ---- GEMM --------------------------------------------------------------------------------------------------------

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

// What one GPU keeps between its tests.
struct Device {
    cudaDeviceProp prop{};
    LtHandle lt;
    std::string lt_error;  // why there is no cuBLASLt handle: each GEMM test says it
};

struct Gemm {
    GemmType type{};
    long n = 0;
    DeviceMemory a, b, c, workspace;
    LtDesc desc;
    LtLayout la, lb, lc;
    LtPreference preference;
    cublasLtMatmulHeuristicResult_t heuristic{};
};

static bool allocate_operands(Test &t, Gemm &g, int sms) {
    const size_t elements = (size_t)g.n * g.n;
    return t.cuda(cudaMalloc(&g.a.handle, elements * g.type.ab_bytes), "cudaMalloc A") &&
           t.cuda(cudaMalloc(&g.b.handle, elements * g.type.ab_bytes), "cudaMalloc B") &&
           t.cuda(cudaMalloc(&g.c.handle, elements * g.type.c_bytes), "cudaMalloc C") &&
           t.cuda(cudaMalloc(&g.workspace.handle, kWorkspaceBytes), "cudaMalloc workspace") &&
           fill_normal(t, g.a.handle, g.type.ab, elements, 1, sms) &&
           fill_normal(t, g.b.handle, g.type.ab, elements, 2, sms);
}

// FP8 accumulation is explicit: cuBLASLt's default (0, precise) could change, and fast accumulation (-f 1) is a
// different, faster operation whose figure must say so.
static bool set_fast_accum(Test &t, Gemm &g, int fast_accum) {
    const int8_t value = (int8_t)fast_accum;
    return t.lt(cublasLtMatmulDescSetAttribute(g.desc.handle, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &value, sizeof(value)),
                "FAST_ACCUM");
}

static bool describe_gemm(Test &t, Gemm &g, cublasLtHandle_t handle, bool fp8, int fast_accum) {
    // FP8 GEMMs in cuBLASLt take A transposed ("TN"); the same layout for every precision keeps figures comparable.
    const cublasOperation_t transa = CUBLAS_OP_T, transb = CUBLAS_OP_N;
    const size_t workspace = kWorkspaceBytes;
    int found = 0;
    cublasLtMatmulDesc_t &desc = g.desc.handle;
    const bool described =
        t.lt(cublasLtMatmulDescCreate(&desc, g.type.compute, g.type.scale), "cublasLtMatmulDescCreate") &&
        t.lt(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &transa, sizeof(transa)), "TRANSA") &&
        t.lt(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &transb, sizeof(transb)), "TRANSB") &&
        (!fp8 || set_fast_accum(t, g, fast_accum)) &&
        t.lt(cublasLtMatrixLayoutCreate(&g.la.handle, g.type.ab, g.n, g.n, g.n), "layout A") &&
        t.lt(cublasLtMatrixLayoutCreate(&g.lb.handle, g.type.ab, g.n, g.n, g.n), "layout B") &&
        t.lt(cublasLtMatrixLayoutCreate(&g.lc.handle, g.type.c, g.n, g.n, g.n), "layout C") &&
        t.lt(cublasLtMatmulPreferenceCreate(&g.preference.handle), "cublasLtMatmulPreferenceCreate") &&
        t.lt(cublasLtMatmulPreferenceSetAttribute(g.preference.handle, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                  &workspace, sizeof(workspace)), "workspace preference") &&
        t.lt(cublasLtMatmulAlgoGetHeuristic(handle, desc, g.la.handle, g.lb.handle, g.lc.handle, g.lc.handle,
                                            g.preference.handle, 1, &g.heuristic, &found),
             "cublasLtMatmulAlgoGetHeuristic");
    return described && (found > 0 || t.fail("cuBLASLt has no algorithm for this precision on this part"));
}

static bool setup_gemm(Test &t, Gemm &g, const Device &dev, const std::string &dtype, const Options &options) {
    const int cc = dev.prop.major * 10 + dev.prop.minor;
    if (!gemm_type(dtype, g.type)) return t.fail("unknown precision");
    if (dtype == "fp8" && cc < 89) {
        return t.fail(format("not supported on this part (compute capability %d.%d < 8.9)", dev.prop.major,
                             dev.prop.minor));
    }
    if (!dev.lt.handle) return t.fail(dev.lt_error);
    g.n = options.size;
    return allocate_operands(t, g, dev.prop.multiProcessorCount) &&
           describe_gemm(t, g, dev.lt.handle, dtype == "fp8", options.fast_accum);
}

static bool gemm_launch(Test &t, Gemm &g, cublasLtHandle_t handle) {
    const float alpha = 1.0f, beta = 0.0f;
    return t.lt(cublasLtMatmul(handle, g.desc.handle, &alpha, g.a.handle, g.la.handle, g.b.handle, g.lb.handle, &beta,
                               g.c.handle, g.lc.handle, g.c.handle, g.lc.handle, &g.heuristic.algo, g.workspace.handle,
                               kWorkspaceBytes, 0),
                "cublasLtMatmul");
}

static bool gemm_test(Test &t, const Device &dev, const Options &options, std::string &record) {
    Gemm g;
    Timing timing;
    auto launch = [&] { return gemm_launch(t, g, dev.lt.handle); };
    if (!setup_gemm(t, g, dev, t.name, options) || !time_test(t, launch, options.seconds, timing)) return false;
    const std::string accum = t.name == "fp8" ? format(" fast_accum=%d", options.fast_accum) : "";
    record = format("gemm index=%d dtype=%s size=%ld init=normal%s warmup_s=%.2f iters=%ld seconds=%.3f tflops=%.1f",
                    t.gpu.index, t.name.c_str(), options.size, accum.c_str(), timing.warmup_s, timing.iters,
                    timing.seconds, gpubench::gemm_tflops(options.size, timing.iters, timing.seconds));
    return true;
}

// All GPUs at once (the barrier starts it), bf16, in windows of about 1 s: first/last/min show clocks falling as
// the node heats, which a 3 s test does not.
static bool sustained_test(Test &t, const Device &dev, const Options &options, std::string &record) {
    Gemm g;
    Timer timer;
    double per_iter = 0, total = 0;
    auto launch = [&] { return gemm_launch(t, g, dev.lt.handle); };
    if (!setup_gemm(t, g, dev, "bf16", options) || !make_timer(t, timer) || !refine(t, timer, launch, 0, per_iter) ||
        !refine(t, timer, launch, gpubench::kCalibrationS, per_iter)) {
        return false;
    }
    const long iters = gpubench::calibrate_iters(per_iter, 1.0);
    std::vector<double> windows;
    for (long w = 0; w < options.sustained_s; ++w) {
        double seconds = 0;
        if (!run_batch(t, timer, launch, iters, seconds)) return false;
        if (!(seconds > 0)) return t.fail("a window measured no time");
        windows.push_back(gpubench::gemm_tflops(options.size, iters, seconds));
        total += seconds;
    }
    const gpubench::WindowSummary s = gpubench::summarize_windows(windows);
    record = format("sustained index=%d dtype=bf16 size=%ld seconds=%.1f windows=%zu tflops=%.1f first=%.1f last=%.1f "
                    "min=%.1f", t.gpu.index, options.size, total, windows.size(), s.mean, s.first, s.last, s.min);
    return true;
}

// ---- HBM ---------------------------------------------------------------------------------------------------------

// kHbmUnroll independent float4 loads per thread before the stores: enough bytes in flight per SM to reach HBM's
// bandwidth with one wave of blocks; the remainder loop takes what the unrolled part leaves.
__global__ void copy_kernel(const float4 *__restrict__ in, float4 *__restrict__ out, size_t count) {
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    const size_t end = gpubench::unrolled_end(count, stride);
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    for (; i < end; i += gpubench::kHbmUnroll * stride) {
        float4 v[gpubench::kHbmUnroll];
#pragma unroll
        for (int k = 0; k < gpubench::kHbmUnroll; ++k) v[k] = in[i + k * stride];
#pragma unroll
        for (int k = 0; k < gpubench::kHbmUnroll; ++k) out[i + k * stride] = v[k];
    }
    for (; i < count; i += stride) out[i] = in[i];
}

__device__ inline float4 axpy(float4 x, float4 y, float s) {
    return make_float4(x.x + s * y.x, x.y + s * y.y, x.z + s * y.z, x.w + s * y.w);
}

__global__ void triad_kernel(const float4 *__restrict__ b, const float4 *__restrict__ c, float4 *__restrict__ a,
                             float scalar, size_t count) {
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    const size_t end = gpubench::unrolled_end(count, stride);
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    for (; i < end; i += gpubench::kHbmUnroll * stride) {
        float4 x[gpubench::kHbmUnroll], y[gpubench::kHbmUnroll];
#pragma unroll
        for (int k = 0; k < gpubench::kHbmUnroll; ++k) {
            x[k] = b[i + k * stride];
            y[k] = c[i + k * stride];
        }
#pragma unroll
        for (int k = 0; k < gpubench::kHbmUnroll; ++k) a[i + k * stride] = axpy(x[k], y[k], scalar);
    }
    for (; i < count; i += stride) a[i] = axpy(b[i], c[i], scalar);
}

struct Hbm {
    DeviceMemory x, y, z;  // copy: x -> y; triad: z = x + s * y
    size_t count = 0;      // float4 per array
    long grid = 0;
    bool triad = false;
};

// One wave of resident blocks, as the occupancy API counts them for this kernel on this part.
static bool size_grid(Test &t, Hbm &h, const Device &dev) {
    int per_sm = 0;
    const cudaError_t status =
        h.triad ? cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, triad_kernel, gpubench::kHbmThreads, 0)
                : cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, copy_kernel, gpubench::kHbmThreads, 0);
    if (!t.cuda(status, "cudaOccupancyMaxActiveBlocksPerMultiprocessor")) return false;
    h.grid = gpubench::hbm_grid(per_sm, dev.prop.multiProcessorCount);
    return h.grid > 0 || t.fail("the occupancy API fits no block of 256 threads on an SM");
}

static bool setup_hbm(Test &t, Hbm &h, const Device &dev, const Options &options) {
    const std::string refusal = gpubench::hbm_refusal(options.hbm_mib, dev.prop.l2CacheSize);
    if (!refusal.empty()) return t.fail(refusal);
    h.triad = t.name == "triad";
    const size_t bytes = (size_t)options.hbm_mib << 20;
    const int sms = dev.prop.multiProcessorCount;
    h.count = bytes / sizeof(float4);
    return size_grid(t, h, dev) && t.cuda(cudaMalloc(&h.x.handle, bytes), "cudaMalloc") &&
           t.cuda(cudaMalloc(&h.y.handle, bytes), "cudaMalloc") &&
           (!h.triad || t.cuda(cudaMalloc(&h.z.handle, bytes), "cudaMalloc")) &&
           fill_normal(t, h.x.handle, CUDA_R_32F, h.count * 4, 3, sms) &&
           fill_normal(t, h.y.handle, CUDA_R_32F, h.count * 4, 4, sms);
}

static bool hbm_launch(Test &t, Hbm &h) {
    const float4 *x = static_cast<const float4 *>(h.x.handle);
    float4 *y = static_cast<float4 *>(h.y.handle), *z = static_cast<float4 *>(h.z.handle);
    if (h.triad) triad_kernel<<<(unsigned)h.grid, gpubench::kHbmThreads>>>(x, y, z, 3.0f, h.count);
    else copy_kernel<<<(unsigned)h.grid, gpubench::kHbmThreads>>>(x, y, h.count);
    return t.cuda(cudaGetLastError(), "kernel launch");
}

static bool hbm_test(Test &t, const Device &dev, const Options &options, std::string &record) {
    Hbm h;
    Timing timing;
    auto launch = [&] { return hbm_launch(t, h); };
    if (!setup_hbm(t, h, dev, options) || !time_test(t, launch, options.seconds, timing)) return false;
    // bytes read + bytes written: copy reads one array and writes one, triad reads two and writes one
    const unsigned long long moved = (unsigned long long)h.count * sizeof(float4) * (h.triad ? 3 : 2);
    record = format("hbm index=%d test=%s bytes=%llu grid=%ld threads=%d iters=%ld seconds=%.3f gbs=%.1f", t.gpu.index,
                    t.name.c_str(), moved, h.grid, gpubench::kHbmThreads, timing.iters, timing.seconds,
                    (double)moved * timing.iters / timing.seconds / 1e9);
    return true;
}

// ---- one GPU's thread --------------------------------------------------------------------------------------------

// Runs one test under its deadline and prints its one record: the figure, or an error saying why not. False when
// the GPU timed out (or main gave up on it): no further test may touch it.
template <typename Body>
static bool run_test(Gpu &gpu, const std::string &name, double deadline_s, Body body) {
    {
        std::lock_guard<std::mutex> lock(g_mutex);
        if (gpu.silenced) return false;
    }
    Test t(gpu, name, deadline_s);
    std::string record;
    const bool ok = body(t, record);  // its buffers and descriptors are freed here, before the record
    if (t.timed_out) emit(gpu, error_record(gpu.index, name, timeout_message(deadline_s)));
    else if (!ok) emit(gpu, error_record(gpu.index, name, t.error.empty() ? "failed, no reason given" : t.error));
    else if (!record.empty()) emit(gpu, record);
    return !t.timed_out;
}

static bool open_device(Test &t, Device &dev) {
    char pci[32] = {0};
    const int index = t.gpu.index;
    if (!t.cuda(cudaSetDevice(index), "cannot open the device") ||
        !t.cuda(cudaGetDeviceProperties(&dev.prop, index), "cudaGetDeviceProperties") ||
        !t.cuda(cudaDeviceGetPCIBusId(pci, sizeof(pci), index), "cudaDeviceGetPCIBusId") ||
        !t.cuda(cudaFree(nullptr), "cannot create a context")) {  // the context now, under this step's deadline
        return false;
    }
    const std::string bus_id = gpubench::nvml_bus_id(pci);
    const std::string line = format("gpu index=%d bus_id=%s cc=%d.%d sms=%d l2_mib=%d name=%s", index,
                                    bus_id.empty() ? "unknown" : bus_id.c_str(), dev.prop.major, dev.prop.minor,
                                    dev.prop.multiProcessorCount, dev.prop.l2CacheSize >> 20,
                                    one_line(dev.prop.name).c_str());
    {
        std::lock_guard<std::mutex> lock(g_mutex);
        if (t.gpu.silenced) return true;
        print_locked(line);
        t.gpu.declared = true;
    }
    const cublasStatus_t status = cublasLtCreate(&dev.lt.handle);
    if (status != CUBLAS_STATUS_SUCCESS) {
        dev.lt_error = std::string("cublasLtCreate: ") + cublasLtGetStatusString(status);
    }
    return true;
}

static double timed_deadline_s(const Options &options) {
    return gpubench::test_deadline_s(gpubench::warmup_seconds(options.seconds), gpubench::kCalibrationS,
                                     options.seconds);
}

// One test of the plan; false when the GPU is to be left alone from now on.
static bool run_one(Gpu &gpu, const Device &dev, const Options &options, const std::string &name) {
    if (name == "copy" || name == "triad") {
        return run_test(gpu, name, timed_deadline_s(options),
                        [&](Test &t, std::string &record) { return hbm_test(t, dev, options, record); });
    }
    if (name == "sustained") {
        const double deadline = gpubench::test_deadline_s(0, gpubench::kCalibrationS, (double)options.sustained_s);
        return run_test(gpu, name, deadline,
                        [&](Test &t, std::string &record) { return sustained_test(t, dev, options, record); });
    }
    return run_test(gpu, name, timed_deadline_s(options),
                    [&](Test &t, std::string &record) { return gemm_test(t, dev, options, record); });
}

static void run_tests(Gpu &gpu, const Options &options, gpubench::Barrier &barrier) {
    Device dev;  // its cuBLASLt handle goes before the thread says it is finished
    if (!run_test(gpu, "device", kOpenDeadlineS, [&](Test &t, std::string &) { return open_device(t, dev); })) return;
    if (!gpu.declared) return;  // the device could not be opened: its error record is out
    for (const std::string &name : gpubench::test_plan(options)) {
        barrier.arrive_and_wait(gpu.slot);
        if (!run_one(gpu, dev, options, name)) return;
    }
}

static void run_gpu(Gpu &gpu, const Options &options, gpubench::Barrier &barrier) {
    run_tests(gpu, options, barrier);
    barrier.leave(gpu.slot);  // a stopped GPU no longer holds the others at the barrier
    std::lock_guard<std::mutex> lock(g_mutex);
    gpu.finished = true;
    g_finished.notify_all();
}

// ---- main --------------------------------------------------------------------------------------------------------

// With g_mutex held. A thread past its test's deadline by kWatchdogGraceS did not see the deadline itself: it is
// inside a CUDA call that does not return (an allocation or a launch on a hung context). Main reports it, leaves
// the barrier for it, and waits for it no more.
static void watch(Gpu &gpu, gpubench::Barrier &barrier) {
    const auto grace = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(kWatchdogGraceS));
    if (gpu.finished || gpu.silenced || gpu.hung || gpu.test.empty() || Clock::now() < gpu.deadline + grace) return;
    print_locked(error_record(gpu.index, gpu.test, timeout_message(gpu.deadline_s)));
    gpu.silenced = gpu.hung = true;
    barrier.leave(gpu.slot);
}

// Waits for every GPU thread or for main to give up on it. True when some GPU hung.
static bool wait_for_gpus(std::vector<Gpu> &gpus, gpubench::Barrier &barrier) {
    std::unique_lock<std::mutex> lock(g_mutex);
    for (;;) {
        size_t running = 0;
        for (Gpu &gpu : gpus) {
            watch(gpu, barrier);
            running += gpu.finished || gpu.silenced ? 0 : 1;
        }
        if (running == 0) break;
        g_finished.wait_for(lock, std::chrono::milliseconds(500));
    }
    bool hung = false;
    for (const Gpu &gpu : gpus) hung = hung || gpu.hung;
    return hung;
}

static int run_all(const std::vector<int> &devices, const Options &options) {
    std::vector<Gpu> gpus(devices.size());
    gpubench::Barrier barrier(devices.size());
    std::vector<std::thread> threads;
    for (size_t i = 0; i < devices.size(); ++i) {
        gpus[i].slot = i;
        gpus[i].index = devices[i];
    }
    for (Gpu &gpu : gpus) threads.emplace_back(run_gpu, std::ref(gpu), std::cref(options), std::ref(barrier));
    const bool hung = wait_for_gpus(gpus, barrier);
    std::unique_lock<std::mutex> lock(g_mutex);
    size_t declared = 0;
    for (const Gpu &gpu : gpus) declared += gpu.declared ? 1 : 0;
    print_locked(format("end gpus=%zu", declared));
    lock.unlock();
    if (hung) {
        // A hung context can block a thread forever, and the CUDA runtime's exit handlers tear every context down,
        // which waits for that GPU: leave without them (stdout is flushed; the driver frees what the process held).
        for (std::thread &thread : threads) thread.detach();
        std::_Exit(0);
    }
    for (std::thread &thread : threads) thread.join();
    return 0;
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

// The CUDA indices to run: the -d list, each checked against the visible GPUs, or all of them. "" or the error.
static std::string resolve_devices(const Options &options, int count, std::vector<int> &devices) {
    devices = options.devices;
    if (devices.empty()) {
        for (int d = 0; d < count; ++d) devices.push_back(d);
    }
    for (int d : devices) {
        if (d >= count) return format("device %d is not one of the %d visible GPUs", d, count);
    }
    return "";
}

int main(int argc, char **argv) {
    // Before the first CUDA call: CUDA numbers GPUs fastest first unless told otherwise, nvidia-smi and NVML by PCI
    // bus id; in the same order, -d and index= are nvidia-smi's numbers.
    setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID", 1);
    Options options;
    const std::string error = gpubench::parse_options(std::vector<std::string>(argv + 1, argv + argc), options);
    if (!error.empty()) {
        fprintf(stderr, "gpubench: %s\n%s", error.c_str(), gpubench::usage_text());
        return 2;
    }
    if (options.version) {
        printf("gpubench version=%s\n", gpubench::kVersion);
        return 0;
    }
    int runtime = 0, count = 0;
    cudaRuntimeGetVersion(&runtime);
    print_line(format("gpubench version=%s cuda=%d.%d driver=%s order=%s", gpubench::kVersion, runtime / 1000,
                      (runtime % 1000) / 10, driver_release().c_str(), getenv("CUDA_DEVICE_ORDER")));
    const cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess) {
        print_line(std::string("error msg=no CUDA device: ") + cudaGetErrorString(status));
        print_line("end gpus=0");
        return 1;
    }
    std::vector<int> devices;
    const std::string refusal = resolve_devices(options, count, devices);
    if (!refusal.empty()) {
        fprintf(stderr, "gpubench: -d: %s\n%s", refusal.c_str(), gpubench::usage_text());
        print_line("error msg=" + refusal);
        print_line("end gpus=0");
        return 2;
    }
    return run_all(devices, options);
}
