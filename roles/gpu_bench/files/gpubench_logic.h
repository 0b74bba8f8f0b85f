// gpubench_logic.h: the parts of gpubench that need no GPU (argument parsing, bus id form, launch and timing
// arithmetic, the barrier between tests), kept apart so that tests/unit/roles/test_gpubench_logic.py checks them
// with a plain C++17 compiler. Header-only, no CUDA include: gpubench.cu includes it from beside itself.
// Copyright: (c) 2026, gpufleet engineers
// GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
#ifndef GPUBENCH_LOGIC_H
#define GPUBENCH_LOGIC_H

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <condition_variable>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

// The normal-value generator and the HBM loop bounds run in kernels too: callable from both sides under nvcc.
#if defined(__CUDACC__)
#define GPUBENCH_HD __host__ __device__
#else
#define GPUBENCH_HD
#endif

namespace gpubench {

constexpr const char *kVersion = "1.1";
constexpr const char *kDtypes[] = {"bf16", "fp16", "fp8", "tf32", "fp32"};

// ---- NVML bus id ----------------------------------------------------------------------------------------------

// 1 to `max_digits` hex digits at text[at], up to `end` (the text's end when `end` is 0); `at` moves past `end`.
inline bool read_hex(const std::string &text, size_t &at, size_t max_digits, char end, unsigned &out) {
    const size_t stop = end ? text.find(end, at) : text.size();
    if (stop == std::string::npos || stop == at || stop - at > max_digits) return false;
    if (text.find_first_not_of("0123456789abcdefABCDEF", at) < stop) return false;
    out = (unsigned)std::strtoul(text.substr(at, stop - at).c_str(), nullptr, 16);
    at = stop + (end ? 1 : 0);
    return true;
}

// CUDA writes the domain with 4 hex digits (0000:18:00.0); NVML and nvidia-smi with 8, in capitals
// (00000000:18:00.0). gpufleet joins gpubench's records to nvidia-smi's by this string, so gpubench prints NVML's
// form. Returns "" when `cuda_bus_id` is not domain:bus:device.function in hex.
inline std::string nvml_bus_id(const std::string &cuda_bus_id) {
    unsigned domain = 0, bus = 0, device = 0, function = 0;
    size_t at = 0;
    if (!read_hex(cuda_bus_id, at, 8, ':', domain) || !read_hex(cuda_bus_id, at, 2, ':', bus) ||
        !read_hex(cuda_bus_id, at, 2, '.', device) || !read_hex(cuda_bus_id, at, 1, 0, function)) {
        return "";
    }
    char out[32];
    std::snprintf(out, sizeof(out), "%08X:%02X:%02X.%X", domain, bus, device, function);
    return out;
}

// ---- HBM kernels: grid and loop bounds ------------------------------------------------------------------------

constexpr int kHbmThreads = 256;  // threads per block of the copy and triad kernels
constexpr int kHbmUnroll = 4;     // float4 loads in flight per thread per loop iteration

// One full wave: as many blocks as are resident at once (the occupancy API's blocks per SM, times the SMs). Parts
// differ: 2048 threads per SM (A100, H100: 8 blocks of 256) or 1536 (sm_86, sm_89: 6). 0 when nothing fits.
inline long hbm_grid(int blocks_per_sm, int sm_count) {
    if (blocks_per_sm <= 0 || sm_count <= 0) return 0;
    return (long)blocks_per_sm * sm_count;
}

// Where the unrolled loop of the HBM kernels stops: a multiple of kHbmUnroll strides (a grid's worth of threads),
// so that in the unrolled part every thread's kHbmUnroll loads are in range; the rest, one stride at a time.
GPUBENCH_HD inline size_t unrolled_end(size_t count, size_t stride) {
    const size_t step = stride * kHbmUnroll;
    return step == 0 ? 0 : count - count % step;
}

// Arrays that fit in L2 measure L2, not HBM. At 4 x L2 at most a quarter of an array can be served from L2 (and
// copy and triad stream 2 and 3 such arrays), so the figure is HBM's.
constexpr long kL2Multiple = 4;

inline long min_hbm_mib(long l2_bytes) {
    const long mib = 1L << 20;
    return (kL2Multiple * std::max(l2_bytes, 0L) + mib - 1) / mib;
}

// "" when -m HBM_MIB is large enough for this L2, else why not (the error record's msg).
inline std::string hbm_refusal(long hbm_mib, long l2_bytes) {
    const long minimum = min_hbm_mib(l2_bytes);
    if (hbm_mib >= minimum) return "";
    std::ostringstream msg;
    msg << "-m " << hbm_mib << " MiB arrays would be served from the " << (l2_bytes >> 20) << " MiB L2, not HBM: "
        << "-m must be at least " << minimum << " (" << kL2Multiple << " x L2) on this part";
    return msg.str();
}

// ---- timing -------------------------------------------------------------------------------------------------

constexpr double kMinWarmupS = 1.0;
constexpr double kCalibrationS = 0.25;  // the short batch at warm clocks that sizes the timed window
constexpr double kWarmupBatchS = 0.25;  // longest warm-up batch: the warm-up ends close to its time
constexpr long kMaxIters = 1000000;

// Clocks and temperatures settle over seconds, not launches: at least 1 s, half the timed window when longer.
inline double warmup_seconds(double timed_s) { return std::max(kMinWarmupS, 0.5 * timed_s); }

// Iterations that take about `target_s` at `per_iter_s` each, within [1, kMaxIters]; 0 when `per_iter_s` is not a
// positive time (a batch that measured nothing cannot size the next one).
inline long calibrate_iters(double per_iter_s, double target_s) {
    if (!(per_iter_s > 0) || !std::isfinite(per_iter_s)) return 0;
    const double iters = std::floor(target_s / per_iter_s);
    if (!(iters >= 1)) return 1;
    return iters >= (double)kMaxIters ? kMaxIters : (long)iters;
}

// A test's deadline, counted from its start: its budget (warm-up + calibration + timed window) x kSafetyFactor,
// never under kMinDeadlineS. The factor covers what the budget leaves out: setup (allocation, the fill kernels,
// cuBLASLt's heuristic and its first kernel load), a warm-up overshoot of one batch, a timed window that runs long
// because clocks fell after calibration (throttling halves them at worst), and launches longer than a budget part
// (warm-up, calibration and window take one launch at least: a 32768 fp32 GEMM is ~2.5 s a launch on an A10, three
// of them fit the 10 s floor). A GPU that is merely slow stays inside it; a hung one is reported within a minute at
// the default -t 3 (19 s).
constexpr double kSafetyFactor = 4.0;
constexpr double kMinDeadlineS = 10.0;

inline double test_deadline_s(double warmup_s, double calibration_s, double timed_s) {
    return std::max(kMinDeadlineS, kSafetyFactor * (warmup_s + calibration_s + timed_s));
}

// TFLOP/s of `iters` dense size^3 GEMMs (2 flops per multiply-add) in `seconds`.
inline double gemm_tflops(long size, long iters, double seconds) {
    return 2.0 * (double)size * (double)size * (double)size * (double)iters / seconds / 1e12;
}

// ---- the sustained phase ----------------------------------------------------------------------------------------

struct WindowSummary {
    double mean = 0, first = 0, last = 0, min = 0;
};

// The sustained record's figures over its 1-second windows (TFLOP/s each); all 0 when there is none.
inline WindowSummary summarize_windows(const std::vector<double> &tflops) {
    WindowSummary out;
    if (tflops.empty()) return out;
    double sum = 0;
    for (double value : tflops) sum += value;
    out.mean = sum / (double)tflops.size();
    out.first = tflops.front();
    out.last = tflops.back();
    out.min = *std::min_element(tflops.begin(), tflops.end());
    return out;
}

// ---- GEMM inputs ------------------------------------------------------------------------------------------------

// splitmix64's finaliser: a counter-based hash, so each element's value depends on its index only and the fill
// kernel needs no state.
GPUBENCH_HD inline unsigned long long mix64(unsigned long long x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

// Element `i` of a normal (mean 0, std 1) sequence, by Box-Muller on two 24-bit uniforms of one hash. Random
// mantissas keep the tensor cores' bits switching as a training job's do (a constant fill draws less power and
// clocks higher; mamf-finder of stas00/ml-engineering uses normal inputs for this reason). u1 >= 2^-24 bounds
// |value| by sqrt(2 ln 2^24) = 5.77: far inside FP8 E4M3's 448, so no input type needs scaling.
GPUBENCH_HD inline float normal_value(unsigned long long seed, unsigned long long i) {
    const unsigned long long h = mix64(i + (seed << 40));
    const float u1 = (float)((h >> 40) + 1) * 0x1p-24f;
    const float u2 = (float)((h >> 16) & 0xFFFFFFull) * 0x1p-24f;
    return std::sqrt(-2.0f * std::log(u1)) * std::cos(6.28318530718f * u2);
}

// ---- arguments ---------------------------------------------------------------------------------------------------

struct Options {
    std::vector<int> devices;  // empty: every visible GPU
    long size = 8192;
    double seconds = 3.0;
    long hbm_mib = 1024;
    std::vector<std::string> dtypes = {"bf16", "fp16", "fp8", "tf32", "fp32"};
    long sustained_s = 0;  // 0: no sustained phase
    int fast_accum = 0;    // FP8 only: 0 = precise accumulation (cuBLASLt's default), 1 = fast
    bool version = false;
};

constexpr long kMinSize = 256, kMaxSize = 32768, kSizeMultiple = 16;  // FP8 needs leading dimensions of 16s
constexpr double kMaxSeconds = 3600;
constexpr long kMaxHbmMib = 1L << 20;
constexpr long kMaxSustainedS = 86400;

inline std::vector<std::string> split_list(const std::string &text) {
    std::vector<std::string> out;
    std::stringstream stream(text);
    std::string item;
    while (std::getline(stream, item, ',')) out.push_back(item);
    return out;
}

// The whole of `text` as a decimal integer (no sign, space or suffix).
inline bool parse_long(const std::string &text, long &out) {
    if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos || text.size() > 12) return false;
    out = std::strtol(text.c_str(), nullptr, 10);
    return true;
}

// The whole of `text` as a finite decimal number.
inline bool parse_seconds(const std::string &text, double &out) {
    if (text.empty() || text.find_first_not_of("0123456789.") != std::string::npos) return false;
    char *end = nullptr;
    errno = 0;
    out = std::strtod(text.c_str(), &end);
    return errno == 0 && end == text.c_str() + text.size() && std::isfinite(out);
}

inline bool known_dtype(const std::string &name) {
    for (const char *dtype : kDtypes) {
        if (name == dtype) return true;
    }
    return false;
}

inline std::string parse_devices(const std::string &value, Options &options) {
    options.devices.clear();
    for (const std::string &item : split_list(value)) {
        long device = 0;
        if (!parse_long(item, device) || device > 65535) return "-d " + value + ": a comma list of GPU indices";
        if (std::count(options.devices.begin(), options.devices.end(), (int)device)) {
            return "-d " + value + ": GPU " + item + " is listed twice";
        }
        options.devices.push_back((int)device);
    }
    return options.devices.empty() ? "-d " + value + ": no GPU index" : "";
}

inline std::string parse_dtypes(const std::string &value, Options &options) {
    options.dtypes.clear();
    for (const std::string &item : split_list(value)) {
        if (item.empty()) return "-g " + value + ": a comma list of bf16,fp16,fp8,tf32,fp32";
        if (!known_dtype(item)) return "-g " + value + ": " + item + " is not one of bf16,fp16,fp8,tf32,fp32";
        if (std::count(options.dtypes.begin(), options.dtypes.end(), item)) {
            return "-g " + value + ": " + item + " is listed twice";
        }
        options.dtypes.push_back(item);
    }
    return options.dtypes.empty() ? "-g " + value + ": no precision" : "";
}

inline std::string parse_size(const std::string &value, Options &options) {
    if (!parse_long(value, options.size) || options.size < kMinSize || options.size > kMaxSize ||
        options.size % kSizeMultiple != 0) {
        return "-n " + value + ": SIZE must be a multiple of 16 from 256 to 32768";
    }
    return "";
}

inline std::string parse_timed(const std::string &value, Options &options) {
    if (!parse_seconds(value, options.seconds) || !(options.seconds > 0) || options.seconds > kMaxSeconds) {
        return "-t " + value + ": SECONDS must be a number above 0, at most 3600";
    }
    return "";
}

inline std::string parse_hbm(const std::string &value, Options &options) {
    if (!parse_long(value, options.hbm_mib) || options.hbm_mib < 1 || options.hbm_mib > kMaxHbmMib) {
        return "-m " + value + ": HBM_MIB must be a whole number of MiB from 1 to 1048576";
    }
    return "";
}

inline std::string parse_sustained(const std::string &value, Options &options) {
    if (!parse_long(value, options.sustained_s) || options.sustained_s > kMaxSustainedS) {
        return "-s " + value + ": SUSTAINED_SECONDS must be a whole number from 0 (off) to 86400";
    }
    return "";
}

inline std::string parse_fast_accum(const std::string &value, Options &options) {
    if (value != "0" && value != "1") return "-f " + value + ": FAST_ACCUM must be 0 (precise) or 1 (fast)";
    options.fast_accum = value == "1" ? 1 : 0;
    return "";
}

inline bool takes_value(const std::string &arg) {
    for (const char *name : {"-d", "-n", "-t", "-m", "-g", "-s", "-f"}) {
        if (arg == name) return true;
    }
    return false;
}

// One option and its value into `options`; "" or the error.
inline std::string parse_option(const std::string &name, const std::string &value, Options &options) {
    if (name == "-d") return parse_devices(value, options);
    if (name == "-n") return parse_size(value, options);
    if (name == "-t") return parse_timed(value, options);
    if (name == "-m") return parse_hbm(value, options);
    if (name == "-g") return parse_dtypes(value, options);
    if (name == "-s") return parse_sustained(value, options);
    if (name == "-f") return parse_fast_accum(value, options);
    return "unknown option " + name;
}

// The command line (without the program name) into `options`; "" or the first error (usage follows it).
inline std::string parse_options(const std::vector<std::string> &args, Options &options) {
    for (size_t i = 0; i < args.size(); ++i) {
        if (args[i] == "-V") {
            options.version = true;
            continue;
        }
        if (!takes_value(args[i])) return "unknown option " + args[i];
        if (i + 1 >= args.size()) return "option " + args[i] + " needs a value";
        const std::string error = parse_option(args[i], args[i + 1], options);
        if (!error.empty()) return error;
        ++i;
    }
    return "";
}

// The tests every GPU runs, in order (all GPUs run the same list: each test starts at the barrier together).
inline std::vector<std::string> test_plan(const Options &options) {
    std::vector<std::string> plan = options.dtypes;
    plan.push_back("copy");
    plan.push_back("triad");
    if (options.sustained_s > 0) plan.push_back("sustained");
    return plan;
}

inline const char *usage_text() {
    return "usage: gpubench [-d 0,1,...] [-n SIZE] [-t SECONDS] [-m HBM_MIB] [-g bf16,fp16,fp8,tf32,fp32]\n"
           "                [-s SUSTAINED_SECONDS] [-f FAST_ACCUM] [-V]\n"
           "  -d  GPU indices in nvidia-smi's order (default: every GPU)\n"
           "  -n  GEMM size, 256..32768, a multiple of 16 (8192)\n"
           "  -t  seconds of each timed window (3)\n"
           "  -m  MiB per HBM array, at least 4 x the L2 (1024)\n"
           "  -g  GEMM precisions (all five)\n"
           "  -s  seconds of sustained bf16 GEMM on every GPU at once, in 1 s windows (0: off)\n"
           "  -f  FP8 accumulation: 0 precise (default), 1 fast\n"
           "  -V  print the version\n";
}

// ---- the barrier between tests ---------------------------------------------------------------------------------

// Every GPU thread starts each test together (the node loaded as a training job loads it). A thread that stops
// (its GPU timed out or could not be opened) leaves: the others no longer wait for it. Members are by slot, so a
// second leave (the thread's own, after main gave up on it) changes nothing. std::barrier is C++20.
class Barrier {
  public:
    explicit Barrier(size_t members) : member_(members, true), count_(members) {}

    void arrive_and_wait(size_t slot) {
        std::unique_lock<std::mutex> lock(mutex_);
        if (!member_[slot]) return;
        const unsigned long long generation = generation_;
        if (++waiting_ >= count_) return release();
        ready_.wait(lock, [&] { return generation_ != generation; });
    }

    void leave(size_t slot) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!member_[slot]) return;
        member_[slot] = false;
        --count_;
        if (waiting_ > 0 && waiting_ >= count_) release();
    }

  private:
    void release() {  // with mutex_ held
        waiting_ = 0;
        ++generation_;
        ready_.notify_all();
    }

    std::mutex mutex_;
    std::condition_variable ready_;
    std::vector<bool> member_;
    size_t count_;
    size_t waiting_ = 0;
    unsigned long long generation_ = 0;
};

}  // namespace gpubench

#endif  // GPUBENCH_LOGIC_H
