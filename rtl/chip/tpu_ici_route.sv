// Where a packet at chip chip_i for chip dest_i goes on a board of num_chips_i chips (1, 2 or 4): the
// chips sit on a ring in the order of positions 0, 1, 2, 3, chip c at position c ^ (c >> 1) (a v2-8's
// 2x2 torus, 0-1-3-2-0). A packet goes the shorter way round, a tie (the opposite chip of four) forward:
// out of port 0 (next position) unless prev_o, out of port 1 (previous position). sim/model/ici.h states
// the same rule for the reference model and the SystemC platform's wiring.
module tpu_ici_route (
  input  logic [1:0] chip_i,
  input  logic [1:0] dest_i,
  input  logic [2:0] num_chips_i,
  output logic       arrived_o,  // dest_i is this chip
  output logic       prev_o      // else: leave through port 1 (previous position)
);

  logic [1:0] ahead;  // positions from here to the destination, going forward

  // num_chips_i is a power of two, so "modulo" is a mask.
  assign ahead     = ((dest_i ^ (dest_i >> 1)) - (chip_i ^ (chip_i >> 1))) & 2'(num_chips_i - 3'd1);
  assign arrived_o = ahead == 2'd0;
  assign prev_o    = {ahead, 1'b0} > num_chips_i;

endmodule
