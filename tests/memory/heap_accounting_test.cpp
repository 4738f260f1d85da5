// An independent check that dwsr's events see all the memory it uses: this
// executable interposes glibc's malloc family (operator new, FFTW and TBB
// allocate through it) and mmap/munmap (dwsr's host context maps its buffers),
// counts live heap and anonymous mapped bytes itself, and compares their growth
// during single operators and chunked graphs with what the events predict. It
// is built only without sanitizers, which interpose malloc themselves.

#include <catch2/catch.hpp>

#include <malloc.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>

#include "dwsr/graph/chunked.hpp"
#include "dwsr/graph/execute.hpp"
#include "dwsr/io/segy.hpp"
#include "dwsr/memory/peak_counter.hpp"
#include "dwsr/operators/catalogue.hpp"
#include "dwsr/sim/host_pages.hpp"
#include "io/temp_dir.hpp"

extern "C" {
void* __libc_malloc(std::size_t);
void __libc_free(void*);
void* __libc_calloc(std::size_t, std::size_t);
void* __libc_realloc(void*, std::size_t);
void* __libc_memalign(std::size_t, std::size_t);
}

namespace {
std::atomic<std::int64_t> live_bytes{0};
std::atomic<std::int64_t> peak_bytes{0};

void grow(std::int64_t bytes) {
  const auto now = live_bytes.fetch_add(bytes) + bytes;
  auto peak = peak_bytes.load();
  while (now > peak && !peak_bytes.compare_exchange_weak(peak, now)) {
  }
}
void* counted(void* p) {
  if (p) grow(std::int64_t(malloc_usable_size(p)));
  return p;
}
void uncount(void* p) {
  if (p) live_bytes.fetch_sub(std::int64_t(malloc_usable_size(p)));
}
std::int64_t pages(std::size_t n) {
  const auto page = std::int64_t(::sysconf(_SC_PAGESIZE));
  return (std::int64_t(n) + page - 1) / page * page;
}
}  // namespace

extern "C" {
void* malloc(std::size_t n) { return counted(__libc_malloc(n)); }
void free(void* p) {
  uncount(p);
  __libc_free(p);
}
void* calloc(std::size_t n, std::size_t s) { return counted(__libc_calloc(n, s)); }
void* realloc(void* p, std::size_t n) {
  uncount(p);
  return counted(__libc_realloc(p, n));
}
void* memalign(std::size_t a, std::size_t n) { return counted(__libc_memalign(a, n)); }
void* aligned_alloc(std::size_t a, std::size_t n) { return counted(__libc_memalign(a, n)); }
int posix_memalign(void** out, std::size_t a, std::size_t n) {
  *out = counted(__libc_memalign(a, n));
  return *out ? 0 : ENOMEM;
}
// Anonymous mappings made through the library's mmap (glibc's own large
// mallocs map through an internal call and are counted as heap above).
void* mmap(void* addr, std::size_t len, int prot, int flags, int fd, off_t off) {
  const long r = ::syscall(SYS_mmap, addr, len, prot, flags, fd, off);
  if (r < 0 && r > -4096) {
    errno = int(-r);
    return MAP_FAILED;
  }
  if (flags & MAP_ANONYMOUS) grow(pages(len));
  return reinterpret_cast<void*>(r);
}
int munmap(void* addr, std::size_t len) {
  const long r = ::syscall(SYS_munmap, addr, len);
  if (r != 0) {
    errno = int(-r);
    return -1;
  }
  live_bytes.fetch_sub(pages(len));  // dwsr unmaps only its own anonymous mappings whole
  return 0;
}
}

using namespace dwsr;

// For every operator: growth of the heap and of anonymous mappings during a
// real run (input, outputs and the operator's own buffers, all allocated inside
// the measured region) against the events' peak in whole pages (the host_pages
// model: the host context maps each buffer in whole pages). What remains is
// library memory dwsr does not own: FFTW's plans and twiddle tables (created
// per run, about 12 KiB for 512-sample traces) and TBB's per-arena bookkeeping.
// TBB's scheduler and FFTW's planner allocate ~170 KiB once per process on
// first use; a warm-up run takes that out of the measurement.
TEST_CASE("the events account for the heap growth of every operator") {
  const shape3 shape{16, 24, 512};
  const std::uint64_t slack = 32 * 1024;  // the bound stated above
  std::uint64_t worst = 0;
  {
    event_bus bus;
    host_context ctx(bus, {.threads = 2});
    execute(
        ctx, *operators::catalogue().find("hilbert").configure(), shape,
        [&](float* dst) { std::fill(dst, dst + shape.voxels(), 0.0f); }, [](std::span<const array_ref>) {});
  }
  for (const auto& entry : operators::catalogue().entries()) {
    const auto op = entry.configure();
    sim::host_pages_model events;
    event_bus bus(events);
    host_context ctx(bus, {.threads = 2});
    const auto baseline = live_bytes.load();
    peak_bytes.store(baseline);
    if (op->arity() == 1) {
      execute(
          ctx, *op, shape, [&](float* dst) { std::fill(dst, dst + shape.voxels(), 0.25f); },
          [](std::span<const array_ref>) {});
    } else {  // operators of several cubes: inputs and output allocated the same way
      std::vector<buffer<float, host_context>> inputs;
      std::vector<cube_view<const float>> views;
      for (std::size_t i = 0; i < op->arity(); ++i) {
        inputs.push_back(ctx.allocate<float>(shape.voxels(), buffer_role::input));
        std::fill(inputs.back().data(), inputs.back().data() + shape.voxels(), 0.25f + float(i));
        views.emplace_back(inputs.back().data(), shape);
      }
      auto out = ctx.allocate<float>(shape.voxels(), buffer_role::output);
      const array_ref ref{dtype::float32, out.data(), shape};
      op->run(ctx, std::span<const cube_view<const float>>(views), std::span<const array_ref>(&ref, 1), nullptr);
    }
    const auto growth = std::uint64_t(peak_bytes.load() - baseline);
    const auto held = events.stats().peak_reserved;
    INFO(entry.name << ": growth " << growth << " bytes, events' peak in pages " << held);
    CHECK(growth >= held);
    CHECK(growth <= held + slack);
    worst = std::max(worst, growth - held);
  }
  WARN("largest heap growth not seen by events: " << worst << " bytes");
}

namespace {

/// The inputs a chunked run reads from: a .npy file, a SEG-Y file, a synthetic
/// cube, or a cube in memory (allocated before the measured region).
enum class input_kind { npy, segy, synthetic, memory };

/// Writes the input file of `kind` (if any) for the synthetic cube of `shape` into `dir`.
void write_input(input_kind kind, shape3 shape, const std::vector<float>& cube, const std::filesystem::path& dir) {
  if (kind == input_kind::npy)
    io::write_npy(dir / "in.npy", array_ref{dtype::float32, const_cast<float*>(cube.data()), shape});
  if (kind == input_kind::segy) io::write_segy(dir / "in.sgy", cube_view<const float>(cube.data(), shape), 4000);
}

/// Opens the input of `kind` (the file written by write_input).
std::unique_ptr<block_source> open_input(input_kind kind, shape3 shape, const std::vector<float>& cube,
                                         const std::filesystem::path& dir) {
  switch (kind) {
    case input_kind::npy: return open_blocks((dir / "in.npy").string());
    case input_kind::segy: return open_blocks((dir / "in.sgy").string());
    case input_kind::synthetic: return open_blocks("synthetic:" + to_string(shape) + ":5");
    case input_kind::memory: break;
  }
  return std::make_unique<memory_block_source>(cube_view<const float>(cube.data(), shape));
}

}  // namespace

// Chunked graphs, W workers x T threads, every kind of input, .npy and
// in-memory outputs, blocks of unequal shapes: the growth of the heap and of
// anonymous mappings during the run lies between the largest worker's peak in
// whole pages (what the host_pages model predicts from its events) and the sum
// over the workers (all at their peak at once), plus library memory: per
// worker a TBB arena and FFTW plans (stated bound: 96 KiB per worker).
TEST_CASE("the events account for the memory of chunked graphs on every input and sink") {
  const shape3 shape{40, 36, 64};  // 369 KB: a whole-cube read would show above the bound
  std::vector<float> cube(shape.voxels());
  io::generate_synthetic(shape, 5, cube.data());
  graph g(operators::catalogue());
  g.add("smooth", "gaussian", {"input"}, {{"sigmas", "1,1,1"}})
      .add("env", "envelope", {"smooth"})
      .add("freq", "instantaneous_frequency", {"smooth"})
      .add("sweet", "sweetness_from", {"env", "freq"});
  g.build();
  const struct { std::size_t workers, threads; } layouts[] = {{1, 1}, {1, 2}, {2, 1}, {3, 2}};
  std::uint64_t worst = 0;
  for (const auto kind : {input_kind::npy, input_kind::segy, input_kind::synthetic, input_kind::memory})
    for (const auto& l : layouts) {
      const chunked_options o{.chunk = {13, 11, 64}, .workers = l.workers, .threads = l.threads};
      const chunked_schedule s(g, shape, o);
      std::uint64_t largest = 0, sum = 0;
      for (std::size_t w = 0; w < o.workers; ++w) {
        sim::host_pages_model model;
        worker_events(s, w, model);
        largest = std::max(largest, model.stats().peak_reserved);
        sum += model.stats().peak_reserved;
      }
      test::temp_dir dir;
      write_input(kind, shape, cube, dir.path());
      std::vector<float> out(shape.voxels());
      const bool to_files = (int(kind) + l.workers) % 2 == 0;
      {  // warm-up: TBB's threads, FFTW's planner
        const memory_block_source warm(cube_view<const float>(cube.data(), shape));
        run_chunked(s, warm, nullptr);
      }
      // Measured: opening the input (a source reads only the windows blocks
      // ask for), the sink, and the run.
      const auto baseline = live_bytes.load();
      peak_bytes.store(baseline);
      {
        const auto input = open_input(kind, shape, cube, dir.path());
        std::unique_ptr<block_sink> sink;
        if (to_files)
          sink = std::make_unique<npy_block_sink>(
              std::vector<npy_block_sink::file_spec>{{dir / "sweet.npy", dtype::float32}}, shape);
        else
          sink = std::make_unique<memory_block_sink>(std::vector<array_ref>{{dtype::float32, out.data(), shape}});
        run_chunked(s, *input, sink.get());
      }
      const auto growth = std::uint64_t(peak_bytes.load() - baseline);
      INFO("input " << int(kind) << ", " << l.workers << " workers x " << l.threads << " threads, "
                    << (to_files ? ".npy" : "memory") << " outputs: growth " << growth << " bytes, largest worker "
                    << largest << ", sum " << sum);
      CHECK(growth >= largest);
      CHECK(growth <= sum + 96 * 1024 * o.workers);
      worst = std::max(worst, growth > sum ? growth - sum : 0);
    }
  WARN("largest growth beyond the workers' pages: " << worst << " bytes");
}
