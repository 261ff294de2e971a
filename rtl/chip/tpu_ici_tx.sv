`include "tpu_assert.svh"
// The sending half of one ICI link port (docs/interconnect.md): picks the next packet among the one the
// other port passes on (forwarded, first) and this chip's cores' (injected, lowest core first), and puts it
// on the link, one packet a cycle, from a register.
//
// Flow control is by credits: the link's far end holds credits_i packets (sampled while in reset); each
// packet sent takes one, and tx_credit_i gives one back when the far end has passed one on. A forwarded
// packet needs one credit, a packet entering the ring needs two: injection alone can never fill a ring,
// so a packet already on it always finds room to move on (bubble flow control), and the ring cannot
// deadlock whatever the traffic.
module tpu_ici_tx
#(
  parameter int unsigned Sources = 2,   // injecting cores
  parameter int unsigned Width   = 32,  // packet bits
  parameter int unsigned CreditW = 16
) (
  input  logic                     clk_i,
  input  logic                     rst_ni,
  input  logic [CreditW-1:0]       credits_i,

  input  logic                     fwd_valid_i,
  output logic                     fwd_ready_o,
  input  logic [Width-1:0]         fwd_packet_i,

  input  logic [Sources-1:0]       inj_valid_i,
  output logic [Sources-1:0]       inj_ready_o,
  input  logic [Sources*Width-1:0] inj_packet_i,   // source s at [s*Width +: Width]

  output logic                     tx_valid_o,
  output logic [Width-1:0]         tx_packet_o,
  input  logic                     tx_credit_i
);

  logic [CreditW-1:0] credits_q, credits_d;
  logic               valid_q;
  logic [Width-1:0]   packet_q, packet_d;
  logic               send;

  always_comb begin
    fwd_ready_o = credits_q >= CreditW'(1);
    inj_ready_o = '0;
    packet_d    = fwd_packet_i;
    if (!fwd_valid_i && credits_q >= CreditW'(2)) begin
      for (int unsigned s = 0; s < Sources; s++) begin
        if (inj_valid_i[s] && inj_ready_o == '0) begin
          inj_ready_o[s] = 1'b1;
          packet_d       = inj_packet_i[s*Width +: Width];
        end
      end
    end
    send      = (fwd_valid_i && fwd_ready_o) || (|inj_ready_o);
    credits_d = credits_q - CreditW'(send) + CreditW'(tx_credit_i);
  end

  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      credits_q <= credits_i;
      valid_q   <= 1'b0;
      packet_q  <= '0;
    end else begin
      credits_q <= credits_d;
      valid_q   <= send;
      if (send) packet_q <= packet_d;
    end
  end

  assign tx_valid_o  = valid_q;
  assign tx_packet_o = packet_q;

  // A credit comes back only for a packet sent, so the count never exceeds the link's; one packet
  // enters the port a cycle.
  `TPU_ASSERT(CreditOfAPacketSent, !(tx_credit_i && credits_q == credits_i))
  `TPU_ASSERT(OneInjectionPerCycle, $onehot0(inj_ready_o))
  `TPU_ASSERT(CreditsInRange, credits_q <= credits_i)

endmodule
