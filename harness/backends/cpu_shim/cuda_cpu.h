// cuda_cpu.h: compile unchanged device-only CUDA C++ (the NVRTC dialect) with g++ (C++17) and
// run it on the CPU. See README.md beside this file for what is covered and what differs.
//
// Layout of this file:
//   1. system headers (all of them first: macros below such as __noinline__ would break them)
//   2. CUDA keywords as macros, vector types, dim3, the built-in index variables
//   3. the runtime: errors, fibers, block and warp barriers, launch
//   4. bit casts, integer and float intrinsics, min/max, conversions
//   5. __half / __nv_bfloat16 and their pairs
//   6. warp intrinsics (shuffles, votes, match, reduce)
//   7. atomics
//   8. math_constants.h values
//   9. default visibility for what follows (the kernel source) is hidden
#ifndef HARNESS_CUDA_CPU_H
#define HARNESS_CUDA_CPU_H

#if !defined(__cplusplus) || __cplusplus < 201703L
#error "cuda_cpu.h needs C++17 (g++ -std=c++17)"
#endif

// ---------------------------------------------------------------------------------------------
// 1. System headers
// ---------------------------------------------------------------------------------------------
#include <cmath>
#include <math.h>  // libstdc++'s wrapper: puts the float overloads (sqrt(float), ...) in :: as CUDA has them
#include <cfenv>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cstdarg>
#include <climits>
#include <limits>
#include <cfloat>
#include <new>
#include <tuple>
#include <type_traits>
#include <utility>
#include <csetjmp>
#include <csignal>
#include <sys/mman.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#if defined(__x86_64__) && !defined(HARNESS_CPU_UCONTEXT)
#define HARNESS_CPU_ASM_SWITCH 1
#else
#define HARNESS_CPU_ASM_SWITCH 0
#include <ucontext.h>
#endif

// Bytes of stack per fiber (FIBERS=1). A guard page below each stack turns an overflow into a
// segfault instead of silent corruption.
#ifndef HARNESS_CPU_STACK_BYTES
#define HARNESS_CPU_STACK_BYTES (64 * 1024)
#endif

// How many guard pages (one per fiber stack) the stacks of one shared object may use; see Sched.
#ifndef HARNESS_CPU_GUARD_BUDGET
#define HARNESS_CPU_GUARD_BUDGET 16384
#endif

#define HARNESS_CPU 1  // lets a source tell it is being compiled by the CPU shim

// HARNESS_CPU_CONTEND=1 (with g++'s -fsanitize=thread, which calls a hook before each load and store the
// kernel makes; the hooks are defined in section 3, no sanitizer runtime is linked): a launch of mode 2
// makes contention happen where a GPU would, in one schedule, the same on every run (section 3,
// "contention"). HARNESS_CPU_RT marks the shim's own runtime (scheduler, barriers, warp operations,
// atomics): never instrumented, so a hook never runs inside it.
#ifndef HARNESS_CPU_CONTEND
#define HARNESS_CPU_CONTEND 0
#endif
#if HARNESS_CPU_CONTEND
#define HARNESS_CPU_RT __attribute__((no_sanitize_thread))
#else
#define HARNESS_CPU_RT
#endif

// The two entry points the generated wrapper defines keep default visibility; everything after
// the end of this header is hidden (see section 9).
extern "C" __attribute__((visibility("default"))) int harness_launch(void**, unsigned, unsigned, unsigned,
                                                                      unsigned, unsigned, unsigned);
extern "C" __attribute__((visibility("default"))) const char* harness_last_error();
extern "C" __attribute__((visibility("default"))) void harness_share_guard_ledger(long* ledger);
extern "C" __attribute__((visibility("default"))) void harness_release_stacks();

// ---------------------------------------------------------------------------------------------
// 2. Keywords, vector types, built-in variables
// ---------------------------------------------------------------------------------------------
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#define __maxnreg__(...)
#define __cluster_dims__(...)
// A __constant__ variable is what the host writes between launches (a mutant schema's switch: CpuBackend.set_switch),
// so it is exported; protected, so the kernel's own references still bind inside this object (section 9). g++ warns,
// harmlessly, where it has internal linkage (static, or const at namespace scope): no one writes those.
#define __constant__ __attribute__((visibility("protected")))
#define __managed__
#define __grid_constant__
#define __align__(n) __attribute__((aligned(n)))
// Block-scope thread_local is static; one OS thread runs one block at a time, so a __shared__
// variable is shared by exactly the threads (fibers) of the block being run. `static __shared__`
// stays valid.
#define __shared__ thread_local
#if defined(__has_builtin)
#if !__has_builtin(__builtin_assume)
#define __builtin_assume(x) ((void)0)
#endif
#endif

constexpr int warpSize = 32;

#define HARNESS_CPU_VEC1(T, N, A)                                                                   \
    struct __attribute__((aligned(A))) N##1 { T x; };                                              \
    static inline N##1 make_##N##1(T x) { N##1 r; r.x = x; return r; }
#define HARNESS_CPU_VEC2(T, N, A)                                                                   \
    struct __attribute__((aligned(A))) N##2 { T x, y; };                                           \
    static inline N##2 make_##N##2(T x, T y) { N##2 r; r.x = x; r.y = y; return r; }
#define HARNESS_CPU_VEC3(T, N, A)                                                                   \
    struct __attribute__((aligned(A))) N##3 { T x, y, z; };                                        \
    static inline N##3 make_##N##3(T x, T y, T z) { N##3 r; r.x = x; r.y = y; r.z = z; return r; }
#define HARNESS_CPU_VEC4(T, N, A)                                                                   \
    struct __attribute__((aligned(A))) N##4 { T x, y, z, w; };                                     \
    static inline N##4 make_##N##4(T x, T y, T z, T w) { N##4 r; r.x = x; r.y = y; r.z = z; r.w = w; return r; }
#define HARNESS_CPU_VECS(T, N, A1, A2, A3, A4) \
    HARNESS_CPU_VEC1(T, N, A1) HARNESS_CPU_VEC2(T, N, A2) HARNESS_CPU_VEC3(T, N, A3) HARNESS_CPU_VEC4(T, N, A4)

// Sizes and alignments as CUDA's vector types on a 64-bit host.
HARNESS_CPU_VECS(signed char, char, 1, 2, 1, 4)
HARNESS_CPU_VECS(unsigned char, uchar, 1, 2, 1, 4)
HARNESS_CPU_VECS(short, short, 2, 4, 2, 8)
HARNESS_CPU_VECS(unsigned short, ushort, 2, 4, 2, 8)
HARNESS_CPU_VECS(int, int, 4, 8, 4, 16)
HARNESS_CPU_VECS(unsigned int, uint, 4, 8, 4, 16)
HARNESS_CPU_VECS(long, long, 8, 16, 8, 16)
HARNESS_CPU_VECS(unsigned long, ulong, 8, 16, 8, 16)
HARNESS_CPU_VECS(long long, longlong, 8, 16, 8, 16)
HARNESS_CPU_VECS(unsigned long long, ulonglong, 8, 16, 8, 16)
HARNESS_CPU_VECS(float, float, 4, 8, 4, 16)
HARNESS_CPU_VECS(double, double, 8, 16, 8, 16)

struct dim3 {
    unsigned int x, y, z;
    constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1) : x(vx), y(vy), z(vz) {}
    constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
    constexpr operator uint3() const { return uint3{x, y, z}; }
};

// The built-in variables, one set per OS thread; the launcher sets them before each CUDA thread
// runs (FIBERS=0) or at each switch between fibers (FIBERS=1).
static thread_local uint3 threadIdx;
static thread_local uint3 blockIdx;
static thread_local dim3 blockDim;
static thread_local dim3 gridDim;

// ---------------------------------------------------------------------------------------------
// 3. Runtime
// ---------------------------------------------------------------------------------------------
namespace harness_cpu __attribute__((visibility("hidden"))) {

enum Status : int {
    kOk = 0,
    kInvalidConfig = 1,  // grid/block shape or arguments refused before running anything
    kKernelFault = 2,    // the kernel did something the shim refuses (partial warp mask, __trap, ...)
    kDeadlock = 3,       // live threads of a block wait at barriers the others never reach
    kNoMemory = 4,       // fiber stacks could not be mapped
    kMemoryFault = 5,    // a block got SIGSEGV, SIGBUS, SIGFPE or SIGILL (see "memory faults" below)
};

namespace detail {

static int g_status = 0;  // first error of the current launch wins (__atomic CAS)
static int g_status_ready = 0;
static char g_message[1024];

__attribute__((format(printf, 2, 3))) HARNESS_CPU_RT static void set_error(int code, const char* fmt, ...) {
    int expected = 0;
    if (!__atomic_compare_exchange_n(&g_status, &expected, code, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return;
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(g_message, sizeof g_message, fmt, ap);
    va_end(ap);
    __atomic_store_n(&g_status_ready, 1, __ATOMIC_RELEASE);
}

HARNESS_CPU_RT static inline bool error_pending() { return __atomic_load_n(&g_status, __ATOMIC_RELAXED) != 0; }

HARNESS_CPU_RT static void clear_error() {
    __atomic_store_n(&g_status, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&g_status_ready, 0, __ATOMIC_RELAXED);
    g_message[0] = '\0';
}

struct KernelAbort {};  // thrown (FIBERS=0 only) to leave a kernel that hit a refused construct

// ---- memory faults -------------------------------------------------------------------------
// A kernel that touches an address outside every mapping (or divides an integer by zero) would
// kill the whole process, where a GPU fails the launch with an illegal address. So each block
// runs with a jump buffer in its thread; the handler, on a stack of its own (the fault may be a
// fiber's stack overflow), jumps back there and the launch fails naming the signal, the address,
// the block and the thread. A fault outside a block goes to the handler installed before this
// one (another shared object's shim, Python's faulthandler), or takes the signal's default.
static const int kFaultSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL};
constexpr int kFaultSignalCount = sizeof kFaultSignals / sizeof kFaultSignals[0];
constexpr std::size_t kAltStackBytes = 64 * 1024;
static struct sigaction g_previous_handler[kFaultSignalCount];
static bool g_fault_handlers_installed = false;
static thread_local sigjmp_buf* t_fault_jump = nullptr;
static thread_local int t_fault_signal = 0;
static thread_local void* t_fault_address = nullptr;
static thread_local int t_fault_code = 0;  // si_code: which kind of SIGSEGV

HARNESS_CPU_RT static void on_fault(int sig, siginfo_t* info, void* context) {
    if (sigjmp_buf* jump = t_fault_jump) {
        t_fault_jump = nullptr;
        t_fault_signal = sig;
        t_fault_address = info ? info->si_addr : nullptr;
        t_fault_code = info ? info->si_code : 0;
        siglongjmp(*jump, 1);
    }
    for (int i = 0; i < kFaultSignalCount; ++i) {
        if (kFaultSignals[i] != sig) continue;
        const struct sigaction& before = g_previous_handler[i];
        if ((before.sa_flags & SA_SIGINFO) && before.sa_sigaction) {
            before.sa_sigaction(sig, info, context);
        } else if (before.sa_handler != SIG_DFL && before.sa_handler != SIG_IGN && before.sa_handler) {
            before.sa_handler(sig);
        } else {
            signal(sig, SIG_DFL);  // returning re-runs the faulting instruction, which now ends the process
        }
        return;
    }
}

HARNESS_CPU_RT static void install_fault_handlers() {  // once per shared object, from the launching thread
    if (g_fault_handlers_installed) return;
    g_fault_handlers_installed = true;
    struct sigaction action;
    std::memset(&action, 0, sizeof action);
    action.sa_sigaction = on_fault;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;  // NODEFER: the jump leaves no signal blocked
    sigemptyset(&action.sa_mask);
    for (int i = 0; i < kFaultSignalCount; ++i) sigaction(kFaultSignals[i], &action, &g_previous_handler[i]);
}

HARNESS_CPU_RT static void ensure_alt_stack() {  // per thread: the handler must not run on the stack that overflowed
    stack_t current;
    if (sigaltstack(nullptr, &current) == 0 && !(current.ss_flags & SS_DISABLE)) return;
    static thread_local char* stack = nullptr;  // kept for the thread's life
    if (!stack) stack = static_cast<char*>(std::malloc(kAltStackBytes));
    if (!stack) return;
    stack_t mine;
    mine.ss_sp = stack;
    mine.ss_size = kAltStackBytes;
    mine.ss_flags = 0;
    sigaltstack(&mine, nullptr);
}

HARNESS_CPU_RT static const char* signal_name(int sig, int code) {
    switch (sig) {
        case SIGSEGV:
            // An access to a fence (harness/backends/cpu_fence.py) or read-only memory; one past the 47 bits of a
            // user's address space (a far jump from a buffer mapped high), whose address x86 does not report.
            if (code == SEGV_ACCERR) return "SIGSEGV (an address its page forbids: a fence past a buffer, or read-only)";
            if (code == SI_KERNEL) return "SIGSEGV (an address outside the address space, not reported)";
            return "SIGSEGV (an address outside every mapping)";
        case SIGBUS: return "SIGBUS (a misaligned or unbacked address)";
        case SIGFPE: return "SIGFPE (an integer division by zero)";
        case SIGILL: return "SIGILL (an illegal instruction)";
        default: return "a signal";
    }
}

HARNESS_CPU_RT static void report_fault() {
    set_error(kMemoryFault, "memory fault: %s at address %p in block (%u,%u,%u), thread (%u,%u,%u)",
              signal_name(t_fault_signal, t_fault_code), t_fault_address, blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x,
              threadIdx.y, threadIdx.z);
}

// ---- fibers --------------------------------------------------------------------------------

enum : unsigned char { kRunnable = 0, kWaitBlock = 1, kWaitWarp = 2, kDone = 3 };

struct Fiber {
    void* sp;  // saved stack pointer (asm switch)
    uint3 tid;
    unsigned warp, lane;
    unsigned char state;
    // Contention (mode 2): the last 4 ranges [lo, hi) of memory this thread loaded since it
    // last yielded; a store into one of them is the write of a read-modify-write.
    unsigned char reads;
    uintptr_t read_lo[4], read_hi[4];
#if !HARNESS_CPU_ASM_SWITCH
    ucontext_t uc;
#endif
};

struct Warp {
    unsigned nlanes;     // lanes that exist (a block's last warp may be partial)
    unsigned live_mask;  // lanes that have not returned
    unsigned live;
    unsigned arrived;    // lanes waiting at the current warp barrier (the releasing one included)
    unsigned waiting;    // mask of blocked lanes
    unsigned gen;
    unsigned part[2];    // lanes that took part in the exchange of generation parity g
    unsigned long long slot[2][32];
};

struct Sched {
    char* region = nullptr;
    std::size_t region_bytes = 0;
    unsigned cap = 0;  // fibers with a stack
    Fiber* fibers = nullptr;
    Warp warps[32];
    unsigned n = 0, live = 0, cur = 0;
    unsigned bar_arrived = 0, bar_gen = 0, bar_pred = 0;
    unsigned bar_res_pred[2] = {0, 0}, bar_res_n[2] = {0, 0};
    void* main_sp = nullptr;
#if !HARNESS_CPU_ASM_SWITCH
    ucontext_t main_uc;
#endif
    bool aborted = false;
    void (*invoke)(void*) = nullptr;
    void* invoke_ctx = nullptr;
    unsigned mxcsr_cw[2] = {0x1f80u, 0x037fu};

    bool guarded = false;  // guard pages below the stacks (see kGuardBudget)

    HARNESS_CPU_RT ~Sched() { release_stacks(); }

    HARNESS_CPU_RT static constexpr std::size_t slot_bytes() {
        return ((std::size_t)HARNESS_CPU_STACK_BYTES + 4095u) / 4096u * 4096u + 4096u;  // + guard page
    }
    // The lowest 8 bytes a fiber may use: a canary checked after each block catches an overflow
    // where there is no guard page (or one that jumped over it).
    HARNESS_CPU_RT unsigned long long* canary(unsigned i) const {
        return reinterpret_cast<unsigned long long*>(region + (std::size_t)i * slot_bytes() + 4096);
    }
    static constexpr unsigned long long kCanary = 0x5afe57ac6b0770a1ull;

    HARNESS_CPU_RT void release_stacks() {
        if (region) munmap(region, region_bytes);
        if (guarded) __atomic_sub_fetch(g_guard_pages, cap, __ATOMIC_RELAXED);
        delete[] fibers;
        region = nullptr;
        fibers = nullptr;
        cap = 0;
        guarded = false;
    }

    // Every guard page splits the mapping (two VMAs per stack) and the kernel caps a process's
    // VMAs (vm.max_map_count, 65530 by default); past this budget stacks go unguarded and only the
    // canary watches them. The cap is the process's, and a campaign's worker loads one object per
    // batch of mutants: the backend hands every object it loads one ledger
    // (harness_share_guard_ledger), so the budget is the process's too. An object whose loader
    // shares none counts alone.
    static constexpr long kGuardBudget = HARNESS_CPU_GUARD_BUDGET;
    inline static long g_own_guard_pages = 0;
    inline static long* g_guard_pages = &g_own_guard_pages;

    HARNESS_CPU_RT bool reserve(unsigned want) {
        if (want <= cap) return true;
        release_stacks();
        const std::size_t bytes = slot_bytes() * want;
        void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK,
                       -1, 0);
        if (p == MAP_FAILED) return false;
        region = static_cast<char*>(p);
        region_bytes = bytes;
        fibers = new (std::nothrow) Fiber[want];
        if (!fibers) {
            munmap(region, region_bytes);
            region = nullptr;
            return false;
        }
        cap = want;
        guarded = __atomic_add_fetch(g_guard_pages, (long)want, __ATOMIC_RELAXED) <= kGuardBudget;
        if (!guarded) __atomic_sub_fetch(g_guard_pages, (long)want, __ATOMIC_RELAXED);
        for (unsigned i = 0; i < want; ++i) {
            if (guarded) mprotect(region + (std::size_t)i * slot_bytes(), 4096, PROT_NONE);
            *canary(i) = kCanary;
        }
        return true;
    }
};
static thread_local Sched* t_sched = nullptr;  // the scheduler of the block this OS thread runs
// The scheduler of the block being run in a launch of mode 2 (contention), else null. Not thread_local: the
// hooks read it at every load and store, and a shared object's TLS costs a call each time; a contended
// launch runs on one OS thread, and the launches of one shared object come one after another.
static Sched* g_contend = nullptr;

// Pool of schedulers (with their stacks) reused across blocks and launches; freed when the shared
// object is unloaded, or drained when its loader will launch nothing of it for a while
// (harness_release_stacks: the backend never unloads an object).
struct Pool {
    Sched* items[512];
    int count = 0;
    char lock = 0;
    HARNESS_CPU_RT ~Pool() { drain(); }
    HARNESS_CPU_RT void drain() {
        while (__atomic_test_and_set(&lock, __ATOMIC_ACQUIRE)) {
        }
        for (int i = 0; i < count; ++i) delete items[i];
        count = 0;
        __atomic_clear(&lock, __ATOMIC_RELEASE);
    }
    HARNESS_CPU_RT Sched* acquire() {
        while (__atomic_test_and_set(&lock, __ATOMIC_ACQUIRE)) {
        }
        Sched* s = count ? items[--count] : nullptr;
        __atomic_clear(&lock, __ATOMIC_RELEASE);
        return s ? s : new (std::nothrow) Sched();
    }
    HARNESS_CPU_RT void release(Sched* s) {
        while (__atomic_test_and_set(&lock, __ATOMIC_ACQUIRE)) {
        }
        if (count < 512) {
            items[count++] = s;
            s = nullptr;
        }
        __atomic_clear(&lock, __ATOMIC_RELEASE);
        delete s;
    }
};
static Pool g_pool;

#if HARNESS_CPU_ASM_SWITCH
// Save the callee-saved registers, MXCSR and the x87 control word on the current stack, store the
// stack pointer in *save, load `to` as the stack pointer and restore the same set from there.
// noipa: the compiler must treat it as an unknown call (it may read and write any memory).
__attribute__((naked, noinline, noipa)) static void switch_stack(void** /*save*/, void* /*to*/) {
    __asm__ volatile(
        "pushq %rbp\n\t"
        "pushq %rbx\n\t"
        "pushq %r12\n\t"
        "pushq %r13\n\t"
        "pushq %r14\n\t"
        "pushq %r15\n\t"
        "subq $8, %rsp\n\t"
        "stmxcsr (%rsp)\n\t"
        "fnstcw 4(%rsp)\n\t"
        "movq %rsp, (%rdi)\n\t"
        "movq %rsi, %rsp\n\t"
        "ldmxcsr (%rsp)\n\t"
        "fldcw 4(%rsp)\n\t"
        "addq $8, %rsp\n\t"
        "popq %r15\n\t"
        "popq %r14\n\t"
        "popq %r13\n\t"
        "popq %r12\n\t"
        "popq %rbx\n\t"
        "popq %rbp\n\t"
        "ret\n\t");
}
#endif

HARNESS_CPU_RT static void fiber_entry();

// Switch from the current context (fiber `from`, or the scheduler when from == nullptr) to fiber j.
HARNESS_CPU_RT static inline void switch_to(Sched* s, Fiber* from, unsigned j) {
    s->cur = j;
    Fiber& to = s->fibers[j];
    threadIdx = to.tid;
    __asm__ volatile("" ::: "memory");
#if HARNESS_CPU_ASM_SWITCH
    switch_stack(from ? &from->sp : &s->main_sp, to.sp);
#else
    swapcontext(from ? &from->uc : &s->main_uc, &to.uc);
#endif
    __asm__ volatile("" ::: "memory");
}

HARNESS_CPU_RT static inline void switch_to_main(Sched* s, Fiber* from) {
    __asm__ volatile("" ::: "memory");
#if HARNESS_CPU_ASM_SWITCH
    switch_stack(&from->sp, s->main_sp);
#else
    swapcontext(&from->uc, &s->main_uc);
#endif
    __builtin_unreachable();  // a fiber that gives up its block is never resumed
}

HARNESS_CPU_RT static inline void report_deadlock(Sched* s) {
    unsigned at_block = 0, at_warp = 0;
    for (unsigned i = 0; i < s->n; ++i) {
        at_block += s->fibers[i].state == kWaitBlock;
        at_warp += s->fibers[i].state == kWaitWarp;
    }
    set_error(kDeadlock,
              "deadlock in block (%u,%u,%u): %u threads wait at __syncthreads and %u at warp-level "
              "operations, and no thread can go on (divergent barrier: not every live thread of the "
              "block or warp reaches the same kind of barrier)",
              blockIdx.x, blockIdx.y, blockIdx.z, at_block, at_warp);
}

// The current fiber has blocked or finished: run the next runnable fiber, or go back to the
// scheduler when none is left.
HARNESS_CPU_RT static inline void switch_away(Sched* s) {
    Fiber* from = &s->fibers[s->cur];
    const unsigned n = s->n;
    unsigned j = s->cur;
    for (unsigned k = 0; k < n; ++k) {
        j = (j + 1 == n) ? 0 : j + 1;
        if (s->fibers[j].state == kRunnable) {
            switch_to(s, from, j);
            return;
        }
    }
    if (s->live != 0) {
        report_deadlock(s);
        s->aborted = true;
    }
    switch_to_main(s, from);
}

// ---- contention (mode 2) -----------------------------------------------------------------------
// A GPU runs a block's threads at once: between one thread's load of a word and its store or
// atomic exchange, other threads load, add and exchange on the same word. Here the threads are
// fibers that run one at a time, so the schedule is made to do the same, the same way on every run:
// - every atomic read-modify-write and CAS first yields to the block's next runnable thread (round
//   robin), so that each thread of a CAS loop reads the word, then all of them exchange in turn, each
//   after the others have read: a loop that retries with a stale value, or rewrites the other lane of
//   a sub-word CAS from what it read before, loses contributions, as it would on the GPU;
// - a plain store into memory the thread itself loaded since it last yielded (a read-modify-write
//   without an atomic: `a[i] += v`, or a CAS made plain) yields first the same way, so that the other
//   threads load the old value before it stores: updates are lost as on a GPU.
// Blocks of such a launch run one after another on one OS thread, in index order: the whole launch
// is one schedule, whatever the machine's load (races between blocks are not made to happen).
HARNESS_CPU_RT static inline void contend_yield(Sched* s) {
    Fiber* from = &s->fibers[s->cur];
    from->reads = 0;
    for (unsigned i = 0; i < 4; ++i) from->read_lo[i] = from->read_hi[i] = 0;
    const unsigned n = s->n;
    unsigned j = s->cur;
    for (unsigned k = 1; k < n; ++k) {
        j = (j + 1 == n) ? 0 : j + 1;
        if (s->fibers[j].state == kRunnable) {
            switch_to(s, from, j);
            return;
        }
    }
}

// Before an atomic operation.
HARNESS_CPU_RT static inline void contend_atomic() {
#if HARNESS_CPU_CONTEND
    Sched* s = g_contend;
    if (s) contend_yield(s);
#endif
}

HARNESS_CPU_RT static inline bool on_a_fiber_stack(const Sched* s, uintptr_t p) {
    return p - (uintptr_t)s->region < s->region_bytes;
}

HARNESS_CPU_RT static inline void contend_read(const void* a, unsigned long size) {
    Sched* s = g_contend;
    if (!s) return;
    const uintptr_t p = (uintptr_t)a;
    if (on_a_fiber_stack(s, p)) return;
    Fiber& f = s->fibers[s->cur];
    const unsigned i = f.reads++ & 3u;
    f.read_lo[i] = p;
    f.read_hi[i] = p + size;
}

HARNESS_CPU_RT static inline void contend_write(const void* a, unsigned long size) {
    Sched* s = g_contend;
    if (!s) return;
    const uintptr_t p = (uintptr_t)a;
    if (on_a_fiber_stack(s, p)) return;
    const Fiber& f = s->fibers[s->cur];
    for (unsigned i = 0; i < 4; ++i)
        if (f.read_lo[i] < p + size && p < f.read_hi[i]) {
            contend_yield(s);
            return;
        }
}

[[noreturn]] HARNESS_CPU_RT static void abort_block(Sched* s) {
    s->aborted = true;
    switch_to_main(s, &s->fibers[s->cur]);
    __builtin_unreachable();
}

// Called by a construct the shim refuses; does not return (FIBERS=1: the block is abandoned;
// FIBERS=0: a KernelAbort unwinds out of the kernel).
[[noreturn]] __attribute__((format(printf, 2, 3))) HARNESS_CPU_RT static void fail(int code, const char* fmt, ...) {
    char buf[768];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    set_error(code, "%s (block (%u,%u,%u), thread (%u,%u,%u))", buf, blockIdx.x, blockIdx.y, blockIdx.z,
              threadIdx.x, threadIdx.y, threadIdx.z);
    if (t_sched) abort_block(t_sched);
#if defined(__cpp_exceptions)
    throw KernelAbort{};
#else
    std::fprintf(stderr, "cuda_cpu: %s\n", g_message);
    std::abort();
#endif
}

HARNESS_CPU_RT static inline void release_block(Sched* s) {
    const unsigned g = s->bar_gen & 1u;
    s->bar_res_pred[g] = s->bar_pred;
    s->bar_res_n[g] = s->bar_arrived;
    s->bar_pred = 0;
    s->bar_arrived = 0;
    ++s->bar_gen;
    for (unsigned i = 0; i < s->n; ++i)
        if (s->fibers[i].state == kWaitBlock) s->fibers[i].state = kRunnable;
}

HARNESS_CPU_RT static inline void release_warp(Sched* s, unsigned w_index) {
    Warp& w = s->warps[w_index];
    w.part[w.gen & 1u] = w.live_mask;
    w.arrived = 0;
    ++w.gen;
    unsigned m = w.waiting;
    w.waiting = 0;
    const unsigned base = w_index * 32u;
    while (m) {
        const unsigned lane = (unsigned)__builtin_ctz(m);
        m &= m - 1;
        s->fibers[base + lane].state = kRunnable;
    }
}

[[noreturn]] HARNESS_CPU_RT static void fiber_exit(Sched* s) {
    Fiber& f = s->fibers[s->cur];
    f.state = kDone;
    --s->live;
    Warp& w = s->warps[f.warp];
    w.live_mask &= ~(1u << f.lane);
    --w.live;
    if (s->bar_arrived != 0 && s->bar_arrived == s->live) release_block(s);
    if (w.arrived != 0 && w.arrived == w.live) release_warp(s, f.warp);
    if (s->live == 0) switch_to_main(s, &f);
    switch_away(s);
    __builtin_unreachable();
}

HARNESS_CPU_RT static void fiber_entry() {
    Sched* s = t_sched;
    s->invoke(s->invoke_ctx);
    fiber_exit(s);
}

#if !HARNESS_CPU_ASM_SWITCH
HARNESS_CPU_RT static void fiber_entry_uc() { fiber_entry(); }
#endif

// Block barrier; returns how many arrivals had a nonzero predicate, and in *n how many arrived.
// Every barrier is also a full compiler memory barrier on every path (the last thread to arrive
// does not switch stacks, and must not let the compiler move shared-memory accesses across it).
#define HARNESS_CPU_COMPILER_FENCE() __asm__ volatile("" ::: "memory")

HARNESS_CPU_RT static inline unsigned block_barrier(int pred, unsigned* n_out) {
    HARNESS_CPU_COMPILER_FENCE();
    Sched* s = t_sched;
    if (!s) {
        if ((unsigned long long)blockDim.x * blockDim.y * blockDim.z != 1)
            fail(kKernelFault, "__syncthreads in a launch without fibers (HARNESS_CPU_FIBERS=0) and a block of "
                               "more than one thread");
        *n_out = 1;
        HARNESS_CPU_COMPILER_FENCE();
        return pred != 0;
    }
    const unsigned g = s->bar_gen & 1u;
    s->bar_pred += (pred != 0);
    if (++s->bar_arrived == s->live) {
        release_block(s);
    } else {
        s->fibers[s->cur].state = kWaitBlock;
        switch_away(s);
    }
    HARNESS_CPU_COMPILER_FENCE();
    *n_out = s->bar_res_n[g];
    return s->bar_res_pred[g];
}

HARNESS_CPU_RT static inline void run_block(Sched* s) {
    const unsigned n = s->n;
    for (unsigned i = 0; i < n; ++i) {
        Fiber& f = s->fibers[i];
        f.state = kRunnable;
        f.reads = 0;
        for (unsigned r = 0; r < 4; ++r) f.read_lo[r] = f.read_hi[r] = 0;
#if HARNESS_CPU_ASM_SWITCH
        void** top = reinterpret_cast<void**>(s->region + (std::size_t)(i + 1) * Sched::slot_bytes());
        top[-1] = nullptr;                                     // return address of fiber_entry: none
        top[-2] = reinterpret_cast<void*>(&fiber_entry);      // where switch_stack's ret goes
        for (int r = 3; r <= 8; ++r) top[-r] = nullptr;       // rbp rbx r12 r13 r14 r15
        unsigned* ctl = reinterpret_cast<unsigned*>(&top[-9]);
        ctl[0] = s->mxcsr_cw[0];
        ctl[1] = s->mxcsr_cw[1];
        f.sp = &top[-9];
#else
        getcontext(&f.uc);
        f.uc.uc_stack.ss_sp = s->region + (std::size_t)i * Sched::slot_bytes() + 4096;
        f.uc.uc_stack.ss_size = Sched::slot_bytes() - 4096;
        f.uc.uc_link = nullptr;
        makecontext(&f.uc, fiber_entry_uc, 0);
#endif
    }
    const unsigned nwarps = (n + 31u) / 32u;
    for (unsigned w = 0; w < nwarps; ++w) {
        Warp& wp = s->warps[w];
        wp.nlanes = (w + 1 == nwarps) ? n - w * 32u : 32u;
        wp.live_mask = wp.nlanes == 32u ? 0xffffffffu : ((1u << wp.nlanes) - 1u);
        wp.live = wp.nlanes;
        wp.arrived = 0;
        wp.waiting = 0;
        wp.gen = 0;
        wp.part[0] = wp.part[1] = 0;
    }
    s->live = n;
    s->bar_arrived = s->bar_gen = s->bar_pred = 0;
    s->aborted = false;
    switch_to(s, nullptr, 0);
}

// Runs every block of a launch with one fiber per CUDA thread (FIBERS=1).
// contend: mode 2 (see "contention"): one OS thread runs the blocks in index order.
HARNESS_CPU_RT static inline void run_fibers(void (*invoke)(void*), void* ctx, dim3 grid, dim3 block, long long nblocks,
                                             bool contend) {
    const unsigned nthreads = block.x * block.y * block.z;
#pragma omp parallel if (!contend)
    {
        ensure_alt_stack();
        Sched* s = g_pool.acquire();
        if (!s || !s->reserve(nthreads)) {
            set_error(kNoMemory, "cannot map %u fiber stacks of %u bytes", nthreads,
                      (unsigned)HARNESS_CPU_STACK_BYTES);
        } else {
            s->invoke = invoke;
            s->invoke_ctx = ctx;
            s->n = nthreads;
            unsigned i = 0;
            for (unsigned z = 0; z < block.z; ++z)
                for (unsigned y = 0; y < block.y; ++y)
                    for (unsigned x = 0; x < block.x; ++x, ++i) {
                        s->fibers[i].tid = uint3{x, y, z};
                        s->fibers[i].warp = i / 32u;
                        s->fibers[i].lane = i % 32u;
                    }
#if HARNESS_CPU_ASM_SWITCH
            __asm__ volatile("stmxcsr %0" : "=m"(s->mxcsr_cw[0]));
            unsigned short cw;
            __asm__ volatile("fnstcw %0" : "=m"(cw));
            s->mxcsr_cw[1] = cw;
#endif
        }
        const bool ready = s && s->cap >= nthreads;
        t_sched = ready ? s : nullptr;
        g_contend = ready && contend ? s : nullptr;
        blockDim = block;
        gridDim = grid;
        const unsigned long long gxy = (unsigned long long)grid.x * grid.y;
#pragma omp for schedule(dynamic)
        for (long long b = 0; b < nblocks; ++b) {
            if (!ready || error_pending()) continue;
            const unsigned long long ub = (unsigned long long)b;
            blockIdx = uint3{(unsigned)(ub % grid.x), (unsigned)((ub / grid.x) % grid.y), (unsigned)(ub / gxy)};
            sigjmp_buf jump;
            if (sigsetjmp(jump, 0) != 0) {  // a fiber faulted: the block is abandoned
                report_fault();
                continue;
            }
            t_fault_jump = &jump;
            run_block(s);
            t_fault_jump = nullptr;
            for (unsigned i = 0; i < nthreads; ++i)
                if (*s->canary(i) != Sched::kCanary) {
                    set_error(kKernelFault,
                              "fiber stack overflow in block (%u,%u,%u) thread %u: the kernel needs more than "
                              "HARNESS_CPU_STACK_BYTES (%u) of stack per thread",
                              blockIdx.x, blockIdx.y, blockIdx.z, i, (unsigned)HARNESS_CPU_STACK_BYTES);
                    *s->canary(i) = Sched::kCanary;
                }
        }
        t_sched = nullptr;
        g_contend = nullptr;
        if (s) g_pool.release(s);
    }
}

// ---- launch ------------------------------------------------------------------------------------

template <class T>
HARNESS_CPU_RT static inline T load_arg(void* p) {
    alignas(T) unsigned char raw[sizeof(T)];
    std::memcpy(raw, p, sizeof(T));
    return *std::launder(reinterpret_cast<T*>(raw));
}

template <class K, class Tup, std::size_t... I>
struct Invoker {
    K kernel;
    const Tup* vals;
    HARNESS_CPU_RT static void run(void* self) {
        Invoker* p = static_cast<Invoker*>(self);
        p->kernel(std::get<I>(*p->vals)...);
    }
};

// Runs every block with a plain loop over its threads (FIBERS=0).
template <class K, class Tup, std::size_t... I>
HARNESS_CPU_RT static void run_plain(K kernel, const Tup& vals, dim3 grid, dim3 block, long long nblocks,
                      std::index_sequence<I...>) {
#ifdef _OPENMP
    const long long workers = omp_get_max_threads();
#else
    const long long workers = 1;
#endif
    long long chunk = nblocks / (workers * 64);
    if (chunk < 1) chunk = 1;
    const unsigned long long gxy = (unsigned long long)grid.x * grid.y;
    const unsigned bx = block.x, by = block.y, bz = block.z;
#pragma omp parallel
    {
        ensure_alt_stack();
        blockDim = block;
        gridDim = grid;
        uint3* tix = &threadIdx;
        uint3* bix = &blockIdx;
        __asm__("" : "+r"(tix), "+r"(bix));  // keep the TLS addresses in registers
#pragma omp for schedule(dynamic, chunk)
        for (long long b = 0; b < nblocks; ++b) {
            if (error_pending()) continue;
            const unsigned long long ub = (unsigned long long)b;
            *bix = uint3{(unsigned)(ub % grid.x), (unsigned)((ub / grid.x) % grid.y), (unsigned)(ub / gxy)};
            sigjmp_buf jump;
            if (sigsetjmp(jump, 0) != 0) {
                report_fault();
                continue;
            }
            t_fault_jump = &jump;
#if defined(__cpp_exceptions)
            try {
#endif
                if (by == 1 && bz == 1) {
                    tix->y = 0;
                    tix->z = 0;
                    for (unsigned x = 0; x < bx; ++x) {
                        tix->x = x;
                        kernel(std::get<I>(vals)...);
                    }
                } else {
                    for (unsigned z = 0; z < bz; ++z)
                        for (unsigned y = 0; y < by; ++y)
                            for (unsigned x = 0; x < bx; ++x) {
                                *tix = uint3{x, y, z};
                                kernel(std::get<I>(vals)...);
                            }
                }
#if defined(__cpp_exceptions)
            } catch (const KernelAbort&) {
            }
#endif
            t_fault_jump = nullptr;
        }
    }
}

template <class... A, std::size_t... I>
HARNESS_CPU_RT static int launch_impl(void (*kernel)(A...), void** args, dim3 grid, dim3 block, int fibers,
                       std::index_sequence<I...> seq) {
    clear_error();
    const unsigned long long nthreads = (unsigned long long)block.x * block.y * block.z;
    if (!kernel) {
        set_error(kInvalidConfig, "launch: null kernel");
    } else if (block.x == 0 || block.y == 0 || block.z == 0 || grid.x == 0 || grid.y == 0 || grid.z == 0) {
        set_error(kInvalidConfig, "launch: grid (%u,%u,%u) and block (%u,%u,%u) must have no zero dimension",
                  grid.x, grid.y, grid.z, block.x, block.y, block.z);
    } else if (nthreads > 1024 || block.x > 1024 || block.y > 1024 || block.z > 64) {
        set_error(kInvalidConfig,
                  "launch: block (%u,%u,%u) exceeds CUDA's limits (at most 1024 threads, x,y <= 1024, z <= 64)",
                  block.x, block.y, block.z);
    } else if (grid.x > 2147483647u || grid.y > 65535u || grid.z > 65535u) {
        set_error(kInvalidConfig, "launch: grid (%u,%u,%u) exceeds CUDA's limits (x < 2^31, y,z <= 65535)", grid.x,
                  grid.y, grid.z);
    } else if (sizeof...(A) != 0 && !args) {
        set_error(kInvalidConfig, "launch: the kernel takes %zu arguments but args is null", sizeof...(A));
    }
    if (error_pending()) return g_status;
    install_fault_handlers();

    using Tup = std::tuple<std::remove_cv_t<std::remove_reference_t<A>>...>;
    Tup vals(load_arg<std::remove_cv_t<std::remove_reference_t<A>>>(args[I])...);
    (void)args;
    const long long nblocks = (long long)grid.x * (long long)grid.y * (long long)grid.z;
    if (!fibers) {
        run_plain(kernel, vals, grid, block, nblocks, seq);
    } else {
        Invoker<void (*)(A...), Tup, I...> inv{kernel, &vals};
        run_fibers(&Invoker<void (*)(A...), Tup, I...>::run, &inv, grid, block, nblocks, fibers == 2);
    }
    return __atomic_load_n(&g_status, __ATOMIC_ACQUIRE);
}

}  // namespace detail

// Runs kernel over grid x block. args[i] points to the value of argument i (cuLaunchKernel's
// kernelParams). fibers: 0 = plain loop (no barriers or warp operations in the source), 1 = one
// cooperative fiber per thread, 2 = fibers under contention (a build with HARNESS_CPU_CONTEND=1; see
// "contention"). Returns 0, or a Status with last_error() saying why.
template <class... A>
HARNESS_CPU_RT static int launch(void (*kernel)(A...), void** args, dim3 grid, dim3 block, int fibers) {
    return detail::launch_impl(kernel, args, grid, block, fibers, std::index_sequence_for<A...>{});
}

HARNESS_CPU_RT static inline const char* last_error() {
    return __atomic_load_n(&detail::g_status_ready, __ATOMIC_ACQUIRE) ? detail::g_message : "";
}

// Between launches only (a launch holds its schedulers outside the pool).
HARNESS_CPU_RT static inline void share_guard_ledger(long* ledger) { detail::Sched::g_guard_pages = ledger; }
HARNESS_CPU_RT static inline void release_stacks() { detail::g_pool.drain(); }

}  // namespace harness_cpu

#if HARNESS_CPU_CONTEND
// The hooks g++'s -fsanitize=thread calls before each load and store of the kernel's code (no sanitizer
// runtime: these are all it needs). Hidden, so each shared object calls its own.
#define HARNESS_CPU_HOOK extern "C" __attribute__((visibility("hidden"), no_sanitize_thread)) void
#define HARNESS_CPU_HOOKS(N)                                                                                     \
    HARNESS_CPU_HOOK __tsan_read##N(void* a) { harness_cpu::detail::contend_read(a, N); }                        \
    HARNESS_CPU_HOOK __tsan_write##N(void* a) { harness_cpu::detail::contend_write(a, N); }                      \
    HARNESS_CPU_HOOK __tsan_unaligned_read##N(void* a) { harness_cpu::detail::contend_read(a, N); }              \
    HARNESS_CPU_HOOK __tsan_unaligned_write##N(void* a) { harness_cpu::detail::contend_write(a, N); }            \
    HARNESS_CPU_HOOK __tsan_volatile_read##N(void* a) { harness_cpu::detail::contend_read(a, N); }               \
    HARNESS_CPU_HOOK __tsan_volatile_write##N(void* a) { harness_cpu::detail::contend_write(a, N); }             \
    HARNESS_CPU_HOOK __tsan_unaligned_volatile_read##N(void* a) { harness_cpu::detail::contend_read(a, N); }     \
    HARNESS_CPU_HOOK __tsan_unaligned_volatile_write##N(void* a) { harness_cpu::detail::contend_write(a, N); }
HARNESS_CPU_HOOKS(1)
HARNESS_CPU_HOOKS(2)
HARNESS_CPU_HOOKS(4)
HARNESS_CPU_HOOKS(8)
HARNESS_CPU_HOOKS(16)
#undef HARNESS_CPU_HOOKS
HARNESS_CPU_HOOK __tsan_read_range(void* a, unsigned long n) { harness_cpu::detail::contend_read(a, n); }
HARNESS_CPU_HOOK __tsan_write_range(void* a, unsigned long n) { harness_cpu::detail::contend_write(a, n); }
HARNESS_CPU_HOOK __tsan_init() {}
HARNESS_CPU_HOOK __tsan_func_entry(void*) {}
HARNESS_CPU_HOOK __tsan_func_exit() {}
HARNESS_CPU_HOOK __tsan_vptr_read(void**) {}
HARNESS_CPU_HOOK __tsan_vptr_update(void**, void*) {}
#undef HARNESS_CPU_HOOK
#endif

// ---------------------------------------------------------------------------------------------
// 4. Bit casts, integer and float intrinsics, min/max, conversions
// ---------------------------------------------------------------------------------------------
static constexpr inline int __float_as_int(float x) { return __builtin_bit_cast(int, x); }
static constexpr inline float __int_as_float(int x) { return __builtin_bit_cast(float, x); }
static constexpr inline unsigned int __float_as_uint(float x) { return __builtin_bit_cast(unsigned int, x); }
static constexpr inline float __uint_as_float(unsigned int x) { return __builtin_bit_cast(float, x); }
static constexpr inline long long __double_as_longlong(double x) { return __builtin_bit_cast(long long, x); }
static constexpr inline double __longlong_as_double(long long x) { return __builtin_bit_cast(double, x); }
static inline int __double2hiint(double x) { return (int)((unsigned long long)__double_as_longlong(x) >> 32); }
static inline int __double2loint(double x) { return (int)(unsigned)(unsigned long long)__double_as_longlong(x); }
static inline double __hiloint2double(int hi, int lo) {
    return __longlong_as_double((long long)(((unsigned long long)(unsigned)hi << 32) | (unsigned)lo));
}

static inline int __popc(unsigned int x) { return __builtin_popcount(x); }
static inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
static inline int __clz(int x) { return x ? __builtin_clz((unsigned)x) : 32; }
static inline int __clzll(long long x) { return x ? __builtin_clzll((unsigned long long)x) : 64; }
static inline int __ffs(int x) { return __builtin_ffs(x); }
static inline int __ffsll(long long x) { return __builtin_ffsll(x); }
static inline unsigned int __brev(unsigned int x) {
    x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
    x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
    x = ((x >> 4) & 0x0f0f0f0fu) | ((x & 0x0f0f0f0fu) << 4);
    return __builtin_bswap32(x);
}
static inline unsigned long long __brevll(unsigned long long x) {
    return ((unsigned long long)__brev((unsigned)x) << 32) | __brev((unsigned)(x >> 32));
}
static inline int __mul24(int x, int y) {
    return (int)(unsigned)((long long)((int)((unsigned)x << 8) >> 8) * (long long)((int)((unsigned)y << 8) >> 8));
}
static inline unsigned int __umul24(unsigned int x, unsigned int y) { return (x & 0xffffffu) * (y & 0xffffffu); }
static inline int __mulhi(int x, int y) { return (int)(((long long)x * (long long)y) >> 32); }
static inline unsigned int __umulhi(unsigned int x, unsigned int y) {
    return (unsigned)(((unsigned long long)x * y) >> 32);
}
static inline long long __mul64hi(long long x, long long y) { return (long long)(((__int128)x * y) >> 64); }
static inline unsigned long long __umul64hi(unsigned long long x, unsigned long long y) {
    return (unsigned long long)(((unsigned __int128)x * y) >> 64);
}
static inline int __hadd(int x, int y) { return (int)(((long long)x + y) >> 1); }
static inline int __rhadd(int x, int y) { return (int)(((long long)x + y + 1) >> 1); }
static inline unsigned int __uhadd(unsigned int x, unsigned int y) { return (unsigned)(((unsigned long long)x + y) >> 1); }
static inline unsigned int __urhadd(unsigned int x, unsigned int y) {
    return (unsigned)(((unsigned long long)x + y + 1) >> 1);
}
static inline unsigned int __sad(int x, int y, unsigned int z) {
    return (unsigned)(x > y ? (long long)x - y : (long long)y - x) + z;
}
static inline unsigned int __usad(unsigned int x, unsigned int y, unsigned int z) { return (x > y ? x - y : y - x) + z; }
static inline unsigned int __byte_perm(unsigned int x, unsigned int y, unsigned int s) {
    const unsigned long long bytes = ((unsigned long long)y << 32) | x;
    unsigned r = 0;
    for (int i = 0; i < 4; ++i) {
        const unsigned sel = (s >> (4 * i)) & 0xfu;
        unsigned b = (unsigned)(bytes >> (8 * (sel & 7u))) & 0xffu;
        if (sel & 8u) b = (b & 0x80u) ? 0xffu : 0u;  // prmt: msb of the selector replicates the sign
        r |= b << (8 * i);
    }
    return r;
}
static inline unsigned int __funnelshift_l(unsigned int lo, unsigned int hi, unsigned int shift) {
    return (unsigned)((((unsigned long long)hi << 32) | lo) << (shift & 31u) >> 32);
}
static inline unsigned int __funnelshift_lc(unsigned int lo, unsigned int hi, unsigned int shift) {
    const unsigned s = shift > 32u ? 32u : shift;
    return (unsigned)(((((unsigned long long)hi << 32) | lo) << s) >> 32);
}
static inline unsigned int __funnelshift_r(unsigned int lo, unsigned int hi, unsigned int shift) {
    return (unsigned)((((unsigned long long)hi << 32) | lo) >> (shift & 31u));
}
static inline unsigned int __funnelshift_rc(unsigned int lo, unsigned int hi, unsigned int shift) {
    const unsigned s = shift > 32u ? 32u : shift;
    return (unsigned)((((unsigned long long)hi << 32) | lo) >> s);
}
static inline int __dp4a(int a, int b, int c) {
    int r = c;
    for (int i = 0; i < 4; ++i) r += (int)(signed char)(a >> (8 * i)) * (int)(signed char)(b >> (8 * i));
    return r;
}
static inline unsigned int __dp4a(unsigned int a, unsigned int b, unsigned int c) {
    unsigned r = c;
    for (int i = 0; i < 4; ++i) r += ((a >> (8 * i)) & 0xffu) * ((b >> (8 * i)) & 0xffu);
    return r;
}

// min / max: the overload set of CUDA's math headers (mixed signedness goes unsigned, mixed
// float/double goes double; float and double use fminf/fmaxf/fmin/fmax).
#define HARNESS_CPU_MINMAX(R, A, B)                                            \
    static inline R min(A a, B b) { return (R)a < (R)b ? (R)a : (R)b; }        \
    static inline R max(A a, B b) { return (R)a > (R)b ? (R)a : (R)b; }
HARNESS_CPU_MINMAX(int, int, int)
HARNESS_CPU_MINMAX(unsigned int, unsigned int, unsigned int)
HARNESS_CPU_MINMAX(unsigned int, int, unsigned int)
HARNESS_CPU_MINMAX(unsigned int, unsigned int, int)
HARNESS_CPU_MINMAX(long, long, long)
HARNESS_CPU_MINMAX(unsigned long, unsigned long, unsigned long)
HARNESS_CPU_MINMAX(unsigned long, long, unsigned long)
HARNESS_CPU_MINMAX(unsigned long, unsigned long, long)
HARNESS_CPU_MINMAX(long long, long long, long long)
HARNESS_CPU_MINMAX(unsigned long long, unsigned long long, unsigned long long)
HARNESS_CPU_MINMAX(unsigned long long, long long, unsigned long long)
HARNESS_CPU_MINMAX(unsigned long long, unsigned long long, long long)
#undef HARNESS_CPU_MINMAX
static inline float min(float a, float b) { return fminf(a, b); }
static inline float max(float a, float b) { return fmaxf(a, b); }
static inline double min(double a, double b) { return fmin(a, b); }
static inline double max(double a, double b) { return fmax(a, b); }
static inline double min(float a, double b) { return fmin((double)a, b); }
static inline double max(float a, double b) { return fmax((double)a, b); }
static inline double min(double a, float b) { return fmin(a, (double)b); }
static inline double max(double a, float b) { return fmax(a, (double)b); }
static inline unsigned int umin(unsigned int a, unsigned int b) { return a < b ? a : b; }
static inline unsigned int umax(unsigned int a, unsigned int b) { return a > b ? a : b; }
static inline long long llmin(long long a, long long b) { return a < b ? a : b; }
static inline long long llmax(long long a, long long b) { return a > b ? a : b; }
static inline unsigned long long ullmin(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
static inline unsigned long long ullmax(unsigned long long a, unsigned long long b) { return a > b ? a : b; }

namespace harness_cpu __attribute__((visibility("hidden"))) {
namespace math {
// The operation op() evaluated with the FPU rounding mode set to `mode` (directed-rounding
// intrinsics). volatile keeps the compiler from moving the arithmetic across fesetround.
template <class T, class Op>
static inline T rounded(int mode, Op op) {
    const int old = std::fegetround();
    std::fesetround(mode);
    volatile T r = op();
    std::fesetround(old);
    return r;
}
// Float to integer as the GPU's cvt does it: round per `mode`, NaN gives 0, out of range saturates.
template <class I, class F>
static inline I to_int(F x, int mode) {
    if (x != x) return 0;
    F r;
    switch (mode) {
        case FE_TOWARDZERO: r = std::trunc(x); break;
        case FE_DOWNWARD: r = std::floor(x); break;
        case FE_UPWARD: r = std::ceil(x); break;
        default: r = std::nearbyint(x); break;  // the default mode is round to nearest even
    }
    const long double lo = (long double)std::numeric_limits<I>::min();
    const long double hi = (long double)std::numeric_limits<I>::max();
    if ((long double)r <= lo) return std::numeric_limits<I>::min();
    if ((long double)r >= hi) return std::numeric_limits<I>::max();
    return (I)r;
}
static inline float fast_expf(float x) { return expf(x); }
static inline float fast_exp10f(float x) { return exp10f(x); }
static inline float fast_logf(float x) { return logf(x); }
static inline float fast_log2f(float x) { return log2f(x); }
static inline float fast_log10f(float x) { return log10f(x); }
static inline float fast_sinf(float x) { return sinf(x); }
static inline float fast_cosf(float x) { return cosf(x); }
static inline float fast_tanf(float x) { return tanf(x); }
static inline float fast_powf(float x, float y) { return powf(x, y); }
static inline void fast_sincosf(float x, float* s, float* c) {
    *s = sinf(x);
    *c = cosf(x);
}
// erfinv by a starting guess and Newton steps on erf, in double.
static inline double erfinv_d(double y) {
    if (y != y || y < -1.0 || y > 1.0) return __builtin_nan("");
    if (y == 1.0) return __builtin_inf();
    if (y == -1.0) return -__builtin_inf();
    if (y == 0.0) return y;
    const double w = -std::log((1.0 - y) * (1.0 + y));
    double x;
    if (w < 6.25) {
        const double t = w - 3.125;
        x = y * (1.50140941 + t * (0.246640727 + t * (-0.00417768164 + t * (-0.00125372503 + t * 0.00021858087))));
    } else {
        const double t = std::sqrt(w) - 3.0;
        x = y * (2.83297682 + t * (1.00167406 + t * (0.00943887047 + t * (-0.0076224613 + t * 0.00573950773))));
    }
    for (int i = 0; i < 3; ++i) {
        const double err = std::erf(x) - y;
        x -= err / (1.1283791670955126 * std::exp(-x * x));
    }
    return x;
}
static inline double erfcinv_d(double y) {
    if (y != y || y < 0.0 || y > 2.0) return __builtin_nan("");
    if (y == 0.0) return __builtin_inf();
    if (y == 2.0) return -__builtin_inf();
    if (y > 0.0625 && y < 1.9375) return erfinv_d(1.0 - y);
    // tails: Newton on erfc directly keeps the relative accuracy of small y
    const bool neg = y > 1.0;
    const double t = neg ? 2.0 - y : y;
    double x = std::sqrt(-std::log(t * 0.5 * std::sqrt(3.141592653589793)));
    for (int i = 0; i < 60; ++i) {
        const double e = std::erfc(x) - t;
        const double step = e / (-1.1283791670955126 * std::exp(-x * x));
        x -= step;
        if (std::fabs(step) <= 1e-17 * std::fabs(x)) break;
    }
    return neg ? -x : x;
}
static inline double sinpi_d(double x) {
    if (!std::isfinite(x)) return __builtin_nan("");
    const double r = std::remainder(x, 2.0);  // exact, in [-1, 1]
    if (r == 0.0 || std::fabs(r) == 1.0) return std::copysign(0.0, x);
    if (std::fabs(r) == 0.5) return std::copysign(1.0, r);
    return std::sin(3.141592653589793238 * r);
}
static inline double cospi_d(double x) {
    if (!std::isfinite(x)) return __builtin_nan("");
    const double r = std::fabs(std::remainder(x, 2.0));
    if (r == 0.5) return 0.0;
    if (r == 0.0) return 1.0;
    if (r == 1.0) return -1.0;
    return std::cos(3.141592653589793238 * r);
}
}  // namespace math
}  // namespace harness_cpu

// Fast-math intrinsics. glibc declares (but does not export) functions with these names, so they
// are redirected by macro instead of redefined. On the CPU they are the accurate libm functions.
#define __expf(x) ::harness_cpu::math::fast_expf(x)
#define __exp10f(x) ::harness_cpu::math::fast_exp10f(x)
#define __logf(x) ::harness_cpu::math::fast_logf(x)
#define __log2f(x) ::harness_cpu::math::fast_log2f(x)
#define __log10f(x) ::harness_cpu::math::fast_log10f(x)
#define __sinf(x) ::harness_cpu::math::fast_sinf(x)
#define __cosf(x) ::harness_cpu::math::fast_cosf(x)
#define __tanf(x) ::harness_cpu::math::fast_tanf(x)
#define __powf(x, y) ::harness_cpu::math::fast_powf(x, y)
#define __sincosf(x, s, c) ::harness_cpu::math::fast_sincosf(x, s, c)

static inline float rsqrtf(float x) { return (float)(1.0 / std::sqrt((double)x)); }
static inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
static inline float rcbrtf(float x) { return (float)(1.0 / std::cbrt((double)x)); }
static inline double rcbrt(double x) { return 1.0 / std::cbrt(x); }
static inline float __fdividef(float x, float y) { return x / y; }
static inline float fdividef(float x, float y) { return x / y; }
static inline double fdivide(double x, double y) { return x / y; }
static inline float __saturatef(float x) { return x >= 1.0f ? 1.0f : (x > 0.0f ? x : 0.0f); }  // NaN -> 0
static inline float sinpif(float x) { return (float)harness_cpu::math::sinpi_d(x); }
static inline float cospif(float x) { return (float)harness_cpu::math::cospi_d(x); }
static inline void sincospif(float x, float* s, float* c) {
    *s = sinpif(x);
    *c = cospif(x);
}
static inline double sinpi(double x) { return harness_cpu::math::sinpi_d(x); }
static inline double cospi(double x) { return harness_cpu::math::cospi_d(x); }
static inline void sincospi(double x, double* s, double* c) {
    *s = sinpi(x);
    *c = cospi(x);
}
static inline float erfinvf(float x) { return (float)harness_cpu::math::erfinv_d(x); }
static inline double erfinv(double x) { return harness_cpu::math::erfinv_d(x); }
static inline float erfcinvf(float x) { return (float)harness_cpu::math::erfcinv_d(x); }
static inline double erfcinv(double x) { return harness_cpu::math::erfcinv_d(x); }
static inline float normcdff(float x) { return (float)(0.5 * std::erfc(-(double)x * 0.70710678118654752440)); }
static inline double normcdf(double x) { return 0.5 * std::erfc(-x * 0.70710678118654752440); }
static inline float normcdfinvf(float p) { return (float)(-1.41421356237309504880 * harness_cpu::math::erfcinv_d(2.0 * p)); }
static inline double normcdfinv(double p) { return -1.41421356237309504880 * harness_cpu::math::erfcinv_d(2.0 * p); }
static inline float rhypotf(float x, float y) { return (float)(1.0 / std::hypot((double)x, (double)y)); }
static inline double rhypot(double x, double y) { return 1.0 / std::hypot(x, y); }
static inline float norm3df(float a, float b, float c) {
    return (float)std::sqrt((double)a * a + (double)b * b + (double)c * c);
}
static inline float rnorm3df(float a, float b, float c) { return 1.0f / norm3df(a, b, c); }
static inline float norm4df(float a, float b, float c, float d) {
    return (float)std::sqrt((double)a * a + (double)b * b + (double)c * c + (double)d * d);
}
static inline float rnorm4df(float a, float b, float c, float d) { return 1.0f / norm4df(a, b, c, d); }
static inline double norm3d(double a, double b, double c) { return std::sqrt(a * a + b * b + c * c); }
static inline double rnorm3d(double a, double b, double c) { return 1.0 / norm3d(a, b, c); }
static inline double norm4d(double a, double b, double c, double d) { return std::sqrt(a * a + b * b + c * c + d * d); }
static inline double rnorm4d(double a, double b, double c, double d) { return 1.0 / norm4d(a, b, c, d); }
static inline float normf(int dim, const float* p) {
    double s = 0;
    for (int i = 0; i < dim; ++i) s += (double)p[i] * p[i];
    return (float)std::sqrt(s);
}
static inline float rnormf(int dim, const float* p) { return 1.0f / normf(dim, p); }
static inline double norm(int dim, const double* p) {
    double s = 0;
    for (int i = 0; i < dim; ++i) s += p[i] * p[i];
    return std::sqrt(s);
}
static inline double rnorm(int dim, const double* p) { return 1.0 / norm(dim, p); }

// Correctly rounded arithmetic with an explicit rounding mode (_rn is the default mode).
#define HARNESS_CPU_ROUNDED(SUF, MODE)                                                                              \
    static inline float __fadd_##SUF(float a, float b) { return harness_cpu::math::rounded<float>(MODE, [&] { volatile float x = a, y = b; return x + y; }); } \
    static inline float __fsub_##SUF(float a, float b) { return harness_cpu::math::rounded<float>(MODE, [&] { volatile float x = a, y = b; return x - y; }); } \
    static inline float __fmul_##SUF(float a, float b) { return harness_cpu::math::rounded<float>(MODE, [&] { volatile float x = a, y = b; return x * y; }); } \
    static inline float __fdiv_##SUF(float a, float b) { return harness_cpu::math::rounded<float>(MODE, [&] { volatile float x = a, y = b; return x / y; }); } \
    static inline float __fmaf_##SUF(float a, float b, float c) { return harness_cpu::math::rounded<float>(MODE, [&] { volatile float x = a, y = b, z = c; return fmaf(x, y, z); }); } \
    static inline float __frcp_##SUF(float a) { return harness_cpu::math::rounded<float>(MODE, [&] { volatile float x = a; return 1.0f / x; }); } \
    static inline float __fsqrt_##SUF(float a) { return harness_cpu::math::rounded<float>(MODE, [&] { volatile float x = a; return sqrtf(x); }); } \
    static inline double __dadd_##SUF(double a, double b) { return harness_cpu::math::rounded<double>(MODE, [&] { volatile double x = a, y = b; return x + y; }); } \
    static inline double __dsub_##SUF(double a, double b) { return harness_cpu::math::rounded<double>(MODE, [&] { volatile double x = a, y = b; return x - y; }); } \
    static inline double __dmul_##SUF(double a, double b) { return harness_cpu::math::rounded<double>(MODE, [&] { volatile double x = a, y = b; return x * y; }); } \
    static inline double __ddiv_##SUF(double a, double b) { return harness_cpu::math::rounded<double>(MODE, [&] { volatile double x = a, y = b; return x / y; }); } \
    static inline double __fma_##SUF(double a, double b, double c) { return harness_cpu::math::rounded<double>(MODE, [&] { volatile double x = a, y = b, z = c; return fma(x, y, z); }); } \
    static inline double __drcp_##SUF(double a) { return harness_cpu::math::rounded<double>(MODE, [&] { volatile double x = a; return 1.0 / x; }); } \
    static inline double __dsqrt_##SUF(double a) { return harness_cpu::math::rounded<double>(MODE, [&] { volatile double x = a; return sqrt(x); }); } \
    static inline float __double2float_##SUF(double a) { return harness_cpu::math::rounded<float>(MODE, [&] { volatile double x = a; return (float)x; }); } \
    static inline float __int2float_##SUF(int a) { return harness_cpu::math::rounded<float>(MODE, [&] { volatile int x = a; return (float)x; }); } \
    static inline float __uint2float_##SUF(unsigned int a) { return harness_cpu::math::rounded<float>(MODE, [&] { volatile unsigned x = a; return (float)x; }); } \
    static inline float __ll2float_##SUF(long long a) { return harness_cpu::math::rounded<float>(MODE, [&] { volatile long long x = a; return (float)x; }); } \
    static inline float __ull2float_##SUF(unsigned long long a) { return harness_cpu::math::rounded<float>(MODE, [&] { volatile unsigned long long x = a; return (float)x; }); } \
    static inline double __ll2double_##SUF(long long a) { return harness_cpu::math::rounded<double>(MODE, [&] { volatile long long x = a; return (double)x; }); } \
    static inline double __ull2double_##SUF(unsigned long long a) { return harness_cpu::math::rounded<double>(MODE, [&] { volatile unsigned long long x = a; return (double)x; }); } \
    static inline int __float2int_##SUF(float a) { return harness_cpu::math::to_int<int>(a, MODE); } \
    static inline unsigned int __float2uint_##SUF(float a) { return harness_cpu::math::to_int<unsigned int>(a, MODE); } \
    static inline long long __float2ll_##SUF(float a) { return harness_cpu::math::to_int<long long>(a, MODE); } \
    static inline unsigned long long __float2ull_##SUF(float a) { return harness_cpu::math::to_int<unsigned long long>(a, MODE); } \
    static inline int __double2int_##SUF(double a) { return harness_cpu::math::to_int<int>(a, MODE); } \
    static inline unsigned int __double2uint_##SUF(double a) { return harness_cpu::math::to_int<unsigned int>(a, MODE); } \
    static inline long long __double2ll_##SUF(double a) { return harness_cpu::math::to_int<long long>(a, MODE); } \
    static inline unsigned long long __double2ull_##SUF(double a) { return harness_cpu::math::to_int<unsigned long long>(a, MODE); }
HARNESS_CPU_ROUNDED(rn, FE_TONEAREST)
HARNESS_CPU_ROUNDED(rz, FE_TOWARDZERO)
HARNESS_CPU_ROUNDED(ru, FE_UPWARD)
HARNESS_CPU_ROUNDED(rd, FE_DOWNWARD)
#undef HARNESS_CPU_ROUNDED
static inline float __frsqrt_rn(float x) { return (float)(1.0 / std::sqrt((double)x)); }
static inline double __int2double_rn(int x) { return (double)x; }
static inline double __uint2double_rn(unsigned int x) { return (double)x; }
static inline int __float2int_rn_sat(float x) { return __float2int_rn(x); }

// Memory and timing helpers.
template <class T> static inline T __ldg(const T* p) { return *p; }
template <class T> static inline T __ldcg(const T* p) { return *p; }
template <class T> static inline T __ldca(const T* p) { return *p; }
template <class T> static inline T __ldcs(const T* p) { return *p; }
template <class T> static inline T __ldlu(const T* p) { return *p; }
template <class T> static inline T __ldcv(const T* p) { return *p; }
template <class T> static inline void __stwb(T* p, T v) { *p = v; }
template <class T> static inline void __stcg(T* p, T v) { *p = v; }
template <class T> static inline void __stcs(T* p, T v) { *p = v; }
template <class T> static inline void __stwt(T* p, T v) { *p = v; }
HARNESS_CPU_RT static inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
HARNESS_CPU_RT static inline void __threadfence_block() { __atomic_signal_fence(__ATOMIC_SEQ_CST); }
HARNESS_CPU_RT static inline void __threadfence_system() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
static inline long long clock64() {
#if defined(__x86_64__)
    return (long long)__builtin_ia32_rdtsc();
#else
    return 0;
#endif
}
static inline void __nanosleep(unsigned int) {}
[[noreturn]] static inline void __trap() { harness_cpu::detail::fail(harness_cpu::kKernelFault, "the kernel executed __trap()"); }
[[noreturn]] static inline void __brkpt() { harness_cpu::detail::fail(harness_cpu::kKernelFault, "the kernel executed __brkpt()"); }

// Block barriers.
static inline void __syncthreads() {
    unsigned n;
    harness_cpu::detail::block_barrier(0, &n);
}
static inline int __syncthreads_count(int pred) {
    unsigned n;
    return (int)harness_cpu::detail::block_barrier(pred, &n);
}
static inline int __syncthreads_and(int pred) {
    unsigned n;
    const unsigned c = harness_cpu::detail::block_barrier(pred, &n);
    return c == n;
}
static inline int __syncthreads_or(int pred) {
    unsigned n;
    return harness_cpu::detail::block_barrier(pred, &n) != 0;
}

// ---------------------------------------------------------------------------------------------
// 5. __half and __nv_bfloat16
// ---------------------------------------------------------------------------------------------
namespace harness_cpu __attribute__((visibility("hidden"))) {
namespace fp {
// What float->half and float->bf16 (and double->) produce for any NaN input: sm_90's
// cvt.rn.f16.f32 / cvt.rn.bf16.f32 give 0x7FFF. One constant per type, so a GPU fidelity check
// that disagrees changes one line.
constexpr unsigned short kHalfCanonicalNaN = 0x7FFF;
constexpr unsigned short kBf16CanonicalNaN = 0x7FFF;
// What half->float produces for any half NaN.
constexpr unsigned kHalfWidenedNaN = 0x7FFFFFFFu;

enum Mode { kRN, kRZ, kRD, kRU };

// Rounds (-1)^neg * mag * 2^e (mag != 0) to a binary format with P significand bits (the hidden
// one included), normal exponents EMIN..EMAX, and returns its bits with the sign at bit SIGN.
template <int P, int EMIN, int EMAX, int SIGN>
static inline unsigned short round_pack(bool neg, unsigned long long mag, int e, Mode mode) {
    const unsigned sign = neg ? (1u << SIGN) : 0u;
    const unsigned inf_bits = (unsigned)(EMAX - EMIN + 2) << (P - 1);
    const int lz = __builtin_clzll(mag);
    mag <<= lz;
    e -= lz;                // value = mag * 2^e, bit 63 of mag set
    const int E = e + 63;   // exponent of the leading bit
    bool overflow = E > EMAX;
    unsigned bits = 0;
    if (!overflow) {
        const int ulp = (E >= EMIN ? E : EMIN) - (P - 1);
        const int s = ulp - e;  // >= 64 - P >= 1
        unsigned long long q;
        bool half, sticky;
        if (s >= 65) {
            q = 0; half = false; sticky = true;
        } else if (s == 64) {
            q = 0; half = true; sticky = (mag << 1) != 0;
        } else {
            q = mag >> s;
            half = (mag >> (s - 1)) & 1u;
            sticky = (mag & ((1ull << (s - 1)) - 1u)) != 0;
        }
        bool up = false;
        switch (mode) {
            case kRN: up = half && (sticky || (q & 1u)); break;
            case kRZ: up = false; break;
            case kRU: up = (half || sticky) && !neg; break;
            case kRD: up = (half || sticky) && neg; break;
        }
        q += up;
        if (E >= EMIN)
            bits = ((unsigned)(E - EMIN + 1) << (P - 1)) + (unsigned)(q - (1ull << (P - 1)));
        else
            bits = (unsigned)q;  // subnormal; q == 2^(P-1) is the smallest normal, encoded the same
        overflow = bits >= inf_bits;
    }
    if (overflow) {
        const bool to_inf = mode == kRN || (mode == kRU && !neg) || (mode == kRD && neg);
        bits = to_inf ? inf_bits : inf_bits - 1u;
    }
    return (unsigned short)(sign | bits);
}

template <int P, int EMIN, int EMAX>
static inline unsigned short from_float(float x, Mode mode, unsigned short nan_bits) {
    const unsigned f = __builtin_bit_cast(unsigned, x);
    const bool neg = f >> 31;
    const unsigned a = f & 0x7fffffffu;
    const unsigned inf_bits = (unsigned)(EMAX - EMIN + 2) << (P - 1);
    if (a > 0x7f800000u) return nan_bits;
    if (a == 0x7f800000u) return (unsigned short)((neg ? 0x8000u : 0u) | inf_bits);
    if (a == 0) return neg ? 0x8000 : 0;
    const unsigned ex = a >> 23, m = a & 0x7fffffu;
    return round_pack<P, EMIN, EMAX, 15>(neg, ex ? (m | 0x800000u) : m, ex ? (int)ex - 150 : -149, mode);
}

template <int P, int EMIN, int EMAX>
static inline unsigned short from_double(double x, Mode mode, unsigned short nan_bits) {
    const unsigned long long f = __builtin_bit_cast(unsigned long long, x);
    const bool neg = f >> 63;
    const unsigned long long a = f & 0x7fffffffffffffffull;
    const unsigned inf_bits = (unsigned)(EMAX - EMIN + 2) << (P - 1);
    if (a > 0x7ff0000000000000ull) return nan_bits;
    if (a == 0x7ff0000000000000ull) return (unsigned short)((neg ? 0x8000u : 0u) | inf_bits);
    if (a == 0) return neg ? 0x8000 : 0;
    const unsigned long long ex = a >> 52, m = a & 0xfffffffffffffull;
    return round_pack<P, EMIN, EMAX, 15>(neg, ex ? (m | (1ull << 52)) : m, ex ? (int)ex - 1075 : -1074, mode);
}

template <int P, int EMIN, int EMAX>
static inline unsigned short from_int(bool neg, unsigned long long mag, Mode mode) {
    if (mag == 0) return 0;
    return round_pack<P, EMIN, EMAX, 15>(neg, mag, 0, mode);
}

static inline float half_to_float(unsigned short h) {
    const unsigned sign = (unsigned)(h & 0x8000u) << 16;
    const unsigned ex = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    unsigned f;
    if (ex == 0x1f) {
        // inf keeps its sign; every NaN becomes 0x7FFFFFFF, as sm_90's cvt.f32.f16 gives (seen on the
        // H200 by tests/test_fidelity_gpu.py). bfloat16 widens by a shift on the GPU: payload kept.
        f = m ? kHalfWidenedNaN : (sign | 0x7f800000u);
    } else if (ex == 0) {
        if (m == 0) {
            f = sign;
        } else {
            const int sh = __builtin_clz(m) - 21;  // brings the leading bit of m to bit 10
            f = sign | ((unsigned)(113 - sh) << 23) | (((m << sh) & 0x3ffu) << 13);
        }
    } else {
        f = sign | ((ex + 112u) << 23) | (m << 13);
    }
    return __builtin_bit_cast(float, f);
}
static inline float bf16_to_float(unsigned short b) { return __builtin_bit_cast(float, (unsigned)b << 16); }

static inline unsigned short float_to_half(float x, Mode m = kRN) { return from_float<11, -14, 15>(x, m, kHalfCanonicalNaN); }
static inline unsigned short double_to_half(double x, Mode m = kRN) { return from_double<11, -14, 15>(x, m, kHalfCanonicalNaN); }
static inline unsigned short float_to_bf16(float x, Mode m = kRN) { return from_float<8, -126, 127>(x, m, kBf16CanonicalNaN); }
static inline unsigned short double_to_bf16(double x, Mode m = kRN) { return from_double<8, -126, 127>(x, m, kBf16CanonicalNaN); }
template <class I> static inline unsigned short int_to_half(I v, Mode m) {
    const bool neg = v < 0;
    return from_int<11, -14, 15>(neg, neg ? 0ull - (unsigned long long)v : (unsigned long long)v, m);
}
template <class I> static inline unsigned short int_to_bf16(I v, Mode m) {
    const bool neg = v < 0;
    return from_int<8, -126, 127>(neg, neg ? 0ull - (unsigned long long)v : (unsigned long long)v, m);
}
// a*b+c for operands of at most 24 significant bits (a*b is exact in double), rounded to odd in
// double: a later rounding to 8 or 11 bits then equals one rounding of the exact value.
static inline double fma_odd(double a, double b, double c) {
    const double p = a * b;
    const double s = p + c;
    const double bb = s - p;
    const double err = (p - (s - bb)) + (c - bb);  // exact p + c - s (TwoSum)
    if (err != 0.0 && std::isfinite(s) && !(__builtin_bit_cast(unsigned long long, s) & 1u))
        return std::nextafter(s, err > 0.0 ? __builtin_inf() : -__builtin_inf());
    return s;
}
static inline int fe_mode(Mode m) {
    return m == kRZ ? FE_TOWARDZERO : m == kRD ? FE_DOWNWARD : m == kRU ? FE_UPWARD : FE_TONEAREST;
}
}  // namespace fp
}  // namespace harness_cpu

struct __half_raw { unsigned short x; };
struct __nv_bfloat16_raw { unsigned short x; };

// Both types: 2 bytes, trivially copyable, implicit conversion from float/double/integers and to
// float (and the integer types, truncating), like CUDA's with __CUDACC__.
#define HARNESS_CPU_H16_CLASS(T, RAW, FROMF, FROMD, FROMI, TOF)                                             \
    struct __attribute__((aligned(2))) T {                                                                  \
        unsigned short __x;                                                                                 \
        T() = default;                                                                                      \
        constexpr T(const RAW& r) : __x(r.x) {}                                                             \
        T(float f) : __x(FROMF(f, harness_cpu::fp::kRN)) {}                                                 \
        T(double d) : __x(FROMD(d, harness_cpu::fp::kRN)) {}                                                \
        T(short v) : __x(FROMI(v, harness_cpu::fp::kRN)) {}                                                 \
        T(unsigned short v) : __x(FROMI(v, harness_cpu::fp::kRN)) {}                                        \
        T(int v) : __x(FROMI(v, harness_cpu::fp::kRN)) {}                                                   \
        T(unsigned int v) : __x(FROMI(v, harness_cpu::fp::kRN)) {}                                          \
        T(long v) : __x(FROMI(v, harness_cpu::fp::kRN)) {}                                                  \
        T(unsigned long v) : __x(FROMI(v, harness_cpu::fp::kRN)) {}                                         \
        T(long long v) : __x(FROMI(v, harness_cpu::fp::kRN)) {}                                             \
        T(unsigned long long v) : __x(FROMI(v, harness_cpu::fp::kRN)) {}                                    \
        constexpr operator RAW() const { return RAW{__x}; }                                                 \
        operator float() const { return TOF(__x); }                                                         \
        operator signed char() const { return harness_cpu::math::to_int<signed char>(TOF(__x), FE_TOWARDZERO); } \
        operator unsigned char() const { return harness_cpu::math::to_int<unsigned char>(TOF(__x), FE_TOWARDZERO); } \
        operator char() const { return (char)harness_cpu::math::to_int<signed char>(TOF(__x), FE_TOWARDZERO); } \
        operator short() const { return harness_cpu::math::to_int<short>(TOF(__x), FE_TOWARDZERO); }       \
        operator unsigned short() const { return harness_cpu::math::to_int<unsigned short>(TOF(__x), FE_TOWARDZERO); } \
        operator int() const { return harness_cpu::math::to_int<int>(TOF(__x), FE_TOWARDZERO); }           \
        operator unsigned int() const { return harness_cpu::math::to_int<unsigned int>(TOF(__x), FE_TOWARDZERO); } \
        operator long() const { return harness_cpu::math::to_int<long>(TOF(__x), FE_TOWARDZERO); }         \
        operator unsigned long() const { return harness_cpu::math::to_int<unsigned long>(TOF(__x), FE_TOWARDZERO); } \
        operator long long() const { return harness_cpu::math::to_int<long long>(TOF(__x), FE_TOWARDZERO); } \
        operator unsigned long long() const { return harness_cpu::math::to_int<unsigned long long>(TOF(__x), FE_TOWARDZERO); } \
        operator bool() const { return (__x & 0x7fffu) != 0; }                                              \
    };

HARNESS_CPU_H16_CLASS(__half, __half_raw, harness_cpu::fp::float_to_half, harness_cpu::fp::double_to_half,
                      harness_cpu::fp::int_to_half, harness_cpu::fp::half_to_float)
HARNESS_CPU_H16_CLASS(__nv_bfloat16, __nv_bfloat16_raw, harness_cpu::fp::float_to_bf16,
                      harness_cpu::fp::double_to_bf16, harness_cpu::fp::int_to_bf16, harness_cpu::fp::bf16_to_float)
#undef HARNESS_CPU_H16_CLASS

struct __attribute__((aligned(4))) __half2 {
    __half x, y;
    __half2() = default;
    constexpr __half2(const __half& a, const __half& b) : x(a), y(b) {}
};
struct __attribute__((aligned(4))) __nv_bfloat162 {
    __nv_bfloat16 x, y;
    __nv_bfloat162() = default;
    constexpr __nv_bfloat162(const __nv_bfloat16& a, const __nv_bfloat16& b) : x(a), y(b) {}
};
struct __half2_raw { unsigned short x, y; };
struct __nv_bfloat162_raw { unsigned short x, y; };
typedef __half half;
typedef __half2 half2;
typedef __nv_bfloat16 nv_bfloat16;
typedef __nv_bfloat162 nv_bfloat162;

static_assert(sizeof(__half) == 2 && alignof(__half) == 2 && std::is_trivially_copyable<__half>::value, "__half");
static_assert(sizeof(__nv_bfloat16) == 2 && alignof(__nv_bfloat16) == 2 &&
                  std::is_trivially_copyable<__nv_bfloat16>::value, "__nv_bfloat16");
static_assert(sizeof(__half2) == 4 && sizeof(__nv_bfloat162) == 4, "pairs");
static_assert(std::is_trivially_default_constructible<__half>::value, "__shared__ __half arrays need no constructor");

// Bits in and out.
static inline unsigned short __half_as_ushort(__half h) { return h.__x; }
static inline short __half_as_short(__half h) { return (short)h.__x; }
static inline __half __ushort_as_half(unsigned short u) { return __half_raw{u}; }
static inline __half __short_as_half(short s) { return __half_raw{(unsigned short)s}; }
static inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 h) { return h.__x; }
static inline short __bfloat16_as_short(__nv_bfloat16 h) { return (short)h.__x; }
static inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short u) { return __nv_bfloat16_raw{u}; }
static inline __nv_bfloat16 __short_as_bfloat16(short s) { return __nv_bfloat16_raw{(unsigned short)s}; }

// Conversions from float / double with each rounding mode, and to float.
#define HARNESS_CPU_H16_CONV(T, NAME, FROMF, FROMD, TOF, RAW)                                                   \
    static inline T __float2##NAME(float f) { return RAW{FROMF(f, harness_cpu::fp::kRN)}; }                   \
    static inline T __float2##NAME##_rn(float f) { return RAW{FROMF(f, harness_cpu::fp::kRN)}; }              \
    static inline T __float2##NAME##_rz(float f) { return RAW{FROMF(f, harness_cpu::fp::kRZ)}; }              \
    static inline T __float2##NAME##_rd(float f) { return RAW{FROMF(f, harness_cpu::fp::kRD)}; }              \
    static inline T __float2##NAME##_ru(float f) { return RAW{FROMF(f, harness_cpu::fp::kRU)}; }              \
    static inline T __double2##NAME(double f) { return RAW{FROMD(f, harness_cpu::fp::kRN)}; }                 \
    static inline float __##NAME##2float(T h) { return TOF(h.__x); }
HARNESS_CPU_H16_CONV(__half, half, harness_cpu::fp::float_to_half, harness_cpu::fp::double_to_half,
                     harness_cpu::fp::half_to_float, __half_raw)
HARNESS_CPU_H16_CONV(__nv_bfloat16, bfloat16, harness_cpu::fp::float_to_bf16, harness_cpu::fp::double_to_bf16,
                     harness_cpu::fp::bf16_to_float, __nv_bfloat16_raw)
#undef HARNESS_CPU_H16_CONV
static inline double __half2double(__half h) { return (double)__half2float(h); }
static inline double __bfloat162double(__nv_bfloat16 h) { return (double)__bfloat162float(h); }

// Integer conversions: to integers saturate (NaN -> 0), from integers round once.
#define HARNESS_CPU_H16_INT(T, NAME, TOF, FROMI, RAW, SUF, MODE)                                                      \
    static inline int __##NAME##2int_##SUF(T h) { return harness_cpu::math::to_int<int>(TOF(h.__x), harness_cpu::fp::fe_mode(MODE)); } \
    static inline unsigned int __##NAME##2uint_##SUF(T h) { return harness_cpu::math::to_int<unsigned int>(TOF(h.__x), harness_cpu::fp::fe_mode(MODE)); } \
    static inline short __##NAME##2short_##SUF(T h) { return harness_cpu::math::to_int<short>(TOF(h.__x), harness_cpu::fp::fe_mode(MODE)); } \
    static inline unsigned short __##NAME##2ushort_##SUF(T h) { return harness_cpu::math::to_int<unsigned short>(TOF(h.__x), harness_cpu::fp::fe_mode(MODE)); } \
    static inline long long __##NAME##2ll_##SUF(T h) { return harness_cpu::math::to_int<long long>(TOF(h.__x), harness_cpu::fp::fe_mode(MODE)); } \
    static inline unsigned long long __##NAME##2ull_##SUF(T h) { return harness_cpu::math::to_int<unsigned long long>(TOF(h.__x), harness_cpu::fp::fe_mode(MODE)); } \
    static inline T __int2##NAME##_##SUF(int v) { return RAW{FROMI(v, MODE)}; }                                        \
    static inline T __uint2##NAME##_##SUF(unsigned int v) { return RAW{FROMI(v, MODE)}; }                              \
    static inline T __short2##NAME##_##SUF(short v) { return RAW{FROMI(v, MODE)}; }                                    \
    static inline T __ushort2##NAME##_##SUF(unsigned short v) { return RAW{FROMI(v, MODE)}; }                          \
    static inline T __ll2##NAME##_##SUF(long long v) { return RAW{FROMI(v, MODE)}; }                                   \
    static inline T __ull2##NAME##_##SUF(unsigned long long v) { return RAW{FROMI(v, MODE)}; }
#define HARNESS_CPU_H16_INTS(T, NAME, TOF, FROMI, RAW)                                 \
    HARNESS_CPU_H16_INT(T, NAME, TOF, FROMI, RAW, rn, harness_cpu::fp::kRN)            \
    HARNESS_CPU_H16_INT(T, NAME, TOF, FROMI, RAW, rz, harness_cpu::fp::kRZ)            \
    HARNESS_CPU_H16_INT(T, NAME, TOF, FROMI, RAW, rd, harness_cpu::fp::kRD)            \
    HARNESS_CPU_H16_INT(T, NAME, TOF, FROMI, RAW, ru, harness_cpu::fp::kRU)
HARNESS_CPU_H16_INTS(__half, half, harness_cpu::fp::half_to_float, harness_cpu::fp::int_to_half, __half_raw)
HARNESS_CPU_H16_INTS(__nv_bfloat16, bfloat16, harness_cpu::fp::bf16_to_float, harness_cpu::fp::int_to_bf16,
                     __nv_bfloat16_raw)
#undef HARNESS_CPU_H16_INTS
#undef HARNESS_CPU_H16_INT

// Arithmetic, comparisons and math: computed in double from the exact inputs, then rounded once
// to the type. Double's 53 bits (>= 2p+2) and exponent range (no underflow) make + - * / the
// correctly rounded 16-bit result; fma is rounded to odd in double first, so it rounds once too.
// (float would not do for bf16: a product can land in float's subnormal range and round twice.)
#define HARNESS_CPU_H16_OPS(T, T2, F2T, T2F)                                                                  \
    static inline T __hadd(T a, T b) { return F2T((double)T2F(a) + T2F(b)); }                                        \
    static inline T __hsub(T a, T b) { return F2T((double)T2F(a) - T2F(b)); }                                        \
    static inline T __hmul(T a, T b) { return F2T((double)T2F(a) * T2F(b)); }                                        \
    static inline T __hdiv(T a, T b) { return F2T((double)T2F(a) / T2F(b)); }                                        \
    static inline T __hadd_rn(T a, T b) { return __hadd(a, b); }                                             \
    static inline T __hsub_rn(T a, T b) { return __hsub(a, b); }                                             \
    static inline T __hmul_rn(T a, T b) { return __hmul(a, b); }                                             \
    static inline T __hadd_sat(T a, T b) { return F2T(__saturatef(T2F(__hadd(a, b)))); }                     \
    static inline T __hsub_sat(T a, T b) { return F2T(__saturatef(T2F(__hsub(a, b)))); }                     \
    static inline T __hmul_sat(T a, T b) { return F2T(__saturatef(T2F(__hmul(a, b)))); }                     \
    static inline T __hfma(T a, T b, T c) { return F2T(harness_cpu::fp::fma_odd(T2F(a), T2F(b), T2F(c))); }  \
    static inline T __hfma_sat(T a, T b, T c) { return F2T(__saturatef(T2F(__hfma(a, b, c)))); }             \
    static inline T __hneg(T a) { T r = a; r.__x ^= 0x8000u; return r; }                                     \
    static inline T __habs(T a) { T r = a; r.__x &= 0x7fffu; return r; }                                     \
    static inline bool __hisnan(T a) { float f = T2F(a); return f != f; }                                   \
    static inline int __hisinf(T a) { float f = T2F(a); return f == __builtin_inff() ? 1 : (f == -__builtin_inff() ? -1 : 0); } \
    static inline bool __heq(T a, T b) { return T2F(a) == T2F(b); }                                          \
    static inline bool __hne(T a, T b) { float x = T2F(a), y = T2F(b); return x < y || x > y; }              \
    static inline bool __hlt(T a, T b) { return T2F(a) < T2F(b); }                                           \
    static inline bool __hle(T a, T b) { return T2F(a) <= T2F(b); }                                          \
    static inline bool __hgt(T a, T b) { return T2F(a) > T2F(b); }                                           \
    static inline bool __hge(T a, T b) { return T2F(a) >= T2F(b); }                                          \
    static inline bool __hequ(T a, T b) { return !(T2F(a) < T2F(b) || T2F(a) > T2F(b)); }                    \
    static inline bool __hneu(T a, T b) { return !(T2F(a) == T2F(b)); }                                      \
    static inline bool __hltu(T a, T b) { return !(T2F(a) >= T2F(b)); }                                      \
    static inline bool __hleu(T a, T b) { return !(T2F(a) > T2F(b)); }                                       \
    static inline bool __hgtu(T a, T b) { return !(T2F(a) <= T2F(b)); }                                      \
    static inline bool __hgeu(T a, T b) { return !(T2F(a) < T2F(b)); }                                       \
    /* max/min: a NaN input gives the other one, two NaNs the canonical NaN, +0 > -0 */                      \
    static inline T __hmax(T a, T b) {                                                                       \
        const bool na = __hisnan(a), nb = __hisnan(b);                                                       \
        if (na && nb) return F2T(__builtin_nanf(""));                                                        \
        if (na) return b;                                                                                    \
        if (nb) return a;                                                                                    \
        const float x = T2F(a), y = T2F(b);                                                                  \
        if (x == y) return (a.__x & 0x8000u) ? b : a;                                                        \
        return x > y ? a : b;                                                                                \
    }                                                                                                        \
    static inline T __hmin(T a, T b) {                                                                       \
        const bool na = __hisnan(a), nb = __hisnan(b);                                                       \
        if (na && nb) return F2T(__builtin_nanf(""));                                                        \
        if (na) return b;                                                                                    \
        if (nb) return a;                                                                                    \
        const float x = T2F(a), y = T2F(b);                                                                  \
        if (x == y) return (a.__x & 0x8000u) ? a : b;                                                        \
        return x < y ? a : b;                                                                                \
    }                                                                                                        \
    static inline T __hmax_nan(T a, T b) { return (__hisnan(a) || __hisnan(b)) ? F2T(__builtin_nanf("")) : __hmax(a, b); } \
    static inline T __hmin_nan(T a, T b) { return (__hisnan(a) || __hisnan(b)) ? F2T(__builtin_nanf("")) : __hmin(a, b); } \
    static inline T operator+(const T& a, const T& b) { return __hadd(a, b); }                               \
    static inline T operator-(const T& a, const T& b) { return __hsub(a, b); }                               \
    static inline T operator*(const T& a, const T& b) { return __hmul(a, b); }                               \
    static inline T operator/(const T& a, const T& b) { return __hdiv(a, b); }                               \
    static inline T& operator+=(T& a, const T& b) { a = __hadd(a, b); return a; }                            \
    static inline T& operator-=(T& a, const T& b) { a = __hsub(a, b); return a; }                            \
    static inline T& operator*=(T& a, const T& b) { a = __hmul(a, b); return a; }                            \
    static inline T& operator/=(T& a, const T& b) { a = __hdiv(a, b); return a; }                            \
    static inline T operator+(const T& a) { return a; }                                                      \
    static inline T operator-(const T& a) { return __hneg(a); }                                              \
    static inline T& operator++(T& a) { a = __hadd(a, T(1.0f)); return a; }                                 \
    static inline T& operator--(T& a) { a = __hsub(a, T(1.0f)); return a; }                                  \
    static inline T operator++(T& a, int) { T old = a; a = __hadd(a, T(1.0f)); return old; }                 \
    static inline T operator--(T& a, int) { T old = a; a = __hsub(a, T(1.0f)); return old; }                 \
    static inline bool operator==(const T& a, const T& b) { return __heq(a, b); }                            \
    static inline bool operator!=(const T& a, const T& b) { return __hneu(a, b); }                           \
    static inline bool operator<(const T& a, const T& b) { return __hlt(a, b); }                             \
    static inline bool operator<=(const T& a, const T& b) { return __hle(a, b); }                            \
    static inline bool operator>(const T& a, const T& b) { return __hgt(a, b); }                             \
    static inline bool operator>=(const T& a, const T& b) { return __hge(a, b); }                            \
    /* pairs */                                                                                              \
    static inline T2 __hadd2(T2 a, T2 b) { return T2(__hadd(a.x, b.x), __hadd(a.y, b.y)); }                  \
    static inline T2 __hsub2(T2 a, T2 b) { return T2(__hsub(a.x, b.x), __hsub(a.y, b.y)); }                  \
    static inline T2 __hmul2(T2 a, T2 b) { return T2(__hmul(a.x, b.x), __hmul(a.y, b.y)); }                  \
    static inline T2 __h2div(T2 a, T2 b) { return T2(__hdiv(a.x, b.x), __hdiv(a.y, b.y)); }                  \
    static inline T2 __hfma2(T2 a, T2 b, T2 c) { return T2(__hfma(a.x, b.x, c.x), __hfma(a.y, b.y, c.y)); }   \
    static inline T2 __hneg2(T2 a) { return T2(__hneg(a.x), __hneg(a.y)); }                                  \
    static inline T2 __habs2(T2 a) { return T2(__habs(a.x), __habs(a.y)); }                                  \
    static inline T2 __hmax2(T2 a, T2 b) { return T2(__hmax(a.x, b.x), __hmax(a.y, b.y)); }                  \
    static inline T2 __hmin2(T2 a, T2 b) { return T2(__hmin(a.x, b.x), __hmin(a.y, b.y)); }                  \
    static inline bool __hbeq2(T2 a, T2 b) { return __heq(a.x, b.x) && __heq(a.y, b.y); }                    \
    static inline bool __hbne2(T2 a, T2 b) { return __hne(a.x, b.x) && __hne(a.y, b.y); }                    \
    static inline bool __hblt2(T2 a, T2 b) { return __hlt(a.x, b.x) && __hlt(a.y, b.y); }                    \
    static inline bool __hble2(T2 a, T2 b) { return __hle(a.x, b.x) && __hle(a.y, b.y); }                    \
    static inline bool __hbgt2(T2 a, T2 b) { return __hgt(a.x, b.x) && __hgt(a.y, b.y); }                    \
    static inline bool __hbge2(T2 a, T2 b) { return __hge(a.x, b.x) && __hge(a.y, b.y); }                    \
    static inline T2 operator+(const T2& a, const T2& b) { return __hadd2(a, b); }                           \
    static inline T2 operator-(const T2& a, const T2& b) { return __hsub2(a, b); }                           \
    static inline T2 operator*(const T2& a, const T2& b) { return __hmul2(a, b); }                           \
    static inline T2 operator/(const T2& a, const T2& b) { return __h2div(a, b); }                           \
    static inline T2& operator+=(T2& a, const T2& b) { a = __hadd2(a, b); return a; }                        \
    static inline T2& operator-=(T2& a, const T2& b) { a = __hsub2(a, b); return a; }                        \
    static inline T2& operator*=(T2& a, const T2& b) { a = __hmul2(a, b); return a; }                        \
    static inline T2& operator/=(T2& a, const T2& b) { a = __h2div(a, b); return a; }                        \
    static inline T2 operator+(const T2& a) { return a; }                                                    \
    static inline T2 operator-(const T2& a) { return __hneg2(a); }                                           \
    static inline bool operator==(const T2& a, const T2& b) { return __hbeq2(a, b); }                        \
    static inline bool operator!=(const T2& a, const T2& b) { return __hneu(a.x, b.x) && __hneu(a.y, b.y); } \
    static inline float __low2float(T2 a) { return T2F(a.x); }                                               \
    static inline float __high2float(T2 a) { return T2F(a.y); }                                              \
    static inline T2 __lowhigh2highlow(T2 a) { return T2(a.y, a.x); }

#define HARNESS_CPU_H16_MATH(T, PFX, F2T, T2F)                               \
    static inline T PFX##sqrt(T a) { return F2T(sqrtf(T2F(a))); }           \
    static inline T PFX##rsqrt(T a) { return F2T(rsqrtf(T2F(a))); }         \
    static inline T PFX##rcp(T a) { return F2T(1.0f / T2F(a)); }            \
    static inline T PFX##exp(T a) { return F2T(expf(T2F(a))); }             \
    static inline T PFX##exp2(T a) { return F2T(exp2f(T2F(a))); }           \
    static inline T PFX##exp10(T a) { return F2T(exp10f(T2F(a))); }         \
    static inline T PFX##log(T a) { return F2T(logf(T2F(a))); }             \
    static inline T PFX##log2(T a) { return F2T(log2f(T2F(a))); }           \
    static inline T PFX##log10(T a) { return F2T(log10f(T2F(a))); }         \
    static inline T PFX##sin(T a) { return F2T(sinf(T2F(a))); }             \
    static inline T PFX##cos(T a) { return F2T(cosf(T2F(a))); }             \
    static inline T PFX##tanh(T a) { return F2T(tanhf(T2F(a))); }           \
    static inline T PFX##trunc(T a) { return F2T(truncf(T2F(a))); }         \
    static inline T PFX##ceil(T a) { return F2T(ceilf(T2F(a))); }           \
    static inline T PFX##floor(T a) { return F2T(floorf(T2F(a))); }         \
    static inline T PFX##rint(T a) { return F2T(rintf(T2F(a))); }

static inline __half harness_cpu_f2h(double f) { return __double2half(f); }
static inline __nv_bfloat16 harness_cpu_f2b(double f) { return __double2bfloat16(f); }
HARNESS_CPU_H16_OPS(__half, __half2, harness_cpu_f2h, __half2float)
HARNESS_CPU_H16_OPS(__nv_bfloat16, __nv_bfloat162, harness_cpu_f2b, __bfloat162float)
HARNESS_CPU_H16_MATH(__half, h, harness_cpu_f2h, __half2float)
HARNESS_CPU_H16_MATH(__nv_bfloat16, h, harness_cpu_f2b, __bfloat162float)
#undef HARNESS_CPU_H16_OPS
#undef HARNESS_CPU_H16_MATH

// Pair construction and access.
static inline __half2 make_half2(__half x, __half y) { return __half2(x, y); }
static inline __half2 __halves2half2(__half lo, __half hi) { return __half2(lo, hi); }
static inline __half2 __half2half2(__half a) { return __half2(a, a); }
static inline __half __low2half(__half2 a) { return a.x; }
static inline __half __high2half(__half2 a) { return a.y; }
static inline __half2 __low2half2(__half2 a) { return __half2(a.x, a.x); }
static inline __half2 __high2half2(__half2 a) { return __half2(a.y, a.y); }
static inline __half2 __lows2half2(__half2 a, __half2 b) { return __half2(a.x, b.x); }
static inline __half2 __highs2half2(__half2 a, __half2 b) { return __half2(a.y, b.y); }
static inline __half2 __float2half2_rn(float f) { __half h = __float2half_rn(f); return __half2(h, h); }
static inline __half2 __floats2half2_rn(float a, float b) { return __half2(__float2half_rn(a), __float2half_rn(b)); }
static inline __half2 __float22half2_rn(float2 f) { return __floats2half2_rn(f.x, f.y); }
static inline float2 __half22float2(__half2 a) { return make_float2(__half2float(a.x), __half2float(a.y)); }
static inline __nv_bfloat162 make_bfloat162(__nv_bfloat16 x, __nv_bfloat16 y) { return __nv_bfloat162(x, y); }
static inline __nv_bfloat162 __halves2bfloat162(__nv_bfloat16 lo, __nv_bfloat16 hi) { return __nv_bfloat162(lo, hi); }
static inline __nv_bfloat162 __bfloat162bfloat162(__nv_bfloat16 a) { return __nv_bfloat162(a, a); }
static inline __nv_bfloat16 __low2bfloat16(__nv_bfloat162 a) { return a.x; }
static inline __nv_bfloat16 __high2bfloat16(__nv_bfloat162 a) { return a.y; }
static inline __nv_bfloat162 __low2bfloat162(__nv_bfloat162 a) { return __nv_bfloat162(a.x, a.x); }
static inline __nv_bfloat162 __high2bfloat162(__nv_bfloat162 a) { return __nv_bfloat162(a.y, a.y); }
static inline __nv_bfloat162 __lows2bfloat162(__nv_bfloat162 a, __nv_bfloat162 b) { return __nv_bfloat162(a.x, b.x); }
static inline __nv_bfloat162 __highs2bfloat162(__nv_bfloat162 a, __nv_bfloat162 b) { return __nv_bfloat162(a.y, b.y); }
static inline __nv_bfloat162 __float2bfloat162_rn(float f) { __nv_bfloat16 h = __float2bfloat16_rn(f); return __nv_bfloat162(h, h); }
static inline __nv_bfloat162 __floats2bfloat162_rn(float a, float b) {
    return __nv_bfloat162(__float2bfloat16_rn(a), __float2bfloat16_rn(b));
}
static inline __nv_bfloat162 __float22bfloat162_rn(float2 f) { return __floats2bfloat162_rn(f.x, f.y); }
static inline float2 __bfloat1622float2(__nv_bfloat162 a) { return make_float2(__bfloat162float(a.x), __bfloat162float(a.y)); }

// ---------------------------------------------------------------------------------------------
// 6. Warp intrinsics (need HARNESS_CPU_FIBERS=1 unless the block is a single thread)
// ---------------------------------------------------------------------------------------------
namespace harness_cpu __attribute__((visibility("hidden"))) {
namespace detail {

enum ShflMode { kIdx, kUp, kDown, kXor };

// The current fiber's warp, after checking the mask: every live lane of the warp must be in it.
HARNESS_CPU_RT static inline Warp* warp_check(unsigned mask, const char* op, Fiber** fout) {
    Sched* s = t_sched;
    if (!s) {
        if ((unsigned long long)blockDim.x * blockDim.y * blockDim.z != 1)
            fail(kKernelFault, "%s in a launch without fibers (HARNESS_CPU_FIBERS=0) and a block of more than "
                               "one thread", op);
        if (!(mask & 1u))
            fail(kKernelFault, "%s: mask 0x%08x leaves out the calling lane", op, mask);
        return nullptr;
    }
    Fiber* f = &s->fibers[s->cur];
    Warp* w = &s->warps[f->warp];
    if ((mask & w->live_mask) != w->live_mask)
        fail(kKernelFault,
             "%s: mask 0x%08x leaves out live lanes of warp %u (live 0x%08x); the CPU shim runs warp "
             "operations only for the whole warp (0xffffffff)",
             op, mask, f->warp, w->live_mask);
    *fout = f;
    return w;
}

// Warp barrier among the warp's live lanes.
HARNESS_CPU_RT static inline void warp_barrier(Warp* w, Fiber* f) {
    HARNESS_CPU_COMPILER_FENCE();
    Sched* s = t_sched;
    if (++w->arrived == w->live) {
        release_warp(s, f->warp);
    } else {
        w->waiting |= 1u << f->lane;
        f->state = kWaitWarp;
        switch_away(s);
    }
    HARNESS_CPU_COMPILER_FENCE();
}

// Every participating lane publishes `bits`; returns the slot row and the participation mask.
HARNESS_CPU_RT static inline const unsigned long long* warp_exchange(Warp* w, Fiber* f, unsigned long long bits, unsigned* part) {
    const unsigned g = w->gen & 1u;
    w->slot[g][f->lane] = bits;
    warp_barrier(w, f);
    *part = w->part[g];
    return w->slot[g];
}

template <class T>
HARNESS_CPU_RT static inline unsigned long long to_bits(T v) {
    static_assert(sizeof(T) <= 8 && std::is_trivially_copyable<T>::value, "warp exchange of a type over 8 bytes");
    unsigned long long b = 0;
    std::memcpy(&b, &v, sizeof(T));
    return b;
}
template <class T>
HARNESS_CPU_RT static inline T from_bits(unsigned long long b) {
    T v;
    std::memcpy(&v, &b, sizeof(T));
    return v;
}

template <class T>
HARNESS_CPU_RT static inline T shfl(unsigned mask, T var, int mode, unsigned b, int width, const char* op) {
    if (width < 1 || width > 32 || (width & (width - 1)) != 0)
        fail(kKernelFault, "%s: width %d is not a power of two in 1..32", op, width);
    Fiber* f = nullptr;
    Warp* w = warp_check(mask, op, &f);
    const unsigned lane = f ? f->lane : 0u;
    // Source lane as PTX shfl.sync computes it (b and the segment mask are 5-bit fields).
    const unsigned segmask = (32u - (unsigned)width) & 31u;
    const unsigned bval = b & 31u;
    const int minLane = (int)(lane & segmask);
    const int maxLane = (int)((lane & segmask) | (31u & ~segmask));
    int j;
    bool ok;
    switch (mode) {
        case kUp: j = (int)lane - (int)bval; ok = j >= minLane; break;
        case kDown: j = (int)lane + (int)bval; ok = j <= maxLane; break;
        case kXor: j = (int)(lane ^ bval); ok = j <= maxLane; break;
        default: j = minLane | (int)(bval & ~segmask); ok = j <= maxLane; break;
    }
    if (!w) return var;  // single-thread block: lane 0 only
    unsigned part;
    const unsigned long long* row = warp_exchange(w, f, to_bits(var), &part);
    // A source lane past the end of a partial warp, or one that has returned, gives the caller's own value.
    if (!ok || !((part >> j) & 1u)) return var;
    return from_bits<T>(row[j]);
}

template <class T>
HARNESS_CPU_RT static inline const unsigned long long* vote(unsigned mask, T value, const char* op, unsigned* part, unsigned* self) {
    Fiber* f = nullptr;
    Warp* w = warp_check(mask, op, &f);
    if (!w) {
        *part = 1u;
        *self = 0;
        return nullptr;
    }
    *self = f->lane;
    return warp_exchange(w, f, to_bits(value), part);
}

}  // namespace detail
}  // namespace harness_cpu

#define HARNESS_CPU_SHFL(T)                                                                                        \
    HARNESS_CPU_RT static inline T __shfl_sync(unsigned mask, T var, int srcLane, int width = 32) {                               \
        return harness_cpu::detail::shfl<T>(mask, var, harness_cpu::detail::kIdx, (unsigned)srcLane, width, "__shfl_sync"); \
    }                                                                                                              \
    HARNESS_CPU_RT static inline T __shfl_up_sync(unsigned mask, T var, unsigned int delta, int width = 32) {                     \
        return harness_cpu::detail::shfl<T>(mask, var, harness_cpu::detail::kUp, delta, width, "__shfl_up_sync");  \
    }                                                                                                              \
    HARNESS_CPU_RT static inline T __shfl_down_sync(unsigned mask, T var, unsigned int delta, int width = 32) {                   \
        return harness_cpu::detail::shfl<T>(mask, var, harness_cpu::detail::kDown, delta, width, "__shfl_down_sync"); \
    }                                                                                                              \
    HARNESS_CPU_RT static inline T __shfl_xor_sync(unsigned mask, T var, int laneMask, int width = 32) {                          \
        return harness_cpu::detail::shfl<T>(mask, var, harness_cpu::detail::kXor, (unsigned)laneMask, width, "__shfl_xor_sync"); \
    }
HARNESS_CPU_SHFL(int)
HARNESS_CPU_SHFL(unsigned int)
HARNESS_CPU_SHFL(long)
HARNESS_CPU_SHFL(unsigned long)
HARNESS_CPU_SHFL(long long)
HARNESS_CPU_SHFL(unsigned long long)
HARNESS_CPU_SHFL(float)
HARNESS_CPU_SHFL(double)
HARNESS_CPU_SHFL(__half)
HARNESS_CPU_SHFL(__half2)
HARNESS_CPU_SHFL(__nv_bfloat16)
HARNESS_CPU_SHFL(__nv_bfloat162)
#undef HARNESS_CPU_SHFL

HARNESS_CPU_RT static inline unsigned __ballot_sync(unsigned mask, int pred) {
    unsigned part, self;
    const unsigned long long* row = harness_cpu::detail::vote(mask, (unsigned)(pred != 0), "__ballot_sync", &part, &self);
    if (!row) return pred ? 1u : 0u;
    unsigned r = 0;
    for (unsigned m = part; m; m &= m - 1) {
        const unsigned j = (unsigned)__builtin_ctz(m);
        if (row[j]) r |= 1u << j;
    }
    return r;
}
HARNESS_CPU_RT static inline int __all_sync(unsigned mask, int pred) {
    unsigned part, self;
    const unsigned long long* row = harness_cpu::detail::vote(mask, (unsigned)(pred != 0), "__all_sync", &part, &self);
    if (!row) return pred != 0;
    for (unsigned m = part; m; m &= m - 1)
        if (!row[__builtin_ctz(m)]) return 0;
    return 1;
}
HARNESS_CPU_RT static inline int __any_sync(unsigned mask, int pred) {
    unsigned part, self;
    const unsigned long long* row = harness_cpu::detail::vote(mask, (unsigned)(pred != 0), "__any_sync", &part, &self);
    if (!row) return pred != 0;
    for (unsigned m = part; m; m &= m - 1)
        if (row[__builtin_ctz(m)]) return 1;
    return 0;
}
HARNESS_CPU_RT static inline int __uni_sync(unsigned mask, int pred) {
    unsigned part, self;
    const unsigned long long* row = harness_cpu::detail::vote(mask, (unsigned)(pred != 0), "__uni_sync", &part, &self);
    if (!row) return 1;
    for (unsigned m = part; m; m &= m - 1)
        if (row[__builtin_ctz(m)] != row[self]) return 0;
    return 1;
}
HARNESS_CPU_RT static inline void __syncwarp(unsigned mask = 0xffffffffu) {
    harness_cpu::detail::Fiber* f = nullptr;
    harness_cpu::detail::Warp* w = harness_cpu::detail::warp_check(mask, "__syncwarp", &f);
    if (w) harness_cpu::detail::warp_barrier(w, f);
    HARNESS_CPU_COMPILER_FENCE();
}
// The live lanes of the caller's warp (no divergence is tracked: every live lane counts as active).
HARNESS_CPU_RT static inline unsigned __activemask() {
    harness_cpu::detail::Sched* s = harness_cpu::detail::t_sched;
    if (s) return s->warps[s->fibers[s->cur].warp].live_mask;
    const unsigned long long n = (unsigned long long)blockDim.x * blockDim.y * blockDim.z;
    const unsigned long long id = threadIdx.x + (unsigned long long)threadIdx.y * blockDim.x +
                                  (unsigned long long)threadIdx.z * blockDim.x * blockDim.y;
    const unsigned long long lanes = n - id / 32u * 32u;
    return lanes >= 32 ? 0xffffffffu : ((1u << lanes) - 1u);
}

#define HARNESS_CPU_MATCH(T)                                                                                     \
    HARNESS_CPU_RT static inline unsigned __match_any_sync(unsigned mask, T value) {                                           \
        unsigned part, self;                                                                                     \
        const unsigned long long* row = harness_cpu::detail::vote(mask, value, "__match_any_sync", &part, &self); \
        if (!row) return 1u;                                                                                     \
        unsigned r = 0;                                                                                          \
        for (unsigned m = part; m; m &= m - 1) {                                                                 \
            const unsigned j = (unsigned)__builtin_ctz(m);                                                       \
            if (row[j] == row[self]) r |= 1u << j;                                                               \
        }                                                                                                        \
        return r;                                                                                                \
    }                                                                                                            \
    HARNESS_CPU_RT static inline unsigned __match_all_sync(unsigned mask, T value, int* pred) {                                \
        unsigned part, self;                                                                                     \
        const unsigned long long* row = harness_cpu::detail::vote(mask, value, "__match_all_sync", &part, &self); \
        if (!row) { *pred = 1; return 1u; }                                                                      \
        for (unsigned m = part; m; m &= m - 1)                                                                   \
            if (row[__builtin_ctz(m)] != row[self]) { *pred = 0; return 0u; }                                    \
        *pred = 1;                                                                                               \
        return part;                                                                                             \
    }
HARNESS_CPU_MATCH(int)
HARNESS_CPU_MATCH(unsigned int)
HARNESS_CPU_MATCH(long)
HARNESS_CPU_MATCH(unsigned long)
HARNESS_CPU_MATCH(long long)
HARNESS_CPU_MATCH(unsigned long long)
HARNESS_CPU_MATCH(float)
HARNESS_CPU_MATCH(double)
#undef HARNESS_CPU_MATCH

#define HARNESS_CPU_REDUCE(NAME, T, INIT, OP)                                                               \
    HARNESS_CPU_RT static inline T NAME(unsigned mask, T value) {                                                          \
        unsigned part, self;                                                                                \
        const unsigned long long* row = harness_cpu::detail::vote(mask, value, #NAME, &part, &self);        \
        if (!row) return value;                                                                             \
        T acc = INIT;                                                                                       \
        for (unsigned m = part; m; m &= m - 1) {                                                            \
            const T v = harness_cpu::detail::from_bits<T>(row[__builtin_ctz(m)]);                          \
            acc = OP;                                                                                       \
        }                                                                                                   \
        return acc;                                                                                         \
    }
HARNESS_CPU_REDUCE(__reduce_add_sync, unsigned, 0u, acc + v)
HARNESS_CPU_REDUCE(__reduce_add_sync, int, 0, (int)((unsigned)acc + (unsigned)v))
HARNESS_CPU_REDUCE(__reduce_min_sync, unsigned, 0xffffffffu, (v < acc ? v : acc))
HARNESS_CPU_REDUCE(__reduce_min_sync, int, INT_MAX, (v < acc ? v : acc))
HARNESS_CPU_REDUCE(__reduce_max_sync, unsigned, 0u, (v > acc ? v : acc))
HARNESS_CPU_REDUCE(__reduce_max_sync, int, INT_MIN, (v > acc ? v : acc))
HARNESS_CPU_REDUCE(__reduce_and_sync, unsigned, 0xffffffffu, acc & v)
HARNESS_CPU_REDUCE(__reduce_or_sync, unsigned, 0u, acc | v)
HARNESS_CPU_REDUCE(__reduce_xor_sync, unsigned, 0u, acc ^ v)
#undef HARNESS_CPU_REDUCE

// ---------------------------------------------------------------------------------------------
// 7. Atomics: real atomics (blocks run concurrently on several OS threads), relaxed like CUDA's;
//    each returns the old value.
// ---------------------------------------------------------------------------------------------
namespace harness_cpu __attribute__((visibility("hidden"))) {
namespace atom {
typedef unsigned short __attribute__((may_alias)) u16a;
typedef unsigned int __attribute__((may_alias)) u32a;
typedef unsigned long long __attribute__((may_alias)) u64a;
template <class W> struct Word;
template <> struct Word<unsigned short> { typedef u16a type; };
template <> struct Word<unsigned int> { typedef u32a type; };
template <> struct Word<unsigned long long> { typedef u64a type; };

// Compare-and-swap loop: *p = f(old) for a T stored as the unsigned word W; returns old.
template <class W, class T, class F>
HARNESS_CPU_RT static inline T update(T* p, F f) {
    static_assert(sizeof(T) == sizeof(W), "atomic word size");
    typedef typename Word<W>::type A;
    A* a = reinterpret_cast<A*>(p);
    W old = __atomic_load_n(a, __ATOMIC_RELAXED);
    for (;;) {
        T cur;
        std::memcpy(&cur, &old, sizeof(T));
        const T next = f(cur);
        W nw;
        std::memcpy(&nw, &next, sizeof(T));
        if (__atomic_compare_exchange_n(a, &old, nw, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) return cur;
    }
}
}  // namespace atom
}  // namespace harness_cpu

#define HARNESS_CPU_ATOMIC_INT(T)                                                                              \
    HARNESS_CPU_RT static inline T atomicAdd(T* p, T v) { harness_cpu::detail::contend_atomic(); return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }               \
    HARNESS_CPU_RT static inline T atomicSub(T* p, T v) { harness_cpu::detail::contend_atomic(); return __atomic_fetch_sub(p, v, __ATOMIC_RELAXED); }               \
    HARNESS_CPU_RT static inline T atomicExch(T* p, T v) { harness_cpu::detail::contend_atomic(); return __atomic_exchange_n(p, v, __ATOMIC_RELAXED); }             \
    HARNESS_CPU_RT static inline T atomicAnd(T* p, T v) { harness_cpu::detail::contend_atomic(); return __atomic_fetch_and(p, v, __ATOMIC_RELAXED); }               \
    HARNESS_CPU_RT static inline T atomicOr(T* p, T v) { harness_cpu::detail::contend_atomic(); return __atomic_fetch_or(p, v, __ATOMIC_RELAXED); }                 \
    HARNESS_CPU_RT static inline T atomicXor(T* p, T v) { harness_cpu::detail::contend_atomic(); return __atomic_fetch_xor(p, v, __ATOMIC_RELAXED); }               \
    HARNESS_CPU_RT static inline T atomicCAS(T* p, T compare, T v) { harness_cpu::detail::contend_atomic();                                                         \
        __atomic_compare_exchange_n(p, &compare, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);               \
        return compare;                                                                                       \
    }
#define HARNESS_CPU_ATOMIC_MINMAX(T)                                                                           \
    HARNESS_CPU_RT static inline T atomicMax(T* p, T v) { harness_cpu::detail::contend_atomic();                                                                    \
        T old = __atomic_load_n(p, __ATOMIC_RELAXED);                                                         \
        while (old < v && !__atomic_compare_exchange_n(p, &old, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) { \
        }                                                                                                     \
        return old;                                                                                           \
    }                                                                                                         \
    HARNESS_CPU_RT static inline T atomicMin(T* p, T v) { harness_cpu::detail::contend_atomic();                                                                    \
        T old = __atomic_load_n(p, __ATOMIC_RELAXED);                                                         \
        while (old > v && !__atomic_compare_exchange_n(p, &old, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) { \
        }                                                                                                     \
        return old;                                                                                           \
    }
HARNESS_CPU_ATOMIC_INT(int)
HARNESS_CPU_ATOMIC_INT(unsigned int)
HARNESS_CPU_ATOMIC_INT(unsigned long long)
HARNESS_CPU_ATOMIC_MINMAX(int)
HARNESS_CPU_ATOMIC_MINMAX(unsigned int)
HARNESS_CPU_ATOMIC_MINMAX(long long)
HARNESS_CPU_ATOMIC_MINMAX(unsigned long long)
#undef HARNESS_CPU_ATOMIC_INT
#undef HARNESS_CPU_ATOMIC_MINMAX
HARNESS_CPU_RT static inline unsigned short atomicCAS(unsigned short* p, unsigned short compare, unsigned short v) { harness_cpu::detail::contend_atomic();
    __atomic_compare_exchange_n(p, &compare, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    return compare;
}
HARNESS_CPU_RT static inline float atomicAdd(float* p, float v) { harness_cpu::detail::contend_atomic();
    return harness_cpu::atom::update<unsigned int>(p, [v](float x) { return x + v; });
}
HARNESS_CPU_RT static inline double atomicAdd(double* p, double v) { harness_cpu::detail::contend_atomic();
    return harness_cpu::atom::update<unsigned long long>(p, [v](double x) { return x + v; });
}
HARNESS_CPU_RT static inline __half atomicAdd(__half* p, __half v) { harness_cpu::detail::contend_atomic();
    return harness_cpu::atom::update<unsigned short>(p, [v](__half x) { return __hadd(x, v); });
}
HARNESS_CPU_RT static inline __nv_bfloat16 atomicAdd(__nv_bfloat16* p, __nv_bfloat16 v) { harness_cpu::detail::contend_atomic();
    return harness_cpu::atom::update<unsigned short>(p, [v](__nv_bfloat16 x) { return __hadd(x, v); });
}
HARNESS_CPU_RT static inline __half2 atomicAdd(__half2* p, __half2 v) { harness_cpu::detail::contend_atomic();
    return harness_cpu::atom::update<unsigned int>(p, [v](__half2 x) { return __hadd2(x, v); });
}
HARNESS_CPU_RT static inline __nv_bfloat162 atomicAdd(__nv_bfloat162* p, __nv_bfloat162 v) { harness_cpu::detail::contend_atomic();
    return harness_cpu::atom::update<unsigned int>(p, [v](__nv_bfloat162 x) { return __hadd2(x, v); });
}
HARNESS_CPU_RT static inline float atomicExch(float* p, float v) { harness_cpu::detail::contend_atomic();
    return __uint_as_float(__atomic_exchange_n(reinterpret_cast<harness_cpu::atom::u32a*>(p), __float_as_uint(v),
                                               __ATOMIC_RELAXED));
}
HARNESS_CPU_RT static inline unsigned int atomicInc(unsigned int* p, unsigned int limit) { harness_cpu::detail::contend_atomic();
    return harness_cpu::atom::update<unsigned int>(p, [limit](unsigned x) { return x >= limit ? 0u : x + 1u; });
}
HARNESS_CPU_RT static inline unsigned int atomicDec(unsigned int* p, unsigned int limit) { harness_cpu::detail::contend_atomic();
    return harness_cpu::atom::update<unsigned int>(p, [limit](unsigned x) { return (x == 0u || x > limit) ? limit : x - 1u; });
}
// Scoped variants: one memory, one meaning on the CPU.
#define atomicAdd_block atomicAdd
#define atomicAdd_system atomicAdd
#define atomicSub_block atomicSub
#define atomicSub_system atomicSub
#define atomicExch_block atomicExch
#define atomicExch_system atomicExch
#define atomicMin_block atomicMin
#define atomicMin_system atomicMin
#define atomicMax_block atomicMax
#define atomicMax_system atomicMax
#define atomicInc_block atomicInc
#define atomicInc_system atomicInc
#define atomicDec_block atomicDec
#define atomicDec_system atomicDec
#define atomicCAS_block atomicCAS
#define atomicCAS_system atomicCAS
#define atomicAnd_block atomicAnd
#define atomicAnd_system atomicAnd
#define atomicOr_block atomicOr
#define atomicOr_system atomicOr
#define atomicXor_block atomicXor
#define atomicXor_system atomicXor

// ---------------------------------------------------------------------------------------------
// 8. math_constants.h (IEEE values written as bit patterns or correctly rounded literals)
// ---------------------------------------------------------------------------------------------
#define CUDART_INF_F __int_as_float(0x7f800000)
#define CUDART_NAN_F __int_as_float(0x7fffffff)
#define CUDART_MIN_DENORM_F __int_as_float(0x00000001)
#define CUDART_MAX_NORMAL_F __int_as_float(0x7f7fffff)
#define CUDART_NEG_ZERO_F __int_as_float((int)0x80000000u)
#define CUDART_ZERO_F 0.0f
#define CUDART_ONE_F 1.0f
#define CUDART_SQRT_HALF_F 0.70710678118654752440f
#define CUDART_SQRT_HALF_HI_F 0.70710678118654752440f
#define CUDART_SQRT_HALF_LO_F 1.210161749e-08f
#define CUDART_SQRT_TWO_F 1.41421356237309504880f
#define CUDART_THIRD_F 0.33333333333333333333f
#define CUDART_PIO4_F 0.78539816339744830962f
#define CUDART_PIO2_F 1.57079632679489661923f
#define CUDART_3PIO4_F 2.35619449019234492885f
#define CUDART_2_OVER_PI_F 0.63661977236758134308f
#define CUDART_SQRT_2_OVER_PI_F 0.79788456080286535588f
#define CUDART_PI_F 3.14159265358979323846f
#define CUDART_L2E_F 1.44269504088896340736f
#define CUDART_L2T_F 3.32192809488736234787f
#define CUDART_LG2_F 0.30102999566398119521f
#define CUDART_LGE_F 0.43429448190325182765f
#define CUDART_LN2_F 0.69314718055994530942f
#define CUDART_LNT_F 2.30258509299404568402f
#define CUDART_LNPI_F 1.14472988584940017414f
#define CUDART_TWO_TO_M126_F 1.17549435082228750797e-38f
#define CUDART_TWO_TO_126_F 8.50705917302346158658e+37f
#define CUDART_NORM_HUGE_F 3.40282346638528859812e+38f
#define CUDART_TWO_TO_23_F 8388608.0f
#define CUDART_TWO_TO_24_F 16777216.0f
#define CUDART_TWO_TO_31_F 2147483648.0f
#define CUDART_TWO_TO_32_F 4294967296.0f
#define CUDART_REMQUO_BITS_F 3
#define CUDART_REMQUO_MASK_F (~((~0) << CUDART_REMQUO_BITS_F))
#define CUDART_TRIG_PLOSS_F 105615.0f

#define CUDART_INF __longlong_as_double(0x7ff0000000000000LL)
#define CUDART_NAN __longlong_as_double((long long)0xfff8000000000000ULL)
#define CUDART_NEG_ZERO __longlong_as_double((long long)0x8000000000000000ULL)
#define CUDART_MIN_DENORM __longlong_as_double(0x0000000000000001LL)
#define CUDART_MAX_NORMAL __longlong_as_double(0x7fefffffffffffffLL)
#define CUDART_ZERO 0.0
#define CUDART_ONE 1.0
#define CUDART_SQRT_TWO 1.41421356237309504880
#define CUDART_SQRT_HALF 0.70710678118654752440
#define CUDART_THIRD 0.33333333333333333333
#define CUDART_TWOTHIRD 0.66666666666666666667
#define CUDART_PIO4 0.78539816339744830962
#define CUDART_PIO2 1.57079632679489661923
#define CUDART_3PIO4 2.35619449019234492885
#define CUDART_2_OVER_PI 0.63661977236758134308
#define CUDART_PI 3.14159265358979323846
#define CUDART_2PI 6.28318530717958647693
#define CUDART_SQRT_PI 1.77245385090551602730
#define CUDART_SQRT_PIO2 1.25331413731550025121
#define CUDART_SQRT_2PI 2.50662827463100050242
#define CUDART_SQRT_2_OVER_PI 0.79788456080286535588
#define CUDART_L2E 1.44269504088896340736
#define CUDART_L2T 3.32192809488736234787
#define CUDART_LG2 0.30102999566398119521
#define CUDART_LGE 0.43429448190325182765
#define CUDART_LN2 0.69314718055994530942
#define CUDART_LNT 2.30258509299404568402
#define CUDART_LNPI 1.14472988584940017414
#define CUDART_TWO_TO_M1022 2.22507385850720138309e-308
#define CUDART_TWO_TO_M54 5.5511151231257827021e-17
#define CUDART_TWO_TO_53 9007199254740992.0
#define CUDART_TWO_TO_54 18014398509481984.0
#define CUDART_TWO_TO_63 9223372036854775808.0
#define CUDART_TWO_TO_64 18446744073709551616.0
#define CUDART_TRIG_PLOSS 2147483648.0

#define CUDART_INF_FP16 __ushort_as_half((unsigned short)0x7c00u)
#define CUDART_MAX_NORMAL_FP16 __ushort_as_half((unsigned short)0x7bffu)
#define CUDART_MIN_DENORM_FP16 __ushort_as_half((unsigned short)0x0001u)
#define CUDART_NAN_FP16 __ushort_as_half((unsigned short)0x7fffu)
#define CUDART_ONE_FP16 __ushort_as_half((unsigned short)0x3c00u)
#define CUDART_ZERO_FP16 __ushort_as_half((unsigned short)0x0000u)
#define CUDART_NEG_ZERO_FP16 __ushort_as_half((unsigned short)0x8000u)
#define CUDART_INF_BF16 __ushort_as_bfloat16((unsigned short)0x7f80u)
#define CUDART_MAX_NORMAL_BF16 __ushort_as_bfloat16((unsigned short)0x7f7fu)
#define CUDART_MIN_DENORM_BF16 __ushort_as_bfloat16((unsigned short)0x0001u)
#define CUDART_NAN_BF16 __ushort_as_bfloat16((unsigned short)0x7fffu)
#define CUDART_ONE_BF16 __ushort_as_bfloat16((unsigned short)0x3f80u)
#define CUDART_ZERO_BF16 __ushort_as_bfloat16((unsigned short)0x0000u)
#define CUDART_NEG_ZERO_BF16 __ushort_as_bfloat16((unsigned short)0x8000u)

// ---------------------------------------------------------------------------------------------
// 9. What follows this header (the kernel source and the generated wrapper) gets hidden
//    visibility: its functions and variables bind inside this shared object even if another
//    object with the same kernel names is loaded with RTLD_GLOBAL. harness_launch and
//    harness_last_error keep the default visibility of their declarations above.
// ---------------------------------------------------------------------------------------------
#pragma GCC visibility push(hidden)

// A __shared__ variable is a thread_local here, and the thread-local block of a library loaded at run time comes from
// malloc: a write past a shared array would land in the heap, or in the shim's own thread-locals above it. g++ lays
// a unit's thread-locals out in the reverse order of their definitions, so this margin, defined before the source,
// lies above its shared arrays, and the one the backend defines after the entry points (cpu.py, CLOSING_MARGIN) below.
static thread_local char harness_cpu_margin_above[8192] __attribute__((used));

#endif  // HARNESS_CUDA_CPU_H
