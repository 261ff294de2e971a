`include "tpu_assert.svh"

// Core DMA unit: DMA_LD (HBM -> VMEM) and DMA_ST (VMEM -> HBM) with a strided HBM side. (RDMA, VMEM to
// another core's HBM, runs beside it on the link engine, tpu_rdma.)
//
// Two halves that work on different instructions:
//  - the request side takes one instruction at a time and issues its HBM requests in order (loads:
//    one read per line; stores: VMEM is read one line per cycle into a small FIFO that feeds the HBM
//    writes, a VMEM read starting only when the FIFO has room for it, counting reads still in flight);
//  - the response side retires instructions in order as their HBM responses (in request order) arrive;
//    load responses are written straight into VMEM through the unit's own write port, so responses
//    (which have no ready) can always be absorbed.
// A new instruction is accepted (cmd_ready_o) once the request side has issued every request of the
// previous one and fewer than QueueDepth instructions wait for responses: a DMA's latency tail overlaps
// the next DMA's requests. Sequential semantics are kept: responses return in request order (a load
// after a load writes VMEM after it; the memory orders accesses to the same line), and a store starts
// reading VMEM only after every older load has written its lines (loads_waiting_q == 0).
// loads_pending_o is high while a DMA_LD has not written all its lines (the link engine waits for it).
// busy_o is high while any instruction is unfinished. flush_i abandons everything: no new requests,
// buffered lines and queued instructions dropped, responses still outstanding are absorbed and
// discarded (busy stays high until then).
module tpu_dma
#(
  parameter int unsigned VmemAw         = $clog2(tpu_pkg::VMEM_LINES),
  parameter int unsigned MaxOutstanding = 128,
  parameter int unsigned StoreFifoDepth = 4,
  parameter int unsigned QueueDepth     = tpu_pkg::DMA_QUEUE
) (
  input  logic              clk_i,
  input  logic              rst_ni,
  input  logic              flush_i,

  input  logic              cmd_valid_i,
  input  logic [7:0]        cmd_opcode_i,
  input  logic [31:0]       cmd_hbm_i,      // s[rs1]: first HBM line
  // The sequencer checked the VMEM range, so the bits above VmemAw are zero.
  // verilator lint_off UNUSEDSIGNAL
  input  logic [31:0]       cmd_vmem_i,     // s[rs2]: first VMEM line
  // verilator lint_on UNUSEDSIGNAL
  input  logic [31:0]       cmd_count_i,    // s[rs3]: lines
  input  logic [31:0]       cmd_stride_i,   // imm: HBM line stride
  output logic              cmd_ready_o,    // a command in this cycle is accepted
  output logic              busy_o,
  output logic              loads_pending_o,
  output logic              line_done_o,    // pulse per line moved

  output logic              hbm_req_valid_o,
  input  logic              hbm_req_ready_i,
  output logic              hbm_req_write_o,
  output logic [31:0]       hbm_req_addr_o,
  output logic [tpu_pkg::LINE_W-1:0] hbm_req_wdata_o,
  input  logic              hbm_rsp_valid_i,
  input  logic [tpu_pkg::LINE_W-1:0] hbm_rsp_rdata_i,

  output logic              vmem_rd_en_o,
  output logic [VmemAw-1:0] vmem_rd_addr_o,
  input  logic [tpu_pkg::LINE_W-1:0] vmem_rd_data_i,
  output logic              vmem_wr_en_o,
  output logic [VmemAw-1:0] vmem_wr_addr_o,
  output logic [tpu_pkg::LINE_W-1:0] vmem_wr_data_o
);

  localparam int unsigned OutW   = $clog2(MaxOutstanding + 1);
  localparam int unsigned FifoAw = $clog2(StoreFifoDepth);
  localparam int unsigned QAw    = (QueueDepth > 1) ? $clog2(QueueDepth) : 1;
  localparam int unsigned CtxW   = 1 + VmemAw + 32;  // {store, first VMEM line, lines}

  // Request side.
  logic              req_active_q;   // an instruction is issuing requests
  logic              req_store_q;    // DMA_ST: VMEM lines out
  logic [31:0]       hbm_addr_q;     // next HBM request line
  logic [31:0]       stride_q;
  logic [31:0]       req_left_q;     // loads: HBM reads to issue; stores: VMEM reads to issue
  logic [VmemAw-1:0] vmem_rd_addr_q;
  logic [OutW-1:0]   outstanding_q;  // HBM requests accepted, not yet answered
  logic              rd_inflight_q;  // a VMEM read issued last cycle
  logic [QAw:0]      loads_waiting_q; // queued loads whose responses have not all arrived

  // Response side: the queued instructions, oldest at the head.
  logic              ctx_push, ctx_pop, ctx_empty;
  logic [QAw:0]      ctx_count;
  logic [CtxW-1:0]   ctx_head;
  logic              head_store;
  logic [VmemAw-1:0] head_vmem;
  logic [31:0]       head_count;
  logic [31:0]       rsp_done_q;     // responses of the head instruction so far

  logic              cmd_fire, cmd_load;
  logic              req_valid;
  logic              hbm_fire;
  logic              fifo_empty;
  logic [FifoAw:0]   fifo_count;
  logic [tpu_pkg::LINE_W-1:0] fifo_head;
  logic              can_read, req_last;

  assign cmd_load    = (cmd_opcode_i == tpu_pkg::OP_DMA_LD);
  assign cmd_ready_o = !req_active_q && (32'(ctx_count) < 32'(QueueDepth));
  assign cmd_fire    = cmd_valid_i && cmd_ready_o;

  // Stores: every older load complete, and room in the FIFO for the read about to start, counting the
  // one still in flight.
  assign can_read = req_active_q && req_store_q && (req_left_q != 32'd0) && (loads_waiting_q == '0) &&
                    ((32'(fifo_count) + 32'(rd_inflight_q)) < 32'(StoreFifoDepth));

  assign vmem_rd_en_o   = can_read;
  assign vmem_rd_addr_o = vmem_rd_addr_q;

  assign req_valid = req_active_q && (outstanding_q < OutW'(MaxOutstanding)) &&
                     (req_store_q ? !fifo_empty : (req_left_q != 32'd0));

  assign hbm_req_write_o = req_store_q;
  assign hbm_req_addr_o  = hbm_addr_q;
  assign hbm_req_wdata_o = fifo_head;
  assign hbm_req_valid_o = req_valid;
  assign hbm_fire        = req_valid && hbm_req_ready_i;

  // The request side is done with its instruction when the last request goes out (a store's last
  // request also empties its FIFO: all its VMEM reads have returned).
  assign req_last = req_store_q ? (hbm_fire && req_left_q == 32'd0 && !rd_inflight_q && fifo_count == 1)
                                : (hbm_fire && req_left_q == 32'd1);

  tpu_fifo #(
    .Width (tpu_pkg::LINE_W),
    .Depth (StoreFifoDepth)
  ) u_store_fifo (
    .clk_i       (clk_i),
    .rst_ni      (rst_ni),
    .flush_i     (flush_i),
    .push_i      (rd_inflight_q && req_active_q && !flush_i),
    .push_data_i (vmem_rd_data_i),
    .pop_i       (hbm_fire && req_store_q),
    .head_o      (fifo_head),
    .empty_o     (fifo_empty),
    // Unconnected on purpose: occupancy comes from count_o / the counters
    // verilator lint_off PINCONNECTEMPTY
    .full_o      (),
    // verilator lint_on PINCONNECTEMPTY
    .count_o     (fifo_count)
  );

  // Instructions with lines wait in the context queue until their last response.
  assign ctx_push = cmd_fire && (cmd_count_i != 32'd0);
  assign ctx_pop  = hbm_rsp_valid_i && !ctx_empty && (rsp_done_q + 32'd1 == head_count);
  assign {head_store, head_vmem, head_count} = ctx_head;

  tpu_fifo #(
    .Width (CtxW),
    .Depth (QueueDepth)
  ) u_ctx_fifo (
    .clk_i       (clk_i),
    .rst_ni      (rst_ni),
    .flush_i     (flush_i),
    .push_i      (ctx_push),
    .push_data_i ({!cmd_load, cmd_vmem_i[VmemAw-1:0], cmd_count_i}),
    .pop_i       (ctx_pop),
    .head_o      (ctx_head),
    .empty_o     (ctx_empty),
    // verilator lint_off PINCONNECTEMPTY
    .full_o      (),
    // verilator lint_on PINCONNECTEMPTY
    .count_o     (ctx_count)
  );

  // Load responses go straight to VMEM (after a flush the queue is empty and they are dropped).
  assign vmem_wr_en_o   = hbm_rsp_valid_i && !ctx_empty && !head_store;
  assign vmem_wr_addr_o = head_vmem + VmemAw'(rsp_done_q);
  assign vmem_wr_data_o = hbm_rsp_rdata_i;
  assign line_done_o    = hbm_rsp_valid_i && !ctx_empty;

  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      req_active_q    <= 1'b0;
      req_store_q     <= 1'b0;
      hbm_addr_q      <= 32'd0;
      stride_q        <= 32'd0;
      req_left_q      <= 32'd0;
      vmem_rd_addr_q  <= '0;
      outstanding_q   <= '0;
      rd_inflight_q   <= 1'b0;
      loads_waiting_q <= '0;
      rsp_done_q      <= 32'd0;
    end else begin
      outstanding_q <= outstanding_q + OutW'(hbm_fire) - OutW'(hbm_rsp_valid_i);
      rd_inflight_q <= can_read && !flush_i;
      if (flush_i) begin
        req_active_q     <= 1'b0;
        loads_waiting_q  <= '0;
        rsp_done_q       <= 32'd0;
      end else begin
        loads_waiting_q <= loads_waiting_q + (QAw+1)'(ctx_push && cmd_load) -
                           (QAw+1)'(ctx_pop && !head_store);
        if (ctx_pop) rsp_done_q <= 32'd0;
        else if (hbm_rsp_valid_i && !ctx_empty) rsp_done_q <= rsp_done_q + 32'd1;
        if (cmd_fire) begin
          // An instruction without lines only occupies the request side for a cycle.
          req_active_q   <= 1'b1;
          req_store_q    <= !cmd_load;
          hbm_addr_q     <= cmd_hbm_i;
          stride_q       <= cmd_stride_i;
          req_left_q     <= cmd_count_i;
          vmem_rd_addr_q <= cmd_vmem_i[VmemAw-1:0];
        end else if (req_active_q) begin
          if (hbm_fire) hbm_addr_q <= hbm_addr_q + stride_q;
          if (req_store_q ? can_read : hbm_fire) req_left_q <= req_left_q - 32'd1;
          if (can_read) vmem_rd_addr_q <= vmem_rd_addr_q + VmemAw'(1);
          if (req_last || (req_left_q == 32'd0 && !req_store_q) ||
              (req_store_q && req_left_q == 32'd0 && fifo_empty && !rd_inflight_q)) begin
            req_active_q <= 1'b0;
          end
        end
      end
    end
  end

  assign loads_pending_o = (req_active_q && !req_store_q) || (loads_waiting_q != '0);
  assign busy_o = req_active_q || !ctx_empty || (outstanding_q != '0) || rd_inflight_q;

  // A request waits, unchanged, until HBM takes it (a flush may withdraw it); the sequencer checked the
  // range at issue.
  `TPU_ASSERT_STABLE(HbmReqHeld, hbm_req_valid_o, hbm_req_ready_i,
                     {hbm_req_write_o, hbm_req_addr_o, hbm_req_wdata_o}, clk_i, rst_ni && !flush_i)
  `TPU_ASSERT(HbmReqInRange, !hbm_req_valid_o || hbm_req_addr_o < 32'(tpu_pkg::HBM_LINES))

  `TPU_ASSERT(CommandOnlyWhenReady, !(cmd_valid_i && !cmd_ready_o))
  `TPU_ASSERT(ResponseToARequest, !(hbm_rsp_valid_i && outstanding_q == '0))

endmodule
