// Weight-stationary systolic array of N x N bf16 x bf16 -> fp32 multiply-accumulate cells, with two
// weight banks and the skew/de-skew registers, so rows go in and come out un-skewed.
//
// Dataflow. Cell (k, n) holds the stationary weights w[b][k][n] of both banks b. Element k of an LHS
// row enters cell row k from the left edge, delayed by k cycles (input skew), and moves one cell to
// the right per cycle. The partial sum of column n starts at +0 above row 0 and moves one cell down per
// cycle; cell (k, n) computes psum_out = fp32_add(psum_in, bf16_mul(a[k], w[b][k][n])), so every column
// is summed in the fixed order k = 0..N-1 of docs/numerics.md.
//
// Pipeline, for a row presented on in_row_i with in_valid_i = 1 in cycle t0:
//   skew     element k waits k cycles (k registers) before cell row k
//   act(k,n) holds element k in cycle t0 + 1 + k + n
//   psum(k,n) holds the partial sum over rows 0..k of column n in cycle t0 + 2 + k + n
//   de-skew  column n leaves the bottom row in cycle t0 + 1 + N + n and waits N-1-n cycles
//   out_row_o carries all N results in cycle t0 + LATENCY, LATENCY = 2*N, with out_valid_o = 1;
//   out_valid_next_o is 1 one cycle earlier.
// A new row may enter every cycle: after a fill of 2*N cycles one row leaves per cycle, N*N MACs per
// cycle; a stream of R rows takes R + 2*N cycles from the first entry to the last result.
//
// Weight banks. Every row carries the bank it multiplies with (in_bank_i). All cells that work on one
// row in a cycle lie on one anti-diagonal k + n = d (d cycles after the row's entry), so the bank is
// kept per diagonal in a 2*N-bit shift register beside the valid bits, not per cell: rows of both
// banks can be in the array at once, which is how a weight swap takes effect between two rows with no
// bubble. w_load_i writes one weight line into bank w_bank_i: row k = w_idx_i (w[k][n] = lane n), or
// with w_transpose_i column n = w_idx_i (w[k][n] = lane k). bank_busy_o[b] is 1 while a row of bank b
// is inside the array; a bank must not be written while it is busy. Both banks reset to +0.
//
// Simulation speed. The cells are loops over state arrays in always_comb blocks whose next-state
// arrays are copied whole into the flops (Verilator builds and runs this much faster than one module
// instance per cell). The arrays are one-dimensional: Verilator copies those with a loop, but
// unrolls copies of two-dimensional arrays element by element. Weights are written in place, one
// line per load, never copied. While no row is inside the array the cells hold their values, so an
// idle array does no arithmetic.
module mxu_array #(
  parameter int unsigned N = 8,
  localparam int unsigned IdxW = $clog2(N)
) (
  input  logic              clk_i,
  input  logic              rst_ni,         // synchronous, active low
  input  logic              flush_i,        // drop every row in flight (weights are kept)
  // Weight loads into one bank.
  input  logic              w_load_i,
  input  logic              w_bank_i,
  input  logic              w_transpose_i,
  input  logic [IdxW-1:0]   w_idx_i,
  input  logic [N*16-1:0]   w_row_i,        // bf16, lane j in bits [16*j +: 16]
  // LHS rows in (bf16) and result rows out (fp32), both un-skewed.
  input  logic              in_valid_i,
  input  logic              in_bank_i,      // weight bank this row multiplies with
  input  logic [N*16-1:0]   in_row_i,
  output logic              out_valid_next_o,
  output logic              out_valid_o,
  output logic [N*32-1:0]   out_row_o,
  output logic              busy_o,         // a row is inside the array
  output logic [1:0]        bank_busy_o     // a row of bank b is inside the array
);
  localparam int unsigned Latency = 2 * N;
  localparam int unsigned Cells   = N * N;

  typedef logic [15:0] bf16_t;
  typedef logic [31:0] fp32_t;

  // One cell: the partial sum coming down the column plus this row's product.
  function automatic fp32_t pe_mac(fp32_t psum_in, bf16_t act, bf16_t weight);
    pe_mac = tpu_fp_pkg::fp32_add(psum_in, tpu_fp_pkg::bf16_mul(act, weight));
  endfunction

  // ---------------------------------------------------------------------------------------------
  // State. Cell arrays are indexed k*N+n (row k, column n); the weights of bank b at b*N*N+k*N+n.
  // act0_q[k] is the activation of cell (k, 0); act_q holds columns 1..N-1 (slot k*N is unused).
  // The skew registers of element k (d+1 cycles after entry, d < k) sit at Tri(k)+d, the de-skew
  // registers of column n (d+1 cycles after the bottom row, d < m = N-1-n) at Tri(m)+d, with
  // Tri(j) = j*(j-1)/2.
  // ---------------------------------------------------------------------------------------------
  localparam int unsigned TriCells = N * (N - 1) / 2;

  function automatic int unsigned tri_base(int unsigned j);
    tri_base = (j * (j - 1)) / 2;
  endfunction

  // mem2reg: these arrays are registers, not memories (Yosys would otherwise say so in a warning).
  (* mem2reg *) bf16_t w_q      [2*Cells];
  (* mem2reg *) bf16_t skew_q   [TriCells];
  (* mem2reg *) bf16_t skew_d   [TriCells];
  (* mem2reg *) bf16_t act0_q   [N];
  (* mem2reg *) bf16_t act0_d   [N];
  (* mem2reg *) bf16_t act_q    [Cells];
  (* mem2reg *) bf16_t act_d    [Cells];
  (* mem2reg *) fp32_t psum_q   [Cells];
  (* mem2reg *) fp32_t psum_d   [Cells];
  (* mem2reg *) fp32_t deskew_q [TriCells];
  (* mem2reg *) fp32_t deskew_d [TriCells];
  logic [N*32-1:0]    out_row_q, out_row_d;
  logic [Latency-1:0] valid_q;
  logic [Latency-1:0] bank_q;   // bank_q[d]: bank of the row on anti-diagonal d (valid if valid_q[d])

  // ---------------------------------------------------------------------------------------------
  // Row pipeline. The data registers carry no reset: all values of a row are written before its
  // valid bit reaches them, and values of empty slots are never used.
  // ---------------------------------------------------------------------------------------------
  assign busy_o         = |valid_q;
  assign bank_busy_o[0] = |(valid_q & ~bank_q);
  assign bank_busy_o[1] = |(valid_q & bank_q);

  // Entry: element k waits k cycles in the skew registers, then enters cell (k, 0). These
  // registers move every cycle (a row may enter an empty array).
  always_comb begin
    act0_d[0] = in_row_i[15:0];
    for (int unsigned k = 1; k < N; k++) begin
      skew_d[tri_base(k)] = in_row_i[16*k +: 16];
      for (int unsigned d = 1; d < k; d++) begin
        skew_d[tri_base(k) + d] = skew_q[tri_base(k) + d - 1];
      end
      act0_d[k] = skew_q[tri_base(k) + k - 1];
    end
  end

  // Cells: activations move right, partial sums move down, then the column results are de-skewed.
  // This block reads registers only, so a change of the inputs does not re-run it, and it holds
  // everything while no row is inside the array, so an idle array does no arithmetic.
  // Waiver: the loops assign every element of deskew_d and out_row_d on both branches; the latch
  // check cannot follow partly unrolled loops (it reports a latch for some N, e.g. 32).
  /* verilator lint_off LATCH */
  always_comb begin
    if (busy_o) begin
      for (int unsigned k = 0; k < N; k++) begin
        act_d[k*N] = '0;  // unused slot
        for (int unsigned n = 1; n < N; n++) begin
          act_d[k*N + n] = (n == 1) ? act0_q[k] : act_q[k*N + n - 1];
        end
        for (int unsigned n = 0; n < N; n++) begin
          psum_d[k*N + n] = pe_mac((k == 0) ? 32'h0000_0000 : psum_q[(k-1)*N + n],
                                   (n == 0) ? act0_q[k] : act_q[k*N + n],
                                   w_q[(bank_q[k + n] ? Cells : 0) + k*N + n]);
        end
      end
      for (int unsigned n = 0; n + 1 < N; n++) begin
        deskew_d[tri_base(N-1-n)] = psum_q[(N-1)*N + n];
        for (int unsigned d = 1; d < N-1-n; d++) begin
          deskew_d[tri_base(N-1-n) + d] = deskew_q[tri_base(N-1-n) + d - 1];
        end
      end
    end else begin
      for (int unsigned i = 0; i < Cells; i++) begin
        act_d[i]  = act_q[i];
        psum_d[i] = psum_q[i];
      end
      for (int unsigned i = 0; i < TriCells; i++) begin
        deskew_d[i] = deskew_q[i];
      end
    end
    // The result register is the last de-skew stage of every column (for column N-1 a copy of
    // the bottom cell); synthesis merges the duplicate flops.
    for (int unsigned n = 0; n + 1 < N; n++) begin
      out_row_d[32*n +: 32] = deskew_d[tri_base(N-1-n) + N - 2 - n];
    end
    out_row_d[32*(N-1) +: 32] = psum_d[Cells - 1];
  end
  /* verilator lint_on LATCH */

  always_ff @(posedge clk_i) begin
    if (!rst_ni || flush_i) begin
      valid_q <= '0;
    end else begin
      valid_q <= {valid_q[Latency-2:0], in_valid_i};
    end
    bank_q <= {bank_q[Latency-2:0], in_bank_i};
  end

  // Flops of the arrays, copied whole from their next-state arrays; weights written in place.
`ifdef SYNTHESIS
  // Yosys 0.23 cannot assign whole unpacked arrays: copy element by element (the same flops).
  always_ff @(posedge clk_i) begin
    out_row_q <= out_row_d;
    for (int unsigned i = 0; i < Cells; i++) begin
      act_q[i]  <= act_d[i];
      psum_q[i] <= psum_d[i];
    end
    for (int unsigned i = 0; i < TriCells; i++) begin
      skew_q[i]   <= skew_d[i];
      deskew_q[i] <= deskew_d[i];
    end
    for (int unsigned k = 0; k < N; k++) begin
      act0_q[k] <= act0_d[k];
    end
    for (int unsigned k = 0; k < N; k++) begin
      for (int unsigned n = 0; n < N; n++) begin
        for (int unsigned b = 0; b < 2; b++) begin
          if (!rst_ni) begin
            w_q[b*Cells + k*N + n] <= '0;
          end else if (w_load_i && (w_bank_i == b[0]) &&
                       (w_transpose_i ? (n == 32'(w_idx_i)) : (k == 32'(w_idx_i)))) begin
            w_q[b*Cells + k*N + n] <= w_row_i[16*(w_transpose_i ? k : n) +: 16];
          end
        end
      end
    end
  end
`else
  // Version 5.006 of Verilator turns a non-blocking copy of an unpacked array into one shadow
  // variable and one statement per element (O(N*N) code: minutes of build time at N=32), and
  // rejects non-blocking element copies in loops it does not unroll; a blocking copy is one loop.
  // It is race-free here: the arrays are read only by the always_comb blocks above, whose results
  // feed only this block, and the one value leaving the array, out_row_q, is sampled first with a
  // non-blocking assignment.
  /* verilator lint_off BLKSEQ */
  always_ff @(posedge clk_i) begin
    out_row_q <= out_row_d;
    skew_q    = skew_d;
    act0_q    = act0_d;
    act_q     = act_d;
    psum_q    = psum_d;
    deskew_q  = deskew_d;
    if (!rst_ni) begin
      for (int unsigned i = 0; i < 2*Cells; i++) begin
        w_q[i] = '0;
      end
    end else if (w_load_i) begin
      for (int unsigned j = 0; j < N; j++) begin
        if (w_transpose_i) begin
          w_q[(w_bank_i ? Cells : 0) + j*N + 32'(w_idx_i)] = w_row_i[16*j +: 16];  // w[k = j][n = idx] = lane j
        end else begin
          w_q[(w_bank_i ? Cells : 0) + 32'(w_idx_i)*N + j] = w_row_i[16*j +: 16];  // w[k = idx][n = j] = lane j
        end
      end
    end
  end
  /* verilator lint_on BLKSEQ */
`endif

  assign out_row_o        = out_row_q;
  assign out_valid_next_o = valid_q[Latency-2];
  assign out_valid_o      = valid_q[Latency-1];

`ifndef SYNTHESIS
  initial begin
    assert (N >= 2) else $fatal(1, "mxu_array: N must be at least 2");
  end
  // Writing a bank under rows that multiply with it would mix two weight sets inside one row.
  assert property (@(posedge clk_i) disable iff (!rst_ni) w_load_i |-> !bank_busy_o[w_bank_i])
    else $error("mxu_array: weight load into bank %0d while its rows are in flight", w_bank_i);
`endif

endmodule
