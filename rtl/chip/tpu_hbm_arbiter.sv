// Shares the chip's HBM port between two masters (0: the core's DMA unit, 1: the host DMA engine).
// Round robin between requests. HBM answers every accepted request once, in order, without a ready, so
// the arbiter remembers who issued each outstanding request in a FIFO and routes each response to the
// head's owner. When that FIFO is full no request is accepted, which bounds the requests in flight.
// Soft reset does not touch it: responses to requests already accepted still arrive and are routed.
// The chosen request passes through a register slice, so the HBM port sees every request held stable
// until accepted, whatever the masters do meanwhile (a master may withdraw a request when aborted).
module tpu_hbm_arbiter
#(
  parameter int unsigned MaxOutstanding = 128
) (
  input  logic                   clk_i,
  input  logic                   rst_ni,

  input  logic [1:0]             m_req_valid_i,
  output logic [1:0]             m_req_ready_o,
  input  logic [1:0]             m_req_write_i,
  input  logic [63:0]            m_req_addr_i,    // master m at [m*32 +: 32]
  input  logic [2*tpu_pkg::LINE_W-1:0] m_req_wdata_i,  // master m at [m*LINE_W +: LINE_W]
  output logic [1:0]             m_rsp_valid_o,
  output logic [tpu_pkg::LINE_W-1:0]      m_rsp_rdata_o,

  output logic                   hbm_req_valid_o,
  input  logic                   hbm_req_ready_i,
  output logic                   hbm_req_write_o,
  output logic [31:0]            hbm_req_addr_o,
  output logic [tpu_pkg::LINE_W-1:0]      hbm_req_wdata_o,
  input  logic                   hbm_rsp_valid_i,
  input  logic [tpu_pkg::LINE_W-1:0]      hbm_rsp_rdata_i
);

  localparam int unsigned ReqW = 1 + 32 + tpu_pkg::LINE_W;

  logic prefer_host_q;   // round robin: who wins the next tie
  logic pick_host;       // the master granted this cycle
  logic owners_full, owners_empty, owner_head;
  logic grant_valid, slice_ready, fire;
  logic [ReqW-1:0] grant_req;

  assign pick_host = m_req_valid_i[1] && (!m_req_valid_i[0] || prefer_host_q);

  assign grant_valid = (|m_req_valid_i) && !owners_full;
  assign grant_req   = pick_host ?
      {m_req_write_i[1], m_req_addr_i[32 +: 32], m_req_wdata_i[tpu_pkg::LINE_W +: tpu_pkg::LINE_W]} :
      {m_req_write_i[0], m_req_addr_i[0 +: 32], m_req_wdata_i[0 +: tpu_pkg::LINE_W]};
  assign fire        = grant_valid && slice_ready;

  tpu_req_slice #(
    .Width (ReqW)
  ) u_slice (
    .clk_i       (clk_i),
    .rst_ni      (rst_ni),
    .in_valid_i  (grant_valid),
    .in_ready_o  (slice_ready),
    .in_data_i   (grant_req),
    .out_valid_o (hbm_req_valid_o),
    .out_ready_i (hbm_req_ready_i),
    .out_data_o  ({hbm_req_write_o, hbm_req_addr_o, hbm_req_wdata_o})
  );

  assign m_req_ready_o[0] = fire && !pick_host;
  assign m_req_ready_o[1] = fire && pick_host;

  tpu_fifo #(
    .Width (1),
    .Depth (MaxOutstanding)
  ) u_owners (
    .clk_i       (clk_i),
    .rst_ni      (rst_ni),
    .flush_i     (1'b0),
    .push_i      (fire),
    .push_data_i (pick_host),
    .pop_i       (hbm_rsp_valid_i),
    .head_o      (owner_head),
    .empty_o     (owners_empty),
    .full_o      (owners_full),
    // Unconnected on purpose: occupancy comes from count_o / the counters
    // verilator lint_off PINCONNECTEMPTY
    .count_o     ()
    // verilator lint_on PINCONNECTEMPTY
  );

  assign m_rsp_valid_o[0] = hbm_rsp_valid_i && !owner_head;
  assign m_rsp_valid_o[1] = hbm_rsp_valid_i && owner_head;
  assign m_rsp_rdata_o    = hbm_rsp_rdata_i;

  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      prefer_host_q <= 1'b0;
    end else if (fire) begin
      prefer_host_q <= !pick_host;
    end
  end

`ifndef SYNTHESIS
  always_ff @(posedge clk_i) begin
    if (rst_ni) begin
      assert (!(hbm_rsp_valid_i && owners_empty)) else $error("HBM response without a request");
    end
  end
`endif

endmodule
