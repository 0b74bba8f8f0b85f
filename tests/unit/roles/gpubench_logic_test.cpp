// Driver for tests/unit/roles/test_gpubench_logic.py: runs one function of roles/gpu_bench/files/gpubench_logic.h
// on its arguments and prints the result, so that the Python test holds the inputs and the expected values.
// Built with a plain C++17 compiler: no CUDA here.
// Copyright: (c) 2026, gpufleet engineers
// GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
#include "gpubench_logic.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

using Args = std::vector<std::string>;

static double number(const std::string &text) { return std::strtod(text.c_str(), nullptr); }

static std::string join(const std::vector<std::string> &items) {
    std::string out;
    for (const std::string &item : items) out += (out.empty() ? "" : ",") + item;
    return out;
}

static int parse(const Args &args) {
    gpubench::Options options;
    const std::string error = gpubench::parse_options(args, options);
    if (!error.empty()) {
        std::printf("error=%s\n", error.c_str());
        return 0;
    }
    std::vector<std::string> devices;
    for (int device : options.devices) devices.push_back(std::to_string(device));
    std::printf("devices=%s size=%ld seconds=%g hbm_mib=%ld dtypes=%s sustained=%ld fast_accum=%d version=%d\n",
                join(devices).c_str(), options.size, options.seconds, options.hbm_mib, join(options.dtypes).c_str(),
                options.sustained_s, options.fast_accum, options.version ? 1 : 0);
    return 0;
}

static int l2(const Args &args) {
    const long hbm_mib = std::atol(args.at(0).c_str()), l2_bytes = std::atol(args.at(1).c_str());
    const std::string refusal = gpubench::hbm_refusal(hbm_mib, l2_bytes);
    std::printf("min=%ld ok=%d msg=%s\n", gpubench::min_hbm_mib(l2_bytes), refusal.empty() ? 1 : 0, refusal.c_str());
    return 0;
}

// The HBM kernels' two loops, run on the host for every thread: each element must be visited exactly once.
static int cover(const Args &args) {
    const size_t count = std::strtoul(args.at(0).c_str(), nullptr, 10);
    const size_t stride = std::strtoul(args.at(1).c_str(), nullptr, 10);
    std::vector<int> visits(count, 0);
    const size_t end = gpubench::unrolled_end(count, stride);
    for (size_t thread = 0; thread < stride; ++thread) {
        size_t i = thread;
        for (; i < end; i += gpubench::kHbmUnroll * stride) {
            for (int k = 0; k < gpubench::kHbmUnroll; ++k) ++visits.at(i + k * stride);
        }
        for (; i < count; i += stride) ++visits.at(i);
    }
    size_t wrong = 0;
    for (int v : visits) wrong += v == 1 ? 0 : 1;
    std::printf("end=%zu wrong=%zu\n", end, wrong);
    return 0;
}

static int normal(const Args &args) {
    const unsigned long long seed = std::strtoull(args.at(0).c_str(), nullptr, 10);
    const long count = std::atol(args.at(1).c_str());
    double sum = 0, squares = 0, largest = 0;
    for (long i = 0; i < count; ++i) {
        const double v = gpubench::normal_value(seed, (unsigned long long)i);
        sum += v;
        squares += v * v;
        largest = std::max(largest, std::fabs(v));
    }
    const double mean = sum / count;
    std::printf("mean=%.4f std=%.4f maxabs=%.3f first=%.6f\n", mean, std::sqrt(squares / count - mean * mean), largest,
                gpubench::normal_value(seed, 0));
    return 0;
}

static int summary(const Args &args) {
    std::vector<double> values;
    for (const std::string &arg : args) values.push_back(number(arg));
    const gpubench::WindowSummary s = gpubench::summarize_windows(values);
    std::printf("mean=%.2f first=%.2f last=%.2f min=%.2f\n", s.mean, s.first, s.last, s.min);
    return 0;
}

// THREADS members; member LEAVER leaves after its first test; the others pass ROUNDS barriers. Prints how many
// barriers were passed in all: a deadlock never prints (the Python test's timeout catches it).
static int barrier(const Args &args) {
    const size_t members = std::strtoul(args.at(0).c_str(), nullptr, 10);
    const size_t leaver = std::strtoul(args.at(1).c_str(), nullptr, 10);
    const int rounds = std::atoi(args.at(2).c_str());
    gpubench::Barrier gate(members);
    std::atomic<int> passed{0};
    std::vector<std::thread> threads;
    for (size_t slot = 0; slot < members; ++slot) {
        threads.emplace_back([&, slot] {
            for (int round = 0; round < rounds; ++round) {
                gate.arrive_and_wait(slot);
                ++passed;
                if (slot == leaver) break;
            }
            gate.leave(slot);
            gate.leave(slot);  // a second leave (main's, for a stuck thread) must change nothing
        });
    }
    for (std::thread &thread : threads) thread.join();
    std::printf("passed=%d\n", passed.load());
    return 0;
}

static int print_long(long value) { return std::printf("%ld\n", value) < 0; }
static int print_fixed(double value, int decimals) { return std::printf("%.*f\n", decimals, value) < 0; }

static int plan(const Args &args) {
    gpubench::Options options;
    const std::string error = gpubench::parse_options(args, options);
    std::printf("%s\n", error.empty() ? join(gpubench::test_plan(options)).c_str() : error.c_str());
    return 0;
}

static int run(const std::string &command, const Args &a) {
    if (command == "bus") return std::printf("%s\n", gpubench::nvml_bus_id(a.at(0)).c_str()) < 0;
    if (command == "grid") return print_long(gpubench::hbm_grid((int)number(a.at(0)), (int)number(a.at(1))));
    if (command == "calibrate") return print_long(gpubench::calibrate_iters(number(a.at(0)), number(a.at(1))));
    if (command == "warmup") return print_fixed(gpubench::warmup_seconds(number(a.at(0))), 2);
    if (command == "deadline") {
        return print_fixed(gpubench::test_deadline_s(number(a.at(0)), number(a.at(1)), number(a.at(2))), 1);
    }
    if (command == "tflops") {
        return print_fixed(gpubench::gemm_tflops((long)number(a.at(0)), (long)number(a.at(1)), number(a.at(2))), 1);
    }
    if (command == "parse") return parse(a);
    if (command == "plan") return plan(a);
    if (command == "l2") return l2(a);
    if (command == "cover") return cover(a);
    if (command == "normal") return normal(a);
    if (command == "summary") return summary(a);
    if (command == "barrier") return barrier(a);
    std::fprintf(stderr, "unknown command %s\n", command.c_str());
    return 2;
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    return run(argv[1], Args(argv + 2, argv + argc));
}
