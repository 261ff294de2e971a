`include "tpu_assert.svh"
// Host DMA engine: moves lines between host memory (host port, byte addresses) and HBM (line addresses).
//
// Checks before starting (docs/csr.md): the host address is line aligned (BAD_HOST_ADDR) and
// hbm_line + lines <= HBM_LINES (BAD_HBM_ADDR); a failing check raises the error without moving data.
// Data path: the source side (host reads for host -> HBM, HBM reads for HBM -> host) fills a FIFO that
// feeds the sink side's write requests. Responses have no ready, so a source read is issued only when
// the FIFO has room for it counting the reads still in flight. Done when every sink write is answered.
// A host bus error response (on either direction) stops the transfer with HOST_BUS_ERROR. Stopping
// (bus error or abort_i) issues nothing more, drops buffered lines and waits for the responses still
// outstanding on both ports before going idle.
module tpu_host_dma
#(
  parameter int unsigned FifoDepth      = 32,
  parameter int unsigned MaxOutstanding = 64
) (
  input  logic              clk_i,
  input  logic              rst_ni,

  input  logic              start_i,        // ignored while busy
  input  logic              to_host_i,
  input  logic [63:0]       host_addr_i,
  input  logic [31:0]       hbm_line_i,
  input  logic [31:0]       lines_i,
  input  logic              abort_i,        // soft reset: stop silently and clear the status
  output logic              busy_o,
  output logic              error_o,
  output logic [7:0]        code_o,
  output logic              done_o,         // pulse: transfer complete
  output logic              fail_o,         // pulse: transfer stopped with an error

  output logic              host_req_valid_o,
  input  logic              host_req_ready_i,
  output logic              host_req_write_o,
  output logic [63:0]       host_req_addr_o,
  output logic [tpu_pkg::LINE_W-1:0] host_req_wdata_o,
  input  logic              host_rsp_valid_i,
  input  logic [tpu_pkg::LINE_W-1:0] host_rsp_rdata_i,
  input  logic              host_rsp_error_i,

  output logic              hbm_req_valid_o,
  input  logic              hbm_req_ready_i,
  output logic              hbm_req_write_o,
  output logic [31:0]       hbm_req_addr_o,
  output logic [tpu_pkg::LINE_W-1:0] hbm_req_wdata_o,
  input  logic              hbm_rsp_valid_i,
  input  logic [tpu_pkg::LINE_W-1:0] hbm_rsp_rdata_i
);

  localparam int unsigned LineBytes = tpu_pkg::LINE_W / 8;
  localparam int unsigned OutW      = $clog2(MaxOutstanding + 1);
  localparam int unsigned FifoAw    = $clog2(FifoDepth);

  logic              active_q;     // a transfer is running (or draining after a stop)
  logic              stopping_q;   // stopped: drain outstanding responses, issue nothing
  logic              to_host_q;
  logic [63:0]       host_addr_q;  // next host request address
  logic [31:0]       hbm_addr_q;   // next HBM request line
  logic [31:0]       src_left_q;   // source reads still to issue
  logic [31:0]       sink_left_q;  // sink write responses still expected
  logic [OutW-1:0]   host_out_q, hbm_out_q;
  logic              error_q;
  logic [7:0]        code_q;

  logic              src_valid, src_ready, src_fire;
  logic              sink_valid, sink_ready, sink_fire;
  logic              src_rsp, sink_rsp, bus_error;
  logic [tpu_pkg::LINE_W-1:0] src_rsp_data;
  logic              fifo_empty;
  logic [FifoAw:0]   fifo_count;
  logic [tpu_pkg::LINE_W-1:0] fifo_head;
  logic              host_fire, hbm_fire;
  logic              room;

  // Start checks.
  logic              bad_host, bad_hbm;
  assign bad_host = (host_addr_i[$clog2(LineBytes)-1:0] != '0);
  assign bad_hbm  = (({32'd0, hbm_line_i} + {32'd0, lines_i}) > 64'(tpu_pkg::HBM_LINES));

  // The source reads from one port, the sink writes to the other.
  assign room       = (32'(fifo_count) + (to_host_q ? 32'(hbm_out_q) : 32'(host_out_q))) < 32'(FifoDepth);
  assign src_valid  = active_q && !stopping_q && (src_left_q != 32'd0) && room;
  // Sink writes are bounded separately: nothing else limits how many wait for an answer.
  assign sink_valid = active_q && !stopping_q && !fifo_empty &&
                      ((to_host_q ? host_out_q : hbm_out_q) < OutW'(MaxOutstanding));

  assign host_req_valid_o = to_host_q ? sink_valid : src_valid;
  assign host_req_write_o = to_host_q;
  assign host_req_addr_o  = host_addr_q;
  assign host_req_wdata_o = fifo_head;

  assign hbm_req_valid_o  = to_host_q ? src_valid : sink_valid;
  assign hbm_req_write_o  = !to_host_q;
  assign hbm_req_addr_o   = hbm_addr_q;
  assign hbm_req_wdata_o  = fifo_head;

  assign src_ready    = to_host_q ? hbm_req_ready_i : host_req_ready_i;
  assign sink_ready   = to_host_q ? host_req_ready_i : hbm_req_ready_i;
  assign src_fire     = src_valid && src_ready;
  assign sink_fire    = sink_valid && sink_ready;
  assign host_fire    = host_req_valid_o && host_req_ready_i;
  assign hbm_fire     = hbm_req_valid_o && hbm_req_ready_i;
  assign src_rsp      = to_host_q ? hbm_rsp_valid_i : host_rsp_valid_i;
  assign sink_rsp     = to_host_q ? host_rsp_valid_i : hbm_rsp_valid_i;
  assign src_rsp_data = to_host_q ? hbm_rsp_rdata_i : host_rsp_rdata_i;
  assign bus_error    = host_rsp_valid_i && host_rsp_error_i;

  tpu_fifo #(
    .Width (tpu_pkg::LINE_W),
    .Depth (FifoDepth)
  ) u_fifo (
    .clk_i       (clk_i),
    .rst_ni      (rst_ni),
    .flush_i     (stopping_q),
    .push_i      (src_rsp && active_q && !stopping_q && !bus_error),
    .push_data_i (src_rsp_data),
    .pop_i       (sink_fire),
    .head_o      (fifo_head),
    .empty_o     (fifo_empty),
    // Unconnected on purpose: occupancy comes from count_o / the counters
    // verilator lint_off PINCONNECTEMPTY
    .full_o      (),
    // verilator lint_on PINCONNECTEMPTY
    .count_o     (fifo_count)
  );

  logic outstanding_zero_next;
  assign outstanding_zero_next =
      ((host_out_q + OutW'(host_fire) - OutW'(host_rsp_valid_i)) == '0) &&
      ((hbm_out_q + OutW'(hbm_fire) - OutW'(hbm_rsp_valid_i)) == '0);

  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      active_q    <= 1'b0;
      stopping_q  <= 1'b0;
      to_host_q   <= 1'b0;
      host_addr_q <= 64'd0;
      hbm_addr_q  <= 32'd0;
      src_left_q  <= 32'd0;
      sink_left_q <= 32'd0;
      host_out_q  <= '0;
      hbm_out_q   <= '0;
      error_q     <= 1'b0;
      code_q      <= tpu_pkg::ERR_NONE;
      done_o      <= 1'b0;
      fail_o      <= 1'b0;
    end else begin
      host_out_q <= host_out_q + OutW'(host_fire) - OutW'(host_rsp_valid_i);
      hbm_out_q  <= hbm_out_q + OutW'(hbm_fire) - OutW'(hbm_rsp_valid_i);
      done_o     <= 1'b0;
      fail_o     <= 1'b0;

      if (abort_i) begin
        error_q    <= 1'b0;
        code_q     <= tpu_pkg::ERR_NONE;
        if (active_q) stopping_q <= 1'b1;
      end else if (start_i && !busy_o) begin
        error_q <= 1'b0;
        code_q  <= tpu_pkg::ERR_NONE;
        if (bad_host || bad_hbm) begin
          error_q <= 1'b1;
          code_q  <= bad_host ? tpu_pkg::ERR_BAD_HOST_ADDR : tpu_pkg::ERR_BAD_HBM_ADDR;
          fail_o  <= 1'b1;
        end else begin
          active_q    <= 1'b1;
          stopping_q  <= 1'b0;
          to_host_q   <= to_host_i;
          host_addr_q <= host_addr_i;
          hbm_addr_q  <= hbm_line_i;
          src_left_q  <= lines_i;
          sink_left_q <= lines_i;
        end
      end else if (active_q) begin
        // The port whose request fired this cycle advances its address.
        if (host_fire) host_addr_q <= host_addr_q + 64'(LineBytes);
        if (hbm_fire)  hbm_addr_q  <= hbm_addr_q + 32'd1;
        if (src_fire)  src_left_q  <= src_left_q - 32'd1;
        if (sink_rsp)  sink_left_q <= sink_left_q - 32'd1;

        if (stopping_q) begin
          if (outstanding_zero_next) begin
            active_q   <= 1'b0;
            stopping_q <= 1'b0;
          end
        end else if (bus_error) begin
          stopping_q <= 1'b1;
          error_q    <= 1'b1;
          code_q     <= tpu_pkg::ERR_HOST_BUS_ERROR;
          fail_o     <= 1'b1;
        end else if (sink_left_q == 32'd0 || (sink_left_q == 32'd1 && sink_rsp)) begin
          active_q <= 1'b0;
          done_o   <= 1'b1;
        end
      end
    end
  end

  // An aborted transfer keeps draining outstanding responses; only then can a new one start.
  assign busy_o  = active_q;
  assign error_o = error_q;
  assign code_o  = code_q;

  `TPU_ASSERT(HostResponseToARequest, !(host_rsp_valid_i && host_out_q == '0))
  `TPU_ASSERT(HbmResponseToARequest, !(hbm_rsp_valid_i && hbm_out_q == '0))
  // The descriptor's range was checked at start (BAD_DMA otherwise), so no request leaves HBM.
  `TPU_ASSERT(HbmReqInRange, !hbm_req_valid_o || hbm_req_addr_o < 32'(tpu_pkg::HBM_LINES))
  `TPU_ASSERT(BusyWhileRequesting, !(host_req_valid_o || hbm_req_valid_o) || active_q)

endmodule
