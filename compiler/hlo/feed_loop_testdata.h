// A module for the infeed and outfeed tests of the interpreter and the runtime: three steps of a loop
// that takes a batch (f32[3,W], s32[3]) from the infeed, adds the batch's column sums to a state f32[W]
// and sends the state's sum and the labels to the outfeed, as a steps_per_execution training loop does.
#pragma once

#include <string>

namespace tpu::hlo::testing {

inline std::string FeedLoopModule(int width) {
  std::string text = R"(HloModule feed_loop

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}

%body (state: (s32[], f32[W])) -> (s32[], f32[W]) {
  %state = (s32[], f32[W]) parameter(0)
  %i = s32[] get-tuple-element(%state), index=0
  %w = f32[W] get-tuple-element(%state), index=1
  %token = token[] after-all()
  %infeed = ((f32[3,W], s32[3]), token[]) infeed(%token)
  %batch = (f32[3,W], s32[3]) get-tuple-element(%infeed), index=0
  %x = f32[3,W] get-tuple-element(%batch), index=0
  %zero = f32[] constant(0)
  %sum = f32[W] reduce(%x, %zero), dimensions={0}, to_apply=%add
  %next = f32[W] add(%w, %sum)
  %total = f32[] reduce(%next, %zero), dimensions={0}, to_apply=%add
  %labels = s32[3] get-tuple-element(%batch), index=1
  %metrics = (f32[], s32[3]) tuple(%total, %labels)
  %out_token = token[] after-all()
  %outfeed = token[] outfeed(%metrics, %out_token), outfeed_shape=(f32[], s32[3])
  %one = s32[] constant(1)
  %i1 = s32[] add(%i, %one)
  ROOT %result = (s32[], f32[W]) tuple(%i1, %next)
}

%cond (state: (s32[], f32[W])) -> pred[] {
  %state = (s32[], f32[W]) parameter(0)
  %i = s32[] get-tuple-element(%state), index=0
  %n = s32[] constant(3)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}

ENTRY %main (w: f32[W]) -> f32[W] {
  %w = f32[W] parameter(0)
  %zero = s32[] constant(0)
  %init = (s32[], f32[W]) tuple(%zero, %w)
  %loop = (s32[], f32[W]) while(%init), condition=%cond, body=%body
  ROOT %final = f32[W] get-tuple-element(%loop), index=1
}
)";
  // Every "W]" is the width.
  const std::string w = std::to_string(width);
  for (size_t at = text.find("W]"); at != std::string::npos; at = text.find("W]", at + w.size())) {
    text.replace(at, 1, w);
  }
  return text;
}

}  // namespace tpu::hlo::testing
