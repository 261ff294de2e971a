// tpusim chip top (docs/architecture.md): NUM_CORES cores (tpu_tile: CSR block, core, host DMA engine,
// HBM arbiter), each with its own MMIO window, interrupt line and HBM port; the arbiter that shares the
// chip's one host port among the cores' host DMA engines; and the core network that carries RDMA lines
// from any core to any core (one round-robin arbiter per destination core, acknowledgements routed back
// to the sender in order).
module tpu_chip
(
  input  logic              clk_i,
  input  logic              rst_ni,
  input  logic [7:0]        chip_id_i,   // index of the chip on the board (CFG_CHIP_ID), a strap

  // Core c's registers and IMEM window at offsets c << CORE_SHIFT; other cores' offsets answer 0.
  input  logic              mmio_valid_i,
  input  logic              mmio_write_i,
  input  logic [23:0]       mmio_addr_i,
  input  logic [31:0]       mmio_wdata_i,
  output logic              mmio_rvalid_o,
  output logic [31:0]       mmio_rdata_o,
  output logic [tpu_pkg::NUM_CORES-1:0] irq_o,    // one line per core

  // Core c's HBM port at bit c (valid/ready/write/rsp_valid), [c*32 +: 32] (address) and
  // [c*LINE_W +: LINE_W] (data).
  output logic [tpu_pkg::NUM_CORES-1:0]        hbm_req_valid_o,
  input  logic [tpu_pkg::NUM_CORES-1:0]        hbm_req_ready_i,
  output logic [tpu_pkg::NUM_CORES-1:0]        hbm_req_write_o,
  output logic [tpu_pkg::NUM_CORES*32-1:0]     hbm_req_addr_o,
  output logic [tpu_pkg::NUM_CORES*tpu_pkg::LINE_W-1:0] hbm_req_wdata_o,
  input  logic [tpu_pkg::NUM_CORES-1:0]        hbm_rsp_valid_i,
  input  logic [tpu_pkg::NUM_CORES*tpu_pkg::LINE_W-1:0] hbm_rsp_rdata_i,

  output logic              host_req_valid_o,
  input  logic              host_req_ready_i,
  output logic              host_req_write_o,
  output logic [63:0]       host_req_addr_o,
  output logic [tpu_pkg::LINE_W-1:0] host_req_wdata_o,
  input  logic              host_rsp_valid_i,
  input  logic [tpu_pkg::LINE_W-1:0] host_rsp_rdata_i,
  input  logic              host_rsp_error_i,

  // Issue trace of each core (tpu_sequencer: trace_*), core c at bit c / [c*32 +: 32] / [c*3 +: 3], for
  // profilers; leave open when unused.
  output logic [tpu_pkg::NUM_CORES-1:0]    trace_run_o,
  output logic [tpu_pkg::NUM_CORES-1:0]    trace_issue_o,
  output logic [tpu_pkg::NUM_CORES*32-1:0] trace_pc_o,
  output logic [tpu_pkg::NUM_CORES*3-1:0]  trace_wait_o,
  output logic [tpu_pkg::NUM_CORES*3-1:0]  trace_unit_o,
  output logic [tpu_pkg::NUM_CORES*3-1:0]  trace_work_o
);

  localparam int unsigned NumCores = tpu_pkg::NUM_CORES;
  localparam int unsigned LineW    = tpu_pkg::LINE_W;
  localparam int unsigned CoreSelW = 24 - tpu_pkg::CORE_SHIFT;

  logic [CoreSelW-1:0]   core_sel;
  logic                  no_core_q;      // the last access named no core: answer it with 0
  logic [NumCores-1:0]  tile_rvalid;
  logic [NumCores*32-1:0] tile_rdata;

  // Host port: the cores' host DMA engines.
  logic [NumCores-1:0]        host_valid, host_ready, host_write, host_rsp_valid;
  logic [NumCores*64-1:0]     host_addr;
  logic [NumCores*LineW-1:0] host_wdata;
  logic [LineW:0]             host_rsp;   // {error, data}

  // Core network: what each core sends (net_out) and receives (net_in). A line travels as
  // {post, sem, data} to the destination's arbiter, which holds it in its slice until the core takes it.
  localparam int unsigned SemW = $clog2(tpu_pkg::SEMS);
  localparam int unsigned NetW = 1 + SemW + LineW;
  logic [NumCores-1:0]        out_valid, out_ready, out_post, out_ack;
  logic [NumCores*4-1:0]      out_core;
  logic [NumCores*32-1:0]     out_line;
  logic [NumCores*LineW-1:0]  out_data;
  logic [NumCores*SemW-1:0]   out_sem;
  logic [NumCores-1:0]        in_valid, in_ready, in_ack;
  logic [NumCores*32-1:0]     in_line;
  logic [NumCores*NetW-1:0]   in_payload;
  // Per destination d, per source s at [d*NumCores + s].
  logic [NumCores*NumCores-1:0] route_valid, route_ready, route_ack;

  assign core_sel = mmio_addr_i[23:tpu_pkg::CORE_SHIFT];

  for (genvar c = 0; c < NumCores; c++) begin : gen_core
    tpu_tile #(
      .CoreId (c)
    ) u_tile (
      .clk_i            (clk_i),
      .rst_ni           (rst_ni),
      .chip_id_i        (chip_id_i),
      .mmio_valid_i     (mmio_valid_i && core_sel == CoreSelW'(c)),
      .mmio_write_i     (mmio_write_i),
      .mmio_addr_i      (mmio_addr_i[19:0]),
      .mmio_wdata_i     (mmio_wdata_i),
      .mmio_rvalid_o    (tile_rvalid[c]),
      .mmio_rdata_o     (tile_rdata[c*32 +: 32]),
      .irq_o            (irq_o[c]),
      .hbm_req_valid_o  (hbm_req_valid_o[c]),
      .hbm_req_ready_i  (hbm_req_ready_i[c]),
      .hbm_req_write_o  (hbm_req_write_o[c]),
      .hbm_req_addr_o   (hbm_req_addr_o[c*32 +: 32]),
      .hbm_req_wdata_o  (hbm_req_wdata_o[c*LineW +: LineW]),
      .hbm_rsp_valid_i  (hbm_rsp_valid_i[c]),
      .hbm_rsp_rdata_i  (hbm_rsp_rdata_i[c*LineW +: LineW]),
      .host_req_valid_o (host_valid[c]),
      .host_req_ready_i (host_ready[c]),
      .host_req_write_o (host_write[c]),
      .host_req_addr_o  (host_addr[c*64 +: 64]),
      .host_req_wdata_o (host_wdata[c*LineW +: LineW]),
      .host_rsp_valid_i (host_rsp_valid[c]),
      .host_rsp_rdata_i (host_rsp[LineW-1:0]),
      .host_rsp_error_i (host_rsp[LineW]),
      .net_out_valid_o  (out_valid[c]),
      .net_out_ready_i  (out_ready[c]),
      .net_out_core_o   (out_core[c*4 +: 4]),
      .net_out_line_o   (out_line[c*32 +: 32]),
      .net_out_data_o   (out_data[c*LineW +: LineW]),
      .net_out_post_o   (out_post[c]),
      .net_out_sem_o    (out_sem[c*SemW +: SemW]),
      .net_out_ack_i    (out_ack[c]),
      .net_in_valid_i   (in_valid[c]),
      .net_in_ready_o   (in_ready[c]),
      .net_in_line_i    (in_line[c*32 +: 32]),
      .net_in_data_i    (in_payload[c*NetW +: LineW]),
      .net_in_post_i    (in_payload[c*NetW + LineW + SemW]),
      .net_in_sem_i     (in_payload[c*NetW + LineW +: SemW]),
      .net_in_ack_o     (in_ack[c]),
      .trace_run_o      (trace_run_o[c]),
      .trace_issue_o    (trace_issue_o[c]),
      .trace_pc_o       (trace_pc_o[c*32 +: 32]),
      .trace_wait_o     (trace_wait_o[c*3 +: 3]),
      .trace_unit_o     (trace_unit_o[c*3 +: 3]),
      .trace_work_o     (trace_work_o[c*3 +: 3])
    );
  end

  for (genvar d = 0; d < NumCores; d++) begin : gen_route
    logic [NumCores*NetW-1:0] payload;
    for (genvar src = 0; src < NumCores; src++) begin : gen_source
      assign route_valid[d*NumCores + src] = out_valid[src] && out_core[src*4 +: 4] == 4'(d);
      assign payload[src*NetW +: NetW] =
          {out_post[src], out_sem[src*SemW +: SemW], out_data[src*LineW +: LineW]};
    end
    tpu_arbiter #(
      .Masters (NumCores),
      .AddrW   (32),
      .DataW   (NetW),
      .RspW    (1)
    ) u_route (
      .clk_i         (clk_i),
      .rst_ni        (rst_ni),
      .m_req_valid_i (route_valid[d*NumCores +: NumCores]),
      .m_req_ready_o (route_ready[d*NumCores +: NumCores]),
      .m_req_write_i ('1),
      .m_req_addr_i  (out_line),
      .m_req_wdata_i (payload),
      .m_rsp_valid_o (route_ack[d*NumCores +: NumCores]),
      // Acknowledgements carry nothing.
      // verilator lint_off PINCONNECTEMPTY
      .m_rsp_data_o  (),
      .req_write_o   (),
      // verilator lint_on PINCONNECTEMPTY
      .req_valid_o   (in_valid[d]),
      .req_ready_i   (in_ready[d]),
      .req_addr_o    (in_line[d*32 +: 32]),
      .req_wdata_o   (in_payload[d*NetW +: NetW]),
      .rsp_valid_i   (in_ack[d]),
      .rsp_data_i    (1'b0)
    );
  end

  // A core's line goes to one destination: its ready and acknowledgements come from that one's arbiter.
  always_comb begin
    out_ready = '0;
    out_ack   = '0;
    for (int unsigned d = 0; d < NumCores; d++) begin
      out_ready = out_ready | route_ready[d*NumCores +: NumCores];
      out_ack   = out_ack | route_ack[d*NumCores +: NumCores];
    end
  end

  // Every access gets its response pulse the next cycle, from the core it named or, for an offset of no
  // core, here (reads give 0), so a bad address cannot hang the host.
  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      no_core_q <= 1'b0;
    end else begin
      no_core_q <= mmio_valid_i && core_sel >= CoreSelW'(NumCores);
    end
  end

  always_comb begin
    mmio_rdata_o = '0;
    for (int unsigned c = 0; c < NumCores; c++) begin
      if (tile_rvalid[c]) mmio_rdata_o = tile_rdata[c*32 +: 32];
    end
  end
  assign mmio_rvalid_o = (|tile_rvalid) || no_core_q;

  tpu_arbiter #(
    .Masters (NumCores),
    .AddrW   (64),
    .RspW    (LineW + 1)
  ) u_host_arbiter (
    .clk_i         (clk_i),
    .rst_ni        (rst_ni),
    .m_req_valid_i (host_valid),
    .m_req_ready_o (host_ready),
    .m_req_write_i (host_write),
    .m_req_addr_i  (host_addr),
    .m_req_wdata_i (host_wdata),
    .m_rsp_valid_o (host_rsp_valid),
    .m_rsp_data_o  (host_rsp),
    .req_valid_o   (host_req_valid_o),
    .req_ready_i   (host_req_ready_i),
    .req_write_o   (host_req_write_o),
    .req_addr_o    (host_req_addr_o),
    .req_wdata_o   (host_req_wdata_o),
    .rsp_valid_i   (host_rsp_valid_i),
    .rsp_data_i    ({host_rsp_error_i, host_rsp_rdata_i})
  );

endmodule
