`include "tpu_assert.svh"

// Link engine: RDMA, lines of this core's VMEM into another board core's HBM over the chip's core network
// (net_req_*), beside the DMA unit so that a send streams while the DMA unit loads and stores.
//
// VMEM is read one line per cycle (its own read port) into a small FIFO that feeds the network, a read
// starting only when the FIFO has room for it, counting the read in flight. The last line carries the
// POST flag and semaphore when the instruction has them. Each line is answered by an acknowledgement
// (net_rsp_valid_i) once written at its destination; busy_o stays high until every line sent is
// acknowledged, so SYNC ICI after an RDMA means the data has landed.
//
// The next RDMA is accepted once every line of the previous one has gone out (its acknowledgements may
// still be on their way), when
//  - it goes to the same core as the lines still unacknowledged: the network answers one destination's
//    lines in order, one a cycle, and the chip merges acknowledgements per source core with an OR, so
//    two destinations answering in the same cycle would lose one; to another core it waits until every
//    acknowledgement is back;
//  - no DMA_LD of the DMA unit is unfinished (loads_pending_i): an RDMA reads VMEM after every earlier
//    load has written it, as a DMA_ST does. Later loads and vector instructions that overwrite the lines
//    it reads must SYNC ICI first (docs/isa.md).
// flush_i abandons the instruction: no new requests, buffered lines dropped; acknowledgements still
// outstanding are absorbed (busy stays high until then).
module tpu_rdma
#(
  parameter int unsigned VmemAw         = $clog2(tpu_pkg::VMEM_LINES),
  // Lines in flight: enough for a line a cycle over an ICI round trip (two hops out and back of 500
  // cycles each, docs/interconnect.md); the network's own flow control bounds them too.
  parameter int unsigned MaxOutstanding = 4096,
  parameter int unsigned FifoDepth      = 4,
  parameter int unsigned CoreW          = 4,
  parameter int unsigned SemW           = $clog2(tpu_pkg::SEMS)
) (
  input  logic              clk_i,
  input  logic              rst_ni,
  input  logic              flush_i,

  input  logic              cmd_valid_i,
  input  logic [CoreW-1:0]  cmd_core_i,     // s[rd]: destination board core (checked at issue)
  input  logic [31:0]       cmd_line_i,     // s[rs1]: first HBM line there
  // The sequencer checked the VMEM range, so the bits above VmemAw are zero.
  // verilator lint_off UNUSEDSIGNAL
  input  logic [31:0]       cmd_vmem_i,     // s[rs2]: first VMEM line here
  // verilator lint_on UNUSEDSIGNAL
  input  logic [31:0]       cmd_count_i,    // s[rs3]: lines
  input  logic              cmd_post_i,     // flag POST
  input  logic [SemW-1:0]   cmd_sem_i,      // imm: the semaphore to post
  input  logic              loads_pending_i,
  output logic              cmd_ready_o,    // a command in this cycle is accepted
  output logic              busy_o,
  output logic              line_done_o,    // pulse per line acknowledged

  output logic              net_req_valid_o,
  input  logic              net_req_ready_i,
  output logic [CoreW-1:0]  net_req_core_o,
  output logic [31:0]       net_req_line_o,
  output logic [tpu_pkg::LINE_W-1:0] net_req_data_o,
  output logic              net_req_post_o,
  output logic [SemW-1:0]   net_req_sem_o,
  input  logic              net_rsp_valid_i,

  output logic              vmem_rd_en_o,
  output logic [VmemAw-1:0] vmem_rd_addr_o,
  input  logic [tpu_pkg::LINE_W-1:0] vmem_rd_data_i
);

  localparam int unsigned OutW   = $clog2(MaxOutstanding + 1);
  localparam int unsigned FifoAw = $clog2(FifoDepth);

  logic              active_q;       // lines of the current instruction still to send
  logic [CoreW-1:0]  core_q;         // destination of the current instruction and of every unacknowledged line
  logic              post_q;
  logic [SemW-1:0]   sem_q;
  logic [31:0]       line_q;         // next destination line
  logic [31:0]       left_q;         // VMEM reads to issue
  logic [VmemAw-1:0] vmem_addr_q;
  logic              rd_inflight_q;  // a VMEM read issued last cycle
  logic [OutW-1:0]   outstanding_q;  // lines sent, not yet acknowledged

  logic              cmd_fire, can_read, req_valid, req_fire, last_line;
  logic              fifo_empty;
  logic [FifoAw:0]   fifo_count;

  assign cmd_ready_o = !active_q && !loads_pending_i && (outstanding_q == '0 || cmd_core_i == core_q);
  assign cmd_fire    = cmd_valid_i && cmd_ready_o;

  assign can_read = active_q && (left_q != 32'd0) &&
                    ((32'(fifo_count) + 32'(rd_inflight_q)) < 32'(FifoDepth));
  assign vmem_rd_en_o   = can_read;
  assign vmem_rd_addr_o = vmem_addr_q;

  assign req_valid = active_q && !fifo_empty && (32'(outstanding_q) < 32'(MaxOutstanding));
  assign req_fire  = req_valid && net_req_ready_i;
  // The last line: nothing left to read and it is the only one buffered.
  assign last_line = (left_q == 32'd0) && !rd_inflight_q && (fifo_count == 1);

  assign net_req_valid_o = req_valid;
  assign net_req_core_o  = core_q;
  assign net_req_line_o  = line_q;
  assign net_req_post_o  = post_q && last_line;
  assign net_req_sem_o   = sem_q;

  tpu_fifo #(
    .Width (tpu_pkg::LINE_W),
    .Depth (FifoDepth)
  ) u_fifo (
    .clk_i       (clk_i),
    .rst_ni      (rst_ni),
    .flush_i     (flush_i),
    .push_i      (rd_inflight_q && active_q && !flush_i),
    .push_data_i (vmem_rd_data_i),
    .pop_i       (req_fire),
    .head_o      (net_req_data_o),
    .empty_o     (fifo_empty),
    // Unconnected on purpose: occupancy comes from count_o
    // verilator lint_off PINCONNECTEMPTY
    .full_o      (),
    // verilator lint_on PINCONNECTEMPTY
    .count_o     (fifo_count)
  );

  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      active_q      <= 1'b0;
      core_q        <= '0;
      post_q        <= 1'b0;
      sem_q         <= '0;
      line_q        <= 32'd0;
      left_q        <= 32'd0;
      vmem_addr_q   <= '0;
      rd_inflight_q <= 1'b0;
      outstanding_q <= '0;
    end else begin
      outstanding_q <= outstanding_q + OutW'(req_fire) - OutW'(net_rsp_valid_i);
      rd_inflight_q <= can_read && !flush_i;
      if (flush_i) begin
        active_q <= 1'b0;
      end else if (cmd_fire) begin
        // An instruction without lines sends nothing.
        active_q    <= (cmd_count_i != 32'd0);
        core_q      <= cmd_core_i;
        post_q      <= cmd_post_i;
        sem_q       <= cmd_sem_i;
        line_q      <= cmd_line_i;
        left_q      <= cmd_count_i;
        vmem_addr_q <= cmd_vmem_i[VmemAw-1:0];
      end else if (active_q) begin
        if (req_fire) line_q <= line_q + 32'd1;
        if (can_read) begin
          left_q      <= left_q - 32'd1;
          vmem_addr_q <= vmem_addr_q + VmemAw'(1);
        end
        if (req_fire && last_line) active_q <= 1'b0;
      end
    end
  end

  assign line_done_o = net_rsp_valid_i;
  assign busy_o      = active_q || (outstanding_q != '0) || rd_inflight_q;

  `TPU_ASSERT(CommandOnlyWhenReady, !(cmd_valid_i && !cmd_ready_o))
  `TPU_ASSERT(AcknowledgementOfALineSent, !(net_rsp_valid_i && outstanding_q == '0))
  `TPU_ASSERT(ReadOnlyIntoRoom, !(rd_inflight_q && active_q && fifo_count == (FifoAw+1)'(FifoDepth)))
  // A line waits, unchanged, until the network takes it (a flush may withdraw it).
  `TPU_ASSERT_STABLE(NetReqHeld, net_req_valid_o, net_req_ready_i,
                     {net_req_core_o, net_req_line_o, net_req_data_o, net_req_post_o, net_req_sem_o}, clk_i,
                     rst_ni && !flush_i)

endmodule
