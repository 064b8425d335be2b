#include "rmsgrad/experiments/cifar10/zca.h"

#include <cmath>
#include <filesystem>
#include <vector>

#include "rmsgrad/core/error.h"
#include "rmsgrad/core/gemm.h"
#include "rmsgrad/core/parallel.h"
#include "rmsgrad/core/checkpoint.h"
#include "rmsgrad/experiments/common/file_status.h"

// LAPACK (inside OpenBLAS): eigenvalues and eigenvectors of a symmetric
// matrix by divide and conquer. Column-major; for a symmetric input the
// layout does not matter, and the eigenvectors come back as columns, i.e. as
// ROWS of our row-major buffer.
extern "C" void dsyevd_(const char* jobz, const char* uplo, const int* n, double* a, const int* lda, double* w,
                        double* work, const int* lwork, int* iwork, const int* liwork, int* info);

namespace rg::cifar {

namespace fs = std::filesystem;

Zca fit_zca(const Tensor& rows, double regularization) {
  check(rows.rank() == 2 && rows.dim(0) > 1, "zca: need [N, D] rows with N > 1, got {}", rows.shape());
  const int64_t n = rows.dim(0), d = rows.dim(1);
  Zca zca{Tensor::zeros(Shape{d}), Tensor::empty(Shape{d, d})};
  std::vector<double> mean(d, 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < d; ++j) mean[j] += rows.data()[i * d + j];
  for (int64_t j = 0; j < d; ++j) zca.mean.data()[j] = static_cast<float>(mean[j] / n);

  Tensor centered = rows.clone();
  float* c = centered.data();
  const float* mu = zca.mean.data();
  parallel_for(n, 64, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i)
      for (int64_t j = 0; j < d; ++j) c[i * d + j] -= mu[j];
  });
  Tensor cov = Tensor::empty(Shape{d, d});
  gemm(true, false, d, d, n, 1.0f / static_cast<float>(n), c, c, 0.0f, cov.data());

  std::vector<double> a(cov.data(), cov.data() + d * d), eigenvalues(d);
  const int dim = static_cast<int>(d);
  int info = 0, lwork = -1, liwork = -1, iwork_size = 0;
  double work_size = 0;
  dsyevd_("V", "U", &dim, a.data(), &dim, eigenvalues.data(), &work_size, &lwork, &iwork_size, &liwork, &info);
  lwork = static_cast<int>(work_size);
  liwork = iwork_size;
  std::vector<double> work(lwork);
  std::vector<int> iwork(liwork);
  dsyevd_("V", "U", &dim, a.data(), &dim, eigenvalues.data(), work.data(), &lwork, iwork.data(), &liwork, &info);
  check(info == 0, "zca: the eigensolver (dsyevd) failed with info = {}", info);

  // W = Σ_k u_k u_kᵀ / sqrt(λ_k + reg), u_k = row k of `a`.
  std::vector<float> scaled(d * d), basis(d * d);
  for (int64_t k = 0; k < d; ++k) {
    const double s = 1.0 / std::sqrt(std::max(eigenvalues[k], 0.0) + regularization);
    for (int64_t j = 0; j < d; ++j) {
      basis[k * d + j] = static_cast<float>(a[k * d + j]);
      scaled[k * d + j] = static_cast<float>(a[k * d + j] * s);
    }
  }
  gemm(true, false, d, d, d, 1.0f, basis.data(), scaled.data(), 0.0f, zca.transform.data());
  return zca;
}

void apply_zca(const Zca& zca, Tensor& rows) {
  const int64_t n = rows.dim(0), d = rows.dim(1);
  check(zca.mean.numel() == d, "zca: transform is for {} values per row, rows are {}", zca.mean.numel(), rows.shape());
  float* r = rows.data();
  const float* mu = zca.mean.data();
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < d; ++j) r[i * d + j] -= mu[j];
  Tensor out = Tensor::empty(rows.shape());
  gemm(false, false, n, d, d, 1.0f, r, zca.transform.data(), 0.0f, out.data());
  rows.copy_from(out);
}

namespace {

// FNV-1a over the bytes of the data: names the cache file.
uint64_t fingerprint(const Tensor& rows) {
  uint64_t h = 1469598103934665603ull;
  const auto* bytes = reinterpret_cast<const unsigned char*>(rows.data());
  for (size_t i = 0; i < static_cast<size_t>(rows.numel()) * sizeof(float); ++i) h = (h ^ bytes[i]) * 1099511628211ull;
  for (int a = 0; a < rows.rank(); ++a) h = (h ^ static_cast<uint64_t>(rows.dim(a))) * 1099511628211ull;
  return h;
}

}  // namespace

Zca fit_zca_cached(const Tensor& rows, const std::string& cache_dir, std::string& log) {
  if (cache_dir.empty()) {
    log = "zca: fitted (no cache)";
    return fit_zca(rows);
  }
  const fs::path file = fs::path(cache_dir) / fmt::format("zca-{:016x}.safetensors", fingerprint(rows));
  if (path_exists(file)) {
    Checkpoint c;
    try {
      c = load_checkpoint(file.string());
    } catch (const Error& e) {
      throw Error(fmt::format("zca: the cache file cannot be read ({}); delete it to fit afresh", e.what()));
    }
    const Tensor* mean = c.find("mean");
    const Tensor* transform = c.find("transform");
    const int64_t d = rows.dim(1);
    check(mean && transform, "zca: cache file {} lacks its 'mean' or 'transform' tensor; delete it to fit afresh",
          file.string());
    check(mean->shape() == Shape{d} && transform->shape() == Shape{d, d},
          "zca: cache file {} holds a mean of shape {} and a transform of shape {}, this data needs [{}] and [{}, {}]; "
          "delete it to fit afresh", file.string(), mean->shape(), transform->shape(), d, d, d);
    for (const Tensor* t : {mean, transform})
      for (float v : t->span())
        check(std::isfinite(v), "zca: cache file {} holds a value that is not finite ({}); delete it to fit afresh",
              file.string(), v);
    log = "zca: loaded from cache " + file.string();
    return {*mean, *transform};
  }
  Zca zca = fit_zca(rows);
  std::error_code ec;
  fs::create_directories(cache_dir, ec);
  Checkpoint c;
  c.add("mean", zca.mean);
  c.add("transform", zca.transform);
  c.metadata["what"] = "ZCA whitening of CIFAR-10 training rows, reg 1e-5";
  try {
    save_checkpoint(file.string(), c);
    log = "zca: fitted and cached in " + file.string();
  } catch (const Error& e) {
    log = std::string("zca: fitted; could not cache it (") + e.what() + ")";
  }
  return zca;
}

}  // namespace rg::cifar
