// The entry point of the codecs module (tracer/codecs.h), its only exported
// symbol.
#include "tracer/codecs_module.h"

extern "C" __attribute__((visibility("default"))) const leasehold::tracer::codecs::Codecs*
leasehold_tracer_codecs() {
  using namespace leasehold::tracer::codecs;
  static const Codecs codecs{kCodecsVersion, &open_video, &encode_jpeg, &write_movie,
                             &write_proxy};
  return &codecs;
}
