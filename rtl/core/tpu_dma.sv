// Core DMA unit: DMA_LD (HBM -> VMEM) and DMA_ST (VMEM -> HBM) with a strided HBM side.
//
// Loads keep up to MaxOutstanding HBM reads in flight; every response is written straight into VMEM
// through the unit's own write port, so responses (which have no ready) can always be absorbed.
// Stores read VMEM one line per cycle into a small FIFO that feeds HBM write requests; a VMEM read is
// started only when the FIFO has room for it, counting reads still in flight.
// The unit is busy from the cycle after cmd_valid_i until every response of its instruction arrived.
// flush_i abandons the instruction: no new requests, buffered lines dropped, responses still
// outstanding are absorbed and discarded (busy stays high until then).
module tpu_dma
#(
  parameter int unsigned VmemAw         = $clog2(tpu_pkg::VMEM_LINES),
  parameter int unsigned MaxOutstanding = 128,
  parameter int unsigned StoreFifoDepth = 4
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
  output logic              busy_o,
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

  localparam int unsigned OutW  = $clog2(MaxOutstanding + 1);
  localparam int unsigned FifoAw = $clog2(StoreFifoDepth);

  logic              active_q;       // an instruction is in progress
  logic              store_q;
  logic [31:0]       hbm_addr_q;     // next HBM request line
  logic [31:0]       stride_q;
  logic [31:0]       req_left_q;     // loads: HBM reads to issue; stores: VMEM reads to issue
  logic [31:0]       rsp_left_q;     // HBM responses still expected for the instruction
  logic [VmemAw-1:0] vmem_rd_addr_q;
  logic [VmemAw-1:0] vmem_wr_addr_q;
  logic [OutW-1:0]   outstanding_q;  // HBM requests accepted, not yet answered
  logic              rd_inflight_q;  // a VMEM read issued last cycle

  logic              hbm_fire;
  logic              fifo_empty;
  logic [FifoAw:0]   fifo_count;
  logic [tpu_pkg::LINE_W-1:0] fifo_head;
  logic              can_read;

  // Stores: room in the FIFO for the read about to start, counting the one still in flight.
  assign can_read = active_q && store_q && (req_left_q != 32'd0) &&
                    ((32'(fifo_count) + 32'(rd_inflight_q)) < 32'(StoreFifoDepth));

  assign vmem_rd_en_o   = can_read;
  assign vmem_rd_addr_o = vmem_rd_addr_q;

  assign hbm_req_write_o = store_q;
  assign hbm_req_addr_o  = hbm_addr_q;
  assign hbm_req_wdata_o = fifo_head;
  assign hbm_req_valid_o = active_q && (outstanding_q < OutW'(MaxOutstanding)) &&
                           (store_q ? !fifo_empty : (req_left_q != 32'd0));
  assign hbm_fire        = hbm_req_valid_o && hbm_req_ready_i;

  tpu_fifo #(
    .Width (tpu_pkg::LINE_W),
    .Depth (StoreFifoDepth)
  ) u_store_fifo (
    .clk_i       (clk_i),
    .rst_ni      (rst_ni),
    .flush_i     (flush_i),
    .push_i      (rd_inflight_q && active_q && !flush_i),
    .push_data_i (vmem_rd_data_i),
    .pop_i       (hbm_fire && store_q),
    .head_o      (fifo_head),
    .empty_o     (fifo_empty),
    // Unconnected on purpose: occupancy comes from count_o / the counters
    // verilator lint_off PINCONNECTEMPTY
    .full_o      (),
    // verilator lint_on PINCONNECTEMPTY
    .count_o     (fifo_count)
  );

  // Load responses go straight to VMEM.
  assign vmem_wr_en_o   = hbm_rsp_valid_i && active_q && !store_q;
  assign vmem_wr_addr_o = vmem_wr_addr_q;
  assign vmem_wr_data_o = hbm_rsp_rdata_i;
  assign line_done_o    = hbm_rsp_valid_i && active_q;

  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      active_q       <= 1'b0;
      store_q        <= 1'b0;
      hbm_addr_q     <= 32'd0;
      stride_q       <= 32'd0;
      req_left_q     <= 32'd0;
      rsp_left_q     <= 32'd0;
      vmem_rd_addr_q <= '0;
      vmem_wr_addr_q <= '0;
      outstanding_q  <= '0;
      rd_inflight_q  <= 1'b0;
    end else begin
      outstanding_q <= outstanding_q + OutW'(hbm_fire) - OutW'(hbm_rsp_valid_i);
      rd_inflight_q <= can_read && !flush_i;
      if (flush_i) begin
        active_q <= 1'b0;
      end else if (cmd_valid_i && !active_q) begin
        active_q       <= 1'b1;
        store_q        <= (cmd_opcode_i == tpu_pkg::OP_DMA_ST);
        hbm_addr_q     <= cmd_hbm_i;
        stride_q       <= cmd_stride_i;
        req_left_q     <= cmd_count_i;
        rsp_left_q     <= cmd_count_i;
        vmem_rd_addr_q <= cmd_vmem_i[VmemAw-1:0];
        vmem_wr_addr_q <= cmd_vmem_i[VmemAw-1:0];
      end else if (active_q) begin
        if (hbm_fire) hbm_addr_q <= hbm_addr_q + stride_q;
        if (store_q ? can_read : hbm_fire) req_left_q <= req_left_q - 32'd1;
        if (can_read) vmem_rd_addr_q <= vmem_rd_addr_q + VmemAw'(1);
        if (hbm_rsp_valid_i) begin
          vmem_wr_addr_q <= vmem_wr_addr_q + VmemAw'(1);
          rsp_left_q     <= rsp_left_q - 32'd1;
        end
        // Done once the last response arrived (the last load line is written at this same edge).
        if (rsp_left_q == 32'd0 || (rsp_left_q == 32'd1 && hbm_rsp_valid_i)) active_q <= 1'b0;
      end
    end
  end

  assign busy_o = active_q || (outstanding_q != '0) || rd_inflight_q;

`ifndef SYNTHESIS
  always_ff @(posedge clk_i) begin
    if (rst_ni) begin
      assert (!(cmd_valid_i && busy_o)) else $error("DMA command while busy");
      assert (!(hbm_rsp_valid_i && outstanding_q == '0)) else $error("HBM response without request");
    end
  end
`endif

endmodule
