// HbmTwin: a cycle-level timing twin of one core's HBM, rtl/hbm/hbm_subsystem.sv (the line adapter and one
// hbm_ctrl per channel) on the HBM2 devices of sysc/, for the reference model (sim/model) to take each line
// request's completion from instead of a fixed latency. It moves no data: it only says when.
//
// What it models, as the RTL does it:
//  - the line port of hbm_line_adapter: a one-entry request buffer (ready depends only on state), 64 tags,
//    one write line per channel waiting for its W beats, answers in request order through a reorder buffer;
//  - the mapping of HbmGeometry (sim/hbm/hbm_geometry.h): channel by the XOR fold, beat, bank group, bank,
//    row, column;
//  - per channel, hbm_ctrl's decisions: burst splitters (one beat a cycle, a read burst waits for a write
//    burst still being queued and the reverse), read and write queues of geometry.queue_depth() entries,
//    FR-FCFS (oldest row hit on the column bus, oldest miss on the row bus, entries waiting for the other
//    kind last), write draining between the 3/4 and 1/4 watermarks, write merging into the youngest
//    queued write of a line, reads answered from a write that covers their beat (forwarding), same-line
//    order (a read after the write it sees, a write after the reads before it), the 16-slot response
//    buffer, the 8-entry write response queue with B once a burst is in the device, all-bank refresh
//    every tREFI (PREA, REF, tRFC), and every JEDEC constraint of DramConfig (tRCD, tRP, tRAS, tRC, tWR,
//    tRTP, tRRD_S/L, tFAW, tCCD_S/L, tWTR_S/L, tRTW; read data CL + tBURST after RD);
//  - the platform's clock gating (sysc/hbm_memory.cc): while no request is in flight HBM time stands
//    still, so neither refresh nor timing counters advance.
// What it does not model: data; the chip-side pipeline in front of the port (the core's arbiter slice),
// which the model's Timing offsets carry; requests of two masters interleaved at the port (the caller's
// streams are served one after the other, see Stream).
#ifndef SIM_HBM_HBM_TWIN_H_
#define SIM_HBM_HBM_TWIN_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "sim/hbm/hbm_geometry.h"

namespace tpu {

class HbmTwin {
 public:
  // Sizes of rtl/hbm: the adapter's tags (ID_W = 6), the controller's response buffer and B queue.
  static constexpr int kTags = 64;
  static constexpr int kResponseSlots = 16;
  static constexpr int kWriteResponses = 8;
  // Queue entries the twin can hold per controller (geometry.queue_depth() must not exceed it).
  static constexpr int kMaxQueue = 16;
  static constexpr int kMaxBanks = 16;
  static constexpr int kMaxChannels = 16;
  static constexpr int kStreamsKept = 32;

  explicit HbmTwin(const HbmGeometry& geometry, const DramConfig& timing);
  explicit HbmTwin(const HbmGeometry& geometry) : HbmTwin(geometry, geometry.channel_config()) {}

  struct StreamTiming {
    uint64_t last_accepted = 0;  // cycle the port took the stream's last request
    uint64_t last_answer = 0;    // cycle the port answered it (every earlier request is answered by then)
    uint64_t stream = 0;         // the stream's number, for LastAnswer
  };
  // `count` requests for lines first_line + i * stride (all reads or all writes), presented at the port
  // one a cycle from cycle `start` on, each until the port takes it. Streams are taken in call order: one
  // that starts before the previous stream's last request was taken starts after it (the port's masters
  // are served first come, first served). The answer times assume no later request: a later stream may
  // delay them (it shares queues and banks), which this result does not see.
  StreamTiming Stream(uint64_t start, bool write, uint64_t first_line, uint64_t count, uint64_t stride);

  // The cycle the port answered the last request of stream `stream`, as the latest Stream call sees it
  // (a later stream can delay it); 0 when the twin no longer knows (more than kStreamsKept streams ago).
  uint64_t LastAnswer(uint64_t stream) const;

  // Runs the committed state on without requests until `cycle` (for inspection).
  void RunUntil(uint64_t cycle);
  // A channel controller's state now: write-drain mode and queued beats.
  bool write_mode(int channel) const { return state_.channels[size_t(channel)].write_mode; }
  int queued_reads(int channel) const;
  int queued_writes(int channel) const;

  // Forgets everything in flight and all bank state (a chip reset); time goes on from `cycle`.
  void Reset(uint64_t cycle);

  // Statistics of the committed run (requests taken, column commands, row hits, refreshes, HBM cycles
  // clocked), for tests and reports.
  struct Counters {
    uint64_t requests = 0, reads = 0, writes = 0, merged = 0, forwarded = 0, activates = 0, refreshes = 0;
    uint64_t clocked_cycles = 0;
  };
  const Counters& counters() const { return state_.counters; }
  const HbmGeometry& geometry() const { return geometry_; }
  const DramConfig& timing() const { return timing_; }
  // The cycle up to which the committed state has been simulated.
  uint64_t now() const { return state_.chip_now; }

 private:
  struct ReadEntry {
    bool last = false, src_valid = false;
    uint8_t id = 0, src = 0, bank = 0;
    uint32_t beat = 0, row = 0;
    uint64_t age = 0;  // push order: smaller is older
    // Older queued reads of its ID (R order per ID), and those of them on its bank.
    uint32_t older_same_id = 0, older_same_bank = 0;
  };
  struct WriteEntry {
    bool newest = false, prev_valid = false;
    uint8_t prev = 0, burst = 0, bank = 0;
    uint8_t strobe = 0;       // one bit per line of the beat (narrow lines); full when all set
    uint32_t beat = 0, row = 0;
    uint32_t read_wait = 0;   // reads of its line queued before it (read queue bit mask)
    uint64_t age = 0;
  };
  struct Bank {
    bool open = false;
    uint32_t row = 0;
    int64_t act_ok = 0, pre_ok = 0, col_ok = 0;
  };
  struct Channel {
    // Burst splitters.
    bool rd_busy = false, wr_busy = false, rd_wait = false, wr_wait = false;
    uint8_t rd_id = 0, wr_id = 0;
    uint32_t rd_beat = 0, wr_beat = 0, rd_left = 0;
    std::array<ReadEntry, kMaxQueue> rq{};
    std::array<WriteEntry, kMaxQueue> wq{};
    uint32_t rq_valid = 0, wq_valid = 0;  // queued entries, one bit each
    uint64_t next_age = 0;
    std::array<Bank, kMaxBanks> banks{};
    std::array<int64_t, kMaxBanks> rd_ok{}, wr_ok{};  // per bank group
    std::array<int64_t, 4> faw{};                      // last four ACTs, [0] oldest
    int64_t ref_ok = 0;
    bool write_mode = false, ref_pending = false;
    int refi_count = 0;
    // Response buffer: slots in allocation order, each with its ID and whether its data is there.
    std::array<uint8_t, kResponseSlots> rsp_id{};
    std::array<bool, kResponseSlots> rsp_last{}, rsp_have{};
    int rsp_head = 0, rsp_tail = 0, rsp_alloc = 0;
    // RDs in flight: their slot and the cycle their data reaches the controller.
    std::array<uint8_t, kResponseSlots> rd_slot{};
    std::array<int64_t, kResponseSlots> rd_due{};
    int rd_head = 0, rd_count = 0;
    // Write responses: ID and beats not yet in the device, per burst.
    std::array<uint8_t, kWriteResponses> bq_id{};
    std::array<int, kWriteResponses> bq_left{};
    int bq_head = 0, bq_tail = 0, bq_count = 0;
  };
  struct State {
    uint64_t chip_now = 0;  // the port's cycle
    int64_t hbm_now = 0;    // cycles the subsystem was clocked (its timing stamps)
    // Adapter.
    bool buf_valid = false, buf_write = false;
    uint64_t buf_line = 0;
    uint64_t tag_head = 0, tag_tail = 0;  // oldest unanswered, next to hand out (mod kTags)
    std::array<bool, kTags> tag_done{};
    std::array<uint8_t, kTags> tag_beats{};
    std::vector<bool> w_pending;
    std::vector<uint8_t> w_beat, w_strobe;
    uint64_t taken = 0, answered = 0;  // requests taken at the port, answers given
    uint64_t last_answer_cycle = 0;
    // Streams: the number of requests taken with each one's last, the cycle of its answer (ring).
    uint64_t streams = 0, streams_answered = 0;
    std::array<uint64_t, kStreamsKept> stream_end{}, stream_answer{};
    std::vector<Channel> channels;
    Counters counters;
  };
  // The port's request in a cycle (null: none).
  struct PortRequest {
    bool write;
    uint64_t line;
  };

  // What a controller takes from the adapter in a cycle.
  struct ChannelInput {
    bool ar = false, aw = false, w = false, w_last = false;
    uint8_t id = 0, w_strobe = 0;
    uint32_t beat = 0;
  };
  // What a controller offers in a cycle, from its state alone.
  struct ChannelOutput {
    bool ar_ready = false, w_ready = false, rd_push = false, rd_burst_done = false;
    bool r_valid = false, b_valid = false, rddata_valid = false;
    uint8_t r_id = 0, b_id = 0;
    int rq_free = -1, wq_free = -1, wq_count = 0;
  };
  ChannelOutput Outputs(const Channel& c, int64_t now) const;
  // One cycle of a controller: scheduling, timing, queues.
  void StepChannel(Channel& c, int64_t now, const ChannelOutput& out, const ChannelInput& in, Counters& counters) const;
  // One clock cycle of the whole subsystem; true when the port took `request`.
  bool Cycle(State& s, const PortRequest* request) const;
  // Runs cycles without requests until `cycle` (skipping idle time at once).
  void AdvanceTo(State& s, uint64_t cycle) const;
  // One cycle without a request, or several at once while nothing can happen in them but reads in the
  // devices and the refresh counters advancing (at most `limit`).
  void StepWithoutRequest(State& s, uint64_t limit) const;
  static bool NothingInFlight(const State& s) { return s.taken == s.answered; }

  HbmGeometry geometry_;
  DramConfig timing_;
  int queue_depth_, wq_hi_, wq_lo_;
  int lines_per_beat_, beats_per_line_;
  // Per-cycle scratch of Cycle, one element per channel.
  mutable std::vector<ChannelOutput> outputs_;
  mutable std::vector<ChannelInput> inputs_;
  State state_;
  // The committed state run on without requests until the last stream's last answer; adopted by the next
  // stream that starts after it.
  State ahead_;
  bool ahead_valid_ = false;
};

}  // namespace tpu

#endif  // SIM_HBM_HBM_TWIN_H_
