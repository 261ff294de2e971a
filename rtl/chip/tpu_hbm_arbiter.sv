// Shares the chip's HBM port between two masters (0: the core's DMA unit, 1: the host DMA engine).
// Round robin between requests. HBM answers every accepted request once, in order, without a ready, so
// the arbiter remembers who issued each outstanding request in a FIFO and routes each response to the
// head's owner. When that FIFO is full no request is accepted, which bounds the requests in flight.
// Soft reset does not touch it: responses to requests already accepted still arrive and are routed.
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

  logic prefer_host_q;   // round robin: who wins the next tie
  logic pick_host;       // the master presented downstream this cycle
  logic owners_full, owners_empty, owner_head;
  logic fire;

  assign pick_host = m_req_valid_i[1] && (!m_req_valid_i[0] || prefer_host_q);

  assign hbm_req_valid_o = (|m_req_valid_i) && !owners_full;
  assign hbm_req_write_o = m_req_write_i[pick_host];
  assign hbm_req_addr_o  = pick_host ? m_req_addr_i[32 +: 32] : m_req_addr_i[0 +: 32];
  assign hbm_req_wdata_o = pick_host ? m_req_wdata_i[tpu_pkg::LINE_W +: tpu_pkg::LINE_W]
                                     : m_req_wdata_i[0 +: tpu_pkg::LINE_W];
  assign fire            = hbm_req_valid_o && hbm_req_ready_i;

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
