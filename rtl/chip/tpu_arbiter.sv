`include "tpu_assert.svh"
// Shares one request port among Masters masters, round robin: the master after the last one granted
// comes first. The port answers every accepted request once, in order, without a ready, so the arbiter
// remembers who issued each outstanding request in a FIFO and routes each response to the head's owner.
// When that FIFO is full no request is accepted, which bounds the requests in flight. Soft reset does not
// touch it: responses to requests already accepted still arrive and are routed.
// The chosen request passes through a register slice, so the port sees every request held stable until
// accepted, whatever the masters do meanwhile (a master may withdraw a request when aborted).
// Used for a core's HBM port (its DMA unit and the host DMA engine) and the chip's host port (the cores'
// host DMA engines).
module tpu_arbiter
#(
  parameter int unsigned Masters        = 2,
  parameter int unsigned AddrW          = 32,
  parameter int unsigned DataW          = tpu_pkg::LINE_W,  // request write data
  parameter int unsigned RspW           = tpu_pkg::LINE_W,  // response payload
  parameter int unsigned MaxOutstanding = 128
) (
  input  logic                       clk_i,
  input  logic                       rst_ni,

  input  logic [Masters-1:0]         m_req_valid_i,
  output logic [Masters-1:0]         m_req_ready_o,
  input  logic [Masters-1:0]         m_req_write_i,
  input  logic [Masters*AddrW-1:0]   m_req_addr_i,    // master m at [m*AddrW +: AddrW]
  input  logic [Masters*DataW-1:0]   m_req_wdata_i,   // master m at [m*DataW +: DataW]
  output logic [Masters-1:0]         m_rsp_valid_o,
  output logic [RspW-1:0]            m_rsp_data_o,    // every master sees the payload; valid says whose

  output logic                       req_valid_o,
  input  logic                       req_ready_i,
  output logic                       req_write_o,
  output logic [AddrW-1:0]           req_addr_o,
  output logic [DataW-1:0]           req_wdata_o,
  input  logic                       rsp_valid_i,
  input  logic [RspW-1:0]            rsp_data_i
);

  localparam int unsigned OwnerW = Masters > 1 ? $clog2(Masters) : 1;
  localparam int unsigned ReqW   = 1 + AddrW + DataW;

  logic [OwnerW-1:0] last_q;   // the master granted last
  logic [OwnerW-1:0] pick;     // the master granted this cycle
  logic [OwnerW-1:0] owner_head;
  logic owners_full, owners_empty;
  logic grant_valid, slice_ready, fire;
  logic [ReqW-1:0] grant_req;

  // The first requesting master after last_q, else the first requesting master.
  always_comb begin
    logic found;
    found = 1'b0;
    pick  = '0;
    for (int unsigned m = 0; m < Masters; m++) begin
      if (!found && m_req_valid_i[m] && OwnerW'(m) > last_q) begin
        found = 1'b1;
        pick  = OwnerW'(m);
      end
    end
    for (int unsigned m = 0; m < Masters; m++) begin
      if (!found && m_req_valid_i[m]) begin
        found = 1'b1;
        pick  = OwnerW'(m);
      end
    end
  end

  assign grant_valid = (|m_req_valid_i) && !owners_full;
  assign grant_req   = {m_req_write_i[pick], m_req_addr_i[pick*AddrW +: AddrW], m_req_wdata_i[pick*DataW +: DataW]};
  assign fire        = grant_valid && slice_ready;

  tpu_req_slice #(
    .Width (ReqW)
  ) u_slice (
    .clk_i       (clk_i),
    .rst_ni      (rst_ni),
    .in_valid_i  (grant_valid),
    .in_ready_o  (slice_ready),
    .in_data_i   (grant_req),
    .out_valid_o (req_valid_o),
    .out_ready_i (req_ready_i),
    .out_data_o  ({req_write_o, req_addr_o, req_wdata_o})
  );

  tpu_fifo #(
    .Width (OwnerW),
    .Depth (MaxOutstanding)
  ) u_owners (
    .clk_i       (clk_i),
    .rst_ni      (rst_ni),
    .flush_i     (1'b0),
    .push_i      (fire),
    .push_data_i (pick),
    .pop_i       (rsp_valid_i),
    .head_o      (owner_head),
    .empty_o     (owners_empty),
    .full_o      (owners_full),
    // Unconnected on purpose: occupancy comes from count_o / the counters
    // verilator lint_off PINCONNECTEMPTY
    .count_o     ()
    // verilator lint_on PINCONNECTEMPTY
  );

  for (genvar m = 0; m < Masters; m++) begin : gen_master
    assign m_req_ready_o[m] = fire && pick == OwnerW'(m);
    assign m_rsp_valid_o[m] = rsp_valid_i && owner_head == OwnerW'(m);
  end
  assign m_rsp_data_o = rsp_data_i;

  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      last_q <= OwnerW'(Masters - 1);  // master 0 first after reset
    end else if (fire) begin
      last_q <= pick;
    end
  end

  // One grant a cycle, to a master that asks; every response to the one master that owns it.
  `TPU_ASSERT(ResponseToARequest, !(rsp_valid_i && owners_empty))
  `TPU_ASSERT(OneGrant, $onehot0(m_req_ready_o))
  `TPU_ASSERT(GrantToARequester, (m_req_ready_o & ~m_req_valid_i) == '0)
  `TPU_ASSERT(ResponseToOneMaster, $onehot0(m_rsp_valid_o) && ((|m_rsp_valid_o) == rsp_valid_i))

endmodule
