`include "tpu_assert.svh"
// tpusim chip top (docs/architecture.md): NUM_CORES cores (tpu_tile: CSR block, core, host DMA engine,
// HBM arbiter), each with its own MMIO window, interrupt line and HBM port; the arbiter that shares the
// chip's one host port among the cores' host DMA engines; and the core network that carries RDMA lines
// from any core of the board to any core (one round-robin arbiter per destination core, acknowledgements
// back to the sender), with two ICI link ports to the neighbouring chips on the board's ring
// (docs/interconnect.md): a packet for another chip leaves through the port toward it (tpu_ici_route),
// a packet for a third chip is passed on, and acknowledgements travel back the same way.
//
// Board cores are numbered chip-major: core c of chip m is m * NUM_CORES + c (RDMA's s[rd]).
module tpu_chip
#(
  // An ICI packet: {destination board core, source board core, HBM line, post, semaphore, line data}.
  parameter int unsigned IciPacketW = 2 * 4 + 32 + 1 + $clog2(tpu_pkg::SEMS) + tpu_pkg::LINE_W,  // derived
  // An ICI acknowledgement word: bit b acknowledges one line of board core b (at most one a cycle each).
  parameter int unsigned IciAckW    = 4 * tpu_pkg::NUM_CORES  // derived: the cores of a 4-chip board
) (
  input  logic              clk_i,
  input  logic              rst_ni,
  input  logic [7:0]        chip_id_i,   // index of the chip on the board (CFG_CHIP_ID), a strap
  input  logic [2:0]        num_chips_i, // chips on the board, 1, 2 or 4 (CFG_NUM_CHIPS), a strap

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
  output logic [tpu_pkg::NUM_CORES*3-1:0]  trace_work_o,

  // ICI link ports, port p at bit p / [p*IciPacketW +: IciPacketW] / [p*IciAckW +: IciAckW]: port 0 to
  // the next chip on the ring, port 1 to the previous one. Sending: a packet per cycle at most, on
  // tx_valid (no ready: the chip sends only with a credit; tx_credit gives one back), and a word of
  // acknowledgements every cycle (no flow control: at most one per board core and cycle). Receiving:
  // valid/ready; the link counts what was taken to return the sender's credits.
  input  logic [15:0]                 ici_credits_i,   // packets the far end of each link holds (>= 2), a strap
  output logic [1:0]                  ici_tx_valid_o,
  output logic [2*IciPacketW-1:0]     ici_tx_packet_o,
  input  logic [1:0]                  ici_tx_credit_i,
  output logic [2*IciAckW-1:0]        ici_tx_ack_o,
  input  logic [1:0]                  ici_rx_valid_i,
  output logic [1:0]                  ici_rx_ready_o,
  input  logic [2*IciPacketW-1:0]     ici_rx_packet_i,
  input  logic [2*IciAckW-1:0]        ici_rx_ack_i
);

  localparam int unsigned NumCores = tpu_pkg::NUM_CORES;
  localparam int unsigned LineW    = tpu_pkg::LINE_W;
  localparam int unsigned CoreSelW = 24 - tpu_pkg::CORE_SHIFT;
  localparam int unsigned Ports    = 2;
  localparam int unsigned CoreW    = 4;                    // a board core (tpu_dma's CoreW)
  localparam int unsigned Masters  = NumCores + Ports;     // of each destination's arbiter

  logic [CoreSelW-1:0]   core_sel;
  logic                  no_core_q;      // the last access named no core: answer it with 0
  logic [NumCores-1:0]  tile_rvalid;
  logic [NumCores*32-1:0] tile_rdata;

  // Host port: the cores' host DMA engines.
  logic [NumCores-1:0]        host_valid, host_ready, host_write, host_rsp_valid;
  logic [NumCores*64-1:0]     host_addr;
  logic [NumCores*LineW-1:0] host_wdata;
  logic [LineW:0]             host_rsp;   // {error, data}

  // Core network: what each core sends (out_*) and receives (in_*). A line travels to the destination's
  // arbiter as {source board core, post, sem, data}; an ICI packet adds the destination board core.
  localparam int unsigned SemW = $clog2(tpu_pkg::SEMS);
  localparam int unsigned NetW = CoreW + 1 + SemW + LineW;
  logic [NumCores-1:0]        out_valid, out_ready, out_post, out_ack;
  logic [NumCores*CoreW-1:0]  out_core;
  logic [NumCores*32-1:0]     out_line;
  logic [NumCores*LineW-1:0]  out_data;
  logic [NumCores*SemW-1:0]   out_sem;
  logic [NumCores-1:0]        out_here, out_prev, out_to_port0, out_to_port1;
  logic [NumCores*IciPacketW-1:0] out_packet;
  logic [NumCores-1:0]        in_valid, in_ready, in_ack;
  logic [NumCores*32-1:0]     in_line;
  logic [NumCores*NetW-1:0]   in_payload;
  logic [NumCores*CoreW-1:0]  in_source;     // the board core each destination's oldest unacknowledged line came from
  // Per destination d, per master m at [d*Masters + m]: the cores, then the link ports.
  logic [NumCores*Masters-1:0] route_valid, route_ready;
  logic [Masters*32-1:0]       master_line;
  logic [Masters*NetW-1:0]     master_payload;

  // What arrives on each link port.
  logic [Ports-1:0]        rx_here, rx_prev, rx_fwd_ready;
  logic [Ports*CoreW-1:0]  rx_dest;
  // Acknowledgements leaving through each port (registered) and reaching this chip's cores.
  logic [Ports*IciAckW-1:0] tx_ack_d, tx_ack_q;
  // Per board core b: whether it is on this chip, and else the port toward it.
  logic [IciAckW-1:0]       core_here, core_prev;
  // The cores' packets for each port.
  logic [Ports*NumCores-1:0] inj_valid, inj_ready;

  logic [CoreW-1:0] board_base;  // this chip's core 0 as a board core

  assign core_sel   = mmio_addr_i[23:tpu_pkg::CORE_SHIFT];
  assign board_base = CoreW'(chip_id_i[1:0]) * CoreW'(NumCores);

  for (genvar c = 0; c < NumCores; c++) begin : gen_core
    tpu_tile #(
      .CoreId (c)
    ) u_tile (
      .clk_i            (clk_i),
      .rst_ni           (rst_ni),
      .chip_id_i        (chip_id_i),
      .num_chips_i      (num_chips_i),
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
      .net_out_core_o   (out_core[c*CoreW +: CoreW]),
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

    // Where this core's line goes: a core of this chip, or a link port.
    tpu_ici_route u_out_route (
      .chip_i      (chip_id_i[1:0]),
      .dest_i      (2'(out_core[c*CoreW +: CoreW] / CoreW'(NumCores))),
      .num_chips_i (num_chips_i),
      .arrived_o   (out_here[c]),
      .prev_o      (out_prev[c])
    );
    assign out_packet[c*IciPacketW +: IciPacketW] =
        {out_core[c*CoreW +: CoreW], board_base + CoreW'(c), out_line[c*32 +: 32],
         out_post[c], out_sem[c*SemW +: SemW], out_data[c*LineW +: LineW]};
    assign master_line[c*32 +: 32] = out_line[c*32 +: 32];
    assign master_payload[c*NetW +: NetW] =
        {board_base + CoreW'(c), out_post[c], out_sem[c*SemW +: SemW], out_data[c*LineW +: LineW]};
    assign out_to_port0[c] = out_valid[c] && !out_here[c] && !out_prev[c];
    assign out_to_port1[c] = out_valid[c] && !out_here[c] && out_prev[c];
    assign inj_valid[0*NumCores + c] = out_to_port0[c];
    assign inj_valid[1*NumCores + c] = out_to_port1[c];
  end

  // What arrives on a link port: for a core here (a master of its arbiter), or passed on.
  for (genvar p = 0; p < Ports; p++) begin : gen_rx
    localparam int unsigned Base = p * IciPacketW;
    assign rx_dest[p*CoreW +: CoreW] = ici_rx_packet_i[Base + IciPacketW - CoreW +: CoreW];
    tpu_ici_route u_rx_route (
      .chip_i      (chip_id_i[1:0]),
      .dest_i      (2'(rx_dest[p*CoreW +: CoreW] / CoreW'(NumCores))),
      .num_chips_i (num_chips_i),
      .arrived_o   (rx_here[p]),
      .prev_o      (rx_prev[p])
    );
    assign master_line[(NumCores + p)*32 +: 32] = ici_rx_packet_i[Base + 1 + SemW + LineW +: 32];
    assign master_payload[(NumCores + p)*NetW +: NetW] =
        {ici_rx_packet_i[Base + 32 + 1 + SemW + LineW +: CoreW], ici_rx_packet_i[Base +: 1 + SemW + LineW]};
  end

  for (genvar d = 0; d < NumCores; d++) begin : gen_route
    for (genvar c = 0; c < NumCores; c++) begin : gen_source
      assign route_valid[d*Masters + c] =
          out_valid[c] && out_here[c] && (out_core[c*CoreW +: CoreW] % CoreW'(NumCores)) == CoreW'(d);
    end
    for (genvar p = 0; p < Ports; p++) begin : gen_port
      assign route_valid[d*Masters + NumCores + p] =
          ici_rx_valid_i[p] && rx_here[p] && (rx_dest[p*CoreW +: CoreW] % CoreW'(NumCores)) == CoreW'(d);
    end
    tpu_arbiter #(
      .Masters (Masters),
      .AddrW   (32),
      .DataW   (NetW),
      .RspW    (1)
    ) u_route (
      .clk_i         (clk_i),
      .rst_ni        (rst_ni),
      .m_req_valid_i (route_valid[d*Masters +: Masters]),
      .m_req_ready_o (route_ready[d*Masters +: Masters]),
      .m_req_write_i ('1),
      .m_req_addr_i  (master_line),
      .m_req_wdata_i (master_payload),
      // Acknowledgements carry nothing, and go to the source the line names (u_sources), not to the
      // master that brought it: a link port brings lines of many cores.
      // verilator lint_off PINCONNECTEMPTY
      .m_rsp_valid_o (),
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
    // The source of each line the tile has taken, until it acknowledges it (in order).
    tpu_fifo #(
      .Width (CoreW),
      .Depth (128)  // the arbiter's outstanding requests at most
    ) u_sources (
      .clk_i       (clk_i),
      .rst_ni      (rst_ni),
      .flush_i     (1'b0),
      .push_i      (in_valid[d] && in_ready[d]),
      .push_data_i (in_payload[d*NetW + NetW - CoreW +: CoreW]),
      .pop_i       (in_ack[d]),
      .head_o      (in_source[d*CoreW +: CoreW]),
      // Unconnected on purpose: the arbiter bounds the lines in flight
      // verilator lint_off PINCONNECTEMPTY
      .empty_o     (),
      .full_o      (),
      .count_o     ()
      // verilator lint_on PINCONNECTEMPTY
    );
  end

  // The link ports' sending halves: port 0 passes on what port 1 received and the other way round (on a
  // ring a packet keeps its direction).
  for (genvar p = 0; p < Ports; p++) begin : gen_tx
    tpu_ici_tx #(
      .Sources (NumCores),
      .Width   (IciPacketW)
    ) u_tx (
      .clk_i        (clk_i),
      .rst_ni       (rst_ni),
      .credits_i    (ici_credits_i),
      .fwd_valid_i  (ici_rx_valid_i[1 - p] && !rx_here[1 - p]),
      .fwd_ready_o  (rx_fwd_ready[p]),
      .fwd_packet_i (ici_rx_packet_i[(1 - p)*IciPacketW +: IciPacketW]),
      .inj_valid_i  (inj_valid[p*NumCores +: NumCores]),
      .inj_ready_o  (inj_ready[p*NumCores +: NumCores]),
      .inj_packet_i (out_packet),
      .tx_valid_o   (ici_tx_valid_o[p]),
      .tx_packet_o  (ici_tx_packet_o[p*IciPacketW +: IciPacketW]),
      .tx_credit_i  (ici_tx_credit_i[p])
    );
  end

  // A core's line goes to one place: its ready comes from that destination's arbiter or link port.
  always_comb begin
    for (int unsigned c = 0; c < NumCores; c++) begin
      out_ready[c] = 1'b0;
      for (int unsigned d = 0; d < NumCores; d++) out_ready[c] = out_ready[c] | route_ready[d*Masters + c];
      out_ready[c] = out_ready[c] | inj_ready[c] | inj_ready[NumCores + c];
    end
    for (int unsigned p = 0; p < Ports; p++) begin
      ici_rx_ready_o[p] = rx_fwd_ready[1 - p] && !rx_here[p];
      for (int unsigned d = 0; d < NumCores; d++)
        ici_rx_ready_o[p] = ici_rx_ready_o[p] | route_ready[d*Masters + NumCores + p];
    end
  end

  // Acknowledgements: a line written here is acknowledged to its source, on this chip or through the
  // port toward its chip; those arriving on a port for a core of another chip are passed on.
  for (genvar b = 0; b < IciAckW; b++) begin : gen_ack_route
    tpu_ici_route u_ack_route (
      .chip_i      (chip_id_i[1:0]),
      .dest_i      (2'(b / NumCores)),
      .num_chips_i (num_chips_i),
      .arrived_o   (core_here[b]),
      .prev_o      (core_prev[b])
    );
  end

  always_comb begin
    logic [IciAckW-1:0] acks;  // every acknowledgement this cycle, bit b for board core b
    acks = ici_rx_ack_i[0 +: IciAckW] | ici_rx_ack_i[IciAckW +: IciAckW];
    for (int unsigned d = 0; d < NumCores; d++) begin
      for (int unsigned b = 0; b < IciAckW; b++) begin
        if (in_ack[d] && in_source[d*CoreW +: CoreW] == CoreW'(b)) acks[b] = 1'b1;
      end
    end
    out_ack  = '0;
    tx_ack_d = '0;
    for (int unsigned b = 0; b < IciAckW; b++) begin
      if (core_here[b]) begin
        out_ack[b % NumCores] = out_ack[b % NumCores] | acks[b];
      end else begin
        tx_ack_d[(core_prev[b] ? IciAckW : 0) + b] = acks[b];
      end
    end
  end

  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      tx_ack_q <= '0;
    end else begin
      tx_ack_q <= tx_ack_d;
    end
  end
  assign ici_tx_ack_o = tx_ack_q;

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

  // The straps describe a board of 1, 2 or 4 chips with this one on it.
  `TPU_ASSERT(BoardOf124Chips, num_chips_i == 3'd1 || num_chips_i == 3'd2 || num_chips_i == 3'd4)
  `TPU_ASSERT(ChipOnTheBoard, 32'(chip_id_i) < 32'(num_chips_i))
  // On a ring a packet passed on keeps its direction: what port p receives for another chip leaves
  // through the other port.
  for (genvar p = 0; p < Ports; p++) begin : gen_rx_direction
    `TPU_ASSERT(PassedOnPacketKeepsItsDirection, !(ici_rx_valid_i[p] && !rx_here[p] && rx_prev[p] != (p == 0)))
  end
  `TPU_ASSERT(AckOnOnePort, (ici_rx_ack_i[0 +: IciAckW] & ici_rx_ack_i[IciAckW +: IciAckW]) == '0)

endmodule
