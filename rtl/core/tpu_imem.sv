// Instruction memory: IMEM_WORDS x 64 bits. One fetch read port for the sequencer and one read/write
// port for the host's MMIO window (32-bit halves). Both reads have a 1-cycle latency. The core blocks
// host writes while it runs (see tpu_core), so fetch never sees a word change under it.
module tpu_imem
#(
  parameter int unsigned Words = tpu_pkg::IMEM_WORDS,
  parameter int unsigned Aw    = $clog2(Words)
) (
  input  logic          clk_i,

  // Fetch port.
  input  logic [Aw-1:0] fetch_addr_i,
  output logic [63:0]   fetch_rdata_o,

  // Host port: one 32-bit half of a word per access.
  input  logic          host_req_i,
  input  logic          host_write_i,
  input  logic          host_hi_i,      // 1 = bits 63:32
  input  logic [Aw-1:0] host_addr_i,
  input  logic [31:0]   host_wdata_i,
  output logic [31:0]   host_rdata_o
);

  logic [63:0] mem_q [Words];
  logic [63:0] fetch_rdata_q;
  logic [63:0] host_word_q;
  logic        host_hi_q;

  always_ff @(posedge clk_i) begin
    if (host_req_i && host_write_i) begin
      if (host_hi_i) mem_q[host_addr_i][63:32] <= host_wdata_i;
      else           mem_q[host_addr_i][31:0]  <= host_wdata_i;
    end
    fetch_rdata_q <= mem_q[fetch_addr_i];
    if (host_req_i && !host_write_i) begin
      host_word_q <= mem_q[host_addr_i];
      host_hi_q   <= host_hi_i;
    end
  end

  assign fetch_rdata_o = fetch_rdata_q;
  assign host_rdata_o  = host_hi_q ? host_word_q[63:32] : host_word_q[31:0];

endmodule
