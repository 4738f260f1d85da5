#pragma once
/// \file The whole operator catalogue, by family, in the reference manifest's order,
/// then dwsr's own (interpretation).

#include "dwsr/exec/contexts.hpp"
#include "dwsr/operators/combination.hpp"
#include "dwsr/operators/complex_trace.hpp"
#include "dwsr/operators/dip_azimuth.hpp"
#include "dwsr/operators/edge_detection.hpp"
#include "dwsr/operators/frequency.hpp"
#include "dwsr/operators/interpretation.hpp"
#include "dwsr/operators/noise_reduction.hpp"
#include "dwsr/operators/signal.hpp"
#include "dwsr/operators/texture.hpp"
#include "dwsr/ops/registry.hpp"

/// Calls X(type) for every operator type (in namespace dwsr): the one list of the catalogue.
// clang-format off
#define DWSR_FOR_EACH_OPERATOR(X) \
  /* complex trace */ X(operators::hilbert) X(operators::envelope) X(operators::instantaneous_phase) \
    X(operators::cosine_instantaneous_phase) X(operators::relative_amplitude_change) \
    X(operators::amplitude_acceleration) X(operators::instantaneous_frequency) \
    X(operators::instantaneous_bandwidth) X(operators::dominant_frequency) X(operators::frequency_change) \
    X(operators::sweetness) X(operators::quality_factor) X(operators::response_phase) \
    X(operators::response_frequency) X(operators::response_amplitude) X(operators::apparent_polarity) \
    X(operators::phase_rotation) \
  /* signal */ X(operators::first_derivative) X(operators::second_derivative) X(operators::histogram_equalization) \
    X(operators::time_gain) X(operators::rescale_amplitude_range) X(operators::rms) X(operators::rms2) \
    X(operators::trace_agc) X(operators::gradient_magnitude) X(operators::reflection_intensity) \
  /* frequency */ X(operators::lowpass_filter) X(operators::highpass_filter) X(operators::bandpass_filter) \
    X(operators::cwt_ricker) X(operators::cwt_ormsby) X(operators::rgb_blending) \
  /* noise reduction */ X(operators::gaussian) X(operators::median) X(operators::convolution) \
  /* dip azimuth */ X(operators::gradient_dips) X(operators::gradient_structure_tensor) X(operators::gst_2d_dips) \
    X(operators::gst_3d_dip) X(operators::gst_3d_azm) \
  /* edge detection */ X(operators::semblance) X(operators::semblance2) X(operators::eig_complex) \
    X(operators::chaos) X(operators::coherence) X(operators::structured_semblance) X(operators::volume_curvature) \
  /* texture */ X(operators::glcm_contrast) X(operators::glcm_dissimilarity) X(operators::glcm_asm) \
    X(operators::glcm_energy) X(operators::glcm_homogeneity) X(operators::glcm_correlation) \
    X(operators::glcm_mean) X(operators::glcm_variance) X(operators::glcm_std) X(operators::glcm_entropy) \
    X(operators::lbp2d) X(operators::lbp3d) \
  /* combination */ X(operators::sweetness_from) X(operators::dominant_frequency_from) \
  /* interpretation (not in the reference) */ X(operators::geobody_labels) X(operators::event_picks_table)
// clang-format on

namespace dwsr {

// Compiling every operator for every context is most of a translation unit's
// build time. dwsr's own build compiles them once (src/operator_instances.cpp)
// and defines DWSR_EXTERN_OPERATORS elsewhere; users' builds are unaffected.
#ifdef DWSR_EXTERN_OPERATORS
#define DWSR_EXTERN_OPERATOR(Op) extern template class detail::operator_model<Op, execution_contexts>;
DWSR_FOR_EACH_OPERATOR(DWSR_EXTERN_OPERATOR)
#undef DWSR_EXTERN_OPERATOR
#endif

namespace operators {

/// Every operator dwsr implements, in the reference manifest's order, compiled
/// for the contexts of List (a program with a context of its own passes a list
/// that names it).
template <class List = execution_contexts>
registry catalogue_for() {
  registry out;
#define DWSR_ADD_OPERATOR(Op) out.add<Op, List>();
  DWSR_FOR_EACH_OPERATOR(DWSR_ADD_OPERATOR)
#undef DWSR_ADD_OPERATOR
  return out;
}

#ifdef DWSR_EXTERN_OPERATORS
// Registering every operator (factories, parameter parsing) is compiled once too.
extern template registry catalogue_for<execution_contexts>();
#endif

/// The catalogue for the default contexts: copy it to add operators of your own
/// (`dwsr::registry reg = dwsr::operators::catalogue(); reg.add<my_op>();`).
inline const registry& catalogue() {
  static const registry r = catalogue_for();
  return r;
}

}  // namespace operators
}  // namespace dwsr
