// Vector memory: one array of Lines x W bits with dedicated ports per unit (NumRd read ports with a
// 1-cycle latency, NumWr write ports). A read and a write of the same line in one cycle return the old
// data. Two writes to one line in one cycle only happen in programs that break the ISA's ordering rule
// (docs/isa.md); the higher port index wins.
module tpu_vmem #(
  parameter int unsigned Lines = tpu_pkg::VMEM_LINES,
  parameter int unsigned W     = tpu_pkg::LINE_W,
  parameter int unsigned NumRd = 5,
  parameter int unsigned NumWr = 3,
  parameter int unsigned Aw    = $clog2(Lines)
) (
  input  logic                    clk_i,
  input  logic [NumRd-1:0]        rd_en_i,
  input  logic [NumRd*Aw-1:0]     rd_addr_i,   // port p at [p*Aw +: Aw]
  output logic [NumRd*W-1:0]      rd_data_o,   // port p at [p*W +: W]
  input  logic [NumWr-1:0]        wr_en_i,
  input  logic [NumWr*Aw-1:0]     wr_addr_i,
  input  logic [NumWr*W-1:0]      wr_data_i
);

  // Public so benches and the platform can load and inspect VMEM through the backdoor.
  logic [W-1:0] mem_q [Lines] /*verilator public_flat_rw*/;
  localparam int NumRdI = NumRd;
  localparam int NumWrI = NumWr;
  logic [NumRd*W-1:0] rd_data_q;

  always_ff @(posedge clk_i) begin
    for (int p = 0; p < NumRdI; p++) begin
      if (rd_en_i[p]) rd_data_q[p*W +: W] <= mem_q[rd_addr_i[p*Aw +: Aw]];
    end
    for (int p = 0; p < NumWrI; p++) begin
      if (wr_en_i[p]) mem_q[wr_addr_i[p*Aw +: Aw]] <= wr_data_i[p*W +: W];
    end
  end

  assign rd_data_o = rd_data_q;

endmodule
